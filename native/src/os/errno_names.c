/*
** errno_names.c: what a person reading an error needs, on every platform:
** the errno symbol to search for and what it means here. strerror() gives
** neither reliably: its text differs between libcs and locales, and it is not
** thread-safe everywhere. Windows has the same names: the socket ones are the
** CRT's POSIX supplement (100 and up).
*/
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <stdio.h>

#include "../internal.h"

#define ERRNO_LIST(X)                                                      \
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
  X(EIO, "an input/output error")                                         \
  X(ETIMEDOUT, "the peer did not answer in time")                          \
  X(EHOSTUNREACH, "no route to the host")                                  \
  X(ENETUNREACH, "the network is unreachable")

const char *gpures__errno_name(int err) {
  /* Per thread: two threads failing at once must not share the digits. */
  static GPURES__THREAD_LOCAL char unknown[24];
  switch (err) {
#define NAME(e, meaning) \
  case e:                \
    return #e;
    ERRNO_LIST(NAME)
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
    ERRNO_LIST(MEANING)
#undef MEANING
  }
  return "an error this library has no words for";
}
