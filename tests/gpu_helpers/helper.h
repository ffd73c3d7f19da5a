/*
** helper.h: what every GPU test helper library (gl/, opencl/, vulkan/,
** probe/) shares. Its conventions: exported functions carry API and the
** library's one prefix; they return 0 (or a value) on success and a negative
** number on failure, the reason recorded by fail() (-1) or fail_with() (a
** code the caller tells apart, such as "library absent: skip"), in printf
** form; fail_gpures() says which gpures call failed and why. Each library
** reports the text through its own <prefix>_last_error(), which returns
** helper_error.
**
** Define HELPER_ERROR_THREAD_LOCAL before including it when the library's
** calls come from many threads (each thread then sees its own last error).
*/
#ifndef GPURES_TEST_HELPER_H
#define GPURES_TEST_HELPER_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpures.h"

#define API __attribute__((visibility("default")))

#ifdef HELPER_ERROR_THREAD_LOCAL
static _Thread_local char helper_error[2048];
#else
static char helper_error[2048];
#endif

static int fail_with(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static int fail_with(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(helper_error, sizeof helper_error, fmt, ap);
  va_end(ap);
  return code;
}

#define fail(...) fail_with(-1, __VA_ARGS__)

static __attribute__((unused)) int fail_gpures(const char *what, int status) {
  return fail("%s: %s (%s)", what, gpures_status_name(status), gpures_last_error());
}

/*
** A consumer's first step: describes `handle` with `describe` (a
** gpures_<kind>_describe) into `desc`, a struct of that kind, zeroed first.
** Declares `int status`; when the description fails, the calling function
** returns fail_gpures()'s -1.
*/
#define HELPER_DESCRIBE(describe, handle, desc)      \
  memset(&(desc), 0, sizeof(desc));                  \
  (desc).struct_size = sizeof(desc);                 \
  int status = describe((handle), &(desc));          \
  if (status != GPURES_OK) return fail_gpures(#describe, status)

#endif /* GPURES_TEST_HELPER_H */
