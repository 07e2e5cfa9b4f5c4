/* Quick start: a soft-pinned write, a read that does not extend the pin,
 * and expiry on a manual clock. Built and run by `make readme-check`. */
#include <mooncake_meta.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                        \
    do {                                                                   \
        mooncake_meta_status s_ = (call);                                  \
        if (s_ != MOONCAKE_META_OK) {                                      \
            fprintf(stderr, "%s failed: %s\n", #call,                      \
                    mooncake_meta_status_name(s_));                        \
            return 1;                                                      \
        }                                                                  \
    } while (0)

int main(void) {
    mooncake_meta_config *cfg = NULL;
    mooncake_meta_master *m = NULL;
    CHECK(mooncake_meta_config_new(&cfg, NULL));
    CHECK(mooncake_meta_config_set_manual_clock(cfg, 1000, NULL));
    CHECK(mooncake_meta_master_new(cfg, &m, NULL));
    mooncake_meta_config_free(cfg);

    /* Client 1 mounts 64 MiB of memory at address 0x10000000. */
    uint32_t segment_id = 0;
    CHECK(mooncake_meta_mount_segment(m, 1, "seg0", 4, 0x10000000, 64 << 20,
                                      MOONCAKE_META_POOL_MEMORY, &segment_id, NULL));

    /* Write "k" with ENABLE and a 60 s soft pin. */
    mooncake_meta_write_config wc;
    CHECK(mooncake_meta_write_config_init(&wc, sizeof wc, NULL));
    wc.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
    wc.flags |= MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
    wc.soft_pin_ttl_ms = 60000;
    mooncake_meta_replica replicas[4];
    size_t n = 0;
    uint64_t token = 0;
    CHECK(mooncake_meta_put_start(m, 1, NULL, 0, "k", 1, 4096, &wc, replicas, 4,
                                  &n, &token, NULL));
    /* ... the client writes 4096 bytes at replicas[0].address ... */
    CHECK(mooncake_meta_put_end(m, 1, NULL, 0, "k", 1, MOONCAKE_META_SELECT_ALL,
                                token, NULL));

    /* The deadline starts at the End: 1000 + 60000. Reads never extend it. */
    CHECK(mooncake_meta_master_advance_time(m, 59000, NULL, NULL));
    CHECK(mooncake_meta_get_replica_list(m, NULL, 0, "k", 1, replicas, 4, &n, NULL));
    int has = 0;
    uint64_t deadline = 0;
    CHECK(mooncake_meta_soft_pin_deadline(m, NULL, 0, "k", 1, &has, &deadline, NULL));
    printf("pinned until %llu (read %zu replica)\n", (unsigned long long)deadline, n);

    /* At the deadline the pin is due; cleanup expires it. */
    mooncake_meta_cleanup_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK(mooncake_meta_run_cleanup_at(m, 61000, &st, NULL));
    printf("cleanup expired %llu pin(s)\n", (unsigned long long)st.expired);

    /* Errors carry a code and a message. */
    mooncake_meta_error *err = NULL;
    if (mooncake_meta_remove(m, NULL, 0, "missing", 7, 0, &err) != MOONCAKE_META_OK) {
        printf("remove: %s (%d)\n", mooncake_meta_error_message(err),
               mooncake_meta_error_code(err));
        mooncake_meta_error_free(err);
    }
    mooncake_meta_master_free(m);
    return 0;
}
