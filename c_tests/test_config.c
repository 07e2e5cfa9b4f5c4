/* The master configuration handle: defaults, one setter per field, setters
 * reject only unrepresentable values, _validate applies docs/CONTRACT.md section 9. */
#include "check.h"
#include "fixture.h"

#include <math.h>
#include <stdint.h>

static mooncake_meta_config *new_config(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = NULL;
    CHECK_OK(mooncake_meta_config_new(&cfg, &err), err);
    CHECK(cfg != NULL);
    return cfg;
}

static void new_config_is_valid_and_free_accepts_null(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = new_config();
    CHECK_OK(mooncake_meta_config_validate(cfg, &err), err);
    mooncake_meta_config_free(cfg);
    mooncake_meta_config_free(NULL);
}

static void every_setter_accepts_a_valid_value(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = new_config();
    CHECK_OK(mooncake_meta_config_set_default_kv_lease_ttl_ms(cfg, 5000, &err), err);
    CHECK_OK(mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(cfg, 60000, &err), err);
    CHECK_OK(mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(cfg, 120000, &err), err);
    CHECK_OK(mooncake_meta_config_set_allow_evict_soft_pinned_objects(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_allow_evict_soft_pinned_objects(cfg, 1, &err), err);
    CHECK_OK(mooncake_meta_config_set_eviction_ratio(cfg, 0.1, &err), err);
    CHECK_OK(mooncake_meta_config_set_eviction_high_watermark_ratio(cfg, 1.0, &err), err);
    CHECK_OK(mooncake_meta_config_set_put_start_discard_timeout_ms(cfg, 1000, &err), err);
    CHECK_OK(mooncake_meta_config_set_put_start_release_timeout_ms(cfg, 2000, &err), err);
    CHECK_OK(mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_sweep_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_shard_count(cfg, 16, &err), err);
    CHECK_OK(mooncake_meta_config_set_expected_objects(cfg, 100000, &err), err);
    CHECK_OK(mooncake_meta_config_set_commit_presized(cfg, 1, &err), err);
    CHECK_OK(mooncake_meta_config_set_commit_presized(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_commit_presized(cfg, 1, &err), err);
    CHECK_OK(mooncake_meta_config_set_manual_clock(cfg, 1700000000000ull, &err), err);
    CHECK_OK(mooncake_meta_config_set_seed(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_seed(cfg, UINT64_MAX, &err), err);
    CHECK_OK(mooncake_meta_config_validate(cfg, &err), err);
    CHECK_OK(mooncake_meta_config_set_system_clock(cfg, &err), err);
    CHECK_OK(mooncake_meta_config_validate(cfg, &err), err);
    mooncake_meta_config_free(cfg);
}

static void allow_evict_must_be_zero_or_one(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = new_config();
    CHECK_FAILS(mooncake_meta_config_set_allow_evict_soft_pinned_objects(cfg, 2, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "allow must be 0 or 1, got 2");
    CHECK_FAILS(mooncake_meta_config_set_allow_evict_soft_pinned_objects(cfg, -1, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "got -1");
    mooncake_meta_config_free(cfg);
}

/* commit_presized (section 9) is 0 or 1; anything else is rejected by the
   setter, naming the field, and leaves the configuration as it was. */
static void commit_presized_must_be_zero_or_one(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = new_config();
    CHECK_FAILS(mooncake_meta_config_set_commit_presized(cfg, 2, &err), MOONCAKE_META_INVALID_PARAMS,
                err, "mooncake_meta_config_set_commit_presized: commit_presized must be 0 or 1, got 2");
    CHECK_FAILS(mooncake_meta_config_set_commit_presized(cfg, -1, &err), MOONCAKE_META_INVALID_PARAMS,
                err, "commit_presized must be 0 or 1, got -1");
    CHECK_OK(mooncake_meta_config_validate(cfg, &err), err);
    CHECK_OK(mooncake_meta_config_set_shard_count(cfg, 4, &err), err);
    mooncake_meta_master *m = NULL;
    CHECK_OK(mooncake_meta_master_new(cfg, &m, &err), err);
    CHECK(m != NULL);
    mooncake_meta_master_free(m);
    mooncake_meta_config_free(cfg);
}

static void null_handle_is_a_null_argument(void) {
    mooncake_meta_error *err = NULL;
    CHECK_FAILS(mooncake_meta_config_set_eviction_ratio(NULL, 0.5, &err), MOONCAKE_META_NULL_ARGUMENT,
                err, "mooncake_meta_config_set_eviction_ratio: cfg is NULL");
    CHECK_FAILS(mooncake_meta_config_validate(NULL, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                "cfg is NULL");
    CHECK_FAILS(mooncake_meta_config_set_commit_presized(NULL, 1, &err), MOONCAKE_META_NULL_ARGUMENT,
                err, "mooncake_meta_config_set_commit_presized: cfg is NULL");
    CHECK_FAILS(mooncake_meta_config_set_system_clock(NULL, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                NULL);
}

typedef mooncake_meta_status (*u64_setter)(mooncake_meta_config *, uint64_t, mooncake_meta_error **);
typedef mooncake_meta_status (*ratio_setter)(mooncake_meta_config *, double, mooncake_meta_error **);

/* A value the setter accepts but validation rejects, naming the field. */
static void check_rejected_at_validation_u64(u64_setter set, uint64_t value, const char *field) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = new_config();
    CHECK_OK(set(cfg, value, &err), err);
    CHECK_FAILS(mooncake_meta_config_validate(cfg, &err), MOONCAKE_META_INVALID_PARAMS, err, field);
    mooncake_meta_config_free(cfg);
}

static void check_rejected_at_validation_ratio(ratio_setter set, double value, const char *field) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = new_config();
    CHECK_OK(set(cfg, value, &err), err);
    CHECK_FAILS(mooncake_meta_config_validate(cfg, &err), MOONCAKE_META_INVALID_PARAMS, err, field);
    mooncake_meta_config_free(cfg);
}

static void rules_between_fields_are_checked_at_validation(void) {
    check_rejected_at_validation_u64(mooncake_meta_config_set_default_kv_soft_pin_ttl_ms,
                                     86400001u, "default_kv_soft_pin_ttl");
    check_rejected_at_validation_u64(mooncake_meta_config_set_max_kv_soft_pin_ttl_ms, 1000,
                                     "exceeds max_kv_soft_pin_ttl");
    check_rejected_at_validation_u64(mooncake_meta_config_set_put_start_release_timeout_ms, 30000,
                                     "put_start_release_timeout");
    check_rejected_at_validation_u64(mooncake_meta_config_set_shard_count, 0, "shard_count");
    check_rejected_at_validation_u64(mooncake_meta_config_set_shard_count, (1u << 20) + 1,
                                     "shard_count");
    check_rejected_at_validation_u64(mooncake_meta_config_set_manual_clock, UINT64_MAX,
                                     "manual clock start");
    check_rejected_at_validation_u64(mooncake_meta_config_set_manual_clock, INT64_MAX,
                                     "MAX_INSTANT");
    check_rejected_at_validation_ratio(mooncake_meta_config_set_eviction_ratio, 1.5, "eviction_ratio");
    check_rejected_at_validation_ratio(mooncake_meta_config_set_eviction_ratio, NAN, "eviction_ratio");
    check_rejected_at_validation_ratio(mooncake_meta_config_set_eviction_high_watermark_ratio, 0.0,
                                       "eviction_high_watermark_ratio");
}

/* Every duration is bounded by MOONCAKE_META_MAX_DURATION_MS (INT64_MAX ms),
   so no instant + duration can overflow; the maximum itself is accepted. */
static void durations_above_the_maximum_are_rejected_at_validation(void) {
    static const struct {
        u64_setter set;
        const char *field;
    } durations[] = {
        {mooncake_meta_config_set_default_kv_lease_ttl_ms, "default_kv_lease_ttl"},
        {mooncake_meta_config_set_default_kv_soft_pin_ttl_ms, "default_kv_soft_pin_ttl"},
        {mooncake_meta_config_set_max_kv_soft_pin_ttl_ms, "max_kv_soft_pin_ttl"},
        {mooncake_meta_config_set_put_start_discard_timeout_ms, "put_start_discard_timeout"},
        {mooncake_meta_config_set_put_start_release_timeout_ms, "put_start_release_timeout"},
        {mooncake_meta_config_set_soft_pin_cleanup_interval_ms, "soft_pin_cleanup_interval"},
        {mooncake_meta_config_set_eviction_check_interval_ms, "eviction_check_interval"},
        {mooncake_meta_config_set_sweep_interval_ms, "sweep_interval"},
    };
    CHECK(MOONCAKE_META_MAX_DURATION_MS == (uint64_t)INT64_MAX);
    for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++) {
        check_rejected_at_validation_u64(durations[i].set, (uint64_t)MOONCAKE_META_MAX_DURATION_MS + 1,
                                         durations[i].field);
        check_rejected_at_validation_u64(durations[i].set, UINT64_MAX, durations[i].field);
    }
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = new_config();
    CHECK_OK(mooncake_meta_config_set_default_kv_lease_ttl_ms(cfg, MOONCAKE_META_MAX_DURATION_MS, &err),
             err);
    CHECK_OK(mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(cfg, MOONCAKE_META_MAX_DURATION_MS, &err),
             err);
    CHECK_OK(mooncake_meta_config_set_put_start_release_timeout_ms(cfg, MOONCAKE_META_MAX_DURATION_MS,
                                                                   &err),
             err);
    CHECK_OK(mooncake_meta_config_validate(cfg, &err), err);
    mooncake_meta_config_free(cfg);
}

/* expected_objects (section 9): 0 = no presizing, at most
   MOONCAKE_META_MAX_EXPECTED_OBJECTS (2^32), checked at validation. */
static void expected_objects_is_bounded_at_validation(void) {
    mooncake_meta_error *err = NULL;
    CHECK(MOONCAKE_META_MAX_EXPECTED_OBJECTS == (uint64_t)1 << 32);
    check_rejected_at_validation_u64(mooncake_meta_config_set_expected_objects,
                                     MOONCAKE_META_MAX_EXPECTED_OBJECTS + 1,
                                     "expected_objects 4294967297 exceeds the maximum 4294967296");
    check_rejected_at_validation_u64(mooncake_meta_config_set_expected_objects, UINT64_MAX,
                                     "expected_objects");
    mooncake_meta_config *cfg = new_config();
    CHECK_OK(mooncake_meta_config_set_expected_objects(cfg, MOONCAKE_META_MAX_EXPECTED_OBJECTS, &err),
             err);
    CHECK_OK(mooncake_meta_config_validate(cfg, &err), err);
    CHECK_OK(mooncake_meta_config_set_expected_objects(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_validate(cfg, &err), err);
    /* A master refuses the bad value too, and creates nothing. */
    mooncake_meta_master *m = NULL;
    CHECK_OK(mooncake_meta_config_set_expected_objects(cfg, UINT64_MAX, &err), err);
    CHECK_FAILS(mooncake_meta_master_new(cfg, &m, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "expected_objects");
    CHECK(m == NULL);
    mooncake_meta_config_free(cfg);
}

/* A master of 4 shards presized for `expected` objects (its tables
   committed at creation when `commit`), holding 200 pinned objects of 64
   bytes, k0 to k199, in one segment. */
static mooncake_meta_master *presized_master_with_200(uint64_t expected, int commit) {
    fx_options o;
    memset(&o, 0, sizeof o);
    o.shards = 4;
    o.expected_objects = expected;
    o.commit_presized = commit;
    mooncake_meta_master *m = fx_master(&o);
    fx_mount(m, 1, "seg", 1 << 20);
    mooncake_meta_write_config cfg = fx_enable(60000);
    char key[16];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "k%d", i);
        fx_put(m, 1, key, 64, &cfg);
    }
    return m;
}

/* A presized master behaves as any other, beyond its expected size too. */
static void a_presized_master_holds_more_than_expected(void) {
    mooncake_meta_master *m = presized_master_with_200(64, 0);
    mooncake_meta_metrics_snapshot s = fx_metrics(m);
    CHECK_EQ_INT(s.key_count, 200);
    CHECK_EQ_INT(s.soft_pin_key_count, 200);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

/* commit_presized with expected_objects: the presized tables are allocated
   (and resident, on huge pages where the system gives them) at creation, or
   the master falls back silently; either way it works as any other. */
static void a_committed_presized_master_round_trips(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = presized_master_with_200(10000, 1);
    mooncake_meta_replica r[2];
    size_t len = 0;
    CHECK_OK(mooncake_meta_get_replica_list(m, FX_KEY("k7"), r, 2, &len, &err), err);
    CHECK_EQ_INT(len, 1);
    CHECK_EQ_INT(r[0].size, 64);
    CHECK_FAILS(mooncake_meta_get_replica_list(m, FX_KEY("nope"), r, 2, &len, &err),
                MOONCAKE_META_OBJECT_NOT_FOUND, err, NULL);
    mooncake_meta_metrics_snapshot s = fx_metrics(m);
    CHECK_EQ_INT(s.key_count, 200);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
    /* Without expected_objects there is nothing to commit. */
    m = presized_master_with_200(0, 1);
    CHECK_EQ_INT(fx_metrics(m).key_count, 200);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

static void fixing_the_field_makes_it_valid_again(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = new_config();
    CHECK_OK(mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(cfg, 2u * 86400000u, &err), err);
    CHECK_FAILS(mooncake_meta_config_validate(cfg, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "exceeds max_kv_soft_pin_ttl");
    CHECK_OK(mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(cfg, 3u * 86400000u, &err), err);
    CHECK_OK(mooncake_meta_config_validate(cfg, &err), err);
    CHECK_OK(mooncake_meta_config_set_manual_clock(cfg, (uint64_t)INT64_MAX - 1, &err), err);
    CHECK_OK(mooncake_meta_config_validate(cfg, &err), err);
    mooncake_meta_config_free(cfg);
}

/* A master seeded by `seed` (mooncake_meta_config_set_seed), four memory
 * segments at fixed bases; writes 200 keys of one replica and records
 * where each went. */
static void placements_of_a_seeded_master(uint64_t seed, uint32_t seg[200], uint64_t addr[200]) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = new_config();
    CHECK_OK(mooncake_meta_config_set_manual_clock(cfg, 1700000000000ull, &err), err);
    CHECK_OK(mooncake_meta_config_set_seed(cfg, seed, &err), err);
    mooncake_meta_master *m = NULL;
    CHECK_OK(mooncake_meta_master_new(cfg, &m, &err), err);
    mooncake_meta_config_free(cfg);
    for (uint64_t i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "mem%u", (unsigned)i);
        uint32_t id = 0;
        CHECK_OK(mooncake_meta_mount_segment(m, 1, name, strlen(name), (i + 1) << 32, 1 << 20,
                                             MOONCAKE_META_POOL_MEMORY, &id, &err),
                 err);
    }
    mooncake_meta_write_config c = fx_config(1);
    for (int i = 0; i < 200; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        mooncake_meta_replica r[1];
        size_t n = 0;
        uint64_t token = 0;
        CHECK_OK(mooncake_meta_put_start(m, 1, FX_KEY(key), 4096, &c, r, 1, &n, &token, &err),
                 err);
        CHECK(n == 1);
        seg[i] = r[0].segment_id;
        addr[i] = r[0].address;
    }
    mooncake_meta_master_free(m);
}

/* Two masters with one seed place the same writes alike; another seed
 * places them otherwise (section 9: the seed). */
static void a_seed_makes_placements_repeat(void) {
    uint32_t seg_a[200], seg_b[200], seg_c[200];
    uint64_t addr_a[200], addr_b[200], addr_c[200];
    placements_of_a_seeded_master(7, seg_a, addr_a);
    placements_of_a_seeded_master(7, seg_b, addr_b);
    placements_of_a_seeded_master(8, seg_c, addr_c);
    CHECK(memcmp(seg_a, seg_b, sizeof seg_a) == 0);
    CHECK(memcmp(addr_a, addr_b, sizeof addr_a) == 0);
    CHECK(memcmp(seg_a, seg_c, sizeof seg_a) != 0);
}

int main(void) {
    RUN_TEST(new_config_is_valid_and_free_accepts_null);
    RUN_TEST(every_setter_accepts_a_valid_value);
    RUN_TEST(allow_evict_must_be_zero_or_one);
    RUN_TEST(commit_presized_must_be_zero_or_one);
    RUN_TEST(null_handle_is_a_null_argument);
    RUN_TEST(rules_between_fields_are_checked_at_validation);
    RUN_TEST(durations_above_the_maximum_are_rejected_at_validation);
    RUN_TEST(expected_objects_is_bounded_at_validation);
    RUN_TEST(a_presized_master_holds_more_than_expected);
    RUN_TEST(a_committed_presized_master_round_trips);
    RUN_TEST(fixing_the_field_makes_it_valid_again);
    RUN_TEST(a_seed_makes_placements_repeat);
    return check_summary("test_config");
}
