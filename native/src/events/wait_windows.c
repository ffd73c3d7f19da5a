/*
** wait_windows.c: gpures_event_queue_wait() on Windows, where no kind owns
** an fd and so nothing is watched: one condition variable serves every
** queue, and a post wakes each waiting thread to look at its own queue.
*/
#if defined(_WIN32)
#include <windows.h>

#include "../internal.h"

static _Atomic uint32_t waiters;
static SRWLOCK lock = SRWLOCK_INIT;
static CONDITION_VARIABLE posted = CONDITION_VARIABLE_INIT;
static uint64_t wakes; /* under lock: a waiter sleeps only while no wake came since it looked */

void gpures__events_wake(uint32_t queue) {
  (void)queue;
  /* The post comes before this load, a waiter's increment before its look: see events/wait.c. */
  atomic_thread_fence(memory_order_seq_cst);
  if (!atomic_load_explicit(&waiters, memory_order_relaxed)) return;
  AcquireSRWLockExclusive(&lock);
  wakes++;
  ReleaseSRWLockExclusive(&lock);
  WakeAllConditionVariable(&posted);
}

void gpures__watches_queue_ended(uint32_t queue) { (void)queue; }

int gpures_event_queue_watch(uint32_t queue, int fd, uint32_t events, uint64_t token) {
  gpures__op op = {"watch an fd for event queue", 0};
  (void)queue, (void)fd, (void)events, (void)token;
  return gpures__fail(op, GPURES_E_UNSUPPORTED_PLATFORM, "fd",
                      "Windows has no fd-owning kinds, so nothing is watched");
}

int gpures_event_queue_unwatch(uint32_t queue, uint64_t token, uint32_t *out_withdrawn) {
  (void)queue, (void)token;
  if (out_withdrawn) *out_withdrawn = 0;
  return GPURES_OK;
}

uint32_t gpures_event_queue_watching(uint32_t queue) {
  (void)queue;
  return 0;
}

/* Sleeps (locked) until a wake or the deadline (ms of GetTickCount64); false at the deadline. */
static bool sleep_until(int64_t deadline_ms) {
  DWORD ms = INFINITE;
  if (deadline_ms >= 0) {
    int64_t left = deadline_ms - (int64_t)GetTickCount64();
    if (left <= 0) return false;
    ms = (DWORD)left;
  }
  return SleepConditionVariableSRW(&posted, &lock, ms, 0) || GetLastError() != ERROR_TIMEOUT;
}

int gpures_event_queue_wait(uint32_t queue, int32_t timeout_ms, uint32_t *out_pending) {
  gpures__op op = {"wait on event queue", 0};
  uint32_t ignored;
  if (!out_pending) out_pending = &ignored;
  *out_pending = 0;
  gpures__pin_library();
  int64_t deadline = timeout_ms < 0 ? -1 : (int64_t)GetTickCount64() + timeout_ms;
  atomic_fetch_add_explicit(&waiters, 1, memory_order_seq_cst);
  atomic_thread_fence(memory_order_seq_cst);
  AcquireSRWLockExclusive(&lock);
  int status = GPURES_OK;
  for (;;) {
    uint64_t seen = wakes;
    ReleaseSRWLockExclusive(&lock); /* the queue's own lock is never taken under this one */
    uint32_t pending = gpures_event_queue_pending(queue);
    bool open = pending || gpures__event_queue_open(queue);
    AcquireSRWLockExclusive(&lock);
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
  ReleaseSRWLockExclusive(&lock);
  atomic_fetch_sub_explicit(&waiters, 1, memory_order_acq_rel);
  return status;
}
#endif
