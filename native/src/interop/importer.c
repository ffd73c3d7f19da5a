/*
** importer.c: what every importer shares. An import is costly (CUDA's import
** and map of a 4K frame takes hundreds of microseconds) and a frame stream
** reuses a few buffers, so each import is cached under the identity of the
** buffer it came from and made again only when that buffer is new:
**   - a pooled or received frame: gpures_buffer_id(), which is never reused,
**     and whose end (gpures__buffer_gone) marks the import for freeing;
**   - any other frame: the files behind its fds (device and inode), which
**     stay allocated while the import holds them, so no later buffer can take
**     their identity. Files of an anonymous-inode filesystem share one inode,
**     so there the held file is compared with kcmp() instead.
** A cached import also remembers the layout it was made for: a frame of the
** same buffer with another layout is imported anew.
*/
#if defined(__linux__)
#define _GNU_SOURCE
#endif
#include <string.h>

#include "interop.h"

#if defined(__linux__)
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef ANON_INODE_FS_MAGIC
#define ANON_INODE_FS_MAGIC 0x09041934
#endif

typedef struct file_key {
  uint64_t dev, ino;
  int held; /* a dup of the file on an anonymous-inode fs, compared by kcmp; else -1 */
} file_key;

typedef struct entry {
  struct entry *prev, *next; /* most recently used first */
  uint64_t buffer_id;        /* 0: keyed by files */
  uint32_t num_files;
  file_key files[4];
  gpures__frame layout;      /* the descriptor it was made for, fds and per-frame fields cleared */
  bool gone;                 /* its buffer went away: free at the next call */
  gpures_handle seen;        /* the last handle answered with it: its fds are these files */
  unsigned char payload[GPURES__PAYLOAD_MAX];
} entry;

struct gpures_importer {
  const gpures__import_ops *ops;
  void *api;
  gpures_device_info device;
  uint32_t capacity;
  pthread_mutex_t mu;
  entry *head, *tail;
  gpures_importer_stats stats;
  bool has_gone;
  gpures_importer *next_live;
};

/* Every live importer, for buffer-gone notices. Lock order: live_mu, then an importer's mu. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static gpures_importer *live;

static void unlink_entry(gpures_importer *imp, entry *e) {
  if (e->prev) e->prev->next = e->next; else imp->head = e->next;
  if (e->next) e->next->prev = e->prev; else imp->tail = e->prev;
  e->prev = e->next = NULL;
}

static void push_front(gpures_importer *imp, entry *e) {
  e->prev = NULL;
  e->next = imp->head;
  if (imp->head) imp->head->prev = e; else imp->tail = e;
  imp->head = e;
}

static void free_entry(gpures_importer *imp, entry *e) {
  unlink_entry(imp, e);
  imp->ops->free(imp->api, e->payload);
  for (uint32_t i = 0; i < e->num_files; i++)
    if (e->files[i].held >= 0) close(e->files[i].held);
  free(e);
  imp->stats.cached--;
  imp->stats.freed++;
}

static void collect_locked(gpures_importer *imp) {
  if (!imp->has_gone) return;
  imp->has_gone = false;
  for (entry *e = imp->head, *next; e; e = next) {
    next = e->next;
    if (e->gone) free_entry(imp, e);
  }
}

void gpures__importers_buffer_gone(uint64_t id) {
  pthread_mutex_lock(&live_mu);
  for (gpures_importer *imp = live; imp; imp = imp->next_live) {
    pthread_mutex_lock(&imp->mu);
    for (entry *e = imp->head; e; e = e->next)
      if (e->buffer_id == id) e->gone = imp->has_gone = true;
    pthread_mutex_unlock(&imp->mu);
  }
  pthread_mutex_unlock(&live_mu);
}

/* ------------------------------------------------------------ identity */

/* The layout an import depends on: the descriptor without its fds and per-frame fields. */
static void layout_of(const gpures__frame *frame, gpures__frame *out) {
  memcpy(out, frame, sizeof *out); /* padding too: layouts are compared with memcmp */
  out->handle = 0;
  if (frame->kind == GPURES_KIND_DMA_BUF_HANDLE) {
    memset(out->desc.dma_buf.fds, 0, sizeof out->desc.dma_buf.fds);
  } else {
    out->desc.opaque.fd = 0;
    out->desc.opaque.flags &= ~GPURES_HAS_SLOT_RELEASE;
    memset(&out->desc.opaque.slot_release, 0, sizeof out->desc.opaque.slot_release);
  }
}

static uint32_t fds_of(const gpures__frame *frame, const int32_t **fds) {
  if (frame->kind == GPURES_KIND_DMA_BUF_HANDLE) {
    *fds = frame->desc.dma_buf.fds;
    return frame->desc.dma_buf.num_fds;
  }
  *fds = &frame->desc.opaque.fd;
  return 1;
}

/*
** Whether the file's inode may stand for other files too, so that only the
** held file compared with kcmp() says it is the same: a device's opens
** (NVIDIA's opaque fds are all /dev/nvidiactl) and an anonymous-inode fs
** (whose files the kernel may show as S_IFREG: the filesystem decides).
*/
static bool inode_shared(int fd, const struct stat *st, bool *shared) {
  struct statfs fs;
  if (S_ISCHR(st->st_mode)) return *shared = true;
  if (fstatfs(fd, &fs) != 0) return false;
  *shared = fs.f_type == ANON_INODE_FS_MAGIC;
  return true;
}

static int file_key_of(gpures__op op, int fd, uint32_t index, file_key *out) {
  struct stat st;
  bool shared = false;
  if (fstat(fd, &st) != 0 || !inode_shared(fd, &st, &shared)) {
    char field[16];
    snprintf(field, sizeof field, "fds[%u]", index);
    return gpures__os_fail(op, field, "fstat", errno);
  }
  out->dev = (uint64_t)st.st_dev;
  out->ino = (uint64_t)st.st_ino;
  out->held = shared ? -2 : -1; /* -2: hold a dup once cached */
  return GPURES_OK;
}

/* This process's id for kcmp(): a system call saved per cached import, asked again after fork. */
static _Atomic pid_t self_pid;

/*
** fork() (os/fork.c): the live list starts empty in the child. A GPU API's
** objects do not survive fork(), so the parent's importers serve only the
** parent, and their locks may be held by threads the child does not have.
*/
static void forget_in_child(void) {
  live = NULL;
  pthread_mutex_init(&live_mu, NULL);
  atomic_store(&self_pid, 0);
}
const gpures__forking gpures__importers_forking = {&live_mu, forget_in_child};

static pid_t self(void) {
  pid_t pid = atomic_load(&self_pid);
  if (!pid) atomic_store(&self_pid, pid = getpid());
  return pid;
}

static bool same_file(const file_key *cached, const file_key *now, int fd) {
  if (cached->dev != now->dev || cached->ino != now->ino) return false;
  if (cached->held < 0) return true;
  pid_t pid = self();
  return syscall(SYS_kcmp, pid, pid, KCMP_FILE, cached->held, fd) == 0;
}

static entry *find(gpures_importer *imp, uint64_t buffer_id, const file_key *files, uint32_t n,
                   const int32_t *fds, const gpures__frame *layout) {
  for (entry *e = imp->head; e; e = e->next) {
    if (e->gone || e->buffer_id != buffer_id || e->num_files != n) continue;
    bool same = true;
    for (uint32_t i = 0; same && buffer_id == 0 && i < n; i++)
      same = same_file(&e->files[i], &files[i], fds[i]);
    if (same && memcmp(&e->layout, layout, sizeof *layout) == 0) return e;
  }
  return NULL;
}

/* ------------------------------------------------------------- imports */

static int snapshot_frame(gpures__op op, const gpures__import_ops *ops, gpures_handle handle,
                          gpures__frame *frame) {
  uint32_t kind = 0, refcount = 0;
  unsigned char desc[GPURES__DESC_MAX];
  int status = gpures__snapshot(handle, op.verb, &kind, &refcount, desc);
  if (status != GPURES_OK) return gpures__refail(op, status);
  if (kind > 63 || !(ops->kinds & (1ull << kind)))
    return gpures__fail(op, GPURES_E_WRONG_KIND, "frame", "%s cannot import a %s", ops->api,
                        gpures__kind_name(kind));
  memset(frame, 0, sizeof *frame);
  frame->handle = handle;
  frame->kind = kind;
  memcpy(&frame->desc, desc,
         kind == GPURES_KIND_DMA_BUF_HANDLE ? sizeof frame->desc.dma_buf
                                            : sizeof frame->desc.opaque);
  return GPURES_OK;
}

static int check_device(gpures__op op, gpures_importer *imp, gpures_handle handle) {
  gpures_device_id id;
  int status = gpures_device_of(handle, &id);
  if (status != GPURES_OK) return gpures__refail(op, status);
  if (gpures_device_compare(&id, &imp->device.id) != GPURES_DEVICE_DIFFERENT) return GPURES_OK;
  return gpures__fail(op, GPURES_E_DEVICE_MISMATCH, "deviceUuid",
                      "the frame belongs to another device than %s's \"%s\"", imp->ops->api,
                      imp->device.name);
}

/*
** Room for one more: the least recently used import keyed by files goes. An
** import of a buffer with an identity is never evicted: someone may hold a
** frame of it, and its buffer's end frees it (live buffers bound their number).
*/
static void make_room(gpures_importer *imp) {
  entry *e = imp->tail;
  while (imp->stats.cached >= imp->capacity && e) {
    entry *prev = e->prev;
    if (!e->buffer_id) free_entry(imp, e);
    e = prev;
  }
}

/*
** A frame's fds go to the driver as memory, so they must be memory (a driver
** given an eventfd was seen to block in its import for good), and an opaque
** frame's memfd no smaller than the frame says (else it is read past its
** end). NVIDIA's exports are opens of /dev/nvidiactl, whose size says nothing.
*/
static int check_memory_fd(gpures__op op, const gpures__frame *frame) {
  if (frame->kind == GPURES_KIND_DMA_BUF_HANDLE) { /* in-process dma-bufs pass the same check */
    const gpures_dma_buf_handle_desc *b = &frame->desc.dma_buf;
    for (uint32_t i = 0; i < b->num_fds && i < 4; i++) {
      char field[16];
      snprintf(field, sizeof field, "fds[%u]", i);
      int status = gpures__check_frame_fd(op, field, b->fds[i],
                                          GPURES__FRAME_FD_ALLOW_UNSEALED | GPURES__FRAME_FD_MEMORY);
      if (status != GPURES_OK) return status;
    }
    return GPURES_OK;
  }
  const gpures_vk_opaque_fd_desc *d = &frame->desc.opaque; /* VkOpaqueFd, CudaVmmFd */
  int status = gpures__check_frame_fd(op, "fd", d->fd,
                                      GPURES__FRAME_FD_OPAQUE | GPURES__FRAME_FD_ALLOW_UNSEALED |
                                          GPURES__FRAME_FD_MEMORY);
  struct stat st;
  if (status == GPURES_OK && fstat(d->fd, &st) != 0) return gpures__os_fail(op, "fd", "fstat", errno);
  if (status == GPURES_OK && S_ISREG(st.st_mode) && (uint64_t)st.st_size < d->size)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "size",
                        "the frame says %llu bytes; its fd holds %lld",
                        (unsigned long long)d->size, (long long)st.st_size);
  return status;
}

static int import_new(gpures__op op, gpures_importer *imp, const gpures__frame *frame,
                      uint64_t buffer_id, const file_key *files, uint32_t n,
                      const gpures__frame *layout, entry **out) {
  int status = check_device(op, imp, frame->handle);
  if (status == GPURES_OK) status = check_memory_fd(op, frame);
  if (status != GPURES_OK) return status;
  entry *e = calloc(1, sizeof *e);
  if (!e) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for an import");
  const int32_t *fds = NULL;
  (void)fds_of(frame, &fds);
  e->buffer_id = buffer_id;
  e->num_files = n;
  e->layout = *layout;
  for (uint32_t i = 0; i < n; i++) {
    e->files[i] = files[i];
    if (files[i].held == -2 && (e->files[i].held = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) < 0) {
      while (i-- > 0)
        if (e->files[i].held >= 0) close(e->files[i].held);
      free(e);
      return gpures__os_fail(op, "fds", "dup", errno);
    }
  }
  if ((status = imp->ops->make(imp->api, op, frame, e->payload)) != GPURES_OK) {
    for (uint32_t i = 0; i < n; i++)
      if (e->files[i].held >= 0) close(e->files[i].held);
    free(e);
    imp->stats.failed++;
    return status;
  }
  make_room(imp);
  push_front(imp, e);
  imp->stats.cached++;
  imp->stats.imports++;
  *out = e;
  return GPURES_OK;
}

/* The frame's identity: its buffer id, else the files behind its fds. */
typedef struct frame_key {
  uint64_t buffer_id;
  uint32_t num_files; /* 0 with a buffer id */
  file_key files[4];
  const int32_t *fds;
} frame_key;

static int key_of(gpures__op op, const gpures__frame *frame, frame_key *key) {
  int status = gpures_buffer_id(frame->handle, &key->buffer_id);
  if (status != GPURES_OK) return gpures__refail(op, status);
  uint32_t n = fds_of(frame, &key->fds);
  key->num_files = key->buffer_id ? 0 : n;
  for (uint32_t i = 0; i < key->num_files; i++)
    if ((status = file_key_of(op, key->fds[i], i, &key->files[i])) != GPURES_OK) return status;
  return GPURES_OK;
}

/*
** The import last answered for this very handle. A handle value is never
** reused and its descriptor never changes, so its fds are the files that
** entry was keyed by: no system call needed (a producer's ring of long-lived
** handles hits here every frame).
*/
static entry *find_seen(gpures_importer *imp, gpures_handle handle, const gpures__frame *layout) {
  for (entry *e = imp->head; e; e = e->next)
    if (!e->gone && e->seen == handle && memcmp(&e->layout, layout, sizeof *layout) == 0) return e;
  return NULL;
}

static int import_locked(gpures__op op, gpures_importer *imp, const gpures__frame *frame,
                         void *payload, uint32_t *out_cached) {
  collect_locked(imp);
  gpures__frame layout;
  layout_of(frame, &layout);
  entry *e = find_seen(imp, frame->handle, &layout);
  frame_key key;
  int status = GPURES_OK;
  if (!e) {
    if ((status = key_of(op, frame, &key)) != GPURES_OK) return status;
    e = find(imp, key.buffer_id, key.files, key.num_files, key.fds, &layout);
  }
  *out_cached = e != NULL;
  if (e) {
    unlink_entry(imp, e);
    push_front(imp, e);
    imp->stats.hits++;
  } else if ((status = import_new(op, imp, frame, key.buffer_id, key.files, key.num_files,
                                  &layout, &e)) != GPURES_OK) {
    return status;
  }
  e->seen = frame->handle;
  memcpy(payload, e->payload, imp->ops->payload_size);
  return GPURES_OK;
}

int gpures__importer_import(gpures_importer *imp, const gpures__import_ops *ops, const char *verb,
                            gpures_handle handle, void *payload, uint32_t *out_cached) {
  gpures__op op = {verb, 0};
  if (!imp || imp->ops != ops)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "importer", "not a %s importer", ops->api);
  if (!payload || !out_cached)
    return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  /* The frame's own reference for the call: its fds stay open whoever else releases it. */
  int status = gpures_clone(handle);
  if (status != GPURES_OK) return gpures__refail(op, status);
  gpures__frame frame;
  pthread_mutex_lock(&imp->mu);
  status = snapshot_frame(op, ops, handle, &frame);
  if (status == GPURES_OK) status = import_locked(op, imp, &frame, payload, out_cached);
  pthread_mutex_unlock(&imp->mu);
  /* After the lock: a last release may end a buffer, whose notice takes it. */
  (void)gpures_release(handle);
  return status;
}

int gpures__importer_desc(gpures__op op, const void *desc, uint32_t own_size, void *own,
                          gpures_importer **out) {
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "outImporter", "outImporter is null");
  *out = NULL;
  if (!desc) return gpures__fail(op, GPURES_E_NULL_POINTER, "desc", "desc is null");
  return gpures__copy_versioned(op, "structSize", desc, own_size, own);
}

void *gpures__importer_api(gpures_importer *imp, const gpures__import_ops *ops) {
  return imp && imp->ops == ops ? imp->api : NULL;
}

int gpures__importer_new(gpures__op op, const gpures__import_ops *ops, void *api,
                         const gpures_device_info *device, uint32_t capacity,
                         gpures_importer **out) {
  gpures_importer *imp = calloc(1, sizeof *imp);
  if (!imp) {
    ops->destroy(api);
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for an importer");
  }
  imp->ops = ops;
  imp->api = api;
  imp->device = *device;
  imp->capacity = capacity ? capacity : 64;
  imp->stats.struct_size = sizeof imp->stats;
  pthread_mutex_init(&imp->mu, NULL);
  pthread_mutex_lock(&live_mu);
  imp->next_live = live;
  live = imp;
  pthread_mutex_unlock(&live_mu);
  *out = imp;
  return GPURES_OK;
}

/* ------------------------------------------------------ public calls */

static int check_importer(gpures__op op, gpures_importer *imp) {
  return imp ? GPURES_OK
             : gpures__fail(op, GPURES_E_NULL_POINTER, "importer", "importer is null");
}

int gpures_importer_stats_get(gpures_importer *imp, gpures_importer_stats *out) {
  gpures__op op = {"read stats of", 0};
  int status = check_importer(op, imp);
  if (status != GPURES_OK) return status;
  pthread_mutex_lock(&imp->mu);
  gpures_importer_stats copy = imp->stats;
  pthread_mutex_unlock(&imp->mu);
  return gpures__copy_out(op, out, &copy, sizeof copy);
}

int gpures_importer_device(gpures_importer *imp, gpures_device_info *out) {
  gpures__op op = {"read the device of", 0};
  int status = check_importer(op, imp);
  if (status != GPURES_OK) return status;
  gpures_device_info copy = imp->device;
  copy.struct_size = sizeof copy;
  return gpures__copy_out(op, out, &copy, sizeof copy);
}

int gpures_importer_forget(gpures_importer *imp, gpures_handle handle) {
  gpures__op op = {"forget an import of", 0};
  int status = check_importer(op, imp);
  if (status != GPURES_OK) return status;
  gpures__frame frame, layout;
  /* As in an import: a last release under the lock would end a buffer, whose notice takes it. */
  if ((status = gpures_clone(handle)) != GPURES_OK) return gpures__refail(op, status);
  pthread_mutex_lock(&imp->mu);
  status = snapshot_frame(op, imp->ops, handle, &frame);
  uint64_t buffer_id = 0;
  if (status == GPURES_OK) status = gpures_buffer_id(handle, &buffer_id);
  const int32_t *fds = NULL;
  uint32_t n = status == GPURES_OK ? fds_of(&frame, &fds) : 0;
  file_key files[4];
  for (uint32_t i = 0; status == GPURES_OK && buffer_id == 0 && i < n; i++)
    status = file_key_of(op, fds[i], i, &files[i]);
  if (status == GPURES_OK) {
    layout_of(&frame, &layout);
    entry *e = find(imp, buffer_id, files, buffer_id ? 0 : n, fds, &layout);
    if (e) free_entry(imp, e);
  }
  pthread_mutex_unlock(&imp->mu);
  (void)gpures_release(handle);
  return status;
}

int gpures_importer_collect(gpures_importer *imp) {
  int status = check_importer((gpures__op){"collect imports of", 0}, imp);
  if (status != GPURES_OK) return status;
  pthread_mutex_lock(&imp->mu);
  collect_locked(imp);
  pthread_mutex_unlock(&imp->mu);
  return GPURES_OK;
}

int gpures_importer_destroy(gpures_importer *imp) {
  if (!imp) return GPURES_OK; /* as free(NULL) */
  pthread_mutex_lock(&live_mu);
  for (gpures_importer **p = &live; *p; p = &(*p)->next_live)
    if (*p == imp) {
      *p = imp->next_live;
      break;
    }
  pthread_mutex_unlock(&live_mu);
  pthread_mutex_lock(&imp->mu);
  while (imp->head) free_entry(imp, imp->head);
  pthread_mutex_unlock(&imp->mu);
  imp->ops->destroy(imp->api);
  pthread_mutex_destroy(&imp->mu);
  free(imp);
  return GPURES_OK;
}

#else

void gpures__importers_buffer_gone(uint64_t id) { (void)id; }

#endif

int gpures__copy_out(gpures__op op, void *out, const void *filled, uint32_t filled_size) {
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  uint32_t size;
  memcpy(&size, out, sizeof size);
  int status = gpures__check_struct_size(op, "out.structSize", size);
  if (status != GPURES_OK) return status;
  uint32_t n = size < filled_size ? size : filled_size;
  memcpy(out, filled, n);
  memcpy(out, &n, sizeof n);
  return GPURES_OK;
}
