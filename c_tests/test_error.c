/* The per-call error object: set on failure only, library-owned, freed by
 * its own function, independent per call and per thread. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"

#include <pthread.h>

static void failure_sets_an_error_naming_the_argument(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_status st = mooncake_meta_config_new(NULL, &err);
    CHECK_EQ_INT(st, MOONCAKE_META_NULL_ARGUMENT);
    CHECK(err != NULL);
    CHECK_EQ_INT(mooncake_meta_error_code(err), MOONCAKE_META_NULL_ARGUMENT);
    CHECK_STR_EQ(mooncake_meta_error_message(err), "mooncake_meta_config_new: out_cfg is NULL");
    mooncake_meta_error_free(err);
}

static void null_err_means_no_details(void) {
    CHECK_EQ_INT(mooncake_meta_config_new(NULL, NULL), MOONCAKE_META_NULL_ARGUMENT);
    CHECK_EQ_INT(mooncake_meta_write_config_init(NULL, 64, NULL), MOONCAKE_META_NULL_ARGUMENT);
}

static void success_leaves_err_untouched(void) {
    static char marker;
    mooncake_meta_error *const sentinel = (mooncake_meta_error *)(void *)&marker;
    mooncake_meta_error *err = sentinel;
    mooncake_meta_config *cfg = NULL;
    CHECK_EQ_INT(mooncake_meta_config_new(&cfg, &err), MOONCAKE_META_OK);
    CHECK(err == sentinel);
    CHECK_EQ_INT(mooncake_meta_config_set_eviction_ratio(cfg, 0.1, &err), MOONCAKE_META_OK);
    CHECK(err == sentinel);
    mooncake_meta_config_free(cfg);
}

static void failure_leaves_outputs_unwritten(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_write_config wc;
    memset(&wc, 0xAB, sizeof wc);
    CHECK_FAILS(mooncake_meta_write_config_init(&wc, 4, &err), MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED,
                err, "struct_size 4");
    unsigned char expected[sizeof wc];
    memset(expected, 0xAB, sizeof expected);
    CHECK(memcmp(&wc, expected, sizeof wc) == 0);
}

static void null_error_accessors_are_harmless(void) {
    CHECK_EQ_INT(mooncake_meta_error_code(NULL), MOONCAKE_META_NULL_ARGUMENT);
    CHECK_STR_EQ(mooncake_meta_error_message(NULL), "NULL mooncake_meta_error");
    mooncake_meta_error_free(NULL);
}

static void errors_are_independent(void) {
    mooncake_meta_error *a = NULL, *b = NULL;
    CHECK_EQ_INT(mooncake_meta_config_new(NULL, &a), MOONCAKE_META_NULL_ARGUMENT);
    CHECK_EQ_INT(mooncake_meta_config_set_shard_count(NULL, 1, &b), MOONCAKE_META_NULL_ARGUMENT);
    CHECK(a != NULL && b != NULL && a != b);
    mooncake_meta_error_free(a);
    CHECK_CONTAINS(mooncake_meta_error_message(b), "mooncake_meta_config_set_shard_count: cfg is NULL");
    mooncake_meta_error_free(b);
}

enum { THREADS = 4, CALLS = 500 };

static void *fail_repeatedly(void *arg) {
    long id = (long)(intptr_t)arg;
    long bad = 0;
    for (int i = 0; i < CALLS; i++) {
        mooncake_meta_error *err = NULL;
        int allow = (int)(id + 2); /* a different bad value per thread */
        mooncake_meta_config *cfg = NULL;
        if (mooncake_meta_config_new(&cfg, NULL) != MOONCAKE_META_OK) return (void *)1;
        if (mooncake_meta_config_set_allow_evict_soft_pinned_objects(cfg, allow, &err) !=
            MOONCAKE_META_INVALID_PARAMS) bad++;
        char needle[32];
        snprintf(needle, sizeof needle, "got %d", allow);
        if (err == NULL || strstr(mooncake_meta_error_message(err), needle) == NULL) bad++;
        mooncake_meta_error_free(err);
        mooncake_meta_config_free(cfg);
    }
    return (void *)(intptr_t)bad;
}

static void errors_do_not_cross_threads(void) {
    pthread_t threads[THREADS];
    for (long i = 0; i < THREADS; i++) {
        CHECK_EQ_INT(pthread_create(&threads[i], NULL, fail_repeatedly, (void *)(intptr_t)i), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        void *bad = NULL;
        CHECK_EQ_INT(pthread_join(threads[i], &bad), 0);
        CHECK_EQ_INT((intptr_t)bad, 0);
    }
}

int main(void) {
    RUN_TEST(failure_sets_an_error_naming_the_argument);
    RUN_TEST(null_err_means_no_details);
    RUN_TEST(success_leaves_err_untouched);
    RUN_TEST(failure_leaves_outputs_unwritten);
    RUN_TEST(null_error_accessors_are_harmless);
    RUN_TEST(errors_are_independent);
    RUN_TEST(errors_do_not_cross_threads);
    return check_summary("test_error");
}
