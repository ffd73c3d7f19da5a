/*
** handle_table.c: generation-checked slots, atomic reference counts, and the
** create/clone/release/describe operations every kind shares.
**
** A handle is generation << 32 | kind << 24 | slot index. Each slot holds one
** atomic word, generation << 32 | refcount. Clone and release are one CAS on
** that word; the last release bumps the generation, so the old handle value
** turns stale in the same instruction that drops the count to zero, and any
** later use is reported instead of reaching whatever reuses the slot.
**
** Generations never wrap: a slot whose last generation (LAST_GENERATION) is
** released is retired, never reused, since reuse would hand out generation 1
** again and revive every stale value that once named the slot. Each slot
** serves 2^32 - 1 handles first, so retiring costs nothing in practice, but
** it is counted and the table's capacity shrinks by it.
*/
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CHUNK_BITS 12u
#define CHUNK_SLOTS (1u << CHUNK_BITS)
#define MAX_CHUNKS 4096u
#define MAX_SLOTS (CHUNK_SLOTS * MAX_CHUNKS) /* 2^24, the index bits of a handle */
#define LAST_GENERATION UINT32_MAX          /* all 32 generation bits of a handle */

typedef union any_desc {
#define DESC_MEMBER(id, UPPER, snake, Name, own, os) gpures_##snake##_desc snake;
  GPURES_KIND_LIST(DESC_MEMBER)
#undef DESC_MEMBER
} any_desc;

_Static_assert(sizeof(any_desc) <= GPURES__DESC_MAX, "raise GPURES__DESC_MAX");

typedef struct slot {
  _Atomic uint64_t state;      /* generation << 32 | refcount */
  _Atomic uint32_t next_free;  /* index + 1 of the next free slot, 0 at the end */
  uint32_t kind;
  gpures_keep_alive keep_alive;
  uint32_t queue;
  uint64_t token;
  any_desc desc;
} slot;

static _Atomic(slot *) chunks[MAX_CHUNKS];
static _Atomic uint32_t next_unused;
static _Atomic uint64_t free_head; /* tag << 32 | (index + 1); the tag defeats ABA */
static _Atomic uint64_t live[GPURES_KIND_MAX + 1];
static _Atomic uint32_t retired; /* slots past their last generation, never reused */

static slot *slot_at(uint32_t index) {
  slot *chunk = atomic_load_explicit(&chunks[index >> CHUNK_BITS], memory_order_acquire);
  return chunk ? &chunk[index & (CHUNK_SLOTS - 1)] : NULL;
}

/* A slot whose chunk is known to exist (it was on the free list or is live). */
static slot *slot_known(uint32_t index) {
  return &atomic_load_explicit(&chunks[index >> CHUNK_BITS], memory_order_acquire)[index & (CHUNK_SLOTS - 1)];
}

static int ensure_chunk(uint32_t c) {
  if (atomic_load_explicit(&chunks[c], memory_order_acquire)) return GPURES_OK;
  slot *fresh = gpures__alloc(CHUNK_SLOTS * sizeof(slot));
  if (!fresh) return GPURES_E_OUT_OF_MEMORY;
  memset(fresh, 0, CHUNK_SLOTS * sizeof(slot));
  slot *expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(&chunks[c], &expected, fresh,
                                               memory_order_acq_rel, memory_order_acquire))
    gpures__free(fresh); /* another thread installed it first */
  return GPURES_OK;
}

static int slot_alloc(uint32_t *out_index) {
  uint64_t head = atomic_load_explicit(&free_head, memory_order_acquire);
  while ((uint32_t)head) {
    uint32_t index = (uint32_t)head - 1u;
    uint32_t next = atomic_load_explicit(&slot_known(index)->next_free, memory_order_relaxed);
    uint64_t popped = (((head >> 32) + 1u) << 32) | next;
    if (atomic_compare_exchange_weak_explicit(&free_head, &head, popped, memory_order_acq_rel,
                                              memory_order_acquire)) {
      *out_index = index;
      return GPURES_OK;
    }
  }
  uint32_t index = atomic_load_explicit(&next_unused, memory_order_relaxed);
  for (;;) {
    if (index >= MAX_SLOTS) return GPURES_E_OUT_OF_MEMORY;
    int status = ensure_chunk(index >> CHUNK_BITS);
    if (status != GPURES_OK) return status;
    if (atomic_compare_exchange_weak_explicit(&next_unused, &index, index + 1u,
                                              memory_order_relaxed, memory_order_relaxed)) {
      *out_index = index;
      return GPURES_OK;
    }
  }
}

/* Why slot_alloc failed: the table is full (less what was retired), or malloc failed. */
static int no_slot(gpures__op op) {
  if (atomic_load_explicit(&next_unused, memory_order_relaxed) < MAX_SLOTS)
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for another handle");
  uint32_t gone = atomic_load_explicit(&retired, memory_order_relaxed);
  return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "",
                      "all %u handle slots are in use (%u more were retired after their last "
                      "generation); release handles",
                      MAX_SLOTS - gone, gone);
}

static void slot_free(uint32_t index) {
  slot *s = slot_known(index);
  uint64_t head = atomic_load_explicit(&free_head, memory_order_relaxed);
  do {
    atomic_store_explicit(&s->next_free, (uint32_t)head, memory_order_relaxed);
  } while (!atomic_compare_exchange_weak_explicit(
      &free_head, &head, (((head >> 32) + 1u) << 32) | (index + 1u), memory_order_release,
      memory_order_relaxed));
}

static uint32_t handle_kind(gpures_handle h) { return (uint32_t)(h >> 24) & 0xffu; }
static uint32_t handle_index(gpures_handle h) { return (uint32_t)h & 0xffffffu; }
static uint32_t handle_generation(gpures_handle h) { return (uint32_t)(h >> 32); }

/* The slot a handle names, or NULL when it names none that exists. */
static slot *slot_of(gpures_handle h) {
  if (handle_generation(h) == 0) return NULL;
  return slot_at(handle_index(h));
}

static gpures__op op_of(const char *verb, gpures_handle h) {
  gpures__op op = {verb, gpures__variant_of(handle_kind(h)) ? handle_kind(h) : 0};
  return op;
}

static int stale(const char *verb, gpures_handle h) {
  if (h == 0) return gpures__fail(op_of(verb, h), GPURES_E_NULL_HANDLE, "handle", "handle is 0");
  return gpures__fail(op_of(verb, h), GPURES_E_STALE, "handle",
                      "handle 0x%016" PRIx64 " was released (or never existed)", h);
}

/* Runs after the last release, on the thread that made it, exactly once. */
static void destroy(slot *s, uint32_t index, uint32_t generation) {
  const gpures__variant *v = gpures__variant_of(s->kind);
  for (uint32_t r = 0; r < v->num_fields; r++) {
    const gpures_field_info *f = &v->fields[r];
    if (f->type != GPURES_FIELD_FD) continue;
    uint32_t n = gpures__field_len(f, &s->desc);
    for (uint32_t i = 0; i < n; i++) gpures__fd_close((int)(int32_t)gpures__field_get(f, &s->desc, i));
  }
  if (s->keep_alive.release) s->keep_alive.release(s->keep_alive.ctx);
  if (s->queue) (void)gpures__event_post(s->queue, s->token, GPURES_EVENT_RELEASED);
  atomic_fetch_sub_explicit(&live[s->kind], 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&live[0], 1, memory_order_relaxed);
  if (generation == LAST_GENERATION) atomic_fetch_add_explicit(&retired, 1, memory_order_relaxed);
  else slot_free(index);
}

static int unpin(gpures_handle h, const char *verb);

/* Takes a reference if the handle is live. */
static int pin(gpures_handle h, const char *verb, slot **out) {
  slot *s = slot_of(h);
  if (!s) return stale(verb, h);
  uint64_t state = atomic_load_explicit(&s->state, memory_order_acquire);
  for (;;) {
    uint32_t count = (uint32_t)state;
    if ((uint32_t)(state >> 32) != handle_generation(h) || count == 0) return stale(verb, h);
    if (count == UINT32_MAX)
      return gpures__fail(op_of(verb, h), GPURES_E_INVALID_VALUE, "handle",
                          "handle has %u references, the most a handle can have", count);
    if (atomic_compare_exchange_weak_explicit(&s->state, &state, state + 1u,
                                              memory_order_acq_rel, memory_order_acquire))
      break;
  }
  if (s->kind != handle_kind(h)) { /* a forged value that matched a live generation */
    /* Drop the reference just taken through the slot's real value: unpin refuses h. */
    (void)unpin((h & ~((gpures_handle)0xffu << 24)) | (gpures_handle)s->kind << 24, verb);
    return stale(verb, h);
  }
  *out = s;
  return GPURES_OK;
}

/* Drops a reference; the last one destroys the slot. */
static int unpin(gpures_handle h, const char *verb) {
  slot *s = slot_of(h);
  if (!s) return stale(verb, h);
  uint64_t state = atomic_load_explicit(&s->state, memory_order_acquire);
  for (;;) {
    uint32_t generation = (uint32_t)(state >> 32), count = (uint32_t)state;
    if (generation != handle_generation(h) || count == 0) return stale(verb, h);
    /* A forged kind byte on a live slot's value must not drop the real handle's reference. */
    if (s->kind != handle_kind(h)) return stale(verb, h);
    /* The last generation stays with a count of 0: stale for good, and never freed. */
    uint64_t next = count > 1                          ? state - 1u
                    : generation == LAST_GENERATION ? (uint64_t)generation << 32
                                                     : (uint64_t)(generation + 1u) << 32;
    if (atomic_compare_exchange_weak_explicit(&s->state, &state, next, memory_order_acq_rel,
                                              memory_order_acquire)) {
      if (count == 1) destroy(s, handle_index(h), generation);
      return GPURES_OK;
    }
  }
}

/*
** A struct_size the library can believe: struct_size and flags at least, and
** at most GPURES_STRUCT_SIZE_MAX. Anything else is no older or newer struct
** but an unset struct_size, and believing it would read or write that many
** bytes of the caller's memory.
*/
static int check_struct_size(gpures__op op, const char *field, uint32_t given) {
  if (given < 8)
    return gpures__fail(op, GPURES_E_ABI_MISMATCH, field,
                        "%s is %u; set it to the size of the struct", field, given);
  if (given > GPURES_STRUCT_SIZE_MAX)
    return gpures__fail(op, GPURES_E_ABI_MISMATCH, field,
                        "%s is %u (0x%x), above GPURES_STRUCT_SIZE_MAX (%u): not the size of "
                        "any struct; set it to the size of the struct",
                        field, given, given, (unsigned)GPURES_STRUCT_SIZE_MAX);
  return GPURES_OK;
}

static uint32_t struct_size_of(const void *p) {
  uint32_t size;
  memcpy(&size, p, sizeof size);
  return size;
}

/* Copies a caller's struct of `given` bytes into `out` of `own` bytes. */
static int copy_versioned(gpures__op op, const char *field, const void *in, uint32_t own,
                          void *out) {
  uint32_t given = struct_size_of(in);
  int status = check_struct_size(op, field, given);
  if (status != GPURES_OK) return status;
  memcpy(out, in, given < own ? given : own);
  for (uint32_t i = own; i < given; i++)
    if (((const unsigned char *)in)[i])
      return gpures__fail(op, GPURES_E_ABI_MISMATCH, field,
                          "the struct has %u bytes and byte %u is set; this library knows %u",
                          given, i, own);
  ((uint32_t *)out)[0] = own;
  return GPURES_OK;
}

/*
** A struct shorter than the library's (an older caller's) must end between
** two fields. One that ends inside a value or inside an array would leave a
** pointer, an fd or a count half given: refuse it rather than read it.
*/
static int check_short_desc(gpures__op op, const gpures__variant *v, uint32_t given) {
  if (given >= v->desc_size) return GPURES_OK;
  for (uint32_t r = 0; r < v->num_fields; r++) {
    const gpures_field_info *f = &v->fields[r];
    uint32_t begin = f->offset, end = f->offset + (f->count - 1u) * f->stride + f->size;
    if (begin < given && given < end)
      return gpures__fail(op, GPURES_E_ABI_MISMATCH, "structSize",
                          "structSize %u ends inside %s (bytes %u to %u)", given, f->path, begin,
                          end);
  }
  return GPURES_OK;
}

/* The same for the options struct, whose fields are pointers and 64-bit values. */
static int check_short_options(gpures__op op, const gpures_create_options *options) {
  static const uint32_t ends[] = {
      offsetof(gpures_create_options, keep_alive),
      offsetof(gpures_create_options, keep_alive.release),
      offsetof(gpures_create_options, keep_alive.mark_consumed),
      offsetof(gpures_create_options, event_queue),
      offsetof(gpures_create_options, reserved),
      offsetof(gpures_create_options, event_token)};
  uint32_t given = struct_size_of(options);
  if (given >= sizeof *options) return GPURES_OK;
  for (uint32_t i = 0; i < GPURES__LEN(ends); i++)
    if (given == ends[i]) return GPURES_OK;
  return gpures__fail(op, GPURES_E_ABI_MISMATCH, "options.structSize",
                      "options.structSize %u ends inside a field", given);
}

/* Makes the descriptor's fds the handle's own: duplicated, or adopted. */
static int acquire_fds(gpures__op op, const gpures__variant *v, void *desc, bool adopt) {
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

static void drop_fds(const gpures__variant *v, void *desc, const void *caller) {
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
  int status = copy_versioned(op, "structSize", desc, v->desc_size, &local);
  if (status == GPURES_OK) status = check_short_desc(op, v, struct_size_of(desc));
  gpures_create_options opts;
  memset(&opts, 0, sizeof opts);
  if (status == GPURES_OK && options)
    status = copy_versioned(op, "options.structSize", options, sizeof opts, &opts);
  if (status == GPURES_OK && options) status = check_short_options(op, options);
  if (status != GPURES_OK) return status;
  if (opts.flags & ~GPURES_CREATE_TAKE_OWNERSHIP)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "options.flags",
                        "options.flags has unknown bits 0x%x", opts.flags);
  if ((status = gpures__fields_validate(op, v, &local)) != GPURES_OK) return status;
  if (v->validate && (status = v->validate(op, &local)) != GPURES_OK) return status;

  any_desc caller = local;
  /* Check the queue before adopting fds, so a bad queue leaves the caller's fds untouched. */
  if (opts.event_queue && (status = gpures__event_reserve(opts.event_queue)) != GPURES_OK) {
    if (status == GPURES_E_STALE || status == GPURES_E_INVALID_VALUE)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "options.eventQueue",
                          "options.eventQueue %u is not an open queue", opts.event_queue);
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for another handle");
  }
  status = acquire_fds(op, v, &local, opts.flags & GPURES_CREATE_TAKE_OWNERSHIP);
  uint32_t index = 0;
  if (status == GPURES_OK && (status = slot_alloc(&index)) != GPURES_OK) {
    drop_fds(v, &local, &caller);
    status = no_slot(op);
  }
  if (status != GPURES_OK) {
    if (opts.event_queue) gpures__event_unreserve(opts.event_queue);
    return status;
  }

  slot *s = slot_at(index);
  s->kind = kind;
  s->desc = local;
  s->keep_alive = opts.keep_alive;
  s->queue = opts.event_queue;
  s->token = opts.event_token;
  uint32_t generation = (uint32_t)(atomic_load_explicit(&s->state, memory_order_relaxed) >> 32);
  if (generation == 0) generation = 1;
  atomic_fetch_add_explicit(&live[kind], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&live[0], 1, memory_order_relaxed);
  atomic_store_explicit(&s->state, (uint64_t)generation << 32 | 1u, memory_order_release);
  *out_handle = (uint64_t)generation << 32 | (uint64_t)kind << 24 | index;
  return GPURES_OK;
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
static int describe_into(gpures_handle handle, void *out, uint32_t out_size, bool sized_by_struct) {
  slot *s = NULL;
  int status = pin(handle, "describe", &s);
  if (status != GPURES_OK) return status;
  const gpures__variant *v = gpures__variant_of(s->kind);
  if (sized_by_struct) {
    gpures__op op = {"describe", s->kind};
    out_size = struct_size_of(out);
    if ((status = check_struct_size(op, "structSize", out_size)) == GPURES_OK)
      status = check_short_desc(op, v, out_size);
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
    return stale("count references of", handle);
  *out_refcount = (uint32_t)state;
  return GPURES_OK;
}

uint64_t gpures_live_handles(uint32_t kind) {
  if (kind > GPURES_KIND_MAX) return 0;
  return atomic_load_explicit(&live[kind], memory_order_relaxed);
}

/* Runs `fn` on a pinned slot's descriptor; shared by the per-handle operations below. */
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
  (void)arg;
  /* Queue the event first: a call that fails for want of memory then has no effect at all. */
  if (s->queue && gpures__event_post(s->queue, s->token, GPURES_EVENT_MARK_CONSUMED) != GPURES_OK)
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory to queue the event");
  if (s->keep_alive.mark_consumed) s->keep_alive.mark_consumed(s->keep_alive.ctx);
  return GPURES_OK;
}

int gpures_mark_consumed(gpures_handle handle) {
  return with_slot(handle, "mark consumed", mark_consumed, NULL);
}

/* The per-kind entry points: the same operations, refusing other kinds. */
static int check_kind(gpures_handle h, uint32_t kind, const char *verb) {
  if (handle_kind(h) == kind || h == 0) return GPURES_OK;
  uint32_t count;
  if (gpures_refcount(h, &count) != GPURES_OK) return stale(verb, h);
  gpures__op op = {verb, kind};
  return gpures__fail(op, GPURES_E_WRONG_KIND, "handle", "handle is a %s, not a %s",
                      gpures__kind_name(handle_kind(h)), gpures__kind_name(kind));
}

int gpures__clone_kind(gpures_handle h, uint32_t kind) {
  int status = check_kind(h, kind, "clone");
  return status != GPURES_OK ? status : gpures_clone(h);
}

int gpures__release_kind(gpures_handle h, uint32_t kind) {
  int status = check_kind(h, kind, "release");
  return status != GPURES_OK ? status : gpures_release(h);
}

int gpures__describe_kind(gpures_handle h, uint32_t kind, void *out) {
  int status = check_kind(h, kind, "describe");
  if (status != GPURES_OK) return status;
  if (!out) return gpures__fail(op_of("describe", h), GPURES_E_NULL_POINTER, "out", "out is null");
  return describe_into(h, out, 0, true);
}

/*
** Test hooks, like alloc.c's: exported for the C tests, not part of gpures.h.
** Ages the slot the next create will take so that it gets `generation`, as
** if the slot had served generation - 1 handles already; single-threaded use
** only (another thread's create in between takes the slot instead).
*/
void gpures__test_set_next_generation(uint32_t generation) {
  uint64_t head = atomic_load_explicit(&free_head, memory_order_acquire);
  uint32_t index = (uint32_t)head ? (uint32_t)head - 1u
                                  : atomic_load_explicit(&next_unused, memory_order_relaxed);
  if (index >= MAX_SLOTS || ensure_chunk(index >> CHUNK_BITS) != GPURES_OK) return;
  atomic_store_explicit(&slot_known(index)->state, (uint64_t)generation << 32, memory_order_release);
}

uint32_t gpures__test_retired_slots(void) {
  return atomic_load_explicit(&retired, memory_order_relaxed);
}
