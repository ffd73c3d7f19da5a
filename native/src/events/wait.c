/*
** wait.c: gpures_event_queue_wait(), a blocking wait for a queue's next
** event. One condition variable serves every queue: posts are rare next to
** everything else a host does, a wake-up costs each waiting isolate one look
** at its own queue, and a post pays nothing but an atomic load when nobody
** waits (a JavaScript host waits only while it expects releases from
** elsewhere).
*/
#if !defined(_WIN32) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime, where libc headers hide what is not asked for */
#endif
#if defined(_WIN32)
#include <windows.h>
#else
#include <errno.h>
#include <pthread.h>
#include <time.h>
#endif

#include "../internal.h"

static _Atomic uint32_t waiters;
#if defined(_WIN32)
static SRWLOCK lock = SRWLOCK_INIT;
static CONDITION_VARIABLE posted = CONDITION_VARIABLE_INIT;
#else
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t posted = PTHREAD_COND_INITIALIZER;
#endif
static uint64_t wakes; /* under lock: a waiter sleeps only while no wake came since it looked */

void gpures__events_wake(void) {
  /*
  ** The post (a store) comes before this load, and a waiter's increment (a
  ** store) before its look at the queue: without a full fence on both sides
  ** each could miss the other's store, and the waiter would sleep through
  ** the event.
  */
  atomic_thread_fence(memory_order_seq_cst);
  if (!atomic_load_explicit(&waiters, memory_order_relaxed)) return;
#if defined(_WIN32)
  AcquireSRWLockExclusive(&lock);
  wakes++;
  ReleaseSRWLockExclusive(&lock);
  WakeAllConditionVariable(&posted);
#else
  pthread_mutex_lock(&lock);
  wakes++;
  pthread_cond_broadcast(&posted);
  pthread_mutex_unlock(&lock);
#endif
}

/* Sleeps (locked) until a wake or the deadline (ms since an arbitrary start); false at the deadline. */
static bool sleep_until(int64_t deadline_ms) {
#if defined(_WIN32)
  DWORD ms = INFINITE;
  if (deadline_ms >= 0) {
    int64_t left = deadline_ms - (int64_t)GetTickCount64();
    if (left <= 0) return false;
    ms = (DWORD)left;
  }
  return SleepConditionVariableSRW(&posted, &lock, ms, 0) || GetLastError() != ERROR_TIMEOUT;
#else
  if (deadline_ms < 0) return pthread_cond_wait(&posted, &lock), true;
  struct timespec t = {(time_t)(deadline_ms / 1000), (long)(deadline_ms % 1000) * 1000000L};
  return pthread_cond_timedwait(&posted, &lock, &t) != ETIMEDOUT;
#endif
}

static int64_t now_ms(void) {
#if defined(_WIN32)
  return (int64_t)GetTickCount64();
#else
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t); /* pthread_cond_timedwait's clock */
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
#endif
}

static void lock_all(void) {
#if defined(_WIN32)
  AcquireSRWLockExclusive(&lock);
#else
  pthread_mutex_lock(&lock);
#endif
}

static void unlock_all(void) {
#if defined(_WIN32)
  ReleaseSRWLockExclusive(&lock);
#else
  pthread_mutex_unlock(&lock);
#endif
}

#if !defined(_WIN32)
/* fork() (os/fork.c): the child has none of the parent's waiting threads. */
static void forget_in_child(void) {
  atomic_store(&waiters, 0);
  pthread_mutex_init(&lock, NULL);
  pthread_cond_init(&posted, NULL);
}
const gpures__forking gpures__event_wait_forking = {&lock, forget_in_child};
#endif

int gpures_event_queue_wait(uint32_t queue, int32_t timeout_ms, uint32_t *out_pending) {
  gpures__op op = {"wait on event queue", 0};
  uint32_t ignored;
  if (!out_pending) out_pending = &ignored; /* a caller that polls the queue next anyway */
  *out_pending = 0;
  gpures__pin_library();
  int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
  atomic_fetch_add_explicit(&waiters, 1, memory_order_seq_cst);
  atomic_thread_fence(memory_order_seq_cst); /* see gpures__events_wake() */
  lock_all();
  int status = GPURES_OK;
  for (;;) {
    uint64_t seen = wakes;
    unlock_all(); /* the queue's own lock is never taken under this one */
    uint32_t pending = gpures_event_queue_pending(queue);
    bool open = pending || gpures__event_queue_open(queue);
    lock_all();
    if (!open) {
      status = gpures__fail(op, GPURES_E_STALE, "queue", "queue %u is closed", queue);
      break;
    }
    if (pending) {
      *out_pending = pending;
      break;
    }
    if (wakes != seen) continue; /* an event came while the lock was down: look again */
    if (!sleep_until(deadline)) break;
  }
  unlock_all();
  atomic_fetch_sub_explicit(&waiters, 1, memory_order_acq_rel);
  return status;
}
