/*
 * libmooncake_meta in one sitting: the fixed-lifecycle soft pin seen from C.
 *
 * A master on a manual clock gets two memory segments, then a KV cache's
 * day: a few prefix-cache objects soft-pinned (through the extended config
 * and through the legacy upstream struct) whose deadlines start when their
 * write ends, not when it starts, and are not refreshed by a repeated End;
 * many ordinary objects written under memory pressure while the eviction
 * trigger runs (its first pass leaves pinned objects alone); reads that
 * never extend a pin; a snapshot restored into two new masters, where an
 * eviction that needs more than the ordinary objects can give takes pinned
 * ones in its second pass only if allow_evict_soft_pinned_objects is on;
 * the clock moving through the pins' expiry with the cleanup and the
 * soft-pin gauge converging; the Prometheus text; and, on a master of its
 * own, group retention: a prompt prefix retained as a group for a fixed
 * time, a read that does not extend it, a page that joins late, eviction
 * skipping the group, and its expiry.
 *
 * `make demo` installs the library into target/demo-prefix and builds this
 * file against the installed header and shared library with pkg-config:
 *   cc demo.c $(pkg-config --cflags --libs mooncake_meta)
 * It checks what it shows and exits non-zero if anything is unexpected.
 */
#define _POSIX_C_SOURCE 200809L /* getpid, unlink */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mooncake_meta.h>

#define KIB UINT64_C(1024)
#define MIB (KIB * KIB)
#define OBJECT_SIZE (256 * KIB)
#define T0 UINT64_C(1714000000000) /* the manual clock's start (ms since the epoch) */
#define DEFAULT_TTL_MS UINT64_C(300000)
#define N_CHAT 40
#define NODE1 "node-1/dram"
#define NODE2 "node-2/dram"

static mooncake_meta_master *master;
static int unexpected;

/* ------------------------------------------------------------- helpers */

/* Stops the demo on a call that had to succeed. */
static void ok(const char *what, mooncake_meta_status st, mooncake_meta_error *err) {
    if (st == MOONCAKE_META_OK) return;
    fprintf(stderr, "\n%s failed: %s: %s\n", what, mooncake_meta_status_name(st),
            err ? mooncake_meta_error_message(err) : "");
    mooncake_meta_error_free(err);
    exit(EXIT_FAILURE);
}

/* Notes a result the demo did not expect, and carries on. */
static void expect(int cond, const char *what) {
    if (!cond) {
        printf("   !! UNEXPECTED: %s\n", what);
        fprintf(stderr, "demo: unexpected result: %s\n", what);
        unexpected++;
    }
}

static void section(const char *title) { printf("\n%s\n", title); }

static uint64_t now(void) {
    mooncake_meta_error *err = NULL;
    uint64_t t = 0;
    ok("master_now", mooncake_meta_master_now(master, &t, &err), err);
    return t;
}

static void advance(uint64_t ms) {
    mooncake_meta_error *err = NULL;
    ok("advance_time", mooncake_meta_master_advance_time(master, ms, NULL, &err), err);
}

static mooncake_meta_metrics_snapshot metrics_of(mooncake_meta_master *m) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_metrics_snapshot s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    ok("metrics", mooncake_meta_metrics(m, &s, &err), err);
    return s;
}

static double usage(void) {
    mooncake_meta_metrics_snapshot s = metrics_of(master);
    return 100.0 * (double)s.memory_allocated_bytes / (double)s.memory_capacity_bytes;
}

/* The committed deadline of a key: 0 if none, UINT64_MAX if the key is gone.
 * Reads no lease (unlike Get/Exist). */
static uint64_t deadline_of(const char *key) {
    mooncake_meta_error *err = NULL;
    int has = 0;
    uint64_t d = 0;
    mooncake_meta_status st =
        mooncake_meta_soft_pin_deadline(master, NULL, 0, key, strlen(key), &has, &d, &err);
    if (st == MOONCAKE_META_OBJECT_NOT_FOUND) {
        mooncake_meta_error_free(err);
        return UINT64_MAX;
    }
    ok("soft_pin_deadline", st, err);
    return has ? d : 0;
}

static void show_deadline(char *buf, size_t cap, uint64_t d) {
    uint64_t t = now();
    if (d == UINT64_MAX)
        snprintf(buf, cap, "(evicted)");
    else if (d == 0)
        snprintf(buf, cap, "none");
    else if (d > t)
        snprintf(buf, cap, "t+%" PRIu64 " s (active)", (d - T0) / 1000);
    else
        snprintf(buf, cap, "t+%" PRIu64 " s (expired)", (d - T0) / 1000);
}

/* PutStart + PutEnd of a whole object, placed on `segment` first (the
 * demo names a segment for every write, so placement, and so the whole run,
 * is reproducible); `cfg`/`legacy` NULL means the defaults. The clock moves
 * `transfer_ms` between the two calls (the client copying the bytes), and
 * the write token goes to `*token_out` when it is not NULL. Returns the
 * PutStart status (the object is written only on OK). */
static mooncake_meta_status write_object_timed(const char *key, uint64_t size, const char *segment,
                                               const mooncake_meta_write_config *cfg,
                                               const mooncake_meta_replicate_config *legacy,
                                               uint64_t transfer_ms, uint64_t *token_out) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_replica replicas[4];
    size_t n = 0;
    uint64_t token = 0;
    const char *segments[] = {segment};
    mooncake_meta_status st;
    if (legacy) {
        mooncake_meta_replicate_config l = *legacy;
        l.preferred_segments = segments;
        l.preferred_segments_count = 1;
        st = mooncake_meta_put_start_legacy(master, 7, NULL, 0, key, strlen(key), size, &l, replicas,
                                            4, &n, &token, &err);
    } else {
        mooncake_meta_write_config c;
        if (cfg) {
            c = *cfg;
        } else {
            ok("write_config_init", mooncake_meta_write_config_init(&c, sizeof c, &err), err);
        }
        c.preferred_segments = segments;
        c.preferred_segments_count = 1;
        st = mooncake_meta_put_start(master, 7, NULL, 0, key, strlen(key), size, &c, replicas, 4, &n,
                                     &token, &err);
    }
    if (st != MOONCAKE_META_OK) {
        mooncake_meta_error_free(err);
        return st;
    }
    if (transfer_ms) advance(transfer_ms);
    ok("put_end", mooncake_meta_put_end(master, 7, NULL, 0, key, strlen(key), MOONCAKE_META_SELECT_ALL,
                                        token, &err),
       err);
    if (token_out) *token_out = token;
    return st;
}

static mooncake_meta_status write_object(const char *key, uint64_t size, const char *segment,
                                         const mooncake_meta_write_config *cfg,
                                         const mooncake_meta_replicate_config *legacy) {
    return write_object_timed(key, size, segment, cfg, legacy, 0, NULL);
}

static mooncake_meta_eviction_report new_report(void) {
    mooncake_meta_eviction_report r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    return r;
}

/* ---------------------------------------------------------- the story */

static const char *pinned[] = {"prompt/system", "prompt/tools", "prompt/few-shot-a",
                               "prompt/few-shot-b", "prompt/legacy"};
#define N_PINNED 5
#define TRANSFER_MS UINT64_C(2000) /* time between a pinned write's Start and End */

/* The deadline each pinned object got at its End (section 2). */
static uint64_t pin_deadline[N_PINNED];

static int active_pins(void) {
    int n = 0;
    uint64_t t = now();
    for (int i = 0; i < N_PINNED; i++) {
        uint64_t d = deadline_of(pinned[i]);
        n += d != 0 && d != UINT64_MAX && t < d;
    }
    return n;
}

static void setup(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = NULL;
    ok("config_new", mooncake_meta_config_new(&cfg, &err), err);
    ok("manual clock", mooncake_meta_config_set_manual_clock(cfg, T0, &err), err);
    ok("default TTL", mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(cfg, DEFAULT_TTL_MS, &err), err);
    ok("watermark", mooncake_meta_config_set_eviction_high_watermark_ratio(cfg, 0.80, &err), err);
    ok("ratio", mooncake_meta_config_set_eviction_ratio(cfg, 0.10, &err), err);
    /* This demo drives maintenance itself, so every step is reproducible. */
    ok("cleanup interval", mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 0, &err), err);
    ok("eviction interval", mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, &err), err);
    ok("sweep interval", mooncake_meta_config_set_sweep_interval_ms(cfg, 0, &err), err);
    ok("shards", mooncake_meta_config_set_shard_count(cfg, 64, &err), err);
    ok("master_new", mooncake_meta_master_new(cfg, &master, &err), err);
    mooncake_meta_config_free(cfg);

    section("1. A master and its segments");
    printf("   manual clock at t0 = %" PRIu64 " ms; default soft-pin TTL %" PRIu64
           " s;\n   eviction starts above 80%% memory use and frees 10%% of the evictable objects\n",
           T0, DEFAULT_TTL_MS / 1000);
    printf("\n   %-14s %6s  %-7s %9s  %s\n", "segment", "client", "pool", "capacity", "id");
    const char *names[] = {NODE1, NODE2};
    for (int i = 0; i < 2; i++) {
        uint32_t id = 0;
        ok("mount_segment",
           mooncake_meta_mount_segment(master, (uint64_t)i + 1, names[i], strlen(names[i]),
                                       0x7f0000000000ull + (uint64_t)i * 0x100000000ull, 4 * MIB,
                                       MOONCAKE_META_POOL_MEMORY, &id, &err),
           err);
        printf("   %-14s %6d  %-7s %5" PRIu64 " MiB  %" PRIu32 "\n", names[i], i + 1, "memory",
               (uint64_t)4, id);
    }
}

static void pinned_writes(void) {
    mooncake_meta_error *err = NULL;
    section("2. Soft-pinned prefix-cache objects (256 KiB each, on " NODE1 ")");
    printf("   Each write takes %" PRIu64 " s from PutStart to PutEnd (the client copying the\n"
           "   bytes). The pin's lifetime starts at the PutEnd that makes the object readable:\n"
           "   deadline = time of the End + TTL.\n\n",
           TRANSFER_MS / 1000);
    printf("   %-18s %-33s %-9s %-9s %s\n", "key", "request", "PutStart", "PutEnd", "deadline");
    const uint64_t ttls[] = {10 * 60 * 1000, 10 * 60 * 1000, 2 * 60 * 1000, 2 * 60 * 1000};
    uint64_t first_token = 0;
    for (int i = 0; i < N_PINNED; i++) {
        uint64_t start = now(), ttl = i < 4 ? ttls[i] : DEFAULT_TTL_MS, token = 0;
        char request[48], d[32], ts[32], te[32];
        if (i < 4) {
            mooncake_meta_write_config cfg;
            ok("write_config_init", mooncake_meta_write_config_init(&cfg, sizeof cfg, &err), err);
            cfg.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
            cfg.flags = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
            cfg.soft_pin_ttl_ms = ttl;
            ok("put", write_object_timed(pinned[i], OBJECT_SIZE, NODE1, &cfg, NULL, TRANSFER_MS, &token),
               NULL);
            snprintf(request, sizeof request, "ENABLE, TTL %" PRIu64 " min", ttl / 60000);
        } else {
            /* The upstream store_c.h struct: with_soft_pin = 1 means ENABLE
             * with the master's default TTL. */
            mooncake_meta_replicate_config legacy = {1, 1, 0, NULL, 0};
            ok("put (legacy)",
               write_object_timed(pinned[i], OBJECT_SIZE, NODE1, NULL, &legacy, TRANSFER_MS, &token),
               NULL);
            snprintf(request, sizeof request, "legacy struct, with_soft_pin = 1");
        }
        if (i == 0) first_token = token;
        uint64_t end = now();
        pin_deadline[i] = deadline_of(pinned[i]);
        show_deadline(d, sizeof d, pin_deadline[i]);
        snprintf(ts, sizeof ts, "t+%" PRIu64 " s", (start - T0) / 1000);
        snprintf(te, sizeof te, "t+%" PRIu64 " s", (end - T0) / 1000);
        printf("   %-18s %-33s %-9s %-9s %s\n", pinned[i], request, ts, te, d);
        expect(pin_deadline[i] == end + ttl, "deadline = time of the End + TTL");
        expect(pin_deadline[i] != start + ttl, "the deadline does not start at PutStart");
    }
    expect(pin_deadline[4] == now() + DEFAULT_TTL_MS, "legacy pin = the master's default TTL");

    /* A second End of a finished write is accepted (every replica is already
     * COMPLETE) and changes nothing: only the End that first made the object
     * readable starts the lifetime. */
    advance(5000);
    mooncake_meta_status st = mooncake_meta_put_end(master, 7, NULL, 0, pinned[0], strlen(pinned[0]),
                                                    MOONCAKE_META_SELECT_ALL, first_token, &err);
    ok("repeated put_end", st, err);
    char d[32];
    show_deadline(d, sizeof d, deadline_of(pinned[0]));
    printf("\n   PutEnd of %s again at t+%" PRIu64 " s -> %s; its deadline is still %s:\n"
           "   a repeated End never refreshes a pin.\n",
           pinned[0], (now() - T0) / 1000, mooncake_meta_status_name(st), d);
    expect(deadline_of(pinned[0]) == pin_deadline[0], "a repeated End does not move the deadline");
}

static void writes_under_pressure(void) {
    mooncake_meta_error *err = NULL;
    section("3. Ordinary objects under memory pressure");
    printf("   %d ordinary 256 KiB writes, alternating between the segments. After each one\n"
           "   the eviction trigger runs: above 80%% memory it frees 10%% of the objects that\n"
           "   eviction may take (every object with a memory replica that is not hard-pinned,\n"
           "   counted below as \"evictable\"). Its first pass skips objects whose soft pin is\n"
           "   active, so the ordinary objects with the oldest leases go first.\n\n",
           N_CHAT);
    printf("   %-14s %8s   %-42s %8s\n", "after writing", "memory", "the eviction trigger", "memory");
    uint64_t evicted = 0, evicted_pinned = 0;
    char key[32];
    for (int i = 0; i < N_CHAT; i++) {
        snprintf(key, sizeof key, "chat/%03d", i);
        ok("put", write_object(key, OBJECT_SIZE, i % 2 ? NODE2 : NODE1, NULL, NULL), NULL);
        advance(100);
        double before = usage();
        int ran = 0;
        mooncake_meta_eviction_report r = new_report();
        ok("evict_if_needed", mooncake_meta_evict_if_needed(master, 0, &ran, &r, &err), err);
        if (ran) {
            char what[64];
            snprintf(what, sizeof what, "evicted %" PRIu64 " of %2" PRIu64 " evictable, %" PRIu64 " pinned",
                     r.evicted, r.base, r.evicted_pinned);
            printf("   %-14s %7.1f%%   %-42s %7.1f%%\n", key, before, what, usage());
            evicted += r.evicted;
            evicted_pinned += r.evicted_pinned;
        }
    }
    /* Too big for the room left in any one segment: what a client sees, and
     * what the maintenance thread does about it (a forced eviction). */
    printf("\n   a 1.5 MiB object (a checkpoint), preferably on " NODE2 ":\n");
    mooncake_meta_status st;
    int tries = 0;
    while ((st = write_object("checkpoint/blob", 1536 * KIB, NODE2, NULL, NULL)) ==
               MOONCAKE_META_NO_AVAILABLE_HANDLE &&
           tries++ < 16) {
        int ran = 0;
        mooncake_meta_eviction_report r = new_report();
        ok("evict_if_needed", mooncake_meta_evict_if_needed(master, 1, &ran, &r, &err), err);
        printf("     put_start -> NO_AVAILABLE_HANDLE (no segment has room); a forced eviction\n"
               "     frees %" PRIu64 " objects (%" PRIu64 " pinned), memory %.1f%%\n",
               r.evicted, r.evicted_pinned, usage());
        evicted += r.evicted;
        evicted_pinned += r.evicted_pinned;
    }
    printf("     put_start -> %s\n", mooncake_meta_status_name(st));
    expect(st == MOONCAKE_META_OK, "the big object fits after forced evictions");

    mooncake_meta_metrics_snapshot s = metrics_of(master);
    printf("\n   %" PRIu64 " objects evicted, %" PRIu64 " of them soft-pinned; %" PRIu64
           " objects stored; soft-pinned objects still there: %d of %d\n",
           evicted, evicted_pinned, s.key_count, active_pins(), N_PINNED);
    expect(evicted > 0, "the pressure caused evictions");
    expect(evicted_pinned == 0 && active_pins() == N_PINNED,
           "eviction took ordinary objects first (docs/CONTRACT.md section 4.7)");
}

static void reads(void) {
    mooncake_meta_error *err = NULL;
    section("4. Reads grant leases, never extend a pin");
    for (int round = 0; round < 2; round++) {
        mooncake_meta_replica r[4];
        size_t n = 0;
        ok("get_replica_list", mooncake_meta_get_replica_list(master, NULL, 0, pinned[0],
                                                              strlen(pinned[0]), r, 4, &n, &err),
           err);
        char d[32];
        show_deadline(d, sizeof d, deadline_of(pinned[0]));
        printf("   t+%3" PRIu64 " s  get %s: %zu replica, segment %" PRIu32 " @ 0x%" PRIx64
               ", %" PRIu64 " bytes, %s; deadline %s\n",
               (now() - T0) / 1000, pinned[0], n, r[0].segment_id, r[0].address, r[0].size,
               r[0].status == MOONCAKE_META_REPLICA_COMPLETE ? "COMPLETE" : "PROCESSING", d);
        expect(deadline_of(pinned[0]) == pin_deadline[0], "reads never move the deadline");
        advance(50 * 1000);
    }
}

/* A new master on the demo's clock, restored from `candidates`; `allow` is
 * its allow_evict_soft_pinned_objects. */
static mooncake_meta_master *restore_into(const char *const *candidates, size_t n, int allow,
                                          mooncake_meta_restore_report *r) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = NULL;
    mooncake_meta_master *m = NULL;
    ok("config_new", mooncake_meta_config_new(&cfg, &err), err);
    ok("manual clock", mooncake_meta_config_set_manual_clock(cfg, now(), &err), err);
    ok("background off", mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 0, &err), err);
    ok("eviction off", mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, &err), err);
    ok("allow_evict_soft_pinned_objects",
       mooncake_meta_config_set_allow_evict_soft_pinned_objects(cfg, allow, &err), err);
    ok("master_new", mooncake_meta_master_new(cfg, &m, &err), err);
    mooncake_meta_config_free(cfg);
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    ok("restore_files", mooncake_meta_restore_files(m, candidates, n, r, &err), err);
    return m;
}

static mooncake_meta_master *restored, *restored_strict;

static void snapshot_and_restore(void) {
    mooncake_meta_error *err = NULL;
    section("5. Snapshot and restore (soft pins survive, as the RFC asks)");
    char path[128], missing[160];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/mooncake_meta_demo.%ld.snap", tmp && *tmp ? tmp : "/tmp",
             (long)getpid());
    snprintf(missing, sizeof missing, "%s.missing", path);
    ok("snapshot_save", mooncake_meta_snapshot_save(master, path, &err), err);
    mooncake_meta_bytes *snap = NULL;
    ok("snapshot", mooncake_meta_snapshot(master, &snap, &err), err);
    printf("   saved %zu bytes atomically to %s\n", mooncake_meta_bytes_len(snap), path);

    /* Candidates newest first: a file that does not exist, then the one saved. */
    const char *candidates[] = {missing, path};
    mooncake_meta_restore_report r, r2;
    restored = restore_into(candidates, 2, 1, &r);
    restored_strict = restore_into(candidates, 2, 0, &r2);
    mooncake_meta_metrics_snapshot a = metrics_of(master), b = metrics_of(restored);
    printf("   restored into a new master from the candidates [<missing file>, <saved file>],\n"
           "   newest first: %" PRIu64 " could not be read, so candidate %" PRIu64
           " (the saved file) was used\n"
           "   (the same file also goes into a second master, for section 6)\n\n",
           r.candidates_rejected, r.candidate);
    printf("   %-52s %" PRIu64 "\n", "objects restored", r.objects_restored);
    printf("   %-52s %" PRIu64 "\n", "objects left out: lease run out and no active pin",
           r.objects_dropped);
    printf("   %-52s %" PRIu64 "\n", "soft pins restored, with their original deadlines",
           r.soft_pins_restored);
    printf("   %-52s %" PRIu64 " -> %" PRIu64 "\n", "pinned objects counted by the gauge (old -> new)",
           a.soft_pin_key_count, b.soft_pin_key_count);
    expect(r.candidate == 1 && r.candidates_rejected == 1, "the readable file won");
    expect(r.soft_pins_restored == N_PINNED && b.soft_pin_key_count == N_PINNED,
           "every active pin survives the restore");
    expect(r.objects_restored + r.objects_dropped == a.key_count, "every object is restored or left out");
    expect(r2.objects_restored == r.objects_restored, "the second restore is the same");
    for (int i = 0; i < N_PINNED; i++) {
        int has = 0;
        uint64_t d = 0;
        ok("soft_pin_deadline", mooncake_meta_soft_pin_deadline(restored, NULL, 0, pinned[i],
                                                                strlen(pinned[i]), &has, &d, &err),
           err);
        expect(has && d == pin_deadline[i], "a restored pin keeps its original deadline");
    }
    ok("check_invariants (restored)", mooncake_meta_check_invariants(restored, &err), err);
    mooncake_meta_bytes_free(snap);
    unlink(path);
}

/* How many of the pinned keys `m` still holds. */
static int pins_left(mooncake_meta_master *m) {
    int n = 0;
    for (int i = 0; i < N_PINNED; i++) {
        mooncake_meta_error *err = NULL;
        int has = 0;
        uint64_t d = 0;
        mooncake_meta_status st =
            mooncake_meta_soft_pin_deadline(m, NULL, 0, pinned[i], strlen(pinned[i]), &has, &d, &err);
        if (st == MOONCAKE_META_OBJECT_NOT_FOUND) {
            mooncake_meta_error_free(err);
            continue;
        }
        ok("soft_pin_deadline", st, err);
        n++;
    }
    return n;
}

static void second_pass(void) {
    mooncake_meta_error *err = NULL;
    section("6. When ordinary objects are not enough: the second eviction pass");
    printf("   The restored masters hold only the %d pinned objects, all still pinned. An\n"
           "   eviction that must free 40%% of them finds nothing in its first pass (which\n"
           "   skips active pins); its second pass may take pinned objects, but only when\n"
           "   allow_evict_soft_pinned_objects is on.\n\n",
           N_PINNED);
    printf("   %-36s %-9s %-15s %s\n", "allow_evict_soft_pinned_objects", "evicted", "of them pinned",
           "pinned objects left");
    mooncake_meta_master *masters[] = {restored, restored_strict};
    const char *label[] = {"on (the default)", "off"};
    for (int i = 0; i < 2; i++) {
        mooncake_meta_eviction_report r = new_report();
        ok("run_eviction", mooncake_meta_run_eviction(masters[i], 0.4, 0.4, &r, &err), err);
        int left = pins_left(masters[i]);
        printf("   %-36s %-9" PRIu64 " %-15" PRIu64 " %d of %d\n", label[i], r.evicted, r.evicted_pinned,
               left, N_PINNED);
        if (i == 0)
            expect(r.evicted == 2 && r.evicted_pinned == 2 && left == N_PINNED - 2,
                   "allowed: the second pass takes ceil(5 x 0.4) = 2 pinned objects");
        else
            expect(r.evicted == 0 && left == N_PINNED, "not allowed: pinned objects are never evicted");
        ok("check_invariants", mooncake_meta_check_invariants(masters[i], &err), err);
    }
    mooncake_meta_master_free(restored);
    mooncake_meta_master_free(restored_strict);
}

static void time_passes(void) {
    mooncake_meta_error *err = NULL;
    section("7. The clock runs through the pins' expiry");
    printf("   \"pinned now\": objects whose deadline is still ahead. \"gauge\": the metric\n"
           "   master_soft_pin_key_count, which counts every stored deadline, expired ones\n"
           "   included until a cleanup clears them. \"in the index\": deadlines the cleanup\n"
           "   will look at. A cleanup looks only at the deadlines that are due.\n\n");
    printf("   %-8s %-12s %10s %6s %13s  %s\n", "time", "step", "pinned now", "gauge", "in the index",
           "cleanup: due / expired");
    /* The 2-minute pins end at t+126 s and t+128 s, the legacy one (5 min)
     * at t+310 s, the 10-minute ones at t+602 s and t+604 s. */
    const struct {
        uint64_t to_s;
        int cleanup;
    } steps[] = {{125, 0}, {130, 0}, {130, 1}, {310, 0}, {311, 1}, {610, 1}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        uint64_t target = T0 + steps[i].to_s * 1000;
        expect(now() <= target, "the story's clock is where the table expects it");
        if (now() < target) ok("set_time", mooncake_meta_master_set_time(master, target, &err), err);
        char cleaned[32] = "-";
        if (steps[i].cleanup) {
            mooncake_meta_cleanup_stats c;
            memset(&c, 0, sizeof c);
            c.struct_size = sizeof c;
            ok("run_cleanup", mooncake_meta_run_cleanup(master, &c, &err), err);
            snprintf(cleaned, sizeof cleaned, "%" PRIu64 " / %" PRIu64, c.popped, c.expired);
        }
        uint64_t heap = 0, live = 0;
        ok("index_sizes", mooncake_meta_index_sizes(master, &heap, &live, &err), err);
        mooncake_meta_metrics_snapshot s = metrics_of(master);
        int active = active_pins();
        printf("   t+%-5" PRIu64 " %-12s %10d %6" PRIu64 " %13" PRIu64 "  %s\n", (now() - T0) / 1000,
               steps[i].cleanup ? "run_cleanup" : "advance", active, s.soft_pin_key_count, live,
               cleaned);
        if (steps[i].cleanup)
            expect(s.soft_pin_key_count == (uint64_t)active, "after cleanup the gauge equals the active pins");
    }
    for (int i = 0; i < N_PINNED; i++)
        expect(deadline_of(pinned[i]) == 0, "every pin has expired and been cleared");
}

static void pressure_after_expiry(void) {
    mooncake_meta_error *err = NULL;
    section("8. Expired pins protect nothing: the old prompts are ordinary cache now");
    mooncake_meta_eviction_report r = new_report();
    ok("run_eviction", mooncake_meta_run_eviction(master, 0.5, 0.5, &r, &err), err);
    printf("   an eviction of half of the %" PRIu64 " evictable objects (run_eviction 0.5, 0.5)\n"
           "   evicted %" PRIu64 ", oldest lease first, pinned or not\n\n",
           r.base, r.evicted);
    printf("   %-18s %s\n", "former pin", "after the run");
    for (int i = 0; i < N_PINNED; i++) {
        int gone = deadline_of(pinned[i]) == UINT64_MAX;
        printf("   %-18s %s\n", pinned[i],
               gone ? "evicted (oldest lease)" : "kept (read in step 4: a younger lease)");
        /* prompt/system was read in step 4, so its lease is younger than
         * every ordinary object's; the others have the oldest leases of all. */
        expect(gone == (i != 0), "eviction order is (lease, age), pins or not");
    }
}

static void metrics(void) {
    mooncake_meta_error *err = NULL;
    section("9. Metrics (Prometheus text, excerpt)");
    mooncake_meta_bytes *text = NULL;
    ok("metrics_prometheus", mooncake_meta_metrics_prometheus(master, &text, &err), err);
    const char *wanted[] = {"master_key_count ", "master_soft_pin_key_count ",
                            "master_allocated_bytes ", "master_evicted_key_count_total ",
                            "master_soft_pin_cleanup_expired_total ", "master_segment_allocated_bytes{"};
    /* The data is NUL-terminated: walk it line by line. */
    const char *line = (const char *)mooncake_meta_bytes_data(text);
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
            if (strncmp(line, wanted[i], strlen(wanted[i])) == 0) printf("   %.*s\n", (int)len, line);
        line += len + (end != NULL);
    }
    printf("   (%zu bytes in all)\n", mooncake_meta_bytes_len(text));
    mooncake_meta_bytes_free(text);
}

#define PREFIX_GROUP "conv-42/prefix"
#define RETAIN_MS UINT64_C(600000)

static uint64_t group_deadline(const char *group) {
    mooncake_meta_error *err = NULL;
    int has = 0;
    uint64_t d = 0;
    ok("group_retention_deadline",
       mooncake_meta_group_retention_deadline(master, NULL, 0, group, strlen(group), &has, &d, &err),
       err);
    return has ? d : 0;
}

static int exists(const char *key) {
    mooncake_meta_error *err = NULL;
    int e = 0;
    ok("exist", mooncake_meta_exist(master, NULL, 0, key, strlen(key), &e, &err), err);
    return e;
}

static void group_retention(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *main_master = master;
    mooncake_meta_config *cfg = NULL;
    ok("config_new", mooncake_meta_config_new(&cfg, &err), err);
    ok("manual clock", mooncake_meta_config_set_manual_clock(cfg, T0, &err), err);
    ok("cleanup interval", mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 0, &err), err);
    ok("eviction interval", mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, &err), err);
    ok("sweep interval", mooncake_meta_config_set_sweep_interval_ms(cfg, 0, &err), err);
    ok("master_new", mooncake_meta_master_new(cfg, &master, &err), err);
    mooncake_meta_config_free(cfg);
    uint32_t id = 0;
    ok("mount_segment",
       mooncake_meta_mount_segment(master, 1, NODE1, strlen(NODE1), 0x7f0000000000ull, 4 * MIB,
                                   MOONCAKE_META_POOL_MEMORY, &id, &err),
       err);

    section("10. Group retention: a prompt prefix kept for a fixed time (a master of its own)");
    mooncake_meta_write_config g;
    ok("write_config_init", mooncake_meta_write_config_init(&g, sizeof g, &err), err);
    g.group = PREFIX_GROUP;
    const char *pages[] = {"conv-42/page-0", "conv-42/page-1", "conv-42/page-2"};
    const char *others[] = {"chat/x", "chat/y"};
    for (int i = 0; i < 3; i++) ok("put", write_object(pages[i], OBJECT_SIZE, NODE1, &g, NULL), NULL);
    for (int i = 0; i < 2; i++) ok("put", write_object(others[i], OBJECT_SIZE, NODE1, NULL, NULL), NULL);
    const char *ids[] = {PREFIX_GROUP};
    size_t lens[] = {strlen(PREFIX_GROUP)};
    int32_t st[1];
    uint64_t dl[1];
    ok("retain_groups",
       mooncake_meta_retain_groups(master, NULL, 0, ids, lens, 1, RETAIN_MS, st, dl, &err), err);
    printf("   3 pages written in group %s, then RetainGroups(%s, %" PRIu64
           " min) -> %s, deadline t+%" PRIu64 " s\n",
           PREFIX_GROUP, PREFIX_GROUP, RETAIN_MS / 60000, mooncake_meta_status_name(st[0]),
           (dl[0] - T0) / 1000);
    expect(st[0] == MOONCAKE_META_OK && dl[0] == T0 + RETAIN_MS, "retained for 10 min");
    expect(deadline_of(pages[0]) == 0, "the group deadline is not copied into a member's pin");

    advance(60000);
    expect(exists(pages[0]), "a page is readable");
    printf("   t+60 s: a read of %s; the group deadline stays t+%" PRIu64 " s\n", pages[0],
           (group_deadline(PREFIX_GROUP) - T0) / 1000);
    expect(group_deadline(PREFIX_GROUP) == T0 + RETAIN_MS, "a read does not extend retention");

    advance(240000);
    ok("put", write_object("conv-42/page-3", OBJECT_SIZE, NODE1, &g, NULL), NULL);
    printf("   t+300 s: conv-42/page-3 joins the group: protected for the remaining %" PRIu64
           " s, not a new 10 min\n",
           (group_deadline(PREFIX_GROUP) - now()) / 1000);
    expect(group_deadline(PREFIX_GROUP) == T0 + RETAIN_MS, "joining does not renew retention");

    advance(20000); /* every lease has run out */
    mooncake_meta_eviction_report r = new_report();
    ok("run_eviction", mooncake_meta_run_eviction(master, 1.0, 0.0, &r, &err), err);
    printf("   eviction (target 100 %%): %" PRIu64 " of %" PRIu64
           " candidates evicted -- the ordinary objects; the 4 retained pages stay\n",
           r.evicted, r.candidates);
    expect(r.evicted == 2 && !exists("chat/x") && exists("conv-42/page-3"),
           "the first pass skips the retained group");

    advance(RETAIN_MS);
    mooncake_meta_cleanup_stats c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    ok("run_cleanup", mooncake_meta_run_cleanup(master, &c, &err), err);
    printf("   t+%" PRIu64 " s: past the deadline; cleanup -> master_retained_group_count %" PRIu64
           "\n",
           (now() - T0) / 1000, metrics_of(master).retained_group_count);
    expect(metrics_of(master).retained_group_count == 0 && group_deadline(PREFIX_GROUP) == 0,
           "retention expired");
    r = new_report();
    ok("run_eviction", mooncake_meta_run_eviction(master, 1.0, 0.0, &r, &err), err);
    printf("   eviction again: %" PRIu64 " evicted -- the whole group, all or none\n", r.evicted);
    expect(r.evicted == 4, "an expired group is ordinary cache, evicted whole");
    ok("check_invariants", mooncake_meta_check_invariants(master, &err), err);
    mooncake_meta_master_free(master);
    master = main_master;
}

int main(void) {
    printf("libmooncake_meta %s (ABI %" PRIu32 "): the fixed-lifecycle soft pin, from C\n",
           mooncake_meta_version(), mooncake_meta_abi_version());
    if (mooncake_meta_abi_version() != MOONCAKE_META_ABI_VERSION) {
        fprintf(stderr, "built against ABI %d, running against ABI %" PRIu32 ": refusing to run\n",
                MOONCAKE_META_ABI_VERSION, mooncake_meta_abi_version());
        return EXIT_FAILURE;
    }
    setup();
    pinned_writes();
    writes_under_pressure();
    reads();
    snapshot_and_restore();
    second_pass();
    time_passes();
    pressure_after_expiry();
    metrics();
    group_retention();

    mooncake_meta_error *err = NULL;
    ok("check_invariants", mooncake_meta_check_invariants(master, &err), err);
    mooncake_meta_master_free(master);
    if (unexpected) {
        fprintf(stderr, "\ndemo: FAILED: %d result(s) were NOT the expected ones (see above)\n",
                unexpected);
        return EXIT_FAILURE;
    }
    printf("\ndemo: every result was the expected one; invariants hold\n");
    return EXIT_SUCCESS;
}
