/* The change journal and standby masters from C (docs/CONTRACT.md section
 * 12): a consumer reads the primary's journal into its own buffer with the
 * BUFFER_TOO_SMALL convention and releases it; a standby applies it, serves
 * no client, and once promoted has every object with its deadline, and the
 * write that was in flight ends on it. */
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

/* Every record from `from` in a malloc'd buffer (free it); *len its length,
 * *next where to read on. */
static uint8_t *read_all(mooncake_meta_master *m, uint64_t from, size_t *len, uint64_t *next) {
    mooncake_meta_error *err = NULL;
    size_t need = 0;
    mooncake_meta_status st = mooncake_meta_journal_read(m, from, NULL, 0, &need, next, &err);
    if (st == MOONCAKE_META_OK) { /* nothing recorded after `from` */
        CHECK_EQ_INT(need, 0);
        *len = 0;
        return NULL;
    }
    CHECK_EQ_INT(st, MOONCAKE_META_BUFFER_TOO_SMALL);
    CHECK(need > 0);
    mooncake_meta_error_free(err);
    err = NULL;
    uint8_t *buf = malloc(need);
    CHECK(buf != NULL);
    CHECK_OK(mooncake_meta_journal_read(m, from, buf, need, len, next, &err), err);
    CHECK_EQ_INT(*len, need);
    return buf;
}

static mooncake_meta_apply_report apply_report(void) {
    mooncake_meta_apply_report r;
    memset(&r, 0xcd, sizeof r);
    r.struct_size = sizeof r;
    return r;
}

static void a_promoted_standby_has_the_primarys_objects_and_deadlines(void) {
    mooncake_meta_error *err = NULL;
    fx_options po = {0};
    po.journal_capacity_bytes = 1 << 20;
    mooncake_meta_master *p = fx_master(&po);
    fx_mount(p, 1, "seg-a", 1 << 20);
    mooncake_meta_write_config pin = fx_enable(5000);
    fx_put(p, 1, "done", 4096, &pin);
    uint64_t token = 0;
    CHECK_EQ_INT(fx_put_start(p, 1, "in-flight", 4096, &pin, &token), MOONCAKE_META_OK);

    size_t len = 0;
    uint64_t next = 0;
    uint8_t *batch = read_all(p, 1, &len, &next);
    CHECK(next > 1);

    fx_options so = {0};
    so.standby = 1;
    mooncake_meta_master *s = fx_master(&so);
    int standby = -1;
    uint64_t applied = 99;
    CHECK_OK(mooncake_meta_standby_state(s, &standby, &applied, &err), err);
    CHECK_EQ_INT(standby, 1);
    CHECK_EQ_INT(applied, 0);

    mooncake_meta_apply_report r = apply_report();
    CHECK_OK(mooncake_meta_journal_apply(s, batch, len, &r, &err), err);
    CHECK_EQ_INT(r.struct_size, sizeof r);
    CHECK_EQ_INT(r.records_applied, next - 1);
    CHECK_EQ_INT(r.records_skipped, 0);
    CHECK_EQ_INT(r.last_seq, next - 1);
    /* A repeat is skipped. */
    r = apply_report();
    CHECK_OK(mooncake_meta_journal_apply(s, batch, len, &r, &err), err);
    CHECK_EQ_INT(r.records_applied, 0);
    CHECK_EQ_INT(r.records_skipped, next - 1);

    /* A standby serves no client. */
    int exists = -1;
    CHECK_FAILS(mooncake_meta_exist(s, FX_KEY("done"), &exists, &err),
                MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS, err, "standby");
    CHECK_EQ_INT(fx_put_start(s, 1, "new", 64, NULL, NULL), MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS);
    /* The standby is reported before the answer's room is looked at. */
    const char *copy_to[] = {"mem1", "mem2"};
    size_t copy_len = 99;
    CHECK_FAILS(mooncake_meta_copy_start(s, FX_KEY("done"), copy_to, 2, NULL, 0, &copy_len, &err),
                MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS, err, "standby");
    CHECK_EQ_INT(copy_len, 99);
    {
        const char *bkeys[] = {"x", "y"};
        size_t blens[] = {1, 1}, bcounts[2] = {7, 7};
        uint64_t bsizes[] = {64, 64}, btokens[2] = {7, 7};
        int32_t bst[2] = {0, 0};
        CHECK_FAILS(mooncake_meta_batch_put_start(s, 1, NULL, 0, bkeys, blens, 2, bsizes, NULL, NULL,
                                                  0, bcounts, btokens, bst, &err),
                    MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS, err, "standby");
        CHECK_EQ_INT(bst[0], MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS);
        CHECK_EQ_INT(bst[1], MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS);
    }

    mooncake_meta_promote_report pr;
    memset(&pr, 0xcd, sizeof pr);
    pr.struct_size = sizeof pr;
    CHECK_OK(mooncake_meta_promote(s, &pr, &err), err);
    CHECK_EQ_INT(pr.applied_seq, next - 1);
    CHECK_EQ_INT(pr.writes_in_flight, 1);
    CHECK_FAILS(mooncake_meta_promote(s, NULL, &err), MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS,
                err, NULL);
    CHECK_OK(mooncake_meta_standby_state(s, &standby, NULL, &err), err);
    CHECK_EQ_INT(standby, 0);

    /* The deadline is the primary's, not restarted; the write in flight
     * ends here and commits its pin from this End. */
    CHECK_EQ_INT(fx_deadline(s, "done"), fx_deadline(p, "done"));
    uint64_t end = fx_advance(s, 2000);
    CHECK_OK(mooncake_meta_put_end(s, 1, FX_KEY("in-flight"), MOONCAKE_META_SELECT_ALL, token, &err),
             err);
    CHECK_EQ_INT(fx_deadline(s, "in-flight"), end + 5000);
    fx_check_invariants(s);

    free(batch);
    mooncake_meta_master_free(p);
    mooncake_meta_master_free(s);
}

static void a_full_journal_drops_the_oldest_and_reading_them_is_overrun(void) {
    mooncake_meta_error *err = NULL;
    fx_options o = {0};
    o.journal_capacity_bytes = 4096;
    mooncake_meta_master *m = fx_master(&o);
    fx_mount(m, 1, "seg-a", 1 << 20);
    for (int i = 0; i < 200; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%03d", i);
        fx_put(m, 1, key, 64, NULL);
    }
    mooncake_meta_journal_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK_OK(mooncake_meta_journal_counters(m, &st, &err), err);
    CHECK_EQ_INT(st.struct_size, sizeof st);
    CHECK_EQ_INT(st.capacity_bytes, 4096);
    CHECK(st.bytes_held <= st.capacity_bytes);
    CHECK(st.dropped_records > 0);
    CHECK(st.first_seq > 1);

    uint8_t buf[64];
    size_t len = 7;
    uint64_t next = 7;
    CHECK_FAILS(mooncake_meta_journal_read(m, 1, buf, sizeof buf, &len, &next, &err),
                MOONCAKE_META_JOURNAL_OVERRUN, err, NULL);
    CHECK_EQ_INT(len, 7);
    CHECK_EQ_INT(next, 7);

    uint64_t freed = 0;
    CHECK_OK(mooncake_meta_journal_release(m, st.last_seq, &freed, &err), err);
    CHECK_EQ_INT(freed, st.records_held);
    CHECK_FAILS(mooncake_meta_journal_release(m, st.last_seq + 1, NULL, &err),
                MOONCAKE_META_INVALID_PARAMS, err, NULL);
    /* Nothing held: reading at the next sequence gives nothing. */
    CHECK_OK(mooncake_meta_journal_read(m, st.last_seq + 1, NULL, 0, &len, &next, &err), err);
    CHECK_EQ_INT(len, 0);
    CHECK_EQ_INT(next, st.last_seq + 1);
    mooncake_meta_master_free(m);
}

static void bad_inputs_change_nothing(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *plain = fx_master(NULL);
    size_t len = 0;
    CHECK_FAILS(mooncake_meta_journal_read(plain, 1, NULL, 0, &len, NULL, &err),
                MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS, err, "journal");
    mooncake_meta_journal_stats st;
    memset(&st, 0xcd, sizeof st);
    st.struct_size = sizeof st;
    CHECK_OK(mooncake_meta_journal_counters(plain, &st, &err), err);
    CHECK_EQ_INT(st.capacity_bytes, 0);
    CHECK_EQ_INT(st.last_seq, 0);
    st.struct_size = 0;
    CHECK_FAILS(mooncake_meta_journal_counters(plain, &st, &err), MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED,
                err, NULL);
    CHECK_FAILS(mooncake_meta_promote(plain, NULL, &err), MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS,
                err, NULL);
    CHECK_FAILS(mooncake_meta_journal_read(NULL, 1, NULL, 0, &len, NULL, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, NULL);

    fx_options so = {0};
    so.standby = 1;
    mooncake_meta_master *s = fx_master(&so);
    CHECK_FAILS(mooncake_meta_journal_apply(s, NULL, 8, NULL, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                NULL);
    const uint8_t junk[48] = {1, 2, 3};
    CHECK_FAILS(mooncake_meta_journal_apply(s, junk, sizeof junk, NULL, &err),
                MOONCAKE_META_DESERIALIZE_FAIL, err, NULL);
    int standby = -1;
    uint64_t applied = 99;
    CHECK_OK(mooncake_meta_standby_state(s, &standby, &applied, &err), err);
    CHECK_EQ_INT(standby, 1);
    CHECK_EQ_INT(applied, 0);

    mooncake_meta_config *cfg = NULL;
    CHECK_OK(mooncake_meta_config_new(&cfg, &err), err);
    CHECK_FAILS(mooncake_meta_config_set_standby(cfg, 2, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "standby");
    CHECK_OK(mooncake_meta_config_set_journal_capacity_bytes(
                 cfg, MOONCAKE_META_MAX_JOURNAL_CAPACITY_BYTES + 1, &err),
             err);
    CHECK_FAILS(mooncake_meta_config_validate(cfg, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "journal_capacity_bytes");
    mooncake_meta_config_free(cfg);
    mooncake_meta_master_free(plain);
    mooncake_meta_master_free(s);
}

int main(void) {
    RUN_TEST(a_promoted_standby_has_the_primarys_objects_and_deadlines);
    RUN_TEST(a_full_journal_drops_the_oldest_and_reading_them_is_overrun);
    RUN_TEST(bad_inputs_change_nothing);
    return check_summary("test_journal");
}
