/* A panic inside the library becomes MOONCAKE_META_PANIC, never an abort,
 * and poisons the handle it held; only _free works on it afterwards.
 * Needs the test-hooks build (target-hooks/). The Rust panic messages these
 * tests print on stderr are expected. */
#include "check.h"
#include "test_hooks.h"

static void panic_becomes_a_status(void) {
    mooncake_meta_error *err = NULL;
    CHECK_FAILS(mooncake_meta_test_panic(&err), MOONCAKE_META_PANIC, err,
                "mooncake_meta_test_panic: panicked: deliberate test panic");
    CHECK_EQ_INT(mooncake_meta_test_panic(NULL), MOONCAKE_META_PANIC);
}

static void panics_are_repeatable(void) {
    for (int i = 0; i < 20; i++) {
        mooncake_meta_error *err = NULL;
        CHECK_FAILS(mooncake_meta_test_panic(&err), MOONCAKE_META_PANIC, err, NULL);
    }
}

static void panic_poisons_the_handle_until_free(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = NULL, *other = NULL;
    CHECK_OK(mooncake_meta_config_new(&cfg, &err), err);
    CHECK_OK(mooncake_meta_config_new(&other, &err), err);
    CHECK_OK(mooncake_meta_config_set_shard_count(cfg, 8, &err), err);
    CHECK_FAILS(mooncake_meta_test_panic_with_config(cfg, &err), MOONCAKE_META_PANIC, err,
                "deliberate test panic holding the config");
    CHECK_FAILS(mooncake_meta_config_set_shard_count(cfg, 8, &err), MOONCAKE_META_PANIC, err,
                "poisoned by an earlier panic; only mooncake_meta_config_free may be called");
    CHECK_FAILS(mooncake_meta_config_validate(cfg, &err), MOONCAKE_META_PANIC, err, "poisoned");
    CHECK_FAILS(mooncake_meta_test_panic_with_config(cfg, &err), MOONCAKE_META_PANIC, err, "poisoned");
    /* Other handles are unaffected. */
    CHECK_OK(mooncake_meta_config_set_shard_count(other, 8, &err), err);
    CHECK_OK(mooncake_meta_config_validate(other, &err), err);
    mooncake_meta_config_free(cfg);
    mooncake_meta_config_free(other);
}

int main(void) {
    RUN_TEST(panic_becomes_a_status);
    RUN_TEST(panics_are_repeatable);
    RUN_TEST(panic_poisons_the_handle_until_free);
    return check_summary("test_panic");
}
