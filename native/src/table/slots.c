/*
** slots.c: where handles live. Slots come in chunks of CHUNK_SLOTS, made as
** the table grows and never freed; free slots form a lock-free list whose
** head carries a tag against ABA. A slot leaves the list at create and goes
** back at its last release, unless its last generation retired it
** (table.h says why). Pin and unpin, the reference counting, are table.h's.
*/
#include <inttypes.h>

#include "table.h"

GPURES__HIDDEN _Atomic(slot *) gpures__chunks[MAX_CHUNKS];
GPURES__HIDDEN _Atomic uint64_t gpures__live[GPURES_KIND_MAX + 1];
static _Atomic uint32_t next_unused;
static _Atomic uint64_t free_head; /* tag << 32 | (index + 1); the tag defeats ABA */
static _Atomic uint32_t retired;   /* slots past their last generation, never reused */

/* A slot whose chunk is known to exist (it was on the free list or is live). */
static slot *slot_known(uint32_t index) {
  return &atomic_load_explicit(&gpures__chunks[index >> CHUNK_BITS],
                               memory_order_acquire)[index & (CHUNK_SLOTS - 1)];
}

static int ensure_chunk(uint32_t c) {
  if (atomic_load_explicit(&gpures__chunks[c], memory_order_acquire)) return GPURES_OK;
  slot *fresh = gpures__alloc(CHUNK_SLOTS * sizeof(slot));
  if (!fresh) return GPURES_E_OUT_OF_MEMORY;
  memset(fresh, 0, CHUNK_SLOTS * sizeof(slot));
  slot *expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(&gpures__chunks[c], &expected, fresh,
                                               memory_order_acq_rel, memory_order_acquire))
    gpures__free(fresh); /* another thread installed it first */
  return GPURES_OK;
}

static int take_slot(uint32_t *out_index) {
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

int gpures__slot_alloc(gpures__op op, uint32_t *out_index) {
  if (take_slot(out_index) == GPURES_OK) return GPURES_OK;
  /* Why: the table is full (less what was retired), or malloc failed. */
  if (atomic_load_explicit(&next_unused, memory_order_relaxed) < MAX_SLOTS)
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for another handle");
  uint32_t gone = atomic_load_explicit(&retired, memory_order_relaxed);
  return gpures__fail_table_full(op, MAX_SLOTS, gone, "handle slots are in use", "release handles");
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

void gpures__slot_destroy(slot *s, uint32_t index, uint32_t generation) {
  const gpures__variant *v = gpures__variant_of(s->kind);
  /* No one else can reach the slot now: its fences need no lock. */
  gpures_handle acquire = s->fences[0], release = s->fences[1];
  s->fences[0] = s->fences[1] = 0;
  (void)gpures_release(acquire);
  if (release && s->borrow.keep_fence) s->borrow.keep_fence(s->borrow.ctx, release);
  else (void)gpures_release(release);
  if (s->borrow.at_last_release) /* the buffer comes home before anyone hears of the release */
    s->borrow.at_last_release(s->borrow.ctx, atomic_load_explicit(&s->retired, memory_order_acquire));
  else if (v->owns_fds)
    gpures__fds_close(v, &s->desc);
  if (s->keep_alive.release) s->keep_alive.release(s->keep_alive.ctx);
  if (s->queue) (void)gpures__event_post(s->queue, s->token, GPURES_EVENT_RELEASED);
  atomic_fetch_sub_explicit(&gpures__live[s->kind], 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&gpures__live[0], 1, memory_order_relaxed);
  if (generation == LAST_GENERATION) atomic_fetch_add_explicit(&retired, 1, memory_order_relaxed);
  else slot_free(index);
}

int gpures__stale(const char *verb, gpures_handle h) {
  if (h == 0) return gpures__fail(op_of(verb, h), GPURES_E_NULL_HANDLE, "handle", "handle is 0");
  return gpures__fail(op_of(verb, h), GPURES_E_STALE, "handle",
                      "handle 0x%016" PRIx64 " was released (or never existed)", h);
}

uint64_t gpures_live_handles(uint32_t kind) {
  if (kind > GPURES_KIND_MAX) return 0;
  return atomic_load_explicit(&gpures__live[kind], memory_order_relaxed);
}

/*
** Test hooks, like core/alloc.c's: exported for the C tests, not part of
** gpures.h. Ages the slot the next create will take so that it gets
** `generation`, as if the slot had served generation - 1 handles already;
** single-threaded use only (another thread's create in between takes the
** slot instead).
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
