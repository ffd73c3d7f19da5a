/*
** per_handle.c: what a consumer does to a live handle besides describing it:
** take a duplicate of one of its fds to import, tell a ring-pool producer the
** slot is free, tell the producer its own sync succeeded. Each pins the
** handle for the duration, so a release on another thread cannot pull the
** descriptor out from under it.
*/
#include <errno.h>

#include "table.h"

/* Runs `fn` on a pinned slot's descriptor. */
typedef int (*slot_fn)(gpures__op op, slot *s, void *arg);
static int with_slot(gpures_handle handle, const char *verb, slot_fn fn, void *arg) {
  slot *s = NULL;
  int status = pin(handle, verb, &s);
  if (status != GPURES_OK) return status;
  status = fn(op_of(verb, handle), s, arg);
  int unpinned = unpin(handle, verb);
  return status != GPURES_OK ? status : unpinned;
}

typedef struct dup_arg {
  uint32_t index;
  int *out_fd;
} dup_arg;

static int dup_fd(gpures__op op, slot *s, void *arg) {
  dup_arg *a = arg;
  const gpures__variant *v = gpures__variant_of(s->kind);
  for (uint32_t r = 0; r < v->num_fields; r++) {
    const gpures_field_info *f = &v->fields[r];
    if (f->type != GPURES_FIELD_FD) continue;
    uint32_t n = gpures__field_len(f, &s->desc);
    if (a->index >= n)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "index",
                          "index %u is out of range; the handle has %u fds", a->index, n);
    int own = (int)(int32_t)gpures__field_get(f, &s->desc, a->index);
    int fd = gpures__fd_dup(own);
    if (fd < 0) {
      int err = errno;
      char path[96];
      gpures__field_path(f, a->index, path, sizeof path);
      return gpures__fail(op, GPURES_E_OS_ERROR, "index", "%s (fd %d) could not be duplicated: %s (%s)",
                          path, own, gpures__errno_name(err), gpures__errno_meaning(err));
    }
    *a->out_fd = fd;
    return GPURES_OK;
  }
  return gpures__fail(op, GPURES_E_WRONG_KIND, "handle", "%s owns no fds",
                      gpures__kind_name(s->kind));
}

int gpures_dup_fd(gpures_handle handle, uint32_t index, int *out_fd) {
  if (!out_fd)
    return gpures__fail(op_of("duplicate fd of", handle), GPURES_E_NULL_POINTER, "outFd", "outFd is null");
  *out_fd = -1;
  dup_arg a = {index, out_fd};
  return with_slot(handle, "duplicate fd of", dup_fd, &a);
}

static int slot_release(gpures__op op, slot *s, void *arg) {
  (void)arg;
  const gpures__variant *v = gpures__variant_of(s->kind);
  const gpures_field_info *gate = gpures__field_find(v, "slotRelease.gate");
  if (!gate) return gpures__fail(op, GPURES_E_WRONG_KIND, "handle", "%s has no slot release",
                                 gpures__kind_name(s->kind));
  if (!gpures__field_len(gate, &s->desc)) return GPURES_OK;
  const gpures_field_info *value = gpures__field_find(v, "slotRelease.value");
  _Atomic uint64_t *target = (_Atomic uint64_t *)(uintptr_t)gpures__field_get(gate, &s->desc, 0);
  atomic_store_explicit(target, gpures__field_get(value, &s->desc, 0), memory_order_release);
  return GPURES_OK;
}

int gpures_slot_release(gpures_handle handle) {
  return with_slot(handle, "release slot of", slot_release, NULL);
}

static int mark_consumed(gpures__op op, slot *s, void *arg) {
  uint32_t *heard = arg;
  /* Queue the event first: a call that fails for want of memory then has no effect at all. */
  if (s->consumed_events &&
      gpures__event_post(s->queue, s->token, GPURES_EVENT_MARK_CONSUMED) != GPURES_OK)
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory to queue the event");
  if (s->keep_alive.mark_consumed) s->keep_alive.mark_consumed(s->keep_alive.ctx);
  *heard = s->consumed_events || s->keep_alive.mark_consumed;
  return GPURES_OK;
}

int gpures_mark_consumed(gpures_handle handle) {
  uint32_t heard;
  return with_slot(handle, "mark consumed", mark_consumed, &heard);
}

int gpures_mark_consumed_heard(gpures_handle handle, uint32_t *out_heard) {
  if (!out_heard)
    return gpures__fail(op_of("mark consumed", handle), GPURES_E_NULL_POINTER, "outHeard",
                        "outHeard is null");
  *out_heard = 0;
  return with_slot(handle, "mark consumed", mark_consumed, out_heard);
}
