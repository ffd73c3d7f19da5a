/*
** fd_util.h: file-descriptor helpers for the tests that use memfds (Linux).
** The DMA-BUF and VkOpaqueFd descriptors over them come from fixtures.gen.h:
** gpures_fixture_dma_buf_handle(luma, chroma) (NV12 64x64, plane 0 in 4096
** bytes, plane 1 in 2048), gpures_fixture_dma_buf_handle_rgba(fd) (RGBA
** 32x32 in one object of 4096 bytes), gpures_fixture_vk_opaque_fd(fd).
*/
#ifndef GPURES_TEST_FD_UTIL_H
#define GPURES_TEST_FD_UTIL_H

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.gen.h"
#include "gpures.h"

/* A memfd of `size` bytes; close-on-exec only when `cloexec`. Aborts on failure. */
static inline int make_memfd(long size, int cloexec) {
  int fd = memfd_create("gpures-test", cloexec ? MFD_CLOEXEC : 0);
  if (fd < 0 || ftruncate(fd, size) != 0) {
    perror("memfd_create/ftruncate");
    abort();
  }
  return fd;
}

/* The lowest fd number not open. */
static inline int lowest_free_fd(void) {
  int fd = fcntl(0, F_DUPFD_CLOEXEC, 0);
  close(fd);
  return fd;
}

/*
** Leaves this process no free fd: the RLIMIT_NOFILE soft limit at the lowest
** free fd number (*was keeps the limits to restore). 0 where that does not
** bind every call (under valgrind): the caller then skips the checks.
*/
static inline int without_free_fds(struct rlimit *was) {
  const char *preload = getenv("LD_PRELOAD"); /* valgrind's limit covers only some calls */
  if (preload && strstr(preload, "vgpreload")) {
    fprintf(stderr, "    (under valgrind RLIMIT_NOFILE does not bind: EMFILE checks skipped)\n");
    return 0;
  }
  getrlimit(RLIMIT_NOFILE, was);
  struct rlimit none = {(rlim_t)lowest_free_fd(), was->rlim_max};
  setrlimit(RLIMIT_NOFILE, &none);
  int probe = fcntl(0, F_DUPFD_CLOEXEC, 0);
  if (probe < 0 && errno == EMFILE) return 1;
  if (probe >= 0) close(probe);
  setrlimit(RLIMIT_NOFILE, was);
  fprintf(stderr, "    (lowering RLIMIT_NOFILE has no effect here: EMFILE checks skipped)\n");
  return 0;
}

/* 1 when fd names an open file. */
static inline int fd_is_open(int fd) { return fd >= 0 && fcntl(fd, F_GETFD) != -1; }

/* 1 when fd is closed: F_GETFD fails with EBADF. */
static inline int fd_is_closed(int fd) {
  errno = 0;
  return fcntl(fd, F_GETFD) == -1 && errno == EBADF;
}

/* 1 when fd is open and close-on-exec. */
static inline int fd_is_cloexec(int fd) {
  int flags = fcntl(fd, F_GETFD);
  return flags != -1 && (flags & FD_CLOEXEC);
}

/* 1 when a and b are open and name the same file. */
static inline int same_file(int a, int b) {
  struct stat sa, sb;
  if (fstat(a, &sa) != 0 || fstat(b, &sb) != 0) return 0;
  return sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

/* The number of open fds of this process (entries of /proc/self/fd). */
static inline int count_open_fds(void) {
  DIR *dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL)
    if (e->d_name[0] != '.') n++;
  closedir(dir);
  return n; /* counts the directory's own fd too, the same way every time */
}

/* sendmsg() of `len` bytes with up to 32 fds attached (SCM_RIGHTS); what sendmsg returns. */
static inline ssize_t send_with_fds(int sock, const void *bytes, size_t len, const int *fds,
                                    size_t nfds, int flags) {
  struct iovec iov = {(void *)bytes, len};
  union {
    struct cmsghdr align;
    unsigned char bytes[CMSG_SPACE(sizeof(int) * 32)];
  } c;
  if (nfds > 32) {
    errno = EINVAL;
    return -1;
  }
  memset(&c, 0, sizeof c);
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (nfds) {
    mh.msg_control = c.bytes;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
  }
  return sendmsg(sock, &mh, flags);
}

/*
** recvmsg() of one datagram into buf, closing every fd attached (up to 16) as
** it comes; what recvmsg returns. *nfds, when given, counts the fds.
*/
static inline ssize_t recv_closing_fds(int sock, void *buf, size_t cap, int flags,
                                       uint32_t *nfds) {
  struct iovec iov = {buf, cap};
  union {
    struct cmsghdr align;
    unsigned char bytes[CMSG_SPACE(sizeof(int) * 16)];
  } c;
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = c.bytes;
  mh.msg_controllen = sizeof c.bytes;
  ssize_t n = recvmsg(sock, &mh, flags);
  uint32_t seen = 0;
  for (struct cmsghdr *cm = n < 0 ? NULL : CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(cm) + i * sizeof fd, sizeof fd);
      close(fd);
    }
    seen += (uint32_t)k;
  }
  if (nfds) *nfds = seen;
  return n;
}

#define FOURCC(a, b, c, d) \
  ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

#endif /* GPURES_TEST_FD_UTIL_H */
