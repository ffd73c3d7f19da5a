/*
** fds.c: the fds a handle owns (DmaBufHandle, VkOpaqueFd). Create either
** adopts the caller's fds or duplicates them, as the caller chose; either
** way each becomes close-on-exec, and the handle's last release closes them.
** Callers skip the kinds that own none (gpures__variant.owns_fds): create
** and the last release of every other kind pay nothing for fds.
*/
#include <errno.h>

#include "table.h"

int gpures__fds_acquire(gpures__op op, const gpures__variant *v, void *desc, bool adopt) {
  int taken[8];
  bool duplicated[8];
  uint32_t n_taken = 0;
  for (uint32_t r = 0; r < v->num_fields; r++) {
    const gpures_field_info *f = &v->fields[r];
    if (f->type != GPURES_FIELD_FD) continue;
    uint32_t n = gpures__field_len(f, desc);
    for (uint32_t i = 0; i < n && n_taken < GPURES__LEN(taken); i++) {
      int fd = (int)(int32_t)gpures__field_get(f, desc, i);
      bool repeated = false; /* one fd named twice must not be closed twice */
      for (uint32_t j = 0; j < n_taken; j++) repeated |= adopt && taken[j] == fd;
      bool dup = !adopt || repeated;
      int own = dup ? gpures__fd_dup(fd) : (gpures__fd_adopt(fd) == 0 ? fd : -1);
      if (own < 0) {
        int err = errno; /* before the closes below can change it */
        char path[96];
        gpures__field_path(f, i, path, sizeof path);
        for (uint32_t j = 0; j < n_taken; j++)
          if (duplicated[j]) gpures__fd_close(taken[j]);
        return gpures__fail(op, GPURES_E_OS_ERROR, path, "%s (fd %d) could not be %s: %s (%s)",
                            path, fd, dup ? "duplicated" : "adopted", gpures__errno_name(err),
                            gpures__errno_meaning(err));
      }
      gpures__field_set(f, desc, i, (uint64_t)(int64_t)own);
      taken[n_taken] = own;
      duplicated[n_taken++] = dup;
    }
  }
  return GPURES_OK;
}

void gpures__fds_drop(const gpures__variant *v, void *desc, const void *caller) {
  for (uint32_t r = 0; r < v->num_fields; r++) {
    const gpures_field_info *f = &v->fields[r];
    if (f->type != GPURES_FIELD_FD) continue;
    uint32_t n = gpures__field_len(f, desc);
    for (uint32_t i = 0; i < n; i++) { /* close only what gpures made */
      uint64_t own = gpures__field_get(f, desc, i);
      if (own != gpures__field_get(f, caller, i)) gpures__fd_close((int)(int32_t)own);
    }
  }
}

void gpures__fds_close(const gpures__variant *v, const void *desc) {
  for (uint32_t r = 0; r < v->num_fields; r++) {
    const gpures_field_info *f = &v->fields[r];
    if (f->type != GPURES_FIELD_FD) continue;
    uint32_t n = gpures__field_len(f, desc);
    for (uint32_t i = 0; i < n; i++) gpures__fd_close((int)(int32_t)gpures__field_get(f, desc, i));
  }
}
