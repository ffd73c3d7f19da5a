/*
** channel_posix.c: channel sockets and their I/O. Handles of the kinds that
** own fds cross a Unix domain socket (SOCK_SEQPACKET) as one datagram each,
** the descriptor as bytes and the fds attached with SCM_RIGHTS; the message
** format and its checks are channel_wire.c, the listeners' socket files
** channel_listeners.c, and the contract gpures.h.
**
** Every OS failure names the errno symbol (what a person searches for) and
** the object: the path, or the fd. A message whose fds the kernel could not
** hand over (the process was out of fds) is reported, never skipped.
**
** POSIX, plus what Linux adds when it is there (accept4, SOCK_CLOEXEC,
** MSG_CMSG_CLOEXEC, the abstract namespace); elsewhere the same calls are
** made in two steps.
*/
#if !defined(_WIN32)
#if defined(__linux__)
#define _GNU_SOURCE /* accept4, SOCK_CLOEXEC, MSG_CMSG_CLOEXEC */
#else
#define _POSIX_C_SOURCE 200809L
#if defined(__APPLE__)
#define _DARWIN_C_SOURCE /* CMSG_SPACE, SO_NOSIGPIPE */
#endif
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"

/* ------------------------------------------------------------------ helpers */

static gpures__op op_named(const char *verb, uint32_t kind) {
  gpures__op op = {verb, kind};
  return op;
}

/* `listen on "/run/x.sock"`: the path a failure is about, in its verb ("listen" without one). */
static gpures__op op_at(char *verb, size_t cap, const char *action, const char *preposition,
                        const char *path) {
  if (path && path[0])
    snprintf(verb, cap, "%s %s \"%s\"", action, preposition, path);
  else
    snprintf(verb, cap, "%s", action);
  return op_named(verb, 0);
}

/* An OS failure as a person searches for it: `EACCES (Permission denied) from bind()`. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int os_failed(gpures__op op, const char *field, int err, const char *call, ...) {
  char what[96];
  va_list ap;
  va_start(ap, call);
  vsnprintf(what, sizeof what, call, ap);
  va_end(ap);
  return gpures__fail(op, GPURES_E_OS_ERROR, field, "%s (%s) from %s", gpures__errno_name(err),
                      strerror(err), what);
}

#if !defined(__linux__) || !defined(SOCK_CLOEXEC) || !defined(SOCK_NONBLOCK)
/* Where the OS cannot set these in the call that makes the fd. */
static int set_cloexec_nonblock(int fd) {
  int fdflags = fcntl(fd, F_GETFD);
  int flflags = fcntl(fd, F_GETFL);
  if (fdflags < 0 || flflags < 0) return -1;
  if (fcntl(fd, F_SETFD, fdflags | FD_CLOEXEC) < 0) return -1;
  return fcntl(fd, F_SETFL, flflags | O_NONBLOCK);
}
#endif

static void no_sigpipe(int fd) {
#if defined(SO_NOSIGPIPE)
  int one = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#else
  (void)fd;
#endif
}

#if defined(MSG_NOSIGNAL)
#define SEND_FLAGS (MSG_DONTWAIT | MSG_NOSIGNAL)
#else
#define SEND_FLAGS MSG_DONTWAIT
#endif

/* A new SOCK_SEQPACKET socket, close-on-exec and non-blocking; -1 with errno. */
static int seqpacket_socket(void) {
#if defined(SOCK_CLOEXEC) && defined(SOCK_NONBLOCK)
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
#else
  int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  if (fd >= 0 && set_cloexec_nonblock(fd) < 0) {
    int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
#endif
  if (fd >= 0) no_sigpipe(fd);
  return fd;
}

/* Fills a sockaddr_un for `path`; its length, or 0 after recording the error. */
static socklen_t address_of(gpures__op op, const char *path, struct sockaddr_un *sa) {
  memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  if (!path) {
    gpures__fail(op, GPURES_E_NULL_POINTER, "path", "path is null");
    return 0;
  }
  size_t len = strlen(path);
  if (len == 0) {
    gpures__fail(op, GPURES_E_INVALID_VALUE, "path",
                 "path is empty; give the path of a socket file, or \"@name\" for Linux's "
                 "abstract namespace");
    return 0;
  }
  if (len >= sizeof sa->sun_path) {
    gpures__fail(op, GPURES_E_INVALID_VALUE, "path",
                 "path has %zu bytes; a Unix socket path has at most %zu", len,
                 sizeof sa->sun_path - 1);
    return 0;
  }
  if (path[0] == '@') {
#if defined(__linux__)
    memcpy(sa->sun_path + 1, path + 1, len - 1); /* sun_path[0] stays 0: abstract */
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
#else
    gpures__fail(op, GPURES_E_UNSUPPORTED_PLATFORM, "path",
                 "path \"%s\" names Linux's abstract namespace, which this OS lacks", path);
    return 0;
#endif
  }
  memcpy(sa->sun_path, path, len);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
}

static int is_socket(int fd) {
  struct stat st;
  return fd >= 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

/*
** Waits for `events` (POLLIN/POLLOUT) without a limit: 0, 1 when the socket
** was shut down or hung up, or -1 with errno.
*/
static int wait_for(int fd, short events) {
  struct pollfd p = {fd, events, 0};
  for (;;) {
    int n = poll(&p, 1, -1);
    if (n > 0 && (p.revents & POLLNVAL)) return errno = EBADF, -1;
    if (n > 0) return (p.revents & (POLLHUP | POLLERR)) ? 1 : 0;
    if (n < 0 && errno != EINTR) return -1;
  }
}

typedef union control {
  struct cmsghdr align;
  unsigned char bytes[CMSG_SPACE(sizeof(int) * GPURES__WIRE_RECEIVED_FDS)];
} control;

/* --------------------------------------------------------------- listeners */

/* Whether the socket file at path is left by a listener that is gone: nobody answers on it. */
static bool is_stale_socket(const char *path, const struct sockaddr_un *sa, socklen_t len) {
  struct stat st;
  if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  int probe = seqpacket_socket();
  if (probe < 0) return false;
  bool stale = connect(probe, (const struct sockaddr *)sa, len) < 0 && errno == ECONNREFUSED;
  close(probe);
  return stale;
}

/* bind(), replacing a stale socket file; the failing call's name in *call. */
static int bind_path(int fd, const char *path, const struct sockaddr_un *sa, socklen_t len,
                     const char **call) {
  *call = "bind()";
  if (bind(fd, (const struct sockaddr *)sa, len) == 0) return 0;
  if (errno != EADDRINUSE || path[0] == '@') return -1;
  if (!is_stale_socket(path, sa, len)) return errno = EADDRINUSE, -1;
  if (unlink(path) != 0 && errno != ENOENT) return *call = "unlink() of the stale socket", -1;
  return bind(fd, (const struct sockaddr *)sa, len);
}

int gpures_channel_listen(const char *path, int *out_fd) {
  char verb[160];
  gpures__op op = op_at(verb, sizeof verb, "listen", "on", path);
  if (!out_fd) return gpures__fail(op, GPURES_E_NULL_POINTER, "outFd", "outFd is null");
  *out_fd = -1;
  struct sockaddr_un sa;
  socklen_t len = address_of(op, path, &sa);
  if (!len) return gpures_last_status();
  int fd = seqpacket_socket();
  if (fd < 0) return os_failed(op, "", errno, "socket()");
  const char *call;
  int r = bind_path(fd, path, &sa, len, &call);
  if (r == 0 && listen(fd, 64) < 0) r = -1, call = "listen()";
  if (r < 0) {
    int err = errno;
    close(fd);
    if (err == EADDRINUSE)
      return gpures__fail(op, GPURES_E_OS_ERROR, "path",
                          "the path is in use, by a live listener or a file that is not a "
                          "socket (EADDRINUSE)");
    return os_failed(op, "path", err, "%s", call);
  }
  int status = gpures__listener_remember(op, fd, path);
  if (status != GPURES_OK) {
    if (path[0] != '@') (void)unlink(path); /* just made, and nobody else knows of it */
    close(fd);
    return status;
  }
  *out_fd = fd;
  return GPURES_OK;
}

int gpures_channel_accept(int listen_fd, uint32_t flags, int *out_fd) {
  char verb[48];
  snprintf(verb, sizeof verb, "accept on fd %d", listen_fd);
  gpures__op op = op_named(verb, 0);
  if (!out_fd) return gpures__fail(op, GPURES_E_NULL_POINTER, "outFd", "outFd is null");
  *out_fd = -1;
  if (flags & ~GPURES_CHANNEL_NONBLOCK)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x", flags);
  for (;;) {
#if defined(__linux__)
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
#else
    int fd = accept(listen_fd, NULL, NULL);
    if (fd >= 0 && set_cloexec_nonblock(fd) < 0) {
      int err = errno;
      close(fd);
      return os_failed(op, "", err, "fcntl()");
    }
#endif
    if (fd >= 0) {
      no_sigpipe(fd);
      *out_fd = fd;
      return GPURES_OK;
    }
    int err = errno;
    if (err == EINTR || err == ECONNABORTED) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (flags & GPURES_CHANNEL_NONBLOCK) return GPURES_OK;
      int woke = wait_for(listen_fd, POLLIN);
      if (woke == 0) continue;
      /* Linux: a listener shut down polls as hung up, and accept says EAGAIN. */
      err = woke > 0 ? EINVAL : errno;
    }
    if (err == EINVAL)
      return gpures__fail(op, GPURES_E_STALE, "channel", "the listener was shut down");
    if (err == EBADF || err == ENOTSOCK)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not a listener", listen_fd);
    return os_failed(op, "", err, "accept()");
  }
}

int gpures_channel_connect(const char *path, uint32_t flags, int *out_fd) {
  char verb[160];
  gpures__op op = op_at(verb, sizeof verb, "connect", "to", path);
  if (!out_fd) return gpures__fail(op, GPURES_E_NULL_POINTER, "outFd", "outFd is null");
  *out_fd = -1;
  if (flags & ~GPURES_CHANNEL_NONBLOCK)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x", flags);
  struct sockaddr_un sa;
  socklen_t len = address_of(op, path, &sa);
  if (!len) return gpures_last_status();
  int fd = seqpacket_socket();
  if (fd < 0) return os_failed(op, "", errno, "socket()");
  for (;;) {
    if (connect(fd, (struct sockaddr *)&sa, len) == 0) break;
    int err = errno;
    if (err == EINTR) continue;
    /* A Unix listener whose queue is full: try again once there is room. */
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (flags & GPURES_CHANNEL_NONBLOCK) {
        close(fd);
        return GPURES_OK;
      }
      struct timespec pause = {0, 1000000};
      nanosleep(&pause, NULL);
      continue;
    }
    close(fd);
    if (err == ECONNREFUSED || err == ENOENT)
      return gpures__fail(op, GPURES_E_OS_ERROR, "path", "nobody listens there: %s (%s)",
                          gpures__errno_name(err), strerror(err));
    return os_failed(op, "path", err, "connect()");
  }
  *out_fd = fd;
  return GPURES_OK;
}

int gpures_channel_pair(int out_fds[2]) {
  gpures__op op = op_named("make channel pair", 0);
  if (!out_fds) return gpures__fail(op, GPURES_E_NULL_POINTER, "outFds", "outFds is null");
  out_fds[0] = out_fds[1] = -1;
  int fds[2];
#if defined(SOCK_CLOEXEC) && defined(SOCK_NONBLOCK)
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) < 0)
    return os_failed(op, "", errno, "socketpair()");
#else
  if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds) < 0)
    return os_failed(op, "", errno, "socketpair()");
  if (set_cloexec_nonblock(fds[0]) < 0 || set_cloexec_nonblock(fds[1]) < 0) {
    int err = errno;
    close(fds[0]);
    close(fds[1]);
    return os_failed(op, "", err, "fcntl()");
  }
#endif
  no_sigpipe(fds[0]);
  no_sigpipe(fds[1]);
  out_fds[0] = fds[0];
  out_fds[1] = fds[1];
  return GPURES_OK;
}

int gpures_channel_wait(int fd, uint32_t events, int32_t timeout_ms, uint32_t *out_ready) {
  gpures__op op = op_named("wait on", 0);
  if (!out_ready) return gpures__fail(op, GPURES_E_NULL_POINTER, "outReady", "outReady is null");
  *out_ready = 0;
  if (events & ~(GPURES_CHANNEL_READABLE | GPURES_CHANNEL_WRITABLE))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "events", "events has unknown bits 0x%x",
                        events);
  if (fd < 0) return gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not open", fd);
  struct pollfd p = {fd, 0, 0};
  if (events & GPURES_CHANNEL_READABLE) p.events |= POLLIN;
  if (events & GPURES_CHANNEL_WRITABLE) p.events |= POLLOUT;
  int n = poll(&p, 1, timeout_ms < 0 ? -1 : timeout_ms);
  if (n < 0) return errno == EINTR ? GPURES_OK : os_failed(op, "", errno, "poll() on fd %d", fd);
  if (n == 0) return GPURES_OK;
  if (p.revents & POLLNVAL)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not open", fd);
  uint32_t ready = 0;
  if (p.revents & POLLIN) ready |= GPURES_CHANNEL_READABLE;
  if (p.revents & POLLOUT) ready |= GPURES_CHANNEL_WRITABLE;
  /* The end is something to read (receive reports it), and no write can succeed. */
  if (p.revents & (POLLHUP | POLLERR)) ready |= GPURES_CHANNEL_HANGUP | (events & GPURES_CHANNEL_READABLE);
  *out_ready = ready;
  return GPURES_OK;
}

int gpures_channel_shutdown(int fd) {
  gpures__op op = op_named("shut down", 0);
  if (!is_socket(fd))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not a channel", fd);
  if (shutdown(fd, SHUT_RDWR) < 0 && errno != ENOTCONN)
    return os_failed(op, "", errno, "shutdown() of fd %d", fd);
  gpures__listener_forget(fd); /* a listener that accepts no more needs no file */
  return GPURES_OK;
}

int gpures_channel_close(int fd) {
  gpures__op op = op_named("close", 0);
  if (!is_socket(fd))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not a channel", fd);
  gpures__listener_forget(fd);
  gpures__fd_close(fd);
  return GPURES_OK;
}

int gpures_channel_unlink(const char *path) {
  char verb[160];
  gpures__op op = op_at(verb, sizeof verb, "remove socket", "at", path);
  if (!path) return gpures__fail(op, GPURES_E_NULL_POINTER, "path", "path is null");
  if (path[0] == '@' || path[0] == '\0') return GPURES_OK;
  struct stat st;
  if (lstat(path, &st) < 0)
    return errno == ENOENT ? GPURES_OK : os_failed(op, "path", errno, "lstat()");
  if (!S_ISSOCK(st.st_mode))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "path", "the file there is not a socket");
  if (unlink(path) < 0 && errno != ENOENT) return os_failed(op, "path", errno, "unlink()");
  return GPURES_OK;
}

/* ------------------------------------------------------------------ sending */

/* sendmsg() of one message with `n` fds attached, waiting for room unless NONBLOCK. */
static int send_message(gpures__op op, int fd, uint32_t flags, const void *bytes, size_t len,
                        const int *fds, uint32_t n, uint32_t *out_sent) {
  struct iovec iov = {(void *)bytes, len};
  control c;
  memset(&c, 0, sizeof c);
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (n) {
    mh.msg_control = c.bytes;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
  }
  for (;;) {
    if (sendmsg(fd, &mh, SEND_FLAGS) >= 0) return *out_sent = 1, GPURES_OK;
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (flags & GPURES_CHANNEL_NONBLOCK) return GPURES_OK;
      if (wait_for(fd, POLLOUT) >= 0) continue; /* hung up: sendmsg says so next */
      err = errno;
    }
    if (err == EPIPE || err == ECONNRESET || err == ENOTCONN)
      return gpures__fail(op, GPURES_E_STALE, "channel", "the peer closed the channel");
    if (err == EBADF || err == ENOTSOCK)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not a channel", fd);
    return os_failed(op, "", err, "sendmsg() on fd %d", fd);
  }
}

int gpures_channel_send(int fd, gpures_handle handle, uint32_t flags, uint32_t *out_sent) {
  gpures__op op = op_named("send", 0);
  if (!out_sent) return gpures__fail(op, GPURES_E_NULL_POINTER, "outSent", "outSent is null");
  *out_sent = 0;
  if (flags & ~GPURES_CHANNEL_NONBLOCK)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x", flags);
  gpures__wire_message msg;
  int status = gpures__wire_encode(&op, handle, &msg);
  if (status != GPURES_OK) return status;

  /* Duplicates, so that a release on another thread cannot close what is being sent. */
  int fds[GPURES__WIRE_MAX_FDS];
  uint32_t have = 0;
  for (; have < msg.h.num_fds && have < GPURES__WIRE_MAX_FDS; have++) {
    if ((status = gpures_dup_fd(handle, have, &fds[have])) != GPURES_OK) break;
  }
  if (status != GPURES_OK)
    status = gpures__refail(op, status);
  else
    status = send_message(op, fd, flags, &msg, sizeof msg.h + msg.h.desc_size, fds, have,
                          out_sent);
  for (uint32_t i = 0; i < have; i++) gpures__fd_close(fds[i]);
  return status;
}

/* ---------------------------------------------------------------- receiving */

typedef struct received {
  int fds[GPURES__WIRE_RECEIVED_FDS];
  uint32_t nfds;
} received;

static void close_received(received *r) {
  for (uint32_t i = 0; i < r->nfds; i++) gpures__fd_close(r->fds[i]);
  r->nfds = 0;
}

/* Takes the fds out of every SCM_RIGHTS message, so that all of them can be closed. */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wsign-compare" /* inside some libcs' CMSG_NXTHDR */
#endif
static void collect_fds(struct msghdr *mh, received *r) {
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
                        const received *r) {
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
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = c.bytes;
  mh.msg_controllen = sizeof c.bytes;
  int peek_flags = MSG_PEEK | MSG_DONTWAIT;
#if defined(MSG_CMSG_CLOEXEC)
  peek_flags |= MSG_CMSG_CLOEXEC;
#endif
#if defined(SO_PASSCRED)
  int was = 0, on = 1;
  socklen_t size = sizeof was;
  bool toggled = getsockopt(fd, SOL_SOCKET, SO_PASSCRED, &was, &size) == 0 && !was &&
                 setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) == 0;
#endif
  ssize_t n = recvmsg(fd, &mh, peek_flags);
  int err = errno;
#if defined(SO_PASSCRED)
  if (toggled) (void)setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &was, sizeof was);
#endif
  if (n < 0) return err != EAGAIN && err != EWOULDBLOCK && err != EINTR;
  received peeked; /* a peek hands out duplicates of the fds: close them */
  peeked.nfds = 0;
  collect_fds(&mh, &peeked);
  close_received(&peeked);
  return n == 0 && mh.msg_controllen == 0;
}

/* Turns one datagram into a handle, or an error; every fd it carried is closed on failure. */
static int take_message(gpures__op op, int fd, unsigned char *buf, size_t n, int msg_flags,
                        received *r, bool allow_unsealed, gpures_handle *out_handle) {
  int status;
  if (msg_flags & MSG_CTRUNC) {
    status = fds_withheld(op, fd, buf, n, r);
  } else if (msg_flags & MSG_TRUNC) {
    status = gpures__fail(op, GPURES_E_INVALID_VALUE, "message",
                          "the message is longer than the %zu bytes a handle can take",
                          sizeof(gpures__wire_header) + GPURES__WIRE_MAX_DESC);
  } else if (n == 0 && r->nfds == 0) {
    if (at_the_end(fd))
      return gpures__fail(op, GPURES_E_STALE, "channel", "the peer closed the channel");
    status = gpures__fail(op, GPURES_E_INVALID_VALUE, "message", "the message is empty");
  } else {
    status = gpures__wire_decode(&op, buf, n, r->fds, r->nfds, allow_unsealed, out_handle);
    if (status == GPURES_OK) r->nfds = 0; /* the handle owns them now */
  }
  close_received(r);
  return status;
}

#define RECEIVE_FLAGS (GPURES_CHANNEL_NONBLOCK | GPURES_CHANNEL_ALLOW_UNSEALED)

int gpures_channel_receive(int fd, uint32_t flags, gpures_handle *out_handle) {
  gpures__op op = op_named("receive", 0);
  if (!out_handle) return gpures__fail(op, GPURES_E_NULL_POINTER, "outHandle", "outHandle is null");
  *out_handle = 0;
  if (flags & ~RECEIVE_FLAGS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x", flags);
  /* 8-byte aligned, zeroed past what arrives; one byte more than a message may have. */
  uint64_t storage[(sizeof(gpures__wire_header) + GPURES__WIRE_MAX_DESC + GPURES__DESC_MAX) / 8 + 1];
  unsigned char *buf = (unsigned char *)storage;
  for (;;) {
    memset(storage, 0, sizeof storage);
    struct iovec iov = {buf, sizeof(gpures__wire_header) + GPURES__WIRE_MAX_DESC + 1};
    control c;
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = c.bytes;
    mh.msg_controllen = sizeof c.bytes;
    int recv_flags = MSG_DONTWAIT;
#if defined(MSG_CMSG_CLOEXEC)
    recv_flags |= MSG_CMSG_CLOEXEC;
#endif
    ssize_t n = recvmsg(fd, &mh, recv_flags);
    if (n >= 0) {
      received r;
      r.nfds = 0;
      collect_fds(&mh, &r);
      return take_message(op, fd, buf, (size_t)n, mh.msg_flags, &r,
                          (flags & GPURES_CHANNEL_ALLOW_UNSEALED) != 0, out_handle);
    }
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (flags & GPURES_CHANNEL_NONBLOCK) return GPURES_OK;
      if (wait_for(fd, POLLIN) >= 0) continue; /* hung up: recvmsg says so next */
      err = errno;
    }
    if (err == ECONNRESET || err == ENOTCONN)
      return gpures__fail(op, GPURES_E_STALE, "channel", "the peer closed the channel");
    if (err == EBADF || err == ENOTSOCK)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not a channel", fd);
    return os_failed(op, "", err, "recvmsg() on fd %d", fd);
  }
}

#endif
