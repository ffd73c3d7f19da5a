/*
** fence.c: a SyncPoint as something to wait on. Each kind says how (poll its
** fd, ask its API, nothing at all) or why the host cannot: a binary Vulkan
** semaphore or a GL semaphore is waited on by the GPU, never by a CPU thread.
*/
#if !defined(_WIN32)
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>
#endif
#if defined(__linux__)
#include <sys/eventfd.h>
#endif

#include <string.h>

#include "sync.h"

#define SEMAPHORE_TIMELINE 1u
#define HANDLE_SYNC_FD 16u

static int host_cannot(gpures__op op, const char *why) {
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "", "the host cannot wait on it: %s", why);
}

int gpures__fence_of(gpures__op op, gpures_handle h, gpures__fence *out) {
  union {
    gpures_vk_semaphore_desc vk;
    gpures_vk_semaphore_fd_desc vk_fd;
    gpures_cuda_event_desc cuda;
    gpures_cuda_context_event_desc cuda_ctx;
    gpures_open_cl_event_desc cl;
    gpures_gl_sync_desc gl;
    gpures_sync_file_desc fd;
    char bytes[GPURES__DESC_MAX];
  } d;
  uint32_t refcount;
  memset(out, 0, sizeof *out);
  out->fd = -1;
  int status = gpures__snapshot(h, op.verb, &out->kind, &refcount, &d);
  if (status != GPURES_OK) return gpures__refail(op, status);
  op.kind = out->kind;
  switch (out->kind) {
    case GPURES_KIND_NOOP_SYNC: out->how = GPURES__WAIT_REACHED; return GPURES_OK;
    case GPURES_KIND_SYNC_FILE:
    case GPURES_KIND_CPU_FENCE:
    case GPURES_KIND_WGPU_SUBMISSION:
    case GPURES_KIND_WGPU_DEFERRED: out->how = GPURES__WAIT_FD; out->fd = d.fd.fd; return GPURES_OK;
    case GPURES_KIND_VK_SEMAPHORE_FD:
      if (d.vk_fd.handle_type != HANDLE_SYNC_FD)
        return host_cannot(op, "an opaque semaphore fd is waited on by the API that imports it");
      out->how = GPURES__WAIT_FD;
      out->fd = d.vk_fd.fd;
      return GPURES_OK;
    case GPURES_KIND_VK_SEMAPHORE:
      if (d.vk.semaphore_type != SEMAPHORE_TIMELINE)
        return host_cannot(op, "a binary semaphore is waited on by a queue (export it as a sync fd)");
      if (!d.vk.device)
        return gpures__fail(op, GPURES_E_UNSUPPORTED, "device", "a host wait needs the VkDevice");
      out->how = GPURES__WAIT_VULKAN;
      out->object = d.vk.semaphore;
      out->device = d.vk.device;
      out->value = d.vk.value;
      return GPURES_OK;
    case GPURES_KIND_CUDA_EVENT:
      out->how = GPURES__WAIT_CUDA;
      out->object = d.cuda.event;
      return GPURES_OK;
    case GPURES_KIND_CUDA_CONTEXT_EVENT:
      out->how = GPURES__WAIT_CUDA;
      out->object = d.cuda_ctx.event;
      out->device = (void *)(uintptr_t)d.cuda_ctx.context;
      return GPURES_OK;
    case GPURES_KIND_OPEN_CL_EVENT:
      out->how = GPURES__WAIT_OPENCL;
      out->object = (uint64_t)(uintptr_t)d.cl.event;
      return GPURES_OK;
    case GPURES_KIND_GL_SYNC:
      out->how = GPURES__WAIT_GL;
      out->object = (uint64_t)(uintptr_t)d.gl.sync;
      return GPURES_OK;
    case GPURES_KIND_GL_SEMAPHORE: return host_cannot(op, "GL waits on it (glWaitSemaphoreEXT)");
    case GPURES_KIND_DRM_SYNCOBJ:
      return host_cannot(op, "a syncobj is waited on through its DRM device (or export a sync file)");
    case GPURES_KIND_D3D12_FENCE:
    case GPURES_KIND_D3D11_KEYED_MUTEX:
    case GPURES_KIND_METAL_EVENT: return host_cannot(op, "its own API waits on it");
    default:
      return gpures__fail(op, GPURES_E_WRONG_KIND, "handle", "%s is not a SyncPoint",
                          gpures__kind_name(out->kind));
  }
}

#if !defined(_WIN32)
int64_t gpures__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int gpures__poll_until(struct pollfd *fds, unsigned n, int64_t deadline) {
  for (;;) {
    int64_t left = deadline == INT64_MAX ? -1 : deadline - gpures__now_ns();
    if (left < 0 && deadline != INT64_MAX) left = 0;
#if defined(__linux__)
    struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
    int ready = ppoll(fds, n, left < 0 ? NULL : &ts, NULL);
#else /* no ppoll (macOS): milliseconds, rounded up so a wait never ends early */
    int ready = poll(fds, n, left < 0 ? -1 : left > INT32_MAX * 1000000LL ? INT32_MAX
                                                                         : (int)((left + 999999) / 1000000));
#endif
    if (ready >= 0 || errno != EINTR) return ready;
    if (deadline != INT64_MAX && gpures__now_ns() >= deadline) return 0;
  }
}

/* poll() for POLLIN up to timeout_ns (negative: forever); *reached. */
static int poll_fd(gpures__op op, int fd, int64_t timeout_ns, bool *reached) {
  int64_t deadline = timeout_ns < 0 ? INT64_MAX : gpures__now_ns() + timeout_ns;
  {
    struct pollfd p = {fd, POLLIN, 0};
    int n = gpures__poll_until(&p, 1, deadline);
    if (n < 0) return gpures__os_fail(op, "fd", "poll", errno);
    if (p.revents & POLLNVAL) return gpures__os_fail(op, "fd", "poll", EBADF);
    /* A fence that ended in error is signalled too (POLLIN); POLLERR alone is not reached. */
    *reached = (p.revents & POLLIN) != 0;
    if (!*reached && (p.revents & POLLERR)) return gpures__os_fail(op, "fd", "poll (POLLERR)", EIO);
    return GPURES_OK;
  }
}

int gpures__fence_query(gpures__op op, const gpures__fence *f, bool *reached) {
  *reached = false;
  uint64_t counter = 0;
  int status;
  switch (f->how) {
    case GPURES__WAIT_REACHED: *reached = true; return GPURES_OK;
    case GPURES__WAIT_FD: return poll_fd(op, f->fd, 0, reached);
    case GPURES__WAIT_VULKAN:
      status = gpures__vk_counter(op, f->device, f->object, &counter);
      *reached = status == GPURES_OK && counter >= f->value;
      return status;
    case GPURES__WAIT_CUDA: return gpures__cuda_query(op, f->object, f->device, reached);
    case GPURES__WAIT_OPENCL: return gpures__cl_query(op, f->object, reached);
    case GPURES__WAIT_GL: return gpures__gl_wait(op, f->object, 0, reached);
    default: return gpures__fail(op, GPURES_E_UNSUPPORTED, "", "nothing to wait with");
  }
}

static int timed_out(gpures__op op) {
  return gpures__fail(op, GPURES_E_TIMED_OUT, "", "the point was not reached in time");
}

/* For APIs that can only be asked: look, then sleep 50 us doubling to 2 ms. */
static int query_until(gpures__op op, const gpures__fence *f, int64_t timeout_ns) {
  int64_t deadline = timeout_ns < 0 ? INT64_MAX : gpures__now_ns() + timeout_ns;
  int64_t nap = 50000;
  for (;;) {
    bool reached = false;
    int status = gpures__fence_query(op, f, &reached);
    if (status != GPURES_OK || reached) return status;
    int64_t now = gpures__now_ns();
    if (now >= deadline) return timed_out(op);
    int64_t sleep = deadline - now < nap ? deadline - now : nap;
    struct timespec ts = {0, (long)sleep};
    nanosleep(&ts, NULL);
    if (nap < 2000000) nap *= 2;
  }
}

int gpures__fence_wait(gpures__op op, const gpures__fence *f, int64_t timeout_ns) {
  bool reached = false;
  int status;
  switch (f->how) {
    case GPURES__WAIT_REACHED: return GPURES_OK;
    case GPURES__WAIT_FD:
      status = poll_fd(op, f->fd, timeout_ns, &reached);
      return status != GPURES_OK ? status : reached ? GPURES_OK : timed_out(op);
    case GPURES__WAIT_VULKAN: return gpures__vk_wait(op, f->device, f->object, f->value, timeout_ns);
    case GPURES__WAIT_GL:
      status = gpures__gl_wait(op, f->object, timeout_ns, &reached);
      return status != GPURES_OK ? status : reached ? GPURES_OK : timed_out(op);
    default: return query_until(op, f, timeout_ns);
  }
}
#else
int64_t gpures__now_ns(void) { return 0; }
int gpures__fence_query(gpures__op op, const gpures__fence *f, bool *reached) {
  *reached = f->how == GPURES__WAIT_REACHED;
  return *reached ? GPURES_OK
                  : gpures__fail(op, GPURES_E_UNSUPPORTED, "", "gpures waits on Linux only");
}
int gpures__fence_wait(gpures__op op, const gpures__fence *f, int64_t timeout_ns) {
  bool reached;
  (void)timeout_ns;
  return gpures__fence_query(op, f, &reached);
}
#endif

/* ------------------------------------------------------------ the API */

/*
** Holds a reference to `sync` (its fd stays open while this thread uses it)
** and reads it as a fence; the caller releases it. Nothing is held on failure.
*/
static int hold_fence(gpures__op *op, gpures_handle sync, gpures__fence *f) {
  int status = gpures_clone(sync);
  if (status != GPURES_OK) return gpures__refail(*op, status);
  status = gpures__fence_of(*op, sync, f);
  op->kind = f->kind;
  if (status != GPURES_OK) (void)gpures_release(sync);
  return status;
}

int gpures_sync_wait(gpures_handle sync, int64_t timeout_ns) {
  gpures__op op = {"wait on", 0};
  gpures__fence f;
  int status = hold_fence(&op, sync, &f);
  if (status != GPURES_OK) return status;
  status = gpures__fence_wait(op, &f, timeout_ns);
  (void)gpures_release(sync);
  return status;
}

int gpures_sync_poll(gpures_handle sync, uint32_t *out_reached) {
  gpures__op op = {"poll", 0};
  if (!out_reached) return gpures__fail(op, GPURES_E_NULL_POINTER, "outReached", "outReached is null");
  *out_reached = 0;
  gpures__fence f;
  bool reached = false;
  int status = hold_fence(&op, sync, &f);
  if (status != GPURES_OK) return status;
  status = gpures__fence_query(op, &f, &reached);
  (void)gpures_release(sync);
  *out_reached = reached;
  return status;
}

int gpures_sync_signal(gpures_handle sync) {
  gpures__op op = {"signal", 0};
  gpures__fence f;
  int status = hold_fence(&op, sync, &f);
  if (status != GPURES_OK) return status;
  if (f.kind == GPURES_KIND_CPU_FENCE || f.kind == GPURES_KIND_WGPU_SUBMISSION ||
      f.kind == GPURES_KIND_WGPU_DEFERRED) { /* their host signals them */
#if !defined(_WIN32)
    uint64_t one = 1;
    /* eventfd: adding 1 makes it readable for every waiter, here and in other processes. */
    if (write(f.fd, &one, sizeof one) != (ssize_t)sizeof one && errno != EAGAIN)
      status = gpures__os_fail(op, "fd", "write(eventfd)", errno);
#endif
  } else if (f.how == GPURES__WAIT_VULKAN) {
    uint64_t counter = 0;
    status = gpures__vk_counter(op, f.device, f.object, &counter);
    if (status == GPURES_OK && counter >= f.value)
      status = gpures__fail(op, GPURES_E_INVALID_VALUE, "value",
                            "the timeline is at %llu already: signalling %llu would move it back",
                            (unsigned long long)counter, (unsigned long long)f.value);
    if (status == GPURES_OK) status = gpures__vk_signal(op, f.device, f.object, f.value);
  } else {
    status = gpures__fail(op, GPURES_E_UNSUPPORTED, "",
                          "the CPU cannot signal it: its producer's API does");
  }
  (void)gpures_release(sync);
  return status;
}

int gpures_cpu_fence_new(gpures_handle *out_sync) {
  gpures__op op = {"create", GPURES_KIND_CPU_FENCE};
  if (!out_sync) return gpures__fail(op, GPURES_E_NULL_POINTER, "outSync", "outSync is null");
  *out_sync = 0;
#if defined(__linux__)
  int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return gpures__os_fail(op, "fd", "eventfd", errno);
  gpures_cpu_fence_desc d = {sizeof d, 0, fd, 0};
  gpures_create_options o = {sizeof o, GPURES_CREATE_TAKE_OWNERSHIP, {0}, 0, 0, 0};
  int status = gpures_create(GPURES_KIND_CPU_FENCE, &d, &o, out_sync);
  if (status != GPURES_OK) gpures__fd_close(fd);
  return status;
#else
  return gpures__fail(op, GPURES_E_UNSUPPORTED_PLATFORM, "", "CpuFence is an eventfd (linux, android)");
#endif
}
