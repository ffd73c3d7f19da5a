/*
** channel_posix.c: the fd plumbing between processes and to the CPU.
**
** Channels: handles of the kinds that own fds cross a Unix domain socket
** (SOCK_SEQPACKET) as one datagram each, the descriptor as bytes and the fds
** attached with SCM_RIGHTS. The receiving side trusts nothing in a message:
** see receive_message() for every check, and gpures.h for the contract.
**
** Mappings: gpures_map() mmaps an owned fd and, for a real dma-buf, brackets
** CPU access with DMA_BUF_IOCTL_SYNC. Live mappings are kept in a list so
** that gpures_unmap() refuses an address it did not make and never reads an
** fd from its caller.
**
** POSIX, plus what Linux adds when it is there (accept4, SOCK_CLOEXEC,
** MSG_CMSG_CLOEXEC, the abstract namespace, the dma-buf ioctl); elsewhere
** the same calls are made in two steps.
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
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/ioctl.h>
#endif

#include "internal.h"

/* ------------------------------------------------------------------ helpers */

static gpures__op op_named(const char *verb, uint32_t kind) {
  gpures__op op = {verb, kind};
  return op;
}

static int os_fail(gpures__op op, const char *field, const char *what, int err) {
  return gpures__fail(op, GPURES_E_OS_ERROR, field, "%s failed: %s (errno %d)", what,
                      strerror(err), err);
}

/*
** Records the thread's last error again under this operation's verb: a call
** into another gpures function reported "Cannot duplicate fd of X: ...", the
** caller wants "Cannot send X: ...".
*/
static int refail(gpures__op op, int status) {
  char message[512], field[96];
  const char *text = gpures_last_error();
  const char *colon = strstr(text, ": ");
  snprintf(message, sizeof message, "%s", colon ? colon + 2 : text);
  snprintf(field, sizeof field, "%s", gpures_last_error_field());
  return gpures__fail(op, status, field, "%s", message);
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
    gpures__fail(op, GPURES_E_INVALID_VALUE, "path", "path is empty");
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

/* ---------------------------------------------------------- the wire format */

#define WIRE_MAGIC 0x63727067u /* "gprc" */
#define MAX_DESC_BYTES 1024u   /* a newer sender's descriptor may be longer than ours */
#define MAX_FDS 4u             /* what one descriptor can name */
#define MAX_RECEIVED_FDS 16u   /* room for more, so that "too many" is seen, not truncated */

typedef struct wire_header {
  uint32_t magic;       /* WIRE_MAGIC */
  uint32_t abi;         /* the sender's gpures_abi_version() */
  uint32_t header_size; /* sizeof(wire_header) */
  uint32_t kind;        /* GPURES_KIND_* of a kind that owns fds */
  uint32_t desc_size;   /* bytes of descriptor after the header; its struct_size */
  uint32_t num_fds;     /* fds attached, in the order of the descriptor's fd fields */
} wire_header;

typedef union control {
  struct cmsghdr align;
  unsigned char bytes[CMSG_SPACE(sizeof(int) * MAX_RECEIVED_FDS)];
} control;

/* --------------------------------------------------------------- listeners */

int gpures_channel_listen(const char *path, int *out_fd) {
  gpures__op op = op_named("listen on", 0);
  if (!out_fd) return gpures__fail(op, GPURES_E_NULL_POINTER, "outFd", "outFd is null");
  *out_fd = -1;
  struct sockaddr_un sa;
  socklen_t len = address_of(op, path, &sa);
  if (!len) return gpures_last_status();
  int fd = seqpacket_socket();
  if (fd < 0) return os_fail(op, "", "socket(AF_UNIX, SOCK_SEQPACKET)", errno);
  int r = bind(fd, (struct sockaddr *)&sa, len);
  if (r < 0 && errno == EADDRINUSE && path[0] != '@') {
    /* A socket file left by a listener that is gone: nobody answers on it. */
    struct stat st;
    int probe = seqpacket_socket();
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && probe >= 0 &&
        connect(probe, (struct sockaddr *)&sa, len) < 0 && errno == ECONNREFUSED &&
        unlink(path) == 0)
      r = bind(fd, (struct sockaddr *)&sa, len);
    else
      errno = EADDRINUSE;
    if (probe >= 0) close(probe);
  }
  if (r < 0 || listen(fd, 64) < 0) {
    int err = errno;
    close(fd);
    if (err == EADDRINUSE)
      return gpures__fail(op, GPURES_E_OS_ERROR, "path",
                          "\"%s\" is in use (a live listener, or a file that is not a socket)",
                          path);
    return os_fail(op, "path", "bind/listen", err);
  }
  *out_fd = fd;
  return GPURES_OK;
}

int gpures_channel_accept(int listen_fd, uint32_t flags, int *out_fd) {
  gpures__op op = op_named("accept on", 0);
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
      return os_fail(op, "", "fcntl", err);
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
    return os_fail(op, "", "accept", err);
  }
}

int gpures_channel_connect(const char *path, uint32_t flags, int *out_fd) {
  gpures__op op = op_named("connect to", 0);
  if (!out_fd) return gpures__fail(op, GPURES_E_NULL_POINTER, "outFd", "outFd is null");
  *out_fd = -1;
  if (flags & ~GPURES_CHANNEL_NONBLOCK)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x", flags);
  struct sockaddr_un sa;
  socklen_t len = address_of(op, path, &sa);
  if (!len) return gpures_last_status();
  int fd = seqpacket_socket();
  if (fd < 0) return os_fail(op, "", "socket(AF_UNIX, SOCK_SEQPACKET)", errno);
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
      return gpures__fail(op, GPURES_E_OS_ERROR, "path", "nobody listens at \"%s\" (%s)", path,
                          strerror(err));
    return os_fail(op, "path", "connect", err);
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
    return os_fail(op, "", "socketpair(AF_UNIX, SOCK_SEQPACKET)", errno);
#else
  if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds) < 0)
    return os_fail(op, "", "socketpair(AF_UNIX, SOCK_SEQPACKET)", errno);
  if (set_cloexec_nonblock(fds[0]) < 0 || set_cloexec_nonblock(fds[1]) < 0) {
    int err = errno;
    close(fds[0]);
    close(fds[1]);
    return os_fail(op, "", "fcntl", err);
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
  if (n < 0) return errno == EINTR ? GPURES_OK : os_fail(op, "", "poll", errno);
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
  if (shutdown(fd, SHUT_RDWR) < 0 && errno != ENOTCONN) return os_fail(op, "", "shutdown", errno);
  return GPURES_OK;
}

int gpures_channel_close(int fd) {
  gpures__op op = op_named("close", 0);
  if (!is_socket(fd))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not a channel", fd);
  gpures__fd_close(fd);
  return GPURES_OK;
}

int gpures_channel_unlink(const char *path) {
  gpures__op op = op_named("remove socket", 0);
  if (!path) return gpures__fail(op, GPURES_E_NULL_POINTER, "path", "path is null");
  if (path[0] == '@' || path[0] == '\0') return GPURES_OK;
  struct stat st;
  if (lstat(path, &st) < 0) return errno == ENOENT ? GPURES_OK : os_fail(op, "path", "lstat", errno);
  if (!S_ISSOCK(st.st_mode))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "path", "\"%s\" is not a socket", path);
  if (unlink(path) < 0 && errno != ENOENT) return os_fail(op, "path", "unlink", errno);
  return GPURES_OK;
}

/* ------------------------------------------------------------------ sending */

static bool owns_fds(uint32_t kind) {
  const gpures_kind_info *info = gpures_kind_info_of(kind);
  return info && info->ownership == GPURES_OWNED;
}

/* Whether byte range [offset, offset + size) of a descriptor lies within `given` bytes. */
static bool within(uint32_t offset, uint32_t size, uint32_t given) {
  return (uint64_t)offset + size <= given;
}

/*
** Turns a described descriptor into its wire form: fd fields become their
** positions 0, 1, ... and every address is dropped (an optional group holding
** one is marked absent). Returns the number of fd fields.
*/
static uint32_t to_wire(const gpures__variant *v, void *desc) {
  uint32_t flags, drop = 0, position = 0;
  memcpy(&flags, (unsigned char *)desc + 4, 4);
  for (uint32_t r = 0; r < v->num_fields; r++)
    if (v->fields[r].type == GPURES_FIELD_PTR) drop |= v->fields[r].present_bit;
  for (uint32_t r = 0; r < v->num_fields; r++) {
    const gpures_field_info *f = &v->fields[r];
    if (f->type == GPURES_FIELD_FD) {
      uint32_t n = gpures__field_len(f, desc);
      for (uint32_t i = 0; i < n; i++) gpures__field_set(f, desc, i, position++);
    } else if (f->type == GPURES_FIELD_PTR || (f->present_bit & drop)) {
      for (uint32_t i = 0; i < f->count; i++)
        memset((unsigned char *)desc + f->offset + (size_t)i * f->stride, 0, f->size);
    }
  }
  flags &= ~drop;
  memcpy((unsigned char *)desc + 4, &flags, 4);
  return position;
}

int gpures_channel_send(int fd, gpures_handle handle, uint32_t flags, uint32_t *out_sent) {
  gpures__op op = op_named("send", 0);
  if (!out_sent) return gpures__fail(op, GPURES_E_NULL_POINTER, "outSent", "outSent is null");
  *out_sent = 0;
  if (flags & ~GPURES_CHANNEL_NONBLOCK)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x", flags);
  uint32_t kind = 0;
  int status = gpures_kind(handle, &kind);
  if (status != GPURES_OK) return refail(op, status);
  op.kind = kind;
  if (!owns_fds(kind))
    return gpures__fail(op, GPURES_E_WRONG_KIND, "resource",
                        "%s is process-local (it names memory or objects of this process); only "
                        "kinds that own fds (DmaBufHandle, VkOpaqueFd) cross processes",
                        gpures__kind_name(kind));
  const gpures__variant *v = gpures__variant_of(kind);

  struct {
    wire_header h;
    unsigned char desc[GPURES__DESC_MAX];
  } msg;
  memset(&msg, 0, sizeof msg);
  if ((status = gpures_describe(handle, msg.desc, v->desc_size)) != GPURES_OK)
    return refail(op, status);
  uint32_t nfds = to_wire(v, msg.desc);
  msg.h.magic = WIRE_MAGIC;
  msg.h.abi = gpures_abi_version();
  msg.h.header_size = sizeof msg.h;
  msg.h.kind = kind;
  msg.h.desc_size = v->desc_size;
  msg.h.num_fds = nfds;

  /* Duplicates, so that a release on another thread cannot close what is being sent. */
  int fds[MAX_FDS];
  uint32_t have = 0;
  for (; have < nfds && have < MAX_FDS; have++) {
    if ((status = gpures_dup_fd(handle, have, &fds[have])) != GPURES_OK) {
      status = refail(op, status);
      goto out;
    }
  }

  struct iovec iov = {&msg, sizeof msg.h + v->desc_size};
  control c;
  memset(&c, 0, sizeof c);
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (have) {
    mh.msg_control = c.bytes;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * have);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * have);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * have);
  }
  for (;;) {
    if (sendmsg(fd, &mh, SEND_FLAGS) >= 0) {
      *out_sent = 1;
      status = GPURES_OK;
      break;
    }
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (flags & GPURES_CHANNEL_NONBLOCK) {
        status = GPURES_OK;
        break;
      }
      if (wait_for(fd, POLLOUT) >= 0) continue; /* hung up: sendmsg says so next */
      err = errno;
    }
    if (err == EPIPE || err == ECONNRESET || err == ENOTCONN)
      status = gpures__fail(op, GPURES_E_STALE, "channel", "the peer closed the channel");
    else if (err == EBADF || err == ENOTSOCK)
      status = gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is not a channel", fd);
    else
      status = os_fail(op, "", "sendmsg", err);
    break;
  }
out:
  for (uint32_t i = 0; i < have; i++) gpures__fd_close(fds[i]);
  return status;
}

/* ---------------------------------------------------------------- receiving */

typedef struct received {
  int fds[MAX_RECEIVED_FDS];
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
      if (r->nfds < MAX_RECEIVED_FDS) {
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

/*
** Checks a message against everything create cannot know about (the header,
** the fds as they arrived, addresses), puts the received fds into the
** descriptor and hands it to gpures_create(). On any failure the caller
** closes every received fd.
*/
static int receive_message(gpures__op op, unsigned char *buf, size_t n, received *r,
                           gpures_handle *out_handle) {
  wire_header h;
  if (n < sizeof h)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "message",
                        "the message has %zu bytes, fewer than the %zu of a header", n, sizeof h);
  memcpy(&h, buf, sizeof h);
  if (h.magic != WIRE_MAGIC)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "message",
                        "the message is not a gpures handle (magic 0x%08x)", h.magic);
  if (h.abi >> 16 != GPURES_ABI_MAJOR)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "abi",
                        "the sender's ABI is %u.%u; this library's major version is %u",
                        h.abi >> 16, h.abi & 0xffffu, GPURES_ABI_MAJOR);
  if (h.header_size != sizeof h)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "headerSize",
                        "headerSize is %u, not %zu", h.header_size, sizeof h);
  const gpures__variant *v = gpures__variant_of(h.kind);
  if (!v)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "kind", "kind %u does not exist", h.kind);
  op.kind = h.kind;
  if (!owns_fds(h.kind))
    return gpures__fail(op, GPURES_E_WRONG_KIND, "kind",
                        "%s is process-local; only kinds that own fds cross processes",
                        gpures__kind_name(h.kind));
  if (h.desc_size > MAX_DESC_BYTES || h.desc_size != n - sizeof h)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "descSize",
                        "the header announces %u descriptor bytes but %zu arrived", h.desc_size,
                        n - sizeof h);
  if (h.desc_size < 8)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "structSize",
                        "the descriptor has %u bytes, fewer than its struct_size and flags",
                        h.desc_size);
  unsigned char *desc = buf + sizeof h;
  uint32_t struct_size;
  memcpy(&struct_size, desc, 4);
  if (struct_size != h.desc_size)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "structSize",
                        "structSize is %u but the message carries %u descriptor bytes",
                        struct_size, h.desc_size);
  if (h.num_fds != r->nfds)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "fds",
                        "the header announces %u fds but %u arrived", h.num_fds, r->nfds);
  if (r->nfds > MAX_FDS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "fds",
                        "%u fds arrived; a descriptor names at most %u", r->nfds, MAX_FDS);

  /* The buffer is zero past the descriptor, so fields it does not reach read as 0. */
  for (uint32_t row = 0; row < v->num_fields; row++) {
    const gpures_field_info *f = &v->fields[row];
    uint32_t entries = f->type == GPURES_FIELD_COUNT ? (uint32_t)gpures__field_get(f, desc, 0) : 0;
    if (entries > f->count) /* create says the same; said first, before any fd is looked at */
      return gpures__fail(op, GPURES_E_INVALID_VALUE, f->path,
                          "%s has %u entries; at most %u are allowed", f->path, entries, f->count);
  }
  uint32_t position = 0;
  for (uint32_t row = 0; row < v->num_fields; row++) {
    const gpures_field_info *f = &v->fields[row];
    uint32_t used = gpures__field_len(f, desc);
    for (uint32_t i = 0; i < used; i++) {
      char path[96];
      uint32_t at = f->offset + i * f->stride;
      if (f->type == GPURES_FIELD_PTR && gpures__field_get(f, desc, i) != 0) {
        gpures__field_path(f, i, path, sizeof path);
        return gpures__fail(op, GPURES_E_INVALID_VALUE, path,
                            "%s is an address of the sending process; addresses do not cross "
                            "processes", path);
      }
      if (f->type != GPURES_FIELD_FD) continue;
      gpures__field_path(f, i, path, sizeof path);
      if (!within(at, f->size, h.desc_size))
        return gpures__fail(op, GPURES_E_INVALID_VALUE, path,
                            "%s lies past the descriptor's %u bytes", path, h.desc_size);
      int64_t value = (int64_t)gpures__field_get(f, desc, i);
      if (value != (int64_t)position || position >= r->nfds)
        return gpures__fail(op, GPURES_E_INVALID_VALUE, path,
                            "%s is %lld; in a message it must be %u, the position of an attached "
                            "fd (%u arrived)", path, (long long)value, position, r->nfds);
      gpures__field_set(f, desc, i, (uint64_t)(int64_t)r->fds[position]);
      position++;
    }
  }
  if (position != r->nfds)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "fds",
                        "the descriptor names %u fds but %u arrived", position, r->nfds);

  gpures_create_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.flags = GPURES_CREATE_TAKE_OWNERSHIP;
  int status = gpures_create(h.kind, desc, &options, out_handle);
  if (status != GPURES_OK) return status; /* create's own message and field */
  r->nfds = 0; /* the handle owns them now */
  return GPURES_OK;
}

int gpures_channel_receive(int fd, uint32_t flags, gpures_handle *out_handle) {
  gpures__op op = op_named("receive", 0);
  if (!out_handle) return gpures__fail(op, GPURES_E_NULL_POINTER, "outHandle", "outHandle is null");
  *out_handle = 0;
  if (flags & ~GPURES_CHANNEL_NONBLOCK)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x", flags);
  /* 8-byte aligned, zeroed past what arrives; one byte more than a message may have. */
  uint64_t storage[(sizeof(wire_header) + MAX_DESC_BYTES + GPURES__DESC_MAX) / 8 + 1];
  unsigned char *buf = (unsigned char *)storage;
  for (;;) {
    memset(storage, 0, sizeof storage);
    struct iovec iov = {buf, sizeof(wire_header) + MAX_DESC_BYTES + 1};
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
    if (n < 0) {
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
      return os_fail(op, "", "recvmsg", err);
    }
    received r;
    r.nfds = 0;
    collect_fds(&mh, &r);
    int status;
    if (mh.msg_flags & MSG_CTRUNC) {
      status = gpures__fail(op, GPURES_E_INVALID_VALUE, "fds",
                            "more than %u fds arrived with one message", MAX_RECEIVED_FDS);
    } else if (mh.msg_flags & MSG_TRUNC) {
      status = gpures__fail(op, GPURES_E_INVALID_VALUE, "message",
                            "the message is longer than the %zu bytes a handle can take",
                            sizeof(wire_header) + MAX_DESC_BYTES);
    } else if (n == 0 && r.nfds == 0) {
      /* The end, unless the peer sent an empty datagram: then it is still there. */
      struct pollfd p = {fd, 0, 0};
      if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP))
        return gpures__fail(op, GPURES_E_STALE, "channel", "the peer closed the channel");
      status = gpures__fail(op, GPURES_E_INVALID_VALUE, "message", "the message is empty");
    } else {
      status = receive_message(op, buf, (size_t)n, &r, out_handle);
    }
    close_received(&r);
    return status;
  }
}

/* ----------------------------------------------------------------- mappings */

#if defined(__linux__)
/* <linux/dma-buf.h>, spelled out so that no kernel headers are needed. */
struct gpures__dma_buf_sync {
  uint64_t flags;
};
#define GPURES__DMA_BUF_SYNC_READ (1ull << 0)
#define GPURES__DMA_BUF_SYNC_WRITE (2ull << 0)
#define GPURES__DMA_BUF_SYNC_START (0ull << 2)
#define GPURES__DMA_BUF_SYNC_END (1ull << 2)
#define GPURES__DMA_BUF_IOCTL_SYNC _IOW('b', 0, struct gpures__dma_buf_sync)

/* 0 on success, ENOTTY when fd is not a dma-buf, else the errno. */
static int dma_buf_sync(int fd, uint32_t map_flags, uint64_t phase) {
  struct gpures__dma_buf_sync s = {phase};
  if (map_flags & GPURES_MAP_READ) s.flags |= GPURES__DMA_BUF_SYNC_READ;
  if (map_flags & GPURES_MAP_WRITE) s.flags |= GPURES__DMA_BUF_SYNC_WRITE;
  for (;;) {
    if (ioctl(fd, GPURES__DMA_BUF_IOCTL_SYNC, &s) == 0) return 0;
    if (errno != EINTR && errno != EAGAIN) return errno;
  }
}
#define SYNC_START GPURES__DMA_BUF_SYNC_START
#define SYNC_END GPURES__DMA_BUF_SYNC_END
#else
/* No dma-bufs here: every fd is "not a dma-buf". */
static int dma_buf_sync(int fd, uint32_t map_flags, uint64_t phase) {
  (void)fd, (void)map_flags, (void)phase;
  return ENOTTY;
}
#define SYNC_START 0u
#define SYNC_END 1u
#endif

typedef struct mapping {
  struct mapping *next;
  void *ptr;
  size_t size;
  int sync_fd; /* the dma-buf to end CPU access on, or -1 */
  uint32_t flags;
} mapping;

static gpures__lock mappings_lock;
static mapping *mappings;
static _Atomic uint64_t live_mappings;

int gpures_map(gpures_handle handle, uint32_t index, uint32_t flags, void **out_ptr,
               uint64_t *out_size) {
  gpures__op op = op_named("map", 0);
  if (!out_ptr) return gpures__fail(op, GPURES_E_NULL_POINTER, "outPtr", "outPtr is null");
  if (!out_size) return gpures__fail(op, GPURES_E_NULL_POINTER, "outSize", "outSize is null");
  *out_ptr = NULL;
  *out_size = 0;
  uint32_t kind = 0;
  int status = gpures_kind(handle, &kind);
  if (status != GPURES_OK) return refail(op, status);
  op.kind = kind;
  if (flags & ~(GPURES_MAP_READ | GPURES_MAP_WRITE))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x", flags);
  if (!flags)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags",
                        "flags must ask for GPURES_MAP_READ, GPURES_MAP_WRITE or both");
  int fd = -1;
  if ((status = gpures_dup_fd(handle, index, &fd)) != GPURES_OK) return refail(op, status);
  int64_t size = gpures__fd_size(fd);
  if (size <= 0 || (uint64_t)size > SIZE_MAX) {
    gpures__fd_close(fd);
    if (size == 0)
      return gpures__fail(op, GPURES_E_ZERO_SIZE, "index", "object %u has 0 bytes", index);
    return gpures__fail(op, GPURES_E_OS_ERROR, "index",
                        "the size of object %u cannot be read, so it cannot be mapped", index);
  }
  mapping *m = gpures__alloc(sizeof *m);
  if (!m) {
    gpures__fd_close(fd);
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for another mapping");
  }
  int prot = ((flags & GPURES_MAP_READ) ? PROT_READ : 0) | ((flags & GPURES_MAP_WRITE) ? PROT_WRITE : 0);
  void *ptr = mmap(NULL, (size_t)size, prot, MAP_SHARED, fd, 0);
  if (ptr == MAP_FAILED) {
    int err = errno;
    gpures__fd_close(fd);
    gpures__free(m);
    return os_fail(op, "index", "mmap", err);
  }
  int err = dma_buf_sync(fd, flags, SYNC_START);
  if (err == ENOTTY) { /* a memfd or a file: nothing to synchronise with */
    gpures__fd_close(fd);
    fd = -1;
  } else if (err != 0) {
    munmap(ptr, (size_t)size);
    gpures__fd_close(fd);
    gpures__free(m);
    return os_fail(op, "index", "DMA_BUF_IOCTL_SYNC(SYNC_START)", err);
  }
  m->ptr = ptr;
  m->size = (size_t)size;
  m->sync_fd = fd;
  m->flags = flags;
  gpures__lock_acquire(&mappings_lock);
  m->next = mappings;
  mappings = m;
  gpures__lock_release(&mappings_lock);
  atomic_fetch_add_explicit(&live_mappings, 1, memory_order_relaxed);
  *out_ptr = ptr;
  *out_size = (uint64_t)size;
  return GPURES_OK;
}

int gpures_unmap(void *ptr) {
  gpures__op op = op_named("unmap", 0);
  if (!ptr) return gpures__fail(op, GPURES_E_NULL_POINTER, "ptr", "ptr is null");
  gpures__lock_acquire(&mappings_lock);
  mapping **link = &mappings;
  while (*link && (*link)->ptr != ptr) link = &(*link)->next;
  mapping *m = *link;
  if (m) *link = m->next;
  gpures__lock_release(&mappings_lock);
  if (!m)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "ptr",
                        "%p is not a mapping gpures_map() made (or it was unmapped)", ptr);
  int err = 0;
  if (m->sync_fd >= 0) {
    err = dma_buf_sync(m->sync_fd, m->flags, SYNC_END);
    gpures__fd_close(m->sync_fd);
  }
  munmap(m->ptr, m->size);
  gpures__free(m);
  atomic_fetch_sub_explicit(&live_mappings, 1, memory_order_relaxed);
  if (err) return os_fail(op, "", "DMA_BUF_IOCTL_SYNC(SYNC_END) (the mapping is gone)", err);
  return GPURES_OK;
}

uint64_t gpures_live_mappings(void) {
  return atomic_load_explicit(&live_mappings, memory_order_relaxed);
}
#endif
