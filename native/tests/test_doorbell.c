/*
** test_doorbell.c: a receiving session's doorbell (Linux). The sender rings
** it once when it has it and after every message it sends, and closing the
** sender ends it. A peer that hands a sending session anything but one Unix
** stream socket as its doorbell is refused and counted, and keeps no fd of
** it; a second doorbell is refused the same way. A peer that never reads the
** doorbell and closes costs no handle it sent.
*/
#define _GNU_SOURCE
#include <poll.h>
#include <sys/socket.h>

#include "check.h"
#include "fd_util.h"
#include "pools.h"
#include "wire.h"

/* Whether fd becomes readable within ms. */
static bool readable_within(int fd, int ms) {
  struct pollfd p = {fd, POLLIN, 0};
  return poll(&p, 1, ms) == 1 && (p.revents & (POLLIN | POLLHUP));
}

/* Reads what rang: how many bytes (0 at the end, -1 when nothing waits). */
static ssize_t rings(int bell) {
  char bytes[64];
  return recv(bell, bytes, sizeof bytes, MSG_DONTWAIT);
}

typedef struct pair {
  gpures_session *tx, *rx;
} pair;

static pair session_pair(void) {
  int sv[2];
  if (!CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0)) abort();
  pair p = {NULL, NULL};
  CHECK_OK(gpures_session_open(sv[0], GPURES_SESSION_SEND, &p.tx));
  CHECK_OK(gpures_session_open(sv[1], GPURES_SESSION_RECEIVE, &p.rx));
  return p;
}

static void the_sender_rings_when_it_has_the_doorbell_and_after_each_frame(void) {
  pair p = session_pair();
  gpures_pool *pool = new_nv12_pool(64, 32, 4); /* more slots than frames: none waits for its release */
  int bell = -1;
  CHECK_OK(gpures_session_bell(p.rx, &bell));
  CHECK(fd_is_cloexec(bell));
  CHECK(readable_within(bell, 2000)); /* the service thread read the BELL and rang once */
  CHECK(rings(bell) == 1);
  for (int i = 0; i < 3; i++) {
    gpures_handle frame = 0, got = 0;
    uint32_t sent = 0;
    CHECK_OK(gpures_pool_acquire(pool, 0, 0, NULL, &frame));
    CHECK_OK(gpures_session_send(p.tx, frame, GPURES_CHANNEL_NONBLOCK, &sent));
    CHECK(sent == 1);
    CHECK(readable_within(bell, 2000));
    CHECK(rings(bell) == 1);
    /* The ring comes after the datagram went: the frame is there to take. */
    CHECK_OK(gpures_session_receive(p.rx, GPURES_CHANNEL_NONBLOCK, &got));
    CHECK(got != 0);
    CHECK_OK(gpures_release(got));
    CHECK_OK(gpures_release(frame));
  }
  CHECK(rings(bell) == -1); /* one ring a message, no more */
  CHECK_OK(gpures_session_close(p.tx));
  CHECK(readable_within(bell, 2000));
  CHECK(rings(bell) == 0); /* the sender let go: the end of the doorbell */
  close(bell);
  CHECK_OK(gpures_session_close(p.rx));
  CHECK_OK(gpures_pool_close(pool));
}

/* The sender's session ended by the receiver's hang-up, not by a close: the doorbell ends too. */
static void a_session_that_ends_by_a_hang_up_ends_its_doorbell(void) {
  pair p = session_pair();
  int bell = -1;
  CHECK_OK(gpures_session_bell(p.rx, &bell));
  CHECK(readable_within(bell, 2000));
  CHECK(rings(bell) == 1);
  CHECK(shutdown(gpures_session_fd(p.rx), SHUT_RDWR) == 0); /* the sender's service thread sees it */
  CHECK(readable_within(bell, 2000));
  CHECK(rings(bell) == 0);
  close(bell);
  CHECK_OK(gpures_session_close(p.tx));
  CHECK_OK(gpures_session_close(p.rx));
}

/* A FORGET rings too: a receiver idle on the doorbell drops the buffer when it goes. */
static void the_sender_rings_when_it_forgets_a_buffer(void) {
  pair p = session_pair();
  gpures_pool *pool = new_nv12_pool(64, 32, 1);
  int bell = -1;
  CHECK_OK(gpures_session_bell(p.rx, &bell));
  CHECK(readable_within(bell, 2000));
  CHECK(rings(bell) == 1);
  gpures_handle frame = 0, got = 0;
  uint32_t sent = 0;
  CHECK_OK(gpures_pool_acquire(pool, 0, 0, NULL, &frame));
  CHECK_OK(gpures_session_send(p.tx, frame, GPURES_CHANNEL_NONBLOCK, &sent));
  CHECK_OK(gpures_release(frame));
  CHECK(readable_within(bell, 2000));
  CHECK(rings(bell) == 1);
  CHECK_OK(gpures_session_receive(p.rx, GPURES_CHANNEL_NONBLOCK, &got));
  CHECK_OK(gpures_release(got));
  for (int i = 0; i < 200 && session_stats(p.tx).in_flight; i++) poll(NULL, 0, 10);
  CHECK_OK(gpures_pool_close(pool)); /* the slot's buffer goes: the sender forgets it */
  CHECK(readable_within(bell, 2000));
  CHECK(rings(bell) == 1);
  got = 0;
  CHECK_OK(gpures_session_receive(p.rx, GPURES_CHANNEL_NONBLOCK, &got)); /* reads the FORGET */
  CHECK(got == 0);
  CHECK_EQ(session_stats(p.rx).buffers, 0u);
  close(bell);
  CHECK_OK(gpures_session_close(p.tx));
  CHECK_OK(gpures_session_close(p.rx));
}

static void a_doorbell_is_given_once_and_only_by_a_receiving_session(void) {
  pair p = session_pair();
  int bell = -1, again = 7;
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outFd", gpures_session_bell(p.rx, NULL));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "session", gpures_session_bell(NULL, &again));
  CHECK(again == -1);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "session", gpures_session_bell(p.tx, &again));
  CHECK_OK(gpures_session_bell(p.rx, &bell));
  again = 7;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "session", gpures_session_bell(p.rx, &again));
  CHECK(again == -1);
  close(bell);
  CHECK_OK(gpures_session_close(p.tx));
  CHECK_OK(gpures_session_close(p.rx));
}

/* ------------------------------------------------------------- hostile peers */

/* Sends a BELL with `fds` attached and a header that announces `announced` of them. */
static void send_bell(int raw, const int *fds, size_t nfds, uint32_t announced) {
  wire_header h = header_of(MSG_BELL, 0, 0);
  h.num_fds = announced;
  CHECK(send_with_fds(raw, &h, sizeof h, fds, nfds, 0) == (ssize_t)sizeof h);
}

/* Waits until the session has refused `n` messages (the service thread reads them). */
static bool refused_reaches(gpures_session *s, uint64_t n) {
  for (int i = 0; i < 200; i++) {
    if (session_stats(s).refused >= n) return true;
    poll(NULL, 0, 10);
  }
  return false;
}

static void a_doorbell_that_is_no_unix_stream_socket_is_refused_and_not_kept(void) {
  int sv[2];
  if (!CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0)) abort();
  gpures_session *tx = NULL;
  CHECK_OK(gpures_session_open(sv[0], GPURES_SESSION_SEND, &tx));
  int open_before = count_open_fds();
  int memfd = make_memfd(4096, 1), dgram[2], seq[2], stream[2], stream2[2];
  CHECK(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, dgram) == 0);
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, seq) == 0);
  CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, stream) == 0);
  CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, stream2) == 0);
  send_bell(sv[1], &memfd, 1, 1);      /* not a socket */
  send_bell(sv[1], &dgram[1], 1, 1);   /* a datagram socket */
  send_bell(sv[1], &seq[1], 1, 1);     /* a seqpacket socket */
  int two[2] = {stream[1], stream2[1]};
  send_bell(sv[1], two, 2, 2);         /* two fds */
  send_bell(sv[1], NULL, 0, 1);        /* none, though the header says one */
  send_bell(sv[1], &stream[1], 1, 0);  /* one, though the header says none */
  CHECK(refused_reaches(tx, 6));
  /* Nothing was kept: none rings, and the sender holds no fd of them. */
  CHECK(!readable_within(stream[0], 50));
  CHECK(!readable_within(dgram[0], 0));
  CHECK(!readable_within(seq[0], 0));
  int kept = count_open_fds() - open_before - 9; /* ours: memfd and the four pairs */
  CHECK_EQ(kept, 0);
  /* An honest doorbell is taken and rung; a second one is refused. */
  send_bell(sv[1], &stream2[1], 1, 1);
  close(stream2[1]); /* as gpures_session_bell() does: the sender's copy is the only one left */
  stream2[1] = -1;
  CHECK(readable_within(stream2[0], 2000));
  CHECK(rings(stream2[0]) == 1);
  send_bell(sv[1], &stream[1], 1, 1);
  CHECK(refused_reaches(tx, 7));
  CHECK(!readable_within(stream[0], 50));
  CHECK_OK(gpures_session_close(tx));
  CHECK(readable_within(stream2[0], 2000));
  CHECK(rings(stream2[0]) == 0); /* its end closed with the session */
  int mine[] = {memfd, dgram[0], dgram[1], seq[0], seq[1], stream[0], stream[1], stream2[0],
                stream2[1], sv[1]};
  for (size_t i = 0; i < sizeof mine / sizeof *mine; i++)
    if (mine[i] >= 0) close(mine[i]);
}

/*
** A peer that sends plain handles (no session: nobody there reads) and closes
** leaves our doorbell unread, and the kernel then resets our end: every handle
** it sent before still arrives, and then the end.
*/
static void a_peer_that_never_reads_the_doorbell_loses_us_no_handle(void) {
  int sv[2];
  CHECK_OK(gpures_channel_pair(sv));
  gpures_session *rx = NULL;
  CHECK_OK(gpures_session_open(sv[1], GPURES_SESSION_RECEIVE, &rx));
  int bell = -1;
  CHECK_OK(gpures_session_bell(rx, &bell));
  for (int i = 0; i < 3; i++) {
    gpures_handle h = sealable_rgba_frame();
    uint32_t sent = 0;
    CHECK_OK(gpures_channel_send(sv[0], h, GPURES_CHANNEL_NONBLOCK, &sent));
    CHECK(sent == 1);
    CHECK_OK(gpures_release(h));
  }
  CHECK_OK(gpures_channel_close(sv[0])); /* the BELL still unread there */
  for (int i = 0; i < 3; i++) {
    gpures_handle got = 0;
    CHECK_OK(gpures_session_receive(rx, GPURES_CHANNEL_NONBLOCK, &got));
    CHECK(got != 0);
    CHECK_OK(gpures_release(got));
  }
  gpures_handle none = 0;
  CHECK_FAILS(GPURES_E_STALE, "channel", gpures_session_receive(rx, GPURES_CHANNEL_NONBLOCK, &none));
  close(bell);
  CHECK_OK(gpures_session_close(rx));
}

int main(void) {
  RUN(the_sender_rings_when_it_has_the_doorbell_and_after_each_frame);
  RUN(a_session_that_ends_by_a_hang_up_ends_its_doorbell);
  RUN(the_sender_rings_when_it_forgets_a_buffer);
  RUN(a_doorbell_is_given_once_and_only_by_a_receiving_session);
  RUN(a_doorbell_that_is_no_unix_stream_socket_is_refused_and_not_kept);
  RUN(a_peer_that_never_reads_the_doorbell_loses_us_no_handle);
  return check_finish("test_doorbell");
}
