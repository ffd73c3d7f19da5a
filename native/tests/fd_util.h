/*
** fd_util.h: file-descriptor helpers for the tests that use memfds (Linux).
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
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

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

#define FOURCC(a, b, c, d) \
  ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

/* An RgbaU8 32x32 frame in one object of 4096 bytes. */
static inline gpures_dma_buf_handle_desc rgba_dma_buf(int fd) {
  gpures_dma_buf_handle_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.num_fds = 1;
  d.fds[0] = fd;
  d.fourcc = FOURCC('A', 'B', '2', '4');
  d.width = 32;
  d.height = 32;
  d.num_planes = 1;
  d.planes[0] = (gpures_dma_buf_plane){0, 0, 128};
  return d;
}

/* An NV12 64x64 frame: plane 0 in fds[0] (4096 bytes), plane 1 in fds[1] (2048). */
static inline gpures_dma_buf_handle_desc nv12_dma_buf(int luma, int chroma) {
  gpures_dma_buf_handle_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.num_fds = 2;
  d.fds[0] = luma;
  d.fds[1] = chroma;
  d.fourcc = FOURCC('N', 'V', '1', '2');
  d.width = 64;
  d.height = 64;
  d.num_planes = 2;
  d.planes[0] = (gpures_dma_buf_plane){0, 0, 64};
  d.planes[1] = (gpures_dma_buf_plane){1, 0, 64};
  return d;
}

#endif /* GPURES_TEST_FD_UTIL_H */
