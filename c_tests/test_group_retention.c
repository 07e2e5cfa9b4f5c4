/* Group retention from C (docs/CONTRACT.md "Group retention"): per-group
 * results when the call is accepted, a bad shared argument (TTL, tenant)
 * failing every group, unusable arguments refusing the call unwritten,
 * (NULL, 0) as an empty batch, the admission limit, the deadline query, a
 * read that never extends a group, eviction skipping a retained group,
 * release, expiry by cleanup, the gauge, and the config setters. Manual
 * clock only. */
#include "fixture.h"

#define TTL 60000u

static mooncake_meta_master *retention_master(uint64_t max_groups) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = NULL;
    mooncake_meta_master *m = NULL;
    CHECK_OK(mooncake_meta_config_new(&cfg, &err), err);
    CHECK_OK(mooncake_meta_config_set_manual_clock(cfg, FX_START_MS, &err), err);
    CHECK_OK(mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_sweep_interval_ms(cfg, 0, &err), err);
    CHECK_OK(mooncake_meta_config_set_shard_count(cfg, 4, &err), err);
    CHECK_OK(mooncake_meta_config_set_max_retained_groups(cfg, max_groups, &err), err);
    CHECK_OK(mooncake_meta_config_set_max_group_retention_ttl_ms(cfg, 2 * TTL, &err), err);
    CHECK_OK(mooncake_meta_config_set_journal_capacity_bytes(cfg, 1 << 20, &err), err);
    CHECK_OK(mooncake_meta_master_new(cfg, &m, &err), err);
    mooncake_meta_config_free(cfg);
    if (m == NULL) exit(EXIT_FAILURE);
    fx_mount(m, 1, "seg-a", 1 << 20);
    return m;
}

/* Retains `n` groups of the default tenant; statuses and deadlines out. */
static mooncake_meta_status retain(mooncake_meta_master *m, const char *const *ids, size_t n,
                                   uint64_t ttl, int32_t *st, uint64_t *dl,
                                   mooncake_meta_error **err) {
    size_t lens[8];
    for (size_t i = 0; i < n; i++) lens[i] = strlen(ids[i]);
    return mooncake_meta_retain_groups(m, NULL, 0, ids, lens, n, ttl, st, dl, err);
}

static uint64_t group_deadline(mooncake_meta_master *m, const char *g) {
    mooncake_meta_error *err = NULL;
    int has = 7;
    uint64_t d = 7;
    CHECK_OK(mooncake_meta_group_retention_deadline(m, NULL, 0, g, strlen(g), &has, &d, &err), err);
    CHECK(has == 0 || has == 1);
    CHECK_EQ_INT(has ? d != 0 : d == 0, 1);
    return d;
}

static mooncake_meta_write_config in_group(const char *g) {
    mooncake_meta_write_config c = fx_config(1);
    c.group = g;
    return c;
}

static void per_group_results_are_written_when_the_call_is_accepted(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = retention_master(2);
    const char *ids[] = {"a", "", "b", "c"};
    int32_t st[4] = {7, 7, 7, 7};
    uint64_t dl[4] = {7, 7, 7, 7};
    CHECK_OK(retain(m, ids, 4, TTL, st, dl, &err), err);
    CHECK_EQ_INT(st[0], MOONCAKE_META_OK);
    CHECK_EQ_INT(st[1], MOONCAKE_META_INVALID_PARAMS);
    CHECK_EQ_INT(st[2], MOONCAKE_META_OK);
    CHECK_EQ_INT(st[3], MOONCAKE_META_GROUP_RETENTION_FULL);
    CHECK_STR_EQ(mooncake_meta_status_name(st[3]), "GROUP_RETENTION_FULL");
    CHECK_EQ_INT(dl[0], FX_START_MS + TTL);
    CHECK_EQ_INT(dl[1], 0);
    CHECK_EQ_INT(dl[3], 0);
    CHECK_EQ_INT(fx_metrics(m).retained_group_count, 2);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

/* A standby refuses the whole call before any shared argument is judged:
 * a tenant that is not UTF-8, a NUL in it or a bad TTL all get
 * UNAVAILABLE_IN_CURRENT_STATUS, nothing written (the core's order). */
static void a_standby_refuses_the_whole_call_first(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = NULL;
    mooncake_meta_master *m = NULL;
    CHECK_OK(mooncake_meta_config_new(&cfg, &err), err);
    CHECK_OK(mooncake_meta_config_set_manual_clock(cfg, FX_START_MS, &err), err);
    CHECK_OK(mooncake_meta_config_set_standby(cfg, 1, &err), err);
    CHECK_OK(mooncake_meta_master_new(cfg, &m, &err), err);
    mooncake_meta_config_free(cfg);
    const char *ids[] = {"a", "b"};
    size_t lens[2] = {1, 1};
    int32_t st[2] = {7, 7};
    uint64_t dl[2] = {7, 7};
    CHECK_FAILS(mooncake_meta_retain_groups(m, "\xff", 1, ids, lens, 2, TTL, st, dl, &err),
                MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS, err, "standby");
    CHECK_FAILS(mooncake_meta_retain_groups(m, "a\0b", 3, ids, lens, 2, 0, st, dl, &err),
                MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS, err, "standby");
    CHECK_FAILS(mooncake_meta_release_groups(m, "\xff", 1, ids, lens, 2, st, &err),
                MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS, err, "standby");
    CHECK_EQ_INT(st[0], 7);
    CHECK_EQ_INT(st[1], 7);
    CHECK_EQ_INT(dl[0], 7);
    mooncake_meta_master_free(m);
}

/* An id that is not UTF-8 fails only its own group (INVALID_UTF8, deadline
 * 0), as a batch's malformed key does; the others are retained or
 * released. */
static void an_id_that_is_not_utf8_fails_alone(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = retention_master(8);
    const char *ids[] = {"a", "\xff", "b"};
    size_t lens[3] = {1, 1, 1};
    int32_t st[3] = {7, 7, 7};
    uint64_t dl[3] = {7, 7, 7};
    CHECK_OK(mooncake_meta_retain_groups(m, NULL, 0, ids, lens, 3, TTL, st, dl, &err), err);
    CHECK_EQ_INT(st[0], MOONCAKE_META_OK);
    CHECK_EQ_INT(st[1], MOONCAKE_META_INVALID_UTF8);
    CHECK_EQ_INT(st[2], MOONCAKE_META_OK);
    CHECK_EQ_INT(dl[0], FX_START_MS + TTL);
    CHECK_EQ_INT(dl[1], 0);
    CHECK_EQ_INT(fx_metrics(m).retained_group_count, 2);
    st[0] = st[1] = st[2] = 7;
    CHECK_OK(mooncake_meta_release_groups(m, NULL, 0, ids, lens, 3, st, &err), err);
    CHECK_EQ_INT(st[0], MOONCAKE_META_OK);
    CHECK_EQ_INT(st[1], MOONCAKE_META_INVALID_UTF8);
    CHECK_EQ_INT(st[2], MOONCAKE_META_OK);
    CHECK_EQ_INT(fx_metrics(m).retained_group_count, 0);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

/* Every status is `code` and every deadline (when given) 0. */
static void check_each(const int32_t *st, const uint64_t *dl, size_t n, int32_t code) {
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ_INT(st[i], code);
        if (dl != NULL) CHECK_EQ_INT(dl[i], 0);
    }
}

static void shared_argument_errors_fail_every_group(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = retention_master(8);
    const char *ids[] = {"a", "b"};
    int32_t st[2] = {7, 7};
    uint64_t dl[2] = {7, 7};
    const char *first[] = {"a"};
    CHECK_OK(retain(m, first, 1, TTL, st, dl, &err), err);
    uint64_t seq = fx_metrics(m).journal_last_seq;
    /* A bad TTL: every group INVALID_PARAMS, deadline 0, the call too. */
    CHECK_FAILS(retain(m, ids, 2, 0, st, dl, &err), MOONCAKE_META_INVALID_PARAMS, err, "ttl");
    check_each(st, dl, 2, MOONCAKE_META_INVALID_PARAMS);
    st[0] = st[1] = 7;
    dl[0] = dl[1] = 7;
    CHECK_FAILS(retain(m, ids, 2, 2 * TTL + 1, st, dl, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "max_group_retention_ttl");
    check_each(st, dl, 2, MOONCAKE_META_INVALID_PARAMS);
    /* Even with no group. */
    CHECK_FAILS(mooncake_meta_retain_groups(m, NULL, 0, NULL, NULL, 0, 0, NULL, NULL, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "ttl");
    /* A bad tenant (a NUL in it): every group of a retain or a release. */
    size_t ids_lens[2] = {1, 1};
    st[0] = st[1] = 7;
    dl[0] = dl[1] = 7;
    CHECK_FAILS(mooncake_meta_retain_groups(m, "a\0b", 3, ids, ids_lens, 2, TTL, st, dl, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "tenant");
    check_each(st, dl, 2, MOONCAKE_META_INVALID_PARAMS);
    st[0] = st[1] = 7;
    CHECK_FAILS(mooncake_meta_release_groups(m, "a\0b", 3, ids, ids_lens, 2, st, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "tenant");
    check_each(st, NULL, 2, MOONCAKE_META_INVALID_PARAMS);
    /* A tenant that is not UTF-8: every group INVALID_UTF8, as a batch. */
    st[0] = st[1] = 7;
    dl[0] = dl[1] = 7;
    CHECK_FAILS(mooncake_meta_retain_groups(m, "\xff", 1, ids, ids_lens, 2, TTL, st, dl, &err),
                MOONCAKE_META_INVALID_UTF8, err, "tenant");
    check_each(st, dl, 2, MOONCAKE_META_INVALID_UTF8);
    st[0] = st[1] = 7;
    CHECK_FAILS(mooncake_meta_release_groups(m, "\xff", 1, ids, ids_lens, 2, st, &err),
                MOONCAKE_META_INVALID_UTF8, err, "tenant");
    check_each(st, NULL, 2, MOONCAKE_META_INVALID_UTF8);
    /* Nothing changed: deadlines, gauge, journal. */
    CHECK_EQ_INT(group_deadline(m, "a"), FX_START_MS + TTL);
    CHECK_EQ_INT(group_deadline(m, "b"), 0);
    CHECK_EQ_INT(fx_metrics(m).retained_group_count, 1);
    CHECK_EQ_INT(fx_metrics(m).journal_last_seq, seq);
    /* A good call still works. */
    CHECK_OK(retain(m, ids, 2, TTL, st, dl, &err), err);
    check_each(st, NULL, 2, MOONCAKE_META_OK);
    CHECK_EQ_INT(dl[1], FX_START_MS + TTL);
    CHECK_EQ_INT(fx_metrics(m).retained_group_count, 2);
    CHECK_OK(mooncake_meta_release_groups(m, NULL, 0, ids, ids_lens, 2, st, &err), err);
    check_each(st, NULL, 2, MOONCAKE_META_OK);
    CHECK_EQ_INT(fx_metrics(m).retained_group_count, 0);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

static void unusable_arguments_refuse_the_whole_call(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = retention_master(8);
    const char *ids[] = {"a", "b"};
    int32_t st[2] = {7, 7};
    uint64_t dl[2] = {7, 7};
    /* Bad pointers and strings: a code, a message, nothing changed. */
    size_t lens[2] = {1, 1};
    CHECK_FAILS(mooncake_meta_retain_groups(m, NULL, 0, NULL, lens, 2, TTL, st, dl, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "groups");
    CHECK_FAILS(mooncake_meta_retain_groups(m, NULL, 0, ids, lens, 2, TTL, NULL, dl, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "out_statuses");
    CHECK_FAILS(mooncake_meta_retain_groups(NULL, NULL, 0, ids, lens, 2, TTL, st, dl, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "master");
    /* An unusable array comes before a bad tenant or TTL. */
    CHECK_FAILS(mooncake_meta_retain_groups(m, "\xff", 1, NULL, lens, 2, 0, st, dl, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "groups");
    CHECK_EQ_INT(st[0], 7);
    CHECK_EQ_INT(dl[1], 7);
    CHECK_EQ_INT(fx_metrics(m).retained_group_count, 0);
    /* (NULL, 0) is an empty batch. */
    CHECK_OK(mooncake_meta_retain_groups(m, NULL, 0, NULL, NULL, 0, TTL, NULL, NULL, &err), err);
    CHECK_OK(mooncake_meta_release_groups(m, NULL, 0, NULL, NULL, 0, NULL, &err), err);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

static void repeat_retain_extends_never_shortens(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = retention_master(8);
    const char *ids[] = {"g"};
    int32_t st[1];
    uint64_t dl[1];
    CHECK_OK(retain(m, ids, 1, TTL, st, dl, &err), err);
    fx_advance(m, 10);
    CHECK_OK(retain(m, ids, 1, 5, st, dl, &err), err);
    CHECK_EQ_INT(dl[0], FX_START_MS + TTL);
    CHECK_OK(retain(m, ids, 1, TTL, st, dl, &err), err);
    CHECK_EQ_INT(dl[0], FX_START_MS + 10 + TTL);
    CHECK_EQ_INT(group_deadline(m, "g"), FX_START_MS + 10 + TTL);
    CHECK_EQ_INT(fx_metrics(m).retained_group_count, 1);
    mooncake_meta_master_free(m);
}

static void reads_never_extend_and_eviction_skips_the_group(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = retention_master(8);
    mooncake_meta_write_config g = in_group("prefix");
    mooncake_meta_write_config plain = fx_config(1);
    fx_put(m, 1, "p0", 4096, &g);
    const char *ids[] = {"prefix"};
    int32_t st[1];
    uint64_t dl[1];
    CHECK_OK(retain(m, ids, 1, TTL, st, dl, &err), err);
    fx_advance(m, 1000);
    CHECK_EQ_INT(fx_exists(m, "p0"), 1);
    CHECK_EQ_INT(group_deadline(m, "prefix"), FX_START_MS + TTL);
    fx_put(m, 1, "p1", 4096, &g); /* joins late: the remaining lifetime */
    fx_put(m, 1, "plain", 4096, &plain);
    fx_advance(m, 20000);
    mooncake_meta_eviction_report r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    CHECK_OK(mooncake_meta_run_eviction(m, 1.0, 0.0, &r, &err), err);
    CHECK_EQ_INT(r.evicted, 1);
    CHECK_EQ_INT(fx_exists(m, "plain"), 0);
    CHECK_EQ_INT(fx_exists(m, "p1"), 1);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

static void release_and_expiry_end_retention(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = retention_master(8);
    const char *ids[] = {"a", "b"};
    int32_t st[3];
    uint64_t dl[2];
    CHECK_OK(retain(m, ids, 2, TTL, st, dl, &err), err);
    const char *rel[] = {"a", "never", ""};
    size_t lens[3] = {1, 5, 0};
    CHECK_OK(mooncake_meta_release_groups(m, NULL, 0, rel, lens, 3, st, &err), err);
    CHECK_EQ_INT(st[0], MOONCAKE_META_OK);
    CHECK_EQ_INT(st[1], MOONCAKE_META_OK);
    CHECK_EQ_INT(st[2], MOONCAKE_META_INVALID_PARAMS);
    CHECK_EQ_INT(group_deadline(m, "a"), 0);
    CHECK_EQ_INT(fx_metrics(m).retained_group_count, 1);
    fx_advance(m, TTL);
    CHECK_EQ_INT(group_deadline(m, "b"), 0); /* expired: protects nothing */
    CHECK_OK(mooncake_meta_run_maintenance_tick(m, &err), err);
    CHECK_EQ_INT(fx_metrics(m).retained_group_count, 0);
    fx_check_invariants(m);
    mooncake_meta_master_free(m);
}

static void the_prometheus_text_carries_the_gauge(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = retention_master(8);
    const char *ids[] = {"a"};
    int32_t st[1];
    uint64_t dl[1];
    CHECK_OK(retain(m, ids, 1, TTL, st, dl, &err), err);
    mooncake_meta_bytes *text = NULL;
    CHECK_OK(mooncake_meta_metrics_prometheus(m, &text, &err), err);
    /* The data is followed by a NUL byte. */
    CHECK_CONTAINS((const char *)mooncake_meta_bytes_data(text), "\nmaster_retained_group_count 1\n");
    mooncake_meta_bytes_free(text);
    mooncake_meta_master_free(m);
}

int main(void) {
    RUN_TEST(per_group_results_are_written_when_the_call_is_accepted);
    RUN_TEST(shared_argument_errors_fail_every_group);
    RUN_TEST(unusable_arguments_refuse_the_whole_call);
    RUN_TEST(an_id_that_is_not_utf8_fails_alone);
    RUN_TEST(a_standby_refuses_the_whole_call_first);
    RUN_TEST(repeat_retain_extends_never_shortens);
    RUN_TEST(reads_never_extend_and_eviction_skips_the_group);
    RUN_TEST(release_and_expiry_end_retention);
    RUN_TEST(the_prometheus_text_carries_the_gauge);
    return check_summary("test_group_retention");
}
