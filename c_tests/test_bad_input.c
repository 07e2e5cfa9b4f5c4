/* The bad-input matrix: every rejection returns its documented
 * code with an error object carrying the same code and a message naming the
 * problem; output parameters keep the sentinel they were filled with; and
 * the master is unchanged: its snapshot bytes, every metric and its clock
 * compare equal before and after (docs/CONTRACT.md section 3: every rejection
 * happens before any side effect). */
#include <math.h>

#include "fixture.h"

#define SENT64 0xdeadbeefcafef00dull
#define SENT_INT 0x5eed
#define SENT_BYTE 0xa5

/* A master with a pinned 2-replica object, a write in flight ("inflight",
 * client 1) and an upsert in flight over an ended write ("upserted", client
 * 1, whose first token is now stale). */
typedef struct {
    mooncake_meta_master *m;
    uint64_t inflight_token, old_token, upsert_token;
} state;

static state setup(void) {
    mooncake_meta_error *err = NULL;
    state s;
    s.m = fx_master(NULL);
    fx_mount(s.m, 1, "seg-a", 1 << 20);
    fx_mount(s.m, 2, "seg-b", 1 << 20);
    mooncake_meta_write_config pin = fx_enable(60000);
    pin.memory_replicas = 2;
    fx_put(s.m, 1, "pinned", 4096, &pin);
    CHECK_OK(fx_put_start(s.m, 1, "inflight", 4096, NULL, &s.inflight_token), err);
    CHECK_OK(fx_put_start(s.m, 1, "upserted", 4096, NULL, &s.old_token), err);
    CHECK_OK(mooncake_meta_put_end(s.m, 1, FX_KEY("upserted"), MOONCAKE_META_SELECT_ALL, s.old_token,
                                   &err),
             err);
    mooncake_meta_replica r[4];
    size_t n = 0;
    CHECK_OK(mooncake_meta_upsert_start(s.m, 1, FX_KEY("upserted"), 4096, NULL, r, 4, &n,
                                        &s.upsert_token, &err),
             err);
    CHECK(s.old_token != s.upsert_token);
    fx_advance(s.m, 100);
    return s;
}

/* What "the master is unchanged" compares. */
typedef struct {
    mooncake_meta_bytes *snapshot;
    mooncake_meta_metrics_snapshot metrics;
    uint64_t now;
} fingerprint;

static fingerprint take(mooncake_meta_master *m) {
    fingerprint f;
    f.snapshot = fx_snapshot(m);
    f.metrics = fx_metrics(m);
    f.now = fx_now(m);
    return f;
}

#define CHECK_UNCHANGED(m, before) check_unchanged(__FILE__, __LINE__, (m), &(before))

static void check_unchanged(const char *file, int line, mooncake_meta_master *m, fingerprint *before) {
    fingerprint after = take(m);
    if (!fx_bytes_equal(before->snapshot, after.snapshot))
        check_fail(file, line, "snapshot bytes changed");
    if (memcmp(&before->metrics, &after.metrics, sizeof after.metrics) != 0)
        check_fail(file, line, "metrics changed");
    if (before->now != after.now) check_fail(file, line, "clock changed");
    mooncake_meta_bytes_free(after.snapshot);
    mooncake_meta_bytes_free(before->snapshot);
    before->snapshot = NULL;
}

static void teardown(state *s) {
    fx_check_invariants(s->m);
    mooncake_meta_master_free(s->m);
}

/* put_start of a new key with `cfg`, which must be rejected with
 * `expected`; the outputs must keep their sentinels. */
static void put_start_rejects(const char *file, int line, mooncake_meta_master *m,
                              const mooncake_meta_write_config *cfg, mooncake_meta_status expected,
                              const char *needle) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_replica r[2];
    size_t n = SENT64;
    uint64_t token = SENT64;
    memset(r, SENT_BYTE, sizeof r);
    check_fails(file, line, "put_start(cfg)",
                mooncake_meta_put_start(m, 1, FX_KEY("new"), 4096, cfg, r, 2, &n, &token, &err),
                expected, &err, needle);
    if (n != SENT64 || token != SENT64 || r[0].id != 0xa5a5a5a5a5a5a5a5ull)
        check_fail(file, line, "put_start wrote an output on failure");
    /* The same request as an upsert of the pinned object. */
    check_fails(file, line, "upsert_start(cfg)",
                mooncake_meta_upsert_start(m, 2, FX_KEY("pinned"), 4096, cfg, r, 2, &n, &token, &err),
                expected, &err, needle);
    if (n != SENT64 || token != SENT64) check_fail(file, line, "upsert_start wrote an output on failure");
}

#define PUT_START_REJECTS(m, cfg, expected, needle)                                                \
    put_start_rejects(__FILE__, __LINE__, (m), (cfg), (expected), (needle))

static void null_handle(void) {
    mooncake_meta_error *err = NULL;
    state s = setup();
    fingerprint before = take(s.m);
    int has = SENT_INT;
    uint64_t d = SENT64;
    mooncake_meta_bytes *b = (mooncake_meta_bytes *)&d; /* any non-NULL sentinel */
    mooncake_meta_metrics_snapshot mt;
    memset(&mt, SENT_BYTE, sizeof mt);
    mt.struct_size = sizeof mt;
    CHECK_FAILS(mooncake_meta_soft_pin_deadline(NULL, FX_KEY("pinned"), &has, &d, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "master is NULL");
    CHECK_FAILS(mooncake_meta_snapshot(NULL, &b, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                "master is NULL");
    CHECK_FAILS(mooncake_meta_metrics(NULL, &mt, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                "master is NULL");
    CHECK_FAILS(mooncake_meta_run_cleanup(NULL, NULL, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                "master is NULL");
    CHECK_FAILS(mooncake_meta_put_end(NULL, 1, FX_KEY("inflight"), MOONCAKE_META_SELECT_ALL,
                                      s.inflight_token, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "master is NULL");
    CHECK_EQ_INT(mooncake_meta_check_invariants(NULL, NULL), MOONCAKE_META_NULL_ARGUMENT);
    CHECK(has == SENT_INT && d == SENT64 && b == (mooncake_meta_bytes *)&d);
    CHECK_EQ_INT(mt.key_count, 0xa5a5a5a5a5a5a5a5ull);
    CHECK_EQ_INT(fx_pending(s.m, "inflight"), 1); /* the write is still in flight */
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

static void null_key_with_a_length(void) {
    mooncake_meta_error *err = NULL;
    state s = setup();
    fingerprint before = take(s.m);
    mooncake_meta_replica r[2];
    size_t n = SENT64;
    uint64_t token = SENT64, d = SENT64;
    int has = SENT_INT;
    memset(r, SENT_BYTE, sizeof r);
    CHECK_FAILS(mooncake_meta_put_start(s.m, 1, NULL, 0, NULL, 5, 4096, NULL, r, 2, &n, &token, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "key is NULL but its length is 5");
    CHECK_FAILS(mooncake_meta_put_start(s.m, 1, NULL, 3, "k", 1, 4096, NULL, r, 2, &n, &token, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "tenant is NULL but its length is 3");
    CHECK_FAILS(mooncake_meta_soft_pin_deadline(s.m, NULL, 0, NULL, 6, &has, &d, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "key is NULL but its length is 6");
    CHECK_FAILS(mooncake_meta_get_replica_list(s.m, NULL, 0, NULL, 6, r, 2, &n, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "key is NULL");
    CHECK(n == SENT64 && token == SENT64 && d == SENT64 && has == SENT_INT);
    CHECK_EQ_INT(r[1].address, 0xa5a5a5a5a5a5a5a5ull);
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

static void invalid_utf8_key(void) {
    mooncake_meta_error *err = NULL;
    state s = setup();
    fingerprint before = take(s.m);
    const char bad[] = "ok\xc3\x28";
    mooncake_meta_replica r[2];
    size_t n = SENT64;
    uint64_t token = SENT64;
    int exists = SENT_INT, pending = SENT_INT;
    CHECK_FAILS(mooncake_meta_put_start(s.m, 1, NULL, 0, bad, 4, 4096, NULL, r, 2, &n, &token, &err),
                MOONCAKE_META_INVALID_UTF8, err, "key is not valid UTF-8 (bad byte at offset 2)");
    CHECK_FAILS(mooncake_meta_exist(s.m, bad, 4, "pinned", 6, &exists, &err),
                MOONCAKE_META_INVALID_UTF8, err, "tenant is not valid UTF-8");
    CHECK_FAILS(mooncake_meta_has_pending_soft_pin(s.m, NULL, 0, bad, 4, &pending, &err),
                MOONCAKE_META_INVALID_UTF8, err, "key is not valid UTF-8");
    CHECK(n == SENT64 && token == SENT64 && exists == SENT_INT && pending == SENT_INT);
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

static void soft_pin_action_255(void) {
    state s = setup();
    fingerprint before = take(s.m);
    mooncake_meta_write_config cfg = fx_config(1);
    cfg.soft_pin_action = 255;
    PUT_START_REJECTS(s.m, &cfg, MOONCAKE_META_INVALID_PARAMS, "cfg.soft_pin_action: unknown value 255");
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

static void soft_pin_ttl_above_the_maximum(void) {
    state s = setup();
    fingerprint before = take(s.m);
    mooncake_meta_write_config cfg = fx_enable(86400000ull + 1); /* default max: 1 day */
    PUT_START_REJECTS(s.m, &cfg, MOONCAKE_META_INVALID_PARAMS, "86400001");
    CHECK_EQ_INT(fx_deadline(s.m, "pinned"), FX_START_MS + 60000);
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

static void preserve_with_a_ttl(void) {
    state s = setup();
    fingerprint before = take(s.m);
    mooncake_meta_write_config cfg = fx_config(1);
    cfg.flags = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
    cfg.soft_pin_ttl_ms = 1000;
    PUT_START_REJECTS(s.m, &cfg, MOONCAKE_META_INVALID_PARAMS, "PRESERVE");
    cfg.soft_pin_action = MOONCAKE_META_SOFT_PIN_DISABLE;
    PUT_START_REJECTS(s.m, &cfg, MOONCAKE_META_INVALID_PARAMS, "DISABLE");
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

static void struct_size_too_small(void) {
    mooncake_meta_error *err = NULL;
    state s = setup();
    fingerprint before = take(s.m);
    mooncake_meta_write_config cfg = fx_config(1);
    cfg.struct_size = 8;
    PUT_START_REJECTS(s.m, &cfg, MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, "struct_size 8");
    /* Output structs too. */
    mooncake_meta_metrics_snapshot mt;
    memset(&mt, SENT_BYTE, sizeof mt);
    mt.struct_size = 12;
    CHECK_FAILS(mooncake_meta_metrics(s.m, &mt, &err), MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, err,
                "out->struct_size 12 is below the smallest supported size");
    CHECK_EQ_INT(mt.struct_size, 12);
    CHECK_EQ_INT(mt.key_count, 0xa5a5a5a5a5a5a5a5ull);
    mooncake_meta_eviction_report ev;
    memset(&ev, SENT_BYTE, sizeof ev);
    ev.struct_size = 0;
    CHECK_FAILS(mooncake_meta_run_eviction(s.m, 1.0, 1.0, &ev, &err),
                MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, err, "out->struct_size 0");
    CHECK_EQ_INT(ev.evicted, 0xa5a5a5a5a5a5a5a5ull);
    CHECK_UNCHANGED(s.m, before); /* no eviction ran */
    teardown(&s);
}

static void struct_size_too_large_with_a_non_zero_tail(void) {
    mooncake_meta_error *err = NULL;
    state s = setup();
    fingerprint before = take(s.m);
    struct {
        mooncake_meta_write_config cfg;
        uint64_t tail;
    } newer;
    CHECK_OK(mooncake_meta_write_config_init(&newer.cfg, sizeof newer, &err), err);
    CHECK_EQ_INT(newer.tail, 0);
    newer.tail = 1;
    PUT_START_REJECTS(s.m, &newer.cfg, MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, "is non-zero");
    /* Far too large is garbage, not a future version. */
    mooncake_meta_write_config cfg = fx_config(1);
    cfg.struct_size = 1u << 20;
    PUT_START_REJECTS(s.m, &cfg, MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, "exceeds");
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

static void unknown_flag_bit(void) {
    state s = setup();
    fingerprint before = take(s.m);
    mooncake_meta_write_config cfg = fx_config(1);
    cfg.flags = 1u << 7;
    PUT_START_REJECTS(s.m, &cfg, MOONCAKE_META_UNKNOWN_FLAGS, "0x80");
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

/* The required length is reported, nothing else written, no lease granted. */
static void buffer_too_small(void) {
    mooncake_meta_error *err = NULL;
    state s = setup();
    fingerprint before = take(s.m);
    mooncake_meta_replica r[2];
    memset(r, SENT_BYTE, sizeof r);
    size_t n = SENT64;
    CHECK_FAILS(mooncake_meta_get_replica_list(s.m, FX_KEY("pinned"), r, 1, &n, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, "out_replicas");
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(r[0].id, 0xa5a5a5a5a5a5a5a5ull);
    n = SENT64;
    CHECK_FAILS(mooncake_meta_get_replica_list(s.m, FX_KEY("pinned"), NULL, 0, &n, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, "out_replicas");
    CHECK_EQ_INT(n, 2);
    /* A start whose replicas would not fit allocates nothing. */
    mooncake_meta_write_config two = fx_config(2);
    uint64_t token = SENT64;
    n = SENT64;
    CHECK_FAILS(mooncake_meta_put_start(s.m, 1, FX_KEY("new"), 4096, &two, r, 1, &n, &token, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, "out_replicas");
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(token, SENT64);
    CHECK_EQ_INT(r[0].id, 0xa5a5a5a5a5a5a5a5ull);

    unsigned char buf[16];
    memset(buf, SENT_BYTE, sizeof buf);
    n = SENT64;
    CHECK_FAILS(mooncake_meta_snapshot_into(s.m, buf, sizeof buf, &n, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, "capacity 16 is below the");
    CHECK_EQ_INT(n, mooncake_meta_bytes_len(before.snapshot));
    CHECK_EQ_INT(buf[0], SENT_BYTE);
    char text[8];
    memset(text, SENT_BYTE, sizeof text);
    n = SENT64;
    CHECK_FAILS(mooncake_meta_metrics_prometheus_into(s.m, text, sizeof text, &n, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, "bytes needed");
    CHECK(n > sizeof text && n != SENT64);
    CHECK_EQ_INT((unsigned char)text[0], SENT_BYTE);
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

/* No buffer is larger than PTRDIFF_MAX: a capacity beyond it is a
 * caller's bug, refused before anything is read or written. */
static void capacity_beyond_ptrdiff_max(void) {
    mooncake_meta_error *err = NULL;
    state s = setup();
    fingerprint before = take(s.m);
    unsigned char buf[64];
    memset(buf, SENT_BYTE, sizeof buf);
    size_t n = SENT64;
    uint64_t next = SENT64;
    CHECK_FAILS(mooncake_meta_snapshot_into(s.m, buf, SIZE_MAX, &n, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "capacity");
    CHECK_FAILS(mooncake_meta_metrics_prometheus_into(s.m, (char *)buf, SIZE_MAX, &n, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "capacity");
    CHECK_FAILS(mooncake_meta_segment_name(s.m, 1, (char *)buf, SIZE_MAX, &n, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "capacity");
    CHECK_FAILS(mooncake_meta_journal_read(s.m, 1, buf, SIZE_MAX, &n, &next, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "capacity");
    CHECK_EQ_INT(n, SENT64);
    CHECK_EQ_INT(next, SENT64);
    CHECK_EQ_INT(buf[0], SENT_BYTE);
    CHECK_EQ_INT(buf[sizeof buf - 1], SENT_BYTE);
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

/* An unmount report whose struct_size is garbage refuses the unmount: the
 * segment stays mounted. */
static void unmount_report_struct_size_too_large(void) {
    mooncake_meta_error *err = NULL;
    state s = setup();
    fingerprint before = take(s.m);
    mooncake_meta_unmount_report rep;
    memset(&rep, SENT_BYTE, sizeof rep);
    rep.struct_size = 1u << 20;
    CHECK_FAILS(mooncake_meta_unmount_segment(s.m, 1, "seg-a", strlen("seg-a"), &rep, &err),
                MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, err, "exceeds");
    CHECK_FAILS(mooncake_meta_unmount_client(s.m, 2, &rep, &err),
                MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, err, "exceeds");
    CHECK_EQ_INT(rep.struct_size, 1u << 20);
    CHECK_EQ_INT(rep.replicas_dropped, 0xa5a5a5a5a5a5a5a5ull);
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

static void corrupt_snapshot(void) {
    mooncake_meta_error *err = NULL;
    state s = setup();
    fingerprint before = take(s.m);
    size_t len = mooncake_meta_bytes_len(before.snapshot);
    unsigned char *bad = malloc(len);
    memcpy(bad, mooncake_meta_bytes_data(before.snapshot), len);
    bad[len / 2] ^= 0x01;
    mooncake_meta_restore_report r;
    memset(&r, SENT_BYTE, sizeof r);
    r.struct_size = sizeof r;
    CHECK_FAILS(mooncake_meta_restore(s.m, bad, len, &r, &err), MOONCAKE_META_DESERIALIZE_FAIL, err,
                "checksum mismatch");
    CHECK_FAILS(mooncake_meta_restore(s.m, bad, len - 1, &r, &err), MOONCAKE_META_DESERIALIZE_FAIL,
                err, "truncated payload");
    CHECK_FAILS(mooncake_meta_restore(s.m, NULL, 0, &r, &err), MOONCAKE_META_DESERIALIZE_FAIL, err,
                "truncated header: 0 of");
    CHECK_FAILS(mooncake_meta_restore(s.m, NULL, 10, &r, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                "data is NULL but its length is 10");
    CHECK_EQ_INT(r.candidate, 0xa5a5a5a5a5a5a5a5ull);
    CHECK_EQ_INT(r.struct_size, sizeof r);
    free(bad);
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

static void wrong_client(void) {
    mooncake_meta_error *err = NULL;
    state s = setup();
    fingerprint before = take(s.m);
    CHECK_FAILS(mooncake_meta_put_end(s.m, 2, FX_KEY("inflight"), MOONCAKE_META_SELECT_ALL,
                                      s.inflight_token, &err),
                MOONCAKE_META_ILLEGAL_CLIENT, err, "client 2 is not the writer");
    CHECK_FAILS(mooncake_meta_put_revoke(s.m, 2, FX_KEY("inflight"), MOONCAKE_META_SELECT_ALL, 0,
                                         &err),
                MOONCAKE_META_ILLEGAL_CLIENT, err, "client 2 is not the writer");
    CHECK_FAILS(mooncake_meta_upsert_end(s.m, 3, FX_KEY("upserted"), MOONCAKE_META_SELECT_ALL, 0,
                                         &err),
                MOONCAKE_META_ILLEGAL_CLIENT, err, "client 3 is not the writer of this object (writer 1)");
    CHECK_EQ_INT(fx_pending(s.m, "inflight"), 1); /* still in flight, its intent pending */
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

static void stale_token(void) {
    mooncake_meta_error *err = NULL;
    state s = setup();
    fingerprint before = take(s.m);
    CHECK_FAILS(mooncake_meta_upsert_end(s.m, 1, FX_KEY("upserted"), MOONCAKE_META_SELECT_ALL,
                                         s.old_token, &err),
                MOONCAKE_META_STALE_WRITE_TOKEN, err, "is not the current write's");
    CHECK_FAILS(mooncake_meta_upsert_revoke(s.m, 1, FX_KEY("upserted"), MOONCAKE_META_SELECT_ALL,
                                            s.old_token, &err),
                MOONCAKE_META_STALE_WRITE_TOKEN, err, "is not the current write's");
    CHECK_FAILS(mooncake_meta_put_end(s.m, 1, FX_KEY("inflight"), MOONCAKE_META_SELECT_ALL,
                                      s.upsert_token, &err),
                MOONCAKE_META_STALE_WRITE_TOKEN, err, "is not the current write's");
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

static void clock_set_backwards(void) {
    mooncake_meta_error *err = NULL;
    state s = setup();
    fingerprint before = take(s.m);
    uint64_t now = fx_now(s.m), out = SENT64;
    CHECK_FAILS(mooncake_meta_master_set_time(s.m, now - 1, &err), MOONCAKE_META_CLOCK_UNSUPPORTED,
                err, "manual clock is monotonic");
    CHECK_FAILS(mooncake_meta_master_set_time(s.m, 0, &err), MOONCAKE_META_CLOCK_UNSUPPORTED, err,
                "cannot set 0 before current");
    CHECK_FAILS(mooncake_meta_master_set_time(s.m, (uint64_t)INT64_MAX, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "cannot reach MAX_INSTANT");
    CHECK_FAILS(mooncake_meta_master_advance_time(s.m, UINT64_MAX, &out, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "would reach MAX_INSTANT");
    CHECK_EQ_INT(out, SENT64);
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

/* Maintenance arguments: NaN ratios, instants beyond MAX_INSTANT, bad booleans. */
static void maintenance_arguments(void) {
    mooncake_meta_error *err = NULL;
    state s = setup();
    fingerprint before = take(s.m);
    mooncake_meta_cleanup_stats cs;
    memset(&cs, SENT_BYTE, sizeof cs);
    cs.struct_size = sizeof cs;
    uint64_t n = SENT64;
    int ran = SENT_INT;
    CHECK_FAILS(mooncake_meta_run_eviction(s.m, NAN, 0.0, NULL, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "target must be in [0, 1]");
    CHECK_FAILS(mooncake_meta_run_cleanup_at(s.m, UINT64_MAX, &cs, &err), MOONCAKE_META_INVALID_PARAMS,
                err, "beyond MAX_INSTANT");
    /* (The stale-write sweep takes any instant: test_soft_pin.c.) */
    CHECK_FAILS(mooncake_meta_release_discarded_at(s.m, UINT64_MAX, &n, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "beyond MAX_INSTANT");
    CHECK_FAILS(mooncake_meta_evict_if_needed(s.m, -1, &ran, NULL, &err), MOONCAKE_META_INVALID_PARAMS,
                err, "force must be 0 or 1");
    CHECK_FAILS(mooncake_meta_remove(s.m, FX_KEY("pinned"), 2, &err), MOONCAKE_META_INVALID_PARAMS,
                err, "force");
    CHECK(n == SENT64 && ran == SENT_INT);
    CHECK_EQ_INT(cs.expired, 0xa5a5a5a5a5a5a5a5ull);
    CHECK_UNCHANGED(s.m, before);
    teardown(&s);
}

int main(void) {
    RUN_TEST(null_handle);
    RUN_TEST(null_key_with_a_length);
    RUN_TEST(invalid_utf8_key);
    RUN_TEST(soft_pin_action_255);
    RUN_TEST(soft_pin_ttl_above_the_maximum);
    RUN_TEST(preserve_with_a_ttl);
    RUN_TEST(struct_size_too_small);
    RUN_TEST(struct_size_too_large_with_a_non_zero_tail);
    RUN_TEST(unknown_flag_bit);
    RUN_TEST(buffer_too_small);
    RUN_TEST(capacity_beyond_ptrdiff_max);
    RUN_TEST(unmount_report_struct_size_too_large);
    RUN_TEST(corrupt_snapshot);
    RUN_TEST(wrong_client);
    RUN_TEST(stale_token);
    RUN_TEST(clock_set_backwards);
    RUN_TEST(maintenance_arguments);
    return check_summary("test_bad_input");
}
