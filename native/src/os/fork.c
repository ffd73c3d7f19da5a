/*
** fork.c: what the library does around fork(), in one place and one order.
**
** A child has only the thread that forked. A lock another thread held at that
** moment would stay held in the child for good, and the library's background
** threads would be believed to run there. So every lock of the library's own
** is taken before fork() and let go on both sides after it (the child's copy
** of what it guards is never caught mid-change), and the child starts its
** background threads afresh when it first needs them.
**
** The prepare order is the lock order: a lock comes before every lock taken
** under it. The session service's lock (a session's lock and a frame's
** metadata lock are taken under it), the sync waiter's, the pools' list of
** waits bound to a queue (a pool's lock under it), the importers' list
** (an importer's lock under it), the event wait, then the spin locks (the
** event queue table before the queues). The parent and the child let go in
** the reverse order.
**
** The handlers are registered once the library can no longer be unloaded (a
** handler left in unmapped code would crash the next fork()): at load where
** the link made it so (-z nodelete everywhere but macOS), else when it pins
** itself, before its first thread starts.
*/
#if !defined(_WIN32)
#include <pthread.h>
#include <stdlib.h>

#include "../internal.h"

#define SPANS_MAX 8
static struct {
  gpures__lock *first;
  size_t count, stride;
} spans[SPANS_MAX];
static size_t num_spans;

void gpures__locks_across_fork(gpures__lock *first, size_t count, size_t stride) {
  if (num_spans == SPANS_MAX) abort(); /* a new global lock needs a larger SPANS_MAX */
  spans[num_spans].first = first;
  spans[num_spans].count = count;
  spans[num_spans++].stride = stride;
}

static gpures__lock *lock_at(size_t span, size_t i) {
  return (gpures__lock *)((char *)spans[span].first + i * spans[span].stride);
}

/* In the library's lock order. */
static const gpures__forking *const modules[] = {
    &gpures__service_forking,
    &gpures__waiter_forking,
#if defined(__linux__)
    &gpures__pool_forking,
    &gpures__importers_forking,
#endif
    &gpures__event_wait_forking,
};
#define NUM_MODULES (sizeof modules / sizeof modules[0])

static void prepare(void) {
  for (size_t m = 0; m < NUM_MODULES; m++) pthread_mutex_lock(modules[m]->lock);
  for (size_t s = 0; s < num_spans; s++)
    for (size_t i = 0; i < spans[s].count; i++) gpures__lock_acquire(lock_at(s, i));
}

static void let_go_spans(void) {
  for (size_t s = num_spans; s-- > 0;)
    for (size_t i = spans[s].count; i-- > 0;) gpures__lock_release(lock_at(s, i));
}

static void in_parent(void) {
  let_go_spans();
  for (size_t m = NUM_MODULES; m-- > 0;) pthread_mutex_unlock(modules[m]->lock);
}

static void in_child(void) {
  let_go_spans();
  for (size_t m = NUM_MODULES; m-- > 0;) {
    pthread_mutex_unlock(modules[m]->lock);
    modules[m]->in_child();
  }
}

void gpures__watch_forks(void) {
  static atomic_flag watching = ATOMIC_FLAG_INIT;
  if (!atomic_flag_test_and_set(&watching)) (void)pthread_atfork(prepare, in_parent, in_child);
}

#if !defined(__APPLE__)
__attribute__((constructor)) static void watch_forks_at_load(void) { gpures__watch_forks(); }
#endif
#endif
