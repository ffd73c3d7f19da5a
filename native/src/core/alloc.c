/*
** alloc.c: the one place gpures allocates, so tests can make allocation fail.
**
** Every allocation goes through gpures__alloc() or gpures__realloc(): a chunk
** of 4096 handle slots when the handle table grows (table/slots.c), an event
** queue's ring when it grows (events/events.c), a pool, a session and their
** records. The arrays that grow one item at a time (a session's lists, a
** queue's watches, a pool's notices) grow through gpures__grow(), which
** doubles them.
**
** Test-only fault injection. gpures__test_fail_alloc_after(n) lets the next n
** allocations succeed and makes every later one fail (return NULL) until it
** is called again; n < 0 turns injection off (the default).
** gpures__test_failed_allocs() counts the failures injected since the last
** gpures__test_fail_alloc_after() call. Both are exported so that the C tests,
** which link the shared library, can reach them, but they are not part of the
** API: they are not in gpures.h, the Deno module does not bind them, and their
** names begin with "gpures__" like every other internal name. Left alone they
** cost one relaxed atomic load per allocation, and gpures allocates rarely.
*/
#include <stdlib.h>

#include "../internal.h"

/* Allocations left before injection starts; -1: never inject. */
static _Atomic int64_t allow_left = -1;
static _Atomic uint64_t injected;

GPURES_API void gpures__test_fail_alloc_after(int64_t n);
GPURES_API uint64_t gpures__test_failed_allocs(void);

void gpures__test_fail_alloc_after(int64_t n) {
  atomic_store_explicit(&injected, 0, memory_order_relaxed);
  atomic_store_explicit(&allow_left, n < 0 ? -1 : n, memory_order_seq_cst);
}

uint64_t gpures__test_failed_allocs(void) {
  return atomic_load_explicit(&injected, memory_order_relaxed);
}

/* 1 when this allocation must fail. */
static int inject(void) {
  int64_t left = atomic_load_explicit(&allow_left, memory_order_relaxed);
  for (;;) {
    if (left < 0) return 0;
    if (left == 0) {
      atomic_fetch_add_explicit(&injected, 1, memory_order_relaxed);
      return 1;
    }
    if (atomic_compare_exchange_weak_explicit(&allow_left, &left, left - 1, memory_order_relaxed,
                                              memory_order_relaxed))
      return 0;
  }
}

void *gpures__alloc(size_t size) { return inject() ? NULL : malloc(size); }
void *gpures__realloc(void *p, size_t size) { return inject() ? NULL : realloc(p, size); }
void gpures__free(void *p) { free(p); }

bool gpures__grow(void **items, uint32_t *capacity, uint32_t count, size_t size, uint32_t first,
                  uint32_t max) {
  if (count < *capacity) return true;
  if (count >= max) return false;
  uint32_t next = *capacity ? (*capacity > max / 2 ? max : *capacity * 2) : first;
  if (next > max) next = max;
  void *grown = gpures__realloc(*items, (size_t)next * size);
  if (!grown) return false; /* *items is as it was */
  *items = grown, *capacity = next;
  return true;
}
