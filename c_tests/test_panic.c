/* A panic inside the library becomes MOONCAKE_META_PANIC, never an abort,
 * and poisons the handle it held: every later call on it returns
 * MOONCAKE_META_PANIC and only _free works (which valgrind and ASan check
 * releases everything). Other handles are unaffected. Needs the test-hooks
 * build (target-hooks/). The Rust panic messages these tests print on
 * stderr are expected. */
#include "fixture.h"
#include "test_hooks.h"

#define POISONED "poisoned by an earlier panic; only mooncake_meta_master_free may be called"

static void panic_becomes_a_status_and_poisons_the_master(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = fx_master(NULL), *other = fx_master(NULL);
    fx_mount(m, 1, "seg-a", 1 << 20);
    fx_mount(other, 1, "seg-a", 1 << 20);
    mooncake_meta_write_config pin = fx_enable(1000);
    fx_put(m, 1, "k", 4096, &pin);

    CHECK_FAILS(mooncake_meta_test_panic(m, &err), MOONCAKE_META_PANIC, err,
                "mooncake_meta_test_panic: panicked: deliberate test panic");

    /* Every later call on m, reads and writes alike, is PANIC; outputs untouched. */
    int exists = 7, has = 7;
    uint64_t d = 7, now = 7;
    mooncake_meta_bytes *b = NULL;
    mooncake_meta_metrics_snapshot mt;
    memset(&mt, 0, sizeof mt);
    mt.struct_size = sizeof mt;
    mooncake_meta_replica r[2];
    size_t n = 7;
    uint64_t token = 7;
    CHECK_FAILS(mooncake_meta_exist(m, FX_KEY("k"), &exists, &err), MOONCAKE_META_PANIC, err, POISONED);
    CHECK_FAILS(mooncake_meta_soft_pin_deadline(m, FX_KEY("k"), &has, &d, &err), MOONCAKE_META_PANIC,
                err, POISONED);
    CHECK_FAILS(mooncake_meta_put_start(m, 1, FX_KEY("k2"), 4096, NULL, r, 2, &n, &token, &err),
                MOONCAKE_META_PANIC, err, POISONED);
    CHECK_FAILS(mooncake_meta_metrics(m, &mt, &err), MOONCAKE_META_PANIC, err, POISONED);
    CHECK_FAILS(mooncake_meta_snapshot(m, &b, &err), MOONCAKE_META_PANIC, err, POISONED);
    CHECK_FAILS(mooncake_meta_run_cleanup(m, NULL, &err), MOONCAKE_META_PANIC, err, POISONED);
    CHECK_FAILS(mooncake_meta_check_invariants(m, &err), MOONCAKE_META_PANIC, err, POISONED);
    CHECK_FAILS(mooncake_meta_master_now(m, &now, &err), MOONCAKE_META_PANIC, err, POISONED);
    CHECK_FAILS(mooncake_meta_master_advance_time(m, 1, &now, &err), MOONCAKE_META_PANIC, err,
                POISONED);
    CHECK_FAILS(mooncake_meta_test_panic(m, &err), MOONCAKE_META_PANIC, err, POISONED);
    CHECK_EQ_INT(mooncake_meta_exist(m, FX_KEY("k"), &exists, NULL), MOONCAKE_META_PANIC);
    CHECK(exists == 7 && has == 7 && d == 7 && now == 7 && b == NULL && n == 7 && token == 7);
    CHECK_EQ_INT(mt.key_count, 0);

    /* The other master works as before. */
    fx_put(other, 1, "k", 4096, &pin);
    CHECK_EQ_INT(fx_deadline(other, "k"), FX_START_MS + 1000);
    fx_check_invariants(other);

    mooncake_meta_master_free(m); /* still frees everything */
    mooncake_meta_master_free(other);
}

static void null_master_is_a_null_argument_not_a_panic(void) {
    mooncake_meta_error *err = NULL;
    CHECK_FAILS(mooncake_meta_test_panic(NULL, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                "master is NULL");
}

/* Panics are contained every time: many masters, each poisoned and freed. */
static void panics_are_repeatable(void) {
    for (int i = 0; i < 10; i++) {
        mooncake_meta_error *err = NULL;
        mooncake_meta_master *m = fx_master(NULL);
        CHECK_FAILS(mooncake_meta_test_panic(m, &err), MOONCAKE_META_PANIC, err, "deliberate");
        CHECK_EQ_INT(mooncake_meta_test_panic(m, NULL), MOONCAKE_META_PANIC);
        mooncake_meta_master_free(m);
    }
}

/* The same for a configuration handle. */
static void panic_poisons_a_config_until_free(void) {
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
    mooncake_meta_master *m = NULL;
    CHECK_FAILS(mooncake_meta_master_new(cfg, &m, &err), MOONCAKE_META_PANIC, err, "poisoned");
    CHECK(m == NULL);
    CHECK_OK(mooncake_meta_config_set_shard_count(other, 8, &err), err);
    CHECK_OK(mooncake_meta_config_validate(other, &err), err);
    mooncake_meta_config_free(cfg);
    mooncake_meta_config_free(other);
}

/* A panic inside a batch leaves every per-key status PANIC: no key of the
 * batch reads as OK (the statuses start zeroed, as a caller's calloc or
 * vector would). A batch refused before it runs (NULL master) writes its
 * refusal into every status instead. */
static void panic_in_a_batch_marks_every_key(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = fx_master(NULL);
    int32_t st[4] = {0, 0, 0, 0};
    CHECK_FAILS(mooncake_meta_test_panic_in_batch(m, 4, st, &err), MOONCAKE_META_PANIC, err,
                "mooncake_meta_test_panic_in_batch: panicked: deliberate test panic in a batch");
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(st[i], MOONCAKE_META_PANIC);

    /* The master is poisoned: a real batch on it refuses every key with PANIC. */
    int32_t st2[2] = {0, 0};
    uint8_t ex[2] = {7, 7};
    const char *keys[2] = {"a", "b"};
    size_t lens[2] = {1, 1};
    CHECK_FAILS(mooncake_meta_batch_exist(m, NULL, 0, keys, lens, 2, ex, st2, &err),
                MOONCAKE_META_PANIC, err, POISONED);
    CHECK(st2[0] == MOONCAKE_META_PANIC && st2[1] == MOONCAKE_META_PANIC);
    mooncake_meta_master_free(m);

    int32_t st3[2] = {0, 0};
    CHECK_FAILS(mooncake_meta_test_panic_in_batch(NULL, 2, st3, &err), MOONCAKE_META_NULL_ARGUMENT,
                err, "master is NULL");
    CHECK(st3[0] == MOONCAKE_META_NULL_ARGUMENT && st3[1] == MOONCAKE_META_NULL_ARGUMENT);
}

int main(void) {
    RUN_TEST(panic_becomes_a_status_and_poisons_the_master);
    RUN_TEST(null_master_is_a_null_argument_not_a_panic);
    RUN_TEST(panics_are_repeatable);
    RUN_TEST(panic_poisons_a_config_until_free);
    RUN_TEST(panic_in_a_batch_marks_every_key);
    return check_summary("test_panic");
}
