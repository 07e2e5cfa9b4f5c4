// The header is valid C++17, safe to include twice, and links with C linkage.
#include "mooncake_meta.h"
#include "mooncake_meta.h"

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(std::is_same<mooncake_meta_status, int32_t>::value, "status is int32_t");
static_assert(std::is_standard_layout<mooncake_meta_write_config>::value, "C layout");
static_assert(sizeof(mooncake_meta_replicate_config) == 3 * sizeof(size_t) + 2 * sizeof(int) ||
                  sizeof(void *) != 8,
              "legacy layout");

int main() {
    int failed = 0;
    auto check = [&failed](bool ok, const char *what) {
        if (!ok) {
            std::fprintf(stderr, "check failed: %s\n", what);
            failed++;
        }
    };
    check(std::strcmp(mooncake_meta_version(), MOONCAKE_META_VERSION_STRING) == 0, "version");
    check(mooncake_meta_abi_version() == MOONCAKE_META_ABI_VERSION, "abi");

    mooncake_meta_error *err = nullptr;
    mooncake_meta_config *cfg = nullptr;
    check(mooncake_meta_config_new(&cfg, &err) == MOONCAKE_META_OK, "config_new");
    check(mooncake_meta_config_set_allow_evict_soft_pinned_objects(cfg, 5, &err) ==
              MOONCAKE_META_INVALID_PARAMS,
          "bad boolean");
    check(err != nullptr && mooncake_meta_error_code(err) == MOONCAKE_META_INVALID_PARAMS, "error");
    mooncake_meta_error_free(err);
    mooncake_meta_config_free(cfg);

    mooncake_meta_write_config wc;
    check(mooncake_meta_write_config_init(&wc, sizeof wc, nullptr) == MOONCAKE_META_OK, "init");
    wc.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
    wc.flags = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
    wc.soft_pin_ttl_ms = 1000;
    check(mooncake_meta_write_config_validate(&wc, nullptr) == MOONCAKE_META_OK, "validate");

    std::printf("test_cxx [c++17]\ntest_cxx: %d passed, %d failed\n", failed ? 0 : 1, failed ? 1 : 0);
    return failed ? 1 : 0;
}
