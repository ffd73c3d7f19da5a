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
#include <unistd.h>

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

#endif /* GPURES_TEST_FD_UTIL_H */
