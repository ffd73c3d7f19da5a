/*
** pool.c: frame pools. A pool allocates its slots' buffers once; acquire
** hands out a DmaBufHandle over a free slot's buffer (table/handles.c's
** borrowing create: no fd is duplicated, nothing is validated again), and
** that handle's last release, wherever it happens, brings the slot home
** (slot_returned, on the releasing thread). A slot's memory comes from the
** pool's backing: sealed memfds here (frames are DmaBufHandles), exported GPU
** memory from a backing of an interop file (interop/vulkan_pool.c: frames
** are VkOpaqueFds). Linux only: every backing's memory is an fd.
*/
#if defined(__linux__)
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#endif
#include "../internal.h"
#include "backing.h"

#if defined(__linux__)
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CANCELS 32u /* recent cancelled tickets: enough for every waiter a host runs at once */

typedef struct pool_slot {
  struct gpures_pool *pool;
  int fd;             /* -1: the slot died (its buffer was retired and no new one could be made) */
  uint64_t objects[2]; /* the backing's API objects over the memory (0 for a memfd) */
  bool busy;
  uint64_t buffer_id;
  gpures_handle fence; /* the last frame's release fence: the next frame's acquire fence (0: none) */
} pool_slot;

/* A queue to tell, once, that a slot is free: no thread waits for it. */
typedef struct pool_notice {
  uint32_t queue;
  uint64_t token;
} pool_notice;

struct gpures_pool {
  pthread_mutex_t mu;
  pthread_cond_t freed;
  uint32_t kind;      /* of every frame: DmaBufHandle, or VkOpaqueFd-shaped (VkOpaqueFd, CudaVmmFd) */
  gpures__pool_frame frame; /* every frame's descriptor but its fd */
  const gpures__pool_backing *backing;
  void *backing_state; /* NULL once closed: the API objects went with the close */
  uint64_t size;
  bool closed;
  uint32_t waiters;   /* threads inside acquire: the pool outlives them */
  uint32_t cancels[CANCELS], next_cancel;
  pool_notice *notices; /* queues to tell when a slot comes free (gpures_pool_notify) */
  uint32_t num_notices, notices_capacity;
  gpures_pool_stats stats;
  uint32_t num_slots;
  pool_slot slots[];
};

/*
** A wait made for the host that owns an event queue (gpures_pool_wait_queue):
** when the queue closes (that host, a JavaScript isolate, ended) the wait
** ends, so the helper thread it parks is given back and the pool can be
** freed. It lives on the waiting thread's stack, on the list while it waits.
*/
typedef struct bound_wait {
  struct bound_wait *next, *prev;
  gpures_pool *pool;
  uint32_t queue;
  bool ended; /* under pool->mu */
} bound_wait;

/* Taken before a pool's lock, never under it. */
static pthread_mutex_t bound_mu = PTHREAD_MUTEX_INITIALIZER;
static bound_wait *bound;

/* fork() (os/fork.c): the child has none of the parent's waiting threads. */
static void forget_in_child(void) {
  bound = NULL;
  pthread_mutex_init(&bound_mu, NULL);
}
const gpures__forking gpures__pool_forking = {&bound_mu, forget_in_child};

static gpures__op pool_op(const char *verb) {
  gpures__op op = {verb, GPURES_KIND_DMA_BUF_HANDLE};
  return op;
}

/* A memfd of `size` bytes that nobody can shrink, grow or unseal, or -1 with errno set. */
static int new_sealed_memfd(uint64_t size) {
  int fd = memfd_create("gpures-frame", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (ftruncate(fd, (off_t)size) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

/* The memfd backing: a sealed memfd per slot, no API objects. */
static int memfd_make(void *state, gpures__op op, uint64_t size, gpures__slot_memory *out) {
  (void)state;
  if ((out->fd = new_sealed_memfd(size)) >= 0) return GPURES_OK;
  return gpures__os_fail(op, "", "making a sealed memfd", errno);
}
static void memfd_unmake(void *state, gpures__slot_memory *m) { (void)state, (void)m; }
static void memfd_destroy(void *state) { (void)state; }
static const gpures__pool_backing memfd_backing = {GPURES_KIND_DMA_BUF_HANDLE, memfd_make,
                                                   memfd_unmake, memfd_destroy};

/* The API objects of a slot go (its fd stays); called locked. */
static void unmake_objects(gpures_pool *p, pool_slot *ps) {
  gpures__slot_memory m = {ps->fd, {ps->objects[0], ps->objects[1]}};
  if (p->backing_state && (m.objects[0] || m.objects[1])) p->backing->unmake(p->backing_state, &m);
  ps->objects[0] = ps->objects[1] = 0;
}

/* New memory for a slot, or fd -1; called locked, the failure recorded for `op` or not at all. */
static int make_memory(gpures__op op, gpures_pool *p, pool_slot *ps) {
  gpures__slot_memory m = {-1, {0, 0}};
  int status = p->backing_state || p->backing == &memfd_backing
                   ? p->backing->make(p->backing_state, op, p->size, &m)
                   : GPURES_E_STALE;
  bool made = status == GPURES_OK;
  ps->fd = made ? m.fd : -1;
  ps->objects[0] = made ? m.objects[0] : 0, ps->objects[1] = made ? m.objects[1] : 0;
  return status;
}

/* Frees the pool once it is closed and nothing refers to it: no frame out, no thread waiting. */
static bool finished(const gpures_pool *p) {
  return p->closed && p->stats.in_use == 0 && p->waiters == 0;
}

/* The backing's objects and state go; its memory lives on in the fds that frames still hold. */
static void end_backing(gpures_pool *p) {
  if (!p->backing_state) return;
  for (uint32_t i = 0; i < p->num_slots; i++) unmake_objects(p, &p->slots[i]);
  p->backing->destroy(p->backing_state);
  p->backing_state = NULL;
}

static void pool_free(gpures_pool *p) {
  end_backing(p);
  for (uint32_t i = 0; i < p->num_slots; i++) {
    if (p->slots[i].fd >= 0) close(p->slots[i].fd);
    (void)gpures_release(p->slots[i].fence);
  }
  gpures__free(p->notices);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->freed);
  gpures__free(p);
}

/*
** A frame's release fence, handed over just before its last release: the
** consumer's work on the memory ends there, so the next frame of the slot
** carries it as its acquire fence and its producer waits before writing.
*/
static void slot_fence(void *ctx, gpures_handle release_fence) {
  pool_slot *ps = ctx;
  pthread_mutex_lock(&ps->pool->mu);
  gpures_handle old = ps->fence;
  ps->fence = release_fence;
  pthread_mutex_unlock(&ps->pool->mu);
  (void)gpures_release(old);
}

/* The notices of a pool, taken off it (locked) to be posted once its lock is down. */
typedef struct notice_list {
  pool_notice *items;
  uint32_t length;
} notice_list;

static notice_list take_notices(gpures_pool *p) {
  notice_list taken = {p->notices, p->num_notices};
  p->notices = NULL;
  p->num_notices = p->notices_capacity = 0;
  return taken;
}

/*
** Every waiter hears of a free slot, as a broadcast wakes every waiting
** thread: each tries to take it, and those that lose ask again. Telling one
** would strand the slot when that one no longer wants it.
*/
static void post_notices(notice_list told, int status) {
  for (uint32_t i = 0; i < told.length; i++)
    (void)gpures__event_post_status(told.items[i].queue, told.items[i].token,
                                    GPURES_EVENT_SLOT_FREE, status);
  gpures__free(told.items);
}

/* A frame's last release. A retired buffer may still be mapped elsewhere: the slot gets a new one. */
static void slot_returned(void *ctx, bool retired) {
  pool_slot *ps = ctx;
  gpures_pool *p = ps->pool;
  uint64_t gone = 0;
  gpures_handle stale_fence = 0;
  pthread_mutex_lock(&p->mu);
  ps->busy = false;
  p->stats.in_use--;
  if (retired || p->closed) {
    stale_fence = ps->fence; /* new memory: no one's work on it is pending */
    ps->fence = 0;
    gone = ps->buffer_id;
    unmake_objects(p, ps);
    close(ps->fd);
    ps->fd = -1;
    /* On the releasing thread, whose last error is its own business: nothing is recorded. */
    gpures__errors_quiet(true);
    if (!p->closed && make_memory(pool_op("renew a slot of"), p, ps) == GPURES_OK)
      ps->buffer_id = gpures__next_buffer_id();
    gpures__errors_quiet(false);
  }
  bool done = finished(p);
  pthread_cond_broadcast(&p->freed);
  notice_list told = take_notices(p);
  pthread_mutex_unlock(&p->mu);
  post_notices(told, GPURES_OK);
  (void)gpures_release(stale_fence);
  if (gone) gpures__buffer_gone(gone);
  if (done) pool_free(p);
}

static int check_desc(gpures__op op, const gpures_pool_desc *d, gpures_plane_layout planes[4],
                      uint64_t *size, const gpures_pixel_format_info **format) {
  if (d->flags)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x", d->flags);
  if (d->slots == 0 || d->slots > GPURES_POOL_MAX_SLOTS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "slots", "slots is %u; a pool has 1 to %u",
                        d->slots, GPURES_POOL_MAX_SLOTS);
  *format = gpures_pixel_format_info_of(d->format);
  if (*format && !(*format)->drm_fourcc)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "format",
                        "%s has no DRM fourcc, so its frames cannot be DmaBufHandles",
                        gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, d->format));
  int status = gpures_pixel_format_layout(d->format, d->width, d->height,
                                          d->row_align ? d->row_align : 64u, planes, size);
  return status == GPURES_OK ? GPURES_OK : gpures__refail(op, status);
}

static void frame_template(gpures_dma_buf_handle_desc *f, const gpures_pool_desc *d,
                           const gpures_pixel_format_info *format, const gpures_plane_layout *planes) {
  memset(f, 0, sizeof *f);
  f->struct_size = sizeof *f;
  f->num_fds = 1;
  f->fds[0] = f->fds[1] = f->fds[2] = f->fds[3] = -1;
  f->fourcc = format->drm_fourcc;
  f->width = d->width;
  f->height = d->height;
  f->num_planes = format->num_planes;
  for (uint32_t i = 0; i < format->num_planes; i++) {
    f->planes[i].offset = (uint32_t)planes[i].offset;
    f->planes[i].stride = planes[i].stride;
  }
}

/* The fd a frame descriptor of the pool's kind holds. */
static int *frame_fd(uint32_t kind, gpures__pool_frame *f) {
  return kind == GPURES_KIND_DMA_BUF_HANDLE ? &f->dma_buf.fds[0] : &f->opaque.fd;
}

int gpures__pool_create_backed(gpures__op op, uint32_t slots, uint64_t size,
                               const gpures__pool_frame *frame, const gpures__pool_backing *backing,
                               void *state, gpures_pool **out_pool) {
  size_t bytes = sizeof(gpures_pool) + slots * sizeof(pool_slot);
  gpures_pool *p = gpures__alloc(bytes);
  if (!p) {
    backing->destroy(state);
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for the pool");
  }
  memset(p, 0, bytes); /* the slots too: take_free reads their busy flags */
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&p->freed, &attr);
  pthread_condattr_destroy(&attr);
  pthread_mutex_init(&p->mu, NULL);
  p->kind = backing->kind;
  p->frame = *frame;
  p->backing = backing;
  p->backing_state = state;
  p->size = size;
  p->stats.struct_size = sizeof p->stats;
  p->stats.slots = slots;
  p->stats.buffer_size = size;
  int status = GPURES_OK;
  for (; p->num_slots < slots; p->num_slots++) {
    pool_slot *ps = &p->slots[p->num_slots];
    ps->pool = p;
    ps->buffer_id = gpures__next_buffer_id();
    if ((status = make_memory(op, p, ps)) != GPURES_OK) {
      p->num_slots++; /* its fd is -1: freed as the others */
      pool_free(p);
      return status;
    }
  }
  *out_pool = p;
  return GPURES_OK;
}

int gpures_pool_create(const gpures_pool_desc *desc, gpures_pool **out_pool) {
  gpures__op op = pool_op("create a pool of");
  if (!out_pool) return gpures__fail(op, GPURES_E_NULL_POINTER, "outPool", "outPool is null");
  *out_pool = NULL;
  if (!desc) return gpures__fail(op, GPURES_E_NULL_POINTER, "desc", "desc is null");
  gpures_pool_desc d;
  memset(&d, 0, sizeof d);
  int status = gpures__copy_versioned(op, "structSize", desc, sizeof d, &d);
  gpures_plane_layout planes[4];
  uint64_t size = 0;
  const gpures_pixel_format_info *format = NULL;
  if (status == GPURES_OK) status = check_desc(op, &d, planes, &size, &format);
  if (status != GPURES_OK) return status;
  gpures__pool_frame frame;
  frame_template(&frame.dma_buf, &d, format, planes);
  return gpures__pool_create_backed(op, d.slots, size, &frame, &memfd_backing, NULL, out_pool);
}

int gpures__pool_slot_objects(gpures_pool *pool, const gpures__pool_backing *backing,
                              uint64_t buffer_id, uint64_t out_objects[2]) {
  gpures__op op = pool_op("find the slot of");
  if (!pool) return gpures__fail(op, GPURES_E_NULL_POINTER, "pool", "pool is null");
  if (pool->backing != backing)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "pool",
                        "the pool's memory is not of this API");
  int status = GPURES_E_INVALID_VALUE;
  pthread_mutex_lock(&pool->mu);
  if (pool->closed) status = GPURES_E_STALE;
  for (uint32_t i = 0; i < pool->num_slots && status == GPURES_E_INVALID_VALUE; i++) {
    pool_slot *ps = &pool->slots[i];
    if (!buffer_id || ps->buffer_id != buffer_id || ps->fd < 0 || !ps->busy) continue;
    out_objects[0] = ps->objects[0], out_objects[1] = ps->objects[1];
    status = GPURES_OK;
  }
  pthread_mutex_unlock(&pool->mu);
  if (status == GPURES_E_STALE) return gpures__fail(op, status, "pool", "the pool is closed");
  if (status != GPURES_OK)
    return gpures__fail(op, status, "frame", "the frame is not one of this pool's, held now");
  return GPURES_OK;
}

/* Whether any slot can still be handed out, now or once its frame returns. Called locked. */
static bool any_alive(const gpures_pool *p) {
  for (uint32_t i = 0; i < p->num_slots; i++)
    if (p->slots[i].busy || p->slots[i].fd >= 0) return true;
  return false;
}

/* A free slot, marked busy; NULL when none is. Called locked. */
static pool_slot *take_free(gpures_pool *p) {
  for (uint32_t i = 0; i < p->num_slots; i++) {
    pool_slot *ps = &p->slots[i];
    if (ps->busy || ps->fd < 0) continue;
    ps->busy = true;
    if (++p->stats.in_use > p->stats.high_water) p->stats.high_water = p->stats.in_use;
    p->stats.acquired++;
    return ps;
  }
  return NULL;
}

/* Consumes a cancel of `ticket`, if one came. Called locked. */
static bool cancelled(gpures_pool *p, uint32_t ticket) {
  for (uint32_t i = 0; ticket && i < CANCELS; i++)
    if (p->cancels[i] == ticket) return p->cancels[i] = 0, true;
  return false;
}

static struct timespec deadline_after(int32_t ms) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_sec += ms / 1000;
  t.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
  return t;
}

static int timed_out(gpures__op op, gpures_pool *p, int32_t timeout_ms) {
  if (timeout_ms != 0) p->stats.timeouts++; /* a try that finds none is no timeout */
  return gpures__fail(op, GPURES_E_TIMED_OUT, "timeout",
                      "no slot came free within %d ms: all %u are held", timeout_ms, p->num_slots);
}

/* A free slot, without taking it; NULL when none is. Called locked. */
static pool_slot *peek_free(gpures_pool *p) {
  for (uint32_t i = 0; i < p->num_slots; i++)
    if (!p->slots[i].busy && p->slots[i].fd >= 0) return &p->slots[i];
  return NULL;
}

/*
** Waits (locked) for a free slot and takes it (`take`) or only sees it; the
** status says why there is none.
*/
static int wait_for_slot(gpures__op op, gpures_pool *p, int32_t timeout_ms, uint32_t ticket,
                         bool take, const bound_wait *b, pool_slot **out) {
  struct timespec deadline = deadline_after(timeout_ms > 0 ? timeout_ms : 0);
  bool expired = false;
  for (bool waited = false;; waited = true) {
    if (p->closed) return gpures__fail(op, GPURES_E_STALE, "pool", "the pool is closed");
    if (cancelled(p, ticket))
      return gpures__fail(op, GPURES_E_CANCELLED, "", "the acquire was cancelled");
    if (b && b->ended)
      return gpures__fail(op, GPURES_E_CANCELLED, "queue",
                          "queue %u closed: the host that waited is gone", b->queue);
    if ((*out = take ? take_free(p) : peek_free(p))) return GPURES_OK;
    if (!any_alive(p)) /* every slot's memory was given away and none could be made anew */
      return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "pool",
                          "no slot has memory: retired buffers could not be replaced");
    if (timeout_ms == 0 || expired) return timed_out(op, p, timeout_ms);
    if (!waited) p->stats.waits++;
    if (timeout_ms < 0) pthread_cond_wait(&p->freed, &p->mu);
    else expired = pthread_cond_timedwait(&p->freed, &p->mu, &deadline) == ETIMEDOUT;
  }
}

int gpures_pool_acquire(gpures_pool *pool, int32_t timeout_ms, uint32_t ticket,
                        const gpures_create_options *options, gpures_handle *out_frame) {
  gpures__op op = pool_op("acquire");
  if (!out_frame) return gpures__fail(op, GPURES_E_NULL_POINTER, "outFrame", "outFrame is null");
  *out_frame = 0;
  if (!pool) return gpures__fail(op, GPURES_E_NULL_POINTER, "pool", "pool is null");
  pool_slot *ps = NULL;
  if (timeout_ms != 0) gpures__pin_library();
  pthread_mutex_lock(&pool->mu);
  pool->waiters++;
  int status = wait_for_slot(op, pool, timeout_ms, ticket, true, NULL, &ps);
  pool->waiters--;
  bool done = finished(pool);
  gpures__pool_frame frame = pool->frame;
  uint32_t kind = pool->kind;
  gpures__borrow borrow = {slot_returned, ps, ps ? ps->buffer_id : 0, slot_fence};
  gpures_handle fence = 0;
  if (ps) *frame_fd(kind, &frame) = ps->fd, fence = ps->fence, ps->fence = 0;
  pthread_mutex_unlock(&pool->mu);
  if (done) pool_free(pool);
  if (status != GPURES_OK) return status;
  op.kind = kind;
  status = gpures__create_borrowing(op, kind, &frame, options, &borrow, out_frame);
  /* The last user's release fence: wait on it (beginAccess) before writing. */
  if (status == GPURES_OK && fence) (void)gpures_fences_set(*out_frame, fence, 0);
  if (status != GPURES_OK && fence) { /* the slot keeps it for the next frame */
    pthread_mutex_lock(&pool->mu);
    ps->fence = fence, fence = 0;
    pthread_mutex_unlock(&pool->mu);
  }
  (void)gpures_release(fence);
  if (status != GPURES_OK) { /* refused options: the slot goes back, no frame was handed out */
    pthread_mutex_lock(&pool->mu);
    pool->stats.acquired--;
    pthread_mutex_unlock(&pool->mu);
    slot_returned(ps, false);
  }
  return status;
}

int gpures_pool_wait(gpures_pool *pool, int32_t timeout_ms, uint32_t ticket) {
  return gpures_pool_wait_queue(pool, timeout_ms, ticket, 0);
}

int gpures_pool_wait_queue(gpures_pool *pool, int32_t timeout_ms, uint32_t ticket, uint32_t queue) {
  gpures__op op = pool_op("wait on a pool of");
  if (!pool) return gpures__fail(op, GPURES_E_NULL_POINTER, "pool", "pool is null");
  pool_slot *ps = NULL;
  gpures__pin_library();
  pthread_mutex_lock(&pool->mu);
  pool->waiters++; /* from here until the wait is off the list: the pool outlives it */
  pthread_mutex_unlock(&pool->mu);
  bound_wait b = {NULL, NULL, pool, queue, false};
  if (queue) {
    pthread_mutex_lock(&bound_mu);
    b.next = bound;
    if (bound) bound->prev = &b;
    bound = &b;
    pthread_mutex_unlock(&bound_mu);
  }
  /* Looked at once listed: a close before this is seen here, one after it finds the wait. */
  bool open = !queue || gpures__event_queue_open(queue);
  pthread_mutex_lock(&pool->mu);
  if (!open) b.ended = true;
  int status = wait_for_slot(op, pool, timeout_ms, ticket, false, queue ? &b : NULL, &ps);
  pthread_mutex_unlock(&pool->mu);
  if (queue) {
    pthread_mutex_lock(&bound_mu);
    if (b.prev) b.prev->next = b.next;
    else bound = b.next;
    if (b.next) b.next->prev = b.prev;
    pthread_mutex_unlock(&bound_mu);
  }
  pthread_mutex_lock(&pool->mu);
  pool->waiters--;
  bool done = finished(pool);
  pthread_mutex_unlock(&pool->mu);
  if (done) pool_free(pool);
  return status;
}

/* Adds (queue, token) to the notices, once; locked. */
static int add_notice(gpures_pool *p, uint32_t queue, uint64_t token) {
  for (uint32_t i = 0; i < p->num_notices; i++)
    if (p->notices[i].queue == queue && p->notices[i].token == token) return GPURES_OK;
  if (!gpures__grow((void **)&p->notices, &p->notices_capacity, p->num_notices,
                    sizeof *p->notices, 4, 1u << 24)) /* 16M waits on one pool */
    return GPURES_E_OUT_OF_MEMORY;
  p->notices[p->num_notices++] = (pool_notice){queue, token};
  return GPURES_OK;
}

int gpures_pool_notify(gpures_pool *pool, uint32_t queue, uint64_t token) {
  gpures__op op = pool_op("ask to hear of a free slot of");
  if (!pool) return gpures__fail(op, GPURES_E_NULL_POINTER, "pool", "pool is null");
  if (!gpures__event_queue_open(queue))
    return gpures__fail(op, GPURES_E_STALE, "queue", "queue %u is not open", queue);
  pthread_mutex_lock(&pool->mu);
  int status = GPURES_OK;
  bool now = false;
  if (pool->closed) status = GPURES_E_STALE;
  else if (peek_free(pool) || !any_alive(pool)) now = true; /* the try that follows says which */
  else status = add_notice(pool, queue, token);
  if (status == GPURES_OK && !now) pool->stats.waits++;
  pthread_mutex_unlock(&pool->mu);
  if (status == GPURES_E_STALE) return gpures__fail(op, status, "pool", "the pool is closed");
  if (status != GPURES_OK)
    return gpures__fail(op, status, "", "no memory to remember one more wait on the pool");
  if (now) return gpures__event_post_status(queue, token, GPURES_EVENT_SLOT_FREE, GPURES_OK);
  return GPURES_OK;
}

int gpures_pool_notify_cancel(gpures_pool *pool, uint32_t queue, uint64_t token, int why) {
  if (!pool)
    return gpures__fail(pool_op("withdraw a notice of"), GPURES_E_NULL_POINTER, "pool",
                        "pool is null");
  pthread_mutex_lock(&pool->mu);
  for (uint32_t i = 0; i < pool->num_notices; i++) {
    if (pool->notices[i].queue != queue || pool->notices[i].token != token) continue;
    pool->notices[i] = pool->notices[--pool->num_notices];
    if (why == GPURES_E_TIMED_OUT) pool->stats.timeouts++;
    break;
  }
  pthread_mutex_unlock(&pool->mu);
  return GPURES_OK;
}

void gpures__pool_queue_ended(uint32_t queue) {
  pthread_mutex_lock(&bound_mu);
  for (bound_wait *b = bound; b; b = b->next) {
    if (b->queue != queue) continue;
    pthread_mutex_lock(&b->pool->mu);
    b->ended = true;
    pthread_cond_broadcast(&b->pool->freed);
    pthread_mutex_unlock(&b->pool->mu);
  }
  pthread_mutex_unlock(&bound_mu);
}

int gpures_pool_cancel(gpures_pool *pool, uint32_t ticket) {
  if (!pool) return gpures__fail(pool_op("cancel"), GPURES_E_NULL_POINTER, "pool", "pool is null");
  pthread_mutex_lock(&pool->mu);
  pool->cancels[pool->next_cancel++ % CANCELS] = ticket;
  pthread_cond_broadcast(&pool->freed);
  pthread_mutex_unlock(&pool->mu);
  return GPURES_OK;
}

int gpures_pool_stats_get(gpures_pool *pool, gpures_pool_stats *out) {
  gpures__op op = pool_op("read the stats of");
  if (!pool || !out) return gpures__fail(op, GPURES_E_NULL_POINTER, pool ? "out" : "pool", "%s is null", pool ? "out" : "pool");
  uint32_t size = out->struct_size;
  int status = gpures__check_struct_size(op, "structSize", size);
  if (status != GPURES_OK) return status;
  pthread_mutex_lock(&pool->mu);
  gpures_pool_stats copy = pool->stats;
  pthread_mutex_unlock(&pool->mu);
  uint32_t n = size < sizeof copy ? size : (uint32_t)sizeof copy;
  copy.struct_size = n;
  memcpy(out, &copy, n);
  return GPURES_OK;
}

int gpures_pool_close(gpures_pool *pool) {
  if (!pool) return GPURES_OK; /* as free(NULL) */
  uint64_t gone[GPURES_POOL_MAX_SLOTS];
  uint32_t num_gone = 0;
  pthread_mutex_lock(&pool->mu);
  pool->closed = true;
  for (uint32_t i = 0; i < pool->num_slots; i++) { /* free slots' memory goes now */
    pool_slot *ps = &pool->slots[i];
    if (ps->busy || ps->fd < 0) continue;
    close(ps->fd), ps->fd = -1;
    gone[num_gone++] = ps->buffer_id;
  }
  end_backing(pool); /* the API's objects go now: the device need outlive only the close */
  bool done = finished(pool);
  pthread_cond_broadcast(&pool->freed);
  notice_list told = take_notices(pool);
  pthread_mutex_unlock(&pool->mu);
  post_notices(told, GPURES_E_STALE);
  for (uint32_t i = 0; i < num_gone; i++) gpures__buffer_gone(gone[i]);
  if (done) pool_free(pool);
  return GPURES_OK;
}

#else /* no memfds, no DmaBufHandle */

static int unsupported(const char *verb) {
  gpures__op op = {verb, GPURES_KIND_DMA_BUF_HANDLE};
  return gpures__fail(op, GPURES_E_UNSUPPORTED_PLATFORM, "", "frame pools need Linux's memfds and dma-bufs");
}
int gpures_pool_create(const gpures_pool_desc *desc, gpures_pool **out_pool) {
  (void)desc;
  if (out_pool) *out_pool = NULL;
  return unsupported("create a pool of");
}
int gpures_pool_acquire(gpures_pool *pool, int32_t timeout_ms, uint32_t ticket,
                        const gpures_create_options *options, gpures_handle *out_frame) {
  (void)pool, (void)timeout_ms, (void)ticket, (void)options;
  if (out_frame) *out_frame = 0;
  return unsupported("acquire");
}
int gpures_pool_cancel(gpures_pool *pool, uint32_t ticket) { (void)pool, (void)ticket; return unsupported("cancel"); }
int gpures_pool_wait(gpures_pool *pool, int32_t timeout_ms, uint32_t ticket) {
  (void)pool, (void)timeout_ms, (void)ticket;
  return unsupported("wait on a pool of");
}
int gpures_pool_wait_queue(gpures_pool *pool, int32_t timeout_ms, uint32_t ticket, uint32_t queue) {
  (void)pool, (void)timeout_ms, (void)ticket, (void)queue;
  return unsupported("wait on a pool of");
}
int gpures_pool_notify(gpures_pool *pool, uint32_t queue, uint64_t token) {
  (void)pool, (void)queue, (void)token;
  return unsupported("ask to hear of a free slot of");
}
int gpures_pool_notify_cancel(gpures_pool *pool, uint32_t queue, uint64_t token, int why) {
  (void)pool, (void)queue, (void)token, (void)why;
  return unsupported("withdraw a notice of");
}
void gpures__pool_queue_ended(uint32_t queue) { (void)queue; }
int gpures_pool_stats_get(gpures_pool *pool, gpures_pool_stats *out) { (void)pool, (void)out; return unsupported("read the stats of"); }
int gpures_pool_close(gpures_pool *pool) { (void)pool; return GPURES_OK; }
#endif
