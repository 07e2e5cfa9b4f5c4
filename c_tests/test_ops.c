/* The core operations through the C ABI (docs/CONTRACT.md §3): each one's success
 * path and an error path with the right code and a message, replica
 * descriptors, the BUFFER_TOO_SMALL convention without side effects (no
 * lease, no preemption, no allocation), tenants. */
#include "check.h"

#include <stdint.h>

#define T0 1000000ull
#define C1 1u
#define C2 2u
#define SIZE 4096u
/* The key arguments of a key-taking call, in the default tenant. */
#define KEY(s) NULL, 0, (s), strlen(s)

static mooncake_meta_master *new_master(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = NULL;
    mooncake_meta_master *m = NULL;
    CHECK_OK(mooncake_meta_config_new(&cfg, &err), err);
    CHECK_OK(mooncake_meta_config_set_manual_clock(cfg, T0, &err), err);
    CHECK_OK(mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_sweep_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_master_new(cfg, &m, &err), err);
    mooncake_meta_config_free(cfg);
    return m;
}

/* Segment ids of mem0..mem2 (memory pool, 1 MiB each, owned by C1). */
static uint32_t seg[3];

static mooncake_meta_master *master_with_segments(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    const char *names[] = {"mem0", "mem1", "mem2"};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(mooncake_meta_mount_segment(m, C1, names[i], 4, (uint64_t)(i + 1) << 40, 1 << 20,
                                             MOONCAKE_META_POOL_MEMORY, &seg[i], &err),
                 err);
    }
    return m;
}

/* An extended config with `memory` replicas, preferring `preferred` (or none). */
static mooncake_meta_write_config config(uint32_t memory, const char *const *preferred) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_write_config c;
    CHECK_OK(mooncake_meta_write_config_init(&c, sizeof c, &err), err);
    c.memory_replicas = memory;
    if (preferred != NULL) {
        c.preferred_segments = preferred;
        c.preferred_segments_count = 1;
    }
    return c;
}

/* PutStart + PutEnd(ALL) by C1 with `cfg` (NULL = defaults). */
static void put(mooncake_meta_master *m, const char *key, const mooncake_meta_write_config *cfg) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_replica r[4];
    size_t len = 0;
    uint64_t token = 0;
    CHECK_OK(mooncake_meta_put_start(m, C1, KEY(key), SIZE, cfg, r, 4, &len, &token, &err), err);
    CHECK_OK(mooncake_meta_put_end(m, C1, KEY(key), MOONCAKE_META_SELECT_ALL, token, &err), err);
}

static size_t readable(mooncake_meta_master *m, const char *key, mooncake_meta_replica *out,
                       size_t cap) {
    mooncake_meta_error *err = NULL;
    size_t len = 0;
    CHECK_OK(mooncake_meta_get_replica_list(m, KEY(key), out, cap, &len, &err), err);
    return len;
}

static int exists(mooncake_meta_master *m, const char *tenant, const char *key) {
    mooncake_meta_error *err = NULL;
    int e = -1;
    CHECK_OK(mooncake_meta_exist(m, tenant, tenant ? strlen(tenant) : 0, key, strlen(key), &e, &err),
             err);
    return e;
}

static uint64_t key_count(mooncake_meta_master *m) {
    mooncake_meta_error *err = NULL;
    uint64_t n = 0;
    CHECK_OK(mooncake_meta_key_count(m, &n, &err), err);
    return n;
}

static void put_start_stages_replicas_that_end_makes_readable(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    const char *prefer[] = {"mem1"};
    mooncake_meta_write_config cfg = config(1, prefer);
    mooncake_meta_replica r[2];
    size_t len = 0;
    uint64_t token = 0;
    memset(r, 0xAB, sizeof r);
    CHECK_OK(mooncake_meta_put_start(m, C1, KEY("k"), SIZE, &cfg, r, 2, &len, &token, &err), err);
    CHECK_EQ_INT(len, 1);
    CHECK(token != 0);
    CHECK_EQ_INT(r[0].kind, MOONCAKE_META_REPLICA_MEMORY);
    CHECK_EQ_INT(r[0].status, MOONCAKE_META_REPLICA_PROCESSING);
    CHECK_EQ_INT(r[0].segment_id, seg[1]);
    CHECK_EQ_INT(r[0].size, SIZE);
    CHECK_EQ_INT(r[0].client, 0);
    CHECK_EQ_INT(r[0].reserved, 0);
    CHECK(r[0].address >= (2ull << 40) && r[0].address < (2ull << 40) + (1 << 20));
    CHECK_EQ_INT(exists(m, NULL, "k"), 0);
    CHECK_FAILS(mooncake_meta_get_replica_list(m, KEY("k"), r, 2, &len, &err),
                MOONCAKE_META_REPLICA_IS_NOT_READY, err, "is readable yet");
    CHECK_OK(mooncake_meta_put_end(m, C1, KEY("k"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_EQ_INT(exists(m, NULL, "k"), 1);
    {
        mooncake_meta_replica got[2];
        CHECK_EQ_INT(readable(m, "k", got, 2), 1);
        CHECK_EQ_INT(got[0].id, r[0].id);
        CHECK_EQ_INT(got[0].status, MOONCAKE_META_REPLICA_COMPLETE);
        CHECK_EQ_INT(got[0].address, r[0].address);
    }
    /* End again: no write in flight, every replica COMPLETE: OK. */
    CHECK_OK(mooncake_meta_put_end(m, C1, KEY("k"), MOONCAKE_META_SELECT_ALL, 0, &err), err);
    mooncake_meta_master_free(m);
}

static void put_start_too_small_does_nothing(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    mooncake_meta_write_config cfg = config(2, NULL);
    mooncake_meta_replica r[2];
    size_t len = 0;
    uint64_t token = 7;
    CHECK_FAILS(mooncake_meta_put_start(m, C1, KEY("k"), SIZE, &cfg, r, 1, &len, &token, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, "out_replicas has room for 1 but 2 are needed");
    CHECK_EQ_INT(len, 2);
    CHECK_EQ_INT(token, 7);
    CHECK_EQ_INT(key_count(m), 0);
    CHECK_FAILS(mooncake_meta_put_start(m, C1, KEY("k"), SIZE, &cfg, NULL, 0, &len, NULL, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, NULL);
    CHECK_EQ_INT(key_count(m), 0);
    /* A bad request gets its own code, not BUFFER_TOO_SMALL. */
    CHECK_FAILS(mooncake_meta_put_start(m, C1, KEY("k"), 0, &cfg, NULL, 0, &len, NULL, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "size must be positive");
    CHECK_OK(mooncake_meta_put_start(m, C1, KEY("k"), SIZE, &cfg, r, 2, &len, NULL, &err), err);
    CHECK_EQ_INT(len, 2);
    CHECK(r[0].segment_id != r[1].segment_id);
    mooncake_meta_master_free(m);
}

static void put_and_end_errors_carry_codes_and_messages(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    mooncake_meta_replica r[1];
    size_t len = 0;
    uint64_t token = 0;
    CHECK_OK(mooncake_meta_put_start(m, C1, KEY("k"), SIZE, NULL, r, 1, &len, &token, &err), err);
    CHECK_FAILS(mooncake_meta_put_start(m, C2, KEY("k"), SIZE, NULL, r, 1, &len, NULL, &err),
                MOONCAKE_META_OBJECT_ALREADY_EXISTS, err, "still in flight");
    CHECK_FAILS(mooncake_meta_put_start(m, C1, NULL, 0, "", 0, SIZE, NULL, r, 1, &len, NULL, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "key must not be empty");
    CHECK_FAILS(mooncake_meta_put_start(m, C1, KEY("j"), SIZE, NULL, r, 1, NULL, NULL, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "out_len is NULL");
    CHECK_FAILS(mooncake_meta_put_start(m, C1, NULL, 0, "\xff", 1, SIZE, NULL, r, 1, &len, NULL, &err),
                MOONCAKE_META_INVALID_UTF8, err, "key is not valid UTF-8");
    CHECK_FAILS(mooncake_meta_put_end(m, C2, KEY("k"), MOONCAKE_META_SELECT_ALL, 0, &err),
                MOONCAKE_META_ILLEGAL_CLIENT, err, "client 2 is not the writer");
    CHECK_FAILS(mooncake_meta_put_end(m, C1, KEY("k"), MOONCAKE_META_SELECT_ALL, token + 100, &err),
                MOONCAKE_META_STALE_WRITE_TOKEN, err, "is not the current write's");
    CHECK_FAILS(mooncake_meta_put_end(m, C1, KEY("k"), 3, token, &err), MOONCAKE_META_INVALID_PARAMS,
                err, "selector must be");
    CHECK_FAILS(mooncake_meta_put_end(m, C1, KEY("nope"), MOONCAKE_META_SELECT_ALL, 0, &err),
                MOONCAKE_META_OBJECT_NOT_FOUND, err, "object not found");
    CHECK_OK(mooncake_meta_put_end(m, C1, KEY("k"), MOONCAKE_META_SELECT_MEMORY, token, &err), err);
    CHECK_FAILS(mooncake_meta_put_start(m, C1, KEY("k"), SIZE, NULL, r, 1, &len, NULL, &err),
                MOONCAKE_META_OBJECT_ALREADY_EXISTS, err, "object already exists");
    mooncake_meta_master_free(m);
}

static void put_revoke_frees_the_write_and_erases_the_object(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    mooncake_meta_replica r[1];
    size_t len = 0;
    uint64_t token = 0;
    CHECK_OK(mooncake_meta_put_start(m, C1, KEY("k"), SIZE, NULL, r, 1, &len, &token, &err), err);
    CHECK_OK(mooncake_meta_put_revoke(m, C1, KEY("k"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_EQ_INT(key_count(m), 0);
    CHECK_FAILS(mooncake_meta_put_revoke(m, C1, KEY("k"), MOONCAKE_META_SELECT_ALL, 0, &err),
                MOONCAKE_META_OBJECT_NOT_FOUND, err, NULL);
    put(m, "done", NULL);
    CHECK_FAILS(mooncake_meta_put_revoke(m, C1, KEY("done"), MOONCAKE_META_SELECT_ALL, 0, &err),
                MOONCAKE_META_INVALID_WRITE, err, "no write in flight to revoke");
    mooncake_meta_master_free(m);
}

static void upsert_in_place_keeps_replica_ids_and_resize_replaces_them(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    mooncake_meta_replica first[1], r[1];
    size_t len = 0;
    uint64_t token = 0, token2 = 0;
    mooncake_meta_write_config grouped = config(1, NULL);
    CHECK_OK(mooncake_meta_upsert_start(m, C1, KEY("k"), SIZE, NULL, first, 1, &len, &token, &err),
             err);
    CHECK_OK(mooncake_meta_upsert_end(m, C1, KEY("k"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_OK(mooncake_meta_upsert_start(m, C2, KEY("k"), SIZE, NULL, r, 1, &len, &token2, &err), err);
    CHECK_EQ_INT(len, 1);
    CHECK_EQ_INT(r[0].id, first[0].id);
    CHECK_EQ_INT(r[0].status, MOONCAKE_META_REPLICA_PROCESSING);
    CHECK(token2 != token);
    CHECK_FAILS(mooncake_meta_upsert_end(m, C2, KEY("k"), MOONCAKE_META_SELECT_ALL, token, &err),
                MOONCAKE_META_STALE_WRITE_TOKEN, err, NULL);
    CHECK_OK(mooncake_meta_upsert_end(m, C2, KEY("k"), MOONCAKE_META_SELECT_ALL, token2, &err), err);
    grouped.group = "g1";
    CHECK_FAILS(mooncake_meta_upsert_start(m, C1, KEY("k"), SIZE, &grouped, r, 1, &len, NULL, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "the group of an object is fixed at creation");
    CHECK_OK(mooncake_meta_upsert_start(m, C1, KEY("k"), 2 * SIZE, NULL, r, 1, &len, &token, &err),
             err);
    CHECK(r[0].id != first[0].id);
    CHECK_EQ_INT(r[0].size, 2 * SIZE);
    /* Every replica of the replacement is PROCESSING: revoking it erases the object. */
    CHECK_OK(mooncake_meta_upsert_revoke(m, C1, KEY("k"), MOONCAKE_META_SELECT_ALL, token, &err), err);
    CHECK_EQ_INT(key_count(m), 0);
    mooncake_meta_master_free(m);
}

/* An in-place upsert returns the object's replicas, which copies can make
 * more than requested: too small a buffer is refused before anything changes. */
static void upsert_in_place_too_small_preempts_nothing(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    const char *prefer[] = {"mem0"};
    mooncake_meta_write_config cfg = config(1, prefer);
    const char *to[] = {"mem1"};
    mooncake_meta_replica r[2];
    size_t len = 0;
    uint64_t token = 0;
    put(m, "k", &cfg);
    CHECK_OK(mooncake_meta_copy_start(m, KEY("k"), to, 1, r, 2, &len, &err), err);
    CHECK_OK(mooncake_meta_copy_end(m, KEY("k"), &err), err);
    CHECK_FAILS(mooncake_meta_upsert_start(m, C2, KEY("k"), SIZE, NULL, r, 1, &len, &token, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, "room for 1 but 2 are needed");
    CHECK_EQ_INT(len, 2);
    CHECK_EQ_INT(token, 0);
    CHECK_EQ_INT(readable(m, "k", r, 2), 2); /* both still COMPLETE: nothing preempted */
    CHECK_OK(mooncake_meta_upsert_start(m, C2, KEY("k"), SIZE, NULL, r, 2, &len, &token, &err), err);
    CHECK_EQ_INT(len, 2);
    mooncake_meta_master_free(m);
}

static void get_replica_list_too_small_grants_no_lease(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    mooncake_meta_replica r[1];
    size_t len = 0;
    put(m, "k", NULL);
    CHECK_FAILS(mooncake_meta_get_replica_list(m, KEY("k"), NULL, 0, &len, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, "out_replicas has room for 0 but 1 are needed");
    CHECK_EQ_INT(len, 1);
    CHECK_OK(mooncake_meta_remove(m, KEY("k"), 0, &err), err); /* no lease blocks it */
    put(m, "k", NULL);
    CHECK_EQ_INT(readable(m, "k", r, 1), 1); /* grants the lease */
    CHECK_FAILS(mooncake_meta_remove(m, KEY("k"), 0, &err), MOONCAKE_META_OBJECT_HAS_LEASE, err,
                "read lease is live");
    CHECK_FAILS(mooncake_meta_get_replica_list(m, KEY("nope"), r, 1, &len, &err),
                MOONCAKE_META_OBJECT_NOT_FOUND, err, NULL);
    CHECK_FAILS(mooncake_meta_get_replica_list(m, KEY("k"), NULL, 1, &len, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "out_replicas is NULL but its capacity is 1");
    mooncake_meta_master_free(m);
}

static void remove_respects_leases_unless_forced(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    mooncake_meta_replica r[1];
    size_t len = 0;
    uint64_t token = 0;
    put(m, "k", NULL);
    CHECK_EQ_INT(exists(m, NULL, "k"), 1); /* lease */
    CHECK_FAILS(mooncake_meta_remove(m, KEY("k"), 2, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "force must be 0 or 1, got 2");
    CHECK_OK(mooncake_meta_remove(m, KEY("k"), 1, &err), err);
    CHECK_EQ_INT(exists(m, NULL, "k"), 0);
    CHECK_FAILS(mooncake_meta_remove(m, KEY("k"), 1, &err), MOONCAKE_META_OBJECT_NOT_FOUND, err,
                NULL);
    CHECK_OK(mooncake_meta_put_start(m, C1, KEY("w"), SIZE, NULL, r, 1, &len, &token, &err), err);
    CHECK_FAILS(mooncake_meta_remove(m, KEY("w"), 1, &err), MOONCAKE_META_REPLICA_IS_NOT_READY, err,
                "not COMPLETE");
    mooncake_meta_master_free(m);
}

/* Remove's order: a write in flight (REPLICA_IS_NOT_READY) comes before a
 * copy, move or promotion (OBJECT_HAS_REPLICATION_TASK), both even forced;
 * a task's PROCESSING target is reported as the task, not as a write. */
static void remove_reports_a_write_before_a_task(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    const char *prefer[] = {"mem0"};
    const char *to[] = {"mem1"};
    mooncake_meta_write_config cfg = config(1, prefer);
    mooncake_meta_replica r[2];
    size_t len = 0;
    uint64_t token = 0;
    uint32_t nof = 0;
    CHECK_OK(mooncake_meta_mount_segment(m, C1, "nof0", 4, (uint64_t)16 << 40, 1 << 20,
                                         MOONCAKE_META_POOL_NOF_SSD, &nof, &err),
             err);
    put(m, "copy", &cfg);
    CHECK_OK(mooncake_meta_copy_start(m, KEY("copy"), to, 1, r, 2, &len, &err), err);
    for (int force = 0; force < 2; force++) {
        CHECK_FAILS(mooncake_meta_remove(m, KEY("copy"), force, &err),
                    MOONCAKE_META_REPLICA_IS_NOT_READY, err, "copy, move or promotion target");
    }
    cfg.nof_ssd_replicas = 1;
    CHECK_OK(mooncake_meta_put_start(m, C1, KEY("both"), SIZE, &cfg, r, 2, &len, &token, &err), err);
    CHECK_OK(mooncake_meta_put_end(m, C1, KEY("both"), MOONCAKE_META_SELECT_MEMORY, token, &err),
             err);
    CHECK_OK(mooncake_meta_copy_start(m, KEY("both"), to, 1, r, 2, &len, &err), err);
    for (int force = 0; force < 2; force++) {
        CHECK_FAILS(mooncake_meta_remove(m, KEY("both"), force, &err),
                    MOONCAKE_META_REPLICA_IS_NOT_READY, err, "write in flight");
    }
    CHECK_OK(mooncake_meta_put_end(m, C1, KEY("both"), MOONCAKE_META_SELECT_NOF_SSD, token, &err),
             err);
    CHECK_FAILS(mooncake_meta_remove(m, KEY("both"), 1, &err),
                MOONCAKE_META_REPLICA_IS_NOT_READY, err, "copy, move or promotion target");
    CHECK_OK(mooncake_meta_copy_end(m, KEY("both"), &err), err);
    CHECK_OK(mooncake_meta_remove(m, KEY("both"), 1, &err), err);
    mooncake_meta_master_free(m);
}

static void remove_all_and_by_regex_count_what_they_remove(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    mooncake_meta_replica r[1];
    size_t len = 0;
    uint64_t token = 0, n = 99;
    put(m, "a1", NULL);
    put(m, "a2", NULL);
    put(m, "b1", NULL);
    CHECK_OK(mooncake_meta_put_start(m, C1, "t2", 2, "a3", 2, SIZE, NULL, r, 1, &len, &token, &err),
             err);
    CHECK_OK(mooncake_meta_put_end(m, C1, "t2", 2, "a3", 2, MOONCAKE_META_SELECT_ALL, token, &err),
             err);
    CHECK_OK(mooncake_meta_remove_by_regex(m, "default", 7, "^a", 2, 0, &n, &err), err);
    CHECK_EQ_INT(n, 2);
    CHECK_OK(mooncake_meta_remove_by_regex(m, NULL, 0, "^a", 2, 0, &n, &err), err);
    CHECK_EQ_INT(n, 1); /* t2/a3: every tenant */
    CHECK_FAILS(mooncake_meta_remove_by_regex(m, NULL, 0, "(", 1, 0, &n, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "bad pattern");
    CHECK_EQ_INT(n, 1); /* not written on failure */
    CHECK_OK(mooncake_meta_remove_by_regex(m, NULL, 0, "x", 1, 0, NULL, &err), err);
    CHECK_OK(mooncake_meta_remove_all(m, 0, &n, &err), err);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(key_count(m), 0);
    CHECK_FAILS(mooncake_meta_remove_all(m, -1, &n, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "force must be 0 or 1");
    mooncake_meta_master_free(m);
}

/* The two calls that say which tenants they mean: (NULL, 0) is the default
 * tenant for _in_tenant, as in every call but the 0.1.0 one above. */
static void remove_by_regex_in_tenant_and_all_tenants(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    mooncake_meta_replica r[1];
    size_t len = 0;
    uint64_t token = 0, n = 99;
    put(m, "a1", NULL);
    put(m, "b1", NULL);
    CHECK_OK(mooncake_meta_put_start(m, C1, "t2", 2, "a3", 2, SIZE, NULL, r, 1, &len, &token, &err),
             err);
    CHECK_OK(mooncake_meta_put_end(m, C1, "t2", 2, "a3", 2, MOONCAKE_META_SELECT_ALL, token, &err),
             err);
    CHECK_OK(mooncake_meta_remove_by_regex_in_tenant(m, NULL, 0, "^a", 2, 0, &n, &err), err);
    CHECK_EQ_INT(n, 1); /* a1 only: t2/a3 is another tenant's */
    CHECK_EQ_INT(key_count(m), 2);
    CHECK_OK(mooncake_meta_remove_by_regex_in_tenant(m, "t2", 2, "^a", 2, 0, &n, &err), err);
    CHECK_EQ_INT(n, 1);
    n = 99;
    CHECK_FAILS(mooncake_meta_remove_by_regex_in_tenant(m, NULL, 0, "(", 1, 0, &n, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "bad pattern");
    CHECK_FAILS(mooncake_meta_remove_by_regex_in_tenant(m, "t\xff", 2, "b", 1, 0, &n, &err),
                MOONCAKE_META_INVALID_UTF8, err, "tenant is not valid UTF-8");
    CHECK_FAILS(mooncake_meta_remove_by_regex_in_tenant(m, "t\0x", 3, "b", 1, 0, &n, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "tenant must not contain NUL");
    CHECK_FAILS(mooncake_meta_remove_by_regex_in_tenant(m, NULL, 0, "b", 1, 2, &n, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "force must be 0 or 1");
    CHECK_FAILS(mooncake_meta_remove_by_regex_all_tenants(m, "(", 1, 0, &n, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "bad pattern");
    CHECK_FAILS(mooncake_meta_remove_by_regex_all_tenants(m, "b", 1, -1, &n, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "force must be 0 or 1");
    CHECK_EQ_INT(n, 99); /* not written on failure */
    CHECK_EQ_INT(key_count(m), 1); /* nothing removed by the refused calls */
    CHECK_OK(mooncake_meta_put_start(m, C1, "t3", 2, "b2", 2, SIZE, NULL, r, 1, &len, &token, &err),
             err);
    CHECK_OK(mooncake_meta_put_end(m, C1, "t3", 2, "b2", 2, MOONCAKE_META_SELECT_ALL, token, &err),
             err);
    CHECK_OK(mooncake_meta_remove_by_regex_all_tenants(m, "^b", 2, 0, &n, &err), err);
    CHECK_EQ_INT(n, 2); /* b1 and t3/b2 */
    CHECK_EQ_INT(key_count(m), 0);
    CHECK_OK(mooncake_meta_remove_by_regex_all_tenants(m, "x", 1, 0, NULL, &err), err);
    mooncake_meta_master_free(m);
}

static void copy_stages_targets_that_end_completes_and_revoke_frees(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    const char *prefer[] = {"mem0"};
    mooncake_meta_write_config cfg = config(1, prefer);
    const char *to1[] = {"mem1"};
    const char *to2[] = {"mem2"};
    const char *bad[] = {"nope"};
    mooncake_meta_replica r[3];
    size_t len = 0;
    put(m, "k", &cfg);
    /* BUFFER_TOO_SMALL comes after every other check. */
    CHECK_FAILS(mooncake_meta_copy_start(m, KEY("absent"), to1, 1, NULL, 0, &len, &err),
                MOONCAKE_META_OBJECT_NOT_FOUND, err, NULL);
    CHECK_FAILS(mooncake_meta_copy_start(m, KEY("k"), bad, 1, NULL, 0, &len, &err),
                MOONCAKE_META_SEGMENT_NOT_FOUND, err, "nope");
    CHECK_FAILS(mooncake_meta_copy_start(m, KEY("k"), to1, 1, NULL, 0, &len, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, NULL);
    CHECK_EQ_INT(len, 1);
    CHECK_OK(mooncake_meta_copy_start(m, KEY("k"), to1, 1, r, 3, &len, &err), err);
    CHECK_EQ_INT(len, 1);
    CHECK_EQ_INT(r[0].segment_id, seg[1]);
    CHECK_EQ_INT(r[0].status, MOONCAKE_META_REPLICA_PROCESSING);
    CHECK_FAILS(mooncake_meta_copy_start(m, KEY("k"), to2, 1, r, 3, &len, &err),
                MOONCAKE_META_OBJECT_HAS_REPLICATION_TASK, err, NULL);
    CHECK_OK(mooncake_meta_copy_end(m, KEY("k"), &err), err);
    CHECK_EQ_INT(readable(m, "k", r, 3), 2);
    CHECK_FAILS(mooncake_meta_copy_end(m, KEY("k"), &err), MOONCAKE_META_OBJECT_NO_REPLICATION_TASK,
                err, "no such task");
    CHECK_FAILS(mooncake_meta_copy_start(m, KEY("k"), bad, 1, r, 3, &len, &err),
                MOONCAKE_META_SEGMENT_NOT_FOUND, err, "segment 'nope' is not mounted");
    CHECK_FAILS(mooncake_meta_copy_start(m, KEY("k"), to1, 1, r, 3, &len, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "already holds a replica");
    CHECK_OK(mooncake_meta_copy_start(m, KEY("k"), to2, 1, r, 3, &len, &err), err);
    CHECK_OK(mooncake_meta_copy_revoke(m, KEY("k"), &err), err);
    CHECK_EQ_INT(readable(m, "k", r, 3), 2);
    CHECK_FAILS(mooncake_meta_copy_revoke(m, KEY("k"), &err),
                MOONCAKE_META_OBJECT_NO_REPLICATION_TASK, err, NULL);
    mooncake_meta_master_free(m);
}

static void move_relocates_the_replica_on_the_named_segment(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    const char *prefer[] = {"mem0"};
    mooncake_meta_write_config cfg = config(1, prefer);
    mooncake_meta_replica target, r[2];
    put(m, "k", &cfg);
    CHECK_FAILS(mooncake_meta_move_start(m, KEY("k"), "mem2", 4, "mem1", 4, &target, &err),
                MOONCAKE_META_REPLICA_NOT_FOUND, err, "on the source segment");
    CHECK_OK(mooncake_meta_move_start(m, KEY("k"), "mem0", 4, "mem1", 4, &target, &err), err);
    CHECK_EQ_INT(target.segment_id, seg[1]);
    CHECK_EQ_INT(target.status, MOONCAKE_META_REPLICA_PROCESSING);
    CHECK_FAILS(mooncake_meta_copy_end(m, KEY("k"), &err), MOONCAKE_META_OBJECT_NO_REPLICATION_TASK,
                err, NULL); /* a move, not a copy */
    CHECK_OK(mooncake_meta_move_end(m, KEY("k"), &err), err);
    CHECK_EQ_INT(readable(m, "k", r, 2), 1);
    CHECK_EQ_INT(r[0].segment_id, seg[1]);
    CHECK_EQ_INT(r[0].id, target.id);
    CHECK_OK(mooncake_meta_move_start(m, KEY("k"), "mem1", 4, "mem2", 4, &target, &err), err);
    CHECK_OK(mooncake_meta_move_revoke(m, KEY("k"), &err), err);
    CHECK_EQ_INT(readable(m, "k", r, 2), 1);
    CHECK_EQ_INT(r[0].segment_id, seg[1]);
    CHECK_FAILS(mooncake_meta_move_revoke(m, KEY("k"), &err),
                MOONCAKE_META_OBJECT_NO_REPLICATION_TASK, err, NULL);
    CHECK_FAILS(mooncake_meta_move_start(m, KEY("k"), "mem1", 4, "mem2", 4, NULL, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "out_replica is NULL");
    mooncake_meta_master_free(m);
}

/* A copy or move whose segment goes away ends with REPLICA_IS_GONE. */
static void move_end_after_unmount_is_replica_is_gone(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    const char *prefer[] = {"mem0"};
    mooncake_meta_write_config cfg = config(1, prefer);
    mooncake_meta_replica target;
    put(m, "k", &cfg);
    CHECK_OK(mooncake_meta_move_start(m, KEY("k"), "mem0", 4, "mem1", 4, &target, &err), err);
    CHECK_OK(mooncake_meta_unmount_segment(m, C1, "mem1", 4, NULL, &err), err);
    CHECK_FAILS(mooncake_meta_move_end(m, KEY("k"), &err), MOONCAKE_META_REPLICA_IS_GONE, err,
                "is gone");
    CHECK_EQ_INT(exists(m, NULL, "k"), 1);
    mooncake_meta_master_free(m);
}

static void local_disk_replica_can_be_promoted_back_to_memory(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    const char *prefer[] = {"mem2"};
    mooncake_meta_replica disk, again, mem, r[2];
    CHECK_OK(mooncake_meta_add_local_disk_replica(m, 5, KEY("d"), SIZE, &disk, &err), err);
    CHECK_EQ_INT(disk.kind, MOONCAKE_META_REPLICA_LOCAL_DISK);
    CHECK_EQ_INT(disk.status, MOONCAKE_META_REPLICA_COMPLETE);
    CHECK_EQ_INT(disk.segment_id, MOONCAKE_META_NO_SEGMENT);
    CHECK_EQ_INT(disk.address, 0);
    CHECK_EQ_INT(disk.client, 5);
    CHECK_EQ_INT(disk.size, SIZE);
    CHECK_OK(mooncake_meta_add_local_disk_replica(m, 5, KEY("d"), SIZE, &again, &err), err);
    CHECK_EQ_INT(again.id, disk.id); /* idempotent per client */
    CHECK_FAILS(mooncake_meta_add_local_disk_replica(m, 6, KEY("d"), SIZE + 1, &again, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "differs from the object's size");
    CHECK_OK(mooncake_meta_promotion_start(m, KEY("d"), prefer, 1, &mem, &err), err);
    CHECK_EQ_INT(mem.kind, MOONCAKE_META_REPLICA_MEMORY);
    CHECK_EQ_INT(mem.status, MOONCAKE_META_REPLICA_PROCESSING);
    CHECK_EQ_INT(mem.segment_id, seg[2]);
    CHECK_FAILS(mooncake_meta_promotion_end(m, KEY("d"), 2, &err), MOONCAKE_META_INVALID_PARAMS,
                err, "success must be 0 or 1");
    CHECK_OK(mooncake_meta_promotion_end(m, KEY("d"), 1, &err), err);
    CHECK_EQ_INT(readable(m, "d", r, 2), 2);
    CHECK_FAILS(mooncake_meta_promotion_start(m, KEY("d"), NULL, 0, &mem, &err),
                MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS, err, "already has a memory replica");
    CHECK_FAILS(mooncake_meta_promotion_end(m, KEY("d"), 0, &err),
                MOONCAKE_META_OBJECT_NO_REPLICATION_TASK, err, NULL);
    put(m, "plain", NULL);
    CHECK_FAILS(mooncake_meta_promotion_start(m, KEY("plain"), NULL, 0, &mem, &err),
                MOONCAKE_META_REPLICA_NOT_FOUND, err, "no COMPLETE LOCAL_DISK replica");
    mooncake_meta_master_free(m);
}

static void promotion_failure_drops_the_staged_replica(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    mooncake_meta_replica disk, mem, r[2];
    CHECK_OK(mooncake_meta_add_local_disk_replica(m, 5, KEY("d"), SIZE, &disk, &err), err);
    CHECK_OK(mooncake_meta_promotion_start(m, KEY("d"), NULL, 0, &mem, &err), err);
    CHECK_OK(mooncake_meta_promotion_end(m, KEY("d"), 0, &err), err);
    CHECK_EQ_INT(readable(m, "d", r, 2), 1);
    CHECK_EQ_INT(r[0].kind, MOONCAKE_META_REPLICA_LOCAL_DISK);
    mooncake_meta_master_free(m);
}

static void tenants_keep_equal_keys_apart(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = master_with_segments();
    mooncake_meta_replica r[1];
    size_t len = 0;
    uint64_t t1 = 0, t2 = 0;
    CHECK_OK(mooncake_meta_put_start(m, C1, "t1", 2, "k", 1, SIZE, NULL, r, 1, &len, &t1, &err), err);
    CHECK_OK(mooncake_meta_put_start(m, C1, "t2", 2, "k", 1, SIZE, NULL, r, 1, &len, &t2, &err), err);
    CHECK_OK(mooncake_meta_put_end(m, C1, "t1", 2, "k", 1, MOONCAKE_META_SELECT_ALL, t1, &err), err);
    CHECK_EQ_INT(exists(m, "t1", "k"), 1);
    CHECK_EQ_INT(exists(m, "t2", "k"), 0);
    CHECK_EQ_INT(exists(m, NULL, "k"), 0);
    CHECK_FAILS(mooncake_meta_put_end(m, C1, "t2", 2, "k", 1, MOONCAKE_META_SELECT_ALL, t1, &err),
                MOONCAKE_META_STALE_WRITE_TOKEN, err, NULL);
    CHECK_EQ_INT(key_count(m), 2);
    mooncake_meta_master_free(m);
}

int main(void) {
    RUN_TEST(put_start_stages_replicas_that_end_makes_readable);
    RUN_TEST(put_start_too_small_does_nothing);
    RUN_TEST(put_and_end_errors_carry_codes_and_messages);
    RUN_TEST(put_revoke_frees_the_write_and_erases_the_object);
    RUN_TEST(upsert_in_place_keeps_replica_ids_and_resize_replaces_them);
    RUN_TEST(upsert_in_place_too_small_preempts_nothing);
    RUN_TEST(get_replica_list_too_small_grants_no_lease);
    RUN_TEST(remove_respects_leases_unless_forced);
    RUN_TEST(remove_reports_a_write_before_a_task);
    RUN_TEST(remove_all_and_by_regex_count_what_they_remove);
    RUN_TEST(remove_by_regex_in_tenant_and_all_tenants);
    RUN_TEST(copy_stages_targets_that_end_completes_and_revoke_frees);
    RUN_TEST(move_relocates_the_replica_on_the_named_segment);
    RUN_TEST(move_end_after_unmount_is_replica_is_gone);
    RUN_TEST(local_disk_replica_can_be_promoted_back_to_memory);
    RUN_TEST(promotion_failure_drops_the_staged_replica);
    RUN_TEST(tenants_keep_equal_keys_apart);
    return check_summary("test_ops");
}
