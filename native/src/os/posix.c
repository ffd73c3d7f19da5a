/*
** posix.c: the POSIX side of file descriptors, locking and the thread-exit
** hook (Linux, macOS, the BSDs, ...). POSIX.1-2008 only, so that no libc
** extension slips in: .ci/portability.sh compiles it for macOS against a libc
** that hides them. errno_names.c has the errno names of both platforms.
*/
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../internal.h"

uint64_t gpures_clock_us(void) {
  struct timespec t;
  if (clock_gettime(CLOCK_MONOTONIC, &t) != 0) return 0; /* cannot fail with a valid clock id */
  return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

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
** The thread-exit hook: a pthread key whose destructor hands the thread's
** value to the caller's at_exit (the event queues close the queues the
** thread bound). Made on first use; deleted when the library is unloaded
** (a Deno Worker's dlclose can come before its thread ends), since a
** destructor left registered would then jump into code that is gone.
*/
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static int exit_key_error; /* pthread_key_create's, or 0 */
static atomic_bool exit_key_made;
static void (*_Atomic exit_fn)(void *value);

static void run_exit_fn(void *value) {
  void (*fn)(void *) = atomic_load_explicit(&exit_fn, memory_order_acquire);
  if (fn) fn(value); /* always set: a value is only ever set with it */
}

static void make_exit_key(void) {
  exit_key_error = pthread_key_create(&exit_key, run_exit_fn);
  atomic_store_explicit(&exit_key_made, exit_key_error == 0, memory_order_release);
}

void *gpures__thread_exit_value(void) {
  pthread_once(&exit_once, make_exit_key);
  return exit_key_error ? NULL : pthread_getspecific(exit_key);
}

int gpures__thread_exit_value_set(void *value, void (*at_exit)(void *value)) {
  atomic_store_explicit(&exit_fn, at_exit, memory_order_release);
  pthread_once(&exit_once, make_exit_key);
  return exit_key_error ? exit_key_error : pthread_setspecific(exit_key, value);
}

#if defined(__GNUC__)
__attribute__((destructor)) static void delete_exit_key(void) {
  if (atomic_load_explicit(&exit_key_made, memory_order_acquire)) (void)pthread_key_delete(exit_key);
}
#endif

#endif
