/*
** waiter.c: the one waiter thread. An async wait (gpures_sync_wait_async)
** lands here with its own reference to the point and the room for its event
** set aside in the host's queue, so its end is always told, exactly once.
** The thread sleeps in ppoll() on the fds of fd-backed points and on a wake
** pipe; points it can only ask about (Vulkan, CUDA, OpenCL) are asked when
** their turn comes, 50 us after they were added, doubling to 2 ms, so an idle
** thread with a thousand pending points sleeps. It starts with the first
** wait and ends when none is left, and the library's unload stops it.
*/
#if !defined(_WIN32)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#endif
#include <string.h>

#include "sync.h"

typedef struct waiter {
  struct waiter *next;
  gpures_handle sync; /* the wait's own reference */
  gpures__fence fence;
  uint32_t queue;     /* told by an event, or (queue 0) by `then` */
  uint64_t token;
  void (*then)(void *ctx, int status);
  void *ctx;
  int64_t deadline;   /* INT64_MAX: none */
  int64_t next_look;  /* query points: when to ask again */
  int64_t nap;
  int status;         /* set when done: the event's status */
  bool done;
} waiter;

static _Atomic uint32_t pending;

uint32_t gpures_sync_pending(void) { return atomic_load_explicit(&pending, memory_order_relaxed); }

#if !defined(_WIN32)
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static waiter *waiters;
static bool running, stopping;
static pthread_t thread;
static int wake_fds[2] = {-1, -1};

static void wake(void) {
  if (wake_fds[1] >= 0) (void)!write(wake_fds[1], "", 1);
}

/*
** Lets go, then tells the host: once the host hears, the wait holds nothing
** (its reference, its count), so a leak check right after it sees none.
** Called holding no lock.
*/
static void finish(waiter *w) {
  waiter done = *w;
  (void)gpures_release(w->sync);
  gpures__free(w);
  atomic_fetch_sub_explicit(&pending, 1, memory_order_release);
  if (done.then) done.then(done.ctx, done.status);
  else (void)gpures__event_post_status(done.queue, done.token, GPURES_EVENT_SYNC_DONE, done.status);
}

/* Looks at one waiter; `revents` from poll for fd points. Locked. */
static void look(waiter *w, short revents, int64_t now) {
  gpures__op op = {"wait on", w->fence.kind};
  if (w->fence.how == GPURES__WAIT_FD) {
    if (revents & POLLIN) w->done = true, w->status = GPURES_OK;
    else if (revents & (POLLERR | POLLNVAL)) w->done = true, w->status = GPURES_E_OS_ERROR;
  } else if (now >= w->next_look) {
    bool reached = false;
    int status = gpures__fence_query(op, &w->fence, &reached);
    if (status != GPURES_OK || reached) w->done = true, w->status = status;
    w->nap = w->nap < 2000000 ? w->nap * 2 : w->nap;
    w->next_look = now + w->nap;
  }
  if (!w->done && now >= w->deadline) w->done = true, w->status = GPURES_E_TIMED_OUT;
}

static void *run(void *arg) {
  (void)arg;
#if defined(__linux__)
  pthread_setname_np(pthread_self(), "gpures-sync"); /* what top and /proc call it */
#endif
  struct pollfd *fds = NULL;
  waiter **fd_waiters = NULL;
  size_t cap = 0;
  pthread_mutex_lock(&mu);
  while (!stopping && waiters) {
    size_t n = 1, total = 0;
    int64_t soonest = INT64_MAX;
    for (waiter *w = waiters; w; w = w->next) total++;
    if (total + 1 > cap) { /* grows only; a failed grow waits a little and tries again */
      struct pollfd *f = gpures__realloc(fds, (total + 1) * sizeof *f);
      waiter **fw = f ? gpures__realloc(fd_waiters, (total + 1) * sizeof *fw) : NULL;
      if (f) fds = f;
      if (fw) fd_waiters = fw, cap = total + 1;
    }
    fds[0] = (struct pollfd){wake_fds[0], POLLIN, 0};
    for (waiter *w = waiters; w && n < cap; w = w->next) {
      if (w->fence.how == GPURES__WAIT_FD) fd_waiters[n] = w, fds[n++] = (struct pollfd){w->fence.fd, POLLIN, 0};
      else if (w->next_look < soonest) soonest = w->next_look;
      if (w->deadline < soonest) soonest = w->deadline;
    }
    pthread_mutex_unlock(&mu);
    int64_t left = soonest == INT64_MAX ? -1 : soonest - gpures__now_ns();
    if (left < 0 && soonest != INT64_MAX) left = 0;
    struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
    int ready = ppoll(fds, n, left < 0 ? NULL : &ts, NULL);
    pthread_mutex_lock(&mu);
    if (ready > 0 && fds[0].revents) {
      char buf[64];
      while (read(wake_fds[0], buf, sizeof buf) > 0) {}
    }
    /* The waiters polled are still listed: only this thread takes waiters off (cancel marks them). */
    int64_t now = gpures__now_ns();
    for (size_t i = 1; i < n; i++) look(fd_waiters[i], ready > 0 ? fds[i].revents : 0, now);
    waiter *finished = NULL;
    for (waiter **at = &waiters; *at;) {
      waiter *w = *at;
      if (w->fence.how != GPURES__WAIT_FD) look(w, 0, now);
      if (!w->done) {
        at = &w->next;
        continue;
      }
      *at = w->next;
      w->next = finished;
      finished = w;
    }
    pthread_mutex_unlock(&mu);
    while (finished) {
      waiter *w = finished;
      finished = w->next;
      finish(w);
    }
    pthread_mutex_lock(&mu);
  }
  running = false;
  pthread_mutex_unlock(&mu);
  gpures__free(fds);
  gpures__free(fd_waiters);
  return NULL;
}

static int start(gpures__op op) {
  if (wake_fds[0] < 0) {
    if (pipe(wake_fds) != 0) return gpures__os_fail(op, "", "pipe()", errno);
    for (int i = 0; i < 2; i++) {
      (void)fcntl(wake_fds[i], F_SETFD, FD_CLOEXEC);
      (void)fcntl(wake_fds[i], F_SETFL, O_NONBLOCK);
    }
  }
  if (running) return GPURES_OK;
  gpures__pin_library();
  if (thread) pthread_join(thread, NULL); /* the last one ended; reap it */
  int err = pthread_create(&thread, NULL, run, NULL);
  if (err) return thread = 0, gpures__os_fail(op, "", "pthread_create()", err);
  running = true;
  return GPURES_OK;
}

/* Hands a wait to the thread; on failure nothing is kept (the caller undoes its reservation). */
static int add_waiter(gpures__op op, gpures_handle sync, int64_t timeout_ns, waiter how) {
  int status = gpures_clone(sync); /* the wait's own reference: released by finish() */
  if (status != GPURES_OK) return gpures__refail(op, status);
  waiter *w = gpures__alloc(sizeof *w);
  if (!w) {
    (void)gpures_release(sync);
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for the wait");
  }
  *w = how;
  status = gpures__fence_of(op, sync, &w->fence);
  op.kind = w->fence.kind;
  if (status == GPURES_OK && w->fence.how == GPURES__WAIT_GL)
    status = gpures__fail(op, GPURES_E_UNSUPPORTED, "",
                          "a GL sync is waited on where its context is current, not on a thread of gpures's");
  int64_t now = gpures__now_ns();
  w->sync = sync;
  w->deadline = timeout_ns < 0 || timeout_ns > INT64_MAX - now ? INT64_MAX : now + timeout_ns;
  w->nap = 50000;
  w->next_look = now; /* asked at once: an already reached point ends at the first look */
  if (status == GPURES_OK) {
    pthread_mutex_lock(&mu);
    status = start(op);
    if (status == GPURES_OK) {
      w->next = waiters;
      waiters = w;
      atomic_fetch_add_explicit(&pending, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&mu);
  }
  if (status != GPURES_OK) {
    gpures__free(w);
    (void)gpures_release(sync);
    return status;
  }
  wake();
  return GPURES_OK;
}

int gpures_sync_wait_async(gpures_handle sync, int64_t timeout_ns, uint32_t queue, uint64_t token) {
  gpures__op op = {"wait on", 0};
  if (!gpures__event_queue_open(queue))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "queue", "queue %u is not open", queue);
  if (gpures__event_reserve(queue) != GPURES_OK)
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "queue", "queue %u cannot grow", queue);
  waiter how;
  memset(&how, 0, sizeof how);
  how.queue = queue;
  how.token = token;
  int status = add_waiter(op, sync, timeout_ns, how);
  if (status != GPURES_OK) gpures__event_unreserve(queue);
  return status;
}

int gpures__sync_then(gpures__op op, gpures_handle sync, void (*then)(void *ctx, int status),
                      void *ctx) {
  waiter how;
  memset(&how, 0, sizeof how);
  how.then = then;
  how.ctx = ctx;
  return add_waiter(op, sync, -1, how);
}

int gpures_sync_cancel(uint32_t queue, uint64_t token) {
  pthread_mutex_lock(&mu);
  bool found = false;
  for (waiter *w = waiters; w; w = w->next)
    if (!w->then && w->queue == queue && w->token == token && !w->done) {
      w->done = true;
      w->status = GPURES_E_CANCELLED;
      found = true;
    }
  pthread_mutex_unlock(&mu);
  if (found) wake();
  return GPURES_OK;
}

__attribute__((destructor)) static void stop_waiter(void) {
  pthread_mutex_lock(&mu);
  stopping = true;
  bool joinable = thread != 0;
  pthread_mutex_unlock(&mu);
  wake();
  if (joinable) pthread_join(thread, NULL);
}
#else
int gpures__sync_then(gpures__op op, gpures_handle sync, void (*then)(void *ctx, int status),
                      void *ctx) {
  (void)sync, (void)then, (void)ctx;
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "", "async waits run on Linux and POSIX only");
}
int gpures_sync_wait_async(gpures_handle sync, int64_t timeout_ns, uint32_t queue, uint64_t token) {
  gpures__op op = {"wait on", 0};
  (void)sync, (void)timeout_ns, (void)queue, (void)token;
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "", "async waits run on Linux and POSIX only");
}
int gpures_sync_cancel(uint32_t queue, uint64_t token) {
  (void)queue, (void)token;
  return GPURES_OK;
}
#endif
