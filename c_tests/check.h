/*
 * A tiny assertion helper for the C tests: checks that report file:line and
 * keep going, a test runner, and a closing "NAME: N passed, M failed" line
 * (the exit status is non-zero if anything failed).
 *
 *   static void config_round_trip(void) {
 *       mooncake_meta_error *err = NULL;
 *       mooncake_meta_config *cfg = NULL;
 *       CHECK_OK(mooncake_meta_config_new(&cfg, &err), err);
 *       CHECK_FAILS(mooncake_meta_config_set_allow_evict_soft_pinned_objects(cfg, 2, &err),
 *                   MOONCAKE_META_INVALID_PARAMS, err, "allow must be 0 or 1");
 *       mooncake_meta_config_free(cfg);
 *   }
 *   int main(void) { RUN_TEST(config_round_trip); return check_summary("test_config"); }
 */
#ifndef MOONCAKE_META_C_TESTS_CHECK_H
#define MOONCAKE_META_C_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mooncake_meta.h"

#ifndef CHECK_MODE
#define CHECK_MODE "unspecified"
#endif

static struct {
    int failures; /* failed checks in the current test */
    int passed;   /* tests */
    int failed;   /* tests */
} check_state;

static inline void check_fail(const char *file, int line, const char *what) {
    fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
    check_state.failures++;
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) check_fail(__FILE__, __LINE__, #cond);                                        \
    } while (0)

#define CHECK_EQ_INT(actual, expected)                                                             \
    do {                                                                                           \
        long long check_a_ = (long long)(actual), check_e_ = (long long)(expected);                \
        if (check_a_ != check_e_) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s == %s (got %lld, expected %lld)\n",          \
                    __FILE__, __LINE__, #actual, #expected, check_a_, check_e_);                   \
            check_state.failures++;                                                                \
        }                                                                                          \
    } while (0)

static inline void check_str(const char *file, int line, const char *expr, const char *actual,
                             const char *expected, int whole) {
    int ok = actual != NULL && (whole ? strcmp(actual, expected) == 0
                                      : strstr(actual, expected) != NULL);
    if (!ok) {
        fprintf(stderr, "%s:%d: check failed: %s %s \"%s\" (got \"%s\")\n", file, line, expr,
                whole ? "==" : "contains", expected, actual ? actual : "(NULL)");
        check_state.failures++;
    }
}

#define CHECK_STR_EQ(actual, expected) check_str(__FILE__, __LINE__, #actual, (actual), (expected), 1)
#define CHECK_CONTAINS(actual, needle) check_str(__FILE__, __LINE__, #actual, (actual), (needle), 0)

/* A call that must succeed; on failure prints the status and message and
 * frees the error, leaving `err` NULL. */
static inline void check_ok(const char *file, int line, const char *expr, mooncake_meta_status st,
                            mooncake_meta_error **err) {
    if (st != MOONCAKE_META_OK) {
        fprintf(stderr, "%s:%d: check failed: %s returned %s: %s\n", file, line, expr,
                mooncake_meta_status_name(st), *err ? mooncake_meta_error_message(*err) : "");
        check_state.failures++;
    }
    mooncake_meta_error_free(*err);
    *err = NULL;
}

#define CHECK_OK(call, err) check_ok(__FILE__, __LINE__, #call, (call), &(err))

/* A call that must fail with `expected`, set `err` to an error carrying the
 * same code and, unless `needle` is NULL, a message containing it. Frees the
 * error, leaving `err` NULL. */
static inline void check_fails(const char *file, int line, const char *expr, mooncake_meta_status st,
                               mooncake_meta_status expected, mooncake_meta_error **err,
                               const char *needle) {
    if (st != expected) {
        fprintf(stderr, "%s:%d: check failed: %s returned %s, expected %s (%s)\n", file, line, expr,
                mooncake_meta_status_name(st), mooncake_meta_status_name(expected),
                *err ? mooncake_meta_error_message(*err) : "no error object");
        check_state.failures++;
    } else if (*err == NULL) {
        fprintf(stderr, "%s:%d: check failed: %s set no error object\n", file, line, expr);
        check_state.failures++;
    } else {
        if (mooncake_meta_error_code(*err) != expected) {
            fprintf(stderr, "%s:%d: check failed: %s: error code %d != status %d\n", file, line,
                    expr, (int)mooncake_meta_error_code(*err), (int)expected);
            check_state.failures++;
        }
        if (needle != NULL) check_str(file, line, expr, mooncake_meta_error_message(*err), needle, 0);
    }
    mooncake_meta_error_free(*err);
    *err = NULL;
}

#define CHECK_FAILS(call, expected, err, needle)                                                   \
    check_fails(__FILE__, __LINE__, #call, (call), (expected), &(err), (needle))

static inline void check_run(const char *name, void (*test)(void)) {
    check_state.failures = 0;
    test();
    if (check_state.failures == 0) {
        check_state.passed++;
    } else {
        check_state.failed++;
        fprintf(stderr, "FAILED: %s (%d failed checks)\n", name, check_state.failures);
    }
}

#define RUN_TEST(fn) check_run(#fn, fn)

/* Prints "suite: N passed, M failed" and returns the exit status. */
static inline int check_summary(const char *suite) {
    printf("%s [%s]\n%s: %d passed, %d failed\n", suite, CHECK_MODE, suite, check_state.passed,
           check_state.failed);
    fflush(stdout);
    return check_state.failed == 0 && check_state.passed > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif /* MOONCAKE_META_C_TESTS_CHECK_H */
