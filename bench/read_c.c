/*
 * read_c: the C ABI half of the harness's `read` scenario. A C program
 * linked to libmooncake_meta.so (no LTO inlining across the boundary) reads
 * a master the way a C user does: Exist and Get (into a caller buffer), one
 * and two threads, on a master with no soft pins and one with every object
 * pinned, measured in A-B-B-A order like the Rust scenario.
 *
 * Same workload as `read` (src/bin/mooncake-meta-bench/read.rs): four
 * 16 GiB memory segments, keys `bench/key/%010d`, 10^6 objects (10^4 with
 * --quick), every thread makes 300 000 calls on random keys (its own
 * permutation of all keys, in passes of at most 300 000 distinct keys) and
 * the manual clock moves 1 ms at the start of each pass.
 *
 * Output (the harness's contract, bench/README.md): one JSON object per
 * line, {"figure", "params", "unit", "better", "values": [one per
 * repetition]}. MOONCAKE_BENCH_CLOCK=cpu times each thread's CPU time
 * instead of wall time, as the harness's --cpu-time does.
 *
 *   read_c [--quick] [--reps N]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mooncake_meta.h"

#define KEY_LEN 20 /* "bench/key/" + 10 digits */
#define START_MS 1700000000000ull
#define CALLS_PER_THREAD 300000u

static size_t n_keys;
/* Keys each thread reads per pass: the first ones of its own permutation of
 * all n_keys keys, so they are spread over the whole table. */
static size_t per_pass;
static char (*keys)[KEY_LEN + 1];
static uint32_t *perms[2];
static int cpu_clock;

static void die(const char *what, mooncake_meta_error *err) {
    fprintf(stderr, "read_c: %s: %s\n", what, err ? mooncake_meta_error_message(err) : "failed");
    mooncake_meta_error_free(err);
    exit(EXIT_FAILURE);
}

/* xorshift64*, seeded like the Rust harness's Rng. */
static uint64_t rng_next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static uint32_t *permutation(size_t n, uint64_t seed) {
    uint32_t *p = malloc(n * sizeof *p);
    uint64_t s = (seed * 0x9E3779B97F4A7C15ull) | 1;
    if (p == NULL) die("out of memory", NULL);
    for (size_t i = 0; i < n; i++) p[i] = (uint32_t)i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(rng_next(&s) % (i + 1));
        uint32_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    return p;
}

static mooncake_meta_master *master(int pinned) {
    mooncake_meta_config *cfg = NULL;
    mooncake_meta_master *m = NULL;
    mooncake_meta_error *err = NULL;
    if (mooncake_meta_config_new(&cfg, &err) != MOONCAKE_META_OK) die("config_new", err);
    if (mooncake_meta_config_set_manual_clock(cfg, START_MS, &err) != MOONCAKE_META_OK ||
        mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 0, &err) != MOONCAKE_META_OK ||
        mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, &err) != MOONCAKE_META_OK ||
        mooncake_meta_config_set_sweep_interval_ms(cfg, 0, &err) != MOONCAKE_META_OK)
        die("config", err);
    if (mooncake_meta_master_new(cfg, &m, &err) != MOONCAKE_META_OK) die("master_new", err);
    mooncake_meta_config_free(cfg);
    for (uint64_t i = 0; i < 4; i++) {
        char name[8];
        uint32_t id = 0;
        snprintf(name, sizeof name, "mem%" PRIu64, i);
        if (mooncake_meta_mount_segment(m, i + 1, name, strlen(name), (i + 1) << 40, 16ull << 30,
                                        MOONCAKE_META_POOL_MEMORY, &id, &err) != MOONCAKE_META_OK)
            die("mount_segment", err);
    }
    /* The legacy config, as an upstream caller would: with_soft_pin = ENABLE
     * with the master's default TTL, 0 = PRESERVE. */
    mooncake_meta_replicate_config rc = {1, pinned ? 1 : 0, 0, NULL, 0};
    for (size_t i = 0; i < n_keys; i++) {
        mooncake_meta_replica r[1];
        size_t len = 0;
        uint64_t token = 0;
        if (mooncake_meta_put_start_legacy(m, 1, NULL, 0, keys[i], KEY_LEN, 4096, &rc, r, 1, &len,
                                           &token, &err) != MOONCAKE_META_OK)
            die("put_start_legacy", err);
        if (mooncake_meta_put_end(m, 1, NULL, 0, keys[i], KEY_LEN, MOONCAKE_META_SELECT_ALL, token,
                                  &err) != MOONCAKE_META_OK)
            die("put_end", err);
    }
    return m;
}

enum op { EXIST, GET };

typedef struct {
    mooncake_meta_master *m;
    const uint32_t *perm;
    enum op op;
    size_t passes;
    pthread_barrier_t *start;
    uint64_t failures;
    double cpu_secs;
} reader;

static double now_secs(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *read_loop(void *arg) {
    reader *r = arg;
    mooncake_meta_replica buf[4];
    mooncake_meta_error *err = NULL;
    pthread_barrier_wait(r->start);
    double cpu = now_secs(CLOCK_THREAD_CPUTIME_ID);
    for (size_t p = 0; p < r->passes; p++) {
        if (mooncake_meta_master_advance_time(r->m, 1, NULL, &err) != MOONCAKE_META_OK)
            die("advance_time", err);
        for (size_t i = 0; i < per_pass; i++) {
            const char *k = keys[r->perm[i]];
            if (r->op == EXIST) {
                int exists = 0;
                if (mooncake_meta_exist(r->m, NULL, 0, k, KEY_LEN, &exists, NULL) !=
                        MOONCAKE_META_OK ||
                    !exists)
                    r->failures++;
            } else {
                size_t len = 0;
                if (mooncake_meta_get_replica_list(r->m, NULL, 0, k, KEY_LEN, buf, 4, &len, NULL) !=
                        MOONCAKE_META_OK ||
                    len == 0)
                    r->failures++;
            }
        }
    }
    r->cpu_secs = now_secs(CLOCK_THREAD_CPUTIME_ID) - cpu;
    return NULL;
}

/* Calls per second per thread; wall time from a common start to the last
 * thread's end, or the largest thread CPU time under MOONCAKE_BENCH_CLOCK=cpu. */
static double rate(mooncake_meta_master *m, enum op op, int threads, size_t passes,
                   uint64_t *failures) {
    pthread_t tid[2];
    reader rs[2];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; t++) {
        rs[t] = (reader){m, perms[t], op, passes, &start, 0, 0};
        if (pthread_create(&tid[t], NULL, read_loop, &rs[t]) != 0) die("pthread_create", NULL);
    }
    pthread_barrier_wait(&start);
    double t0 = now_secs(CLOCK_MONOTONIC);
    double cpu = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        *failures += rs[t].failures;
        if (rs[t].cpu_secs > cpu) cpu = rs[t].cpu_secs;
    }
    double wall = now_secs(CLOCK_MONOTONIC) - t0;
    pthread_barrier_destroy(&start);
    double secs = cpu_clock ? cpu : wall;
    return (double)(passes * per_pass) / secs;
}

#define MAX_REPS 16

int main(int argc, char **argv) {
    int quick = 0, reps = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 1 || reps > MAX_REPS) {
                fprintf(stderr, "read_c: --reps takes 1..%d\n", MAX_REPS);
                return EXIT_FAILURE;
            }
        } else {
            fprintf(stderr, "usage: read_c [--quick] [--reps N]\n");
            return EXIT_FAILURE;
        }
    }
    if (reps == 0) reps = quick ? 1 : 3;
    const char *clk = getenv("MOONCAKE_BENCH_CLOCK");
    cpu_clock = clk != NULL && strcmp(clk, "cpu") == 0;
    n_keys = quick ? 10000 : 1000000;
    per_pass = n_keys < CALLS_PER_THREAD ? n_keys : CALLS_PER_THREAD;
    size_t passes = CALLS_PER_THREAD / per_pass;

    keys = malloc(n_keys * sizeof *keys);
    if (keys == NULL) die("out of memory", NULL);
    for (size_t i = 0; i < n_keys; i++) snprintf(keys[i], KEY_LEN + 1, "bench/key/%010u", (unsigned)i);
    perms[0] = permutation(n_keys, 31);
    perms[1] = permutation(n_keys, 32);

    /* values[op][threads-1][pinned][rep] */
    static double values[2][2][2][MAX_REPS];
    uint64_t failures = 0;
    /* Built once: repetitions repeat the measurement, not the 2 x 10^6
     * writes (no memory is measured here), which keeps `make bench` within
     * its budget. */
    mooncake_meta_master *plain = master(0), *pinned = master(1);
    for (int rep = 0; rep < reps; rep++) {
        for (int op = EXIST; op <= GET; op++) {
            for (int threads = 1; threads <= 2; threads++) {
                double a1 = rate(plain, op, threads, passes, &failures);
                double b1 = rate(pinned, op, threads, passes, &failures);
                double b2 = rate(pinned, op, threads, passes, &failures);
                double a2 = rate(plain, op, threads, passes, &failures);
                values[op][threads - 1][0][rep] = (a1 + a2) / 2;
                values[op][threads - 1][1][rep] = (b1 + b2) / 2;
            }
        }
    }
    mooncake_meta_master_free(plain);
    mooncake_meta_master_free(pinned);
    if (failures != 0) {
        fprintf(stderr, "read_c: %" PRIu64 " reads failed (objects must all be readable)\n",
                failures);
        return EXIT_FAILURE;
    }
    static const char *names[2] = {"exist_per_thread", "get_per_thread"};
    for (int op = 0; op < 2; op++)
        for (int t = 0; t < 2; t++)
            for (int pin = 0; pin < 2; pin++) {
                printf("{\"figure\": \"%s\", \"params\": {\"n\": %zu, \"threads\": %d, "
                       "\"pinned_pct\": %d, \"abi\": \"c-shared\"}, \"unit\": \"ops/s\", "
                       "\"better\": \"higher\", \"values\": [",
                       names[op], n_keys, t + 1, pin ? 100 : 0);
                for (int rep = 0; rep < reps; rep++)
                    printf("%s%.0f", rep ? ", " : "", values[op][t][pin][rep]);
                printf("]}\n");
            }
    free(perms[0]);
    free(perms[1]);
    free(keys);
    return EXIT_SUCCESS;
}
