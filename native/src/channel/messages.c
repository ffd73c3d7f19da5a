/*
** messages.c: sending and receiving handles over a channel. Handles of the
** kinds that own fds cross a Unix domain socket (SOCK_SEQPACKET) as one
** datagram each, the descriptor as bytes and the fds attached with
** SCM_RIGHTS; wire.c makes and checks the bytes, sockets.c the sockets.
**
** A message whose fds the kernel could not hand over (the process was out of
** fds) is reported, never skipped; an empty datagram is refused, never taken
** for the end of the channel.
*/
#if !defined(_WIN32)
#if defined(__linux__)
#define _GNU_SOURCE /* MSG_CMSG_CLOEXEC */
#else
#define _POSIX_C_SOURCE 200809L
#if defined(__APPLE__)
#define _DARWIN_C_SOURCE /* CMSG_SPACE */
#endif
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"

#if defined(MSG_NOSIGNAL)
#define SEND_FLAGS (MSG_DONTWAIT | MSG_NOSIGNAL)
#else
#define SEND_FLAGS MSG_DONTWAIT
#endif

typedef union control {
  struct cmsghdr align;
  unsigned char bytes[CMSG_SPACE(sizeof(int) * GPURES__WIRE_RECEIVED_FDS)];
} control;

/* A msghdr for one buffer and a control buffer of control_len bytes (0: none). */
static struct msghdr header_of(struct iovec *iov, void *control_bytes, size_t control_len) {
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control_len ? control_bytes : NULL;
  mh.msg_controllen = control_len;
  return mh;
}

/* recvmsg(), its fds made close-on-exec in the call where the OS can (else by collect_fds). */
static ssize_t receive_message(int fd, struct msghdr *mh, int flags) {
#if defined(MSG_CMSG_CLOEXEC)
  flags |= MSG_CMSG_CLOEXEC;
#endif
  return recvmsg(fd, mh, flags);
}

/* ------------------------------------------------------------------ sending */

int gpures__datagram_send(gpures__op op, int fd, uint32_t flags, const void *bytes, size_t len,
                          const int *fds, uint32_t n, uint32_t *out_sent) {
  struct iovec iov = {(void *)bytes, len};
  control c;
  *out_sent = 0; /* every way out but a real send says "not sent" */
  memset(&c, 0, sizeof c);
  struct msghdr mh = header_of(&iov, c.bytes, n ? CMSG_SPACE(sizeof(int) * n) : 0);
  if (n) {
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
  }
  for (;;) {
    if (sendmsg(fd, &mh, SEND_FLAGS) >= 0) return *out_sent = 1, GPURES_OK;
    int status;
    if (!gpures__channel_io_failed(op, fd, flags, POLLOUT, "sendmsg()", &status)) return status;
  }
}

int gpures_channel_send(int fd, gpures_handle handle, uint32_t flags, uint32_t *out_sent) {
  gpures__op op = {"send", 0};
  if (!out_sent) return gpures__fail(op, GPURES_E_NULL_POINTER, "outSent", "outSent is null");
  *out_sent = 0;
  if (flags & ~GPURES_CHANNEL_NONBLOCK)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x", flags);
  gpures__wire_message msg;
  int status = gpures__wire_encode(&op, handle, &msg);
  if (status != GPURES_OK) return status;
  size_t length = gpures__wire_compact(&msg);

  /* Duplicates, so that a release on another thread cannot close what is being sent. */
  int fds[GPURES__WIRE_MAX_FDS];
  uint32_t have = 0;
  for (; have < msg.h.num_fds && have < GPURES__WIRE_MAX_FDS; have++) {
    if ((status = gpures_dup_fd(handle, have, &fds[have])) != GPURES_OK) break;
  }
  if (status != GPURES_OK)
    status = gpures__refail(op, status);
  else
    status = gpures__datagram_send(op, fd, flags, &msg, length, fds, have, out_sent);
  for (uint32_t i = 0; i < have; i++) gpures__fd_close(fds[i]);
  return status;
}

/* ---------------------------------------------------------------- receiving */

void gpures__datagram_close_fds(gpures__datagram *d, uint32_t from) {
  for (uint32_t i = from; i < d->nfds; i++) gpures__fd_close(d->fds[i]);
  d->nfds = from < d->nfds ? from : d->nfds;
}

static void close_received(gpures__datagram *r) { gpures__datagram_close_fds(r, 0); }

/* Takes the fds out of every SCM_RIGHTS message, so that all of them can be closed. */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wsign-compare" /* inside some libcs' CMSG_NXTHDR */
#endif
static void collect_fds(struct msghdr *mh, gpures__datagram *r) {
  for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
      if (r->nfds < GPURES__WIRE_RECEIVED_FDS) {
        r->fds[r->nfds++] = fd;
      } else {
        gpures__fd_close(fd); /* cannot happen with a buffer of this size; close it anyway */
      }
    }
  }
#if !defined(MSG_CMSG_CLOEXEC)
  for (uint32_t i = 0; i < r->nfds; i++) (void)gpures__fd_adopt(r->fds[i]);
#endif
}
#if defined(__clang__)
#pragma clang diagnostic pop
#endif

/* The fds the header announces (0 when the bytes are no header of ours); names the kind in op. */
static uint32_t announced_fds(gpures__op *op, const unsigned char *buf, size_t n) {
  gpures__wire_header h;
  if (n < sizeof h) return 0;
  memcpy(&h, buf, sizeof h);
  if (h.magic != GPURES__WIRE_MAGIC) return 0;
  if (gpures__variant_of(h.kind)) op->kind = h.kind;
  return h.num_fds;
}

/*
** MSG_CTRUNC: the kernel kept back fds of the message. When this process has
** no free fd (EMFILE) the kernel closes what it could not install and still
** delivers the bytes, so without this the frame would vanish unexplained.
*/
static int fds_withheld(gpures__op op, int fd, const unsigned char *buf, size_t n,
                        const gpures__datagram *r) {
  uint32_t announced = announced_fds(&op, buf, n);
  int spare = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* is the fd table full now? */
  int err = spare < 0 ? errno : 0;
  if (spare >= 0) close(spare);
  if (err == EMFILE || err == ENFILE)
    return gpures__fail(op, GPURES_E_OS_ERROR, "fds",
                        "a message was dropped: its fds could not be received, %s (%s); %u of "
                        "the %u it announced arrived and were closed. The channel goes on",
                        gpures__errno_name(err), strerror(err), r->nfds, announced);
  if (r->nfds >= GPURES__WIRE_RECEIVED_FDS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "fds",
                        "more than %u fds arrived with one message", GPURES__WIRE_RECEIVED_FDS);
  return gpures__fail(op, GPURES_E_OS_ERROR, "fds",
                      "a message was dropped: the kernel withheld some of its fds (MSG_CTRUNC); "
                      "%u of the %u it announced arrived and were closed. The channel goes on",
                      r->nfds, announced);
}

/*
** recvmsg() gives 0 bytes and no fds both for an empty datagram and at the
** end of the channel. A hostile peer's empty datagram must not pass for the
** end while messages still wait behind it, so look at what is queued: with
** SO_PASSCRED on, every datagram, even an empty one, carries credentials, and
** the end carries nothing. Only this rare path pays for it.
*/
static bool at_the_end(int fd) {
  unsigned char byte;
  struct iovec iov = {&byte, 1};
  union {
    struct cmsghdr align;
    unsigned char bytes[256];
  } c;
  struct msghdr mh = header_of(&iov, c.bytes, sizeof c.bytes);
#if defined(SO_PASSCRED)
  int was = 0, on = 1;
  socklen_t size = sizeof was;
  bool toggled = getsockopt(fd, SOL_SOCKET, SO_PASSCRED, &was, &size) == 0 && !was &&
                 setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) == 0;
#endif
  ssize_t n = receive_message(fd, &mh, MSG_PEEK | MSG_DONTWAIT);
  int err = errno;
#if defined(SO_PASSCRED)
  if (toggled) (void)setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &was, sizeof was);
#endif
  if (n < 0) return err != EAGAIN && err != EWOULDBLOCK && err != EINTR;
  gpures__datagram peeked; /* a peek hands out duplicates of the fds: close them */
  peeked.nfds = 0;
  collect_fds(&mh, &peeked);
  close_received(&peeked);
  return n == 0 && mh.msg_controllen == 0;
}

/* Whether a datagram can be read at all; every fd it carried is closed when not. */
static int check_datagram(gpures__op op, int fd, int msg_flags, gpures__datagram *d) {
  const unsigned char *buf = (const unsigned char *)d->storage;
  int status = GPURES_OK;
  if (msg_flags & MSG_CTRUNC) {
    status = fds_withheld(op, fd, buf, d->n, d);
  } else if (msg_flags & MSG_TRUNC) {
    status = gpures__fail(op, GPURES_E_INVALID_VALUE, "message",
                          "the message is longer than the %zu bytes a handle can take",
                          (size_t)GPURES__WIRE_RECEIVE_MAX - 1);
  } else if (d->n == 0 && d->nfds == 0) {
    if (at_the_end(fd))
      return gpures__fail(op, GPURES_E_STALE, "channel", "the peer closed the channel");
    status = gpures__fail(op, GPURES_E_INVALID_VALUE, "message", "the message is empty");
  }
  if (status != GPURES_OK) close_received(d);
  return status;
}

int gpures__datagram_receive(gpures__op op, int fd, uint32_t flags, gpures__datagram *d) {
  for (;;) {
    memset(d->storage, 0, sizeof d->storage);
    d->n = 0, d->nfds = 0, d->none = false;
    struct iovec iov = {d->storage, GPURES__WIRE_RECEIVE_MAX};
    control c;
    struct msghdr mh = header_of(&iov, c.bytes, sizeof c.bytes);
    ssize_t n = receive_message(fd, &mh, MSG_DONTWAIT);
    if (n >= 0) {
      d->n = (size_t)n;
      collect_fds(&mh, d);
      return check_datagram(op, fd, mh.msg_flags, d);
    }
    /*
    ** The peer closed with messages of ours unread (a release, a doorbell): the
    ** kernel reports that as ECONNRESET, once, ahead of everything the peer sent
    ** before it closed, which is still queued. Read on; the end comes after.
    */
    if (errno == ECONNRESET) continue;
    int status;
    if (!gpures__channel_io_failed(op, fd, flags, POLLIN, "recvmsg()", &status)) {
      d->none = status == GPURES_OK;
      return status;
    }
  }
}

#define RECEIVE_FLAGS (GPURES_CHANNEL_NONBLOCK | GPURES_CHANNEL_ALLOW_UNSEALED)

int gpures_channel_receive(int fd, uint32_t flags, gpures_handle *out_handle) {
  gpures__op op = {"receive", 0};
  if (!out_handle) return gpures__fail(op, GPURES_E_NULL_POINTER, "outHandle", "outHandle is null");
  *out_handle = 0;
  if (flags & ~RECEIVE_FLAGS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x", flags);
  gpures__datagram d;
  gpures__wire_header h;
  unsigned char *body;
  int status;
  for (;;) {
    status = gpures__datagram_receive(op, fd, flags, &d);
    if (status != GPURES_OK || d.none) return status;
    status = gpures__wire_parse(&op, (unsigned char *)d.storage, d.n, d.nfds, &h, &body);
    /* A peer's doorbell for a sending session (a channel used both ways): not ours to keep. */
    if (status != GPURES_OK || h.type != GPURES__MSG_BELL) break;
    close_received(&d);
  }
  if (status == GPURES_OK && h.type != GPURES__MSG_HANDLE)
    status = gpures__fail(op, GPURES_E_INVALID_VALUE, "type",
                          "the message belongs to a frame session (type %u); receive it with "
                          "gpures_session_receive()", h.type);
  if (status == GPURES_OK)
    status = gpures__wire_decode(&op, &h, body, d.fds, d.nfds,
                                 (flags & GPURES_CHANNEL_ALLOW_UNSEALED) != 0, out_handle);
  if (status == GPURES_OK) d.nfds = 0; /* the handle owns them now */
  close_received(&d);
  return status;
}

#endif
