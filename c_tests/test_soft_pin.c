/* The soft-pin surface from C (docs/CONTRACT.md section 4): the commit rule through
 * both write configs (the legacy translation included), introspection,
 * expiration cleanup with its statistics, eviction priority, and the
 * maintenance entry points. Manual clock only. */
#include <math.h>

#include "fixture.h"

#define TTL_DEFAULT 120000u /* the masters' default soft-pin TTL here */

static mooncake_meta_master *pin_master(void) {
    fx_options o;
    memset(&o, 0, sizeof o);
    o.default_soft_pin_ttl_ms = TTL_DEFAULT;
    mooncake_meta_master *m = fx_master(&o);
    fx_mount(m, 1, "seg-a", 1 << 20);
    return m;
}

static mooncake_meta_replicate_config legacy(int with_soft_pin) {
    mooncake_meta_replicate_config c;
    memset(&c, 0, sizeof c);
    c.replica_num = 1;
    c.with_soft_pin = with_soft_pin;
    return c;
}

/* 3.3: the deadline starts at End, not Start; pending until then. */
static void enable_commits_at_end_with_the_requested_ttl(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = pin_master();
    mooncake_meta_write_config cfg = fx_enable(60000);
    uint64_t token = 0;
    CHECK_OK(fx_put_start(m, 1, "k", 4096, &cfg, &token), err);
    CHECK(token != 0);
    CHECK_EQ_INT(fx_pending(m, "k"), 1);
    CHECK_EQ_INT(fx_deadline(m, "k"), 0);
    uint64_t end = fx_advance(m, 250);
    CHECK_OK(mooncake_meta_put_end(m, 1, FX_KEY("k"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_EQ_INT(fx_deadline(m, "k"), end + 60000);
    CHECK_EQ_INT(fx_pending(m, "k"), 0);
    CHECK_EQ_INT(fx_metrics(m).soft_pin_key_count, 1);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

/* 3.1 legacy: with_soft_pin = 1 commits exactly the master default TTL. */
static void legacy_with_soft_pin_commits_exactly_the_default_ttl(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = pin_master();
    mooncake_meta_replicate_config cfg = legacy(1);
    mooncake_meta_replica r[2];
    size_t n = 0;
    uint64_t token = 0;
    CHECK_OK(mooncake_meta_put_start_legacy(m, 1, FX_KEY("k"), 4096, &cfg, r, 2, &n, &token, &err),
             err);
    CHECK_EQ_INT(n, 1);
    uint64_t end = fx_advance(m, 1234);
    CHECK_OK(mooncake_meta_put_end(m, 1, FX_KEY("k"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_EQ_INT(fx_deadline(m, "k"), end + TTL_DEFAULT);
    /* Any non-zero value means ENABLE, as upstream. */
    cfg.with_soft_pin = -3;
    CHECK_OK(mooncake_meta_put_start_legacy(m, 1, FX_KEY("k2"), 4096, &cfg, r, 2, &n, &token, &err),
             err);
    CHECK_OK(mooncake_meta_put_end(m, 1, FX_KEY("k2"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_EQ_INT(fx_deadline(m, "k2"), end + TTL_DEFAULT);
    /* 0 is PRESERVE: nothing committed on a new object. */
    cfg.with_soft_pin = 0;
    CHECK_OK(mooncake_meta_put_start_legacy(m, 1, FX_KEY("k3"), 4096, &cfg, r, 2, &n, &token, &err),
             err);
    CHECK_OK(mooncake_meta_put_end(m, 1, FX_KEY("k3"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_EQ_INT(fx_deadline(m, "k3"), 0);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

/* 3.1 + 3.5 legacy: with_soft_pin = 0 on an upsert of a pinned object keeps
 * its deadline, in place (same size) and with reallocation (other size). */
static void legacy_upsert_without_soft_pin_keeps_the_deadline(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = pin_master();
    mooncake_meta_write_config pin = fx_enable(600000);
    fx_put(m, 1, "k", 4096, &pin);
    uint64_t deadline = fx_deadline(m, "k");
    CHECK_EQ_INT(deadline, FX_START_MS + 600000);
    mooncake_meta_replicate_config cfg = legacy(0);
    mooncake_meta_replica r[2];
    size_t n = 0;
    const uint64_t sizes[] = {4096 /* case B */, 8192 /* case C */};
    for (int i = 0; i < 2; i++) {
        uint64_t token = 0;
        fx_advance(m, 1000);
        CHECK_OK(mooncake_meta_upsert_start_legacy(m, 2, FX_KEY("k"), sizes[i], &cfg, r, 2, &n,
                                                   &token, &err),
                 err);
        CHECK_EQ_INT(fx_deadline(m, "k"), deadline); /* kept while PROCESSING */
        fx_advance(m, 1000);
        CHECK_OK(mooncake_meta_upsert_end(m, 2, FX_KEY("k"), MOONCAKE_META_SELECT_ALL, token, &err),
                 err);
        CHECK_EQ_INT(fx_deadline(m, "k"), deadline); /* PRESERVE at End */
    }
    /* with_soft_pin = 1 re-arms from the End instant with the default TTL. */
    cfg.with_soft_pin = 1;
    uint64_t token = 0;
    CHECK_OK(mooncake_meta_upsert_start_legacy(m, 2, FX_KEY("k"), 8192, &cfg, r, 2, &n, &token,
                                               &err),
             err);
    uint64_t end = fx_advance(m, 10);
    CHECK_OK(mooncake_meta_upsert_end(m, 2, FX_KEY("k"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_EQ_INT(fx_deadline(m, "k"), end + TTL_DEFAULT);
    CHECK_EQ_INT(fx_metrics(m).soft_pin_key_count, 1);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

/* 3.3 table: DISABLE and ENABLE with TTL 0 clear; ENABLE replaces even with a shorter TTL. */
static void extended_actions_follow_the_commit_table(void) {
    mooncake_meta_master *m = pin_master();
    mooncake_meta_write_config pin = fx_enable(600000);
    fx_put(m, 1, "a", 4096, &pin);
    fx_put(m, 1, "b", 4096, &pin);
    fx_put(m, 1, "c", 4096, &pin);
    CHECK_EQ_INT(fx_metrics(m).soft_pin_key_count, 3);

    mooncake_meta_write_config disable = fx_config(1);
    disable.soft_pin_action = MOONCAKE_META_SOFT_PIN_DISABLE;
    fx_upsert(m, 1, "a", 4096, &disable);
    CHECK_EQ_INT(fx_deadline(m, "a"), 0);

    mooncake_meta_write_config ordinary = fx_enable(0);
    fx_upsert(m, 1, "b", 4096, &ordinary);
    CHECK_EQ_INT(fx_deadline(m, "b"), 0);

    uint64_t now = fx_advance(m, 5);
    mooncake_meta_write_config shorter = fx_enable(1000);
    fx_upsert(m, 1, "c", 4096, &shorter);
    CHECK_EQ_INT(fx_deadline(m, "c"), now + 1000);

    /* ENABLE without a TTL flag takes the master default. */
    mooncake_meta_write_config dflt = fx_config(1);
    dflt.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
    fx_put(m, 1, "d", 4096, &dflt);
    CHECK_EQ_INT(fx_deadline(m, "d"), now + TTL_DEFAULT);

    CHECK_EQ_INT(fx_metrics(m).soft_pin_key_count, 2);
    uint64_t heap = 0, live = 0;
    mooncake_meta_error *err = NULL;
    CHECK_OK(mooncake_meta_index_sizes(m, &heap, &live, &err), err);
    CHECK_EQ_INT(live, 2);
    CHECK(heap >= live);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

/* 3.6: reads grant leases but never extend, read or refresh the pin. */
static void reads_never_touch_the_soft_pin(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = pin_master();
    mooncake_meta_write_config pin = fx_enable(5000);
    fx_put(m, 1, "k", 4096, &pin);
    for (int i = 0; i < 4; i++) {
        fx_advance(m, 1000);
        mooncake_meta_replica r[2];
        size_t n = 0;
        CHECK_OK(mooncake_meta_get_replica_list(m, FX_KEY("k"), r, 2, &n, &err), err);
        CHECK_EQ_INT(n, 1);
        CHECK_EQ_INT(fx_exists(m, "k"), 1);
        CHECK_EQ_INT(fx_deadline(m, "k"), FX_START_MS + 5000);
    }
    mooncake_meta_master_free(m);
}

/* Missing keys are OBJECT_NOT_FOUND and write nothing. */
static void introspection_of_a_missing_key_is_object_not_found(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = pin_master();
    int has = 7, pending = 7;
    uint64_t deadline = 7;
    CHECK_FAILS(mooncake_meta_soft_pin_deadline(m, FX_KEY("nope"), &has, &deadline, &err),
                MOONCAKE_META_OBJECT_NOT_FOUND, err, "mooncake_meta_soft_pin_deadline");
    CHECK_FAILS(mooncake_meta_has_pending_soft_pin(m, FX_KEY("nope"), &pending, &err),
                MOONCAKE_META_OBJECT_NOT_FOUND, err, "mooncake_meta_has_pending_soft_pin");
    CHECK(has == 7 && pending == 7 && deadline == 7);
    /* A scoped key: tenant given explicitly. */
    mooncake_meta_write_config pin = fx_enable(1000);
    mooncake_meta_replica r[2];
    size_t n = 0;
    uint64_t token = 0;
    CHECK_OK(mooncake_meta_put_start(m, 1, "t1", 2, "k", 1, 4096, &pin, r, 2, &n, &token, &err), err);
    CHECK_OK(mooncake_meta_put_end(m, 1, "t1", 2, "k", 1, MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_OK(mooncake_meta_soft_pin_deadline(m, "t1", 2, "k", 1, &has, &deadline, &err), err);
    CHECK(has == 1 && deadline == FX_START_MS + 1000);
    CHECK_FAILS(mooncake_meta_soft_pin_deadline(m, FX_KEY("k"), &has, &deadline, &err),
                MOONCAKE_META_OBJECT_NOT_FOUND, err, NULL);
    mooncake_meta_master_free(m);
}

static mooncake_meta_cleanup_stats cleanup_at(mooncake_meta_master *m, uint64_t at) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_cleanup_stats s;
    memset(&s, 0xab, sizeof s);
    s.struct_size = sizeof s;
    CHECK_OK(mooncake_meta_run_cleanup_at(m, at, &s, &err), err);
    CHECK_EQ_INT(s.struct_size, sizeof s);
    CHECK_EQ_INT(s.reserved0, 0);
    return s;
}

/* 3.8: cleanup pops only what is due, clears it, drops stale entries, never
 * moves the clock; nothing due touches no shard. */
static void cleanup_expires_due_pins_with_statistics(void) {
    mooncake_meta_master *m = pin_master();
    char key[16];
    for (int i = 0; i < 5; i++) {
        mooncake_meta_write_config pin = fx_enable(1000u * (uint64_t)(i + 1));
        snprintf(key, sizeof key, "k%d", i);
        fx_put(m, 1, key, 4096, &pin);
    }
    /* Re-arm k0 for longer: its first entry goes stale. */
    mooncake_meta_write_config longer = fx_enable(10000);
    fx_upsert(m, 1, "k0", 4096, &longer);

    mooncake_meta_cleanup_stats s = cleanup_at(m, FX_START_MS + 999);
    CHECK_EQ_INT(s.popped, 0);
    CHECK_EQ_INT(s.expired, 0);
    CHECK_EQ_INT(s.shards_touched, 0);
    CHECK_EQ_INT(s.batches, 0);

    s = cleanup_at(m, FX_START_MS + 3000); /* k1 (2 s), k2 (3 s); k0's stale 1 s entry */
    CHECK_EQ_INT(s.popped, 3);
    CHECK_EQ_INT(s.stale_dropped, 1);
    CHECK_EQ_INT(s.expired, 2);
    CHECK(s.batches >= 1 && s.shards_touched >= 1);
    CHECK_EQ_INT(fx_now(m), FX_START_MS); /* the clock did not move */
    CHECK_EQ_INT(fx_deadline(m, "k1"), 0);
    CHECK_EQ_INT(fx_deadline(m, "k3"), FX_START_MS + 4000);
    CHECK_EQ_INT(fx_deadline(m, "k0"), FX_START_MS + 10000);

    mooncake_meta_metrics_snapshot mt = fx_metrics(m);
    CHECK_EQ_INT(mt.soft_pin_key_count, 3);
    CHECK_EQ_INT(mt.cleanup_cycles, 2);
    CHECK_EQ_INT(mt.cleanup_expired, 2);
    CHECK_EQ_INT(mt.cleanup_stale_dropped, 1);
    CHECK_EQ_INT(mt.index_live_registrations, 3);

    /* run_cleanup uses the master clock; NULL stats are allowed. */
    mooncake_meta_error *err = NULL;
    fx_advance(m, 60000);
    CHECK_OK(mooncake_meta_run_cleanup(m, NULL, &err), err);
    mt = fx_metrics(m);
    CHECK_EQ_INT(mt.soft_pin_key_count, 0);
    CHECK_EQ_INT(mt.index_live_registrations, 0);
    CHECK_EQ_INT(mt.cleanup_expired, 5);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

/* Size-versioned output: too small is rejected before the work, a larger
 * (newer) struct gets our fields and keeps its tail. */
static void cleanup_statistics_are_size_versioned(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = pin_master();
    mooncake_meta_write_config pin = fx_enable(1000);
    fx_put(m, 1, "k", 4096, &pin);
    mooncake_meta_cleanup_stats s;
    memset(&s, 0x5a, sizeof s);
    s.struct_size = 8;
    CHECK_FAILS(mooncake_meta_run_cleanup_at(m, FX_START_MS + 5000, &s, &err),
                MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, err, "out->struct_size 8 is below");
    CHECK_EQ_INT(s.popped, 0x5a5a5a5a5a5a5a5aull);
    CHECK_EQ_INT(fx_deadline(m, "k"), FX_START_MS + 1000); /* nothing ran */
    CHECK_EQ_INT(fx_metrics(m).cleanup_cycles, 0);

    struct {
        mooncake_meta_cleanup_stats base;
        uint64_t future;
    } newer;
    memset(&newer, 0, sizeof newer);
    newer.base.struct_size = sizeof newer;
    newer.future = 77;
    CHECK_OK(mooncake_meta_run_cleanup_at(m, FX_START_MS + 5000, &newer.base, &err), err);
    CHECK_EQ_INT(newer.base.struct_size, sizeof(mooncake_meta_cleanup_stats));
    CHECK_EQ_INT(newer.base.expired, 1);
    CHECK_EQ_INT(newer.future, 77);
    mooncake_meta_master_free(m);
}

static void instants_beyond_max(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = pin_master();
    uint64_t n = 9;
    CHECK_FAILS(mooncake_meta_run_cleanup_at(m, UINT64_MAX, NULL, &err), MOONCAKE_META_INVALID_PARAMS,
                err, "at_ms");
    CHECK_FAILS(mooncake_meta_release_discarded_at(m, UINT64_MAX, &n, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "at_ms");
    CHECK_EQ_INT(n, 9);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);

    /* The sweep takes any instant: its comparison is strict, so beyond
     * MAX_INSTANT it sweeps a write whose release instant saturated there
     * (docs/CONTRACT.md section 1). With the longest release timeout every
     * write's does. */
    mooncake_meta_config *cfg = NULL;
    CHECK_OK(mooncake_meta_config_new(&cfg, &err), err);
    CHECK_OK(mooncake_meta_config_set_manual_clock(cfg, FX_START_MS, &err), err);
    CHECK_OK(mooncake_meta_config_set_sweep_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_put_start_release_timeout_ms(cfg, MOONCAKE_META_MAX_DURATION_MS,
                                                                   &err),
             err);
    CHECK_OK(mooncake_meta_master_new(cfg, &m, &err), err);
    mooncake_meta_config_free(cfg);
    fx_mount(m, 1, "seg-a", 1 << 20);
    uint64_t token = 0;
    CHECK_OK(fx_put_start(m, 1, "saturated", 4096, NULL, &token), err);
    CHECK_OK(mooncake_meta_sweep_stale_writes_at(m, (uint64_t)INT64_MAX, &n, &err), err);
    CHECK_EQ_INT(n, 0);
    CHECK_OK(mooncake_meta_sweep_stale_writes_at(m, (uint64_t)INT64_MAX + 1, &n, &err), err);
    CHECK_EQ_INT(n, 1);
    CHECK_OK(fx_put_start(m, 1, "saturated-2", 4096, NULL, &token), err);
    CHECK_OK(mooncake_meta_sweep_stale_writes_at(m, UINT64_MAX, &n, &err), err);
    CHECK_EQ_INT(n, 1);
    fx_check_invariants(m);
    CHECK_OK(mooncake_meta_run_cleanup_at(m, (uint64_t)INT64_MAX, NULL, &err), err);
    mooncake_meta_master_free(m);
}

static mooncake_meta_eviction_report evict(mooncake_meta_master *m, double target, double lower) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_eviction_report r;
    memset(&r, 0xee, sizeof r);
    r.struct_size = sizeof r;
    CHECK_OK(mooncake_meta_run_eviction(m, target, lower, &r, &err), err);
    CHECK_EQ_INT(r.struct_size, sizeof r);
    return r;
}

/* Whether `key` exists, without granting a lease (unlike Exist). */
static int present(mooncake_meta_master *m, const char *key) {
    mooncake_meta_error *err = NULL;
    int has = 0;
    uint64_t d = 0;
    mooncake_meta_status st = mooncake_meta_soft_pin_deadline(m, FX_KEY(key), &has, &d, &err);
    mooncake_meta_error_free(err);
    CHECK(st == MOONCAKE_META_OK || st == MOONCAKE_META_OBJECT_NOT_FOUND);
    return st == MOONCAKE_META_OK;
}

/* 3.7 / 4: the first pass skips active pins and goes in (lease, age) order;
 * the second takes pins only when the lowerbound needs them; a live lease
 * protects from both. */
static void eviction_takes_ordinary_objects_before_pinned_ones(void) {
    mooncake_meta_master *m = pin_master();
    mooncake_meta_write_config ordinary = fx_config(1), pin = fx_enable(3600000);
    const char *keys_o[] = {"o0", "o1", "o2", "o3"}, *keys_p[] = {"p0", "p1", "p2", "p3"};
    for (int i = 0; i < 4; i++) {
        fx_put(m, 1, keys_p[i], 65536, &pin);
        fx_put(m, 1, keys_o[i], 65536, &ordinary);
    }
    fx_advance(m, 1);
    CHECK_EQ_INT(fx_exists(m, "o0"), 1); /* a live lease: o0 is not a candidate */

    mooncake_meta_eviction_report r = evict(m, 0.25, 0.0); /* ceil(8 * 0.25) = 2 */
    CHECK_EQ_INT(r.base, 8);
    CHECK_EQ_INT(r.candidates, 7);
    CHECK_EQ_INT(r.evicted, 2);
    CHECK_EQ_INT(r.evicted_bytes, 2 * 65536);
    CHECK_EQ_INT(r.evicted_pinned, 0);
    CHECK_EQ_INT(r.normalised, 0);
    /* The oldest unleased ordinary objects went first. */
    CHECK(present(m, "o0") && !present(m, "o1") && !present(m, "o2") && present(m, "o3"));

    r = evict(m, 1.0, 0.0); /* the first pass alone never takes a pin */
    CHECK_EQ_INT(r.base, 6);
    CHECK_EQ_INT(r.evicted, 1);
    CHECK(!present(m, "o3"));
    CHECK_EQ_INT(fx_metrics(m).soft_pin_key_count, 4);

    r = evict(m, 1.0, 1.0); /* lowerbound 1: the pins go in the second pass */
    CHECK_EQ_INT(r.base, 5);
    CHECK_EQ_INT(r.evicted, 4);
    CHECK_EQ_INT(r.evicted_pinned, 4);
    CHECK(present(m, "o0")); /* still leased */
    mooncake_meta_metrics_snapshot mt = fx_metrics(m);
    CHECK_EQ_INT(mt.key_count, 1);
    CHECK_EQ_INT(mt.soft_pin_key_count, 0);
    CHECK_EQ_INT(mt.evicted_keys, 7);
    CHECK_EQ_INT(mt.evicted_bytes, 7 * 65536);
    CHECK_EQ_INT(mt.eviction_attempts, 3);
    CHECK_EQ_INT(mt.eviction_successes, 3);
    CHECK_EQ_INT(mt.memory_allocated_bytes, 65536);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

/* allow_evict_soft_pinned_objects = 0: active pins survive any lowerbound;
 * an expired pin protects nothing, even before cleanup, and is normalised. */
static void pins_survive_when_forbidden_until_they_expire(void) {
    fx_options o;
    memset(&o, 0, sizeof o);
    o.forbid_evict_soft_pinned = 1;
    mooncake_meta_master *m = fx_master(&o);
    fx_mount(m, 1, "seg-a", 1 << 20);
    mooncake_meta_write_config pin = fx_enable(10000);
    fx_put(m, 1, "p0", 65536, &pin);
    fx_put(m, 1, "p1", 65536, &pin);
    mooncake_meta_eviction_report r = evict(m, 1.0, 1.0);
    CHECK_EQ_INT(r.base, 2);
    CHECK_EQ_INT(r.evicted, 0);
    fx_advance(m, 10000); /* now == deadline: expired */
    r = evict(m, 0.5, 0.0);
    CHECK_EQ_INT(r.normalised, 2);
    CHECK_EQ_INT(r.evicted, 1);
    CHECK_EQ_INT(r.evicted_pinned, 0);
    CHECK_EQ_INT(fx_metrics(m).soft_pin_key_count, 0);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

static void eviction_ratios_are_validated(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = pin_master();
    mooncake_meta_eviction_report r;
    memset(&r, 0x11, sizeof r);
    r.struct_size = sizeof r;
    CHECK_FAILS(mooncake_meta_run_eviction(m, NAN, 0.0, &r, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "target must be in [0, 1], got NaN");
    CHECK_FAILS(mooncake_meta_run_eviction(m, 0.5, 1.5, &r, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "lowerbound");
    CHECK_FAILS(mooncake_meta_run_eviction(m, -0.1, 0.0, &r, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "target");
    CHECK_EQ_INT(r.base, 0x1111111111111111ull);
    CHECK_EQ_INT(fx_metrics(m).eviction_attempts, 0);
    int ran = 5;
    CHECK_FAILS(mooncake_meta_evict_if_needed(m, 2, &ran, NULL, &err), MOONCAKE_META_INVALID_PARAMS,
                err, "force must be 0 or 1");
    CHECK_EQ_INT(ran, 5);
    mooncake_meta_master_free(m);
}

/* 4: the trigger runs above the high watermark, or when forced. */
static void evict_if_needed_follows_the_watermark(void) {
    mooncake_meta_error *err = NULL;
    fx_options o;
    memset(&o, 0, sizeof o);
    o.high_watermark = 0.5;
    o.eviction_ratio = 0.1;
    mooncake_meta_master *m = fx_master(&o);
    fx_mount(m, 1, "seg-a", 1 << 20);
    mooncake_meta_write_config ordinary = fx_config(1);
    char key[16];
    for (int i = 0; i < 6; i++) { /* 6 x 64 KiB = 37.5 % */
        snprintf(key, sizeof key, "k%d", i);
        fx_put(m, 1, key, 65536, &ordinary);
    }
    int ran = -1;
    mooncake_meta_eviction_report r;
    memset(&r, 0x22, sizeof r);
    r.struct_size = sizeof r;
    CHECK_OK(mooncake_meta_evict_if_needed(m, 0, &ran, &r, &err), err);
    CHECK_EQ_INT(ran, 0);
    CHECK_EQ_INT(r.base, 0x2222222222222222ull); /* untouched when nothing ran */
    for (int i = 6; i < 10; i++) { /* 10 x 64 KiB = 62.5 % */
        snprintf(key, sizeof key, "k%d", i);
        fx_put(m, 1, key, 65536, &ordinary);
    }
    CHECK_OK(mooncake_meta_evict_if_needed(m, 0, &ran, &r, &err), err);
    CHECK_EQ_INT(ran, 1);
    CHECK_EQ_INT(r.base, 10);
    CHECK(r.evicted >= 2); /* target = 0.125 + 0.1 of 10 objects */
    mooncake_meta_metrics_snapshot mt = fx_metrics(m);
    CHECK(mt.memory_allocated_bytes * 2 <= mt.memory_capacity_bytes);
    /* Forced (what an allocation failure does): runs below the watermark. */
    CHECK_OK(mooncake_meta_evict_if_needed(m, 1, &ran, NULL, &err), err);
    CHECK_EQ_INT(ran, 1);
    CHECK_EQ_INT(fx_metrics(m).eviction_attempts, 2);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

/* 2: a stale write is swept (its buffers discarded until put_start +
 * release timeout), and the discarded bytes are freed at that instant. */
static void stale_writes_are_swept_and_their_buffers_released(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = pin_master();
    mooncake_meta_write_config pin = fx_enable(1000);
    CHECK_OK(fx_put_start(m, 1, "w", 65536, &pin, NULL), err);
    CHECK_EQ_INT(fx_pending(m, "w"), 1);
    const uint64_t release = 600000; /* the default put_start_release_timeout */
    uint64_t swept = 99, released = 99;
    CHECK_OK(mooncake_meta_sweep_stale_writes_at(m, FX_START_MS + release, &swept, &err), err);
    CHECK_EQ_INT(swept, 0); /* not stale yet: put_start + release < at is strict */
    CHECK_OK(mooncake_meta_sweep_stale_writes_at(m, FX_START_MS + release + 1, &swept, &err), err);
    CHECK_EQ_INT(swept, 1);
    int has = 0;
    uint64_t d = 0;
    CHECK_FAILS(mooncake_meta_soft_pin_deadline(m, FX_KEY("w"), &has, &d, &err),
                MOONCAKE_META_OBJECT_NOT_FOUND, err, NULL);
    mooncake_meta_metrics_snapshot mt = fx_metrics(m);
    CHECK_EQ_INT(mt.swept_writes, 1);
    CHECK_EQ_INT(mt.discarded_staging_bytes, 65536);
    CHECK_EQ_INT(mt.memory_allocated_bytes, 65536);
    CHECK_EQ_INT(mt.key_count, 0);
    fx_check_invariants(m);
    CHECK_OK(mooncake_meta_release_discarded_at(m, FX_START_MS + release - 1, &released, &err), err);
    CHECK_EQ_INT(released, 0);
    CHECK_OK(mooncake_meta_release_discarded_at(m, FX_START_MS + release, NULL, &err), err);
    mt = fx_metrics(m);
    CHECK_EQ_INT(mt.discarded_staging_bytes, 0);
    CHECK_EQ_INT(mt.memory_allocated_bytes, 0);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

/* One tick does what the maintenance thread does: here, cleanup at now. */
static void maintenance_tick_expires_due_pins(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = pin_master();
    mooncake_meta_write_config pin = fx_enable(1000);
    fx_put(m, 1, "k", 4096, &pin);
    CHECK_OK(mooncake_meta_run_maintenance_tick(m, &err), err);
    CHECK_EQ_INT(fx_deadline(m, "k"), FX_START_MS + 1000);
    fx_advance(m, 1000);
    CHECK_OK(mooncake_meta_run_maintenance_tick(m, &err), err);
    CHECK_EQ_INT(fx_deadline(m, "k"), 0);
    CHECK_EQ_INT(fx_metrics(m).cleanup_cycles, 2);
    CHECK_EQ_INT(fx_exists(m, "k"), 1); /* expiry ends the pin, not the object */
    mooncake_meta_master_free(m);
}

int main(void) {
    RUN_TEST(enable_commits_at_end_with_the_requested_ttl);
    RUN_TEST(legacy_with_soft_pin_commits_exactly_the_default_ttl);
    RUN_TEST(legacy_upsert_without_soft_pin_keeps_the_deadline);
    RUN_TEST(extended_actions_follow_the_commit_table);
    RUN_TEST(reads_never_touch_the_soft_pin);
    RUN_TEST(introspection_of_a_missing_key_is_object_not_found);
    RUN_TEST(cleanup_expires_due_pins_with_statistics);
    RUN_TEST(cleanup_statistics_are_size_versioned);
    RUN_TEST(instants_beyond_max);
    RUN_TEST(eviction_takes_ordinary_objects_before_pinned_ones);
    RUN_TEST(pins_survive_when_forbidden_until_they_expire);
    RUN_TEST(eviction_ratios_are_validated);
    RUN_TEST(evict_if_needed_follows_the_watermark);
    RUN_TEST(stale_writes_are_swept_and_their_buffers_released);
    RUN_TEST(maintenance_tick_expires_due_pins);
    return check_summary("test_soft_pin");
}
