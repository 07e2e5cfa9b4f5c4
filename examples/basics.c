/*
 * What libmooncake_meta can do so far, from C: version queries, a master
 * configuration checked before use, write configurations (legacy and
 * extended) validated early, and error objects with a code and a message.
 * `make demo` builds and runs it against the static library.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mooncake_meta.h"

/* Prints how a call ended; frees the error. Returns the status. */
static mooncake_meta_status report(const char *what, mooncake_meta_status st,
                                   mooncake_meta_error **err) {
    if (st == MOONCAKE_META_OK) {
        printf("  %-58s -> OK\n", what);
    } else {
        printf("  %-58s -> %s (%d)\n  %-58s    %s\n", what, mooncake_meta_status_name(st), (int)st,
               "", *err ? mooncake_meta_error_message(*err) : "(no details requested)");
    }
    mooncake_meta_error_free(*err);
    *err = NULL;
    return st;
}

int main(void) {
    mooncake_meta_error *err = NULL;
    int unexpected = 0;

    printf("libmooncake_meta %s, ABI %" PRIu32 " (compiled against header %s, ABI %d)\n",
           mooncake_meta_version(), mooncake_meta_abi_version(), MOONCAKE_META_VERSION_STRING,
           MOONCAKE_META_ABI_VERSION);
    if (mooncake_meta_abi_version() != MOONCAKE_META_ABI_VERSION) {
        fprintf(stderr, "ABI mismatch: refusing to run\n");
        return 1;
    }

    printf("\nmaster configuration\n");
    mooncake_meta_config *cfg = NULL;
    unexpected |= report("new (documented defaults)", mooncake_meta_config_new(&cfg, &err), &err) != 0;
    unexpected |= report("validate defaults", mooncake_meta_config_validate(cfg, &err), &err) != 0;
    unexpected |= report("manual clock at 1700000000000 ms",
                         mooncake_meta_config_set_manual_clock(cfg, 1700000000000ull, &err), &err) != 0;
    unexpected |= report("default soft-pin TTL := 2 days (max is 1 day)",
                         mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(cfg, 172800000u, &err),
                         &err) != 0;
    unexpected |= report("validate", mooncake_meta_config_validate(cfg, &err), &err) !=
                  MOONCAKE_META_INVALID_PARAMS;
    unexpected |= report("max soft-pin TTL := 3 days",
                         mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(cfg, 259200000u, &err),
                         &err) != 0;
    unexpected |= report("validate", mooncake_meta_config_validate(cfg, &err), &err) != 0;
    unexpected |= report("allow_evict_soft_pinned_objects := 2",
                         mooncake_meta_config_set_allow_evict_soft_pinned_objects(cfg, 2, &err),
                         &err) != MOONCAKE_META_INVALID_PARAMS;
    mooncake_meta_config_free(cfg);

    printf("\nextended write configuration\n");
    const char *segments[] = {"node-1/dram", "node-2/dram"};
    mooncake_meta_write_config wc;
    unexpected |= report("init (PRESERVE, 1 memory replica)",
                         mooncake_meta_write_config_init(&wc, sizeof wc, &err), &err) != 0;
    wc.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
    wc.flags = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
    wc.soft_pin_ttl_ms = 600000;
    wc.memory_replicas = 2;
    wc.preferred_segments = segments;
    wc.preferred_segments_count = 2;
    wc.group = "prefix-cache";
    unexpected |= report("ENABLE for 10 min, 2 replicas, 2 segments, a group",
                         mooncake_meta_write_config_validate(&wc, &err), &err) != 0;
    wc.soft_pin_action = MOONCAKE_META_SOFT_PIN_DISABLE;
    unexpected |= report("DISABLE with a TTL", mooncake_meta_write_config_validate(&wc, &err), &err) !=
                  MOONCAKE_META_INVALID_PARAMS;
    wc.flags = 0x10;
    unexpected |= report("an unknown flag bit", mooncake_meta_write_config_validate(&wc, &err), &err) !=
                  MOONCAKE_META_UNKNOWN_FLAGS;

    printf("\nlegacy write configuration (upstream store_c.h layout)\n");
    mooncake_meta_replicate_config legacy = {1, 1, 0, segments, 2};
    unexpected |= report("with_soft_pin = 1 (ENABLE, master default TTL)",
                         mooncake_meta_replicate_config_validate(&legacy, &err), &err) != 0;
    legacy.replica_num = 0;
    unexpected |= report("replica_num = 0", mooncake_meta_replicate_config_validate(&legacy, &err),
                         &err) != MOONCAKE_META_INVALID_PARAMS;

    printf("\nerrors\n");
    unexpected |= report("config_new with a NULL out-pointer", mooncake_meta_config_new(NULL, &err),
                         &err) != MOONCAKE_META_NULL_ARGUMENT;
    unexpected |= report("the same without asking for details", mooncake_meta_config_new(NULL, NULL),
                         &err) != MOONCAKE_META_NULL_ARGUMENT;

    printf("\n%s\n", unexpected ? "some results were not the expected ones" : "every result was the expected one");
    return unexpected ? EXIT_FAILURE : EXIT_SUCCESS;
}
