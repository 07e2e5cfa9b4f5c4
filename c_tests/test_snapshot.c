/* Snapshots from C (docs/CONTRACT.md section 6): library-owned bytes, the
 * caller-buffer convention, atomic files, restore from one buffer, from
 * candidate buffers and from candidate files, with the report saying what
 * happened; and the Prometheus text through both buffer styles. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, unlink, rmdir */
#include <stdio.h>
#include <unistd.h>

#include "fixture.h"

/* A master with three objects: pinned, hard-pinned, and ordinary-but-leased
 * (so all three survive a restore at the same instant). */
static mooncake_meta_master *populated(void) {
    mooncake_meta_master *m = fx_master(NULL);
    fx_mount(m, 1, "seg-a", 1 << 20);
    fx_mount(m, 2, "seg-b", 1 << 20);
    mooncake_meta_write_config pin = fx_enable(60000), hard = fx_config(1), two = fx_config(2);
    hard.flags |= MOONCAKE_META_WRITE_HARD_PIN;
    fx_put(m, 1, "pinned", 4096, &pin);
    fx_put(m, 1, "hard", 8192, &hard);
    fx_put(m, 2, "leased", 16384, &two);
    CHECK_EQ_INT(fx_exists(m, "leased"), 1);
    return m;
}

static mooncake_meta_restore_report restore_report(void) {
    mooncake_meta_restore_report r;
    memset(&r, 0xcd, sizeof r);
    r.struct_size = sizeof r;
    return r;
}

/* 6: restore replaces the state; snapshot(restore(s)) == s when nothing is dropped. */
static void restore_round_trip_is_canonical(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *a = populated();
    mooncake_meta_bytes *s = fx_snapshot(a);
    CHECK(mooncake_meta_bytes_len(s) > 0);

    mooncake_meta_master *b = fx_master(NULL);
    mooncake_meta_restore_report r = restore_report();
    CHECK_OK(mooncake_meta_restore(b, mooncake_meta_bytes_data(s), mooncake_meta_bytes_len(s), &r,
                                   &err),
             err);
    CHECK_EQ_INT(r.struct_size, sizeof r);
    CHECK_EQ_INT(r.candidate, 0);
    CHECK_EQ_INT(r.created_at, FX_START_MS);
    CHECK_EQ_INT(r.objects_restored, 3);
    CHECK_EQ_INT(r.objects_dropped, 0);
    CHECK_EQ_INT(r.soft_pins_restored, 1);
    CHECK_EQ_INT(r.soft_pins_normalised, 0);
    CHECK_EQ_INT(r.candidates_rejected, 0);
    CHECK_EQ_INT(fx_deadline(b, "pinned"), FX_START_MS + 60000);

    mooncake_meta_bytes *again = fx_snapshot(b);
    CHECK(fx_bytes_equal(s, again));
    mooncake_meta_metrics_snapshot ma = fx_metrics(a), mb = fx_metrics(b);
    CHECK_EQ_INT(mb.key_count, 3);
    CHECK_EQ_INT(mb.soft_pin_key_count, 1);
    CHECK_EQ_INT(mb.index_live_registrations, 1);
    CHECK_EQ_INT(mb.memory_allocated_bytes, ma.memory_allocated_bytes);
    CHECK_EQ_INT(mb.segment_count, 2);
    fx_check_invariants(b);
    mooncake_meta_bytes_free(again);
    mooncake_meta_bytes_free(s);
    mooncake_meta_master_free(a);
    mooncake_meta_master_free(b);
}

/* 6 survival: at a later restoring now, the expired pin is normalised and
 * the object with neither lease, pin nor hard pin is dropped. */
static void restore_applies_the_survival_rule_at_the_restoring_now(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *a = populated();
    mooncake_meta_bytes *s = fx_snapshot(a);
    mooncake_meta_master *b = fx_master(NULL);
    CHECK_OK(mooncake_meta_master_set_time(b, FX_START_MS + 120000, &err), err);
    mooncake_meta_restore_report r = restore_report();
    CHECK_OK(mooncake_meta_restore(b, mooncake_meta_bytes_data(s), mooncake_meta_bytes_len(s), &r,
                                   &err),
             err);
    CHECK_EQ_INT(r.objects_restored, 1); /* only the hard-pinned one */
    CHECK_EQ_INT(r.objects_dropped, 2);
    CHECK_EQ_INT(r.soft_pins_restored, 0);
    CHECK_EQ_INT(fx_metrics(b).soft_pin_key_count, 0);
    CHECK_EQ_INT(fx_metrics(b).key_count, 1);
    fx_check_invariants(b);
    mooncake_meta_bytes_free(s);
    mooncake_meta_master_free(a);
    mooncake_meta_master_free(b);
}

/* BUFFER_TOO_SMALL: the needed length reported, nothing else written. */
static void snapshot_into_reports_the_length_needed(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = populated();
    mooncake_meta_bytes *s = fx_snapshot(m);
    size_t need = mooncake_meta_bytes_len(s), len = 0;
    CHECK_FAILS(mooncake_meta_snapshot_into(m, NULL, 0, &len, &err), MOONCAKE_META_BUFFER_TOO_SMALL,
                err, "bytes needed");
    CHECK_EQ_INT(len, need);
    unsigned char *buf = malloc(need + 8);
    memset(buf, 0x77, need + 8);
    len = 0;
    CHECK_FAILS(mooncake_meta_snapshot_into(m, buf, need - 1, &len, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, NULL);
    CHECK_EQ_INT(len, need);
    CHECK_EQ_INT(buf[0], 0x77);
    CHECK_OK(mooncake_meta_snapshot_into(m, buf, need + 8, &len, &err), err);
    CHECK_EQ_INT(len, need);
    CHECK(memcmp(buf, mooncake_meta_bytes_data(s), need) == 0);
    CHECK_EQ_INT(buf[need], 0x77);
    CHECK_FAILS(mooncake_meta_snapshot_into(m, NULL, 16, &len, &err), MOONCAKE_META_NULL_ARGUMENT,
                err, "buf is NULL but its capacity is 16");
    CHECK_FAILS(mooncake_meta_snapshot_into(m, buf, need, NULL, &err), MOONCAKE_META_NULL_ARGUMENT,
                err, "out_len");
    free(buf);
    mooncake_meta_bytes_free(s);
    mooncake_meta_master_free(m);
}

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f == NULL) return;
    CHECK_EQ_INT(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* Atomic save, then restore from files: newest valid wins; a missing file
 * and a truncated one are failed candidates. */
static void restore_files_takes_the_newest_valid_file(void) {
    mooncake_meta_error *err = NULL;
    char dir[] = "/tmp/mooncake_meta_snapXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char older[128], newer[128], truncated[128], missing[128];
    snprintf(older, sizeof older, "%s/older.snap", dir);
    snprintf(newer, sizeof newer, "%s/newer.snap", dir);
    snprintf(truncated, sizeof truncated, "%s/truncated.snap", dir);
    snprintf(missing, sizeof missing, "%s/missing.snap", dir);

    mooncake_meta_master *a = populated();
    CHECK_OK(mooncake_meta_snapshot_save(a, older, &err), err);
    fx_advance(a, 1000);
    fx_put(a, 1, "later", 4096, NULL);
    CHECK_EQ_INT(fx_exists(a, "later"), 1);
    CHECK_OK(mooncake_meta_snapshot_save(a, newer, &err), err);
    mooncake_meta_bytes *s = fx_snapshot(a);
    write_file(truncated, mooncake_meta_bytes_data(s), mooncake_meta_bytes_len(s) / 2);

    mooncake_meta_master *b = fx_master(NULL);
    CHECK_OK(mooncake_meta_master_set_time(b, FX_START_MS + 1000, &err), err);
    const char *paths[] = {missing, older, truncated, newer};
    mooncake_meta_restore_report r = restore_report();
    CHECK_OK(mooncake_meta_restore_files(b, paths, 4, &r, &err), err);
    CHECK_EQ_INT(r.candidate, 3);
    CHECK_EQ_INT(r.created_at, FX_START_MS + 1000);
    CHECK_EQ_INT(r.candidates_rejected, 2); /* missing, truncated; older never tried */
    CHECK_EQ_INT(fx_metrics(b).key_count, 4);
    mooncake_meta_bytes *restored = fx_snapshot(b);
    CHECK(fx_bytes_equal(s, restored)); /* the file holds exactly the snapshot */
    fx_check_invariants(b);

    /* Without the newest, the older file wins. */
    const char *fallback[] = {truncated, older};
    CHECK_OK(mooncake_meta_restore_files(b, fallback, 2, &r, &err), err);
    CHECK_EQ_INT(r.candidate, 1);
    CHECK_EQ_INT(r.created_at, FX_START_MS);

    unlink(older);
    unlink(newer);
    unlink(truncated);
    rmdir(dir);
    mooncake_meta_bytes_free(restored);
    mooncake_meta_bytes_free(s);
    mooncake_meta_master_free(a);
    mooncake_meta_master_free(b);
}

/* Every candidate failing: DESERIALIZE_FAIL naming each one's reason, the
 * read error included; the master is unchanged. */
static void failed_restore_names_every_candidate_and_changes_nothing(void) {
    mooncake_meta_error *err = NULL;
    char dir[] = "/tmp/mooncake_meta_snapXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char garbage[128], missing[128];
    snprintf(garbage, sizeof garbage, "%s/garbage.snap", dir);
    snprintf(missing, sizeof missing, "%s/missing.snap", dir);
    write_file(garbage, "definitely not a snapshot, but long enough to have a header", 60);

    mooncake_meta_master *m = populated();
    mooncake_meta_bytes *before = fx_snapshot(m);
    const char *paths[] = {missing, garbage};
    mooncake_meta_restore_report r = restore_report();
    mooncake_meta_status st = mooncake_meta_restore_files(m, paths, 2, &r, &err);
    CHECK_EQ_INT(st, MOONCAKE_META_DESERIALIZE_FAIL);
    if (err != NULL) {
        const char *msg = mooncake_meta_error_message(err);
        CHECK_CONTAINS(msg, "candidate 0: reading snapshot ");
        CHECK_CONTAINS(msg, "missing.snap");
        /* judged from its header, before the rest is read */
        CHECK_CONTAINS(msg, "candidate 1: reading snapshot ");
        CHECK_CONTAINS(msg, "garbage.snap: bad magic");
    }
    mooncake_meta_error_free(err);
    err = NULL;
    CHECK_EQ_INT(r.candidate, 0xcdcdcdcdcdcdcdcdull);
    mooncake_meta_bytes *after = fx_snapshot(m);
    CHECK(fx_bytes_equal(before, after));

    CHECK_FAILS(mooncake_meta_restore_files(m, NULL, 0, &r, &err), MOONCAKE_META_DESERIALIZE_FAIL,
                err, "no snapshot candidate");
    CHECK_FAILS(mooncake_meta_restore_files(m, NULL, 2, &r, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                "paths is NULL but count is 2");
    const char *with_null[] = {garbage, NULL};
    CHECK_FAILS(mooncake_meta_restore_files(m, with_null, 2, &r, &err), MOONCAKE_META_NULL_ARGUMENT,
                err, "paths[1]");
    unlink(garbage);
    rmdir(dir);
    mooncake_meta_bytes_free(before);
    mooncake_meta_bytes_free(after);
    mooncake_meta_master_free(m);
}

/* Candidate buffers: tried newest first by stored creation instant. */
static void restore_candidates_reports_which_buffer_won(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *a = populated();
    mooncake_meta_bytes *old = fx_snapshot(a);
    fx_advance(a, 500);
    mooncake_meta_bytes *young = fx_snapshot(a);
    unsigned char *corrupt = malloc(mooncake_meta_bytes_len(young));
    memcpy(corrupt, mooncake_meta_bytes_data(young), mooncake_meta_bytes_len(young));
    corrupt[mooncake_meta_bytes_len(young) - 1] ^= 0xff; /* breaks the checksum */

    mooncake_meta_master *b = fx_master(NULL);
    CHECK_OK(mooncake_meta_master_set_time(b, FX_START_MS + 500, &err), err);
    const uint8_t *datas[] = {mooncake_meta_bytes_data(old), corrupt, mooncake_meta_bytes_data(young)};
    size_t lens[] = {mooncake_meta_bytes_len(old), mooncake_meta_bytes_len(young),
                     mooncake_meta_bytes_len(young)};
    mooncake_meta_restore_report r = restore_report();
    CHECK_OK(mooncake_meta_restore_candidates(b, datas, lens, 3, &r, &err), err);
    CHECK_EQ_INT(r.candidate, 2);
    CHECK_EQ_INT(r.created_at, FX_START_MS + 500);
    CHECK_OK(mooncake_meta_restore_candidates(b, datas, lens, 2, &r, &err), err);
    CHECK_EQ_INT(r.candidate, 0);
    CHECK(r.candidates_rejected >= 1);
    CHECK_FAILS(mooncake_meta_restore_candidates(b, datas + 1, lens + 1, 1, NULL, &err),
                MOONCAKE_META_DESERIALIZE_FAIL, err, "candidate 0: ");
    CHECK_FAILS(mooncake_meta_restore_candidates(b, datas, NULL, 3, NULL, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "lens is NULL");
    free(corrupt);
    mooncake_meta_bytes_free(old);
    mooncake_meta_bytes_free(young);
    mooncake_meta_master_free(a);
    mooncake_meta_master_free(b);
}

/* An I/O failure is SERIALIZE_FAIL and leaves nothing behind. */
static void snapshot_save_to_a_missing_directory_fails(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = populated();
    CHECK_FAILS(mooncake_meta_snapshot_save(m, "/nonexistent-dir-for-mooncake/x.snap", &err),
                MOONCAKE_META_SERIALIZE_FAIL, err, "/nonexistent-dir-for-mooncake/x.snap");
    CHECK_FAILS(mooncake_meta_snapshot_save(m, NULL, &err), MOONCAKE_META_NULL_ARGUMENT, err, "path");
    CHECK_FAILS(mooncake_meta_snapshot_save(m, "", &err), MOONCAKE_META_INVALID_PARAMS, err,
                "path is empty");
    mooncake_meta_master_free(m);
}

/* Library-owned bytes carry a NUL after the content; the caller-buffer
 * variant follows the BUFFER_TOO_SMALL convention. */
static void prometheus_text_in_both_buffer_styles(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = populated();
    mooncake_meta_bytes *text = NULL;
    CHECK_OK(mooncake_meta_metrics_prometheus(m, &text, &err), err);
    const char *t = (const char *)mooncake_meta_bytes_data(text);
    size_t n = mooncake_meta_bytes_len(text);
    CHECK_EQ_INT(strlen(t), n);
    CHECK_CONTAINS(t, "\nmaster_key_count 3\n");
    CHECK_CONTAINS(t, "\nmaster_soft_pin_key_count 1\n");
    /* Per-segment usage (placement is the allocator's choice: the sum is known). */
    unsigned long long a = 0, b = 0;
    const char *pa = strstr(t, "master_segment_allocated_bytes{segment=\"seg-a\",pool=\"memory\"} ");
    const char *pb = strstr(t, "master_segment_allocated_bytes{segment=\"seg-b\",pool=\"memory\"} ");
    CHECK(pa != NULL && pb != NULL);
    if (pa && pb) {
        CHECK_EQ_INT(sscanf(strchr(pa, '}') + 1, "%llu", &a), 1);
        CHECK_EQ_INT(sscanf(strchr(pb, '}') + 1, "%llu", &b), 1);
    }
    CHECK_EQ_INT(a + b, 4096 + 8192 + 2 * 16384);

    size_t len = 0;
    CHECK_FAILS(mooncake_meta_metrics_prometheus_into(m, NULL, 0, &len, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, NULL);
    CHECK_EQ_INT(len, n);
    char *buf = malloc(n + 1);
    memset(buf, '#', n + 1);
    CHECK_FAILS(mooncake_meta_metrics_prometheus_into(m, buf, n - 1, &len, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, NULL);
    CHECK_EQ_INT(buf[0], '#');
    CHECK_OK(mooncake_meta_metrics_prometheus_into(m, buf, n, &len, &err), err);
    CHECK_EQ_INT(len, n);
    CHECK(memcmp(buf, t, n) == 0);
    CHECK_EQ_INT(buf[n], '#'); /* no NUL written */
    free(buf);
    mooncake_meta_bytes_free(text);
    mooncake_meta_bytes_free(NULL);
    CHECK(mooncake_meta_bytes_data(NULL) == NULL);
    CHECK_EQ_INT(mooncake_meta_bytes_len(NULL), 0);
    mooncake_meta_master_free(m);
}

/* A restore report too small for version 1 fails before anything is restored. */
static void restore_report_size_is_checked_first(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *a = populated();
    mooncake_meta_bytes *s = fx_snapshot(a);
    mooncake_meta_master *b = fx_master(NULL);
    mooncake_meta_restore_report r = restore_report();
    r.struct_size = 16;
    CHECK_FAILS(mooncake_meta_restore(b, mooncake_meta_bytes_data(s), mooncake_meta_bytes_len(s), &r,
                                      &err),
                MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, err, "out->struct_size 16");
    CHECK_EQ_INT(fx_metrics(b).key_count, 0);
    CHECK_OK(mooncake_meta_restore(b, mooncake_meta_bytes_data(s), mooncake_meta_bytes_len(s), NULL,
                                   &err),
             err);
    CHECK_EQ_INT(fx_metrics(b).key_count, 3);
    mooncake_meta_bytes_free(s);
    mooncake_meta_master_free(a);
    mooncake_meta_master_free(b);
}

int main(void) {
    RUN_TEST(restore_round_trip_is_canonical);
    RUN_TEST(restore_applies_the_survival_rule_at_the_restoring_now);
    RUN_TEST(snapshot_into_reports_the_length_needed);
    RUN_TEST(restore_files_takes_the_newest_valid_file);
    RUN_TEST(failed_restore_names_every_candidate_and_changes_nothing);
    RUN_TEST(restore_candidates_reports_which_buffer_won);
    RUN_TEST(snapshot_save_to_a_missing_directory_fails);
    RUN_TEST(prometheus_text_in_both_buffer_styles);
    RUN_TEST(restore_report_size_is_checked_first);
    return check_summary("test_snapshot");
}
