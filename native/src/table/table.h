/*
** table.h: what the handle table's sources share; not installed.
**   slots.c          the slots: chunks, the lock-free free list, the last release
**   handles.c        create, clone, release, describe, the queries; their per-kind forms
**   struct_size.c    the struct sizes a caller may pass, and the versioned copy
**   fds.c            the fds a handle owns: adopted or duplicated at create, closed at the end
**   per_handle.c     dup_fd, slot_release, mark_consumed
**   kind_api.c       gpures_<kind>_create, _clone, _describe and _release
**   describe_json.c  one JSON object per handle
**   meta.c           what a handle carries besides its descriptor: metadata, buffer id, fences
**
** A handle is generation << 32 | kind << 24 | slot index. Each slot holds one
** atomic word, generation << 32 | refcount. Clone and release are one CAS on
** that word (pin and unpin, below); the last release bumps the generation, so
** the old handle value turns stale in the same instruction that drops the
** count to zero, and any later use is reported instead of reaching whatever
** reuses the slot.
**
** Generations never wrap: a slot whose last generation (LAST_GENERATION) is
** released is retired, never reused, since reuse would hand out generation 1
** again and revive every stale value that once named the slot. Each slot
** serves 2^32 - 1 handles first, so retiring costs nothing in practice, but
** it is counted and the table's capacity shrinks by it.
**
** pin and unpin are inline here, not calls into slots.c: they are all that
** clone and release do, and every other operation begins and ends with them.
*/
#ifndef GPURES_TABLE_H
#define GPURES_TABLE_H

#include <string.h>

#include "../internal.h"

#define CHUNK_BITS 12u
#define CHUNK_SLOTS (1u << CHUNK_BITS)
#define MAX_CHUNKS 4096u
#define MAX_SLOTS (CHUNK_SLOTS * MAX_CHUNKS) /* 2^24, the index bits of a handle */
#define LAST_GENERATION UINT32_MAX          /* all 32 generation bits of a handle */

typedef union any_desc {
#define DESC_MEMBER(id, UPPER, snake, Name, own, os) gpures_##snake##_desc snake;
  GPURES_EVERY_KIND_LIST(DESC_MEMBER)
#undef DESC_MEMBER
} any_desc;

_Static_assert(sizeof(any_desc) <= GPURES__DESC_MAX, "raise GPURES__DESC_MAX");

typedef struct slot {
  _Atomic uint64_t state;      /* generation << 32 | refcount */
  _Atomic uint32_t next_free;  /* index + 1 of the next free slot, 0 at the end */
  uint32_t kind;
  gpures_keep_alive keep_alive;
  uint32_t queue;
  bool consumed_events;        /* the queue takes MARK_CONSUMED events (not NO_CONSUMED_EVENTS) */
  uint64_t token;
  gpures__borrow borrow;       /* at_last_release set: the fds are its owner's, not the slot's */
  _Atomic bool retired;        /* the borrow's owner must not reuse the memory (gpures__frame_retire) */
  gpures_frame_meta meta;      /* flags 0: none; read and written under meta_lock() (meta.c) */
  gpures_handle fences[2];     /* acquire, release (0: none), each a reference; under meta_lock() */
  any_desc desc;
} slot;

/* slots.c's: the chunks of CHUNK_SLOTS slots, made as the table grows, and live counts by kind. */
extern GPURES__HIDDEN _Atomic(slot *) gpures__chunks[MAX_CHUNKS];
extern GPURES__HIDDEN _Atomic uint64_t gpures__live[GPURES_KIND_MAX + 1];

/* A free slot's index (the table grows when none is free); records the error when there is none. */
int gpures__slot_alloc(gpures__op op, uint32_t *out_index);
/* Runs after the last release, on the thread that made it, exactly once. */
void gpures__slot_destroy(slot *s, uint32_t index, uint32_t generation);
/* Records why h names no live handle: it is 0 (NULL_HANDLE), or stale. */
int gpures__stale(const char *verb, gpures_handle h);

static inline uint32_t handle_kind(gpures_handle h) { return (uint32_t)(h >> 24) & 0xffu; }
static inline uint32_t handle_index(gpures_handle h) { return (uint32_t)h & 0xffffffu; }
static inline uint32_t handle_generation(gpures_handle h) { return (uint32_t)(h >> 32); }

static inline slot *slot_at(uint32_t index) {
  slot *chunk = atomic_load_explicit(&gpures__chunks[index >> CHUNK_BITS], memory_order_acquire);
  return chunk ? &chunk[index & (CHUNK_SLOTS - 1)] : NULL;
}

/* The slot a handle names, or NULL when it names none that exists. */
static inline slot *slot_of(gpures_handle h) {
  if (handle_generation(h) == 0) return NULL;
  return slot_at(handle_index(h));
}

static inline gpures__op op_of(const char *verb, gpures_handle h) {
  gpures__op op = {verb, gpures__variant_of(handle_kind(h)) ? handle_kind(h) : 0};
  return op;
}

static inline uint32_t struct_size_of(const void *p) {
  uint32_t size;
  memcpy(&size, p, sizeof size);
  return size;
}

/*
** Drops a reference; the last one destroys the slot. 0 names no handle, so
** there is nothing to drop: gpures_release(0) succeeds, as free(NULL) does.
** (Every other caller unpins what it pinned, never 0.)
*/
static inline int unpin(gpures_handle h, const char *verb) {
  slot *s = slot_of(h);
  if (!s) return h == 0 ? GPURES_OK : gpures__stale(verb, h);
  uint64_t state = atomic_load_explicit(&s->state, memory_order_acquire);
  for (;;) {
    uint32_t generation = (uint32_t)(state >> 32), count = (uint32_t)state;
    if (generation != handle_generation(h) || count == 0) return gpures__stale(verb, h);
    /* A forged kind byte on a live slot's value must not drop the real handle's reference. */
    if (s->kind != handle_kind(h)) return gpures__stale(verb, h);
    /* The last generation stays with a count of 0: stale for good, and never freed. */
    uint64_t next = count > 1                          ? state - 1u
                    : generation == LAST_GENERATION ? (uint64_t)generation << 32
                                                     : (uint64_t)(generation + 1u) << 32;
    if (atomic_compare_exchange_weak_explicit(&s->state, &state, next, memory_order_acq_rel,
                                              memory_order_acquire)) {
      if (count == 1) gpures__slot_destroy(s, handle_index(h), generation);
      return GPURES_OK;
    }
  }
}

/* Takes a reference if the handle is live. */
static inline int pin(gpures_handle h, const char *verb, slot **out) {
  slot *s = slot_of(h);
  if (!s) return gpures__stale(verb, h);
  uint64_t state = atomic_load_explicit(&s->state, memory_order_acquire);
  for (;;) {
    uint32_t count = (uint32_t)state;
    if ((uint32_t)(state >> 32) != handle_generation(h) || count == 0)
      return gpures__stale(verb, h);
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
    return gpures__stale(verb, h);
  }
  *out = s;
  return GPURES_OK;
}

/* ------------------------------------------------ struct_size.c */

/* A struct shorter than the kind's descriptor must end between two fields. */
int gpures__check_short_desc(gpures__op op, const gpures__variant *v, uint32_t given);
/* The same for the options struct. */
int gpures__check_short_options(gpures__op op, const gpures_create_options *options);

/* ------------------------------------------------------- fds.c */

/* Makes the descriptor's fds the handle's own: duplicated, or adopted. */
int gpures__fds_acquire(gpures__op op, const gpures__variant *v, void *desc, bool adopt);
/* Undoes gpures__fds_acquire: closes what it duplicated (what differs from `caller`'s). */
void gpures__fds_drop(const gpures__variant *v, void *desc, const void *caller);
/* Closes every fd the descriptor holds: the handle's, at its last release. */
void gpures__fds_close(const gpures__variant *v, const void *desc);

/* -------------------------------------------------- handles.c */

/* Clone, release and describe as a handle of `kind` (WRONG_KIND for another): kind_api.c's. */
int gpures__clone_kind(gpures_handle h, uint32_t kind);
int gpures__release_kind(gpures_handle h, uint32_t kind);
int gpures__describe_kind(gpures_handle h, uint32_t kind, void *out);

#endif /* GPURES_TABLE_H */
