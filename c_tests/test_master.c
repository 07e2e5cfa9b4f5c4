/* The master handle's lifecycle, segments (mount, unmount with its
 * size-versioned report, names under the BUFFER_TOO_SMALL convention), the
 * key count and paged key listing (docs/CONTRACT.md §3, CONVENTIONS "The C boundary"). */
#include "check.h"

#include <stdint.h>

#define T0 1000000ull
#define C1 1u
#define C2 2u
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
    CHECK(m != NULL);
    return m;
}

static uint32_t mount(mooncake_meta_master *m, uint64_t client, const char *name, uint64_t slot) {
    mooncake_meta_error *err = NULL;
    uint32_t id = UINT32_MAX;
    CHECK_OK(mooncake_meta_mount_segment(m, client, name, strlen(name), (slot + 1) << 40, 1 << 20,
                                         MOONCAKE_META_POOL_MEMORY, &id, &err),
             err);
    return id;
}

/* PutStart (defaults) + PutEnd(ALL) by C1. */
static void put(mooncake_meta_master *m, const char *tenant, const char *key) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_replica r[1];
    size_t len = 0;
    uint64_t token = 0;
    size_t tlen = tenant ? strlen(tenant) : 0;
    CHECK_OK(mooncake_meta_put_start(m, C1, tenant, tlen, key, strlen(key), 64, NULL, r, 1, &len,
                                     &token, &err),
             err);
    CHECK_OK(mooncake_meta_put_end(m, C1, tenant, tlen, key, strlen(key), MOONCAKE_META_SELECT_ALL,
                                   token, &err),
             err);
}

static void null_config_gives_a_default_master_and_free_accepts_null(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = NULL;
    uint64_t now = 0;
    CHECK_OK(mooncake_meta_master_new(NULL, &m, &err), err);
    CHECK(m != NULL);
    CHECK_OK(mooncake_meta_master_now(m, &now, &err), err);
    CHECK(now > T0); /* the system clock, not a manual one */
    CHECK_FAILS(mooncake_meta_master_set_time(m, now + 1000, &err), MOONCAKE_META_CLOCK_UNSUPPORTED,
                err, NULL);
    mooncake_meta_master_free(m);
    mooncake_meta_master_free(NULL);
    mooncake_meta_key_list_free(NULL);
}

static void null_master_is_a_null_argument(void) {
    mooncake_meta_error *err = NULL;
    uint64_t n = 0;
    uint32_t id = 0;
    CHECK_FAILS(mooncake_meta_key_count(NULL, &n, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                "mooncake_meta_key_count: master is NULL");
    CHECK_FAILS(mooncake_meta_mount_segment(NULL, C1, "s", 1, 0, 1, 0, &id, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "master is NULL");
}

static void mount_returns_an_id_and_remount_is_idempotent(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    uint32_t a = mount(m, C1, "mem0", 0);
    uint32_t b = mount(m, C1, "mem1", 1);
    uint32_t again = UINT32_MAX, id = 77;
    CHECK(a != b);
    CHECK_OK(mooncake_meta_mount_segment(m, C1, "mem0", 4, 1ull << 40, 1 << 20,
                                         MOONCAKE_META_POOL_MEMORY, &again, &err),
             err);
    CHECK_EQ_INT(again, a);
    CHECK_FAILS(mooncake_meta_mount_segment(m, C1, "mem0", 4, 1ull << 40, 2 << 20,
                                            MOONCAKE_META_POOL_MEMORY, &id, &err),
                MOONCAKE_META_SEGMENT_ALREADY_EXISTS, err, "segment 'mem0' is already mounted");
    CHECK_FAILS(mooncake_meta_mount_segment(m, C1, "x", 1, 0, 1 << 20, 7, &id, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "pool must be");
    CHECK_FAILS(mooncake_meta_mount_segment(m, C1, NULL, 0, 0, 1 << 20, 0, &id, &err),
                MOONCAKE_META_INVALID_PARAMS, err, "segment name must not be empty");
    CHECK_FAILS(mooncake_meta_mount_segment(m, C1, "y", 1, 0, 1 << 20, 0, NULL, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "out_segment_id is NULL");
    CHECK_EQ_INT(id, 77); /* not written on failure */
    mooncake_meta_master_free(m);
}

static void segment_name_follows_the_buffer_too_small_convention(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    uint32_t id = mount(m, C1, "mem0", 0);
    char buf[8];
    size_t len = 0;
    CHECK_FAILS(mooncake_meta_segment_name(m, id, NULL, 0, &len, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, "buf has room for 0 bytes but the name has 4");
    CHECK_EQ_INT(len, 4);
    memset(buf, 'X', sizeof buf);
    CHECK_FAILS(mooncake_meta_segment_name(m, id, buf, 3, &len, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, NULL);
    CHECK(buf[0] == 'X'); /* nothing written */
    CHECK_OK(mooncake_meta_segment_name(m, id, buf, 4, &len, &err), err);
    CHECK(memcmp(buf, "mem0", 4) == 0 && buf[4] == 'X'); /* exact fit: no NUL */
    CHECK_OK(mooncake_meta_segment_name(m, id, buf, sizeof buf, &len, &err), err);
    CHECK_STR_EQ(buf, "mem0");
    CHECK_EQ_INT(len, 4);
    CHECK_FAILS(mooncake_meta_segment_name(m, id + 100, buf, sizeof buf, &len, &err),
                MOONCAKE_META_SEGMENT_NOT_FOUND, err, "no segment with id");
    CHECK_FAILS(mooncake_meta_segment_name(m, id, NULL, 4, &len, &err), MOONCAKE_META_NULL_ARGUMENT,
                err, "buf is NULL but its capacity is 4");
    mooncake_meta_master_free(m);
}

static void unmount_segment_reports_and_erases_objects_left_without_replicas(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    uint32_t id = mount(m, C1, "mem0", 0);
    mooncake_meta_unmount_report r;
    uint64_t n = 99;
    size_t len = 0;
    put(m, NULL, "a");
    put(m, NULL, "b");
    memset(&r, 0xAB, sizeof r);
    r.struct_size = 8; /* below version 1: refused before anything happens */
    CHECK_FAILS(mooncake_meta_unmount_segment(m, C1, "mem0", 4, &r, &err),
                MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, err,
                "out_report.struct_size 8 is below the smallest supported size 24");
    /* still mounted: its name is there */
    CHECK_EQ_INT(mooncake_meta_segment_name(m, id, NULL, 0, &len, NULL),
                 MOONCAKE_META_BUFFER_TOO_SMALL);
    r.struct_size = sizeof r;
    CHECK_FAILS(mooncake_meta_unmount_segment(m, C2, "mem0", 4, &r, &err),
                MOONCAKE_META_ILLEGAL_CLIENT, err, "owned by client 1");
    CHECK_FAILS(mooncake_meta_unmount_segment(m, C1, "nope", 4, NULL, &err),
                MOONCAKE_META_SEGMENT_NOT_FOUND, err, "segment 'nope' is not mounted");
    CHECK_OK(mooncake_meta_unmount_segment(m, C1, "mem0", 4, &r, &err), err);
    CHECK_EQ_INT(r.struct_size, sizeof r);
    CHECK_EQ_INT(r.replicas_dropped, 2);
    CHECK_EQ_INT(r.objects_erased, 2);
    CHECK_OK(mooncake_meta_key_count(m, &n, &err), err);
    CHECK_EQ_INT(n, 0);
    mooncake_meta_master_free(m);
}

/* A caller built against a newer header: the library writes only its own
 * fields and leaves the rest of the caller's struct alone. */
struct newer_report {
    mooncake_meta_unmount_report v1;
    uint64_t future;
};

static void unmount_client_unmounts_only_that_clients_segments(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    uint32_t a = mount(m, C1, "mem0", 0);
    uint32_t b = mount(m, C1, "mem1", 1);
    uint32_t c;
    struct newer_report r;
    size_t len = 0;
    put(m, NULL, "k1"); /* on mem0 or mem1 */
    put(m, NULL, "k2");
    c = mount(m, C2, "mem2", 2);
    memset(&r, 0, sizeof r);
    r.v1.struct_size = sizeof r;
    r.future = 42;
    CHECK_OK(mooncake_meta_unmount_client(m, C1, &r.v1, &err), err);
    CHECK_EQ_INT(r.v1.struct_size, sizeof r);
    CHECK_EQ_INT(r.v1.replicas_dropped, 2);
    CHECK_EQ_INT(r.v1.objects_erased, 2);
    CHECK_EQ_INT(r.future, 42);
    CHECK_FAILS(mooncake_meta_segment_name(m, a, NULL, 0, &len, &err),
                MOONCAKE_META_SEGMENT_NOT_FOUND, err, NULL);
    CHECK_FAILS(mooncake_meta_segment_name(m, b, NULL, 0, &len, &err),
                MOONCAKE_META_SEGMENT_NOT_FOUND, err, NULL);
    CHECK_FAILS(mooncake_meta_segment_name(m, c, NULL, 0, &len, &err),
                MOONCAKE_META_BUFFER_TOO_SMALL, err, NULL); /* C2's segment stays */
    CHECK_OK(mooncake_meta_unmount_client(m, 99, NULL, &err), err); /* nothing to unmount */
    mooncake_meta_master_free(m);
}

/* Reads every key of a page into one comma-separated string. */
static void joined(const mooncake_meta_key_list *l, char *out, size_t cap) {
    mooncake_meta_error *err = NULL;
    out[0] = '\0';
    for (size_t i = 0; i < mooncake_meta_key_list_len(l); i++) {
        const char *p = NULL;
        size_t n = 0;
        CHECK_OK(mooncake_meta_key_list_get(l, i, &p, &n, &err), err);
        CHECK(p != NULL && p[n] == '\0');
        if (i > 0) strncat(out, ",", cap - strlen(out) - 1);
        strncat(out, p, cap - strlen(out) - 1);
    }
}

static void key_count_and_list_keys_page_through_one_tenant(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_master *m = new_master();
    mooncake_meta_key_list *l = NULL;
    uint64_t n = 0;
    char got[64];
    const char *cursor = NULL;
    size_t cursor_len = 0;
    int has_next = -1;
    mount(m, C1, "mem0", 0);
    put(m, NULL, "a2");
    put(m, NULL, "b1");
    put(m, NULL, "a1");
    put(m, NULL, "a3");
    put(m, "t2", "a9");
    CHECK_OK(mooncake_meta_key_count(m, &n, &err), err);
    CHECK_EQ_INT(n, 5);

    CHECK_OK(mooncake_meta_list_keys(m, NULL, 0, "a", 1, NULL, 0, 2, &l, &err), err);
    joined(l, got, sizeof got);
    CHECK_STR_EQ(got, "a1,a2");
    CHECK_OK(mooncake_meta_key_list_next_cursor(l, &has_next, &cursor, &cursor_len, &err), err);
    CHECK_EQ_INT(has_next, 1);
    CHECK_EQ_INT(cursor_len, 2);
    CHECK_STR_EQ(cursor, "a2");
    {
        mooncake_meta_key_list *next = NULL;
        CHECK_OK(mooncake_meta_list_keys(m, NULL, 0, "a", 1, cursor, cursor_len, 2, &next, &err),
                 err);
        joined(next, got, sizeof got);
        CHECK_STR_EQ(got, "a3");
        CHECK_OK(mooncake_meta_key_list_next_cursor(next, &has_next, &cursor, &cursor_len, &err),
                 err);
        CHECK_EQ_INT(has_next, 0);
        CHECK(cursor == NULL && cursor_len == 0);
        mooncake_meta_key_list_free(next);
    }
    {
        const char *p = NULL;
        size_t plen = 0;
        CHECK_FAILS(mooncake_meta_key_list_get(l, 2, &p, &plen, &err), MOONCAKE_META_INVALID_PARAMS,
                    err, "index 2 is out of range (the list has 2 keys)");
        CHECK(p == NULL);
    }
    mooncake_meta_key_list_free(l);

    l = NULL;
    CHECK_OK(mooncake_meta_list_keys(m, "t2", 2, NULL, 0, NULL, 0, 0, &l, &err), err);
    joined(l, got, sizeof got);
    CHECK_STR_EQ(got, "a9");
    mooncake_meta_key_list_free(l);

    l = NULL;
    CHECK_OK(mooncake_meta_list_keys(m, "default", 7, NULL, 0, NULL, 0, 0, &l, &err), err);
    CHECK_EQ_INT(mooncake_meta_key_list_len(l), 4);
    mooncake_meta_key_list_free(l);

    CHECK_FAILS(mooncake_meta_list_keys(m, NULL, 0, NULL, 0, NULL, 0, 0, NULL, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "out_list is NULL");
    CHECK_EQ_INT(mooncake_meta_key_list_len(NULL), 0);
    CHECK_FAILS(mooncake_meta_key_list_get(NULL, 0, &cursor, &cursor_len, &err),
                MOONCAKE_META_NULL_ARGUMENT, err, "list is NULL");
    mooncake_meta_master_free(m);
}

int main(void) {
    RUN_TEST(null_config_gives_a_default_master_and_free_accepts_null);
    RUN_TEST(null_master_is_a_null_argument);
    RUN_TEST(mount_returns_an_id_and_remount_is_idempotent);
    RUN_TEST(segment_name_follows_the_buffer_too_small_convention);
    RUN_TEST(unmount_segment_reports_and_erases_objects_left_without_replicas);
    RUN_TEST(unmount_client_unmounts_only_that_clients_segments);
    RUN_TEST(key_count_and_list_keys_page_through_one_tenant);
    return check_summary("test_master");
}
