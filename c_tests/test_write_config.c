/* Write configurations: the legacy struct frozen in upstream store_c.h's
 * layout, and the size-versioned extended struct (docs/CONTRACT.md §4.1 and §7). */
#include "check.h"

#include <stdalign.h>
#include <stdint.h>

/* Upstream Mooncake's store_c.h definition, verbatim: ours must match it. */
struct mooncake_replicate_config {
    size_t replica_num;
    int with_soft_pin;
    int with_hard_pin;
    const char **preferred_segments;
    size_t preferred_segments_count;
};

#define SAME_FIELD(f)                                                                              \
    _Static_assert(offsetof(mooncake_meta_replicate_config, f) ==                                  \
                       offsetof(struct mooncake_replicate_config, f),                              \
                   "legacy field " #f " moved")
SAME_FIELD(replica_num);
SAME_FIELD(with_soft_pin);
SAME_FIELD(with_hard_pin);
SAME_FIELD(preferred_segments);
SAME_FIELD(preferred_segments_count);
_Static_assert(sizeof(mooncake_meta_replicate_config) == sizeof(struct mooncake_replicate_config),
               "legacy size changed");
_Static_assert(alignof(mooncake_meta_replicate_config) == alignof(struct mooncake_replicate_config),
               "legacy alignment changed");
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(mooncake_meta_replicate_config) == 32, "legacy LP64 size");
/* Version 1 of the extended struct is frozen too. */
_Static_assert(offsetof(mooncake_meta_write_config, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(mooncake_meta_write_config, soft_pin_ttl_ms) == 16, "v1 layout");
_Static_assert(offsetof(mooncake_meta_write_config, group) == 48, "v1 layout");
_Static_assert(sizeof(mooncake_meta_write_config) >= 56, "v1 size");
#endif

static const char *const SEGMENTS[] = {"seg-a", "seg-b"};

static mooncake_meta_write_config init(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_write_config cfg;
    memset(&cfg, 0xAB, sizeof cfg);
    CHECK_OK(mooncake_meta_write_config_init(&cfg, sizeof cfg, &err), err);
    return cfg;
}

static void legacy_configs_translate(void) {
    mooncake_meta_error *err = NULL;
    const char *segs[] = {"seg-a", "seg-b"};
    mooncake_meta_replicate_config c = {1, 1, 0, segs, 2};
    CHECK_OK(mooncake_meta_replicate_config_validate(&c, &err), err); /* ENABLE, default TTL */
    c.with_soft_pin = 0;                                                /* PRESERVE */
    c.with_hard_pin = 7;                                                /* any non-zero: hard pin */
    CHECK_OK(mooncake_meta_replicate_config_validate(&c, &err), err);
    c.with_soft_pin = -3; /* C truthiness, as upstream */
    c.preferred_segments = NULL;
    c.preferred_segments_count = 0;
    CHECK_OK(mooncake_meta_replicate_config_validate(&c, &err), err);
    CHECK_OK(mooncake_meta_replicate_config_validate(NULL, &err), err); /* NULL = defaults */
}

static void legacy_configs_reject(void) {
    mooncake_meta_error *err = NULL;
    const char *segs[] = {"seg-a", NULL, "\xff"};
    mooncake_meta_replicate_config c = {0, 1, 0, NULL, 0};
    CHECK_FAILS(mooncake_meta_replicate_config_validate(&c, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "no replicas requested");
    c.replica_num = 1;
    c.preferred_segments_count = 2;
    CHECK_FAILS(mooncake_meta_replicate_config_validate(&c, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                "cfg.preferred_segments is NULL but its count is 2");
    c.preferred_segments = segs;
    CHECK_FAILS(mooncake_meta_replicate_config_validate(&c, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                "cfg.preferred_segments[1] is NULL");
    segs[1] = "seg-b";
    c.preferred_segments_count = 3;
    CHECK_FAILS(mooncake_meta_replicate_config_validate(&c, &err), MOONCAKE_META_INVALID_UTF8, err,
                "cfg.preferred_segments[2] is not valid UTF-8");
}

static void init_fills_the_defaults(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_write_config c = init();
    CHECK_EQ_INT(c.struct_size, sizeof c);
    CHECK_EQ_INT(c.flags, 0);
    CHECK_EQ_INT(c.soft_pin_action, MOONCAKE_META_SOFT_PIN_PRESERVE);
    CHECK_EQ_INT(c.reserved0, 0);
    CHECK_EQ_INT(c.soft_pin_ttl_ms, 0);
    CHECK_EQ_INT(c.memory_replicas, 1);
    CHECK_EQ_INT(c.nof_ssd_replicas, 0);
    CHECK(c.preferred_segments == NULL);
    CHECK_EQ_INT(c.preferred_segments_count, 0);
    CHECK(c.group == NULL);
    CHECK_OK(mooncake_meta_write_config_validate(&c, &err), err);
    CHECK_OK(mooncake_meta_write_config_validate(NULL, &err), err); /* NULL = defaults */
}

static void init_rejects_sizes_it_cannot_serve(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_write_config c;
    CHECK_FAILS(mooncake_meta_write_config_init(&c, sizeof c - 1, &err),
                MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, err, "below the smallest supported size");
    CHECK_FAILS(mooncake_meta_write_config_init(&c, 4097, &err), MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED,
                err, "exceeds 4096");
    CHECK_FAILS(mooncake_meta_write_config_init(NULL, sizeof c, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                "cfg is NULL");
}

/* A caller compiled against a newer header, with a field this library lacks. */
struct newer_write_config {
    mooncake_meta_write_config v1;
    uint64_t field_from_the_future;
};

static void a_larger_struct_needs_a_zero_tail(void) {
    mooncake_meta_error *err = NULL;
    struct newer_write_config n;
    memset(&n, 0xAB, sizeof n);
    CHECK_OK(mooncake_meta_write_config_init(&n.v1, sizeof n, &err), err);
    CHECK_EQ_INT(n.v1.struct_size, sizeof n);
    CHECK_EQ_INT(n.field_from_the_future, 0);
    CHECK_OK(mooncake_meta_write_config_validate(&n.v1, &err), err);
    n.field_from_the_future = 1;
    CHECK_FAILS(mooncake_meta_write_config_validate(&n.v1, &err), MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED,
                err, "is non-zero");
}

static void sizes_flags_and_actions_are_checked(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_write_config c = init();
    c.struct_size = 8;
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED,
                err, "cfg.struct_size 8");
    c = init();
    c.flags = 4;
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_UNKNOWN_FLAGS, err,
                "unknown bits 0x4");
    c.flags = MOONCAKE_META_WRITE_HARD_PIN | 0x80000000u;
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_UNKNOWN_FLAGS, err,
                "0x80000000");
    c = init();
    c.soft_pin_action = 3;
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "cfg.soft_pin_action: unknown value 3 (expected 0 = PRESERVE");
    c = init();
    c.reserved0 = 1;
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "reserved0");
}

/* docs/CONTRACT.md §4.1: a TTL only with ENABLE; the maximum is the master's. */
static void soft_pin_requests_follow_the_rules(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_write_config c = init();
    c.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
    CHECK_OK(mooncake_meta_write_config_validate(&c, &err), err);
    c.soft_pin_ttl_ms = 600000;
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "HAS_SOFT_PIN_TTL is not set");
    c.flags = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
    CHECK_OK(mooncake_meta_write_config_validate(&c, &err), err);
    c.soft_pin_ttl_ms = 0; /* ordinary cache */
    CHECK_OK(mooncake_meta_write_config_validate(&c, &err), err);
    c.soft_pin_ttl_ms = UINT64_MAX; /* checked against the maximum by the master */
    CHECK_OK(mooncake_meta_write_config_validate(&c, &err), err);
    c.soft_pin_ttl_ms = 0;
    c.soft_pin_action = MOONCAKE_META_SOFT_PIN_PRESERVE;
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "PRESERVE must not carry soft_pin_ttl_ms");
    c.soft_pin_action = MOONCAKE_META_SOFT_PIN_DISABLE;
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "DISABLE must not carry soft_pin_ttl_ms");
    c.flags = MOONCAKE_META_WRITE_HARD_PIN;
    CHECK_OK(mooncake_meta_write_config_validate(&c, &err), err);
}

static void replicas_segments_and_group_are_checked(void) {
    mooncake_meta_error *err = NULL;
    mooncake_meta_write_config c = init();
    c.memory_replicas = 0;
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "no replicas requested");
    c.nof_ssd_replicas = 1;
    CHECK_OK(mooncake_meta_write_config_validate(&c, &err), err);
    /* Counts are bounded per pool before anything is allocated. */
    c.memory_replicas = MOONCAKE_META_MAX_REPLICAS_PER_POOL + 1;
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "cfg: memory_replicas 1025 exceeds the maximum");
    c.memory_replicas = 0;
    c.nof_ssd_replicas = UINT32_MAX;
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "cfg: nof_ssd_replicas 4294967295 exceeds the maximum");
    c.memory_replicas = MOONCAKE_META_MAX_REPLICAS_PER_POOL;
    c.nof_ssd_replicas = MOONCAKE_META_MAX_REPLICAS_PER_POOL;
    CHECK_OK(mooncake_meta_write_config_validate(&c, &err), err);
    c.memory_replicas = 0;
    c.nof_ssd_replicas = 1;
    c.preferred_segments_count = 2;
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_NULL_ARGUMENT, err,
                "cfg.preferred_segments is NULL");
    c.preferred_segments = SEGMENTS;
    CHECK_OK(mooncake_meta_write_config_validate(&c, &err), err);
    c.group = "";
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_INVALID_PARAMS, err,
                "cfg.group must not be empty");
    c.group = "caf\xc3";
    CHECK_FAILS(mooncake_meta_write_config_validate(&c, &err), MOONCAKE_META_INVALID_UTF8, err,
                "cfg.group is not valid UTF-8");
    c.group = "caf\xc3\xa9";
    CHECK_OK(mooncake_meta_write_config_validate(&c, &err), err);
}

int main(void) {
    RUN_TEST(legacy_configs_translate);
    RUN_TEST(legacy_configs_reject);
    RUN_TEST(init_fills_the_defaults);
    RUN_TEST(init_rejects_sizes_it_cannot_serve);
    RUN_TEST(a_larger_struct_needs_a_zero_tail);
    RUN_TEST(sizes_flags_and_actions_are_checked);
    RUN_TEST(soft_pin_requests_follow_the_rules);
    RUN_TEST(replicas_segments_and_group_are_checked);
    return check_summary("test_write_config");
}
