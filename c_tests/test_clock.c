/* The master's timeline from C (docs/CONTRACT.md sections 1, 6 and 10):
 * instants are on a timeline anchored to the Unix epoch at creation and then
 * monotonic; the wall clock is read only for the skew metric and for
 * snapshots. A manual clock drives both together unless
 * mooncake_meta_master_set_wall_time sets the wall apart, which is how these
 * tests step the wall: no deadline and no cleanup decision moves, the skew
 * does, and a restore shifts every stored instant by the change in skew.
 * Also the two size-versioned structs that grew a field (the metrics and
 * the restore report): their version-1 sizes are still accepted. */
#include <limits.h>
#include <stddef.h>
#include <time.h>

#include "fixture.h"

#define HOUR 3600000ll
#define DAY (24 * HOUR)

/* The version-1 layouts are frozen; version 2 appends one int64_t each. */
_Static_assert(offsetof(mooncake_meta_metrics_snapshot, clock_skew_ms) == 192,
               "clock_skew_ms follows the 192 bytes of version 1");
_Static_assert(offsetof(mooncake_meta_metrics_snapshot, retained_group_count) == 200,
               "retained_group_count (version 3) follows the 200 bytes of version 2");
_Static_assert(offsetof(mooncake_meta_metrics_snapshot, journal_records_appended) == 208,
               "the journal figures (version 4) follow the 208 bytes of version 3");
_Static_assert(sizeof(mooncake_meta_metrics_snapshot) == 264, "metrics version 4 is 264 bytes");
_Static_assert(offsetof(mooncake_meta_restore_report, clock_shift_ms) == 72,
               "clock_shift_ms follows the 72 bytes of version 1");
_Static_assert(sizeof(mooncake_meta_restore_report) == 80, "restore report version 2 is 80 bytes");

static uint64_t wall_of(mooncake_meta_master *m) {
    mooncake_meta_error *err = NULL;
    uint64_t wall = 1;
    CHECK_OK(mooncake_meta_master_wall_time(m, &wall, &err), err);
    return wall;
}

static void set_wall(mooncake_meta_master *m, uint64_t wall_ms) {
    mooncake_meta_error *err = NULL;
    CHECK_OK(mooncake_meta_master_set_wall_time(m, wall_ms, &err), err);
}

static int64_t skew_of(mooncake_meta_master *m) { return fx_metrics(m).clock_skew_ms; }

/* The Prometheus text holds the line "master_clock_skew_ms <skew>". */
static void check_prometheus_skew(mooncake_meta_master *m, int64_t skew) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_bytes *b = NULL;
    char line[64];
    snprintf(line, sizeof line, "\nmaster_clock_skew_ms %lld\n", (long long)skew);
    CHECK_OK(mooncake_meta_metrics_prometheus(m, &b, &err), err);
    if (b != NULL) CHECK_CONTAINS((const char *)mooncake_meta_bytes_data(b), line);
    mooncake_meta_bytes_free(b);
}

/* The soft-pin cleanup cycle at `at_ms` (0: at the clock's now); returns
 * how many pins it cleared. */
static uint64_t cleanup(mooncake_meta_master *m, uint64_t at_ms) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_cleanup_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    if (at_ms == 0)
        CHECK_OK(mooncake_meta_run_cleanup(m, &s, &err), err);
    else
        CHECK_OK(mooncake_meta_run_cleanup_at(m, at_ms, &s, &err), err);
    return s.expired;
}

/* A read of `key`, which takes a lease on it. */
static void read_key(mooncake_meta_master *m, const char *key) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_replica r[4];
    size_t n = 0;
    CHECK_OK(mooncake_meta_get_replica_list(m, FX_KEY(key), r, 4, &n, &err), err);
    CHECK(n >= 1);
}

/* A master reading the system clock, background tasks off. */
static mooncake_meta_master *system_master(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = NULL;
    mooncake_meta_master *m = NULL;
    CHECK_OK(mooncake_meta_config_new(&cfg, &err), err);
    CHECK_OK(mooncake_meta_config_set_system_clock(cfg, &err), err);
    CHECK_OK(mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_sweep_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_shard_count(cfg, 4, &err), err);
    CHECK_OK(mooncake_meta_master_new(cfg, &m, &err), err);
    mooncake_meta_config_free(cfg);
    if (m == NULL) {
        fprintf(stderr, "test_clock: could not create a system-clock master\n");
        exit(EXIT_FAILURE);
    }
    return m;
}

/* The operating system's real-time clock, in ms since the epoch. */
static uint64_t os_wall_ms(void) {
    struct timespec ts;
    CHECK(timespec_get(&ts, TIME_UTC) == TIME_UTC);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* 1: a manual clock drives the timeline and the wall together (skew 0). */
static void manual_clock_moves_timeline_and_wall_together(void) {
    mooncake_meta_master *m = fx_master(NULL);
    CHECK_EQ_INT(wall_of(m), FX_START_MS);
    CHECK_EQ_INT(skew_of(m), 0);
    CHECK_EQ_INT(fx_advance(m, 5000), FX_START_MS + 5000);
    CHECK_EQ_INT(wall_of(m), FX_START_MS + 5000);
    CHECK_EQ_INT(skew_of(m), 0);
    check_prometheus_skew(m, 0);
    mooncake_meta_master_free(m);
}

/* 1, 10: setting the wall apart moves the wall and the skew, never `now`
 * nor a stored deadline; the wall keeps its distance as the clock moves. */
static void set_wall_time_moves_the_skew_and_no_instant(void) {
    mooncake_meta_master *m = fx_master(NULL);
    fx_mount(m, 1, "seg-a", 1 << 20);
    mooncake_meta_write_config pin = fx_enable(60000);
    fx_put(m, 1, "pinned", 4096, &pin);

    set_wall(m, FX_START_MS + HOUR);
    CHECK_EQ_INT(fx_now(m), FX_START_MS);
    CHECK_EQ_INT(wall_of(m), FX_START_MS + HOUR);
    CHECK_EQ_INT(skew_of(m), -HOUR);
    check_prometheus_skew(m, -HOUR);
    CHECK_EQ_INT(fx_deadline(m, "pinned"), FX_START_MS + 60000);

    CHECK_EQ_INT(fx_advance(m, 1000), FX_START_MS + 1000);
    CHECK_EQ_INT(wall_of(m), FX_START_MS + HOUR + 1000);
    CHECK_EQ_INT(skew_of(m), -HOUR);

    /* Backwards, by a day from the timeline: the skew changes sign. */
    set_wall(m, FX_START_MS + 1000 - DAY);
    CHECK_EQ_INT(wall_of(m), FX_START_MS + 1000 - DAY);
    CHECK_EQ_INT(skew_of(m), DAY);
    check_prometheus_skew(m, DAY);
    CHECK_EQ_INT(fx_now(m), FX_START_MS + 1000);
    CHECK_EQ_INT(fx_deadline(m, "pinned"), FX_START_MS + 60000);

    /* The ends of the range are walls too. */
    set_wall(m, 0);
    CHECK_EQ_INT(wall_of(m), 0);
    CHECK_EQ_INT(skew_of(m), FX_START_MS + 1000);
    set_wall(m, (uint64_t)INT64_MAX - 1);
    CHECK_EQ_INT(wall_of(m), INT64_MAX - 1);
    CHECK_EQ_INT(skew_of(m), (int64_t)(FX_START_MS + 1000) - (INT64_MAX - 1));
    CHECK_EQ_INT(fx_now(m), FX_START_MS + 1000);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

/* Bad input: a clear code and message, and the master is unchanged. */
static void set_wall_time_rejects_bad_input_and_changes_nothing(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = fx_master(NULL);
    uint64_t wall = 7;
    set_wall(m, FX_START_MS + HOUR);

    CHECK_FAILS(mooncake_meta_master_set_wall_time(m, (uint64_t)INT64_MAX, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "must be below MAX_INSTANT");
    CHECK_FAILS(mooncake_meta_master_set_wall_time(m, UINT64_MAX, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "18446744073709551615");
    /* Without an error slot: the status alone. */
    CHECK_EQ_INT(mooncake_meta_master_set_wall_time(m, UINT64_MAX, NULL),
                 MOONCAKE_META_INVALID_PARAMS);
    CHECK_EQ_INT(wall_of(m), FX_START_MS + HOUR);
    CHECK_EQ_INT(skew_of(m), -HOUR);
    CHECK_EQ_INT(fx_now(m), FX_START_MS);

    CHECK_FAILS(mooncake_meta_master_wall_time(m, NULL, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                "out_wall");
    CHECK_FAILS(mooncake_meta_master_wall_time(NULL, &wall, &err), MOONCAKE_META_NULL_ARGUMENT,
                err, "mooncake_meta_master_wall_time: master is NULL");
    CHECK_EQ_INT(wall, 7);
    CHECK_FAILS(mooncake_meta_master_set_wall_time(NULL, FX_START_MS, &err),
                MOONCAKE_META_NULL_ARGUMENT, err,
                "mooncake_meta_master_set_wall_time: master is NULL");
    CHECK_EQ_INT(wall_of(m), FX_START_MS + HOUR);
    mooncake_meta_master_free(m);
}

/* A system-clock master: its wall is the operating system's, which cannot
 * be set (CLOCK_UNSUPPORTED, nothing changes); its skew is what drifted
 * since creation (milliseconds here, far below an hour). */
static void system_master_reads_the_os_wall_and_refuses_set_wall_time(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = system_master();
    uint64_t before = os_wall_ms();
    uint64_t wall = wall_of(m);
    uint64_t after = os_wall_ms();
    CHECK(before <= wall && wall <= after);
    CHECK(wall > 1600000000000ull);
    int64_t skew = skew_of(m);
    CHECK(skew > -HOUR && skew < HOUR);

    CHECK_FAILS(mooncake_meta_master_set_wall_time(m, wall + (uint64_t)DAY, &err),
                MOONCAKE_META_CLOCK_UNSUPPORTED, err, "system clock");
    CHECK_FAILS(mooncake_meta_master_set_wall_time(m, UINT64_MAX, &err),
                MOONCAKE_META_CLOCK_UNSUPPORTED, err, NULL);
    skew = skew_of(m);
    CHECK(skew > -HOUR && skew < HOUR);
    CHECK(wall_of(m) >= wall);
    mooncake_meta_master_free(m);
}

/* Version 1 of the metrics struct (192 bytes, no clock_skew_ms) is still
 * accepted: the library fills 192 bytes, says so, and writes nothing past
 * them; a version-2 caller gets 200 bytes, a version-3 caller 208, a
 * version-4 caller 264. */
static void metrics_v1_struct_is_still_accepted(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = fx_master(NULL);
    fx_mount(m, 1, "seg-a", 1 << 20);
    fx_put(m, 1, "k", 4096, NULL);
    set_wall(m, FX_START_MS + HOUR);

    mooncake_meta_metrics_snapshot s;
    memset(&s, 0xab, sizeof s);
    s.struct_size = 192;
    CHECK_OK(mooncake_meta_metrics(m, &s, &err), err);
    CHECK_EQ_INT(s.struct_size, 192);
    CHECK_EQ_INT(s.key_count, 1);
    CHECK_EQ_INT(s.segment_count, 1);
    CHECK_EQ_INT((uint64_t)s.clock_skew_ms, 0xababababababababull); /* untouched */

    memset(&s, 0xab, sizeof s);
    s.struct_size = 200;
    CHECK_OK(mooncake_meta_metrics(m, &s, &err), err);
    CHECK_EQ_INT(s.struct_size, 200);
    CHECK_EQ_INT(s.clock_skew_ms, -HOUR);
    CHECK_EQ_INT(s.retained_group_count, 0xababababababababull); /* untouched */

    memset(&s, 0xab, sizeof s);
    s.struct_size = 208;
    CHECK_OK(mooncake_meta_metrics(m, &s, &err), err);
    CHECK_EQ_INT(s.struct_size, 208);
    CHECK_EQ_INT(s.clock_skew_ms, -HOUR);
    CHECK_EQ_INT(s.retained_group_count, 0);
    CHECK_EQ_INT(s.journal_records_appended, 0xababababababababull); /* untouched */

    memset(&s, 0xab, sizeof s);
    s.struct_size = sizeof s;
    CHECK_OK(mooncake_meta_metrics(m, &s, &err), err);
    CHECK_EQ_INT(s.struct_size, 264);
    CHECK_EQ_INT(s.retained_group_count, 0);
    CHECK_EQ_INT(s.journal_records_appended, 0); /* no journal */
    CHECK_EQ_INT(s.journal_last_seq, 0);
    CHECK_EQ_INT(s.standby, 0);
    CHECK_EQ_INT(s.journal_applied_seq, 0);

    /* One byte short of version 1 is refused and writes nothing. */
    memset(&s, 0xab, sizeof s);
    s.struct_size = 191;
    CHECK_FAILS(mooncake_meta_metrics(m, &s, &err), MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, err,
                "struct_size 191 is below the smallest supported size 192");
    CHECK_EQ_INT(s.struct_size, 191);
    CHECK_EQ_INT(s.key_count, 0xababababababababull);
    mooncake_meta_master_free(m);
}

/* A master holding a 10 h soft pin, a hard-pinned object and an object kept
 * only by a read lease (10 s, the default), at FX_START_MS, with its wall
 * at `wall_ms`. */
static mooncake_meta_master *populated_with_wall(uint64_t wall_ms) {
    mooncake_meta_master *m = fx_master(NULL);
    fx_mount(m, 1, "seg-a", 1 << 20);
    mooncake_meta_write_config pin = fx_enable(10 * HOUR), hard = fx_config(1);
    hard.flags |= MOONCAKE_META_WRITE_HARD_PIN;
    fx_put(m, 1, "pinned", 4096, &pin);
    fx_put(m, 1, "hard", 4096, &hard);
    fx_put(m, 1, "leased", 4096, NULL);
    read_key(m, "leased");
    set_wall(m, wall_ms);
    return m;
}

static mooncake_meta_restore_report restore_into(mooncake_meta_master *m,
                                                 const mooncake_meta_bytes *s) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_restore_report r;
    memset(&r, 0xcd, sizeof r);
    r.struct_size = sizeof r;
    CHECK_OK(mooncake_meta_restore(m, mooncake_meta_bytes_data(s), mooncake_meta_bytes_len(s), &r,
                                   &err),
             err);
    CHECK_EQ_INT(r.struct_size, sizeof r);
    return r;
}

/* 6: a snapshot taken with the wall an hour ahead of the timeline (skew
 * -1 h) restored on a plain manual master (skew 0): every stored instant
 * moves by +1 h, the report says so, and created_at stays on the capturing
 * master's timeline. */
static void restore_shifts_instants_by_the_change_in_skew(void) {
    mooncake_meta_master *a = populated_with_wall(FX_START_MS + HOUR);
    mooncake_meta_bytes *s = fx_snapshot(a);
    mooncake_meta_master *b = fx_master(NULL);
    mooncake_meta_restore_report r = restore_into(b, s);
    CHECK_EQ_INT(r.clock_shift_ms, HOUR);
    CHECK_EQ_INT(r.created_at, FX_START_MS);
    CHECK_EQ_INT(r.objects_restored, 3);
    CHECK_EQ_INT(r.objects_dropped, 0);
    CHECK_EQ_INT(r.soft_pins_restored, 1);
    CHECK_EQ_INT(fx_deadline(b, "pinned"), FX_START_MS + 10 * HOUR + HOUR);
    /* The shifted pin expires on the restoring timeline at its new deadline. */
    CHECK_EQ_INT(cleanup(b, FX_START_MS + 11 * HOUR - 1), 0);
    CHECK_EQ_INT(cleanup(b, FX_START_MS + 11 * HOUR), 1);
    fx_check_invariants(b);

    /* Both skews apart from 0: the shift is their difference (+1 h - -1 h). */
    mooncake_meta_master *c = fx_master(NULL);
    set_wall(c, FX_START_MS - HOUR);
    r = restore_into(c, s);
    CHECK_EQ_INT(r.clock_shift_ms, 2 * HOUR);
    CHECK_EQ_INT(fx_deadline(c, "pinned"), FX_START_MS + 12 * HOUR);
    fx_check_invariants(c);

    /* Equal skews restore verbatim, byte for byte. */
    mooncake_meta_master *d = fx_master(NULL);
    set_wall(d, FX_START_MS + HOUR);
    r = restore_into(d, s);
    CHECK_EQ_INT(r.clock_shift_ms, 0);
    CHECK_EQ_INT(fx_deadline(d, "pinned"), FX_START_MS + 10 * HOUR);
    mooncake_meta_bytes *again = fx_snapshot(d);
    CHECK(fx_bytes_equal(s, again));

    mooncake_meta_bytes_free(again);
    mooncake_meta_bytes_free(s);
    mooncake_meta_master_free(a);
    mooncake_meta_master_free(b);
    mooncake_meta_master_free(c);
    mooncake_meta_master_free(d);
}

/* 6: the survival rules apply after the shift. Captured with the wall an
 * hour behind (skew +1 h), restored at skew 0: every instant moves back an
 * hour, so the 10 s lease is over and its object is dropped, while the
 * pin (now 9 h) and the hard pin keep theirs. */
static void restore_applies_the_survival_rules_after_the_shift(void) {
    mooncake_meta_master *a = populated_with_wall(FX_START_MS - HOUR);
    mooncake_meta_bytes *s = fx_snapshot(a);
    mooncake_meta_master *b = fx_master(NULL);
    mooncake_meta_restore_report r = restore_into(b, s);
    CHECK_EQ_INT(r.clock_shift_ms, -HOUR);
    CHECK_EQ_INT(r.objects_restored, 2);
    CHECK_EQ_INT(r.objects_dropped, 1);
    CHECK_EQ_INT(fx_exists(b, "leased"), 0);
    CHECK_EQ_INT(fx_exists(b, "hard"), 1);
    CHECK_EQ_INT(fx_deadline(b, "pinned"), FX_START_MS + 9 * HOUR);
    CHECK_EQ_INT(fx_metrics(b).soft_pin_key_count, 1);
    fx_check_invariants(b);
    mooncake_meta_bytes_free(s);
    mooncake_meta_master_free(a);
    mooncake_meta_master_free(b);
}

/* Version 1 of the restore report (72 bytes, no clock_shift_ms) is still
 * accepted; nothing past its 72 bytes is written. */
static void restore_report_v1_struct_is_still_accepted(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *a = populated_with_wall(FX_START_MS + HOUR);
    mooncake_meta_bytes *s = fx_snapshot(a);
    mooncake_meta_master *b = fx_master(NULL);
    mooncake_meta_restore_report r;
    memset(&r, 0xcd, sizeof r);
    r.struct_size = 72;
    CHECK_OK(mooncake_meta_restore(b, mooncake_meta_bytes_data(s), mooncake_meta_bytes_len(s), &r,
                                   &err),
             err);
    CHECK_EQ_INT(r.struct_size, 72);
    CHECK_EQ_INT(r.created_at, FX_START_MS);
    CHECK_EQ_INT(r.objects_restored, 3);
    CHECK_EQ_INT(r.candidates_rejected, 0);
    CHECK_EQ_INT((uint64_t)r.clock_shift_ms, 0xcdcdcdcdcdcdcdcdull); /* untouched */
    /* The shift happened all the same. */
    CHECK_EQ_INT(fx_deadline(b, "pinned"), FX_START_MS + 11 * HOUR);

    /* Below version 1: refused before anything is restored. */
    mooncake_meta_master *c = fx_master(NULL);
    r.struct_size = 71;
    CHECK_FAILS(mooncake_meta_restore(c, mooncake_meta_bytes_data(s), mooncake_meta_bytes_len(s),
                                      &r, &err),
                MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, err, "struct_size 71");
    CHECK_EQ_INT(fx_metrics(c).key_count, 0);
    mooncake_meta_bytes_free(s);
    mooncake_meta_master_free(a);
    mooncake_meta_master_free(b);
    mooncake_meta_master_free(c);
}

/* 1, 4.8: a wall step, either way, changes no deadline and no cleanup
 * decision: a pin is due exactly at its deadline on the timeline, a read
 * lease still blocks a plain remove, whatever the wall says. */
static void wall_step_changes_no_deadline_and_no_cleanup_decision(void) {
    mooncake_meta_error *err = NULL;
    const int64_t steps[] = {HOUR, -HOUR, DAY, -DAY};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        mooncake_meta_master *m = fx_master(NULL);
        fx_mount(m, 1, "seg-a", 1 << 20);
        mooncake_meta_write_config pin = fx_enable(60000);
        fx_put(m, 1, "pinned", 4096, &pin);
        fx_put(m, 1, "leased", 4096, NULL);
        read_key(m, "leased");

        set_wall(m, (uint64_t)((int64_t)FX_START_MS + steps[i]));
        CHECK_EQ_INT(skew_of(m), -steps[i]);
        CHECK_EQ_INT(fx_now(m), FX_START_MS);
        CHECK_EQ_INT(fx_deadline(m, "pinned"), FX_START_MS + 60000);
        CHECK_EQ_INT(fx_pending(m, "pinned"), 0);
        CHECK_EQ_INT(cleanup(m, 0), 0);
        CHECK_EQ_INT(cleanup(m, FX_START_MS + 59999), 0);
        CHECK_FAILS(mooncake_meta_remove(m, FX_KEY("leased"), 0, &err),
                    MOONCAKE_META_OBJECT_HAS_LEASE, err, NULL);
        CHECK_EQ_INT(fx_metrics(m).soft_pin_key_count, 1);

        /* Step again, the other way, once the clock has moved. */
        fx_advance(m, 30000);
        set_wall(m, (uint64_t)((int64_t)FX_START_MS + 30000 - steps[i]));
        CHECK_EQ_INT(skew_of(m), steps[i]);
        CHECK_EQ_INT(fx_deadline(m, "pinned"), FX_START_MS + 60000);
        CHECK_EQ_INT(cleanup(m, 0), 0);

        /* Due on the timeline, exactly at the deadline. */
        fx_advance(m, 29999);
        CHECK_EQ_INT(cleanup(m, 0), 0);
        CHECK_EQ_INT(fx_deadline(m, "pinned"), FX_START_MS + 60000);
        fx_advance(m, 1);
        CHECK_EQ_INT(cleanup(m, 0), 1);
        CHECK_EQ_INT(fx_deadline(m, "pinned"), 0);
        CHECK_EQ_INT(fx_metrics(m).soft_pin_key_count, 0);
        /* The 10 s read lease ended 50 s ago: a plain remove now succeeds. */
        CHECK_OK(mooncake_meta_remove(m, FX_KEY("leased"), 0, &err), err);
        CHECK_EQ_INT(skew_of(m), steps[i]);
        fx_check_invariants(m);
        mooncake_meta_master_free(m);
    }
}

int main(void) {
    RUN_TEST(manual_clock_moves_timeline_and_wall_together);
    RUN_TEST(set_wall_time_moves_the_skew_and_no_instant);
    RUN_TEST(set_wall_time_rejects_bad_input_and_changes_nothing);
    RUN_TEST(system_master_reads_the_os_wall_and_refuses_set_wall_time);
    RUN_TEST(metrics_v1_struct_is_still_accepted);
    RUN_TEST(restore_shifts_instants_by_the_change_in_skew);
    RUN_TEST(restore_applies_the_survival_rules_after_the_shift);
    RUN_TEST(restore_report_v1_struct_is_still_accepted);
    RUN_TEST(wall_step_changes_no_deadline_and_no_cleanup_decision);
    return check_summary("test_clock");
}
