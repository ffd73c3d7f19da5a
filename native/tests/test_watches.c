/*
** test_watches.c: fds watched on an event queue's behalf
** (gpures_event_queue_watch). The thread waiting on the queue polls them:
** a watch holds no thread, fires once, and never outlives its queue.
*/
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static uint32_t open_queue(void) {
  uint32_t q = 0;
  CHECK_OK(gpures_event_queue_open(&q));
  return q;
}

static void socket_pair(int fds[2]) {
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) == 0);
}

/* The one event waiting in q, which must be FD_READY. */
static gpures_event next_event(uint32_t q) {
  gpures_event e = {0, 0, 0};
  uint32_t n = 0;
  CHECK_OK(gpures_event_queue_poll(q, &e, 1, &n));
  CHECK_EQ(n, 1);
  CHECK_EQ(e.type, GPURES_EVENT_FD_READY);
  return e;
}

static int threads_of_this_process(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

typedef struct waiting {
  uint32_t queue;
  int status;
  uint32_t pending;
} waiting;

static void *wait_forever(void *arg) {
  waiting *w = arg;
  w->status = gpures_event_queue_wait(w->queue, -1, &w->pending);
  return NULL;
}

static void pause_ms(long ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

/* A queue's wake pipe: made for its first watch, gone with the queue, so isolates leave no fd. */
static void a_wake_pipe_lives_with_its_queue_and_only_if_it_watched(void) {
  int before = open_fds();
  for (int i = 0; i < 50; i++) {
    uint32_t q = open_queue();
    CHECK_OK(gpures_event_queue_wait(q, 0, NULL));
    CHECK_OK(gpures_event_queue_close(q));
  }
  CHECK_EQ(open_fds(), before);
  uint32_t q = open_queue();
  waiting w = {q, -1, 0};
  pthread_t t;
  pthread_create(&t, NULL, wait_forever, &w);
  pause_ms(20);
  CHECK_OK(gpures_event_queue_close(q)); /* the sleeping thread closes it as it leaves */
  pthread_join(t, NULL);
  CHECK_EQ(w.status, GPURES_E_STALE);
  CHECK_EQ(open_fds(), before);
  /* An open queue keeps its pipe between watches: a stream's frames do not each make one. */
  int fds[2];
  socket_pair(fds);
  before = open_fds();
  q = open_queue();
  CHECK_OK(gpures_event_queue_watch(q, fds[0], GPURES_CHANNEL_WRITABLE, 1));
  CHECK_OK(gpures_event_queue_wait(q, -1, NULL));
  CHECK_EQ(next_event(q).token, 1);
  CHECK_EQ(open_fds(), before + 2);
  for (uint64_t t = 2; t < 100; t++) {
    CHECK_OK(gpures_event_queue_watch(q, fds[0], GPURES_CHANNEL_WRITABLE, t));
    CHECK_OK(gpures_event_queue_wait(q, -1, NULL));
    CHECK_EQ(next_event(q).token, t);
  }
  CHECK_EQ(open_fds(), before + 2);
  CHECK_OK(gpures_event_queue_close(q));
  CHECK_EQ(open_fds(), before);
  close(fds[0]), close(fds[1]);
}

static void a_watch_fires_once_when_its_fd_is_readable(void) {
  uint32_t q = open_queue(), pending = 9;
  int fds[2];
  socket_pair(fds);
  CHECK_OK(gpures_event_queue_watch(q, fds[0], GPURES_CHANNEL_READABLE, 41));
  CHECK_EQ(gpures_event_queue_watching(q), 1);
  CHECK_OK(gpures_event_queue_wait(q, 0, &pending)); /* nothing to read: no event */
  CHECK_EQ(pending, 0);
  CHECK(write(fds[1], "x", 1) == 1);
  CHECK_OK(gpures_event_queue_wait(q, -1, &pending));
  CHECK_EQ(pending, 1);
  gpures_event e = next_event(q);
  CHECK_EQ(e.token, 41);
  CHECK_EQ(e.status, GPURES_OK);
  CHECK_EQ(gpures_event_queue_watching(q), 0); /* one-shot: the fd is still readable, no second event */
  CHECK_OK(gpures_event_queue_wait(q, 0, &pending));
  CHECK_EQ(pending, 0);
  close(fds[0]), close(fds[1]);
  CHECK_OK(gpures_event_queue_close(q));
}

static void writable_and_hangup_fire_and_each_watch_on_one_fd_is_told(void) {
  uint32_t q = open_queue(), pending = 0;
  int fds[2];
  socket_pair(fds);
  CHECK_OK(gpures_event_queue_watch(q, fds[0], GPURES_CHANNEL_WRITABLE, 1)); /* room: at once */
  CHECK_OK(gpures_event_queue_wait(q, -1, &pending));
  CHECK_EQ(next_event(q).token, 1);
  for (uint64_t t = 10; t < 15; t++) CHECK_OK(gpures_event_queue_watch(q, fds[0], GPURES_CHANNEL_READABLE, t));
  CHECK_EQ(gpures_event_queue_watching(q), 5);
  close(fds[1]); /* the peer hangs up: every reader hears of it, status OK (the read says the rest) */
  CHECK_OK(gpures_event_queue_wait(q, -1, &pending));
  CHECK_EQ(pending, 5);
  for (uint64_t t = 10; t < 15; t++) {
    gpures_event e = next_event(q);
    CHECK_EQ(e.token, t); /* watches of one fd fire in the order they were made */
    CHECK_EQ(e.status, GPURES_OK);
  }
  close(fds[0]);
  CHECK_OK(gpures_event_queue_close(q));
}

static void a_withdrawn_watch_never_fires_and_its_fd_may_close(void) {
  uint32_t q = open_queue(), pending = 9, withdrawn = 9;
  int fds[2];
  socket_pair(fds);
  CHECK_OK(gpures_event_queue_watch(q, fds[0], GPURES_CHANNEL_READABLE, 7));
  CHECK_OK(gpures_event_queue_unwatch(q, 7, &withdrawn));
  CHECK_EQ(withdrawn, 1);
  CHECK_OK(gpures_event_queue_unwatch(q, 7, &withdrawn)); /* twice: nothing left to withdraw */
  CHECK_EQ(withdrawn, 0);
  CHECK_OK(gpures_event_queue_unwatch(q, 99, NULL));
  CHECK(write(fds[1], "x", 1) == 1);
  CHECK_OK(gpures_event_queue_wait(q, 20, &pending));
  CHECK_EQ(pending, 0);
  /* Fired, then withdrawn: the event is already posted, and withdrawing says so. */
  CHECK_OK(gpures_event_queue_watch(q, fds[0], GPURES_CHANNEL_READABLE, 8));
  CHECK_OK(gpures_event_queue_wait(q, -1, &pending));
  CHECK_OK(gpures_event_queue_unwatch(q, 8, &withdrawn));
  CHECK_EQ(withdrawn, 0);
  CHECK_EQ(next_event(q).token, 8);
  close(fds[0]), close(fds[1]);
  CHECK_OK(gpures_event_queue_close(q));
}

static void bad_fds_events_and_queues_are_refused_by_name(void) {
  uint32_t q = open_queue();
  int fds[2];
  socket_pair(fds);
  CHECK_FAILS(GPURES_E_OS_ERROR, "fd", gpures_event_queue_watch(q, -1, GPURES_CHANNEL_READABLE, 1));
  int closed = dup(fds[0]);
  close(closed);
  CHECK_FAILS(GPURES_E_OS_ERROR, "fd", gpures_event_queue_watch(q, closed, GPURES_CHANNEL_READABLE, 1));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "events", gpures_event_queue_watch(q, fds[0], 0, 1));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "events", gpures_event_queue_watch(q, fds[0], 8, 1));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "queue", gpures_event_queue_watch(0, fds[0], 1, 1));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "queue", gpures_event_queue_watch(0xffff, fds[0], 1, 1));
  CHECK_EQ(gpures_event_queue_watching(q), 0);
  CHECK_OK(gpures_event_queue_close(q));
  CHECK_FAILS(GPURES_E_STALE, "queue", gpures_event_queue_watch(q, fds[0], 1, 1));
  close(fds[0]), close(fds[1]);
}

/* A C caller that closes a watched fd is told, once, with OS_ERROR: never a hang, never a spin. */
static void an_fd_closed_under_its_watch_ends_it_with_os_error(void) {
  uint32_t q = open_queue(), pending = 0;
  int fds[2];
  socket_pair(fds);
  CHECK_OK(gpures_event_queue_watch(q, fds[0], GPURES_CHANNEL_READABLE, 21));
  close(fds[0]);
  CHECK_OK(gpures_event_queue_wait(q, 1000, &pending));
  CHECK_EQ(pending, 1);
  gpures_event e = next_event(q);
  CHECK_EQ(e.token, 21);
  CHECK_EQ(e.status, GPURES_E_OS_ERROR);
  CHECK_EQ(gpures_event_queue_watching(q), 0);
  close(fds[1]);
  CHECK_OK(gpures_event_queue_close(q));
}

static void a_closed_queue_drops_its_watches_and_ends_its_wait(void) {
  uint32_t q = open_queue();
  int fds[2];
  socket_pair(fds);
  for (uint64_t t = 1; t <= 100; t++) CHECK_OK(gpures_event_queue_watch(q, fds[0], 1, t));
  CHECK_OK(gpures_event_queue_close(q));
  CHECK_EQ(gpures_event_queue_watching(q), 0);
  uint32_t next = open_queue(); /* perhaps the same index, a new generation: none of the old watches */
  CHECK_EQ(gpures_event_queue_watching(next), 0);
  CHECK(write(fds[1], "x", 1) == 1);
  uint32_t pending = 9;
  CHECK_OK(gpures_event_queue_wait(next, 20, &pending));
  CHECK_EQ(pending, 0);
  CHECK_OK(gpures_event_queue_close(next));
  close(fds[0]), close(fds[1]);
}

static void a_watch_added_while_a_thread_waits_joins_its_poll(void) {
  uint32_t q = open_queue();
  int fds[2];
  socket_pair(fds);
  waiting w = {q, -1, 0};
  pthread_t t;
  pthread_create(&t, NULL, wait_forever, &w);
  pause_ms(20); /* the thread sleeps in poll() on the pipe alone */
  CHECK_OK(gpures_event_queue_watch(q, fds[0], GPURES_CHANNEL_READABLE, 3));
  pause_ms(20);
  CHECK(write(fds[1], "x", 1) == 1);
  pthread_join(t, NULL);
  CHECK_OK(w.status);
  CHECK_EQ(w.pending, 1);
  CHECK_EQ(next_event(q).token, 3);
  /* And the queue's close ends a wait that has watches but no events. */
  CHECK_OK(gpures_event_queue_watch(q, fds[1], GPURES_CHANNEL_READABLE, 4));
  pthread_create(&t, NULL, wait_forever, &w);
  pause_ms(20);
  CHECK_OK(gpures_event_queue_close(q));
  pthread_join(t, NULL);
  CHECK_EQ(w.status, GPURES_E_STALE);
  close(fds[0]), close(fds[1]);
}

/* 1000 sockets, 2000 watches, one thread: the one whose peer writes is told, at once. */
static void thousands_of_watches_cost_no_thread(void) {
  enum { N = 1000 };
  uint32_t q = open_queue(), pending = 0;
  int (*pairs)[2] = calloc(N, sizeof *pairs);
  int threads = threads_of_this_process();
  for (int i = 0; i < N; i++) {
    socket_pair(pairs[i]);
    CHECK_OK(gpures_event_queue_watch(q, pairs[i][0], GPURES_CHANNEL_READABLE, (uint64_t)i));
    CHECK_OK(gpures_event_queue_watch(q, pairs[i][0], GPURES_CHANNEL_READABLE, (uint64_t)(N + i)));
  }
  CHECK_EQ(gpures_event_queue_watching(q), 2 * N);
  CHECK_EQ(threads_of_this_process(), threads);
  CHECK(write(pairs[617][1], "x", 1) == 1);
  CHECK_OK(gpures_event_queue_wait(q, -1, &pending));
  CHECK_EQ(pending, 2);
  CHECK_EQ(next_event(q).token, 617);
  CHECK_EQ(next_event(q).token, N + 617);
  CHECK_EQ(gpures_event_queue_watching(q), 2 * N - 2);
  CHECK_OK(gpures_event_queue_close(q)); /* drops the rest */
  for (int i = 0; i < N; i++) close(pairs[i][0]), close(pairs[i][1]);
  free(pairs);
}

/* Two threads wait on one queue: a watch that fires is told once, not once per thread. */
static void two_waiting_threads_tell_a_watch_once(void) {
  uint32_t q = open_queue();
  int fds[2];
  socket_pair(fds);
  for (int round = 0; round < 200; round++) {
    CHECK_OK(gpures_event_queue_watch(q, fds[0], GPURES_CHANNEL_READABLE, (uint64_t)round));
    waiting a = {q, -1, 0}, b = {q, -1, 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, wait_forever, &a);
    pthread_create(&tb, NULL, wait_forever, &b);
    CHECK(write(fds[1], "x", 1) == 1);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK_OK(a.status);
    CHECK_OK(b.status);
    CHECK_EQ(gpures_event_queue_pending(q), 1);
    CHECK_EQ(next_event(q).token, (uint64_t)round);
    char c;
    CHECK(read(fds[0], &c, 1) == 1);
  }
  close(fds[0]), close(fds[1]);
  CHECK_OK(gpures_event_queue_close(q));
}

int main(void) {
  RUN(a_watch_fires_once_when_its_fd_is_readable);
  RUN(writable_and_hangup_fire_and_each_watch_on_one_fd_is_told);
  RUN(a_withdrawn_watch_never_fires_and_its_fd_may_close);
  RUN(bad_fds_events_and_queues_are_refused_by_name);
  RUN(an_fd_closed_under_its_watch_ends_it_with_os_error);
  RUN(a_closed_queue_drops_its_watches_and_ends_its_wait);
  RUN(a_watch_added_while_a_thread_waits_joins_its_poll);
  RUN(thousands_of_watches_cost_no_thread);
  RUN(two_waiting_threads_tell_a_watch_once);
  RUN(a_wake_pipe_lives_with_its_queue_and_only_if_it_watched);
  return check_finish("test_watches");
}
