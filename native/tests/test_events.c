/*
** test_events.c: event queues, how a host with its own event loop learns of
** last releases and mark_consumed calls made on any thread.
*/
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "handles.h"

static gpures_handle create_with_queue(uint32_t queue, uint64_t token) {
  gpures_create_options o = {.struct_size = sizeof o, .event_queue = queue, .event_token = token};
  return new_cpu_bytes(&o);
}

static uint32_t open_queue(void) {
  uint32_t q = 0;
  CHECK_OK(gpures_event_queue_open(&q));
  CHECK(q != 0);
  return q;
}

static void opened_queues_are_distinct_and_empty(void) {
  uint32_t a = open_queue(), b = open_queue();
  CHECK(a != b);
  CHECK_EQ(gpures_event_queue_pending(a), 0);
  CHECK_EQ(gpures_event_queue_pending(b), 0);
  gpures_event e;
  uint32_t n = 9;
  CHECK_OK(gpures_event_queue_poll(a, &e, 1, &n));
  CHECK_EQ(n, 0);
  CHECK_OK(gpures_event_queue_close(a));
  CHECK_OK(gpures_event_queue_close(b));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outQueue", gpures_event_queue_open(NULL));
}

static void last_release_posts_exactly_one_released_event(void) {
  uint32_t q = open_queue();
  const uint64_t token = 0xFFFFFFFFFFFFFFFFull;
  gpures_handle h = create_with_queue(q, token);
  CHECK_OK(gpures_clone(h));
  CHECK_OK(gpures_clone(h));
  CHECK_EQ(gpures_event_queue_pending(q), 0); /* create and clone post nothing */
  CHECK_OK(gpures_release(h));
  CHECK_OK(gpures_release(h));
  CHECK_EQ(gpures_event_queue_pending(q), 0); /* nor do releases that are not the last */
  CHECK_OK(gpures_release(h));
  CHECK_EQ(gpures_event_queue_pending(q), 1);
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_release(h));
  CHECK_EQ(gpures_event_queue_pending(q), 1);
  gpures_event e[4];
  uint32_t n = 0;
  CHECK_OK(gpures_event_queue_poll(q, e, 4, &n));
  CHECK_EQ(n, 1);
  CHECK_EQ(e[0].token, token);
  CHECK_EQ(e[0].type, GPURES_EVENT_RELEASED);
  CHECK_EQ(gpures_event_queue_pending(q), 0);
  CHECK_OK(gpures_event_queue_poll(q, e, 4, &n));
  CHECK_EQ(n, 0);
  CHECK_OK(gpures_event_queue_close(q));
}

static void mark_consumed_posts_one_event_per_call(void) {
  uint32_t q = open_queue();
  gpures_handle h = create_with_queue(q, 77);
  for (uint32_t i = 1; i <= 3; i++) {
    CHECK_OK(gpures_mark_consumed(h));
    CHECK_EQ(gpures_event_queue_pending(q), i);
  }
  CHECK_OK(gpures_release(h));
  CHECK_EQ(gpures_event_queue_pending(q), 4);
  gpures_event e[8];
  uint32_t n = 0;
  CHECK_OK(gpures_event_queue_poll(q, e, 8, &n));
  CHECK_EQ(n, 4);
  for (uint32_t i = 0; i < n; i++) {
    CHECK_EQ(e[i].token, 77);
    CHECK_EQ(e[i].type, i < 3 ? GPURES_EVENT_MARK_CONSUMED : GPURES_EVENT_RELEASED);
  }
  CHECK_OK(gpures_event_queue_close(q));
}

static atomic_int keep_alive_releases, keep_alive_consumed;
static void count_release(void *ctx) { (void)ctx; atomic_fetch_add(&keep_alive_releases, 1); }
static void count_consumed(void *ctx) { (void)ctx; atomic_fetch_add(&keep_alive_consumed, 1); }

static void queue_and_keep_alive_are_both_told(void) {
  uint32_t q = open_queue();
  gpures_create_options o = {.struct_size = sizeof o,
                             .keep_alive = {NULL, count_release, count_consumed},
                             .event_queue = q,
                             .event_token = 5};
  gpures_handle h = new_cpu_bytes(&o);
  if (!h) return;
  CHECK_OK(gpures_mark_consumed(h));
  CHECK_OK(gpures_release(h));
  CHECK_EQ(atomic_load(&keep_alive_consumed), 1);
  CHECK_EQ(atomic_load(&keep_alive_releases), 1);
  CHECK_EQ(gpures_event_queue_pending(q), 2);
  CHECK_OK(gpures_event_queue_close(q));
}

static void poll_with_small_capacity_returns_oldest_first(void) {
  uint32_t q = open_queue();
  for (uint64_t t = 1; t <= 5; t++) CHECK_OK(gpures_release(create_with_queue(q, t)));
  CHECK_EQ(gpures_event_queue_pending(q), 5);
  gpures_event e[2];
  uint32_t n = 0;
  uint64_t expected = 1;
  for (int round = 0; round < 3; round++) {
    CHECK_OK(gpures_event_queue_poll(q, e, 2, &n));
    CHECK_EQ(n, round < 2 ? 2 : 1);
    for (uint32_t i = 0; i < n; i++) CHECK_EQ(e[i].token, expected++);
    CHECK_EQ(gpures_event_queue_pending(q), round < 2 ? 3 - 2 * round : 0);
  }
  CHECK_OK(gpures_event_queue_poll(q, e, 2, &n));
  CHECK_EQ(n, 0);
  /* capacity 0 takes nothing; a NULL array is fine then */
  CHECK_OK(gpures_release(create_with_queue(q, 6)));
  CHECK_OK(gpures_event_queue_poll(q, NULL, 0, &n));
  CHECK_EQ(n, 0);
  CHECK_EQ(gpures_event_queue_pending(q), 1);
  CHECK_FAILS(GPURES_E_NULL_POINTER, "events", gpures_event_queue_poll(q, NULL, 1, &n));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outCount", gpures_event_queue_poll(q, e, 1, NULL));
  CHECK_EQ(gpures_event_queue_pending(q), 1);
  CHECK_OK(gpures_event_queue_close(q));
}

static void order_survives_the_ring_wrapping_around(void) {
  uint32_t q = open_queue();
  gpures_handle h = create_with_queue(q, 1);
  uint64_t next_expected = 0, posted = 0;
  gpures_event e[16];
  uint32_t n = 0;
  int ok = 1;
  for (int round = 0; round < 50 && ok; round++) {
    for (int i = 0; i < 11; i++, posted++) ok &= CHECK_OK(gpures_mark_consumed(h));
    ok &= CHECK_OK(gpures_event_queue_poll(q, e, 7, &n));
    next_expected += n;
  }
  ok &= CHECK_EQ(gpures_event_queue_pending(q), posted - next_expected);
  CHECK_OK(gpures_release(h));
  uint64_t total = 0;
  do {
    CHECK_OK(gpures_event_queue_poll(q, e, 16, &n));
    for (uint32_t i = 0; i < n; i++)
      CHECK_EQ(e[i].type, total + i == posted - next_expected ? GPURES_EVENT_RELEASED
                                                              : GPURES_EVENT_MARK_CONSUMED);
    total += n;
  } while (n);
  CHECK_EQ(total, posted - next_expected + 1);
  CHECK_OK(gpures_event_queue_close(q));
}

static void closed_queue_drops_events(void) {
  uint32_t q = open_queue();
  gpures_handle h = create_with_queue(q, 9);
  CHECK_OK(gpures_mark_consumed(h));
  CHECK_OK(gpures_event_queue_close(q));
  CHECK_EQ(gpures_event_queue_pending(q), 0);
  CHECK_OK(gpures_mark_consumed(h)); /* the host is gone; the handle still works */
  uint32_t reopened = open_queue();  /* may reuse the closed queue's place */
  CHECK(reopened != q);
  CHECK_OK(gpures_release(h));
  CHECK_EQ(gpures_event_queue_pending(q), 0);
  CHECK_EQ(gpures_event_queue_pending(reopened), 0); /* never delivered to the new queue */
  gpures_event e;
  uint32_t n = 5;
  CHECK_FAILS(GPURES_E_STALE, "queue", gpures_event_queue_poll(q, &e, 1, &n));
  CHECK_EQ(n, 0);
  CHECK_FAILS(GPURES_E_STALE, "queue", gpures_event_queue_close(q));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "queue", gpures_event_queue_close(0));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "queue", gpures_event_queue_poll(0, &e, 1, &n));
  CHECK_EQ(gpures_event_queue_pending(0), 0);
  CHECK_EQ(gpures_event_queue_pending(0xffffffffu), 0);
  CHECK_OK(gpures_event_queue_close(reopened));
}

static void create_with_a_closed_or_unknown_queue_is_invalid_value(void) {
  uint32_t q = open_queue();
  CHECK_OK(gpures_event_queue_close(q));
  uint64_t live = gpures_live_handles(0);
  const uint32_t bad[] = {q, 0xffffu, 0x12340001u, 0xffffffffu};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gpures_cpu_bytes_desc d = gpures_fixture_cpu_bytes();
    gpures_create_options o = {.struct_size = sizeof o, .event_queue = bad[i]};
    gpures_handle h = 1;
    CHECK_FAILS(GPURES_E_INVALID_VALUE, "options.eventQueue", gpures_cpu_bytes_create(&d, &o, &h));
    CHECK_PREFIX(gpures_last_error(), "Cannot create CpuBytes: ");
    CHECK_EQ(h, 0);
  }
  CHECK_EQ(gpures_live_handles(0), live);
}

static void ten_thousand_events_grow_the_queue(void) {
  enum { N = 10000 };
  uint32_t q = open_queue();
  static gpures_handle handles[N];
  for (uint32_t i = 0; i < N; i++) handles[i] = create_with_queue(q, i);
  CHECK_EQ(gpures_event_queue_pending(q), 0);
  for (uint32_t i = 0; i < N; i++) CHECK_OK(gpures_mark_consumed(handles[i]));
  for (uint32_t i = 0; i < N; i++) CHECK_OK(gpures_release(handles[i]));
  CHECK_EQ(gpures_event_queue_pending(q), 2 * N);
  static gpures_event e[1000];
  uint32_t n = 0, seen = 0;
  int ok = 1;
  do {
    ok &= CHECK_OK(gpures_event_queue_poll(q, e, 1000, &n));
    for (uint32_t i = 0; i < n && ok; i++, seen++) {
      ok &= CHECK_EQ(e[i].token, seen % N);
      ok &= CHECK_EQ(e[i].type, seen < N ? GPURES_EVENT_MARK_CONSUMED : GPURES_EVENT_RELEASED);
    }
  } while (n && ok);
  CHECK_EQ(seen, 2 * N);
  CHECK_EQ(gpures_event_queue_pending(q), 0);
  CHECK_OK(gpures_event_queue_close(q));
}

/* ------------------------------------------------------ other threads */

enum { RELEASERS = 4, PER_THREAD = 2000 };
static gpures_handle shared_handles[RELEASERS][PER_THREAD];

static void *release_some(void *arg) {
  gpures_handle *mine = arg;
  for (int i = 0; i < PER_THREAD; i++) CHECK_OK(gpures_release(mine[i]));
  return NULL;
}

static void releases_on_other_threads_reach_the_polling_thread(void) {
  uint32_t q = open_queue();
  for (int t = 0; t < RELEASERS; t++)
    for (int i = 0; i < PER_THREAD; i++)
      shared_handles[t][i] = create_with_queue(q, (uint64_t)t * PER_THREAD + (uint64_t)i);
  pthread_t threads[RELEASERS];
  for (int t = 0; t < RELEASERS; t++)
    CHECK(pthread_create(&threads[t], NULL, release_some, shared_handles[t]) == 0);
  /* poll while they release */
  static unsigned char seen[RELEASERS * PER_THREAD];
  memset(seen, 0, sizeof seen);
  gpures_event e[64];
  uint32_t n = 0, total = 0;
  int ok = 1;
  while (total < RELEASERS * PER_THREAD && ok) {
    ok &= CHECK_OK(gpures_event_queue_poll(q, e, 64, &n));
    for (uint32_t i = 0; i < n; i++) {
      ok &= CHECK(e[i].token < RELEASERS * PER_THREAD);
      ok &= CHECK_EQ(e[i].type, GPURES_EVENT_RELEASED);
      if (ok) ok &= CHECK_EQ(seen[e[i].token]++, 0);
    }
    total += n;
    if (n == 0) sched_yield(); /* let the releasing threads run */
  }
  for (int t = 0; t < RELEASERS; t++) pthread_join(threads[t], NULL);
  CHECK_EQ(total, RELEASERS * PER_THREAD);
  CHECK_EQ(gpures_event_queue_pending(q), 0);
  CHECK_OK(gpures_event_queue_close(q));
}

typedef struct delayed {
  gpures_handle handle;
  uint32_t queue;
  bool close;
} delayed;

static void *release_later(void *arg) {
  delayed *d = arg;
  struct timespec pause = {0, 20 * 1000000L};
  nanosleep(&pause, NULL);
  if (d->close) CHECK_OK(gpures_event_queue_close(d->queue));
  else CHECK_OK(gpures_release(d->handle));
  return NULL;
}

static void a_wait_ends_when_another_thread_releases_or_the_queue_closes(void) {
  uint32_t q = open_queue(), pending = 9;
  CHECK_OK(gpures_event_queue_wait(q, 0, &pending)); /* nothing yet: the time is up at once */
  CHECK_EQ(pending, 0);
  delayed d = {create_with_queue(q, 5), q, false};
  pthread_t t;
  pthread_create(&t, NULL, release_later, &d);
  CHECK_OK(gpures_event_queue_wait(q, -1, &pending)); /* no limit: only the release ends it */
  CHECK_EQ(pending, 1);
  pthread_join(t, NULL);
  gpures_event e;
  uint32_t n = 0;
  CHECK_OK(gpures_event_queue_poll(q, &e, 1, &n));
  CHECK_EQ(e.token, 5);
  d.close = true;
  pthread_create(&t, NULL, release_later, &d);
  CHECK_FAILS(GPURES_E_STALE, "queue", gpures_event_queue_wait(q, -1, &pending));
  pthread_join(t, NULL);
  CHECK_FAILS(GPURES_E_STALE, "queue", gpures_event_queue_wait(q, 10, &pending));
  CHECK_FAILS(GPURES_E_STALE, "queue", gpures_event_queue_wait(q, 10, NULL)); /* NULL is fine */
}

static void mark_consumed_heard_says_whether_anyone_listens(void) {
  uint32_t q = open_queue(), heard = 9;
  gpures_handle quiet = new_cpu_bytes(NULL); /* no keep-alive, no queue */
  CHECK_OK(gpures_mark_consumed_heard(quiet, &heard));
  CHECK_EQ(heard, 0);
  gpures_create_options o = {.struct_size = sizeof o, .flags = GPURES_CREATE_NO_CONSUMED_EVENTS,
                             .event_queue = q, .event_token = 4};
  gpures_handle released_only = new_cpu_bytes(&o);
  CHECK_OK(gpures_mark_consumed_heard(released_only, &heard));
  CHECK_EQ(heard, 0);
  CHECK_EQ(gpures_event_queue_pending(q), 0); /* no MARK_CONSUMED for a queue that asked for none */
  gpures_handle listening = create_with_queue(q, 5);
  CHECK_OK(gpures_mark_consumed_heard(listening, &heard));
  CHECK_EQ(heard, 1);
  CHECK_EQ(gpures_event_queue_pending(q), 1);
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outHeard", gpures_mark_consumed_heard(listening, NULL));
  CHECK_OK(gpures_release(quiet));
  CHECK_OK(gpures_release(released_only));
  CHECK_OK(gpures_release(listening));
  CHECK_EQ(gpures_event_queue_pending(q), 3); /* the MARK_CONSUMED and two RELEASED */
  CHECK_OK(gpures_event_queue_close(q));
}

int main(void) {
  RUN(opened_queues_are_distinct_and_empty);
  RUN(last_release_posts_exactly_one_released_event);
  RUN(mark_consumed_posts_one_event_per_call);
  RUN(queue_and_keep_alive_are_both_told);
  RUN(poll_with_small_capacity_returns_oldest_first);
  RUN(order_survives_the_ring_wrapping_around);
  RUN(closed_queue_drops_events);
  RUN(create_with_a_closed_or_unknown_queue_is_invalid_value);
  RUN(ten_thousand_events_grow_the_queue);
  RUN(releases_on_other_threads_reach_the_polling_thread);
  RUN(a_wait_ends_when_another_thread_releases_or_the_queue_closes);
  RUN(mark_consumed_heard_says_whether_anyone_listens);
  CHECK_EQ(gpures_live_handles(0), 0);
  return check_finish("test_events");
}
