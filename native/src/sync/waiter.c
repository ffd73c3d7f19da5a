/*
** waiter.c: the one waiter thread. An async wait (gpures_sync_wait_async)
** lands here with its own reference to the point and the room for its event
** set aside in the host's queue, so its end is always told, exactly once.
** The thread sleeps in poll() on the fds of fd-backed points and on a wake
** pipe; points it can only ask about (Vulkan, CUDA, OpenCL) are asked when
** their turn comes, 50 us after they were added, doubling to 2 ms, so an idle
** thread with a thousand pending points sleeps. It starts with the first
** wait and ends when none is left, and the library's unload stops it. A
** queue's close (its isolate ended) ends the waits told on it.
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
  size_t poll_index;  /* this round: the entry of its fd in the poll set (0: none) */
  int query_status;   /* this round's answer of its API */
  bool query_reached;
  int status;         /* set when done: the event's status */
  bool done;
} waiter;

static _Atomic uint32_t pending;

uint32_t gpures_sync_pending(void) { return atomic_load_explicit(&pending, memory_order_relaxed); }

#if !defined(_WIN32)
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static waiter *waiters;
static bool stopping;
static gpures__worker worker = GPURES__WORKER_INIT;

static void wake(void) { gpures__worker_wake(&worker); }

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

/*
** One round's view of the waiters: the pollfds (entry 0 the wake pipe, then
** each distinct fence fd once, however many wait on it: a poll set larger than
** the fd limit would fail) and the waiters that are due an API query. It
** starts in the thread's own arrays and grows from the heap; a failed grow
** leaves the rest for the next round, 1 ms later.
*/
#define ROUND_STATIC 64u

typedef struct round {
  struct pollfd first_fds[ROUND_STATIC], *fds;
  waiter *first_due[ROUND_STATIC], **due;
  size_t cap, nfds, ndue;
  bool short_of_room;
} round;

static void round_reserve(round *r, size_t need) {
  if (need <= r->cap) return;
  struct pollfd *f = gpures__alloc(need * sizeof *f);
  waiter **d = f ? gpures__alloc(need * sizeof *d) : NULL;
  if (!d) {
    gpures__free(f);
    r->short_of_room = true;
    return;
  }
  if (r->fds != r->first_fds) gpures__free(r->fds), gpures__free(r->due);
  r->fds = f, r->due = d, r->cap = need;
}

/* The index of fd in the poll set, adding it; 0 when there is no room. Locked. */
static size_t poll_index(round *r, int fd) {
  for (size_t i = 1; i < r->nfds; i++)
    if (r->fds[i].fd == fd) return i;
  if (r->nfds == r->cap) return r->short_of_room = true, 0;
  r->fds[r->nfds] = (struct pollfd){fd, POLLIN, 0};
  return r->nfds++;
}

/* What this round waits for: fds to poll, queries due, and when to look again. Locked. */
static int64_t plan(round *r, int64_t now) {
  size_t total = 1;
  for (waiter *w = waiters; w; w = w->next) total++;
  r->short_of_room = false;
  round_reserve(r, total);
  r->nfds = 1, r->ndue = 0;
  r->fds[0] = (struct pollfd){worker.wake[0], POLLIN, 0};
  int64_t soonest = INT64_MAX;
  for (waiter *w = waiters; w; w = w->next) {
    if (w->done) {
      soonest = now; /* cancelled: collect it at once */
    } else if (w->fence.how == GPURES__WAIT_FD) {
      w->poll_index = poll_index(r, w->fence.fd);
    } else if (now >= w->next_look && r->ndue < r->cap) {
      r->due[r->ndue++] = w;
    }
    if (!w->done && w->fence.how != GPURES__WAIT_FD && w->next_look < soonest) soonest = w->next_look;
    if (w->deadline < soonest) soonest = w->deadline;
  }
  if (r->short_of_room && now + 1000000 < soonest) soonest = now + 1000000;
  return soonest;
}

/* Asks the due APIs, outside the lock: a first dlopen or a driver call must not hold up signal() or a cancel. */
static void query_due(round *r) {
  for (size_t i = 0; i < r->ndue; i++) {
    waiter *w = r->due[i]; /* its fence never changes, and only this thread frees it */
    gpures__op op = {"wait on", w->fence.kind};
    bool reached = false;
    w->query_status = gpures__fence_query(op, &w->fence, &reached);
    w->query_reached = reached;
  }
}

/* What the round found, for each waiter not already done (a cancel stays a cancel). Locked. */
static void settle(round *r, int ready, int poll_errno, int64_t now) {
  for (size_t i = 0; i < r->ndue; i++) {
    waiter *w = r->due[i];
    if (w->done) continue;
    if (w->query_status != GPURES_OK || w->query_reached)
      w->done = true, w->status = w->query_status;
    w->nap = w->nap < 2000000 ? w->nap * 2 : w->nap;
    w->next_look = now + w->nap;
  }
  for (waiter *w = waiters; w; w = w->next) {
    if (w->done) continue;
    if (w->fence.how == GPURES__WAIT_FD && w->poll_index) {
      short revents = ready > 0 ? r->fds[w->poll_index].revents : 0;
      if (revents & POLLIN) w->done = true, w->status = GPURES_OK;
      else if (revents & (POLLERR | POLLNVAL)) w->done = true, w->status = GPURES_E_OS_ERROR;
      else if (ready < 0 && poll_errno != EINTR) w->done = true, w->status = GPURES_E_OS_ERROR;
    }
    if (!w->done && now >= w->deadline) w->done = true, w->status = GPURES_E_TIMED_OUT;
  }
}

static void *run(void *arg) {
  (void)arg;
#if defined(__linux__)
  pthread_setname_np(pthread_self(), "gpures-sync"); /* what top and /proc call it */
#endif
  round r;
  r.fds = r.first_fds, r.due = r.first_due, r.cap = ROUND_STATIC;
  pthread_mutex_lock(&mu);
  while (!stopping && waiters) {
    int64_t soonest = plan(&r, gpures__now_ns());
    pthread_mutex_unlock(&mu);
    query_due(&r);
    int ready = r.ndue ? 0 : gpures__poll_until(r.fds, (unsigned)r.nfds, soonest);
    if (r.ndue) ready = poll(r.fds, r.nfds, 0); /* answers came: look at the fds, without waiting */
    int poll_errno = ready < 0 ? errno : 0;
    pthread_mutex_lock(&mu);
    if (ready > 0 && r.fds[0].revents) gpures__worker_drain(&worker);
    settle(&r, ready, poll_errno, gpures__now_ns());
    waiter *finished = NULL;
    for (waiter **at = &waiters; *at;) { /* only this thread takes waiters off the list */
      waiter *w = *at;
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
  worker.running = false;
  pthread_mutex_unlock(&mu);
  if (r.fds != r.first_fds) gpures__free(r.fds), gpures__free(r.due);
  return NULL;
}

/*
** fork() (os/fork.c): the child has no waiter thread, and the wake pipe is
** shared with the parent (a child reading it would steal the parent's
** wake-ups). The child starts afresh: no thread, no waits (theirs are the
** parent's, and so are the references they hold), a new pipe when it first
** waits.
*/
static void forget_in_child(void) {
  gpures__worker_forget_fork(&worker);
  waiters = NULL;
  atomic_store(&pending, 0);
  pthread_mutex_init(&mu, NULL);
}
const gpures__forking gpures__waiter_forking = {&mu, forget_in_child};

static int start(gpures__op op) { return gpures__worker_start(op, &worker, run); }

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
  /* Asked once here: an API that cannot be opened, or refuses the object, is this call's error. */
  bool reached = false;
  if (status == GPURES_OK) status = gpures__fence_query(op, &w->fence, &reached);
  int64_t now = gpures__now_ns();
  w->sync = sync;
  w->deadline = timeout_ns < 0 || timeout_ns > INT64_MAX - now ? INT64_MAX : now + timeout_ns;
  w->nap = 50000;
  w->next_look = now; /* asked at once: an already reached point ends at the first look */
  if (status == GPURES_OK) {
    gpures__pin_library(); /* before the lock: its dlopen() must not wait while a fork() waits on us */
    pthread_mutex_lock(&mu);
    status = start(op);
    if (status == GPURES_OK) {
      w->next = waiters;
      waiters = w;
      atomic_fetch_add_explicit(&pending, 1, memory_order_relaxed);
      /* Its queue closed since the caller looked: gpures__sync_queue_ended() missed it, so it ends now. */
      if (w->queue && !gpures__event_queue_open(w->queue)) w->done = true, w->status = GPURES_E_CANCELLED;
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

/*
** The queue's isolate ended: nobody is left to hear of its waits, so each
** ends now (CANCELLED, its event dropped by the closed queue) and the waiter
** thread lets go of its reference, closing the point's fd if it was the last.
*/
void gpures__sync_queue_ended(uint32_t queue) {
  pthread_mutex_lock(&mu);
  bool found = false;
  for (waiter *w = waiters; w; w = w->next)
    if (!w->then && w->queue == queue && !w->done) {
      w->done = true;
      w->status = GPURES_E_CANCELLED;
      found = true;
    }
  pthread_mutex_unlock(&mu);
  if (found) wake();
}

__attribute__((destructor)) static void stop_waiter(void) {
  pthread_mutex_lock(&mu);
  stopping = true;
  bool joinable = worker.started;
  pthread_mutex_unlock(&mu);
  wake();
  if (joinable) pthread_join(worker.thread, NULL);
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
void gpures__sync_queue_ended(uint32_t queue) { (void)queue; }
#endif
