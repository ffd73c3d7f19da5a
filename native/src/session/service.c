/*
** service.c: the library's one background thread. It sleeps in poll() on
** every sending session (releases come back there: a slot must come home
** while the producer is busy elsewhere, not when it next calls in) and on
** receiving sessions whose releases found the socket full. A session is
** watched while it is registered here, and the thread holds a reference to
** it while its fd is in the poll set, so the fd never closes under poll().
**
** The thread starts with the first session that needs it and ends when none
** does, so a library with no sessions has no thread; the library's unload
** stops it and waits for it, so it never runs code that is gone.
*/
#if !defined(_WIN32)
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "session.h"

#define WATCH_MAX 1024u

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER;
static gpures_session *watched[WATCH_MAX];
static uint32_t num_watched;
static uint64_t generation; /* bumped by every forget: the thread's set is then out of date */
static uint64_t polled;     /* the generation of the set the thread polls now */
static bool stopping;
static gpures__worker worker = GPURES__WORKER_INIT;

void gpures__service_wake(void) { gpures__worker_wake(&worker); }

/* Copies the watch list, with a reference each, and what to poll each for. Locked. */
static nfds_t snapshot(struct pollfd *fds, gpures_session **sessions) {
  nfds_t n = 0;
  for (uint32_t i = 0; i < num_watched; i++) {
    gpures_session *s = watched[i];
    pthread_mutex_lock(&s->mu);
    short events = (s->role == GPURES_SESSION_SEND ? POLLIN : 0) | (s->num_pending ? POLLOUT : 0);
    bool live = !s->closed && !s->ended;
    pthread_mutex_unlock(&s->mu);
    if (!events || !live) continue;
    gpures__session_ref(s);
    sessions[n] = s;
    fds[n++] = (struct pollfd){s->fd, events, 0};
  }
  polled = generation;
  return n;
}

static void serve(gpures_session *s, short revents) {
  if (revents & POLLOUT) { /* notices that waited for room: releases, forgets */
    pthread_mutex_lock(&s->mu);
    gpures__session_flush(s);
    pthread_mutex_unlock(&s->mu);
  }
  if (s->role == GPURES_SESSION_SEND) {
    if (revents & (POLLIN | POLLHUP | POLLERR)) gpures__session_read_releases(s);
  } else if (revents & (POLLHUP | POLLERR)) {
    pthread_mutex_lock(&s->mu);
    s->ended = true;
    pthread_mutex_unlock(&s->mu);
  }
}

static void *run(void *arg) {
  (void)arg;
  static struct pollfd fds[WATCH_MAX + 1];
  static gpures_session *sessions[WATCH_MAX];
  pthread_mutex_lock(&mu);
  while (!stopping && num_watched) {
    nfds_t n = snapshot(fds + 1, sessions);
    pthread_cond_broadcast(&idle); /* forgotten sessions are out of the set now */
    pthread_mutex_unlock(&mu);
    fds[0] = (struct pollfd){worker.wake[0], POLLIN, 0};
    if (poll(fds, n + 1, -1) > 0) {
      if (fds[0].revents) gpures__worker_drain(&worker);
      for (nfds_t i = 0; i < n; i++)
        if (fds[i + 1].revents) serve(sessions[i], fds[i + 1].revents);
    }
    for (nfds_t i = 0; i < n; i++) gpures__session_unref(sessions[i]);
    pthread_mutex_lock(&mu);
  }
  worker.running = false;
  polled = generation;
  pthread_cond_broadcast(&idle);
  pthread_mutex_unlock(&mu);
  return NULL;
}

/*
** fork() (os/fork.c): the child has no service thread, and what the parent
** watched is the parent's (its releases are read there). Without this the
** child would believe a thread runs, so its slots would never come back and
** a close would wait forever. The child starts afresh: nothing watched, no
** thread, a new pipe with its first session.
*/
static void forget_in_child(void) {
  gpures__worker_forget_fork(&worker);
  num_watched = 0; /* their references stay with the parent */
  generation = polled = 0;
  pthread_mutex_init(&mu, NULL);
  pthread_cond_init(&idle, NULL);
}
const gpures__forking gpures__service_forking = {&mu, forget_in_child};

static int start(gpures__op op) { return gpures__worker_start(op, &worker, run); }

/* gpures__buffer_gone()'s hook: every sending session that announced the buffer forgets it. */
static void buffer_gone(uint64_t id) {
  pthread_mutex_lock(&mu);
  for (uint32_t i = 0; i < num_watched; i++)
    if (watched[i]->role == GPURES_SESSION_SEND) gpures__session_forget_buffer(watched[i], id);
  pthread_mutex_unlock(&mu);
}

int gpures__service_watch(gpures__op op, gpures_session *s) {
  gpures__pin_library(); /* before the lock: its dlopen() must not wait while a fork() waits on us */
  gpures__set_buffer_gone_hook(buffer_gone);
  pthread_mutex_lock(&mu);
  /* A release racing close must not watch it again after close's forget: nothing would end that. */
  pthread_mutex_lock(&s->mu);
  bool closed = s->closed;
  pthread_mutex_unlock(&s->mu);
  if (closed) return pthread_mutex_unlock(&mu), GPURES_OK;
  bool found = false;
  for (uint32_t i = 0; i < num_watched && !found; i++) found = watched[i] == s;
  int status = GPURES_OK;
  if (!found && num_watched == WATCH_MAX)
    status = gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "",
                          "%u sessions are open, the most the service thread watches", WATCH_MAX);
  if (status == GPURES_OK && !found) {
    gpures__session_ref(s);
    watched[num_watched++] = s;
  }
  if (status == GPURES_OK) status = start(op);
  if (status != GPURES_OK && !found && num_watched && watched[num_watched - 1] == s) {
    num_watched--;
    gpures__session_unref(s);
  }
  pthread_mutex_unlock(&mu);
  gpures__service_wake();
  return status;
}

void gpures__service_forget(gpures_session *s) {
  pthread_mutex_lock(&mu);
  bool found = false;
  for (uint32_t i = 0; i < num_watched; i++) {
    if (watched[i] != s) continue;
    watched[i] = watched[--num_watched];
    found = true;
    break;
  }
  uint64_t mine = ++generation;
  gpures__service_wake();
  /*
  ** Wait until the thread polls a set made after this: it no longer reads this
  ** session. One it never watched is in no set: nothing to wait for.
  */
  while (found && worker.running && polled < mine && !pthread_equal(pthread_self(), worker.thread))
    pthread_cond_wait(&idle, &mu);
  pthread_mutex_unlock(&mu);
  if (found) gpures__session_unref(s);
}

__attribute__((destructor)) static void stop_service(void) {
  pthread_mutex_lock(&mu);
  stopping = true;
  bool joinable = worker.started;
  pthread_mutex_unlock(&mu);
  gpures__service_wake();
  if (joinable) pthread_join(worker.thread, NULL);
}
#endif
