/*
** sync.h: what sync/'s sources share; not installed.
**   fence.c   a SyncPoint as something to wait on: which way (poll an fd, ask
**             an API, nothing), the checks, the blocking wait and the signal
**   apis.c    Vulkan, CUDA, OpenCL and GL entry points, opened with dlopen on
**             first use so that none is a link-time dependency
**   waiter.c  the one waiter thread and the async waits it holds
**   access.c  the fences a handle carries, begin/end access, dma-buf sync files
*/
#ifndef GPURES_SYNC_H
#define GPURES_SYNC_H

#include "../internal.h"

/* How a point is waited on. */
enum {
  GPURES__WAIT_REACHED = 1, /* NoopSync: always */
  GPURES__WAIT_FD,          /* poll() for POLLIN: sync_file, eventfd, sync-fd semaphore */
  GPURES__WAIT_VULKAN,      /* a timeline's counter, through its device */
  GPURES__WAIT_CUDA,        /* cuEventQuery, with the context pushed when one is given */
  GPURES__WAIT_OPENCL,      /* clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS) */
  GPURES__WAIT_GL           /* glClientWaitSync, where the context is current */
};

typedef struct gpures__fence {
  uint32_t how;     /* GPURES__WAIT_* */
  uint32_t kind;
  int fd;           /* WAIT_FD: the handle's own, open while the caller holds a reference */
  uint64_t object;  /* VkSemaphore, CUevent, cl_event, GLsync */
  void *device;     /* VkDevice; CUcontext (NULL: none pushed) */
  uint64_t value;   /* a timeline's point */
} gpures__fence;

/*
** What `h` is as a fence. The caller holds a reference to h for as long as it
** uses the result. UNSUPPORTED (naming the kind) for a point the host cannot
** wait on; WRONG_KIND for a resource handle.
*/
int gpures__fence_of(gpures__op op, gpures_handle h, gpures__fence *out);
/* Looks once: *reached; DEVICE_LOST, OS_ERROR, UNSUPPORTED otherwise. */
int gpures__fence_query(gpures__op op, const gpures__fence *f, bool *reached);
/* Blocks up to timeout_ns (negative: no limit); TIMED_OUT when it runs out. */
int gpures__fence_wait(gpures__op op, const gpures__fence *f, int64_t timeout_ns);
/* CLOCK_MONOTONIC in nanoseconds. */
int64_t gpures__now_ns(void);
#if !defined(_WIN32)
#include <poll.h>
/*
** poll() until `deadline` (gpures__now_ns() time; INT64_MAX: none), through
** EINTR: ppoll's nanoseconds on Linux, poll's milliseconds (rounded up)
** elsewhere. The count ready, 0 when the time ran out, -1 with errno.
*/
int gpures__poll_until(struct pollfd *fds, unsigned n, int64_t deadline);
#endif

/* apis.c: each returns UNSUPPORTED naming the library when it cannot be opened. */
int gpures__vk_counter(gpures__op op, void *device, uint64_t semaphore, uint64_t *out_value);
int gpures__vk_wait(gpures__op op, void *device, uint64_t semaphore, uint64_t value,
                    int64_t timeout_ns);
int gpures__vk_signal(gpures__op op, void *device, uint64_t semaphore, uint64_t value);
int gpures__cuda_query(gpures__op op, uint64_t event, void *context, bool *reached);
int gpures__cl_query(gpures__op op, uint64_t event, bool *reached);
/* The device and platform of an OpenCL command queue. */
int gpures__cl_queue_device(gpures__op op, void *queue, void **platform, void **device);
int gpures__gl_wait(gpures__op op, uint64_t sync, int64_t timeout_ns, bool *reached);

#endif
