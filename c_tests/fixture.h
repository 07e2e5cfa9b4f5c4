/*
 * A deterministic master for the C tests: manual clock, every background
 * task off, small shard count; plus helpers to mount segments, write
 * objects (start + end) and read the master's state. Every helper checks
 * its own calls with check.h, so a test reads as its scenario.
 *
 *   mooncake_meta_master *m = fx_master(NULL);
 *   fx_mount(m, 1, "seg-a", 1 << 20);
 *   mooncake_meta_write_config cfg = fx_enable(60000);
 *   fx_put(m, 1, "k", 4096, &cfg);
 *   CHECK_EQ_INT(fx_deadline(m, "k"), FX_START_MS + 60000);
 *   mooncake_meta_master_free(m);
 */
#ifndef MOONCAKE_META_C_TESTS_FIXTURE_H
#define MOONCAKE_META_C_TESTS_FIXTURE_H

#include <stdint.h>
#include <string.h>

#include "check.h"

/* The manual clock's start: 2023-11-14T22:13:20Z. */
#define FX_START_MS 1700000000000ull

/* The four key arguments of a key-taking call, default tenant. */
#define FX_KEY(s) NULL, 0, (s), strlen(s)

/* Master settings a test may change; 0 keeps the library default. */
typedef struct {
    uint64_t default_soft_pin_ttl_ms;
    uint64_t max_soft_pin_ttl_ms;
    uint64_t lease_ttl_ms;
    int forbid_evict_soft_pinned; /* 1: allow_evict_soft_pinned_objects = 0 */
    double eviction_ratio;
    double high_watermark;
    uint32_t shards; /* default 16 here, to keep tests light */
    uint64_t expected_objects; /* presizing; 0 = none (the default) */
    int commit_presized;       /* 1: presized tables allocated and resident at creation */
    uint64_t journal_capacity_bytes; /* the change journal; 0 = none (the default) */
    int standby;                     /* 1: a standby master */
} fx_options;

/* A master on a manual clock at FX_START_MS with every background task off. */
static inline mooncake_meta_master *fx_master(const fx_options *o) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = NULL;
    mooncake_meta_master *m = NULL;
    fx_options none;
    memset(&none, 0, sizeof none);
    if (o == NULL) o = &none;
    CHECK_OK(mooncake_meta_config_new(&cfg, &err), err);
    CHECK_OK(mooncake_meta_config_set_manual_clock(cfg, FX_START_MS, &err), err);
    CHECK_OK(mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_sweep_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_shard_count(cfg, o->shards ? o->shards : 16, &err), err);
    if (o->expected_objects)
        CHECK_OK(mooncake_meta_config_set_expected_objects(cfg, o->expected_objects, &err), err);
    if (o->commit_presized) CHECK_OK(mooncake_meta_config_set_commit_presized(cfg, 1, &err), err);
    if (o->journal_capacity_bytes)
        CHECK_OK(mooncake_meta_config_set_journal_capacity_bytes(cfg, o->journal_capacity_bytes, &err),
                 err);
    if (o->standby) CHECK_OK(mooncake_meta_config_set_standby(cfg, 1, &err), err);
    if (o->max_soft_pin_ttl_ms)
        CHECK_OK(mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(cfg, o->max_soft_pin_ttl_ms, &err), err);
    if (o->default_soft_pin_ttl_ms)
        CHECK_OK(mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(cfg, o->default_soft_pin_ttl_ms, &err),
                 err);
    if (o->lease_ttl_ms)
        CHECK_OK(mooncake_meta_config_set_default_kv_lease_ttl_ms(cfg, o->lease_ttl_ms, &err), err);
    if (o->forbid_evict_soft_pinned)
        CHECK_OK(mooncake_meta_config_set_allow_evict_soft_pinned_objects(cfg, 0, &err), err);
    if (o->eviction_ratio > 0)
        CHECK_OK(mooncake_meta_config_set_eviction_ratio(cfg, o->eviction_ratio, &err), err);
    if (o->high_watermark > 0)
        CHECK_OK(mooncake_meta_config_set_eviction_high_watermark_ratio(cfg, o->high_watermark, &err), err);
    CHECK_OK(mooncake_meta_master_new(cfg, &m, &err), err);
    mooncake_meta_config_free(cfg);
    if (m == NULL) {
        fprintf(stderr, "fixture: could not create a master\n");
        exit(EXIT_FAILURE);
    }
    return m;
}

/* Mounts a memory segment of `size` bytes at a base of its own; returns its id. */
static inline uint32_t fx_mount(mooncake_meta_master *m, uint64_t client, const char *name,
                                uint64_t size) {
    static uint64_t next_base = 0x100000000ull;
    mooncake_meta_error *err = NULL;
    uint32_t id = 0;
    uint64_t base = next_base;
    next_base += 0x100000000ull;
    CHECK_OK(mooncake_meta_mount_segment(m, client, name, strlen(name), base, size,
                                         MOONCAKE_META_POOL_MEMORY, &id, &err),
             err);
    return id;
}

/* An extended write config: `replicas` memory replicas, PRESERVE. */
static inline mooncake_meta_write_config fx_config(uint32_t replicas) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_write_config c;
    CHECK_OK(mooncake_meta_write_config_init(&c, sizeof c, &err), err);
    c.memory_replicas = replicas;
    return c;
}

/* ENABLE with an explicit TTL. */
static inline mooncake_meta_write_config fx_enable(uint64_t ttl_ms) {
    mooncake_meta_write_config c = fx_config(1);
    c.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
    c.flags |= MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
    c.soft_pin_ttl_ms = ttl_ms;
    return c;
}

/* PutStart (extended config; NULL = defaults); returns the status, the
 * token through *token unless NULL. Up to 4 replicas are reported. */
static inline mooncake_meta_status fx_put_start(mooncake_meta_master *m, uint64_t client,
                                                const char *key, uint64_t size,
                                                const mooncake_meta_write_config *cfg,
                                                uint64_t *token) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_replica replicas[4];
    size_t n = 0;
    uint64_t t = 0;
    mooncake_meta_status st = mooncake_meta_put_start(m, client, FX_KEY(key), size, cfg, replicas,
                                                      4, &n, &t, &err);
    mooncake_meta_error_free(err);
    if (token != NULL) *token = t;
    return st;
}

/* A whole write: PutStart then PutEnd of every replica; both must succeed. */
static inline void fx_put(mooncake_meta_master *m, uint64_t client, const char *key, uint64_t size,
                          const mooncake_meta_write_config *cfg) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_replica replicas[4];
    size_t n = 0;
    uint64_t token = 0;
    CHECK_OK(mooncake_meta_put_start(m, client, FX_KEY(key), size, cfg, replicas, 4, &n, &token,
                                     &err),
             err);
    CHECK_OK(mooncake_meta_put_end(m, client, FX_KEY(key), MOONCAKE_META_SELECT_ALL, token, &err),
             err);
}

/* A whole upsert, as fx_put. */
static inline void fx_upsert(mooncake_meta_master *m, uint64_t client, const char *key,
                             uint64_t size, const mooncake_meta_write_config *cfg) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_replica replicas[4];
    size_t n = 0;
    uint64_t token = 0;
    CHECK_OK(mooncake_meta_upsert_start(m, client, FX_KEY(key), size, cfg, replicas, 4, &n,
                                        &token, &err),
             err);
    CHECK_OK(mooncake_meta_upsert_end(m, client, FX_KEY(key), MOONCAKE_META_SELECT_ALL, token,
                                      &err),
             err);
}

/* The committed soft-pin deadline of `key`, or 0 if none (the key must exist). */
static inline uint64_t fx_deadline(mooncake_meta_master *m, const char *key) {
    mooncake_meta_error *err = NULL;
    int has = -1;
    uint64_t deadline = 1;
    CHECK_OK(mooncake_meta_soft_pin_deadline(m, FX_KEY(key), &has, &deadline, &err), err);
    CHECK(has == 0 || has == 1);
    if (has == 0) CHECK_EQ_INT(deadline, 0);
    return deadline;
}

static inline int fx_pending(mooncake_meta_master *m, const char *key) {
    mooncake_meta_error *err = NULL;
    int pending = -1;
    CHECK_OK(mooncake_meta_has_pending_soft_pin(m, FX_KEY(key), &pending, &err), err);
    return pending;
}

static inline int fx_exists(mooncake_meta_master *m, const char *key) {
    mooncake_meta_error *err = NULL;
    int exists = -1;
    CHECK_OK(mooncake_meta_exist(m, FX_KEY(key), &exists, &err), err);
    return exists;
}

static inline uint64_t fx_now(mooncake_meta_master *m) {
    mooncake_meta_error *err = NULL;
    uint64_t now = 0;
    CHECK_OK(mooncake_meta_master_now(m, &now, &err), err);
    return now;
}

static inline uint64_t fx_advance(mooncake_meta_master *m, uint64_t by_ms) {
    mooncake_meta_error *err = NULL;
    uint64_t now = 0;
    CHECK_OK(mooncake_meta_master_advance_time(m, by_ms, &now, &err), err);
    return now;
}

static inline mooncake_meta_metrics_snapshot fx_metrics(mooncake_meta_master *m) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_metrics_snapshot s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    CHECK_OK(mooncake_meta_metrics(m, &s, &err), err);
    return s;
}

static inline void fx_check_invariants(mooncake_meta_master *m) {
    mooncake_meta_error *err = NULL;
    CHECK_OK(mooncake_meta_check_invariants(m, &err), err);
}

/* A snapshot of `m` as a library-owned buffer (free it). */
static inline mooncake_meta_bytes *fx_snapshot(mooncake_meta_master *m) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_bytes *b = NULL;
    CHECK_OK(mooncake_meta_snapshot(m, &b, &err), err);
    return b;
}

static inline int fx_bytes_equal(const mooncake_meta_bytes *a, const mooncake_meta_bytes *b) {
    size_t n = mooncake_meta_bytes_len(a);
    return n == mooncake_meta_bytes_len(b) &&
           memcmp(mooncake_meta_bytes_data(a), mooncake_meta_bytes_data(b), n) == 0;
}

#endif /* MOONCAKE_META_C_TESTS_FIXTURE_H */
