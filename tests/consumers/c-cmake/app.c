/* An out-of-tree C program using an installed libmooncake_meta: create a
 * master on a manual clock, mount a segment, put an object with a 60 s
 * soft pin, read it back and check the deadline started at the End.
 * Exits non-zero, naming the call, on any unexpected result. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <mooncake_meta.h>

static int fail(const char *what, mooncake_meta_status s, mooncake_meta_error *err) {
    fprintf(stderr, "app: %s failed: %s: %s\n", what, mooncake_meta_status_name(s),
            err != NULL ? mooncake_meta_error_message(err) : "(no message)");
    mooncake_meta_error_free(err);
    return 1;
}

#define CALL(what, call)                                                   \
    do {                                                                   \
        mooncake_meta_status s_ = (call);                                  \
        if (s_ != MOONCAKE_META_OK) return fail(what, s_, err);            \
    } while (0)

#define EXPECT(cond)                                                       \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "app: expected %s\n", #cond);                  \
            return 1;                                                      \
        }                                                                  \
    } while (0)

static int run(mooncake_meta_master *m) {
    mooncake_meta_error *err = NULL;
    const uint64_t client = 7;

    uint32_t segment = 0;
    CALL("mount_segment", mooncake_meta_mount_segment(m, client, "seg0", 4, 0x10000000, 64 << 20,
                                                      MOONCAKE_META_POOL_MEMORY, &segment, &err));

    mooncake_meta_write_config wc;
    CALL("write_config_init", mooncake_meta_write_config_init(&wc, sizeof wc, &err));
    wc.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
    wc.flags |= MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
    wc.soft_pin_ttl_ms = 60000;
    mooncake_meta_replica replicas[4];
    size_t n = 0;
    uint64_t token = 0;
    CALL("put_start", mooncake_meta_put_start(m, client, NULL, 0, "prompt/42", 9, 4096, &wc,
                                              replicas, 4, &n, &token, &err));
    EXPECT(n == 1);
    EXPECT(replicas[0].segment_id == segment);
    EXPECT(replicas[0].status == MOONCAKE_META_REPLICA_PROCESSING);
    const uint64_t address = replicas[0].address;

    /* 5 s pass between Start and End: the deadline counts from the End. */
    uint64_t now = 0;
    CALL("advance_time", mooncake_meta_master_advance_time(m, 5000, &now, &err));
    EXPECT(now == 6000);
    CALL("put_end", mooncake_meta_put_end(m, client, NULL, 0, "prompt/42", 9,
                                          MOONCAKE_META_SELECT_ALL, token, &err));

    memset(replicas, 0, sizeof replicas);
    CALL("get_replica_list", mooncake_meta_get_replica_list(m, NULL, 0, "prompt/42", 9, replicas,
                                                            4, &n, &err));
    EXPECT(n == 1);
    EXPECT(replicas[0].status == MOONCAKE_META_REPLICA_COMPLETE);
    EXPECT(replicas[0].address == address);
    EXPECT(replicas[0].size == 4096);

    int has = 0;
    uint64_t deadline = 0;
    CALL("soft_pin_deadline", mooncake_meta_soft_pin_deadline(m, NULL, 0, "prompt/42", 9, &has,
                                                              &deadline, &err));
    EXPECT(has == 1);
    EXPECT(deadline == 6000 + 60000);

    printf("libmooncake_meta %s (ABI %u): put prompt/42 (4096 B at 0x%" PRIx64
           " on segment %u), read back 1 complete replica, soft pin deadline %" PRIu64 "\n",
           mooncake_meta_version(), (unsigned)mooncake_meta_abi_version(), address,
           (unsigned)segment, deadline);
    return 0;
}

int main(void) {
    if (mooncake_meta_abi_version() != MOONCAKE_META_ABI_VERSION) {
        fprintf(stderr, "app: linked library has ABI %u, the header says %u\n",
                (unsigned)mooncake_meta_abi_version(), (unsigned)MOONCAKE_META_ABI_VERSION);
        return 1;
    }
    mooncake_meta_error *err = NULL;
    mooncake_meta_config *cfg = NULL;
    mooncake_meta_master *m = NULL;
    CALL("config_new", mooncake_meta_config_new(&cfg, &err));
    mooncake_meta_status s = mooncake_meta_config_set_manual_clock(cfg, 1000, &err);
    if (s == MOONCAKE_META_OK) s = mooncake_meta_master_new(cfg, &m, &err);
    mooncake_meta_config_free(cfg);
    if (s != MOONCAKE_META_OK) return fail("master_new", s, err);
    int rc = run(m);
    mooncake_meta_master_free(m);
    return rc;
}
