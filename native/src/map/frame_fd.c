/*
** frame_fd.c: which file descriptors may back a frame, and which may be
** mapped without the memory shrinking under the mapping.
**
** A MAP_SHARED mapping raises SIGBUS on any access past the end of its file.
** Whoever holds another fd of the same file (the peer that sent it, or other
** code in this process) can truncate it at any moment, so gpures maps, and
** accepts from a peer, only objects whose size cannot shrink:
**   - a dma-buf: its size is fixed when it is exported;
**   - a memfd sealed with F_SEAL_SHRINK. A memfd that still allows sealing is
**     sealed here: shrinking a frame buffer is never legitimate, and sealing
**     closes the window before the size is read.
** A regular file, or a memfd that cannot be sealed, is accepted only when the
** caller says it trusts the producer (GPURES_MAP_ALLOW_UNSEALED,
** GPURES_CHANNEL_ALLOW_UNSEALED). Pipes, sockets, directories and devices
** cannot hold a frame at all, nor, where memory is wanted (a frame's buffer,
** not its fence), can the anonymous inodes known not to be memory (an
** eventfd, a sync_file, ...: a driver given one as memory was seen to block in
** its import for good). Another anonymous inode is accepted: it cannot be
** truncated, and gpures_map() refuses it anyway when its size cannot be read.
** A driver's opaque export (VkOpaqueFd, CudaVmmFd, an opaque-fd semaphore) may
** also be a character device: NVIDIA's are opens of /dev/nvidiactl (seen on
** the H100 and H200), which the importing driver resolves; nothing maps them.
*/
#if !defined(_WIN32)
#if defined(__linux__)
#define _GNU_SOURCE /* F_GET_SEALS, F_ADD_SEALS, fstatfs */
#else
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/vfs.h>
#endif

#include "../internal.h"

#define DMA_BUF_MAGIC 0x444d4142u /* "DMAB", <linux/magic.h> */

/* What a file of this type is called in an error, or NULL when it may back a frame. */
static const char *unfit_type(mode_t mode) {
  if (S_ISFIFO(mode)) return "a pipe";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return NULL; /* a regular file, or an anonymous inode (type bits 0) */
}

/* What an anonymous inode known not to be memory is called, else NULL (Linux names them in /proc). */
static const char *unfit_anonymous(int fd) {
#if defined(__linux__)
  static const char *const not_memory[] = {
      "anon_inode:[eventfd]", "anon_inode:sync_file",   "anon_inode:syncobj_file",
      "anon_inode:[timerfd]", "anon_inode:[signalfd]",  "anon_inode:[eventpoll]",
      "anon_inode:[pidfd]",   "anon_inode:inotify",     "anon_inode:[userfaultfd]",
      "anon_inode:[io_uring]", "anon_inode:[perf_event]", "anon_inode:[fanotify]",
      "anon_inode:syncobj"};
  char path[64], link[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, link, sizeof link - 1);
  if (n <= 0) return NULL; /* no /proc: the kernel cannot be asked */
  link[n] = '\0';
  for (size_t i = 0; i < sizeof not_memory / sizeof not_memory[0]; i++)
    if (strcmp(link, not_memory[i]) == 0) return not_memory[i] + strlen("anon_inode:");
#else
  (void)fd;
#endif
  return NULL;
}

static int is_dma_buf(int fd) {
#if defined(__linux__)
  struct statfs sf;
  return fstatfs(fd, &sf) == 0 && (uint32_t)sf.f_type == DMA_BUF_MAGIC;
#else
  (void)fd;
  return 0;
#endif
}

static int refuse(gpures__op op, const char *field, int fd, const char *why) {
  return gpures__fail(op, GPURES_E_INVALID_VALUE, field, "%s (fd %d) %s", field, fd, why);
}

/* A regular file: a memfd sealed (or sealable) against shrinking passes. */
static int check_file(gpures__op op, const char *field, int fd) {
#if defined(__linux__)
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 && errno == EINVAL)
    return refuse(op, field, fd,
                  "is a regular file, which any process that can write it can truncate under "
                  "a mapping; use a memfd sealed with F_SEAL_SHRINK, or trust the producer "
                  "explicitly (allowUnsealed)");
  if (seals < 0) return gpures__os_fail(op, field, "fcntl(F_GET_SEALS)", errno);
  if (seals & F_SEAL_SHRINK) return GPURES_OK;
  if (!(seals & F_SEAL_SEAL) && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0) return GPURES_OK;
  return refuse(op, field, fd,
                "is a memfd that is not sealed against shrinking and cannot be sealed (made "
                "without MFD_ALLOW_SEALING); seal it with F_SEAL_SHRINK, or trust the producer "
                "explicitly (allowUnsealed)");
#else
  return refuse(op, field, fd,
                "is a regular file, which any process that can write it can truncate under a "
                "mapping; trust the producer explicitly (allowUnsealed) to use it");
#endif
}

int gpures__check_frame_fd(gpures__op op, const char *field, int fd, uint32_t flags) {
  struct stat st;
  if (fstat(fd, &st) != 0) return gpures__os_fail(op, field, "fstat", errno);
  if ((flags & GPURES__FRAME_FD_OPAQUE) && S_ISCHR(st.st_mode)) return GPURES_OK;
  const char *unfit = unfit_type(st.st_mode);
  if (unfit) {
    char why[64];
    snprintf(why, sizeof why, "is %s, which cannot hold a frame", unfit);
    return refuse(op, field, fd, why);
  }
  if ((flags & GPURES__FRAME_FD_MEMORY) && !S_ISREG(st.st_mode) && (unfit = unfit_anonymous(fd))) {
    char why[80];
    snprintf(why, sizeof why, "is %s, which cannot hold a frame", unfit);
    return refuse(op, field, fd, why);
  }
  if (!S_ISREG(st.st_mode)) return GPURES_OK; /* a dma-buf or another anonymous inode */
  if ((flags & GPURES__FRAME_FD_ALLOW_UNSEALED) || is_dma_buf(fd)) return GPURES_OK;
  return check_file(op, field, fd);
}
#endif
