/*
** access.c: the fences a frame carries, used. begin/end access is the common
** case in one call each side (as Dawn's BeginAccess/EndAccess); the dma-buf
** calls bridge a buffer's implicit fences (what the kernel tracks for it) to
** a SyncFile and back, where the kernel has them (6.0 and later).
*/
#if defined(__linux__)
#define _GNU_SOURCE
#include <errno.h>
#include <linux/dma-buf.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <time.h>
#endif

#include <stdio.h>

#include "sync.h"

#if defined(__linux__)
/*
** The buffer's implicit fences, for a DmaBufHandle: poll() of a dma-buf fd
** reports POLLOUT once every fence on it (readers' and writers') is
** signalled, on every kernel since dma-buf polling began; a memfd is ready
** at once, as it has none.
*/
static int wait_implicit(gpures__op op, gpures_handle handle, int64_t timeout_ns) {
  gpures_dma_buf_handle_desc d;
  uint32_t kind, refcount;
  int status = gpures__snapshot(handle, op.verb, &kind, &refcount, &d);
  if (status != GPURES_OK || kind != GPURES_KIND_DMA_BUF_HANDLE) return status;
  int64_t deadline = timeout_ns < 0 ? INT64_MAX : gpures__now_ns() + timeout_ns;
  for (uint32_t i = 0; i < d.num_fds; i++) {
    struct pollfd p = {d.fds[i], POLLOUT, 0};
    int n = gpures__poll_until(&p, 1, deadline);
    char field[16];
    snprintf(field, sizeof field, "fds[%u]", i);
    if (n < 0) return gpures__os_fail(op, field, "poll", errno);
    if (n == 0)
      return gpures__fail(op, GPURES_E_TIMED_OUT, field, "the buffer's implicit fences did not signal in time");
    if (p.revents & (POLLNVAL | POLLERR)) /* never taken for "ready" */
      return gpures__os_fail(op, field, "poll", (p.revents & POLLNVAL) ? EBADF : EIO);
  }
  return GPURES_OK;
}
#else
static int wait_implicit(gpures__op op, gpures_handle handle, int64_t timeout_ns) {
  (void)op, (void)handle, (void)timeout_ns;
  return GPURES_OK;
}
#endif

int gpures_begin_access(gpures_handle handle, int64_t timeout_ns) {
  gpures__op op = {"begin access to", 0};
  /* Our own reference: the fds polled below stay open even if the caller's goes meanwhile. */
  int status = gpures_clone(handle);
  if (status != GPURES_OK) return gpures__refail(op, status);
  (void)gpures_kind(handle, &op.kind);
  gpures_handle acquire = 0, release = 0;
  status = gpures_fences_get(handle, &acquire, &release);
  (void)gpures_release(release);
  int64_t start = gpures__now_ns();
  if (status == GPURES_OK && acquire && (status = gpures_sync_wait(acquire, timeout_ns)) != GPURES_OK) {
    char why[512]; /* the wait's own message, copied before this failure replaces it */
    snprintf(why, sizeof why, "the acquire fence: %s", gpures_last_error());
    status = gpures__fail(op, status, "acquire", "%s", why);
  }
  if (status == GPURES_OK) {
    int64_t left = timeout_ns < 0 ? -1 : timeout_ns - (gpures__now_ns() - start);
    status = wait_implicit(op, handle, left < 0 && timeout_ns >= 0 ? 0 : left);
  }
  /* Reached: the frame needs it no more (unless someone set another meanwhile). */
  if (status == GPURES_OK && acquire) (void)gpures__fences_drop_acquire(handle, acquire);
  (void)gpures_release(acquire);
  (void)gpures_release(handle);
  return status;
}

int gpures_end_access(gpures_handle handle, gpures_handle release) {
  gpures__op op = {"end access to", 0};
  (void)gpures_kind(handle, &op.kind);
  return gpures__fences_put_release(op, handle, release);
}

/* ------------------------------------------------------ dma-buf sync files */

#if defined(__linux__) && defined(DMA_BUF_IOCTL_EXPORT_SYNC_FILE)
static int dma_buf_fd(gpures__op op, gpures_handle dma_buf, uint32_t index, char *field,
                      size_t cap, int *out_fd) {
  gpures_dma_buf_handle_desc d;
  uint32_t kind, refcount;
  int status = gpures__snapshot(dma_buf, op.verb, &kind, &refcount, &d);
  if (status != GPURES_OK) return gpures__refail(op, status);
  if (kind != GPURES_KIND_DMA_BUF_HANDLE)
    return gpures__fail(op, GPURES_E_WRONG_KIND, "handle", "%s is not a DmaBufHandle",
                        gpures__kind_name(kind));
  snprintf(field, cap, "fds[%u]", index);
  if (index >= d.num_fds)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "index", "index %u: the buffer has %u fds",
                        index, d.num_fds);
  *out_fd = d.fds[index];
  return GPURES_OK;
}

static uint32_t ioctl_flags(uint32_t flags) {
  return ((flags & GPURES_DMA_BUF_SYNC_READ) ? DMA_BUF_SYNC_READ : 0) |
         ((flags & GPURES_DMA_BUF_SYNC_WRITE) ? DMA_BUF_SYNC_WRITE : 0);
}

static int check_flags(gpures__op op, uint32_t flags) {
  if (flags == 0 || (flags & ~(GPURES_DMA_BUF_SYNC_READ | GPURES_DMA_BUF_SYNC_WRITE)))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags",
                        "flags 0x%x: READ, WRITE or both", flags);
  return GPURES_OK;
}

static int ioctl_failed(gpures__op op, const char *field, const char *what, int err) {
  if (err == ENOTTY || err == EINVAL || err == EOPNOTSUPP)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, field,
                        "%s: %s is not a dma-buf of a kernel with sync files (6.0 and later): %s",
                        what, field, gpures__errno_name(err));
  return gpures__os_fail(op, field, what, err);
}

int gpures_dma_buf_export_sync_file(gpures_handle dma_buf, uint32_t index, uint32_t flags,
                                    gpures_handle *out_sync) {
  gpures__op op = {"export a sync file from", GPURES_KIND_DMA_BUF_HANDLE};
  if (!out_sync) return gpures__fail(op, GPURES_E_NULL_POINTER, "outSync", "outSync is null");
  *out_sync = 0;
  int status = check_flags(op, flags);
  if (status != GPURES_OK) return status;
  if ((status = gpures_clone(dma_buf)) != GPURES_OK) return gpures__refail(op, status);
  char field[16] = "";
  int fd = -1;
  status = dma_buf_fd(op, dma_buf, index, field, sizeof field, &fd);
  struct dma_buf_export_sync_file arg = {ioctl_flags(flags), -1};
  if (status == GPURES_OK && ioctl(fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &arg) != 0)
    status = ioctl_failed(op, field, "DMA_BUF_IOCTL_EXPORT_SYNC_FILE", errno);
  (void)gpures_release(dma_buf);
  if (status != GPURES_OK) return status;
  gpures_sync_file_desc d = {sizeof d, 0, arg.fd, 0};
  gpures_create_options o = {sizeof o, GPURES_CREATE_TAKE_OWNERSHIP, {0}, 0, 0, 0};
  if ((status = gpures_create(GPURES_KIND_SYNC_FILE, &d, &o, out_sync)) != GPURES_OK)
    gpures__fd_close(arg.fd);
  return status;
}

int gpures_dma_buf_import_sync_file(gpures_handle dma_buf, uint32_t index, uint32_t flags,
                                    gpures_handle sync) {
  gpures__op op = {"import a sync file into", GPURES_KIND_DMA_BUF_HANDLE};
  int status = check_flags(op, flags);
  if (status != GPURES_OK) return status;
  gpures_sync_file_desc s;
  uint32_t kind, refcount;
  if ((status = gpures__snapshot(sync, op.verb, &kind, &refcount, &s)) != GPURES_OK)
    return gpures__fail(op, status, "sync", "sync names no live SyncPoint");
  if (kind != GPURES_KIND_SYNC_FILE)
    return gpures__fail(op, GPURES_E_WRONG_KIND, "sync", "sync is a %s, not a SyncFile",
                        gpures__kind_name(kind));
  if ((status = gpures_clone(dma_buf)) != GPURES_OK) return gpures__refail(op, status);
  if ((status = gpures_clone(sync)) != GPURES_OK) {
    (void)gpures_release(dma_buf);
    return gpures__fail(op, status, "sync", "sync was released meanwhile");
  }
  char field[16] = "";
  int fd = -1;
  status = dma_buf_fd(op, dma_buf, index, field, sizeof field, &fd);
  struct dma_buf_import_sync_file arg = {ioctl_flags(flags), s.fd};
  if (status == GPURES_OK && ioctl(fd, DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &arg) != 0)
    status = ioctl_failed(op, field, "DMA_BUF_IOCTL_IMPORT_SYNC_FILE", errno);
  (void)gpures_release(sync);
  (void)gpures_release(dma_buf);
  return status;
}
#else
int gpures_dma_buf_export_sync_file(gpures_handle dma_buf, uint32_t index, uint32_t flags,
                                    gpures_handle *out_sync) {
  gpures__op op = {"export a sync file from", GPURES_KIND_DMA_BUF_HANDLE};
  (void)dma_buf, (void)index, (void)flags;
  if (out_sync) *out_sync = 0;
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "", "dma-buf sync files are Linux's (6.0 and later)");
}
int gpures_dma_buf_import_sync_file(gpures_handle dma_buf, uint32_t index, uint32_t flags,
                                    gpures_handle sync) {
  gpures__op op = {"import a sync file into", GPURES_KIND_DMA_BUF_HANDLE};
  (void)dma_buf, (void)index, (void)flags, (void)sync;
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "", "dma-buf sync files are Linux's (6.0 and later)");
}
#endif
