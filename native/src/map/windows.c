/*
** windows.c: CPU mappings on Windows. The kinds that own fds do not exist
** there, so there is nothing to map: every call says so.
*/
#if defined(_WIN32)
#include "../internal.h"

static int unsupported(const char *verb) {
  gpures__op op = {verb, 0};
  return gpures__fail(op, GPURES_E_UNSUPPORTED_PLATFORM, "",
                      "mappings need Unix domain sockets and owned fds, which Windows lacks");
}

int gpures_map(gpures_handle handle, uint32_t index, uint32_t flags, void **out_ptr,
               uint64_t *out_size) {
  (void)handle, (void)index, (void)flags;
  if (out_ptr) *out_ptr = NULL;
  if (out_size) *out_size = 0;
  return unsupported("map");
}

int gpures_unmap(void *ptr) {
  (void)ptr;
  return unsupported("unmap");
}

uint64_t gpures_live_mappings(void) { return 0; }
#endif
