/*
** apis.c: the few entry points of Vulkan, CUDA, OpenCL and GL that waits
** need, opened with dlopen on first use: linking any of them would make every
** host install all four. Each table is filled once; threads that race store
** the same pointers. Only the ABI-stable C signatures are declared here.
*/
#if !defined(_WIN32)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#endif
#include <stdio.h>
#include <string.h>

#include "sync.h"

#if !defined(_WIN32) && !defined(__APPLE__)
#define LIB_VULKAN "libvulkan.so.1"
#define LIB_CUDA "libcuda.so.1"
#define LIB_OPENCL "libOpenCL.so.1"
#define LIB_EGL "libEGL.so.1"

static void *open_lib(const char *name) { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }
static void *sym(void *lib, const char *name) { return lib ? dlsym(lib, name) : NULL; }

static int missing(gpures__op op, const char *lib) {
  const char *why = dlerror();
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "", "%s cannot be opened: %s", lib,
                      why ? why : "not found");
}

/* ------------------------------------------------------------- Vulkan */

typedef struct {
  int32_t s_type; const void *next; uint32_t flags; uint32_t count;
  const uint64_t *semaphores; const uint64_t *values;
} vk_wait_info;
typedef struct { int32_t s_type; const void *next; uint64_t semaphore; uint64_t value; } vk_signal_info;
enum { VK_WAIT_INFO = 1000207004, VK_SIGNAL_INFO = 1000207005 };
enum { VK_OK = 0, VK_TIMEOUT = 2, VK_DEVICE_LOST = -4 };

typedef void *(*vk_proc_fn)(void *device, const char *name);
typedef int32_t (*vk_counter_fn)(void *device, uint64_t semaphore, uint64_t *value);
typedef int32_t (*vk_wait_fn)(void *device, const vk_wait_info *info, uint64_t timeout);
typedef int32_t (*vk_signal_fn)(void *device, const vk_signal_info *info);

static void *vk_device_proc(gpures__op op, void *device, const char *name, int *status) {
  static vk_proc_fn get;
  if (!get) get = (vk_proc_fn)sym(open_lib(LIB_VULKAN), "vkGetDeviceProcAddr");
  if (!get) return *status = missing(op, LIB_VULKAN), NULL;
  void *fn = get(device, name);
  if (!fn) { /* Vulkan 1.1 devices have the KHR names only */
    char khr[64];
    snprintf(khr, sizeof khr, "%sKHR", name);
    fn = get(device, khr);
  }
  if (!fn)
    *status = gpures__fail(op, GPURES_E_UNSUPPORTED, "device",
                           "the device has no %s (timeline semaphores)", name);
  return fn;
}

static int vk_status(gpures__op op, const char *what, int32_t result) {
  if (result == VK_OK) return GPURES_OK;
  if (result == VK_DEVICE_LOST)
    return gpures__fail(op, GPURES_E_DEVICE_LOST, "device", "%s: VK_ERROR_DEVICE_LOST", what);
  return gpures__fail(op, GPURES_E_OS_ERROR, "semaphore", "%s failed: VkResult %d", what,
                      (int)result);
}

int gpures__vk_counter(gpures__op op, void *device, uint64_t semaphore, uint64_t *out_value) {
  int status = GPURES_OK;
  vk_counter_fn fn = (vk_counter_fn)vk_device_proc(op, device, "vkGetSemaphoreCounterValue", &status);
  if (!fn) return status;
  return vk_status(op, "vkGetSemaphoreCounterValue", fn(device, semaphore, out_value));
}

int gpures__vk_wait(gpures__op op, void *device, uint64_t semaphore, uint64_t value,
                    int64_t timeout_ns) {
  int status = GPURES_OK;
  vk_wait_fn fn = (vk_wait_fn)vk_device_proc(op, device, "vkWaitSemaphores", &status);
  if (!fn) return status;
  vk_wait_info info = {VK_WAIT_INFO, NULL, 0, 1, &semaphore, &value};
  int32_t result = fn(device, &info, timeout_ns < 0 ? UINT64_MAX : (uint64_t)timeout_ns);
  if (result == VK_TIMEOUT)
    return gpures__fail(op, GPURES_E_TIMED_OUT, "", "the semaphore did not reach %llu in time",
                        (unsigned long long)value);
  return vk_status(op, "vkWaitSemaphores", result);
}

int gpures__vk_signal(gpures__op op, void *device, uint64_t semaphore, uint64_t value) {
  int status = GPURES_OK;
  vk_signal_fn fn = (vk_signal_fn)vk_device_proc(op, device, "vkSignalSemaphore", &status);
  if (!fn) return status;
  vk_signal_info info = {VK_SIGNAL_INFO, NULL, semaphore, value};
  return vk_status(op, "vkSignalSemaphore", fn(device, &info));
}

/* --------------------------------------------------------------- CUDA */

typedef int (*cu_query_fn)(uint64_t event);
typedef int (*cu_push_fn)(uint64_t context);
typedef int (*cu_pop_fn)(uint64_t *context);
enum { CU_OK = 0, CU_NOT_READY = 600, CU_INVALID_HANDLE = 400, CU_INVALID_CONTEXT = 201 };

int gpures__cuda_query(gpures__op op, uint64_t event, void *context, bool *reached) {
  static cu_query_fn query;
  static cu_push_fn push;
  static cu_pop_fn pop;
  if (!query) {
    void *lib = open_lib(LIB_CUDA);
    push = (cu_push_fn)sym(lib, "cuCtxPushCurrent_v2");
    pop = (cu_pop_fn)sym(lib, "cuCtxPopCurrent_v2");
    query = (cu_query_fn)sym(lib, "cuEventQuery");
  }
  if (!query || !push || !pop) return missing(op, LIB_CUDA);
  if (context && push((uint64_t)(uintptr_t)context) != CU_OK)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "context", "cuCtxPushCurrent refused the context");
  int result = query(event);
  if (context) {
    uint64_t popped;
    (void)pop(&popped);
  }
  *reached = result == CU_OK;
  if (result == CU_OK || result == CU_NOT_READY) return GPURES_OK;
  if (result == CU_INVALID_HANDLE || result == CU_INVALID_CONTEXT)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, result == CU_INVALID_HANDLE ? "event" : "context",
                        "cuEventQuery: CUresult %d", result);
  /* 700..799 are the sticky errors: the context is unusable from now on. */
  return gpures__fail(op, result >= 700 && result < 800 ? GPURES_E_DEVICE_LOST : GPURES_E_OS_ERROR,
                      "event", "cuEventQuery: CUresult %d", result);
}

/* ------------------------------------------------------------- OpenCL */

typedef int32_t (*cl_info_fn)(void *event, uint32_t name, size_t size, void *value, size_t *ret);
enum { CL_EVENT_STATUS = 0x11D3, CL_COMPLETE = 0 };

int gpures__cl_query(gpures__op op, uint64_t event, bool *reached) {
  static cl_info_fn info;
  if (!info) info = (cl_info_fn)sym(open_lib(LIB_OPENCL), "clGetEventInfo");
  if (!info) return missing(op, LIB_OPENCL);
  int32_t state = 0;
  int32_t result = info((void *)(uintptr_t)event, CL_EVENT_STATUS, sizeof state, &state, NULL);
  if (result != 0)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "event", "clGetEventInfo: cl_int %d", (int)result);
  *reached = state == CL_COMPLETE;
  if (state < 0) /* the command ended abnormally: its error code */
    return gpures__fail(op, GPURES_E_DEVICE_LOST, "event", "the command failed: cl_int %d", (int)state);
  return GPURES_OK;
}

typedef int32_t (*cl_object_info_fn)(void *object, uint32_t name, size_t size, void *value,
                                     size_t *ret);
enum { CL_QUEUE_DEVICE = 0x1091, CL_DEVICE_PLATFORM = 0x1031 };

int gpures__cl_queue_device(gpures__op op, void *queue, void **platform, void **device) {
  static cl_object_info_fn queue_info, device_info;
  if (!queue_info) {
    void *lib = open_lib(LIB_OPENCL);
    device_info = (cl_object_info_fn)sym(lib, "clGetDeviceInfo");
    queue_info = (cl_object_info_fn)sym(lib, "clGetCommandQueueInfo");
  }
  if (!queue_info || !device_info) return missing(op, LIB_OPENCL);
  int32_t result = queue_info(queue, CL_QUEUE_DEVICE, sizeof *device, device, NULL);
  if (result == 0) result = device_info(*device, CL_DEVICE_PLATFORM, sizeof *platform, platform, NULL);
  if (result != 0)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "queue", "OpenCL refused the queue: cl_int %d",
                        (int)result);
  return GPURES_OK;
}

/* ----------------------------------------------------------------- GL */

typedef uint32_t (*gl_client_wait_fn)(void *sync, uint32_t flags, uint64_t timeout);
typedef void *(*gl_proc_fn)(const char *name);
typedef void *(*current_fn)(void);
enum { GL_ALREADY = 0x911A, GL_EXPIRED = 0x911B, GL_SATISFIED = 0x911C, GL_FLUSH = 1 };

/* Whether a GL context is current on this thread: EGL's or GLX's. */
static bool gl_current(void) {
  static void *egl;
  if (!egl) egl = open_lib(LIB_EGL);
  current_fn egl_ctx = (current_fn)sym(egl, "eglGetCurrentContext");
  if (egl_ctx && egl_ctx()) return true;
  current_fn glx_ctx = (current_fn)dlsym(RTLD_DEFAULT, "glXGetCurrentContext");
  return glx_ctx && glx_ctx();
}

int gpures__gl_wait(gpures__op op, uint64_t sync, int64_t timeout_ns, bool *reached) {
  static gl_client_wait_fn wait;
  if (!wait) {
    gl_proc_fn proc = (gl_proc_fn)sym(open_lib(LIB_EGL), "eglGetProcAddress");
    wait = (gl_client_wait_fn)(proc ? proc("glClientWaitSync") : dlsym(RTLD_DEFAULT, "glClientWaitSync"));
  }
  if (!wait) return missing(op, LIB_EGL);
  if (!gl_current())
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "context",
                        "no GL context is current on this thread: wait where it is");
  uint32_t result = wait((void *)(uintptr_t)sync, GL_FLUSH,
                         timeout_ns < 0 ? UINT64_MAX : (uint64_t)timeout_ns);
  *reached = result == GL_ALREADY || result == GL_SATISFIED;
  if (*reached || result == GL_EXPIRED) return GPURES_OK;
  return gpures__fail(op, GPURES_E_INVALID_VALUE, "sync", "glClientWaitSync: GL_WAIT_FAILED (0x%x)", result);
}

#else
static int unsupported(gpures__op op, const char *api) {
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "", "gpures waits on %s on Linux only", api);
}
int gpures__vk_counter(gpures__op op, void *d, uint64_t s, uint64_t *v) {
  (void)d, (void)s, (void)v;
  return unsupported(op, "Vulkan semaphores");
}
int gpures__vk_wait(gpures__op op, void *d, uint64_t s, uint64_t v, int64_t t) {
  (void)d, (void)s, (void)v, (void)t;
  return unsupported(op, "Vulkan semaphores");
}
int gpures__vk_signal(gpures__op op, void *d, uint64_t s, uint64_t v) {
  (void)d, (void)s, (void)v;
  return unsupported(op, "Vulkan semaphores");
}
int gpures__cuda_query(gpures__op op, uint64_t e, void *c, bool *r) {
  (void)e, (void)c, (void)r;
  return unsupported(op, "CUDA events");
}
int gpures__cl_query(gpures__op op, uint64_t e, bool *r) {
  (void)e, (void)r;
  return unsupported(op, "OpenCL events");
}
int gpures__cl_queue_device(gpures__op op, void *q, void **p, void **d) {
  (void)q, (void)p, (void)d;
  return unsupported(op, "OpenCL queues");
}
int gpures__gl_wait(gpures__op op, uint64_t s, int64_t t, bool *r) {
  (void)s, (void)t, (void)r;
  return unsupported(op, "GL syncs");
}
#endif
