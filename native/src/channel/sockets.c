/*
** sockets.c: the sockets a channel is. Listen, accept, connect, pair, wait,
** shut down, close and unlink; sending and receiving handles over them is
** messages.c, the message format and its checks wire.c, the listeners'
** socket files listeners.c, and the contract gpures.h.
**
** Every OS failure names the errno symbol (what a person searches for) and
** the object: the path, or the fd.
**
** POSIX, plus what Linux adds when it is there (accept4, SOCK_CLOEXEC,
** MSG_CMSG_CLOEXEC, the abstract namespace); elsewhere the same calls are
** made in two steps.
*/
#if !defined(_WIN32)
#if defined(__linux__)
#define _GNU_SOURCE /* accept4, SOCK_CLOEXEC */
#else
#define _POSIX_C_SOURCE 200809L
#if defined(__APPLE__)
#define _DARWIN_C_SOURCE /* SO_NOSIGPIPE */
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

/* `listen on "/run/x.sock"`: the path a failure is about, in its verb ("listen" without one). */
static gpures__op op_at(char *verb, size_t cap, const char *action, const char *preposition,
                        const char *path) {
  if (path && path[0])
    snprintf(verb, cap, "%s %s \"%s\"", action, preposition, path);
  else
    snprintf(verb, cap, "%s", action);
  gpures__op op = {verb, 0};
  return op;
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

int gpures__channel_io_failed(gpures__op op, int fd, uint32_t flags, short events,
                              const char *call, int *status) {
  int err = errno;
  if (err == EINTR) return 1;
  if (err == EAGAIN || err == EWOULDBLOCK) {
    if (flags & GPURES_CHANNEL_NONBLOCK) return *status = GPURES_OK, 0;
    if (wait_for(fd, events) >= 0) return 1; /* hung up: the next call says so */
    err = errno;
  }
  if (err == EPIPE || err == ECONNRESET || err == ENOTCONN)
    *status = gpures__fail(op, GPURES_E_STALE, "channel", "the peer closed the channel");
  else if (err == EBADF || err == ENOTSOCK)
    *status = gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not a channel", fd);
  else
    *status = os_failed(op, "", err, "%s on fd %d", call, fd);
  return 0;
}

/* ---------------------------------------------------------------- the calls */

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
  gpures__op op = {verb, 0};
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

/* A connected pair of Unix sockets of `type`, close-on-exec, nonblocking, never raising SIGPIPE. */
static int unix_pair(gpures__op op, int type, int out_fds[2]) {
  int fds[2];
#if defined(SOCK_CLOEXEC) && defined(SOCK_NONBLOCK)
  if (socketpair(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) < 0)
    return os_failed(op, "", errno, "socketpair()");
#else
  if (socketpair(AF_UNIX, type, 0, fds) < 0) return os_failed(op, "", errno, "socketpair()");
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

int gpures__doorbell_pair(gpures__op op, int out_fds[2]) {
  return unix_pair(op, SOCK_STREAM, out_fds);
}

bool gpures__is_doorbell(int fd) {
  int type = 0;
  socklen_t size = sizeof type;
  struct sockaddr_storage addr;
  socklen_t addr_size = sizeof addr;
  return is_socket(fd) && getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0 &&
         type == SOCK_STREAM && getsockname(fd, (struct sockaddr *)&addr, &addr_size) == 0 &&
         addr.ss_family == AF_UNIX;
}

int gpures_channel_pair(int out_fds[2]) {
  gpures__op op = {"make channel pair", 0};
  if (!out_fds) return gpures__fail(op, GPURES_E_NULL_POINTER, "outFds", "outFds is null");
  out_fds[0] = out_fds[1] = -1;
  return unix_pair(op, SOCK_SEQPACKET, out_fds);
}

int gpures_channel_wait(int fd, uint32_t events, int32_t timeout_ms, uint32_t *out_ready) {
  gpures__op op = {"wait on", 0};
  uint32_t ignored;
  if (!out_ready) out_ready = &ignored; /* a caller that just tries again */
  *out_ready = 0;
  if (events & ~(GPURES_CHANNEL_READABLE | GPURES_CHANNEL_WRITABLE))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "events", "events has unknown bits 0x%x",
                        events);
  if (fd < 0) return gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not open", fd);
  if (timeout_ms != 0) gpures__pin_library();
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
  gpures__op op = {"shut down", 0};
  if (!is_socket(fd))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not a channel", fd);
  if (shutdown(fd, SHUT_RDWR) < 0 && errno != ENOTCONN)
    return os_failed(op, "", errno, "shutdown() of fd %d", fd);
  gpures__listener_forget(fd); /* a listener that accepts no more needs no file */
  return GPURES_OK;
}

int gpures_channel_close(int fd) {
  gpures__op op = {"close", 0};
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

#endif
