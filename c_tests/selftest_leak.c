/* Leaks one error object on purpose: `make leak-self-test` expects ASan and
 * valgrind to report it, showing the leak checks of the other modes can
 * fail. Not a test of the library. */
#include "mooncake_meta.h"

#include <stdio.h>

int main(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_status st = mooncake_meta_config_new(NULL, &err);
    printf("leaking the error of a call that returned %d\n", (int)st);
    err = NULL;
    return 0;
}
