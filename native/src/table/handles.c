/*
** handles.c: the operations every kind shares: create, clone, release,
** describe, and the kind and reference count of a handle. Create is the one
** door into the table: everything a handle holds was validated here first.
*/
#include "table.h"

static int occupy(gpures__op op, uint32_t kind, any_desc *local, const gpures_create_options *opts,
                  const gpures__borrow *borrow, gpures_handle *out_handle);

int gpures_create(uint32_t kind, const void *desc, const gpures_create_options *options,
                  gpures_handle *out_handle) {
  gpures__op op = {"create", gpures__variant_of(kind) ? kind : 0};
  const gpures__variant *v = gpures__variant_of(kind);
  if (!out_handle) return gpures__fail(op, GPURES_E_NULL_POINTER, "outHandle", "outHandle is null");
  *out_handle = 0;
  if (!v) return gpures__fail(op, GPURES_E_INVALID_VALUE, "kind", "kind %u does not exist", kind);
  if (!gpures_kind_supported(kind))
    return gpures__fail(op, GPURES_E_UNSUPPORTED_PLATFORM, "",
                        "%s does not exist on this platform", gpures__kind_name(kind));
  if (!desc) return gpures__fail(op, GPURES_E_NULL_POINTER, "desc", "desc is null");

  any_desc local;
  memset(&local, 0, sizeof local);
  int status = gpures__copy_versioned(op, "structSize", desc, v->desc_size, &local);
  if (status == GPURES_OK) status = gpures__check_short_desc(op, v, struct_size_of(desc));
  gpures_create_options opts;
  memset(&opts, 0, sizeof opts);
  if (status == GPURES_OK && options)
    status = gpures__copy_versioned(op, "options.structSize", options, sizeof opts, &opts);
  if (status == GPURES_OK && options) status = gpures__check_short_options(op, options);
  if (status != GPURES_OK) return status;
  if (opts.flags & ~(GPURES_CREATE_TAKE_OWNERSHIP | GPURES_CREATE_NO_CONSUMED_EVENTS))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "options.flags",
                        "options.flags has unknown bits 0x%x", opts.flags);
  if ((status = gpures__fields_validate(op, v, &local)) != GPURES_OK) return status;
  if (v->validate && (status = v->validate(op, &local)) != GPURES_OK) return status;

  return occupy(op, kind, &local, &opts, NULL, out_handle);
}

/*
** Fills a slot with a validated descriptor. Without `borrow` the handle takes
** the descriptor's fds (duplicated, or adopted under TAKE_OWNERSHIP); with it
** the fds stay the borrow's owner's, and its at_last_release runs instead.
*/
static int occupy(gpures__op op, uint32_t kind, any_desc *local, const gpures_create_options *opts,
                  const gpures__borrow *borrow, gpures_handle *out_handle) {
  const gpures__variant *v = gpures__variant_of(kind);
  any_desc caller = *local;
  int status = GPURES_OK;
  /* Check the queue before adopting fds, so a bad queue leaves the caller's fds untouched. */
  if (opts->event_queue && (status = gpures__event_reserve(opts->event_queue)) != GPURES_OK) {
    if (status == GPURES_E_STALE || status == GPURES_E_INVALID_VALUE)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "options.eventQueue",
                          "options.eventQueue %u is not an open queue", opts->event_queue);
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for another handle");
  }
  bool takes_fds = v->owns_fds && !borrow;
  if (takes_fds)
    status = gpures__fds_acquire(op, v, local, opts->flags & GPURES_CREATE_TAKE_OWNERSHIP);
  uint32_t index = 0;
  if (status == GPURES_OK && (status = gpures__slot_alloc(op, &index)) != GPURES_OK && takes_fds)
    gpures__fds_drop(v, local, &caller);
  if (status != GPURES_OK) {
    if (opts->event_queue) gpures__event_unreserve(opts->event_queue);
    return status;
  }

  slot *s = slot_at(index);
  s->kind = kind;
  s->desc = *local;
  s->keep_alive = opts->keep_alive;
  s->queue = opts->event_queue;
  s->token = opts->event_token;
  s->consumed_events = opts->event_queue && !(opts->flags & GPURES_CREATE_NO_CONSUMED_EVENTS);
  if (borrow) s->borrow = *borrow;
  else memset(&s->borrow, 0, sizeof s->borrow);
  atomic_store_explicit(&s->retired, false, memory_order_relaxed);
  memset(&s->meta, 0, sizeof s->meta); /* nothing of the slot's last handle shows through */
  s->fences[0] = s->fences[1] = 0;
  uint32_t generation = (uint32_t)(atomic_load_explicit(&s->state, memory_order_relaxed) >> 32);
  if (generation == 0) generation = 1;
  atomic_fetch_add_explicit(&gpures__live[kind], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&gpures__live[0], 1, memory_order_relaxed);
  atomic_store_explicit(&s->state, (uint64_t)generation << 32 | 1u, memory_order_release);
  *out_handle = (uint64_t)generation << 32 | (uint64_t)kind << 24 | index;
  return GPURES_OK;
}

int gpures__create_borrowing(gpures__op op, uint32_t kind, const void *desc,
                             const gpures_create_options *options, const gpures__borrow *borrow,
                             gpures_handle *out_handle) {
  const gpures__variant *v = gpures__variant_of(kind);
  any_desc local;
  memset(&local, 0, sizeof local);
  memcpy(&local, desc, v->desc_size);
  gpures_create_options opts;
  memset(&opts, 0, sizeof opts);
  if (options) {
    int status = gpures__copy_versioned(op, "options.structSize", options, sizeof opts, &opts);
    if (status == GPURES_OK) status = gpures__check_short_options(op, options);
    if (status != GPURES_OK) return status;
    if (opts.flags & ~GPURES_CREATE_NO_CONSUMED_EVENTS)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "options.flags",
                          "options.flags has bits 0x%x; a frame's fds are never the caller's",
                          opts.flags);
  }
  return occupy(op, kind, &local, &opts, borrow, out_handle);
}

int gpures_clone(gpures_handle handle) {
  slot *s = NULL;
  return pin(handle, "clone", &s);
}

int gpures_release(gpures_handle handle) { return unpin(handle, "release"); }

/*
** Copies a live handle's descriptor: min(out_size, own) bytes, and the
** copy's struct_size says how many. Nothing past the library's own struct is
** written; a newer caller reads the fields past struct_size as absent. With
** `sized_by_struct` the size is out's own struct_size, checked as create
** checks it (after the handle, whose errors come first).
*/
static int describe_into(gpures_handle handle, void *out, uint32_t out_size,
                         bool sized_by_struct) {
  slot *s = NULL;
  int status = pin(handle, "describe", &s);
  if (status != GPURES_OK) return status;
  const gpures__variant *v = gpures__variant_of(s->kind);
  if (sized_by_struct) {
    gpures__op op = {"describe", s->kind};
    out_size = struct_size_of(out);
    if ((status = gpures__check_struct_size(op, "structSize", out_size)) == GPURES_OK)
      status = gpures__check_short_desc(op, v, out_size);
    if (status != GPURES_OK) {
      (void)unpin(handle, "describe");
      return status;
    }
  }
  uint32_t n = out_size < v->desc_size ? out_size : v->desc_size;
  memcpy(out, &s->desc, n);
  memcpy(out, &n, sizeof n);
  return unpin(handle, "describe");
}

int gpures__snapshot(gpures_handle h, const char *verb, uint32_t *kind, uint32_t *refcount,
                     void *desc) {
  slot *s = NULL;
  int status = pin(h, verb, &s);
  if (status != GPURES_OK) return status;
  *kind = s->kind;
  *refcount = (uint32_t)atomic_load_explicit(&s->state, memory_order_acquire) - 1u;
  memcpy(desc, &s->desc, gpures__variant_of(s->kind)->desc_size);
  return unpin(h, verb);
}

int gpures_describe(gpures_handle handle, void *out, uint32_t out_size) {
  if (!out || out_size < 8)
    return gpures__fail(op_of("describe", handle), GPURES_E_BUFFER_TOO_SMALL, "out",
                        "out must hold at least 8 bytes, not %u", out ? out_size : 0);
  return describe_into(handle, out, out_size, false);
}

int gpures_kind(gpures_handle handle, uint32_t *out_kind) {
  slot *s = NULL;
  if (!out_kind) return gpures__fail(op_of("read kind of", handle), GPURES_E_NULL_POINTER, "outKind", "outKind is null");
  int status = pin(handle, "read kind of", &s);
  if (status != GPURES_OK) return status;
  *out_kind = s->kind;
  return unpin(handle, "read kind of");
}

int gpures_refcount(gpures_handle handle, uint32_t *out_refcount) {
  slot *s = slot_of(handle);
  if (!out_refcount)
    return gpures__fail(op_of("count references of", handle), GPURES_E_NULL_POINTER,
                        "outRefcount", "outRefcount is null");
  uint64_t state = s ? atomic_load_explicit(&s->state, memory_order_acquire) : 0;
  if (!s || (uint32_t)(state >> 32) != handle_generation(handle) || (uint32_t)state == 0 ||
      s->kind != handle_kind(handle))
    return gpures__stale("count references of", handle);
  *out_refcount = (uint32_t)state;
  return GPURES_OK;
}

/* ------------------------------------------------- the per-kind forms */

/* GPURES_E_WRONG_KIND for a live handle of another kind; 0 passes (release(0) is a no-op). */
static int check_kind(gpures_handle h, uint32_t kind, const char *verb) {
  if (handle_kind(h) == kind || h == 0) return GPURES_OK;
  uint32_t count;
  if (gpures_refcount(h, &count) != GPURES_OK) return gpures__stale(verb, h);
  gpures__op op = {verb, kind};
  return gpures__fail(op, GPURES_E_WRONG_KIND, "handle", "handle is a %s, not a %s",
                      gpures__kind_name(handle_kind(h)), gpures__kind_name(kind));
}

int gpures__clone_kind(gpures_handle h, uint32_t kind) {
  slot *s = NULL;
  int status = check_kind(h, kind, "clone");
  return status != GPURES_OK ? status : pin(h, "clone", &s);
}

int gpures__release_kind(gpures_handle h, uint32_t kind) {
  int status = check_kind(h, kind, "release");
  return status != GPURES_OK ? status : unpin(h, "release");
}

int gpures__describe_kind(gpures_handle h, uint32_t kind, void *out) {
  int status = check_kind(h, kind, "describe");
  if (status != GPURES_OK) return status;
  if (!out) return gpures__fail(op_of("describe", h), GPURES_E_NULL_POINTER, "out", "out is null");
  return describe_into(h, out, 0, true);
}
