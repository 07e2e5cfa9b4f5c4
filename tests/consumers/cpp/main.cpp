// An out-of-tree C++ consumer of an installed libmooncake_meta: only the
// installed mooncake_meta.hpp and pkg-config are used (build-and-run.sh).
// A master on a manual clock, one segment, a soft-pinned write, a read, and
// the deadline it committed; exits non-zero if anything differs.
#include <mooncake_meta.hpp>

#include <cstdio>
#include <cstring>

namespace mm = mooncake_meta;

int main() {
    if (mm::abi_version() != MOONCAKE_META_ABI_VERSION) {
        std::fprintf(stderr, "ABI %u, built for %d\n", mm::abi_version(), MOONCAKE_META_ABI_VERSION);
        return 1;
    }
    try {
        mm::config cfg;
        cfg.set_manual_clock(1000)
            .set_soft_pin_cleanup_interval_ms(0)
            .set_eviction_check_interval_ms(0)
            .set_sweep_interval_ms(0);
        mm::master m(cfg);
        std::uint32_t seg = m.mount_segment(1, "seg0", 0x10000000, 64 << 20);

        // Start at 1000, End at 1500: the 60 s deadline starts at the End.
        mm::write_result w = m.put_start(1, "prompt/42", 4096, mm::write_config().soft_pin_ttl_ms(60000));
        m.advance_time(500);
        m.put_end(1, "prompt/42", mm::selector::all, w.token);

        std::vector<mm::replica> rs = m.get_replica_list("prompt/42");
        std::optional<std::uint64_t> deadline = m.soft_pin_deadline("prompt/42");
        std::printf("library %s, segment %s (id %u)\n", std::string(mm::version()).c_str(),
                    m.segment_name(seg).c_str(), seg);
        std::printf("read %zu replica(s) of %llu bytes at 0x%llx\n", rs.size(),
                    static_cast<unsigned long long>(rs.empty() ? 0 : rs[0].size),
                    static_cast<unsigned long long>(rs.empty() ? 0 : rs[0].address));
        std::printf("soft pin deadline %llu\n", static_cast<unsigned long long>(deadline.value_or(0)));

        bool ok = rs.size() == 1 && rs[0].size == 4096 &&
                  rs[0].status == MOONCAKE_META_REPLICA_COMPLETE && deadline == 61500u;
        try {
            m.remove("missing");
            ok = false;
        } catch (const mm::error &e) {
            std::printf("remove(\"missing\"): %s (%d)\n", e.name(), e.code());
            ok = ok && e.code() == MOONCAKE_META_OBJECT_NOT_FOUND;
        }
        std::printf("cpp consumer: %s\n", ok ? "ok" : "FAILED");
        return ok ? 0 : 1;
    } catch (const mm::error &e) {
        std::fprintf(stderr, "cpp consumer: %s: %s\n", e.name(), e.what());
        return 1;
    }
}
