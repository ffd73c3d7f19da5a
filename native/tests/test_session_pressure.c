/*
** test_session_pressure.c: the frame loop under load and misuse (Linux).
**
** A full socket: gpures_session_send() says "sent" only for a message that
** went; stats.frames and in_flight count only those; a FENCE that went while
** its FRAME found no room is followed by that FRAME alone on the retry, and a
** FENCE left behind by a send given up on never lends itself to another
** handle; a blocking send waits for room and delivers.
** A FENCE the receiver cannot read (a kind it does not know, a lying header
** or descriptor size, a cut body, a cut header): the frame it names is
** refused naming "acquire", never handed out unsynchronised, and the next
** honest frame arrives.
*/
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <time.h>

#include "check.h"
#include "clock_util.h"
#include "fd_util.h"
#include "pools.h"
#include "wire.h"

/* A sending session over one end of a socketpair whose send buffer is as small as it gets. */
static gpures_session *small_sender(int *raw) {
  int sv[2];
  if (!CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0)) abort();
  int tiny = 1; /* the kernel raises it to its minimum: a few datagrams */
  CHECK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &tiny, sizeof tiny) == 0);
  gpures_session *s = NULL;
  CHECK_OK(gpures_session_open(sv[0], GPURES_SESSION_SEND, &s));
  *raw = sv[1];
  return s;
}

/* Every datagram waiting at the raw end, in order; how many (at most `max`). */
static uint32_t drain_raw(int sock, wire_header *out, uint32_t max) {
  uint32_t n = 0;
  wire_header h;
  while (read_header(sock, &h, 200))
    if (n < max) out[n++] = h;
  return n;
}

/* --------------------------------------------------------- a full socket */

/*
** Sends frames of the pool without waiting until one finds the socket full;
** our own reference to each frame that went is dropped. Returns how many
** went; *unsent is the frame that did not (0 when every try said "sent").
*/
static uint32_t fill_with_frames(gpures_session *s, gpures_pool *p, uint32_t tries,
                                 gpures_handle *unsent) {
  uint32_t went = 0;
  *unsent = 0;
  for (uint32_t i = 0; i < tries; i++) {
    gpures_handle f = 0;
    if (!CHECK_OK(gpures_pool_acquire(p, 0, 0, NULL, &f))) break;
    uint32_t sent = 9;
    CHECK_OK(gpures_session_send(s, f, GPURES_CHANNEL_NONBLOCK, &sent));
    if (!sent) return *unsent = f, went;
    CHECK_OK(gpures_release(f));
    went++;
  }
  return went;
}

static void a_full_socket_sends_nothing_and_counts_nothing(void) {
  int raw = -1;
  gpures_session *s = small_sender(&raw);
  gpures_pool *p = new_nv12_pool(64, 64, 128);
  gpures_handle unsent = 0;
  uint32_t went = fill_with_frames(s, p, 128, &unsent);
  CHECK(unsent != 0); /* the socket holds a few datagrams, not 128 */
  gpures_session_stats st = session_stats(s);
  CHECK_EQ(st.frames, went); /* what the peer can receive, no more */
  CHECK_EQ(st.in_flight, went);
  CHECK_EQ(st.announced, went);
  CHECK_EQ(pool_stats(p).in_use, went + (unsent ? 1 : 0)); /* the session holds what went, we hold one */
  uint32_t sent = 9;
  if (unsent) { /* again, still full: nothing goes, nothing is counted */
    CHECK_OK(gpures_session_send(s, unsent, GPURES_CHANNEL_NONBLOCK, &sent));
    CHECK_EQ(sent, 0);
    CHECK_EQ(session_stats(s).frames, went);
  }
  wire_header got[160];
  uint32_t n = drain_raw(raw, got, 160);
  CHECK_EQ(n, went); /* every frame counted arrived */
  for (uint32_t i = 0; i < n; i++) {
    CHECK_EQ(got[i].type, MSG_FRAME);
    CHECK_EQ(got[i].serial, i + 1); /* in order, none skipped */
  }
  if (unsent) { /* room again: the frame goes, under the next serial */
    CHECK_OK(gpures_session_send(s, unsent, GPURES_CHANNEL_NONBLOCK, &sent));
    CHECK_EQ(sent, 1);
    CHECK(read_header(raw, &got[0], 1000) && got[0].serial == (uint64_t)went + 1);
    CHECK_OK(gpures_release(unsent));
  }
  close(raw); /* the peer goes: every frame in flight comes back */
  CHECK(EVENTUALLY(pool_stats(p).in_use == 0, 2000));
  CHECK_OK(gpures_session_close(s));
  CHECK_OK(gpures_pool_close(p));
}

static void a_fence_that_went_before_a_full_socket_leads_its_frame_once(void) {
  int raw = -1;
  gpures_session *s = small_sender(&raw);
  gpures_pool *p = new_nv12_pool(64, 64, 128);
  gpures_handle frame = 0, f = new_cpu_fence();
  uint32_t went = fill_with_frames(s, p, 128, &frame);
  if (!CHECK(frame != 0)) {
    close(raw);
    CHECK_OK(gpures_session_close(s));
    CHECK_OK(gpures_pool_close(p));
    CHECK_OK(gpures_release(f));
    return;
  }
  uint64_t buffer = 0;
  CHECK_OK(gpures_buffer_id(frame, &buffer));
  CHECK_OK(gpures_fences_set(frame, f, 0));
  uint32_t sent = 9;
  CHECK_OK(gpures_session_send(s, frame, GPURES_CHANNEL_NONBLOCK, &sent));
  CHECK_EQ(sent, 0); /* full: neither the FENCE nor the FRAME */
  wire_header got[160];
  CHECK(read_header(raw, &got[0], 1000)); /* room for one datagram (they are all of one size) */
  CHECK_OK(gpures_session_send(s, frame, GPURES_CHANNEL_NONBLOCK, &sent));
  CHECK_EQ(sent, 0); /* the FENCE went, its FRAME found the socket full */
  CHECK_EQ(session_stats(s).frames, went);
  CHECK_EQ(session_stats(s).in_flight, went);
  CHECK(read_header(raw, &got[0], 1000));
  CHECK_OK(gpures_session_send(s, frame, GPURES_CHANNEL_NONBLOCK, &sent));
  CHECK_EQ(sent, 1); /* the FRAME alone */
  CHECK_EQ(session_stats(s).frames, went + 1);
  CHECK_EQ(session_stats(s).in_flight, went + 1);
  uint32_t n = drain_raw(raw, got, 160), fences = 0;
  CHECK_EQ(n, went - 2 + 2);
  for (uint32_t i = 0; i < n; i++) fences += got[i].type == MSG_FENCE;
  CHECK_EQ(fences, 1); /* one FENCE, right before its frame, naming it */
  if (n >= 2) {
    CHECK_EQ(got[n - 2].type, MSG_FENCE);
    CHECK_EQ(got[n - 1].type, MSG_FRAME);
    CHECK_EQ(got[n - 2].buffer, buffer);
    CHECK_EQ(got[n - 1].buffer, buffer);
    CHECK_EQ(got[n - 2].serial, (uint64_t)went + 1);
    CHECK_EQ(got[n - 1].serial, (uint64_t)went + 1);
  }
  CHECK_OK(gpures_release(frame));
  close(raw);
  CHECK(EVENTUALLY(pool_stats(p).in_use == 0, 2000));
  CHECK_OK(gpures_session_close(s));
  CHECK_OK(gpures_pool_close(p));
  CHECK_OK(gpures_release(f));
  CHECK_EQ(gpures_live_handles(GPURES_KIND_CPU_FENCE), 0);
}

/* Plain handles (no buffer identity) until one finds the socket full; how many went. */
static uint32_t fill_with_handles(gpures_session *s, gpures_handle h, uint32_t tries) {
  for (uint32_t i = 0; i < tries; i++) {
    uint32_t sent = 9;
    CHECK_OK(gpures_session_send(s, h, GPURES_CHANNEL_NONBLOCK, &sent));
    if (!sent) return i;
  }
  return tries;
}

static void a_fence_left_behind_by_a_send_given_up_on_leads_no_other_handle(void) {
  int sv[2];
  if (!CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0)) return;
  int tiny = 1;
  CHECK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &tiny, sizeof tiny) == 0);
  gpures_session *tx = NULL, *rx = NULL;
  CHECK_OK(gpures_session_open(sv[0], GPURES_SESSION_SEND, &tx));
  CHECK_OK(gpures_session_open(sv[1], GPURES_SESSION_RECEIVE, &rx));
  gpures_handle filler = sealable_rgba_frame(), a = sealable_rgba_frame(), b = sealable_rgba_frame(), f = new_cpu_fence();
  uint32_t went = fill_with_handles(tx, filler, 128);
  CHECK(went < 128);
  CHECK_EQ(session_stats(tx).frames, went); /* plain handles count as what the peer receives */
  CHECK_OK(gpures_fences_set(a, f, 0));
  gpures_handle got = 0;
  CHECK_OK(gpures_session_receive(rx, GPURES_CHANNEL_NONBLOCK, &got)); /* room for one */
  CHECK_OK(gpures_release(got));
  uint32_t sent = 9;
  CHECK_OK(gpures_session_send(tx, a, GPURES_CHANNEL_NONBLOCK, &sent));
  CHECK_EQ(sent, 0); /* a's FENCE went, a did not, and a is given up on */
  CHECK_OK(gpures_session_receive(rx, GPURES_CHANNEL_NONBLOCK, &got));
  CHECK_OK(gpures_release(got));
  CHECK_OK(gpures_session_send(tx, b, GPURES_CHANNEL_NONBLOCK, &sent));
  CHECK_EQ(sent, 1);
  uint32_t received = 2, fenced = 0;
  for (;;) {
    got = 0;
    if (gpures_session_receive(rx, GPURES_CHANNEL_NONBLOCK, &got) != GPURES_OK || !got) break;
    received++;
    fenced += has_acquire_fence(got); /* b above all must not wear a's fence */
    CHECK_OK(gpures_release(got));
  }
  CHECK_EQ(received, went + 1);
  CHECK_EQ(fenced, 0);
  CHECK_EQ(session_stats(rx).refused, 0);
  CHECK_OK(gpures_session_close(tx));
  CHECK_OK(gpures_session_close(rx));
  CHECK_OK(gpures_release(filler));
  CHECK_OK(gpures_release(a));
  CHECK_OK(gpures_release(b));
  CHECK_OK(gpures_release(f));
  CHECK_EQ(gpures_live_handles(GPURES_KIND_CPU_FENCE), 0);
}

typedef struct late_reader {
  int sock;
  int delay_ms;
  atomic_bool stop;
  uint32_t read;
} late_reader;

static void *read_late(void *arg) {
  late_reader *r = arg;
  sleep_ms(r->delay_ms);
  wire_header h;
  while (!atomic_load(&r->stop))
    if (read_header(r->sock, &h, 10)) r->read++;
  while (read_header(r->sock, &h, 50)) r->read++;
  return NULL;
}

static void a_blocking_send_waits_for_room_and_delivers(void) {
  int raw = -1;
  gpures_session *s = small_sender(&raw);
  gpures_handle h = sealable_rgba_frame();
  uint32_t went = fill_with_handles(s, h, 128);
  CHECK(went < 128);
  late_reader r = {raw, 100, false, 0};
  pthread_t t;
  pthread_create(&t, NULL, read_late, &r);
  double start = now_ms();
  uint32_t sent = 0;
  CHECK_OK(gpures_session_send(s, h, 0, &sent));
  CHECK_EQ(sent, 1);
  CHECK(now_ms() - start >= 50); /* it waited for the reader */
  atomic_store(&r.stop, true);
  pthread_join(t, NULL);
  CHECK_EQ(r.read, went + 1);
  CHECK_EQ(session_stats(s).frames, went + 1);
  CHECK_OK(gpures_session_close(s));
  close(raw);
  CHECK_OK(gpures_release(h));
}

/* ------------------------------------------- a FENCE the receiver cannot read */

/* A FENCE as a sender writes one: a CpuFence naming (buffer, serial), its eventfd attached. */
typedef struct fence_message {
  wire_header h;
  gpures_cpu_fence_desc d;
} fence_message;

static fence_message fence_of(uint64_t buffer, uint64_t serial) {
  fence_message m;
  memset(&m, 0, sizeof m);
  m.h = header_of(MSG_FENCE, buffer, serial);
  m.h.kind = GPURES_KIND_CPU_FENCE;
  m.h.desc_size = sizeof m.d;
  m.h.num_fds = 1;
  m.d.struct_size = sizeof m.d;
  m.d.fd = 0;
  return m;
}

typedef struct fence_lie {
  const char *what;
  void (*edit)(fence_message *m, size_t *len);
  const char *field; /* what the FENCE itself is refused naming */
} fence_lie;

static void unknown_kind(fence_message *m, size_t *len) { (void)len, m->h.kind = 38; }
static void header_size_40(fence_message *m, size_t *len) { (void)len, m->h.header_size = 40; }
static void desc_size_larger(fence_message *m, size_t *len) { (void)len, m->h.desc_size += 8; }
static void body_cut(fence_message *m, size_t *len) { (void)m, *len -= 8; }
static void header_cut(fence_message *m, size_t *len) { (void)m, *len = 30; }

static const fence_lie FENCE_LIES[] = {
  {"a kind this receiver does not know (a newer sender's)", unknown_kind, "kind"},
  {"a headerSize of 40", header_size_40, "headerSize"},
  {"a descSize larger than what came", desc_size_larger, "descSize"},
  {"a body cut short", body_cut, "descSize"},
  {"a header cut after its type", header_cut, "descSize"},
};

static void a_frame_whose_fence_could_not_be_read_is_refused_naming_acquire(void) {
  int sv[2];
  if (!CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0)) return;
  gpures_session *rx = NULL;
  CHECK_OK(gpures_session_open(sv[1], GPURES_SESSION_RECEIVE, &rx));
  int peer = sv[0];
  CHECK(announce(peer, 7, 1) == 0);
  gpures_handle got = 0;
  CHECK_OK(gpures_session_receive(rx, 0, &got));
  CHECK_OK(gpures_release(got));
  int base = count_open_fds();
  uint64_t serial = 1;
  for (size_t i = 0; i < sizeof FENCE_LIES / sizeof FENCE_LIES[0]; i++) {
    const fence_lie *lie = &FENCE_LIES[i];
    fprintf(stderr, "    %s\n", lie->what);
    uint64_t named = ++serial;
    fence_message m = fence_of(7, named);
    size_t len = sizeof m;
    lie->edit(&m, &len);
    int efd = eventfd(0, EFD_CLOEXEC);
    CHECK(send_with_fds(peer, &m, len, &efd, 1, 0) == (ssize_t)len);
    close(efd);
    wire_header frame = header_of(MSG_FRAME, 7, named);
    CHECK(send(peer, &frame, sizeof frame, 0) == (ssize_t)sizeof frame);
    got = 0;
    CHECK_FAILS(GPURES_E_INVALID_VALUE, lie->field, gpures_session_receive(rx, 0, &got));
    CHECK_FAILS(GPURES_E_INVALID_VALUE, "acquire", gpures_session_receive(rx, 0, &got));
    CHECK_EQ(got, 0);
    CHECK_EQ(count_open_fds(), base); /* the fence's eventfd was closed with it */
    frame = header_of(MSG_FRAME, 7, ++serial); /* the next honest frame arrives */
    CHECK(send(peer, &frame, sizeof frame, 0) == (ssize_t)sizeof frame);
    CHECK_OK(gpures_session_receive(rx, 0, &got));
    CHECK(got != 0 && !has_acquire_fence(got));
    CHECK_OK(gpures_release(got));
  }
  /* And an honest FENCE still leads its frame. */
  fence_message m = fence_of(7, ++serial);
  int efd = eventfd(0, EFD_CLOEXEC);
  CHECK(send_with_fds(peer, &m, sizeof m, &efd, 1, 0) == (ssize_t)sizeof m);
  close(efd);
  wire_header frame = header_of(MSG_FRAME, 7, serial);
  CHECK(send(peer, &frame, sizeof frame, 0) == (ssize_t)sizeof frame);
  got = 0;
  CHECK_OK(gpures_session_receive(rx, 0, &got));
  CHECK(got != 0 && has_acquire_fence(got));
  CHECK_OK(gpures_release(got));
  CHECK_EQ(session_stats(rx).refused, 2 * (sizeof FENCE_LIES / sizeof FENCE_LIES[0]));
  close(peer);
  CHECK_OK(gpures_session_close(rx));
  CHECK_EQ(gpures_live_handles(GPURES_KIND_CPU_FENCE), 0);
}

static void a_plain_handle_whose_fence_could_not_be_read_is_refused_too(void) {
  int sv[2];
  if (!CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0)) return;
  gpures_session *rx = NULL;
  CHECK_OK(gpures_session_open(sv[1], GPURES_SESSION_RECEIVE, &rx));
  fence_message m = fence_of(0, 0);
  m.h.kind = 38; /* unknown here */
  int efd = eventfd(0, EFD_CLOEXEC);
  CHECK(send_with_fds(sv[0], &m, sizeof m, &efd, 1, 0) == (ssize_t)sizeof m);
  close(efd);
  gpures_handle h = sealable_rgba_frame();
  uint32_t sent = 0;
  for (int i = 0; i < 2; i++) CHECK_OK(gpures_channel_send(sv[0], h, 0, &sent)); /* HANDLEs (0, 0) */
  gpures_handle got = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "kind", gpures_session_receive(rx, 0, &got));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "acquire", gpures_session_receive(rx, 0, &got));
  CHECK_OK(gpures_session_receive(rx, 0, &got)); /* the next one arrives */
  CHECK(got != 0);
  CHECK_OK(gpures_release(got));
  CHECK_OK(gpures_release(h));
  close(sv[0]);
  CHECK_OK(gpures_session_close(rx));
}

int main(void) {
  RUN(a_full_socket_sends_nothing_and_counts_nothing);
  RUN(a_fence_that_went_before_a_full_socket_leads_its_frame_once);
  RUN(a_fence_left_behind_by_a_send_given_up_on_leads_no_other_handle);
  RUN(a_blocking_send_waits_for_room_and_delivers);
  RUN(a_frame_whose_fence_could_not_be_read_is_refused_naming_acquire);
  RUN(a_plain_handle_whose_fence_could_not_be_read_is_refused_too);
  return check_finish("test_session_pressure");
}
