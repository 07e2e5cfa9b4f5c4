// Quick start in C++: a soft-pinned write, a read that does not extend the
// pin, and expiry on a manual clock. Built and run by `make readme-check`.
#include <mooncake_meta.hpp>

#include <cstdio>

namespace mm = mooncake_meta;

int main() try {
    mm::config cfg;
    cfg.set_manual_clock(1000);
    mm::master m(cfg); // the master copies cfg; both free themselves

    // Client 1 mounts 64 MiB of memory at address 0x10000000.
    m.mount_segment(1, "seg0", 0x10000000, 64 << 20);

    // Write "k" with ENABLE and a 60 s soft pin.
    auto w = m.put_start(1, "k", 4096, mm::write_config().soft_pin_ttl_ms(60000));
    // ... the client writes 4096 bytes at w.replicas[0].address ...
    m.put_end(1, "k", mm::selector::all, w.token);

    // The deadline starts at the End: 1000 + 60000. Reads never extend it.
    m.advance_time(59000);
    std::vector<mm::replica> replicas = m.get_replica_list("k");
    std::optional<std::uint64_t> deadline = m.soft_pin_deadline("k");
    std::printf("pinned until %llu (read %zu replica)\n",
                static_cast<unsigned long long>(deadline.value_or(0)), replicas.size());

    // At the deadline the pin is due; cleanup expires it.
    mm::cleanup_stats st = m.run_cleanup_at(61000);
    std::printf("cleanup expired %llu pin(s)\n", static_cast<unsigned long long>(st.expired));

    // Errors are exceptions carrying the status code and the library's message.
    try {
        m.remove("missing");
    } catch (const mm::error &e) {
        std::printf("remove: %s (%d %s)\n", e.what(), e.code(), e.name());
    }
    return 0;
} catch (const mm::error &e) {
    std::fprintf(stderr, "%s: %s\n", e.name(), e.what());
    return 1;
}
