/* The legacy entry points (upstream store_c.h's mooncake_replicate_config):
 * replica_num, preferred segments, C-truthy pin flags, NULL = defaults
 * (docs/CONTRACT.md §4.1 "Legacy boolean"). What the C ABI cannot observe -- the
 * committed soft-pin deadline: with_soft_pin != 0 commits now + the master's
 * default TTL, 0 keeps a pinned object's deadline -- is asserted through the
 * same entry points by tests/ffi_legacy.rs. */
#include "check.h"

#include <stdint.h>

#define T0 1000000ull
#define C1 1u
#define SIZE 4096u
#define KEY(s) NULL, 0, (s), strlen(s)

static uint32_t seg[2];

static mooncake_meta_master *new_master(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = NULL;
    mooncake_meta_master *m = NULL;
    const char *names[] = {"mem0", "mem1"};
    CHECK_OK(mooncake_meta_config_new(&cfg, &err), err);
    CHECK_OK(mooncake_meta_config_set_manual_clock(cfg, T0, &err), err);
    CHECK_OK(mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_sweep_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(cfg, 60000, &err), err);
    CHECK_OK(mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(cfg, 120000, &err), err);
    CHECK_OK(mooncake_meta_master_new(cfg, &m, &err), err);
    mooncake_meta_config_free(cfg);
    for (int i = 0; i < 2; i++) {
        CHECK_OK(mooncake_meta_mount_segment(m, C1, names[i], 4, (uint64_t)(i + 1) << 40, 1 << 20,
                                             MOONCAKE_META_POOL_MEMORY, &seg[i], &err),
                 err);
    }
    return m;
}

static void null_legacy_config_is_one_memory_replica(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    mooncake_meta_replica r[2];
    size_t len = 0;
    uint64_t token = 0;
    CHECK_OK(mooncake_meta_put_start_legacy(m, C1, KEY("k"), SIZE, NULL, r, 2, &len, &token, &err),
             err);
    CHECK_EQ_INT(len, 1);
    CHECK_EQ_INT(r[0].kind, MOONCAKE_META_REPLICA_MEMORY);
    CHECK(token != 0);
    CHECK_OK(mooncake_meta_put_end(m, C1, KEY("k"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    mooncake_meta_master_free(m);
}

static void replica_num_sets_the_memory_replicas_and_the_capacity_needed(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    mooncake_meta_replicate_config c = {2, 0, 0, NULL, 0};
    mooncake_meta_replica r[2];
    size_t len = 0;
    CHECK_FAILS(mooncake_meta_put_start_legacy(m, C1, KEY("k"), SIZE, &c, r, 1, &len, NULL, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, "2 are needed");
    CHECK_EQ_INT(len, 2);
    CHECK_OK(mooncake_meta_put_start_legacy(m, C1, KEY("k"), SIZE, &c, r, 2, &len, NULL, &err), err);
    CHECK_EQ_INT(len, 2);
    CHECK(r[0].segment_id != r[1].segment_id);
    c.replica_num = 0;
    CHECK_FAILS(mooncake_meta_put_start_legacy(m, C1, KEY("j"), SIZE, &c, r, 2, &len, NULL, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "at least one replica");
    mooncake_meta_master_free(m);
}

static void preferred_segments_place_the_replica(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    const char *prefer1[] = {"mem1"};
    const char *prefer0[] = {"mem0"};
    mooncake_meta_replicate_config c = {1, 0, 0, prefer1, 1};
    mooncake_meta_replica r[1];
    size_t len = 0;
    CHECK_OK(mooncake_meta_put_start_legacy(m, C1, KEY("a"), SIZE, &c, r, 1, &len, NULL, &err), err);
    CHECK_EQ_INT(r[0].segment_id, seg[1]);
    c.preferred_segments = prefer0;
    CHECK_OK(mooncake_meta_put_start_legacy(m, C1, KEY("b"), SIZE, &c, r, 1, &len, NULL, &err), err);
    CHECK_EQ_INT(r[0].segment_id, seg[0]);
    c.preferred_segments = NULL;
    CHECK_FAILS(mooncake_meta_put_start_legacy(m, C1, KEY("c"), SIZE, &c, r, 1, &len, NULL, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "cfg.preferred_segments is NULL but its count is 1");
    mooncake_meta_master_free(m);
}

/* with_soft_pin is C truthiness and always resolves to the master default,
 * which is within the maximum: never INVALID_PARAMS, unlike an explicit
 * TTL above the maximum in the extended config. */
static void any_with_soft_pin_value_is_accepted(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    int values[] = {1, -3, 7, 0};
    const char *keys[] = {"v1", "v2", "v3", "v4"};
    mooncake_meta_replica r[1];
    size_t len = 0;
    uint64_t token = 0;
    mooncake_meta_write_config too_long;
    for (int i = 0; i < 4; i++) {
        mooncake_meta_replicate_config c = {1, values[i], values[i], NULL, 0};
        CHECK_OK(mooncake_meta_put_start_legacy(m, C1, KEY(keys[i]), SIZE, &c, r, 1, &len, &token,
                                                &err),
                 err);
        CHECK_OK(mooncake_meta_put_end(m, C1, KEY(keys[i]), MOONCAKE_META_SELECT_ALL, token, &err),
                 err);
    }
    CHECK_OK(mooncake_meta_write_config_init(&too_long, sizeof too_long, &err), err);
    too_long.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
    too_long.flags = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
    too_long.soft_pin_ttl_ms = 120001;
    CHECK_FAILS(mooncake_meta_put_start(m, C1, KEY("x"), SIZE, &too_long, r, 1, &len, NULL, &err),
                MOONCAKE_META_INVALID_PARAMS, err, NULL);
    mooncake_meta_master_free(m);
}

static void legacy_upsert_runs_in_place_and_resizes(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    mooncake_meta_replicate_config pin = {1, 1, 0, NULL, 0};
    mooncake_meta_replicate_config keep = {1, 0, 0, NULL, 0};
    mooncake_meta_replica first[1], r[1];
    size_t len = 0;
    uint64_t token = 0;
    CHECK_OK(mooncake_meta_upsert_start_legacy(m, C1, KEY("k"), SIZE, &pin, first, 1, &len, &token,
                                               &err),
             err);
    CHECK_OK(mooncake_meta_upsert_end(m, C1, KEY("k"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_OK(mooncake_meta_upsert_start_legacy(m, C1, KEY("k"), SIZE, &keep, r, 1, &len, &token,
                                               &err),
             err);
    CHECK_EQ_INT(r[0].id, first[0].id);
    CHECK_OK(mooncake_meta_upsert_end(m, C1, KEY("k"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_OK(mooncake_meta_upsert_start_legacy(m, C1, KEY("k"), 2 * SIZE, NULL, r, 1, &len, &token,
                                               &err),
             err);
    CHECK(r[0].id != first[0].id);
    CHECK_FAILS(mooncake_meta_upsert_start_legacy(m, C1, KEY("k"), SIZE, NULL, NULL, 0, &len, NULL,
                                                  &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, NULL);
    mooncake_meta_master_free(m);
}

/* The legacy struct has no group field, and an Upsert that names no group
 * keeps the object's group: a legacy Upsert of a grouped object works, in
 * place and resized, and the object stays a member (the group's shared
 * lease, raised by a read of another member, still blocks its removal).
 * Naming another group through the extended struct is still refused. */
static void legacy_upsert_keeps_the_objects_group(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    mooncake_meta_write_config grouped;
    const char *keys[] = {"a", "b", "c"};
    mooncake_meta_replica r[1];
    size_t len = 0;
    uint64_t token = 0;
    int exists = 0;
    CHECK_OK(mooncake_meta_write_config_init(&grouped, sizeof grouped, &err), err);
    grouped.group = "g";
    for (int i = 0; i < 3; i++) {
        CHECK_OK(mooncake_meta_put_start(m, C1, KEY(keys[i]), SIZE, &grouped, r, 1, &len, &token,
                                         &err),
                 err);
        CHECK_OK(mooncake_meta_put_end(m, C1, KEY(keys[i]), MOONCAKE_META_SELECT_ALL, token, &err),
                 err);
    }
    CHECK_OK(mooncake_meta_upsert_start_legacy(m, C1, KEY("b"), SIZE, NULL, r, 1, &len, &token,
                                               &err),
             err);
    CHECK_OK(mooncake_meta_upsert_end(m, C1, KEY("b"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_OK(mooncake_meta_upsert_start_legacy(m, C1, KEY("c"), 2 * SIZE, NULL, r, 1, &len, &token,
                                               &err),
             err);
    CHECK_OK(mooncake_meta_upsert_end(m, C1, KEY("c"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_OK(mooncake_meta_exist(m, KEY("a"), &exists, &err), err);
    CHECK_EQ_INT(exists, 1);
    CHECK_FAILS(mooncake_meta_remove(m, KEY("b"), 0, &err), MOONCAKE_META_OBJECT_HAS_LEASE, err,
                NULL);
    CHECK_FAILS(mooncake_meta_remove(m, KEY("c"), 0, &err), MOONCAKE_META_OBJECT_HAS_LEASE, err,
                NULL);
    grouped.group = "h";
    CHECK_FAILS(mooncake_meta_upsert_start(m, C1, KEY("b"), SIZE, &grouped, r, 1, &len, NULL, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "the group of an object is fixed at creation");
    mooncake_meta_master_free(m);
}

int main(void) {
    RUN_TEST(null_legacy_config_is_one_memory_replica);
    RUN_TEST(replica_num_sets_the_memory_replicas_and_the_capacity_needed);
    RUN_TEST(preferred_segments_place_the_replica);
    RUN_TEST(any_with_soft_pin_value_is_accepted);
    RUN_TEST(legacy_upsert_runs_in_place_and_resizes);
    RUN_TEST(legacy_upsert_keeps_the_objects_group);
    return check_summary("test_legacy");
}
