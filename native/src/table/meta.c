/*
** meta.c: what a handle carries besides its descriptor: frame metadata, and
** for a frame over someone else's buffer (a pool's, a session's), that
** buffer's identity. The descriptor never changes after create, but metadata
** may be set while other threads read it, so each access holds one of a few
** locks, chosen by slot.
*/
#include "table.h"

static gpures__lock meta_locks[64];

static gpures__lock *meta_lock(gpures_handle h) { return &meta_locks[handle_index(h) % 64u]; }

int gpures_meta_set(gpures_handle handle, const gpures_frame_meta *meta) {
  gpures__op op = op_of("set metadata of", handle);
  gpures_frame_meta local;
  memset(&local, 0, sizeof local);
  if (meta) {
    int status = gpures__copy_versioned(op, "meta.structSize", meta, sizeof local, &local);
    if (status != GPURES_OK) return status;
  }
  slot *s = NULL;
  int status = pin(handle, op.verb, &s);
  if (status != GPURES_OK) return status;
  uint32_t width, height;
  gpures__desc_extent(gpures__variant_of(s->kind), &s->desc, &width, &height);
  if (meta) status = gpures__meta_validate(op, &local, width, height);
  if (status == GPURES_OK) {
    local.struct_size = sizeof local;
    gpures__lock_acquire(meta_lock(handle));
    s->meta = local;
    gpures__lock_release(meta_lock(handle));
  }
  int unpinned = unpin(handle, op.verb);
  return status != GPURES_OK ? status : unpinned;
}

int gpures_meta_get(gpures_handle handle, gpures_frame_meta *out) {
  gpures__op op = op_of("read metadata of", handle);
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  uint32_t size = struct_size_of(out);
  int status = gpures__check_struct_size(op, "structSize", size);
  if (status != GPURES_OK) return status;
  slot *s = NULL;
  if ((status = pin(handle, op.verb, &s)) != GPURES_OK) return status;
  gpures_frame_meta copy;
  gpures__lock_acquire(meta_lock(handle));
  copy = s->meta;
  gpures__lock_release(meta_lock(handle));
  uint32_t n = size < sizeof copy ? size : (uint32_t)sizeof copy;
  copy.struct_size = n;
  memcpy(out, &copy, n);
  return unpin(handle, op.verb);
}

int gpures_buffer_id(gpures_handle handle, uint64_t *out_id) {
  gpures__op op = op_of("read buffer id of", handle);
  if (!out_id) return gpures__fail(op, GPURES_E_NULL_POINTER, "outId", "outId is null");
  *out_id = 0;
  slot *s = NULL;
  int status = pin(handle, op.verb, &s);
  if (status != GPURES_OK) return status;
  *out_id = s->borrow.buffer_id;
  return unpin(handle, op.verb);
}

int gpures__frame_retire(gpures_handle handle) {
  slot *s = NULL;
  int status = pin(handle, "retire", &s);
  if (status != GPURES_OK) return status;
  atomic_store_explicit(&s->retired, true, memory_order_release);
  return unpin(handle, "retire");
}

static void (*_Atomic buffer_gone_hook)(uint64_t id);

void gpures__set_buffer_gone_hook(void (*hook)(uint64_t id)) {
  atomic_store_explicit(&buffer_gone_hook, hook, memory_order_release);
}

void gpures__buffer_gone(uint64_t id) {
  void (*hook)(uint64_t) = atomic_load_explicit(&buffer_gone_hook, memory_order_acquire);
  if (hook) hook(id);
}

uint64_t gpures__next_buffer_id(void) {
  static _Atomic uint64_t next = 1;
  return atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
}
