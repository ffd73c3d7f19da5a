/*
** check.h: the assertion helpers of gpures's C tests (no framework).
**
** CHECK(expr) prints file:line and the expression when it is false and counts
** a failure; it never stops the test, so one run shows every broken rule.
** CHECK_STATUS(expected, call) also prints both status names and the library's
** last error. CHECK_FAILS(status, field, call) checks a failing call: its
** status, the field path gpures_last_error_field() names, and that
** gpures_last_error() is not empty.
**
** RUN(test) runs one test function and prints "ok"/"FAIL" with its name;
** check_finish() prints the totals and is the process's exit status.
** CHECK may be used from any thread.
*/
#ifndef GPURES_TEST_CHECK_H
#define GPURES_TEST_CHECK_H

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "gpures.h"

static atomic_int check_failures;
static atomic_long check_count;
static int check_tests_run, check_tests_failed;

static inline int check_report(int ok, const char *file, int line, const char *text) {
  atomic_fetch_add(&check_count, 1);
  if (!ok) {
    atomic_fetch_add(&check_failures, 1);
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, text);
  }
  return ok;
}

#define CHECK(expr) check_report((expr) ? 1 : 0, __FILE__, __LINE__, #expr)

static inline const char *check_status_name(int status) {
  const char *name = gpures_status_name(status);
  return name ? name : "(unknown status)";
}

static inline int check_status_at(const char *file, int line, const char *text, int got,
                                  int expected) {
  atomic_fetch_add(&check_count, 1);
  if (got == expected) return 1;
  atomic_fetch_add(&check_failures, 1);
  fprintf(stderr, "%s:%d: %s\n    returned %s (%d), expected %s (%d)\n", file, line, text,
          check_status_name(got), got, check_status_name(expected), expected);
  if (got != GPURES_OK)
    fprintf(stderr, "    last error: \"%s\" (field \"%s\")\n", gpures_last_error(),
            gpures_last_error_field());
  return 0;
}

/* The call must return `expected`. */
#define CHECK_STATUS(expected, call) \
  check_status_at(__FILE__, __LINE__, #call, (call), (expected))
#define CHECK_OK(call) CHECK_STATUS(GPURES_OK, call)
/* How the helpers that fuzzers share with the tests (pools.h) report a failed call. */
#define EXPECT_OK(call) CHECK_OK(call)

static inline int check_fails_at(const char *file, int line, const char *text, int got,
                                 int expected, const char *field) {
  int ok = check_status_at(file, line, text, got, expected);
  if (!ok) return 0;
  atomic_fetch_add(&check_count, 1);
  if (strcmp(gpures_last_error_field(), field) != 0) {
    atomic_fetch_add(&check_failures, 1);
    fprintf(stderr, "%s:%d: %s\n    named field \"%s\", expected \"%s\" (error: \"%s\")\n", file,
            line, text, gpures_last_error_field(), field, gpures_last_error());
    return 0;
  }
  if (gpures_last_status() != expected || gpures_last_error()[0] == '\0') {
    atomic_fetch_add(&check_failures, 1);
    fprintf(stderr, "%s:%d: %s\n    last status %s / message \"%s\" do not describe the failure\n",
            file, line, text, check_status_name(gpures_last_status()), gpures_last_error());
    return 0;
  }
  return 1;
}

/* The call must fail with `status`, naming `field` in gpures_last_error_field(). */
#define CHECK_FAILS(status, field, call) \
  check_fails_at(__FILE__, __LINE__, #call, (call), (status), (field))

static inline int check_str_at(const char *file, int line, const char *text, const char *got,
                               const char *expected) {
  atomic_fetch_add(&check_count, 1);
  if (got && expected && strcmp(got, expected) == 0) return 1;
  atomic_fetch_add(&check_failures, 1);
  fprintf(stderr, "%s:%d: %s\n    got      \"%s\"\n    expected \"%s\"\n", file, line, text,
          got ? got : "(null)", expected ? expected : "(null)");
  return 0;
}

/* Two C strings must be equal (NULL never equals anything). */
#define CHECK_STR(got, expected) check_str_at(__FILE__, __LINE__, #got, (got), (expected))

static inline int check_u64_at(const char *file, int line, const char *text, uint64_t got,
                               uint64_t expected) {
  atomic_fetch_add(&check_count, 1);
  if (got == expected) return 1;
  atomic_fetch_add(&check_failures, 1);
  fprintf(stderr, "%s:%d: %s\n    got %" PRIu64 " (0x%" PRIx64 "), expected %" PRIu64
                  " (0x%" PRIx64 ")\n",
          file, line, text, got, got, expected, expected);
  return 0;
}

/* Two integers must be equal; both are shown on failure. */
#define CHECK_EQ(got, expected) \
  check_u64_at(__FILE__, __LINE__, #got " == " #expected, (uint64_t)(got), (uint64_t)(expected))

/* The string must begin with `prefix`. */
#define CHECK_PREFIX(s, prefix)                                                             \
  check_report(strncmp((s), (prefix), strlen(prefix)) == 0, __FILE__, __LINE__,             \
               #s " begins with " #prefix) ||                                               \
      (fprintf(stderr, "    the string is \"%s\"\n", (s)), 0)

#define RUN(test)                                                                           \
  do {                                                                                      \
    int before_ = atomic_load(&check_failures);                                             \
    test();                                                                                 \
    int failed_ = atomic_load(&check_failures) != before_;                                  \
    check_tests_run++;                                                                      \
    check_tests_failed += failed_;                                                          \
    printf("%s %s\n", failed_ ? "FAIL" : "ok  ", #test);                                    \
    fflush(stdout);                                                                         \
  } while (0)

/* Prints the totals; returns the exit status of the test executable. */
static inline int check_finish(const char *suite) {
  int failures = atomic_load(&check_failures);
  printf("%s: %d tests, %d failed; %ld checks, %d failed\n", suite, check_tests_run,
         check_tests_failed, (long)atomic_load(&check_count), failures);
  return failures ? 1 : 0;
}

#endif /* GPURES_TEST_CHECK_H */
