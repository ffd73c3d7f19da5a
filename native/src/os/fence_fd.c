/*
** fence_fd.c: what kind of fence an fd is, as far as the kernel says. A
** SyncPoint that takes an fd refuses one of the wrong kind at create: a pipe
** or a file in a CpuFence would read as "signalled" at once, and a consumer
** would touch memory its producer is still writing.
*/
#if defined(__linux__)
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sync_file.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#endif

#include "../internal.h"

#if defined(__linux__)
#include <sys/stat.h>

/*
** Test hook (exported for the tests, as table/slots.c's are; not in
** gpures.h): no kernel here makes sync_files or syncobjs without a GPU, so
** the fixture tests declare a memfd one. Keyed by the file, not the fd
** number, so a later fd that reuses the number is not taken for one.
*/
static struct { dev_t dev; ino_t ino; int type; } stand_ins[16];
static gpures__lock stand_in_lock;
GPURES__LOCKS_ACROSS_FORK(stand_in_lock_across_fork, &stand_in_lock, 1, sizeof stand_in_lock)

GPURES_API void gpures__test_fence_fd_as(int fd, int type) {
  struct stat st;
  if (fstat(fd, &st) != 0) return;
  gpures__lock_acquire(&stand_in_lock);
  static unsigned next;
  stand_ins[next % 16].dev = st.st_dev;
  stand_ins[next % 16].ino = st.st_ino;
  stand_ins[next % 16].type = type;
  next++;
  gpures__lock_release(&stand_in_lock);
}

static int stand_in(int fd) {
  struct stat st;
  int type = 0;
  if (fstat(fd, &st) != 0) return 0;
  gpures__lock_acquire(&stand_in_lock);
  for (unsigned i = 0; i < 16; i++)
    if (stand_ins[i].type && stand_ins[i].dev == st.st_dev && stand_ins[i].ino == st.st_ino)
      type = stand_ins[i].type;
  gpures__lock_release(&stand_in_lock);
  return type;
}

int gpures__fence_fd_type(int fd) {
  int declared = stand_in(fd);
  if (declared) return declared;
  struct sync_file_info info;
  memset(&info, 0, sizeof info);
  if (ioctl(fd, SYNC_IOC_FILE_INFO, &info) == 0) return GPURES__FENCE_FD_SYNC_FILE;
  char path[64], link[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, link, sizeof link - 1);
  if (n < 0) return GPURES__FENCE_FD_UNKNOWN; /* no /proc: the kernel cannot be asked */
  link[n] = '\0';
  if (strcmp(link, "anon_inode:[eventfd]") == 0) return GPURES__FENCE_FD_EVENTFD;
  if (strcmp(link, "anon_inode:syncobj") == 0) return GPURES__FENCE_FD_SYNCOBJ;
  if (strcmp(link, "anon_inode:sync_file") == 0) return GPURES__FENCE_FD_SYNC_FILE;
  return GPURES__FENCE_FD_OTHER;
}
#else
GPURES_API void gpures__test_fence_fd_as(int fd, int type) { (void)fd, (void)type; }
int gpures__fence_fd_type(int fd) {
  (void)fd;
  return GPURES__FENCE_FD_UNKNOWN;
}
#endif

const char *gpures__fence_fd_name(int type) {
  switch (type) {
    case GPURES__FENCE_FD_SYNC_FILE: return "a sync_file";
    case GPURES__FENCE_FD_EVENTFD: return "an eventfd";
    case GPURES__FENCE_FD_SYNCOBJ: return "a DRM syncobj";
    case GPURES__FENCE_FD_OTHER: return "not a fence";
    default: return "of a kind the kernel did not say";
  }
}
