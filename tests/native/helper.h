/*
** helper.h: what every test helper library (gl/, opencl/, vulkan/) shares:
** fail() records why the last call failed, in printf form, and returns -1;
** fail_gpures() says which gpures call failed and why; API exports a symbol
** for the Deno tests. Each library reports the text through its own
** <helper>_last_error(), which returns helper_error.
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
static _Thread_local char helper_error[1024];
#else
static char helper_error[1024];
#endif

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(helper_error, sizeof helper_error, fmt, ap);
  va_end(ap);
  return -1;
}

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
