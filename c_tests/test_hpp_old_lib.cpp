// include/mooncake_meta.hpp with an older library of the same ABI major,
// emulated: linked with -Wl,--wrap=mooncake_meta_metrics, the header's
// calls of mooncake_meta_metrics reach __wrap_mooncake_meta_metrics below,
// which, while `emulate_old_library` is set, offers the library only the
// bytes a library from before clock_skew_ms (metrics version 2) fills, as
// such a library would: it fills that much and sets struct_size to it.
// Creating a master must then fail with STRUCT_SIZE_UNSUPPORTED and leave
// nothing behind (run under ASan and valgrind, which fail on a leak).
#include "mooncake_meta.hpp"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

#ifndef CHECK_MODE
#define CHECK_MODE "unspecified"
#endif

namespace mm = mooncake_meta;

static bool emulate_old_library = false;
static int wrapped_calls = 0;
// The size of the metrics struct's version 1: up to clock_skew_ms.
constexpr std::uint32_t v1_size =
    static_cast<std::uint32_t>(offsetof(mooncake_meta_metrics_snapshot, clock_skew_ms));
static_assert(v1_size == 192, "version 1 of the metrics struct ends at clock_skew_ms");

extern "C" {
mooncake_meta_status __real_mooncake_meta_metrics(const mooncake_meta_master *m,
                                                  mooncake_meta_metrics_snapshot *out,
                                                  mooncake_meta_error **err);

mooncake_meta_status __wrap_mooncake_meta_metrics(const mooncake_meta_master *m,
                                                  mooncake_meta_metrics_snapshot *out,
                                                  mooncake_meta_error **err) {
    wrapped_calls++;
    if (emulate_old_library && out != nullptr && out->struct_size > v1_size)
        out->struct_size = v1_size;
    return __real_mooncake_meta_metrics(m, out, err);
}
}

namespace {

int failures = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);         \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

// The error creating a master with `make` throws; code 0 when none.
template <class F> mm::error creation_error(F make) {
    try {
        make();
    } catch (const mm::error &e) {
        return e;
    }
    return mm::error(0, "");
}

std::string expected_message() {
    return "mooncake_meta.hpp: the linked libmooncake_meta (version " +
           std::string(mm::version()) + ") fills " + std::to_string(v1_size) + " of the " +
           std::to_string(sizeof(mooncake_meta_metrics_snapshot)) +
           " bytes of mooncake_meta_metrics_snapshot: it is older than this header";
}

void an_older_library_is_refused_at_creation() {
    emulate_old_library = true;
    const int before = wrapped_calls;
    // The defaults, a configuration, a standby: each refused, the master
    // freed (a leak would fail ASan and valgrind).
    mm::error d = creation_error([] { mm::master m; });
    CHECK(d.code() == MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED);
    CHECK(std::string(d.what()) == expected_message());
    mm::config cfg;
    cfg.set_manual_clock(1000).set_soft_pin_cleanup_interval_ms(0).set_sweep_interval_ms(0);
    mm::error c = creation_error([&] { mm::master m(cfg); });
    CHECK(c.code() == MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED);
    CHECK(std::string(c.what()) == expected_message());
    cfg.set_standby(true);
    CHECK(creation_error([&] { mm::master m(cfg); }).code() ==
          MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED);
    CHECK(wrapped_calls == before + 3);
    // What the check guards against: the older library's struct reads its
    // newer fields as 0 (a standby as a primary).
    mooncake_meta_master *raw = nullptr;
    mm::c_error err;
    CHECK(mooncake_meta_master_new(cfg.get(), &raw, err.out()) == MOONCAKE_META_OK);
    mm::master adopted(raw); // adopting checks nothing
    const mm::metrics_snapshot s = adopted.metrics();
    CHECK(s.struct_size == v1_size);
    CHECK(s.standby == 0);
    CHECK(adopted.is_standby());
    emulate_old_library = false;
}

void the_same_library_is_accepted() {
    emulate_old_library = false;
    const int before = wrapped_calls;
    mm::master m;
    CHECK(wrapped_calls == before + 1); // the creation's check went through the wrapper
    CHECK(m.metrics().struct_size == sizeof(mooncake_meta_metrics_snapshot));
}

} // namespace

int main() {
    an_older_library_is_refused_at_creation();
    the_same_library_is_accepted();
    std::printf("test_hpp_old_lib [" CHECK_MODE ", C++%ld]: %s\n", __cplusplus / 100 % 100,
                failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
