/*
** test_sync.c: SyncPoints (Linux).
**
** A CpuFence is reached when signalled, from this thread or another; blocking
** waits time out; async waits end exactly once on the event queue (reached,
** timed out, cancelled) and hold their own reference; a thousand idle waits
** are all told. Fences travel with a handle (set, get, clones) and with a
** pooled frame (a release fence becomes the slot's next acquire fence) and
** across a session (a FENCE message leads the frame; the consumer's release
** fence holds the producer's slot until it is reached). A FENCE that is not a
** SyncPoint is refused; points the host cannot wait on say so; a memfd has
** no implicit fences to export. A thread's exit closes the queue bound to it
** and so ends its waits: SyncPoint waits (their references, the fences' fds)
** and a pool wait bound to the queue on a helper thread.
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fd_util.h"
#include "pools.h"

static uint32_t refcount(gpures_handle h) {
  uint32_t n = 0;
  CHECK_OK(gpures_refcount(h, &n));
  return n;
}

static uint32_t reached(gpures_handle h) {
  uint32_t r = 9;
  CHECK_OK(gpures_sync_poll(h, &r));
  return r;
}

/* The next event of the queue, waiting up to 5 s. */
static gpures_event next_event(uint32_t q) {
  gpures_event e = {0, 0, 0};
  uint32_t n = 0;
  CHECK_OK(gpures_event_queue_wait(q, 5000, NULL));
  CHECK_OK(gpures_event_queue_poll(q, &e, 1, &n));
  CHECK_EQ(n, 1);
  return e;
}

static void *signal_later(void *arg) {
  struct timespec ts = {0, 20 * 1000000};
  nanosleep(&ts, NULL);
  CHECK_OK(gpures_sync_signal(*(gpures_handle *)arg));
  return NULL;
}

/* ------------------------------------------------------------ waiting */

static void a_cpu_fence_is_reached_when_signalled_and_stays_reached(void) {
  gpures_handle f = new_cpu_fence();
  CHECK_EQ(reached(f), 0);
  CHECK_FAILS(GPURES_E_TIMED_OUT, "", gpures_sync_wait(f, 1000000));
  CHECK_OK(gpures_sync_signal(f));
  CHECK_EQ(reached(f), 1);
  CHECK_OK(gpures_sync_wait(f, 0));
  CHECK_OK(gpures_sync_signal(f)); /* again: still reached, nothing else */
  CHECK_OK(gpures_sync_wait(f, -1));
  CHECK_OK(gpures_release(f));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_sync_wait(f, 0));
}

static void a_blocking_wait_wakes_when_another_thread_signals(void) {
  gpures_handle f = new_cpu_fence();
  pthread_t t;
  pthread_create(&t, NULL, signal_later, &f);
  CHECK_OK(gpures_sync_wait(f, 5000000000LL));
  pthread_join(t, NULL);
  CHECK_OK(gpures_release(f));
}

static void an_async_wait_is_told_once_on_its_queue(void) {
  uint32_t q = 0;
  CHECK_OK(gpures_event_queue_open(&q));
  gpures_handle f = new_cpu_fence();
  CHECK_OK(gpures_sync_wait_async(f, -1, q, 77));
  CHECK_EQ(refcount(f), 2); /* the wait's own reference */
  CHECK_OK(gpures_release(f)); /* the caller may let go meanwhile */
  CHECK_EQ(gpures_sync_pending(), 1);
  CHECK_EQ(gpures_event_queue_pending(q), 0);
  /* Signalled behind gpures's back, through the fd the wait still holds open. */
  gpures_handle g = new_cpu_fence();
  CHECK_OK(gpures_sync_wait_async(g, 20000000, q, 78)); /* 20 ms, never signalled */
  gpures_event e = next_event(q);
  CHECK_EQ(e.token, 78);
  CHECK_EQ(e.type, GPURES_EVENT_SYNC_DONE);
  CHECK_EQ(e.status, GPURES_E_TIMED_OUT);
  CHECK_OK(gpures_sync_cancel(q, 77));
  e = next_event(q);
  CHECK_EQ(e.token, 77);
  CHECK_EQ(e.status, GPURES_E_CANCELLED);
  CHECK_OK(gpures_sync_cancel(q, 77)); /* ended: nothing to cancel */
  CHECK_EQ(gpures_sync_pending(), 0);
  CHECK_EQ(gpures_live_handles(GPURES_KIND_CPU_FENCE), 1); /* g only: the wait let go of f */
  CHECK_OK(gpures_sync_wait_async(g, -1, q, 79));
  CHECK_OK(gpures_sync_signal(g));
  e = next_event(q);
  CHECK_EQ(e.token, 79);
  CHECK_EQ(e.status, GPURES_OK);
  CHECK_EQ(gpures_event_queue_pending(q), 0);
  CHECK_OK(gpures_release(g));
  CHECK_OK(gpures_event_queue_close(q));
}

static void a_thousand_idle_waits_are_each_told_when_reached(void) {
  enum { N = 1000 };
  static gpures_handle f[N];
  uint32_t q = 0;
  CHECK_OK(gpures_event_queue_open(&q));
  for (uint64_t i = 0; i < N; i++) {
    f[i] = new_cpu_fence();
    CHECK_OK(gpures_sync_wait_async(f[i], -1, q, i));
  }
  CHECK_EQ(gpures_sync_pending(), N);
  struct timespec idle = {0, 50 * 1000000};
  nanosleep(&idle, NULL);
  CHECK_EQ(gpures_event_queue_pending(q), 0); /* none ended early */
  static bool seen[N];
  for (uint64_t i = 0; i < N; i++) CHECK_OK(gpures_sync_signal(f[N - 1 - i]));
  uint32_t told = 0;
  while (told < N) {
    gpures_event e = next_event(q);
    if (!CHECK(e.token < N && !seen[e.token])) break;
    seen[e.token] = true;
    CHECK_EQ(e.status, GPURES_OK);
    told++;
  }
  CHECK_EQ(told, N);
  for (uint64_t i = 0; i < N; i++) CHECK_OK(gpures_release(f[i]));
  CHECK_EQ(gpures_sync_pending(), 0);
  CHECK_OK(gpures_event_queue_close(q));
}

static void many_waits_on_one_fence_poll_its_fd_once(void) {
  enum { N = 600 }; /* more than the fd limit below: one poll entry per fd, not per wait */
  struct rlimit old, low;
  CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
  low = old;
  low.rlim_cur = 256;
  CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
  uint32_t q = 0;
  CHECK_OK(gpures_event_queue_open(&q));
  gpures_handle f = new_cpu_fence();
  for (uint64_t i = 0; i < N; i++) CHECK_OK(gpures_sync_wait_async(f, -1, q, i));
  struct timespec idle = {0, 20 * 1000000};
  nanosleep(&idle, NULL);
  CHECK_EQ(gpures_event_queue_pending(q), 0);
  CHECK_OK(gpures_sync_signal(f));
  uint32_t told = 0;
  while (told < N) {
    gpures_event e = next_event(q);
    if (!CHECK_EQ(e.status, GPURES_OK)) break;
    told++;
  }
  CHECK_EQ(told, N);
  CHECK_OK(gpures_release(f));
  CHECK_OK(gpures_event_queue_close(q));
  CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
}

static void points_the_host_cannot_wait_on_say_so(void) {
  gpures_vk_semaphore_desc d = {.struct_size = sizeof d, .semaphore = 5, .semaphore_type = 0 /* binary */};
  gpures_handle h = 0;
  CHECK_OK(gpures_vk_semaphore_create(&d, NULL, &h));
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "", gpures_sync_wait(h, 0));
  uint32_t q = 0;
  CHECK_OK(gpures_event_queue_open(&q));
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "", gpures_sync_wait_async(h, -1, q, 1));
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "", gpures_sync_signal(h));
  CHECK_EQ(refcount(h), 1); /* the refused wait kept nothing */
  CHECK_OK(gpures_release(h));
  d.semaphore_type = 1;
  d.value = 3; /* a timeline without its device */
  CHECK_OK(gpures_vk_semaphore_create(&d, NULL, &h));
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "device", gpures_sync_wait(h, 0));
  CHECK_OK(gpures_release(h));
  /* A resource is no SyncPoint. */
  gpures_noop_sync_desc n = {sizeof n, 0};
  CHECK_OK(gpures_noop_sync_create(&n, NULL, &h));
  CHECK_OK(gpures_sync_wait(h, 0));
  CHECK_OK(gpures_sync_wait_async(h, -1, q, 2));
  gpures_event e = next_event(q);
  CHECK_EQ(e.status, GPURES_OK);
  CHECK_OK(gpures_release(h));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "queue", gpures_sync_wait_async(h, -1, 9999, 3));
  CHECK_OK(gpures_event_queue_close(q));
}

static void a_fence_fd_of_the_wrong_kind_is_refused(void) {
  int efd = eventfd(0, EFD_CLOEXEC);
  int mfd = memfd_create("not-a-fence", MFD_CLOEXEC);
  gpures_sync_file_desc s = {sizeof s, 0, efd, 0};
  gpures_handle h = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "fd", gpures_sync_file_create(&s, NULL, &h));
  CHECK(strstr(gpures_last_error(), "is an eventfd, not a sync_file") != NULL);
  gpures_cpu_fence_desc c = {sizeof c, 0, mfd, 0};
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "fd", gpures_cpu_fence_create(&c, NULL, &h));
  c.fd = efd;
  CHECK_OK(gpures_cpu_fence_create(&c, NULL, &h)); /* duplicated: efd stays ours */
  CHECK_OK(gpures_release(h));
  CHECK(fd_is_open(efd));
  close(efd);
  close(mfd);
}

/* ------------------------------------------------------------- fences */

static gpures_handle cpu_frame(void) {
  static uint8_t bytes[64];
  gpures_cpu_bytes_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.ptr = bytes;
  d.size = sizeof bytes;
  d.row_pitch = 64;
  d.format = GPURES_PF_RGBA_U8;
  gpures_handle h = 0;
  CHECK_OK(gpures_cpu_bytes_create(&d, NULL, &h));
  return h;
}

static void a_handle_holds_its_fences_and_lets_them_go_with_its_slot(void) {
  gpures_handle frame = cpu_frame(), a = new_cpu_fence(), r = new_cpu_fence(), got_a = 0, got_r = 0;
  CHECK_OK(gpures_fences_get(frame, &got_a, &got_r));
  CHECK_EQ(got_a, 0);
  CHECK_EQ(got_r, 0);
  CHECK_OK(gpures_fences_set(frame, a, r));
  CHECK_EQ(refcount(a), 2);
  CHECK_OK(gpures_fences_get(frame, &got_a, &got_r));
  CHECK_EQ(got_a, a);
  CHECK_EQ(got_r, r);
  CHECK_EQ(refcount(a), 3); /* got_a is the caller's */
  CHECK_OK(gpures_release(got_a));
  CHECK_OK(gpures_release(got_r));
  CHECK_FAILS(GPURES_E_WRONG_KIND, "acquire", gpures_fences_set(frame, frame, 0));
  CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", gpures_fences_set(a, r, 0));
  CHECK_EQ(refcount(a), 2); /* a refused set changes nothing */
  /* begin access waits on the acquire fence, then drops it */
  CHECK_FAILS(GPURES_E_TIMED_OUT, "acquire", gpures_begin_access(frame, 1000000));
  CHECK_OK(gpures_sync_signal(a));
  CHECK_OK(gpures_begin_access(frame, 0));
  CHECK_EQ(refcount(a), 1);
  CHECK_OK(gpures_end_access(frame, 0)); /* clears the release fence */
  CHECK_EQ(refcount(r), 1);
  CHECK_OK(gpures_fences_set(frame, a, r));
  CHECK_OK(gpures_release(frame)); /* the slot's references go with it */
  CHECK_EQ(refcount(a), 1);
  CHECK_EQ(refcount(r), 1);
  CHECK_OK(gpures_release(a));
  CHECK_OK(gpures_release(r));
}

/* A pool of one 64x64 NV12 slot: its next frame is always the last one's slot. */
static gpures_pool *one_slot_pool(void) { return new_nv12_pool(64, 64, 1); }

static void a_release_fence_becomes_the_slots_next_acquire_fence(void) {
  gpures_pool *p = one_slot_pool();
  gpures_handle frame = 0, done = new_cpu_fence(), a = 0, r = 0;
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &frame));
  CHECK_OK(gpures_end_access(frame, done)); /* a consumer still reads until `done` */
  CHECK_OK(gpures_release(frame));
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &frame));
  CHECK_OK(gpures_fences_get(frame, &a, &r));
  CHECK_EQ(a, done); /* the producer waits on it before writing */
  CHECK_EQ(r, 0);
  CHECK_OK(gpures_release(a));
  CHECK_FAILS(GPURES_E_TIMED_OUT, "acquire", gpures_begin_access(frame, 0));
  CHECK_OK(gpures_sync_signal(done));
  CHECK_OK(gpures_begin_access(frame, 0));
  CHECK_OK(gpures_release(frame));
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &frame));
  CHECK_OK(gpures_fences_get(frame, &a, &r));
  CHECK_EQ(a, 0); /* the fence went with the access that waited on it */
  CHECK_OK(gpures_end_access(frame, done));
  CHECK_OK(gpures_release(frame));
  CHECK_OK(gpures_pool_close(p)); /* the slot's fence goes with the pool */
  CHECK_EQ(refcount(done), 1);
  CHECK_OK(gpures_release(done));
}

static int session_pair(gpures_session **send, gpures_session **receive) {
  int sv[2];
  if (!CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0)) return 0;
  CHECK_OK(gpures_session_open(sv[0], GPURES_SESSION_SEND, send));
  CHECK_OK(gpures_session_open(sv[1], GPURES_SESSION_RECEIVE, receive));
  return 1;
}

static gpures_handle memfd_frame(void) {
  int fd = memfd_create("frame", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  CHECK(ftruncate(fd, 4096) == 0);
  gpures_dma_buf_handle_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.num_fds = 1;
  d.fds[0] = fd;
  d.fourcc = 0x34324241; /* AB24 */
  d.width = 32;
  d.height = 32;
  d.num_planes = 1;
  d.planes[0].stride = 128;
  gpures_create_options o = {sizeof o, GPURES_CREATE_TAKE_OWNERSHIP, {0}, 0, 0, 0};
  gpures_handle h = 0;
  CHECK_OK(gpures_dma_buf_handle_create(&d, &o, &h));
  return h;
}

static void an_acquire_fence_leads_its_frame_across_a_session(void) {
  gpures_session *tx = NULL, *rx = NULL;
  if (!session_pair(&tx, &rx)) return;
  gpures_handle frame = memfd_frame(), f = new_cpu_fence(), got = 0, a = 0, r = 0;
  CHECK_OK(gpures_fences_set(frame, f, 0));
  uint32_t sent = 0;
  CHECK_OK(gpures_session_send(tx, frame, 0, &sent));
  CHECK_EQ(sent, 1);
  CHECK_OK(gpures_session_receive(rx, 0, &got));
  CHECK_OK(gpures_fences_get(got, &a, &r));
  CHECK(a != 0 && a != f); /* the peer's own CpuFence over the same eventfd */
  CHECK_EQ(reached(a), 0);
  CHECK_OK(gpures_sync_signal(f)); /* signalled here, reached there */
  CHECK_OK(gpures_sync_wait(a, 1000000000));
  CHECK_OK(gpures_release(a));
  CHECK_OK(gpures_release(got));
  /* A frame without a fence arrives without one (the last fence is not reused). */
  CHECK_OK(gpures_fences_set(frame, 0, 0));
  CHECK_OK(gpures_session_send(tx, frame, 0, &sent));
  CHECK_OK(gpures_session_receive(rx, 0, &got));
  CHECK(!has_acquire_fence(got));
  CHECK_OK(gpures_release(got));
  /* A process-local fence cannot cross: the send is refused, nothing is sent. */
  gpures_vk_semaphore_desc v = {.struct_size = sizeof v, .semaphore = 5};
  gpures_handle local = 0;
  CHECK_OK(gpures_vk_semaphore_create(&v, NULL, &local));
  CHECK_OK(gpures_fences_set(frame, local, 0));
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "acquire", gpures_session_send(tx, frame, 0, &sent));
  CHECK_OK(gpures_session_close(tx)); /* the receiver sees the end, and no frame */
  got = 0;
  CHECK_FAILS(GPURES_E_STALE, "channel", gpures_session_receive(rx, 0, &got));
  CHECK_EQ(got, 0);
  CHECK_OK(gpures_session_close(rx));
  CHECK_OK(gpures_release(local));
  CHECK_OK(gpures_release(frame));
  CHECK_OK(gpures_release(f));
  CHECK_EQ(gpures_live_handles(GPURES_KIND_CPU_FENCE), 0);
}

static void a_consumers_release_fence_holds_the_producers_slot_until_reached(void) {
  gpures_pool *p = one_slot_pool();
  gpures_session *tx = NULL, *rx = NULL;
  if (!session_pair(&tx, &rx)) return;
  gpures_handle frame = 0, got = 0, done = new_cpu_fence();
  uint32_t sent = 0;
  CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &frame));
  CHECK_OK(gpures_session_send(tx, frame, 0, &sent));
  CHECK_OK(gpures_release(frame)); /* the session holds it until the consumer's release */
  CHECK_OK(gpures_session_receive(rx, 0, &got));
  CHECK_OK(gpures_end_access(got, done)); /* the consumer's GPU still reads until `done` */
  CHECK_OK(gpures_release(got));
  CHECK_FAILS(GPURES_E_TIMED_OUT, "timeout", gpures_pool_acquire(p, 100, 0, NULL, &frame));
  CHECK_OK(gpures_sync_signal(done));
  CHECK_OK(gpures_pool_acquire(p, 5000, 0, NULL, &frame)); /* home once the fence is reached */
  CHECK_OK(gpures_release(frame));
  CHECK_OK(gpures_session_close(rx));
  CHECK_OK(gpures_session_close(tx));
  CHECK_OK(gpures_pool_close(p));
  CHECK_EQ(refcount(done), 1);
  CHECK_OK(gpures_release(done));
}

static void a_frame_whose_fence_was_dropped_is_refused_not_handed_out_unsynchronised(void) {
  gpures_session *tx = NULL, *rx = NULL;
  if (!session_pair(&tx, &rx)) return;
  gpures_handle frame = memfd_frame(), f = new_cpu_fence(), got = 0;
  CHECK_OK(gpures_fences_set(frame, f, 0));
  uint32_t sent = 0;
  CHECK_OK(gpures_session_send(tx, frame, 0, &sent)); /* a FENCE, then the handle */
  struct rlimit old;
  if (without_free_fds(&old)) {
    int dropped = gpures_session_receive(rx, GPURES_CHANNEL_NONBLOCK, &got); /* the FENCE's fd cannot arrive */
    CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
    CHECK_EQ(dropped, GPURES_E_OS_ERROR);
    CHECK_EQ(got, 0);
    CHECK_FAILS(GPURES_E_INVALID_VALUE, "acquire",
                gpures_session_receive(rx, GPURES_CHANNEL_NONBLOCK, &got));
    CHECK_EQ(got, 0); /* refused: never handed out without the fence it came with */
  } else { /* nothing dropped: the frame arrives with its fence */
    CHECK_OK(gpures_session_receive(rx, GPURES_CHANNEL_NONBLOCK, &got));
    CHECK_OK(gpures_release(got));
  }
  /* The session goes on: the next frame, with its fence, arrives whole. */
  CHECK_OK(gpures_session_send(tx, frame, 0, &sent));
  CHECK_OK(gpures_session_receive(rx, GPURES_CHANNEL_NONBLOCK, &got));
  CHECK(has_acquire_fence(got));
  CHECK_OK(gpures_release(got));
  CHECK_OK(gpures_session_close(tx));
  CHECK_OK(gpures_session_close(rx));
  CHECK_OK(gpures_release(frame));
  CHECK_OK(gpures_release(f));
  CHECK_EQ(gpures_live_handles(GPURES_KIND_CPU_FENCE), 0);
}

static void a_fence_names_its_frame_and_goes_to_no_other(void) {
  gpures_session *tx = NULL, *rx = NULL;
  if (!session_pair(&tx, &rx)) return;
  gpures_handle fenced = memfd_frame(), plain = memfd_frame(), f = new_cpu_fence(), got = 0;
  CHECK_OK(gpures_fences_set(fenced, f, 0));
  uint32_t sent = 0;
  CHECK_OK(gpures_session_send(tx, fenced, 0, &sent));
  CHECK_OK(gpures_session_send(tx, plain, 0, &sent));
  CHECK_OK(gpures_session_receive(rx, 0, &got));
  CHECK(has_acquire_fence(got)); /* the first carries its fence */
  CHECK_OK(gpures_release(got));
  CHECK_OK(gpures_session_receive(rx, 0, &got));
  CHECK(!has_acquire_fence(got)); /* the second has none */
  CHECK_OK(gpures_release(got));
  CHECK_OK(gpures_session_close(tx));
  CHECK_OK(gpures_session_close(rx));
  CHECK_OK(gpures_release(fenced));
  CHECK_OK(gpures_release(plain));
  CHECK_OK(gpures_release(f));
}

static void begin_access_says_why_its_acquire_fence_failed(void) {
  gpures_handle frame = cpu_frame(), a = new_cpu_fence();
  CHECK_OK(gpures_fences_set(frame, a, 0));
  CHECK_FAILS(GPURES_E_TIMED_OUT, "acquire", gpures_begin_access(frame, 1000000));
  CHECK(strstr(gpures_last_error(), "the acquire fence: Cannot wait on CpuFence: the point was not reached in time") != NULL);
  CHECK_OK(gpures_release(frame));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_begin_access(frame, 0));
  CHECK_OK(gpures_release(a));
}

typedef struct access_race {
  gpures_handle frame, acquire, first, second;
  _Atomic int lost;
} access_race;

/* Sets both fences, ends access with `second`, and checks that `second` stayed. */
static void *end_access_in_a_loop(void *arg) {
  access_race *r = arg;
  for (int i = 0; i < 3000; i++) {
    CHECK_OK(gpures_fences_set(r->frame, r->acquire, r->first));
    CHECK_OK(gpures_end_access(r->frame, r->second));
    gpures_handle a = 0, rel = 0;
    CHECK_OK(gpures_fences_get(r->frame, &a, &rel));
    if (rel != r->second) atomic_fetch_add(&r->lost, 1); /* a begin on the other thread undid it */
    (void)gpures_release(a);
    (void)gpures_release(rel);
  }
  return NULL;
}

static void begin_access_on_another_thread_never_undoes_an_end_access(void) {
  access_race r = {cpu_frame(), new_cpu_fence(), new_cpu_fence(), new_cpu_fence(), 0};
  CHECK_OK(gpures_sync_signal(r.acquire));
  pthread_t t;
  pthread_create(&t, NULL, end_access_in_a_loop, &r);
  for (int i = 0; i < 3000; i++) CHECK_OK(gpures_begin_access(r.frame, 0));
  pthread_join(t, NULL);
  CHECK_EQ(atomic_load(&r.lost), 0);
  CHECK_OK(gpures_release(r.frame));
  CHECK_EQ(refcount(r.acquire), 1);
  CHECK_EQ(refcount(r.second), 1);
  CHECK_OK(gpures_release(r.acquire));
  CHECK_OK(gpures_release(r.first));
  CHECK_OK(gpures_release(r.second));
}

static void a_memfd_has_no_implicit_fences_to_export(void) {
  gpures_handle frame = memfd_frame(), out = 7;
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "fds[0]",
              gpures_dma_buf_export_sync_file(frame, 0, GPURES_DMA_BUF_SYNC_READ, &out));
  CHECK_EQ(out, 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "flags", gpures_dma_buf_export_sync_file(frame, 0, 0, &out));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "index",
              gpures_dma_buf_export_sync_file(frame, 1, GPURES_DMA_BUF_SYNC_READ, &out));
  gpures_handle f = new_cpu_fence();
  CHECK_FAILS(GPURES_E_WRONG_KIND, "sync",
              gpures_dma_buf_import_sync_file(frame, 0, GPURES_DMA_BUF_SYNC_WRITE, f));
  CHECK_OK(gpures_begin_access(frame, 0)); /* no implicit fences on a memfd: at once */
  CHECK_OK(gpures_release(f));
  CHECK_OK(gpures_release(frame));
}

/* ------------------------------------------------ an isolate's end */

/* What the "isolate" thread leaves behind when it exits. */
typedef struct isolate_run {
  gpures_pool *pool;
  uint32_t queue;
  gpures_handle frame; /* a frame with a native keep-alive, told on the queue, left to main */
  pthread_t helper;    /* its pool wait, on a helper thread as a host runs it */
  int helper_status;
} isolate_run;

static atomic_int isolate_keep_alive_releases;
static void count_isolate_release(void *ctx) {
  (void)ctx;
  atomic_fetch_add(&isolate_keep_alive_releases, 1);
}

static void *pool_wait_for_isolate(void *arg) {
  isolate_run *run = arg;
  run->helper_status = gpures_pool_wait_queue(run->pool, -1, 7, run->queue);
  return NULL;
}

static uint64_t pool_waits(gpures_pool *p) {
  gpures_pool_stats st = {.struct_size = sizeof st};
  CHECK_OK(gpures_pool_stats_get(p, &st));
  return st.waits;
}

/* A JavaScript isolate's thread: its queue, closed at its exit, and waits that never end by themselves. */
static void *isolate(void *arg) {
  isolate_run *run = arg;
  CHECK_OK(gpures_event_queue_open(&run->queue));
  CHECK_OK(gpures_event_queue_close_on_thread_exit(run->queue));
  for (uint64_t i = 0; i < 3; i++) {
    gpures_handle f = new_cpu_fence();
    CHECK_OK(gpures_sync_wait_async(f, -1, run->queue, i));
    CHECK_OK(gpures_release(f)); /* the wait's reference is the last */
  }
  gpures_create_options o = {.struct_size = sizeof o,
                             .keep_alive = {NULL, count_isolate_release, NULL},
                             .event_queue = run->queue,
                             .event_token = 9};
  CHECK_OK(gpures_pool_acquire(run->pool, 0, 0, &o, &run->frame)); /* the pool's last free slot */
  uint64_t before = pool_waits(run->pool);
  pthread_create(&run->helper, NULL, pool_wait_for_isolate, run);
  for (int i = 0; i < 500 && pool_waits(run->pool) == before; i++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  CHECK_EQ(pool_waits(run->pool), before + 1); /* the helper waits now */
  return NULL; /* the thread exits: its queue closes */
}

static void a_threads_exit_ends_the_waits_of_its_queue_and_frees_what_they_hold(void) {
  gpures_handle warm = new_cpu_fence(); /* the waiter thread's wake pipe, made once */
  CHECK_OK(gpures_sync_signal(warm));
  uint32_t q0 = 0;
  CHECK_OK(gpures_event_queue_open(&q0));
  CHECK_OK(gpures_sync_wait_async(warm, -1, q0, 1));
  (void)next_event(q0);
  CHECK_OK(gpures_event_queue_close(q0));
  CHECK_OK(gpures_release(warm));
  int fds = count_open_fds();
  uint64_t fences = gpures_live_handles(GPURES_KIND_CPU_FENCE);

  gpures_pool_desc d = nv12_pool_desc(64, 64, 2);
  isolate_run run;
  memset(&run, 0, sizeof run);
  CHECK_OK(gpures_pool_create(&d, &run.pool));
  gpures_handle held = 0;
  CHECK_OK(gpures_pool_acquire(run.pool, 0, 0, NULL, &held));
  pthread_t t;
  pthread_create(&t, NULL, isolate, &run);
  pthread_join(t, NULL);

  /* The pool wait returned when the queue closed, though no slot came free. */
  struct timespec limit;
  clock_gettime(CLOCK_REALTIME, &limit);
  limit.tv_sec += 5;
  if (CHECK_EQ(pthread_timedjoin_np(run.helper, NULL, &limit), 0))
    CHECK_EQ(run.helper_status, GPURES_E_CANCELLED);
  /* The SyncPoint waits ended, and with their references the fences and their eventfds. */
  for (int i = 0; i < 2000 && gpures_sync_pending(); i++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  CHECK_EQ(gpures_sync_pending(), 0);
  CHECK_EQ(gpures_live_handles(GPURES_KIND_CPU_FENCE), fences);
  /* A wait bound to a queue that is already closed ends at once. */
  CHECK_FAILS(GPURES_E_CANCELLED, "queue", gpures_pool_wait_queue(run.pool, -1, 8, run.queue));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "queue", gpures_sync_wait_async(held, -1, run.queue, 1));
  /* The isolate's frame, released here: its native keep-alive runs once, its event is dropped. */
  CHECK_OK(gpures_release(run.frame));
  CHECK_EQ(atomic_load(&isolate_keep_alive_releases), 1);
  CHECK_OK(gpures_pool_close(run.pool));
  CHECK_OK(gpures_release(held)); /* the last frame: the closed pool frees itself */
  CHECK_EQ(count_open_fds(), fds);
}

int main(void) {
  RUN(a_cpu_fence_is_reached_when_signalled_and_stays_reached);
  RUN(a_blocking_wait_wakes_when_another_thread_signals);
  RUN(an_async_wait_is_told_once_on_its_queue);
  RUN(a_thousand_idle_waits_are_each_told_when_reached);
  RUN(many_waits_on_one_fence_poll_its_fd_once);
  RUN(points_the_host_cannot_wait_on_say_so);
  RUN(a_fence_fd_of_the_wrong_kind_is_refused);
  RUN(a_handle_holds_its_fences_and_lets_them_go_with_its_slot);
  RUN(a_release_fence_becomes_the_slots_next_acquire_fence);
  RUN(an_acquire_fence_leads_its_frame_across_a_session);
  RUN(a_consumers_release_fence_holds_the_producers_slot_until_reached);
  RUN(a_frame_whose_fence_was_dropped_is_refused_not_handed_out_unsynchronised);
  RUN(a_fence_names_its_frame_and_goes_to_no_other);
  RUN(begin_access_says_why_its_acquire_fence_failed);
  RUN(begin_access_on_another_thread_never_undoes_an_end_access);
  RUN(a_memfd_has_no_implicit_fences_to_export);
  RUN(a_threads_exit_ends_the_waits_of_its_queue_and_frees_what_they_hold);
  return check_finish("test_sync");
}
