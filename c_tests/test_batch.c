/* Batch forms through the C ABI (docs/CONTRACT.md §3 "Batch forms"): per-key
 * statuses always written, the first failure's message in err, a bad shared
 * configuration or too small a shared array refuses every key with no side
 * effect, replica layout by stride (starts) or by running offset (reads). */
#include "check.h"

#include <stdint.h>

#define T0 1000000ull
#define C1 1u
#define C2 2u
#define SIZE 4096u
#define KEY(s) NULL, 0, (s), strlen(s)

static mooncake_meta_master *new_master(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = NULL;
    mooncake_meta_master *m = NULL;
    const char *names[] = {"mem0", "mem1", "mem2"};
    uint32_t id = 0;
    CHECK_OK(mooncake_meta_config_new(&cfg, &err), err);
    CHECK_OK(mooncake_meta_config_set_manual_clock(cfg, T0, &err), err);
    CHECK_OK(mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_sweep_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_master_new(cfg, &m, &err), err);
    mooncake_meta_config_free(cfg);
    for (int i = 0; i < 3; i++) {
        CHECK_OK(mooncake_meta_mount_segment(m, C1, names[i], 4, (uint64_t)(i + 1) << 40, 1 << 20,
                                             MOONCAKE_META_POOL_MEMORY, &id, &err),
                 err);
    }
    return m;
}

static mooncake_meta_write_config config(uint32_t memory) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_write_config c;
    CHECK_OK(mooncake_meta_write_config_init(&c, sizeof c, &err), err);
    c.memory_replicas = memory;
    return c;
}

static uint64_t key_count(mooncake_meta_master *m) {
    mooncake_meta_error *err = NULL;
    uint64_t n = 0;
    CHECK_OK(mooncake_meta_key_count(m, &n, &err), err);
    return n;
}

/* Batch of `n` keys: their lengths. */
static void lens_of(const char *const *keys, size_t *lens, size_t n) {
    for (size_t i = 0; i < n; i++) lens[i] = strlen(keys[i]);
}

static void batch_put_start_lays_replicas_out_by_stride(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    const char *keys[] = {"a", "b", "c"};
    size_t lens[3], counts[3];
    uint64_t sizes[] = {SIZE, 2 * SIZE, 3 * SIZE}, tokens[3];
    int32_t st[3];
    uint8_t ex[3];
    mooncake_meta_replica r[6];
    mooncake_meta_write_config cfg = config(2);
    lens_of(keys, lens, 3);
    CHECK_OK(mooncake_meta_batch_put_start(m, C1, NULL, 0, keys, lens, 3, sizes, &cfg, r, 6, counts,
                                           tokens, st, &err),
             err);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(st[i], MOONCAKE_META_OK);
        CHECK_EQ_INT(counts[i], 2);
        CHECK(tokens[i] != 0);
        CHECK_EQ_INT(r[2 * i].size, sizes[i]);
        CHECK_EQ_INT(r[2 * i + 1].size, sizes[i]);
        CHECK(r[2 * i].segment_id != r[2 * i + 1].segment_id);
        CHECK_EQ_INT(r[2 * i].status, MOONCAKE_META_REPLICA_PROCESSING);
    }
    CHECK(tokens[0] != tokens[1] && tokens[1] != tokens[2]);
    CHECK_OK(mooncake_meta_batch_exist(m, NULL, 0, keys, lens, 3, ex, st, &err), err);
    CHECK(ex[0] == 0 && ex[1] == 0 && ex[2] == 0);
    CHECK_OK(mooncake_meta_batch_put_end(m, C1, NULL, 0, keys, lens, 3, MOONCAKE_META_SELECT_ALL,
                                         tokens, st, &err),
             err);
    CHECK_OK(mooncake_meta_batch_exist(m, NULL, 0, keys, lens, 3, ex, st, &err), err);
    CHECK(ex[0] == 1 && ex[1] == 1 && ex[2] == 1);
    CHECK(st[0] == 0 && st[1] == 0 && st[2] == 0);
    mooncake_meta_master_free(m);
}

static void a_failing_key_sets_its_status_and_the_first_failures_message(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    const char *keys[] = {"a", "dup", "dup", "b"};
    size_t lens[4], counts[4];
    uint64_t sizes[] = {SIZE, SIZE, SIZE, 0}, tokens[4];
    int32_t st[4];
    mooncake_meta_replica r[4];
    lens_of(keys, lens, 4);
    CHECK_FAILS(mooncake_meta_batch_put_start(m, C1, NULL, 0, keys, lens, 4, sizes, NULL, r, 4,
                                              counts, tokens, st, &err),
                MOONCAKE_META_OBJECT_ALREADY_EXISTS, err,
                "mooncake_meta_batch_put_start: keys[2]: a recent write of this key is still in "
                "flight (2 of 4 keys failed)");
    CHECK_EQ_INT(st[0], MOONCAKE_META_OK);
    CHECK_EQ_INT(st[1], MOONCAKE_META_OK);
    CHECK_EQ_INT(st[2], MOONCAKE_META_OBJECT_ALREADY_EXISTS);
    CHECK_EQ_INT(st[3], MOONCAKE_META_INVALID_PARAMS); /* size 0 */
    CHECK_EQ_INT(counts[1], 1);
    CHECK_EQ_INT(counts[2], 0);
    CHECK_EQ_INT(tokens[2], 0);
    CHECK_EQ_INT(key_count(m), 2);
    /* End with per-key tokens; 0 names none. A wrong one fails only its key. */
    tokens[2] = 0;
    tokens[0] += 1000;
    CHECK_FAILS(mooncake_meta_batch_put_end(m, C1, NULL, 0, keys, lens, 3, MOONCAKE_META_SELECT_ALL,
                                            tokens, st, &err),
                MOONCAKE_META_STALE_WRITE_TOKEN, err, "keys[0]: ");
    CHECK_EQ_INT(st[0], MOONCAKE_META_STALE_WRITE_TOKEN);
    CHECK_EQ_INT(st[1], MOONCAKE_META_OK);
    CHECK_EQ_INT(st[2], MOONCAKE_META_OK); /* dup again: already COMPLETE, no write in flight */
    mooncake_meta_master_free(m);
}

static void a_refused_batch_writes_one_code_everywhere_and_does_nothing(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    const char *keys[] = {"a", "b"};
    const char *bad_keys[] = {"a", NULL};
    size_t lens[2], counts[2];
    uint64_t sizes[] = {SIZE, SIZE}, tokens[2];
    int32_t st[2];
    mooncake_meta_replica r[4];
    mooncake_meta_write_config pin = config(1);
    mooncake_meta_write_config two = config(2);
    lens_of(keys, lens, 2);
    pin.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
    pin.flags = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
    pin.soft_pin_ttl_ms = 86400001; /* above the default maximum */
    CHECK_FAILS(mooncake_meta_batch_put_start(m, C1, NULL, 0, keys, lens, 2, sizes, &pin, r, 4,
                                              counts, tokens, st, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "cfg: ");
    CHECK(st[0] == MOONCAKE_META_INVALID_PARAMS && st[1] == MOONCAKE_META_INVALID_PARAMS);
    CHECK_EQ_INT(key_count(m), 0);
    CHECK_FAILS(mooncake_meta_batch_put_start(m, C1, NULL, 0, keys, lens, 2, sizes, &two, r, 3,
                                              counts, tokens, st, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, "out_replicas has room for 3 but 4 are needed");
    CHECK(st[0] == MOONCAKE_META_BUFFER_TOO_SMALL && st[1] == MOONCAKE_META_BUFFER_TOO_SMALL);
    CHECK_EQ_INT(key_count(m), 0);
    CHECK_FAILS(mooncake_meta_batch_put_start(m, C1, NULL, 0, bad_keys, lens, 2, sizes, NULL, r, 4,
                                              counts, tokens, st, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "keys[1] is NULL but its length is 1");
    CHECK(st[0] == MOONCAKE_META_NULL_ARGUMENT && st[1] == MOONCAKE_META_NULL_ARGUMENT);
    CHECK_EQ_INT(key_count(m), 0);
    CHECK_FAILS(mooncake_meta_batch_remove(NULL, NULL, 0, keys, lens, 2, 0, st, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "master is NULL");
    CHECK(st[0] == MOONCAKE_META_NULL_ARGUMENT && st[1] == MOONCAKE_META_NULL_ARGUMENT);
    CHECK_FAILS(mooncake_meta_batch_remove(m, NULL, 0, keys, lens, 2, 0, NULL, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "out_statuses is NULL");
    CHECK_FAILS(mooncake_meta_batch_put_end(m, C1, NULL, 0, keys, lens, 2, 9, NULL, st, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "selector must be");
    CHECK(st[0] == MOONCAKE_META_INVALID_PARAMS && st[1] == MOONCAKE_META_INVALID_PARAMS);
    mooncake_meta_master_free(m);
}

/* A malformed key (empty, or not UTF-8) fails on its own, as a single call
 * on it would; the other keys are processed (docs/CONTRACT.md section 3). */
static void a_malformed_key_fails_alone(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    const char *keys[] = {"a", "", "b\xff", "c"};
    size_t lens[4], counts[4];
    uint64_t sizes[] = {SIZE, SIZE, SIZE, SIZE}, tokens[4];
    int32_t st[4];
    uint8_t exists[4];
    mooncake_meta_replica r[4];
    lens_of(keys, lens, 4);
    CHECK_FAILS(mooncake_meta_batch_put_start(m, C1, NULL, 0, keys, lens, 4, sizes, NULL, r, 4,
                                              counts, tokens, st, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "keys[1]: keys[1] is empty (2 of 4 keys failed)");
    CHECK_EQ_INT(st[0], MOONCAKE_META_OK);
    CHECK_EQ_INT(st[1], MOONCAKE_META_INVALID_PARAMS);
    CHECK_EQ_INT(st[2], MOONCAKE_META_INVALID_UTF8);
    CHECK_EQ_INT(st[3], MOONCAKE_META_OK);
    CHECK_EQ_INT(counts[1], 0);
    CHECK_EQ_INT(tokens[2], 0);
    CHECK_EQ_INT(key_count(m), 2);
    CHECK_FAILS(mooncake_meta_batch_put_end(m, C1, NULL, 0, keys, lens, 4, MOONCAKE_META_SELECT_ALL,
                                            tokens, st, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "keys[1]");
    CHECK(st[0] == MOONCAKE_META_OK && st[3] == MOONCAKE_META_OK);
    CHECK(st[1] == MOONCAKE_META_INVALID_PARAMS && st[2] == MOONCAKE_META_INVALID_UTF8);
    CHECK_FAILS(mooncake_meta_batch_exist(m, NULL, 0, keys, lens, 4, exists, st, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "keys[1]");
    CHECK(exists[0] == 1 && exists[1] == 0 && exists[2] == 0 && exists[3] == 1);
    CHECK(st[0] == MOONCAKE_META_OK && st[2] == MOONCAKE_META_INVALID_UTF8);
    CHECK_FAILS(mooncake_meta_batch_remove(m, NULL, 0, keys, lens, 4, 1, st, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "keys[1]");
    CHECK(st[0] == MOONCAKE_META_OK && st[3] == MOONCAKE_META_OK);
    CHECK(st[1] == MOONCAKE_META_INVALID_PARAMS && st[2] == MOONCAKE_META_INVALID_UTF8);
    CHECK_EQ_INT(key_count(m), 0);
    mooncake_meta_master_free(m);
}

static void an_empty_batch_is_ok(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    size_t len = 99;
    CHECK_OK(mooncake_meta_batch_put_start(m, C1, NULL, 0, NULL, NULL, 0, NULL, NULL, NULL, 0, NULL,
                                           NULL, NULL, &err),
             err);
    CHECK_OK(mooncake_meta_batch_exist(m, NULL, 0, NULL, NULL, 0, NULL, NULL, &err), err);
    CHECK_OK(mooncake_meta_batch_get_replica_list(m, NULL, 0, NULL, NULL, 0, NULL, 0, NULL, &len,
                                                  NULL, &err),
             err);
    CHECK_EQ_INT(len, 0);
    CHECK_OK(mooncake_meta_batch_remove(m, NULL, 0, NULL, NULL, 0, 1, NULL, &err), err);
    mooncake_meta_master_free(m);
}

static void batch_revoke_without_tokens_erases_the_writes(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    const char *keys[] = {"a", "b"};
    size_t lens[2], counts[2];
    uint64_t sizes[] = {SIZE, SIZE}, tokens[2];
    int32_t st[2];
    mooncake_meta_replica r[2];
    lens_of(keys, lens, 2);
    CHECK_OK(mooncake_meta_batch_put_start(m, C1, "t", 1, keys, lens, 2, sizes, NULL, r, 2, counts,
                                           tokens, st, &err),
             err);
    CHECK_FAILS(mooncake_meta_batch_put_revoke(m, C2, "t", 1, keys, lens, 2,
                                               MOONCAKE_META_SELECT_ALL, NULL, st, &err),
                MOONCAKE_META_ILLEGAL_CLIENT, err, "keys[0]: client 2 is not the writer");
    CHECK_EQ_INT(st[1], MOONCAKE_META_ILLEGAL_CLIENT);
    CHECK_OK(mooncake_meta_batch_put_revoke(m, C1, "t", 1, keys, lens, 2, MOONCAKE_META_SELECT_ALL,
                                            NULL, st, &err),
             err);
    CHECK_EQ_INT(key_count(m), 0);
    mooncake_meta_master_free(m);
}

/* Two keys written: "one" with 1 replica, "two" with 2. */
static void write_one_and_two(mooncake_meta_master *m) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_replica r[2];
    size_t len = 0;
    uint64_t token = 0;
    mooncake_meta_write_config two = config(2);
    CHECK_OK(mooncake_meta_put_start(m, C1, KEY("one"), SIZE, NULL, r, 2, &len, &token, &err), err);
    CHECK_OK(mooncake_meta_put_end(m, C1, KEY("one"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_OK(mooncake_meta_put_start(m, C1, KEY("two"), SIZE, &two, r, 2, &len, &token, &err), err);
    CHECK_OK(mooncake_meta_put_end(m, C1, KEY("two"), MOONCAKE_META_SELECT_ALL, token, &err), err);
}

static void batch_get_replica_list_too_small_grants_no_lease(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    const char *keys[] = {"one", "missing", "two"};
    size_t lens[3], counts[3] = {9, 9, 9}, len = 0;
    int32_t st[3];
    mooncake_meta_replica r[3];
    lens_of(keys, lens, 3);
    write_one_and_two(m);
    CHECK_FAILS(mooncake_meta_batch_get_replica_list(m, NULL, 0, keys, lens, 3, r, 2, counts, &len,
                                                     st, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, "out_replicas has room for 2 but 3 are needed");
    CHECK_EQ_INT(len, 3);
    CHECK(st[0] == MOONCAKE_META_BUFFER_TOO_SMALL && st[2] == MOONCAKE_META_BUFFER_TOO_SMALL);
    CHECK_EQ_INT(counts[0], 9); /* nothing else written */
    /* No lease was granted: an unforced remove succeeds. */
    CHECK_FAILS(mooncake_meta_batch_remove(m, NULL, 0, keys, lens, 3, 0, st, &err),
                MOONCAKE_META_OBJECT_NOT_FOUND, err, "keys[1]: object not found (1 of 3 keys failed)");
    CHECK(st[0] == MOONCAKE_META_OK && st[2] == MOONCAKE_META_OK);
    CHECK_EQ_INT(key_count(m), 0);
    mooncake_meta_master_free(m);
}

static void batch_get_replica_list_packs_replicas_by_running_offset(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    const char *keys[] = {"two", "missing", "one"};
    size_t lens[3], counts[3], len = 0;
    int32_t st[3];
    mooncake_meta_replica r[4];
    lens_of(keys, lens, 3);
    write_one_and_two(m);
    CHECK_FAILS(mooncake_meta_batch_get_replica_list(m, NULL, 0, keys, lens, 3, r, 4, counts, &len,
                                                     st, &err),
                MOONCAKE_META_OBJECT_NOT_FOUND, err, "keys[1]: object not found");
    CHECK_EQ_INT(len, 3);
    CHECK_EQ_INT(counts[0], 2);
    CHECK_EQ_INT(counts[1], 0);
    CHECK_EQ_INT(counts[2], 1);
    CHECK(st[0] == MOONCAKE_META_OK && st[1] == MOONCAKE_META_OBJECT_NOT_FOUND && st[2] == 0);
    CHECK(r[0].segment_id != r[1].segment_id);
    CHECK_EQ_INT(r[2].status, MOONCAKE_META_REPLICA_COMPLETE);
    /* The reads granted leases: an unforced remove is refused per key. */
    CHECK_FAILS(mooncake_meta_batch_remove(m, NULL, 0, keys, lens, 3, 0, st, &err),
                MOONCAKE_META_OBJECT_HAS_LEASE, err, "keys[0]: ");
    CHECK(st[0] == MOONCAKE_META_OBJECT_HAS_LEASE && st[2] == MOONCAKE_META_OBJECT_HAS_LEASE);
    CHECK_FAILS(mooncake_meta_batch_remove(m, NULL, 0, keys, lens, 3, 5, st, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "force must be 0 or 1");
    CHECK_EQ_INT(key_count(m), 2);
    mooncake_meta_master_free(m);
}

/* An in-place upsert whose object has more replicas than the stride fails
 * alone with BUFFER_TOO_SMALL and its need; the other keys proceed. */
static void batch_upsert_in_place_beyond_the_stride_fails_only_that_key(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    const char *keys[] = {"one", "two", "new"};
    size_t lens[3], counts[3];
    uint64_t sizes[] = {SIZE, SIZE, SIZE}, tokens[3];
    int32_t st[3];
    mooncake_meta_replica r[3];
    uint8_t ex[3];
    lens_of(keys, lens, 3);
    write_one_and_two(m);
    CHECK_FAILS(mooncake_meta_batch_upsert_start(m, C2, NULL, 0, keys, lens, 3, sizes, NULL, r, 3,
                                                 counts, tokens, st, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, "keys[1]: ");
    CHECK(st[0] == MOONCAKE_META_OK && st[1] == MOONCAKE_META_BUFFER_TOO_SMALL && st[2] == 0);
    CHECK_EQ_INT(counts[0], 1);
    CHECK_EQ_INT(counts[1], 2);
    CHECK_EQ_INT(tokens[1], 0);
    CHECK_EQ_INT(counts[2], 1);
    CHECK_EQ_INT(r[0].status, MOONCAKE_META_REPLICA_PROCESSING); /* "one" back in flight */
    CHECK_OK(mooncake_meta_batch_exist(m, NULL, 0, keys, lens, 3, ex, st, &err), err);
    CHECK(ex[0] == 0 && ex[1] == 1 && ex[2] == 0); /* "two" untouched */
    mooncake_meta_master_free(m);
}

int main(void) {
    RUN_TEST(batch_put_start_lays_replicas_out_by_stride);
    RUN_TEST(a_failing_key_sets_its_status_and_the_first_failures_message);
    RUN_TEST(a_refused_batch_writes_one_code_everywhere_and_does_nothing);
    RUN_TEST(a_malformed_key_fails_alone);
    RUN_TEST(an_empty_batch_is_ok);
    RUN_TEST(batch_revoke_without_tokens_erases_the_writes);
    RUN_TEST(batch_get_replica_list_too_small_grants_no_lease);
    RUN_TEST(batch_get_replica_list_packs_replicas_by_running_offset);
    RUN_TEST(batch_upsert_in_place_beyond_the_stride_fails_only_that_key);
    return check_summary("test_batch");
}
