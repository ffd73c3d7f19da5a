/*
** status.c: status names and the thread-local last error. Every layer
** reports through here, so this file knows nothing above the os layer: the
** kind names of its messages come from GPURES_KIND_LIST itself.
*/
#include <stdio.h>
#include <string.h>

#include "../internal.h"

static GPURES__THREAD_LOCAL struct {
  int status;
  char message[512];
  char field[96];
} last;

/* Failures made while the thread works for someone else (a release's refill) record nothing. */
static GPURES__THREAD_LOCAL int quiet;

void gpures__errors_quiet(bool on) { quiet += on ? 1 : -1; }

static const char *const status_names[] = {
#define NAME(code, UPPER, message) [code] = #UPPER,
  GPURES_STATUS_LIST(NAME)
#undef NAME
};

static const char *const status_messages[] = {
#define MESSAGE(code, UPPER, message) [code] = message,
  GPURES_STATUS_LIST(MESSAGE)
#undef MESSAGE
};

static const char *const kind_names[] = {
#define KIND_NAME(id, UPPER, snake, Name, own, os) [id] = #Name,
  GPURES_EVERY_KIND_LIST(KIND_NAME)
#undef KIND_NAME
};

const char *gpures_status_name(int status) {
  return status >= 0 && (size_t)status < GPURES__LEN(status_names) ? status_names[status] : NULL;
}

const char *gpures_status_message(int status) {
  return status >= 0 && (size_t)status < GPURES__LEN(status_messages) ? status_messages[status]
                                                                       : NULL;
}

const char *gpures__kind_name(uint32_t kind) {
  return kind < GPURES__LEN(kind_names) && kind_names[kind] ? kind_names[kind] : "handle";
}

const char *gpures_last_error(void) { return last.message; }
const char *gpures_last_error_field(void) { return last.field; }
int gpures_last_status(void) { return last.status; }

int gpures__fail(gpures__op op, int status, const char *field, const char *fmt, ...) {
  if (quiet) return status;
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

int gpures__fail_table_full(gpures__op op, uint32_t capacity, uint32_t retired, const char *what,
                            const char *advice) {
  return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "",
                      "all %u %s (%u more were retired after their last generation); %s",
                      capacity - retired, what, retired, advice);
}

int gpures__refail(gpures__op op, int status) {
  char message[sizeof last.message], field[sizeof last.field];
  const char *colon = strstr(last.message, ": ");
  snprintf(message, sizeof message, "%s", colon ? colon + 2 : last.message);
  snprintf(field, sizeof field, "%s", last.field);
  return gpures__fail(op, status, field, "%s", message);
}
