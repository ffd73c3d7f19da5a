/*
** os_posix.c: the POSIX side of file descriptors and locking (Linux, macOS,
** the BSDs, ...). POSIX.1-2008 only, so that no libc extension slips in:
** .ci/portability.sh compiles it for macOS against a libc that hides them.
*/
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

void gpures__lock_acquire(gpures__lock *l) {
  /* Held only for a few instructions, so spinning beats a kernel mutex. */
  while (atomic_flag_test_and_set_explicit(&l->flag, memory_order_acquire)) sched_yield();
}

void gpures__lock_release(gpures__lock *l) {
  atomic_flag_clear_explicit(&l->flag, memory_order_release);
}

int gpures__fd_dup(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, 0); }

int gpures__fd_adopt(int fd) {
  int flags = fcntl(fd, F_GETFD);
  if (flags < 0) return -1;
  if (flags & FD_CLOEXEC) return 0;
  return fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

void gpures__fd_close(int fd) {
  /* Retrying close() after EINTR can close an fd another thread just got. */
  (void)close(fd);
}

int gpures__fd_valid(int fd) { return fd >= 0 && fcntl(fd, F_GETFD) >= 0; }

int64_t gpures__fd_size(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return -1;
  if (S_ISREG(st.st_mode)) return (int64_t)st.st_size; /* memfd and files */
  if (S_ISCHR(st.st_mode) || S_ISDIR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
    return -1;
  /* A dma-buf reports its size through lseek; its file offset has no other use. */
  off_t end = lseek(fd, 0, SEEK_END);
  if (end < 0) return -1;
  (void)lseek(fd, 0, SEEK_SET);
  return (int64_t)end;
}
#endif
