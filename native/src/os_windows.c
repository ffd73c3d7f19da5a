/* os_windows.c: Windows has no fd-owning kinds; the lock and the thread-exit hook are real. */
#if defined(_WIN32)
#include <errno.h>
#include <stdio.h>
#include <windows.h>

#include "internal.h"

void gpures__lock_acquire(gpures__lock *l) {
  while (atomic_flag_test_and_set_explicit(&l->flag, memory_order_acquire)) SwitchToThread();
}

void gpures__lock_release(gpures__lock *l) {
  atomic_flag_clear_explicit(&l->flag, memory_order_release);
}

/* The fd-owning kinds are refused on Windows before any of these can run. */
int gpures__fd_dup(int fd) { (void)fd; return -1; }
int gpures__fd_adopt(int fd) { (void)fd; return -1; }
void gpures__fd_close(int fd) { (void)fd; }
int gpures__fd_valid(int fd) { (void)fd; return 0; }
int64_t gpures__fd_size(int fd) { (void)fd; return -1; }

/*
** The thread-exit hook: an FLS index whose callback closes the queues the
** thread bound (it runs at thread exit, like a pthread key's destructor).
** Freed when the library is unloaded, which runs the callback for every
** thread still holding a list, instead of leaving it to run at their exit
** in code that is gone.
*/
static INIT_ONCE exit_once = INIT_ONCE_STATIC_INIT;
static DWORD exit_index = FLS_OUT_OF_INDEXES;

static VOID WINAPI on_thread_exit(PVOID value) {
  if (value) gpures__event_thread_exit(value);
}

static BOOL CALLBACK make_exit_index(PINIT_ONCE once, PVOID param, PVOID *ctx) {
  (void)once, (void)param, (void)ctx;
  exit_index = FlsAlloc(on_thread_exit);
  return TRUE;
}

void *gpures__thread_exit_value(void) {
  InitOnceExecuteOnce(&exit_once, make_exit_index, NULL, NULL);
  return exit_index == FLS_OUT_OF_INDEXES ? NULL : FlsGetValue(exit_index);
}

int gpures__thread_exit_value_set(void *value) {
  InitOnceExecuteOnce(&exit_once, make_exit_index, NULL, NULL);
  if (exit_index == FLS_OUT_OF_INDEXES) return EAGAIN; /* the process has no FLS index left */
  return FlsSetValue(exit_index, value) ? 0 : ENOMEM;
}

BOOL WINAPI DllMain(HINSTANCE dll, DWORD reason, LPVOID reserved);
BOOL WINAPI DllMain(HINSTANCE dll, DWORD reason, LPVOID reserved) {
  (void)dll;
  /* reserved is NULL for FreeLibrary; at process exit the threads are gone already. */
  if (reason == DLL_PROCESS_DETACH && reserved == NULL && exit_index != FLS_OUT_OF_INDEXES)
    FlsFree(exit_index);
  return TRUE;
}

/*
** The CRT's errno values, for the same messages as on POSIX (os_posix.c has
** the reasons). The socket ones are the CRT's POSIX supplement (100 and up).
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

#if defined(_MSC_VER)
#  define GPURES__THREAD_LOCAL __declspec(thread)
#else
#  define GPURES__THREAD_LOCAL _Thread_local
#endif

const char *gpures__errno_name(int err) {
  static GPURES__THREAD_LOCAL char unknown[24];
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
