/*
** wait.c: gpures_event_queue_wait(), a host thread's wait for its queue's
** next event, and the fds that wait watches meanwhile
** (gpures_event_queue_watch).
**
** A wait with nothing to watch sleeps on a condition variable, as a plain
** event wait should: it costs no fd. Once its queue watches an fd, the
** waiting thread polls every watched fd and the queue's wake pipe (made for
** the first watch, closed with the queue: a stream's every frame must not
** pay for a pipe) in one poll(): the datagram that ends a pending
** receive wakes the very thread that returns to the host, and no thread is
** held per watch, however many there are. A post writes the pipe only while
** a thread waits on that queue, so no queue wakes for another's events.
**
** A watch is one-shot: the thread that sees it fire takes it off the list
** and posts its event (the room for which was set aside at watch time), so
** two threads waiting on one queue tell it once. The list is kept sorted by
** fd, which makes each distinct fd one pollfd: a poll set larger than the fd
** limit would fail, and many watches on one socket are the common case.
*/
#if !defined(_WIN32)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../internal.h"

#define WATCH_MAX (1u << 20) /* per queue: far past any fd limit */

typedef struct watch {
  int fd;
  short events; /* POLLIN, POLLOUT */
  uint64_t token;
} watch;

typedef struct queue_waits {
  gpures__lock lock;
  uint32_t queue;    /* whose watches these are (0: none) */
  bool has_pipe;
  int pipe[2];       /* the wake pipe: read end polled, write end written by posts */
  uint32_t sleeping; /* threads in gpures_event_queue_wait() on this index */
  watch *watches;    /* sorted by fd */
  uint32_t length, capacity;
} queue_waits;

static queue_waits table[GPURES__MAX_QUEUES];
/* The condition variable of waits that watch nothing: one for every queue, posts being rare. */
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER; /* os/fork.c holds it across fork() */
static pthread_cond_t posted = PTHREAD_COND_INITIALIZER;
static uint64_t wakes; /* under cond_lock: a waiter sleeps only while no wake came since it looked */
static _Atomic uint32_t cond_waiters;

__attribute__((constructor)) static void locks_across_fork(void) {
  gpures__locks_across_fork(&table[0].lock, GPURES__MAX_QUEUES, sizeof table[0]);
}

static queue_waits *waits_of(uint32_t queue) {
  uint32_t index = (queue & 0xffffu) - 1u;
  return queue == 0 || index >= GPURES__MAX_QUEUES ? NULL : &table[index];
}

/*
** A post publishes its event under the queue's lock before it takes this
** one, and a waiter counts itself under this one before it looks at the
** queue: whichever comes second sees the other, so no wake is lost. The
** write happens under the lock because the pipe closes under it: a write
** after the close could land in whatever file took the fd number. For the
** condition variable the same holds through the fences: the post's store,
** then its load of cond_waiters; the waiter's increment, then its look.
*/
void gpures__events_wake(uint32_t queue) {
  queue_waits *w = waits_of(queue);
  if (!w) return;
  gpures__lock_acquire(&w->lock);
  if (w->sleeping && w->has_pipe) (void)!write(w->pipe[1], "", 1); /* EAGAIN: one is waiting */
  gpures__lock_release(&w->lock);
  atomic_thread_fence(memory_order_seq_cst);
  if (!atomic_load_explicit(&cond_waiters, memory_order_relaxed)) return;
  pthread_mutex_lock(&cond_lock);
  wakes++;
  pthread_cond_broadcast(&posted);
  pthread_mutex_unlock(&cond_lock);
}

/* Takes the pipe off w once its queue is gone and nobody sleeps on it: its fds, to close unlocked. Locked. */
static void retire_pipe(queue_waits *w, uint32_t queue, int fds[2]) {
  fds[0] = fds[1] = -1;
  if (!w->has_pipe || w->sleeping || gpures__event_queue_open(queue)) return;
  fds[0] = w->pipe[0], fds[1] = w->pipe[1];
  w->has_pipe = false;
}

static void close_fds(const int fds[2]) {
  for (int i = 0; i < 2; i++)
    if (fds[i] >= 0) close(fds[i]);
}

/* fork() (os/fork.c): the pipes are shared with the parent, whose wakes a child must not steal. */
static void forget_in_child(void) {
  for (uint32_t i = 0; i < GPURES__MAX_QUEUES; i++) {
    queue_waits *w = &table[i];
    if (w->has_pipe) close(w->pipe[0]), close(w->pipe[1]);
    w->has_pipe = false;
    w->sleeping = 0;
  }
  atomic_store(&cond_waiters, 0);
  pthread_mutex_init(&cond_lock, NULL);
  pthread_cond_init(&posted, NULL);
}
const gpures__forking gpures__event_wait_forking = {&cond_lock, forget_in_child};

/* Counts the caller as sleeping on w (and, for the condition variable, anywhere). */
static void enter(queue_waits *w) {
  gpures__lock_acquire(&w->lock);
  w->sleeping++;
  gpures__lock_release(&w->lock);
  atomic_fetch_add_explicit(&cond_waiters, 1, memory_order_seq_cst);
  atomic_thread_fence(memory_order_seq_cst); /* see gpures__events_wake() */
}

static void leave(queue_waits *w, uint32_t queue) {
  atomic_fetch_sub_explicit(&cond_waiters, 1, memory_order_acq_rel);
  int fds[2];
  gpures__lock_acquire(&w->lock);
  w->sleeping--;
  retire_pipe(w, queue, fds);
  gpures__lock_release(&w->lock);
  close_fds(fds);
}

/* Gives w its wake pipe, made outside the lock (a thread that made one first wins). */
static int make_pipe(gpures__op op, queue_waits *w) {
  int fds[2];
#if defined(__linux__)
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return gpures__os_fail(op, "", "pipe2()", errno);
#else
  if (pipe(fds) != 0) return gpures__os_fail(op, "", "pipe()", errno);
  for (int i = 0; i < 2; i++) {
    (void)fcntl(fds[i], F_SETFD, FD_CLOEXEC);
    (void)fcntl(fds[i], F_SETFL, O_NONBLOCK);
  }
#endif
  gpures__lock_acquire(&w->lock);
  if (!w->has_pipe) {
    w->pipe[0] = fds[0], w->pipe[1] = fds[1];
    w->has_pipe = true;
    fds[0] = fds[1] = -1;
  }
  gpures__lock_release(&w->lock);
  close_fds(fds);
  return GPURES_OK;
}

/* ---------------------------------------------------------------- watches */

/* The first index whose fd is >= fd. Locked. */
static uint32_t lower_bound(const queue_waits *w, int fd) {
  uint32_t lo = 0, hi = w->length;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (w->watches[mid].fd < fd) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Takes the watch (fd, token) off the list; whether it was there. Locked. */
static bool take(queue_waits *w, int fd, uint64_t token) {
  for (uint32_t i = lower_bound(w, fd); i < w->length && w->watches[i].fd == fd; i++) {
    if (w->watches[i].token != token) continue;
    memmove(&w->watches[i], &w->watches[i + 1], (w->length - i - 1) * sizeof *w->watches);
    w->length--;
    return true;
  }
  return false;
}

static void drop_all(queue_waits *w) {
  gpures__free(w->watches);
  w->watches = NULL;
  w->length = w->capacity = 0;
  w->queue = 0;
}

static int add(queue_waits *w, uint32_t queue, watch item) {
  if (w->queue != queue) drop_all(w), w->queue = queue; /* an earlier queue's, gone with it */
  if (!gpures__grow((void **)&w->watches, &w->capacity, w->length, sizeof *w->watches, 8,
                    WATCH_MAX))
    return GPURES_E_OUT_OF_MEMORY;
  uint32_t at = lower_bound(w, item.fd + 1); /* after the fd's other watches: they fire in order */
  memmove(&w->watches[at + 1], &w->watches[at], (w->length - at) * sizeof *w->watches);
  w->watches[at] = item;
  w->length++;
  return GPURES_OK;
}

int gpures_event_queue_watch(uint32_t queue, int fd, uint32_t events, uint64_t token) {
  gpures__op op = {"watch an fd for event queue", 0};
  queue_waits *w = waits_of(queue);
  if (!w) return gpures__fail(op, GPURES_E_INVALID_VALUE, "queue", "queue %u does not exist", queue);
  if (events == 0 || (events & ~(uint32_t)(GPURES_CHANNEL_READABLE | GPURES_CHANNEL_WRITABLE)))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "events",
                        "events is %u; give GPURES_CHANNEL_READABLE, WRITABLE or both", events);
  if (fd < 0 || fcntl(fd, F_GETFD) < 0) return gpures__os_fail(op, "fd", "fcntl(F_GETFD)", EBADF);
  int status = gpures__event_reserve(queue);
  if (status == GPURES_E_STALE || status == GPURES_E_INVALID_VALUE)
    return gpures__fail(op, GPURES_E_STALE, "queue", "queue %u is not open", queue);
  if (status != GPURES_OK)
    return gpures__fail(op, status, "queue", "queue %u cannot grow", queue);
  gpures__lock_acquire(&w->lock);
  bool has_pipe = w->has_pipe;
  gpures__lock_release(&w->lock);
  /* Made here, on the host's thread, so that its fds appear with the first watch, not later. */
  if (!has_pipe && (status = make_pipe(op, w)) != GPURES_OK) {
    gpures__event_unreserve(queue);
    return status;
  }
  short wanted = (short)(((events & GPURES_CHANNEL_READABLE) ? POLLIN : 0) |
                         ((events & GPURES_CHANNEL_WRITABLE) ? POLLOUT : 0));
  gpures__lock_acquire(&w->lock);
  status = add(w, queue, (watch){fd, wanted, token});
  gpures__lock_release(&w->lock);
  if (status != GPURES_OK) {
    gpures__event_unreserve(queue);
    return gpures__fail(op, status, "", "no memory for one more watch on queue %u", queue);
  }
  /* Closed since the reservation: its watches were dropped before this one came. */
  if (!gpures__event_queue_open(queue)) {
    gpures__watches_queue_ended(queue);
    return gpures__fail(op, GPURES_E_STALE, "queue", "queue %u was closed", queue);
  }
  gpures__events_wake(queue); /* a thread polling now adds it to its set */
  return GPURES_OK;
}

int gpures_event_queue_unwatch(uint32_t queue, uint64_t token, uint32_t *out_withdrawn) {
  uint32_t ignored;
  if (!out_withdrawn) out_withdrawn = &ignored;
  *out_withdrawn = 0;
  queue_waits *w = waits_of(queue);
  if (!w) return GPURES_OK;
  bool found = false;
  gpures__lock_acquire(&w->lock);
  for (uint32_t i = 0; w->queue == queue && i < w->length && !found; i++)
    if (w->watches[i].token == token) found = take(w, w->watches[i].fd, token);
  gpures__lock_release(&w->lock);
  if (found) gpures__event_unreserve(queue), *out_withdrawn = 1;
  return GPURES_OK;
}

uint32_t gpures_event_queue_watching(uint32_t queue) {
  queue_waits *w = waits_of(queue);
  if (!w) return 0;
  gpures__lock_acquire(&w->lock);
  uint32_t n = w->queue == queue ? w->length : 0;
  gpures__lock_release(&w->lock);
  return n;
}

void gpures__watches_queue_ended(uint32_t queue) {
  queue_waits *w = waits_of(queue);
  if (!w) return;
  int fds[2];
  gpures__lock_acquire(&w->lock);
  if (w->queue == queue) drop_all(w);
  retire_pipe(w, queue, fds); /* a thread still sleeping closes it as it leaves */
  gpures__lock_release(&w->lock);
  close_fds(fds);
}

/* ------------------------------------------------------------------ waits */

/*
** One look's poll set: entry 0 the wake pipe, then one entry per distinct
** watched fd; each watch remembers its entry. Grows from the thread's stack
** arrays onto the heap; without memory it polls what fits and looks again.
*/
#define SET_STATIC 32u

typedef struct poll_set {
  struct pollfd first_fds[SET_STATIC + 1], *fds;
  watch first_watches[SET_STATIC], *watches;
  uint32_t first_entry[SET_STATIC], *entry; /* watches[i] is polled at fds[entry[i]] */
  uint32_t cap, nfds, nwatches;
  bool partial;
} poll_set;

static void set_init(poll_set *s) {
  s->fds = s->first_fds, s->watches = s->first_watches, s->entry = s->first_entry;
  s->cap = SET_STATIC;
}

static void set_free(poll_set *s) {
  if (s->fds != s->first_fds) gpures__free(s->fds), gpures__free(s->watches), gpures__free(s->entry);
  set_init(s);
}

static bool set_reserve(poll_set *s, uint32_t need) {
  if (need <= s->cap) return true;
  struct pollfd *f = gpures__alloc((size_t)(need + 1) * sizeof *f);
  watch *w = f ? gpures__alloc((size_t)need * sizeof *w) : NULL;
  uint32_t *e = w ? gpures__alloc((size_t)need * sizeof *e) : NULL;
  if (!e) {
    gpures__free(f), gpures__free(w);
    return false;
  }
  set_free(s);
  s->fds = f, s->watches = w, s->entry = e, s->cap = need;
  return true;
}

/* Copies the queue's watches into the set. Locked. */
static void snapshot(queue_waits *w, uint32_t queue, poll_set *s) {
  uint32_t n = w->queue == queue ? w->length : 0;
  s->partial = n > s->cap;
  if (n > s->cap) n = s->cap; /* no memory for all: these now, the rest once the set grows */
  s->fds[0] = (struct pollfd){w->pipe[0], POLLIN, 0};
  s->nfds = 1, s->nwatches = n;
  for (uint32_t i = 0; i < n; i++) {
    s->watches[i] = w->watches[i];
    if (s->nfds == 1 || s->fds[s->nfds - 1].fd != w->watches[i].fd)
      s->fds[s->nfds++] = (struct pollfd){w->watches[i].fd, 0, 0};
    s->fds[s->nfds - 1].events |= w->watches[i].events;
    s->entry[i] = s->nfds - 1;
  }
}

/* Posts the event of each watch the poll found ready; how many it posted. */
static uint32_t fire(queue_waits *w, uint32_t queue, const poll_set *s) {
  uint32_t told = 0;
  for (uint32_t i = 0; i < s->nwatches; i++) {
    short revents = s->fds[s->entry[i]].revents;
    if (!(revents & (s->watches[i].events | POLLHUP | POLLERR | POLLNVAL))) continue;
    gpures__lock_acquire(&w->lock);
    bool mine = w->queue == queue && take(w, s->watches[i].fd, s->watches[i].token);
    gpures__lock_release(&w->lock);
    if (!mine) continue; /* withdrawn, or told by another thread */
    int status = (revents & POLLNVAL) ? GPURES_E_OS_ERROR : GPURES_OK;
    (void)gpures__event_post_status(queue, s->watches[i].token, GPURES_EVENT_FD_READY, status);
    told++;
  }
  return told;
}

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void drain_pipe(queue_waits *w) {
  char buf[64];
  while (read(w->pipe[0], buf, sizeof buf) > 0) {}
}

static uint64_t wakes_now(void) {
  pthread_mutex_lock(&cond_lock);
  uint64_t n = wakes;
  pthread_mutex_unlock(&cond_lock);
  return n;
}

/* Sleeps on the condition variable unless a wake came since `seen`; false at the deadline. */
static bool sleep_on_cond(uint64_t seen, int64_t deadline) {
  bool woken = true;
  pthread_mutex_lock(&cond_lock);
  if (wakes == seen) {
    if (deadline < 0) {
      pthread_cond_wait(&posted, &cond_lock);
    } else {
      int64_t left = deadline - now_ms();
      struct timespec t; /* pthread_cond_timedwait's clock */
      clock_gettime(CLOCK_REALTIME, &t);
      int64_t ns = (int64_t)t.tv_nsec + (left > 0 ? left : 0) % 1000 * 1000000;
      t.tv_sec += (time_t)((left > 0 ? left : 0) / 1000 + ns / 1000000000);
      t.tv_nsec = (long)(ns % 1000000000);
      woken = left > 0 && pthread_cond_timedwait(&posted, &cond_lock, &t) != ETIMEDOUT;
    }
  }
  pthread_mutex_unlock(&cond_lock);
  return woken;
}

/* Polls the watched fds and the wake pipe once; -1 on a poll() failure (errno set). */
static int poll_watches(queue_waits *w, uint32_t queue, poll_set *s, uint32_t need, int64_t deadline) {
  (void)set_reserve(s, need); /* outside the lock: an allocation may take a while */
  gpures__lock_acquire(&w->lock);
  snapshot(w, queue, s);
  gpures__lock_release(&w->lock);
  int64_t left = deadline < 0 ? -1 : deadline - now_ms();
  if (left < 0 && deadline >= 0) left = 0;
  if (s->partial && (left < 0 || left > 1)) left = 1; /* the rest of the watches: soon */
  int ready = poll(s->fds, s->nfds, left > INT32_MAX ? INT32_MAX : (int)left);
  if (ready > 0 && s->fds[0].revents) drain_pipe(w);
  if (ready > 0) ready = (int)fire(w, queue, s); /* its event is pending now */
  return ready < 0 && errno == EINTR ? 0 : ready;
}

/* Sleeps until an event, a watch firing, or the deadline; GPURES_OK either way. */
static int wait_on(gpures__op op, queue_waits *w, uint32_t queue, int64_t deadline,
                   uint32_t *out_pending) {
  poll_set s;
  set_init(&s);
  int status = GPURES_OK;
  for (;;) {
    uint64_t seen = wakes_now(); /* before the look: a post after it is a wake after `seen` */
    uint32_t pending = gpures_event_queue_pending(queue);
    if (pending) {
      *out_pending = pending;
      break;
    }
    if (!gpures__event_queue_open(queue)) {
      status = gpures__fail(op, GPURES_E_STALE, "queue", "queue %u is closed", queue);
      break;
    }
    gpures__lock_acquire(&w->lock);
    uint32_t need = w->queue == queue ? w->length : 0;
    bool has_pipe = w->has_pipe;
    gpures__lock_release(&w->lock);
    if (!need) { /* nothing to watch: no fd, no poll() */
      if (!sleep_on_cond(seen, deadline) && deadline >= 0 && now_ms() >= deadline) break;
      continue;
    }
    if (!has_pipe && (status = make_pipe(op, w)) != GPURES_OK) break;
    int fired = poll_watches(w, queue, &s, need, deadline);
    if (fired < 0) {
      status = gpures__os_fail(op, "", "poll()", errno);
      break;
    }
    if (!fired && deadline >= 0 && now_ms() >= deadline) break;
  }
  set_free(&s);
  return status;
}

int gpures_event_queue_wait(uint32_t queue, int32_t timeout_ms, uint32_t *out_pending) {
  gpures__op op = {"wait on event queue", 0};
  uint32_t ignored;
  if (!out_pending) out_pending = &ignored; /* a caller that polls the queue next anyway */
  *out_pending = 0;
  queue_waits *w = waits_of(queue);
  if (!w || !gpures__event_queue_open(queue))
    return gpures__fail(op, GPURES_E_STALE, "queue", "queue %u is closed", queue);
  gpures__pin_library(); /* this thread may be inside the library when the host unloads it */
  int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
  enter(w);
  int status = wait_on(op, w, queue, deadline, out_pending);
  leave(w, queue);
  return status;
}
#endif
