/* status.c: status names and the thread-local last error. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#if defined(_MSC_VER)
#  define GPURES__THREAD_LOCAL __declspec(thread)
#else
#  define GPURES__THREAD_LOCAL _Thread_local
#endif

static GPURES__THREAD_LOCAL struct {
  int status;
  char message[512];
  char field[96];
} last;

const char *gpures_status_name(int status) {
  switch (status) {
#define NAME(code, UPPER, message) \
  case code:                       \
    return #UPPER;
    GPURES_STATUS_LIST(NAME)
#undef NAME
  }
  return NULL;
}

const char *gpures_status_message(int status) {
  switch (status) {
#define MESSAGE(code, UPPER, message) \
  case code:                          \
    return message;
    GPURES_STATUS_LIST(MESSAGE)
#undef MESSAGE
  }
  return NULL;
}

const char *gpures_last_error(void) { return last.message; }
const char *gpures_last_error_field(void) { return last.field; }
int gpures_last_status(void) { return last.status; }

int gpures__fail(gpures__op op, int status, const char *field, const char *fmt, ...) {
  const char *kind = op.kind ? gpures__kind_name(op.kind) : NULL;
  int n = snprintf(last.message, sizeof last.message, "Cannot %s%s%s: ", op.verb,
                   kind ? " " : "", kind ? kind : "");
  if (n < 0) n = 0;
  if ((size_t)n < sizeof last.message) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last.message + n, sizeof last.message - (size_t)n, fmt, ap);
    va_end(ap);
  }
  snprintf(last.field, sizeof last.field, "%s", field ? field : "");
  last.status = status;
  return status;
}

int gpures__os_fail(gpures__op op, const char *field, const char *what, int err) {
  return gpures__fail(op, GPURES_E_OS_ERROR, field, "%s failed: %s (%s)", what,
                      gpures__errno_name(err), strerror(err));
}

int gpures__refail(gpures__op op, int status) {
  char message[sizeof last.message], field[sizeof last.field];
  const char *colon = strstr(last.message, ": ");
  snprintf(message, sizeof message, "%s", colon ? colon + 2 : last.message);
  snprintf(field, sizeof field, "%s", last.field);
  return gpures__fail(op, status, field, "%s", message);
}
