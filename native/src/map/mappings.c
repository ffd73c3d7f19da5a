/*
** mappings.c: CPU mappings of the memory behind an owned fd.
**
** gpures_map() mmaps a whole object shared and, for a real dma-buf, brackets
** CPU access with DMA_BUF_IOCTL_SYNC. Only objects that cannot shrink are
** mapped (frame_fd.c), so no access through a mapping can raise SIGBUS.
** Live mappings are kept in a list so that gpures_unmap() refuses an address
** it did not make and never reads an fd from its caller; each has an id that
** is never reused, so a host's late finalizer (napi_buffers.c) can end
** exactly the mapping it was made for, or nothing.
*/
#if !defined(_WIN32)
#if defined(__linux__)
#define _GNU_SOURCE
#else
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#if defined(__linux__)
#include <sys/ioctl.h>
#endif

#include "../internal.h"

#if defined(__linux__)
/* <linux/dma-buf.h>, spelled out so that no kernel headers are needed. */
struct gpures__dma_buf_sync {
  uint64_t flags;
};
#define DMA_BUF_SYNC_READ (1ull << 0)
#define DMA_BUF_SYNC_WRITE (2ull << 0)
#define SYNC_START (0ull << 2)
#define SYNC_END (1ull << 2)
#define DMA_BUF_IOCTL_SYNC _IOW('b', 0, struct gpures__dma_buf_sync)

/* 0 on success, ENOTTY when fd is not a dma-buf, else the errno. */
static int dma_buf_sync(int fd, uint32_t map_flags, uint64_t phase) {
  struct gpures__dma_buf_sync s = {phase};
  if (map_flags & GPURES_MAP_READ) s.flags |= DMA_BUF_SYNC_READ;
  if (map_flags & GPURES_MAP_WRITE) s.flags |= DMA_BUF_SYNC_WRITE;
  for (;;) {
    if (ioctl(fd, DMA_BUF_IOCTL_SYNC, &s) == 0) return 0;
    if (errno != EINTR && errno != EAGAIN) return errno;
  }
}
#else
/* No dma-bufs here: every fd is "not a dma-buf". */
#define SYNC_START 0u
#define SYNC_END 1u
static int dma_buf_sync(int fd, uint32_t map_flags, uint64_t phase) {
  (void)fd, (void)map_flags, (void)phase;
  return ENOTTY;
}
#endif

#define MAP_FLAGS (GPURES_MAP_READ | GPURES_MAP_WRITE | GPURES_MAP_ALLOW_UNSEALED)

typedef struct mapping {
  struct mapping *next;
  void *ptr;
  size_t size;
  uint64_t id;
  int sync_fd; /* the dma-buf to end CPU access on, or -1 */
  uint32_t flags;
} mapping;

static gpures__lock mappings_lock;
static mapping *mappings;
GPURES__LOCKS_ACROSS_FORK(mappings_lock_across_fork, &mappings_lock, 1, sizeof mappings_lock)
static uint64_t next_id = 1; /* under mappings_lock */
static _Atomic uint64_t live_mappings;

static int check_flags(gpures__op op, uint32_t flags) {
  if (flags & ~MAP_FLAGS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x",
                        flags & ~MAP_FLAGS);
  if (!(flags & (GPURES_MAP_READ | GPURES_MAP_WRITE)))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags",
                        "flags must ask for GPURES_MAP_READ, GPURES_MAP_WRITE or both");
  return GPURES_OK;
}

/* The size to map: the whole object, once it is known not to shrink. */
static int mappable_size(gpures__op op, const char *field, int fd, uint32_t flags,
                         size_t *out) {
  int status = gpures__check_frame_fd(
      op, field, fd, (flags & GPURES_MAP_ALLOW_UNSEALED) ? GPURES__FRAME_FD_ALLOW_UNSEALED : 0);
  if (status != GPURES_OK) return status;
  int64_t size = gpures__fd_size(fd);
  if (size == 0) return gpures__fail(op, GPURES_E_ZERO_SIZE, field, "%s has 0 bytes", field);
  if (size < 0 || (uint64_t)size > SIZE_MAX)
    return gpures__fail(op, GPURES_E_OS_ERROR, field,
                        "the size of %s cannot be read, so it cannot be mapped", field);
  *out = (size_t)size;
  return GPURES_OK;
}

/* mmap and begin CPU access; *sync_fd keeps fd when it is a dma-buf, else closes it. */
static int map_fd(gpures__op op, const char *field, int fd, size_t size, uint32_t flags,
                  void **out_ptr, int *sync_fd) {
  int prot = ((flags & GPURES_MAP_READ) ? PROT_READ : 0) |
             ((flags & GPURES_MAP_WRITE) ? PROT_WRITE : 0);
  void *ptr = mmap(NULL, size, prot, MAP_SHARED, fd, 0);
  if (ptr == MAP_FAILED) return gpures__os_fail(op, field, "mmap", errno);
  int err = dma_buf_sync(fd, flags, SYNC_START);
  if (err != 0 && err != ENOTTY) { /* ENOTTY: a memfd or a file, nothing to synchronise */
    munmap(ptr, size);
    return gpures__os_fail(op, field, "DMA_BUF_IOCTL_SYNC(SYNC_START)", err);
  }
  *sync_fd = err == 0 ? fd : -1;
  if (err != 0) gpures__fd_close(fd);
  *out_ptr = ptr;
  return GPURES_OK;
}

int gpures__map(gpures_handle handle, uint32_t index, uint32_t flags, void **out_ptr,
                uint64_t *out_size, uint64_t *out_id) {
  gpures__op op = {"map", 0};
  if (!out_ptr) return gpures__fail(op, GPURES_E_NULL_POINTER, "outPtr", "outPtr is null");
  if (!out_size) return gpures__fail(op, GPURES_E_NULL_POINTER, "outSize", "outSize is null");
  *out_ptr = NULL;
  *out_size = 0;
  int status = gpures_kind(handle, &op.kind);
  if (status != GPURES_OK) return gpures__refail(op, status);
  if ((status = check_flags(op, flags)) != GPURES_OK) return status;
  int fd = -1;
  if ((status = gpures_dup_fd(handle, index, &fd)) != GPURES_OK) return gpures__refail(op, status);
  char field[32];
  if (op.kind == GPURES_KIND_VK_OPAQUE_FD || op.kind == GPURES_KIND_CUDA_VMM_FD)
    snprintf(field, sizeof field, "fd");
  else snprintf(field, sizeof field, "fds[%u]", index);
  size_t size = 0;
  mapping *m = NULL;
  if ((status = mappable_size(op, field, fd, flags, &size)) == GPURES_OK && !(m = gpures__alloc(sizeof *m)))
    status = gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for another mapping");
  if (status == GPURES_OK) status = map_fd(op, field, fd, size, flags, &m->ptr, &m->sync_fd);
  else gpures__fd_close(fd);
  if (status != GPURES_OK) {
    gpures__free(m);
    return status;
  }
  m->size = size;
  m->flags = flags;
  gpures__lock_acquire(&mappings_lock);
  m->id = next_id++;
  m->next = mappings;
  mappings = m;
  gpures__lock_release(&mappings_lock);
  atomic_fetch_add_explicit(&live_mappings, 1, memory_order_relaxed);
  *out_ptr = m->ptr;
  *out_size = (uint64_t)size;
  if (out_id) *out_id = m->id;
  return GPURES_OK;
}

int gpures_map(gpures_handle handle, uint32_t index, uint32_t flags, void **out_ptr,
               uint64_t *out_size) {
  return gpures__map(handle, index, flags, out_ptr, out_size, NULL);
}

/* Unlinks the first mapping `match` accepts; NULL when none does. */
static mapping *take(int (*match)(const mapping *, const void *), const void *key) {
  gpures__lock_acquire(&mappings_lock);
  mapping **link = &mappings;
  while (*link && !match(*link, key)) link = &(*link)->next;
  mapping *m = *link;
  if (m) *link = m->next;
  gpures__lock_release(&mappings_lock);
  return m;
}

/* Ends CPU access and unmaps; the errno of SYNC_END, or 0. */
static int end(mapping *m) {
  int err = 0;
  if (m->sync_fd >= 0) {
    err = dma_buf_sync(m->sync_fd, m->flags, SYNC_END);
    gpures__fd_close(m->sync_fd);
  }
  munmap(m->ptr, m->size);
  gpures__free(m);
  atomic_fetch_sub_explicit(&live_mappings, 1, memory_order_relaxed);
  return err;
}

static int at_address(const mapping *m, const void *ptr) { return m->ptr == ptr; }
static int with_id(const mapping *m, const void *id) { return m->id == *(const uint64_t *)id; }

int gpures_unmap(void *ptr) {
  gpures__op op = {"unmap", 0};
  if (!ptr) return gpures__fail(op, GPURES_E_NULL_POINTER, "ptr", "ptr is null");
  mapping *m = take(at_address, ptr);
  if (!m)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "ptr",
                        "%p is not a mapping gpures_map() made (or it was unmapped)", ptr);
  int err = end(m);
  if (err) return gpures__os_fail(op, "", "DMA_BUF_IOCTL_SYNC(SYNC_END) (the mapping is gone)", err);
  return GPURES_OK;
}

void gpures__unmap_id(uint64_t id) {
  mapping *m = take(with_id, &id);
  if (m) (void)end(m);
}

uint64_t gpures_live_mappings(void) {
  return atomic_load_explicit(&live_mappings, memory_order_relaxed);
}
#endif
