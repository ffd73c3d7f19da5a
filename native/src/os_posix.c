/*
** os_posix.c: the POSIX side of file descriptors and locking (Linux, macOS,
** the BSDs, ...). POSIX.1-2008 only, so that no libc extension slips in:
** .ci/portability.sh compiles it for macOS against a libc that hides them.
*/
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
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

/*
** The thread-exit hook: a pthread key whose destructor closes the queues the
** thread bound. Made on first use; deleted when the library is unloaded
** (a Deno Worker's dlclose can come before its thread ends), since a
** destructor left registered would then jump into code that is gone.
*/
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static int exit_key_error; /* pthread_key_create's, or 0 */
static atomic_bool exit_key_made;

static void make_exit_key(void) {
  exit_key_error = pthread_key_create(&exit_key, gpures__event_thread_exit);
  atomic_store_explicit(&exit_key_made, exit_key_error == 0, memory_order_release);
}

void *gpures__thread_exit_value(void) {
  pthread_once(&exit_once, make_exit_key);
  return exit_key_error ? NULL : pthread_getspecific(exit_key);
}

int gpures__thread_exit_value_set(void *value) {
  pthread_once(&exit_once, make_exit_key);
  return exit_key_error ? exit_key_error : pthread_setspecific(exit_key, value);
}

#if defined(__GNUC__)
__attribute__((destructor)) static void delete_exit_key(void) {
  if (atomic_load_explicit(&exit_key_made, memory_order_acquire)) (void)pthread_key_delete(exit_key);
}
#endif

/*
** What a person reading an error needs: the symbol to search for and what it
** means here. strerror() gives neither reliably: its text differs between
** libcs and locales, and it is not thread-safe everywhere.
*/
#define GPURES__ERRNO_LIST(X)                                              \
  X(EMFILE, "the process has no free file descriptors")                    \
  X(ENFILE, "the system has no free file descriptors")                     \
  X(EBADF, "not an open file descriptor")                                  \
  X(EACCES, "permission denied")                                           \
  X(EPERM, "operation not permitted")                                      \
  X(ENOENT, "no such file or directory")                                   \
  X(EEXIST, "it already exists")                                           \
  X(EINVAL, "an argument was invalid")                                     \
  X(ENOMEM, "out of memory")                                               \
  X(ENOSPC, "no space left on the device")                                 \
  X(ENOTDIR, "a path component is not a directory")                        \
  X(EISDIR, "it is a directory")                                           \
  X(EADDRINUSE, "the address is already in use")                           \
  X(ECONNREFUSED, "nothing is listening there")                            \
  X(ENAMETOOLONG, "the name is too long")                                  \
  X(EAGAIN, "try again later; it would block")                             \
  X(ENOTSOCK, "not a socket")                                              \
  X(EPIPE, "the other end was closed")                                     \
  X(ECONNRESET, "the other end reset the connection")                      \
  X(ELOOP, "too many symbolic links")                                      \
  X(EROFS, "the file system is read-only")                                 \
  X(ENODEV, "no such device")                                              \
  X(ENOTTY, "the fd does not support this control operation")              \
  X(EOPNOTSUPP, "the operation is not supported")                          \
  X(EFAULT, "a bad address was passed")                                    \
  X(EINTR, "interrupted by a signal")                                      \
  X(EIO, "an input/output error")

const char *gpures__errno_name(int err) {
  /* Per thread: two threads failing at once must not share the digits. */
  static _Thread_local char unknown[24];
  switch (err) {
#define NAME(e, meaning) \
  case e:                \
    return #e;
    GPURES__ERRNO_LIST(NAME)
#undef NAME
  }
  snprintf(unknown, sizeof unknown, "errno %d", err);
  return unknown;
}

const char *gpures__errno_meaning(int err) {
  switch (err) {
#define MEANING(e, meaning) \
  case e:                   \
    return meaning;
    GPURES__ERRNO_LIST(MEANING)
#undef MEANING
  }
  return "an error this library has no words for";
}
#endif
