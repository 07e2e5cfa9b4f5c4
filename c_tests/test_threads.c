/* 8 threads on one master from C: each thread writes, upserts, reads and
 * removes its own keys (soft-pinned through both configs) while reading
 * everyone's, one thread runs expiration cleanup and one moves the manual
 * clock. Every status must be one the contract allows for that call; after
 * the join the key count matches what the threads left behind and every
 * invariant of docs/CONTRACT.md section 8 holds. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>

#include "fixture.h"

#define THREADS 8
#define KEYS 16
#define ITERATIONS 150

typedef struct {
    mooncake_meta_master *m;
    int id;
    uint64_t rng;
    int alive[KEYS];
    int failures;
    int writes, reads, cleanups;
} worker;

static uint32_t next_rand(worker *w) {
    w->rng = w->rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(w->rng >> 33);
}

static void key_of(char *buf, size_t cap, int thread, int i) {
    snprintf(buf, cap, "t%d-k%d", thread, i);
}

/* Records an unexpected status; the main thread turns the count into a check. */
static void expect(worker *w, const char *what, mooncake_meta_status st, mooncake_meta_error **err,
                   mooncake_meta_status a, mooncake_meta_status b) {
    if (st != a && st != b) {
        fprintf(stderr, "thread %d: %s returned %s: %s\n", w->id, what, mooncake_meta_status_name(st),
                *err ? mooncake_meta_error_message(*err) : "");
        w->failures++;
    }
    mooncake_meta_error_free(*err);
    *err = NULL;
}

/* A write of an own key: PutStart fails with OBJECT_ALREADY_EXISTS if it is alive. */
static void put_own(worker *w, const char *key, int i) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_replica r[2];
    size_t n = 0;
    uint64_t token = 0;
    mooncake_meta_status st;
    if (next_rand(w) % 2) {
        mooncake_meta_write_config cfg = fx_enable(100 + next_rand(w) % 5000);
        st = mooncake_meta_put_start(w->m, (uint64_t)w->id + 1, FX_KEY(key), 4096, &cfg, r, 2, &n,
                                     &token, &err);
    } else {
        mooncake_meta_replicate_config legacy = {1, (int)(next_rand(w) % 2), 0, NULL, 0};
        st = mooncake_meta_put_start_legacy(w->m, (uint64_t)w->id + 1, FX_KEY(key), 4096, &legacy, r,
                                            2, &n, &token, &err);
    }
    if (w->alive[i]) {
        expect(w, "put_start (alive)", st, &err, MOONCAKE_META_OBJECT_ALREADY_EXISTS,
               MOONCAKE_META_OBJECT_ALREADY_EXISTS);
        return;
    }
    expect(w, "put_start", st, &err, MOONCAKE_META_OK, MOONCAKE_META_OK);
    if (st != MOONCAKE_META_OK) return;
    st = mooncake_meta_put_end(w->m, (uint64_t)w->id + 1, FX_KEY(key), MOONCAKE_META_SELECT_ALL, token,
                               &err);
    expect(w, "put_end", st, &err, MOONCAKE_META_OK, MOONCAKE_META_OK);
    w->alive[i] = 1;
    w->writes++;
}

/* An upsert of an own key, same size (in place) or not (reallocated). */
static void upsert_own(worker *w, const char *key, int i) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_replica r[2];
    size_t n = 0;
    uint64_t token = 0;
    mooncake_meta_write_config cfg = fx_config(1);
    cfg.soft_pin_action = next_rand(w) % 3; /* PRESERVE, ENABLE (default TTL), DISABLE */
    uint64_t size = next_rand(w) % 2 ? 4096 : 8192;
    mooncake_meta_status st = mooncake_meta_upsert_start(w->m, (uint64_t)w->id + 1, FX_KEY(key), size,
                                                         &cfg, r, 2, &n, &token, &err);
    expect(w, "upsert_start", st, &err, MOONCAKE_META_OK, MOONCAKE_META_OK);
    if (st != MOONCAKE_META_OK) return;
    st = mooncake_meta_upsert_end(w->m, (uint64_t)w->id + 1, FX_KEY(key), MOONCAKE_META_SELECT_ALL,
                                  token, &err);
    expect(w, "upsert_end", st, &err, MOONCAKE_META_OK, MOONCAKE_META_OK);
    w->alive[i] = 1;
    w->writes++;
}

static void *run(void *arg) {
    worker *w = arg;
    mooncake_meta_error *err = NULL;
    char key[32];
    for (int it = 0; it < ITERATIONS; it++) {
        int i = (int)(next_rand(w) % KEYS);
        key_of(key, sizeof key, w->id, i);
        switch (next_rand(w) % 8) {
        case 0:
        case 1:
            put_own(w, key, i);
            break;
        case 2:
            upsert_own(w, key, i);
            break;
        case 3: { /* anyone's key: absent, mid-write or readable */
            mooncake_meta_replica r[2];
            size_t n = 0;
            key_of(key, sizeof key, (int)(next_rand(w) % THREADS), i);
            mooncake_meta_status st = mooncake_meta_get_replica_list(w->m, FX_KEY(key), r, 2, &n, &err);
            if (st == MOONCAKE_META_REPLICA_IS_NOT_READY) st = MOONCAKE_META_OK;
            expect(w, "get_replica_list", st, &err, MOONCAKE_META_OK, MOONCAKE_META_OBJECT_NOT_FOUND);
            w->reads++;
            break;
        }
        case 4: {
            int exists = -1;
            key_of(key, sizeof key, (int)(next_rand(w) % THREADS), i);
            expect(w, "exist", mooncake_meta_exist(w->m, FX_KEY(key), &exists, &err), &err,
                   MOONCAKE_META_OK, MOONCAKE_META_OK);
            w->reads++;
            break;
        }
        case 5: { /* forced: other threads' leases do not block it */
            mooncake_meta_status st = mooncake_meta_remove(w->m, FX_KEY(key), 1, &err);
            expect(w, "remove", st, &err, w->alive[i] ? MOONCAKE_META_OK : MOONCAKE_META_OBJECT_NOT_FOUND,
                   w->alive[i] ? MOONCAKE_META_OK : MOONCAKE_META_OBJECT_NOT_FOUND);
            w->alive[i] = 0;
            break;
        }
        case 6: {
            int has = -1;
            uint64_t d = 0;
            mooncake_meta_status st = mooncake_meta_soft_pin_deadline(w->m, FX_KEY(key), &has, &d, &err);
            expect(w, "soft_pin_deadline", st, &err,
                   w->alive[i] ? MOONCAKE_META_OK : MOONCAKE_META_OBJECT_NOT_FOUND,
                   w->alive[i] ? MOONCAKE_META_OK : MOONCAKE_META_OBJECT_NOT_FOUND);
            break;
        }
        default:
            if (w->id == 0) {
                mooncake_meta_cleanup_stats s;
                s.struct_size = sizeof s;
                expect(w, "run_cleanup", mooncake_meta_run_cleanup(w->m, &s, &err), &err,
                       MOONCAKE_META_OK, MOONCAKE_META_OK);
                w->cleanups++;
            } else if (w->id == 1) {
                expect(w, "advance_time", mooncake_meta_master_advance_time(w->m, 250, NULL, &err), &err,
                       MOONCAKE_META_OK, MOONCAKE_META_OK);
            } else if (w->id == 2 && it % 50 == 0) {
                mooncake_meta_bytes *b = NULL;
                expect(w, "snapshot", mooncake_meta_snapshot(w->m, &b, &err), &err, MOONCAKE_META_OK,
                       MOONCAKE_META_OK);
                mooncake_meta_bytes_free(b);
            } else {
                mooncake_meta_metrics_snapshot s;
                s.struct_size = sizeof s;
                expect(w, "metrics", mooncake_meta_metrics(w->m, &s, &err), &err, MOONCAKE_META_OK,
                       MOONCAKE_META_OK);
            }
        }
    }
    return NULL;
}

static void eight_threads_share_one_master(void) {
    mooncake_meta_error *err = NULL;
    fx_options o;
    memset(&o, 0, sizeof o);
    o.default_soft_pin_ttl_ms = 3000;
    mooncake_meta_master *m = fx_master(&o);
    fx_mount(m, 1, "seg-a", 64u << 20);
    fx_mount(m, 2, "seg-b", 64u << 20);
    worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].m = m;
        w[i].id = i;
        w[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
        CHECK_EQ_INT(pthread_create(&t[i], NULL, run, &w[i]), 0);
    }
    int alive = 0, writes = 0, reads = 0;
    for (int i = 0; i < THREADS; i++) {
        CHECK_EQ_INT(pthread_join(t[i], NULL), 0);
        CHECK_EQ_INT(w[i].failures, 0);
        for (int k = 0; k < KEYS; k++) alive += w[i].alive[k];
        writes += w[i].writes;
        reads += w[i].reads;
    }
    CHECK(writes > 100 && reads > 100 && w[0].cleanups > 0);
    fx_check_invariants(m);
    mooncake_meta_metrics_snapshot mt = fx_metrics(m);
    CHECK_EQ_INT(mt.key_count, alive);
    CHECK(mt.soft_pin_key_count <= (uint64_t)alive);
    CHECK_EQ_INT(mt.discarded_staging_bytes > 0, 1); /* case-C upserts discarded buffers */

    /* Everything expires eventually; the index empties with the gauge. */
    CHECK_OK(mooncake_meta_run_cleanup_at(m, (uint64_t)INT64_MAX, NULL, &err), err);
    uint64_t heap = 1, live = 1;
    CHECK_OK(mooncake_meta_index_sizes(m, &heap, &live, &err), err);
    CHECK_EQ_INT(live, 0);
    CHECK_EQ_INT(fx_metrics(m).soft_pin_key_count, 0);
    fx_check_invariants(m);
    printf("  %d writes, %d reads, %d live keys at the end\n", writes, reads, alive);
    mooncake_meta_master_free(m);
}

int main(void) {
    RUN_TEST(eight_threads_share_one_master);
    return check_summary("test_threads");
}
