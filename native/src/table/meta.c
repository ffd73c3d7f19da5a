/*
** meta.c: what a handle carries besides its descriptor: frame metadata, and
** for a frame over someone else's buffer (a pool's, a session's), that
** buffer's identity. The descriptor never changes after create, but metadata
** may be set while other threads read it, so each access holds one of a few
** locks, chosen by slot.
*/
#include "table.h"

static gpures__lock meta_locks[64];
GPURES__LOCKS_ACROSS_FORK(meta_locks_across_fork, meta_locks, 64, sizeof meta_locks[0])

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
  gpures__importers_buffer_gone(id);
}

uint64_t gpures__next_buffer_id(void) {
  static _Atomic uint64_t next = 1;
  return atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
}

/* A sync kind's handle, or 0; anything else is refused naming `field`. */
static int check_fence(gpures__op op, const char *field, gpures_handle fence) {
  if (!fence) return GPURES_OK;
  uint32_t kind = 0;
  int status = gpures_kind(fence, &kind);
  if (status != GPURES_OK)
    return gpures__fail(op, status, field, "%s names no live SyncPoint", field);
  const gpures_kind_info *info = gpures_kind_info_of(kind);
  if (!info || info->family != GPURES_FAMILY_SYNC)
    return gpures__fail(op, GPURES_E_WRONG_KIND, field, "%s is a %s, not a SyncPoint", field,
                        gpures__kind_name(kind));
  return GPURES_OK;
}

int gpures_fences_set(gpures_handle handle, gpures_handle acquire, gpures_handle release) {
  gpures__op op = op_of("set fences of", handle);
  slot *s = NULL;
  int status = pin(handle, op.verb, &s);
  if (status != GPURES_OK) return status;
  if (gpures_kind_info_of(s->kind)->family != GPURES_FAMILY_RESOURCE)
    status = gpures__fail(op, GPURES_E_WRONG_KIND, "handle", "a SyncPoint carries no fences");
  if (status == GPURES_OK) status = check_fence(op, "acquire", acquire);
  if (status == GPURES_OK) status = check_fence(op, "release", release);
  /* The handle's own references; taken before the swap so a failure changes nothing. */
  if (status == GPURES_OK && acquire && (status = gpures_clone(acquire)) != GPURES_OK)
    status = gpures__fail(op, status, "acquire", "acquire was released meanwhile");
  if (status == GPURES_OK && release && (status = gpures_clone(release)) != GPURES_OK) {
    (void)gpures_release(acquire);
    status = gpures__fail(op, status, "release", "release was released meanwhile");
  }
  if (status == GPURES_OK) {
    gpures__lock_acquire(meta_lock(handle));
    gpures_handle old_acquire = s->fences[0], old_release = s->fences[1];
    s->fences[0] = acquire;
    s->fences[1] = release;
    gpures__lock_release(meta_lock(handle));
    (void)gpures_release(old_acquire);
    (void)gpures_release(old_release);
  }
  int unpinned = unpin(handle, op.verb);
  return status != GPURES_OK ? status : unpinned;
}

int gpures_fences_get(gpures_handle handle, gpures_handle *out_acquire, gpures_handle *out_release) {
  gpures__op op = op_of("read fences of", handle);
  if (!out_acquire || !out_release)
    return gpures__fail(op, GPURES_E_NULL_POINTER, out_acquire ? "outRelease" : "outAcquire",
                        "%s is null", out_acquire ? "outRelease" : "outAcquire");
  *out_acquire = *out_release = 0;
  slot *s = NULL;
  int status = pin(handle, op.verb, &s);
  if (status != GPURES_OK) return status;
  /* Cloned under the lock: a set on another thread cannot release them between read and clone. */
  gpures__lock_acquire(meta_lock(handle));
  gpures_handle acquire = s->fences[0], release = s->fences[1];
  if (acquire && gpures_clone(acquire) != GPURES_OK) acquire = 0;
  if (release && gpures_clone(release) != GPURES_OK) release = 0;
  gpures__lock_release(meta_lock(handle));
  *out_acquire = acquire;
  *out_release = release;
  return unpin(handle, op.verb);
}

/* Clears the acquire fence if it is still `expected` (begin access reached it). */
int gpures__fences_drop_acquire(gpures_handle handle, gpures_handle expected) {
  slot *s = NULL;
  int status = pin(handle, "begin access to", &s);
  if (status != GPURES_OK) return status;
  gpures__lock_acquire(meta_lock(handle));
  bool same = s->fences[0] == expected;
  if (same) s->fences[0] = 0;
  gpures__lock_release(meta_lock(handle));
  if (same) (void)gpures_release(expected);
  return unpin(handle, "begin access to");
}

/* Replaces the release fence alone, leaving the acquire fence as it is (end access). */
int gpures__fences_put_release(gpures__op op, gpures_handle handle, gpures_handle release) {
  slot *s = NULL;
  int status = pin(handle, op.verb, &s);
  if (status != GPURES_OK) return status;
  if (gpures_kind_info_of(s->kind)->family != GPURES_FAMILY_RESOURCE)
    status = gpures__fail(op, GPURES_E_WRONG_KIND, "handle", "a SyncPoint carries no fences");
  if (status == GPURES_OK) status = check_fence(op, "release", release);
  if (status == GPURES_OK && release && (status = gpures_clone(release)) != GPURES_OK)
    status = gpures__fail(op, status, "release", "release was released meanwhile");
  if (status == GPURES_OK) {
    gpures__lock_acquire(meta_lock(handle));
    gpures_handle old = s->fences[1];
    s->fences[1] = release;
    gpures__lock_release(meta_lock(handle));
    (void)gpures_release(old);
  }
  int unpinned = unpin(handle, op.verb);
  return status != GPURES_OK ? status : unpinned;
}
