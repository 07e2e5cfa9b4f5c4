/*
 * Test-only entry points of libmooncake_meta, exported only by a build with
 * the `test-hooks` cargo feature (target-hooks/). They are deliberately not
 * in the public header; scripts/check-symbols.sh checks that this list is
 * exactly what the hooks build adds and that the default build has none.
 * Keep in sync with src/test_hooks.rs.
 */
#ifndef MOONCAKE_META_TEST_HOOKS_H
#define MOONCAKE_META_TEST_HOOKS_H

#include "mooncake_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Panics while holding m, poisoning it: returns MOONCAKE_META_PANIC, and
 * every later call on m returns MOONCAKE_META_PANIC; only
 * mooncake_meta_master_free still works. NULL m: MOONCAKE_META_NULL_ARGUMENT. */
mooncake_meta_status mooncake_meta_test_panic(const mooncake_meta_master *m,
                                              mooncake_meta_error **err);

/* Panics while holding cfg, poisoning it: later calls on cfg return
 * MOONCAKE_META_PANIC; mooncake_meta_config_free still works. */
mooncake_meta_status mooncake_meta_test_panic_with_config(mooncake_meta_config *cfg,
                                                          mooncake_meta_error **err);

/* A batch call of count keys whose body panics once m is borrowed: returns
 * MOONCAKE_META_PANIC with every out_statuses[i] MOONCAKE_META_PANIC, and
 * poisons m. NULL m: MOONCAKE_META_NULL_ARGUMENT in the return and every
 * status. */
mooncake_meta_status mooncake_meta_test_panic_in_batch(const mooncake_meta_master *m, size_t count,
                                                       int32_t *out_statuses,
                                                       mooncake_meta_error **err);

#ifdef __cplusplus
}
#endif

#endif /* MOONCAKE_META_TEST_HOOKS_H */
