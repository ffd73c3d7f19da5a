/*
** gpu_probe.c: real CUDA, Vulkan and GL objects for the GPU tests of gpures.
**
** Built by tests/gpu/run.sh into tests/gpu/build/libgpuprobe.so and driven
** from Deno through FFI (tests/gpu/gpu_test.ts, bench/gpu/bench.ts). It links no GPU library: libcuda.so.1,
** libvulkan.so.1 and libEGL.so.1 are opened with dlopen and every function is
** resolved with dlsym (or the API's own GetProcAddress). cuda.h is included
** for its types only; native/src/interop/khronos declares the few Vulkan,
** EGL and GL types used (gpures's own declarations).
**
** Every gp_* function returns 0 on success or a negative value on failure,
** with a message in gp_last_error() (helper.h's conventions). Calls must come
** from one thread (the CUDA context and the GL context are made current on the
** caller's thread).
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "khronos/egl_min.h"
#include "khronos/vulkan_min.h"
#include "../helper.h"
#include "pattern.h"

API const char *gp_last_error(void) { return helper_error; }

/* The driver libraries, opened by gp_cuda_open, gp_vk_open and gp_gl_open. */
static void *g_cuda_lib, *g_vk_lib, *g_egl_lib;

/* dlopen(name) into *lib, or fails with -1: callers skip when the library is absent. */
static int open_lib(void **lib, const char *name) {
  *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  return *lib ? 0 : fail_with(-1, "%s could not be opened: %s", name, dlerror());
}

API uint64_t gp_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
** Vulkan, EGL and GL entry points, resolved at run time: GP_FN_DECL declares
** pre_<f> of type PFN_<f>; GP_FN_LOAD sets it from `lookup` or fails the
** calling gp_*_open with -3, `lacks` being the message for the name.
*/
#define GP_FN_DECL(pre, f) static PFN_##f pre##_##f;
#define GP_FN_LOAD(pre, f, lookup, lacks) \
  pre##_##f = (PFN_##f)(lookup);           \
  if (!pre##_##f) return fail_with(-3, lacks, #f);
#define GP_VK_DECL(f) GP_FN_DECL(vk, f)
#define GP_GL_DECL(f) GP_FN_DECL(gl, f)

/* ===================================================================== CUDA */

/* Resolved by their versioned names: STR(cuMemAlloc) is "cuMemAlloc_v2". */
#define GP_STR2(x) #x
#define GP_STR(x) GP_STR2(x)
#define GP_CU_FNS(X)                                                                              \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName)            \
  X(cuDeviceGetUuid) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)       \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuGetErrorName)            \
  X(cuMemAlloc) X(cuMemFree) X(cuMemAllocPitch) X(cuMemGetAddressRange) X(cuPointerGetAttribute)   \
  X(cuMemcpyDtoH) X(cuMemcpyHtoD) X(cuMemcpyDtoD) X(cuMemcpy2D) X(cuMemsetD8) X(cuMemAllocHost)    \
  X(cuMemFreeHost) X(cuArray3DCreate) X(cuArray3DGetDescriptor) X(cuArrayDestroy)                  \
  X(cuSurfObjectCreate) X(cuSurfObjectDestroy) X(cuSurfObjectGetResourceDesc) X(cuModuleLoad)      \
  X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel) X(cuImportExternalMemory)             \
  X(cuExternalMemoryGetMappedBuffer) X(cuDestroyExternalMemory) X(cuGraphicsMapResources)          \
  X(cuGraphicsUnmapResources) X(cuGraphicsSubResourceGetMappedArray)                               \
  X(cuGraphicsUnregisterResource) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)      \
  X(cuStreamQuery)                                                                                 \
  X(cuEventCreate) X(cuEventRecord) X(cuEventQuery) X(cuEventDestroy) X(cuImportExternalSemaphore) \
  X(cuWaitExternalSemaphoresAsync) X(cuSignalExternalSemaphoresAsync)                              \
  X(cuDestroyExternalSemaphore) X(cuMemsetD8Async) X(cuMemsetD32Async) X(cuMemcpyDtoHAsync)       \
  X(cuMemcpyHtoDAsync) X(cuMemGetInfo) X(cuIpcGetMemHandle) X(cuIpcOpenMemHandle)               \
  X(cuIpcCloseMemHandle)
#define GP_CU_DECL(f) static __typeof__(&f) p_##f;
GP_CU_FNS(GP_CU_DECL)
#undef GP_CU_DECL
/* cudaGL.h would pull in GL/gl.h, which the GPU machine lacks. */
typedef CUresult (*PFN_cuGraphicsGLRegisterImage)(CUgraphicsResource *, GLuint, GLenum,
                                                   unsigned int);
static PFN_cuGraphicsGLRegisterImage p_cuGraphicsGLRegisterImage;

static CUdevice g_dev;
static CUcontext g_ctx;
static CUmodule g_module;
static CUfunction g_fill_bytes, g_check_bytes, g_fill_2d, g_fill_surface;
static CUdeviceptr g_counter;
static uint8_t g_cuda_uuid[16];
static char g_kernel_note[1024];

static const char *cu_name(CUresult r) {
  const char *name = NULL;
  if (p_cuGetErrorName && p_cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  return "CUDA_ERROR_?";
}

#define CU(call)                                                                                  \
  do {                                                                                            \
    CUresult r_ = (call);                                                                         \
    if (r_ != CUDA_SUCCESS) return fail_with(-(int)r_ - 1000, "%s: %s (%d)", #call, cu_name(r_), (int)r_); \
  } while (0)

/*
** Opens the driver and makes device `ordinal`'s primary context current.
** kernels: path of kernels.fatbin, or NULL/"" to run without kernels (the
** fills then upload from the host). Returns -1 when libcuda.so.1 is absent and
** -2 when the driver has no device, so callers can skip with that reason.
*/
API int gp_cuda_open(const char *kernels, int ordinal) {
  if (g_ctx) return 0;
  if (open_lib(&g_cuda_lib, "libcuda.so.1") != 0) return -1;
#define GP_CU_LOAD(f)                                                                             \
  p_##f = (__typeof__(p_##f))dlsym(g_cuda_lib, GP_STR(f));                                        \
  if (!p_##f) return fail_with(-3, "libcuda.so.1 lacks %s", GP_STR(f));
  GP_CU_FNS(GP_CU_LOAD)
#undef GP_CU_LOAD
  p_cuGraphicsGLRegisterImage =
      (PFN_cuGraphicsGLRegisterImage)dlsym(g_cuda_lib, "cuGraphicsGLRegisterImage");
  CUresult r = p_cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE) return fail_with(-2, "cuInit: no CUDA device (%s)", cu_name(r));
  if (r != CUDA_SUCCESS) return fail_with(-2, "cuInit failed: %s (%d)", cu_name(r), (int)r);
  int count = 0;
  CU(p_cuDeviceGetCount(&count));
  if (count <= ordinal) return fail_with(-2, "CUDA reports %d device(s); wanted ordinal %d", count, ordinal);
  CU(p_cuDeviceGet(&g_dev, ordinal));
  CU(p_cuDevicePrimaryCtxRetain(&g_ctx, g_dev));
  CU(p_cuCtxSetCurrent(g_ctx));
  CUuuid uuid;
  CU(p_cuDeviceGetUuid(&uuid, g_dev));
  memcpy(g_cuda_uuid, uuid.bytes, 16);
  CU(p_cuMemAlloc(&g_counter, 8));
  snprintf(g_kernel_note, sizeof g_kernel_note, "no kernels file given");
  if (kernels && *kernels) {
    /* Without usable kernels the probe still runs (uploads instead), and says why. */
    CUresult r1 = p_cuModuleLoad(&g_module, kernels), r2 = CUDA_SUCCESS;
    if (r1 == CUDA_SUCCESS) {
      if ((r2 = p_cuModuleGetFunction(&g_fill_bytes, g_module, "fill_bytes")) == CUDA_SUCCESS &&
          (r2 = p_cuModuleGetFunction(&g_check_bytes, g_module, "check_bytes")) == CUDA_SUCCESS &&
          (r2 = p_cuModuleGetFunction(&g_fill_2d, g_module, "fill_2d")) == CUDA_SUCCESS)
        r2 = p_cuModuleGetFunction(&g_fill_surface, g_module, "fill_surface");
    }
    if (r1 != CUDA_SUCCESS || r2 != CUDA_SUCCESS) {
      snprintf(g_kernel_note, sizeof g_kernel_note, "cuModuleLoad(%s): %s", kernels,
               cu_name(r1 != CUDA_SUCCESS ? r1 : r2));
      if (g_module) p_cuModuleUnload(g_module);
      g_module = NULL;
      g_fill_bytes = g_check_bytes = g_fill_2d = g_fill_surface = NULL;
    } else {
      snprintf(g_kernel_note, sizeof g_kernel_note, "loaded %s", kernels);
    }
  }
  return 0;
}

/* Whether the kernels loaded, and if not why. */
API const char *gp_kernel_note(void) { return g_kernel_note; }

/*
** name: the device name. out: [0] driver version (1000*major + 10*minor),
** [1] device count, [2] compute capability major, [3] minor, [4] kernels
** loaded (1/0), [5] total memory in MiB, [6] GL interop entry point present.
** uuid: cuDeviceGetUuid's 16 bytes.
*/
API int gp_cuda_info(char *name, uint32_t cap, int32_t *out, uint8_t *uuid) {
  if (!g_ctx) return fail_with(-4, "CUDA is not open");
  int v = 0, count = 0, major = 0, minor = 0;
  size_t total = 0;
  CU(p_cuDriverGetVersion(&v));
  CU(p_cuDeviceGetCount(&count));
  CU(p_cuDeviceGetName(name, (int)cap, g_dev));
  CU(p_cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g_dev));
  CU(p_cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g_dev));
  CU(p_cuDeviceTotalMem(&total, g_dev));
  out[0] = v;
  out[1] = count;
  out[2] = major;
  out[3] = minor;
  out[4] = g_module != NULL;
  out[5] = (int32_t)(total >> 20);
  out[6] = p_cuGraphicsGLRegisterImage != NULL;
  memcpy(uuid, g_cuda_uuid, 16);
  return 0;
}

API int gp_cu_alloc(uint64_t size, uint64_t *out_ptr) {
  CUdeviceptr p = 0;
  CU(p_cuMemAlloc(&p, (size_t)size));
  *out_ptr = p;
  return 0;
}

API int gp_cu_free(uint64_t ptr) {
  CU(p_cuMemFree((CUdeviceptr)ptr));
  return 0;
}

/* out: [0] pitch, and *out_ptr the allocation (cuMemAllocPitch). */
API int gp_cu_alloc_pitch(uint64_t row_bytes, uint64_t rows, uint32_t element_bytes,
                             uint64_t *out) {
  CUdeviceptr p = 0;
  size_t pitch = 0;
  CU(p_cuMemAllocPitch(&p, &pitch, (size_t)row_bytes, (size_t)rows, element_bytes));
  out[0] = p;
  out[1] = pitch;
  return 0;
}

/* What CUDA says about an address: out [0] allocation base, [1] its size. uuid: its device's. */
API int gp_cu_pointer_info(uint64_t ptr, uint64_t *out, uint8_t *uuid) {
  CUdeviceptr base = 0;
  size_t size = 0;
  CU(p_cuMemGetAddressRange(&base, &size, (CUdeviceptr)ptr));
  int ordinal = -1;
  CU(p_cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)ptr));
  CUdevice dev;
  CU(p_cuDeviceGet(&dev, ordinal));
  CUuuid u;
  CU(p_cuDeviceGetUuid(&u, dev));
  memcpy(uuid, u.bytes, 16);
  out[0] = base;
  out[1] = size;
  return 0;
}

static unsigned grid_for(uint64_t n) {
  uint64_t blocks = (n + 255) / 256;
  return (unsigned)(blocks > 4096 ? 4096 : blocks ? blocks : 1);
}

static uint8_t *host_scratch(size_t n) {
  static uint8_t *buf;
  static size_t cap;
  if (n > cap) {
    free(buf);
    buf = malloc(n);
    cap = buf ? n : 0;
  }
  return buf;
}

static uint64_t count_bytes(const uint8_t *p, uint64_t n, uint32_t seed) {
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; i++) bad += p[i] != gp_pattern_byte(i, seed);
  return bad;
}

static uint64_t count_2d(const uint8_t *p, uint32_t row_bytes, uint32_t rows, uint32_t seed) {
  uint64_t bad = 0;
  for (uint32_t y = 0; y < rows; y++)
    for (uint32_t x = 0; x < row_bytes; x++)
      bad += p[(uint64_t)y * row_bytes + x] != gp_pattern_2d(x, y, seed);
  return bad;
}

/* Writes the linear pattern: with a CUDA kernel when loaded, else an upload (kernel 0 in out). */
API int gp_cu_fill(uint64_t ptr, uint64_t n, uint32_t seed) {
  if (g_fill_bytes) {
    CUdeviceptr p = ptr;
    unsigned long long nn = n;
    void *args[] = {&p, &nn, &seed};
    CU(p_cuLaunchKernel(g_fill_bytes, grid_for(n), 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CU(p_cuCtxSynchronize());
    return 0;
  }
  uint8_t *h = host_scratch((size_t)n);
  if (!h) return fail_with(-5, "out of host memory");
  for (uint64_t i = 0; i < n; i++) h[i] = gp_pattern_byte(i, seed);
  CU(p_cuMemcpyHtoD((CUdeviceptr)ptr, h, (size_t)n));
  return 0;
}

/* Counts bytes unlike the pattern, read by a CUDA kernel on the device (else copied back). */
API int gp_cu_check(uint64_t ptr, uint64_t n, uint32_t seed, uint64_t *out_mismatches) {
  if (g_check_bytes) {
    CU(p_cuMemsetD8(g_counter, 0, 8));
    CUdeviceptr p = ptr, c = g_counter;
    unsigned long long nn = n;
    void *args[] = {&p, &nn, &seed, &c};
    CU(p_cuLaunchKernel(g_check_bytes, grid_for(n), 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CU(p_cuCtxSynchronize());
    CU(p_cuMemcpyDtoH(out_mismatches, g_counter, 8));
    return 0;
  }
  uint8_t *h = host_scratch((size_t)n);
  if (!h) return fail_with(-5, "out of host memory");
  CU(p_cuMemcpyDtoH(h, (CUdeviceptr)ptr, (size_t)n));
  *out_mismatches = count_bytes(h, n, seed);
  return 0;
}

/* Copies `n` bytes back with cuMemcpyDtoH and checks them on the host. */
API int gp_cu_check_host(uint64_t ptr, uint64_t n, uint32_t seed, uint64_t *out_mismatches) {
  uint8_t *h = host_scratch((size_t)n);
  if (!h) return fail_with(-5, "out of host memory");
  CU(p_cuMemcpyDtoH(h, (CUdeviceptr)ptr, (size_t)n));
  *out_mismatches = count_bytes(h, n, seed);
  return 0;
}

/* One plane of a pitched frame: a kernel (else a 2D upload) writes rows of row_bytes at `pitch`. */
API int gp_cu_fill_2d(uint64_t ptr, uint64_t pitch, uint32_t row_bytes, uint32_t rows,
                         uint32_t seed) {
  if (g_fill_2d) {
    CUdeviceptr p = ptr;
    unsigned long long pp = pitch;
    void *args[] = {&p, &pp, &row_bytes, &rows, &seed};
    CU(p_cuLaunchKernel(g_fill_2d, (row_bytes + 31) / 32, (rows + 7) / 8, 1, 32, 8, 1, 0, NULL,
                        args, NULL));
    CU(p_cuCtxSynchronize());
    return 0;
  }
  uint8_t *h = host_scratch((size_t)row_bytes * rows);
  if (!h) return fail_with(-5, "out of host memory");
  for (uint32_t y = 0; y < rows; y++)
    for (uint32_t x = 0; x < row_bytes; x++) h[(uint64_t)y * row_bytes + x] = gp_pattern_2d(x, y, seed);
  CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = h, .srcPitch = row_bytes,
                     .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = ptr, .dstPitch = pitch,
                     .WidthInBytes = row_bytes, .Height = rows};
  CU(p_cuMemcpy2D(&c));
  return 0;
}

/* cuMemcpy2D of a plane (at CUDA's own pitch) to the host, checked there. */
API int gp_cu_check_2d_host(uint64_t ptr, uint64_t pitch, uint32_t row_bytes, uint32_t rows,
                               uint32_t seed, uint64_t *out_mismatches) {
  uint8_t *h = host_scratch((size_t)row_bytes * rows);
  if (!h) return fail_with(-5, "out of host memory");
  CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = ptr, .srcPitch = pitch,
                     .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = h, .dstPitch = row_bytes,
                     .WidthInBytes = row_bytes, .Height = rows};
  CU(p_cuMemcpy2D(&c));
  *out_mismatches = count_2d(h, row_bytes, rows, seed);
  return 0;
}

/* An RGBA8 CUDA array with surface load/store and its surface object: out [0] surface, [1] array. */
API int gp_cu_surface_create(uint32_t width, uint32_t height, uint64_t *out) {
  CUDA_ARRAY3D_DESCRIPTOR d;
  memset(&d, 0, sizeof d);
  d.Width = width;
  d.Height = height;
  d.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  d.NumChannels = 4;
  d.Flags = CUDA_ARRAY3D_SURFACE_LDST;
  CUarray array;
  CU(p_cuArray3DCreate(&array, &d));
  CUDA_RESOURCE_DESC rd;
  memset(&rd, 0, sizeof rd);
  rd.resType = CU_RESOURCE_TYPE_ARRAY;
  rd.res.array.hArray = array;
  CUsurfObject surface = 0;
  CUresult r = p_cuSurfObjectCreate(&surface, &rd);
  if (r != CUDA_SUCCESS) {
    p_cuArrayDestroy(array);
    return fail_with(-(int)r - 1000, "cuSurfObjectCreate: %s", cu_name(r));
  }
  out[0] = surface;
  out[1] = (uint64_t)(uintptr_t)array;
  return 0;
}

/*
** What CUDA says about a surface object: out [0] resource type, [1] width,
** [2] height, [3] CUarray_format, [4] channels, [5] flags; *out_array its array.
*/
API int gp_cu_surface_query(uint64_t surface, uint32_t *out, uint64_t *out_array) {
  CUDA_RESOURCE_DESC rd;
  CU(p_cuSurfObjectGetResourceDesc(&rd, (CUsurfObject)surface));
  out[0] = rd.resType;
  if (rd.resType != CU_RESOURCE_TYPE_ARRAY) return 0;
  CUDA_ARRAY3D_DESCRIPTOR d;
  CU(p_cuArray3DGetDescriptor(&d, rd.res.array.hArray));
  out[1] = (uint32_t)d.Width;
  out[2] = (uint32_t)d.Height;
  out[3] = d.Format;
  out[4] = d.NumChannels;
  out[5] = d.Flags;
  *out_array = (uint64_t)(uintptr_t)rd.res.array.hArray;
  return 0;
}

/* A kernel writes the 2D pattern (row bytes = 4 * width) through the surface object. */
API int gp_cu_surface_fill(uint64_t surface, uint32_t width, uint32_t height, uint32_t seed) {
  if (!g_fill_surface) return fail_with(-6, "no kernels loaded: cannot write through a surface");
  unsigned long long s = surface;
  void *args[] = {&s, &width, &height, &seed};
  CU(p_cuLaunchKernel(g_fill_surface, (width + 15) / 16, (height + 15) / 16, 1, 16, 16, 1, 0, NULL,
                      args, NULL));
  CU(p_cuCtxSynchronize());
  return 0;
}

static int array_to_host(CUarray array, uint8_t *h, uint32_t row_bytes, uint32_t rows) {
  CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = array,
                     .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = h, .dstPitch = row_bytes,
                     .WidthInBytes = row_bytes, .Height = rows};
  CU(p_cuMemcpy2D(&c));
  return 0;
}

/* Copies an RGBA8 array to the host and checks the 2D pattern. */
API int gp_cu_array_check(uint64_t array, uint32_t width, uint32_t height, uint32_t seed,
                             uint64_t *out_mismatches) {
  uint8_t *h = host_scratch((size_t)width * 4 * height);
  if (!h) return fail_with(-5, "out of host memory");
  int rc = array_to_host((CUarray)(uintptr_t)array, h, width * 4, height);
  if (rc) return rc;
  *out_mismatches = count_2d(h, width * 4, height, seed);
  return 0;
}

API int gp_cu_surface_destroy(uint64_t surface, uint64_t array) {
  CU(p_cuSurfObjectDestroy((CUsurfObject)surface));
  CU(p_cuArrayDestroy((CUarray)(uintptr_t)array));
  return 0;
}

/*
** Imports an opaque fd (Vulkan memory) and maps `map_size` bytes at `offset`
** as a device pointer: out [0] CUexternalMemory, [1] CUdeviceptr. CUDA owns
** the fd once the import succeeds; on failure the probe closes it.
*/
API int gp_cu_import_fd(int fd, uint64_t size, uint32_t dedicated, uint64_t offset,
                           uint64_t map_size, uint64_t *out) {
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC hd;
  memset(&hd, 0, sizeof hd);
  hd.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  hd.handle.fd = fd;
  hd.size = size;
  hd.flags = dedicated ? CUDA_EXTERNAL_MEMORY_DEDICATED : 0;
  CUexternalMemory ext = NULL;
  CUresult r = p_cuImportExternalMemory(&ext, &hd);
  if (r != CUDA_SUCCESS) {
    close(fd);
    return fail_with(-(int)r - 1000, "cuImportExternalMemory(OPAQUE_FD, %llu bytes): %s",
                (unsigned long long)size, cu_name(r));
  }
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC bd;
  memset(&bd, 0, sizeof bd);
  bd.offset = offset;
  bd.size = map_size;
  CUdeviceptr p = 0;
  r = p_cuExternalMemoryGetMappedBuffer(&p, ext, &bd);
  if (r != CUDA_SUCCESS) {
    p_cuDestroyExternalMemory(ext);
    return fail_with(-(int)r - 1000, "cuExternalMemoryGetMappedBuffer: %s", cu_name(r));
  }
  out[0] = (uint64_t)(uintptr_t)ext;
  out[1] = p;
  return 0;
}

API int gp_cu_unimport(uint64_t ext, uint64_t ptr) {
  CU(p_cuMemFree((CUdeviceptr)ptr));
  CU(p_cuDestroyExternalMemory((CUexternalMemory)(uintptr_t)ext));
  return 0;
}

API int gp_cu_pinned_alloc(uint64_t size, uint64_t *out) {
  void *p = NULL;
  CU(p_cuMemAllocHost(&p, (size_t)size));
  *out = (uint64_t)(uintptr_t)p;
  return 0;
}

API int gp_cu_pinned_free(uint64_t p) {
  CU(p_cuMemFreeHost((void *)(uintptr_t)p));
  return 0;
}

/*
** The copy a consumer makes without zero copy, timed on the host over
** `iters` frames after 3 warm-up frames: out [0] µs per frame of
** device→host→device through pinned memory, [1] of its device→host half,
** [2] of its host→device half, [3] µs of one device→device copy.
*/
API int gp_cu_bench_copy(uint64_t src, uint64_t dst, uint64_t pinned, uint64_t n,
                            uint32_t iters, double *out) {
  void *h = (void *)(uintptr_t)pinned;
  for (int i = 0; i < 3; i++) {
    CU(p_cuMemcpyDtoH(h, (CUdeviceptr)src, (size_t)n));
    CU(p_cuMemcpyHtoD((CUdeviceptr)dst, h, (size_t)n));
    CU(p_cuCtxSynchronize());
  }
  uint64_t d2h = 0, h2d = 0;
  uint64_t t0 = gp_now_ns();
  for (uint32_t i = 0; i < iters; i++) {
    uint64_t a = gp_now_ns();
    CU(p_cuMemcpyDtoH(h, (CUdeviceptr)src, (size_t)n));
    CU(p_cuCtxSynchronize());
    uint64_t b = gp_now_ns();
    CU(p_cuMemcpyHtoD((CUdeviceptr)dst, h, (size_t)n));
    CU(p_cuCtxSynchronize());
    uint64_t c = gp_now_ns();
    d2h += b - a;
    h2d += c - b;
  }
  uint64_t t1 = gp_now_ns();
  for (uint32_t i = 0; i < iters; i++) {
    CU(p_cuMemcpyDtoD((CUdeviceptr)dst, (CUdeviceptr)src, (size_t)n));
    CU(p_cuCtxSynchronize());
  }
  uint64_t t2 = gp_now_ns();
  out[0] = (double)(t1 - t0) / iters / 1e3;
  out[1] = (double)d2h / iters / 1e3;
  out[2] = (double)h2d / iters / 1e3;
  out[3] = (double)(t2 - t1) / iters / 1e3;
  return 0;
}

/* The open file an fd names: out [0] st_dev, [1] st_ino, [2] st_mode, [3] st_size; link: /proc/self/fd/N. */
API int gp_fd_identity(int fd, uint64_t *out, char *link, uint32_t cap) {
  struct stat st;
  if (fstat(fd, &st) != 0) return fail_with(-7, "fstat(%d): %s", fd, strerror(errno));
  out[0] = st.st_dev;
  out[1] = st.st_ino;
  out[2] = st.st_mode;
  out[3] = (uint64_t)st.st_size;
  if (link && cap) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, cap - 1);
    link[n > 0 ? n : 0] = 0;
  }
  return 0;
}

/* Writes 512 MiB of scratch memory, pushing everything else out of the GPU's L2 (60 MB on an H200). */
API int gp_cu_evict_l2(void) {
  static CUdeviceptr scratch;
  const size_t n = 512u << 20;
  if (!scratch) CU(p_cuMemAlloc(&scratch, n));
  CU(p_cuMemsetD8(scratch, 0xa5, n));
  CU(p_cuCtxSynchronize());
  return 0;
}

/*
** Whether two fds name the same open file (kcmp KCMP_FILE): 1 same, 0 not,
** negative when the kernel refuses kcmp. The fd identity that still works
** where every opaque fd is the same device file (fstat gives one inode).
*/
API int gp_fd_same_file(int a, int b) {
  long r = syscall(SYS_kcmp, (long)getpid(), (long)getpid(), 0 /* KCMP_FILE */, (long)a, (long)b);
  if (r < 0) return fail_with(-7, "kcmp: %s", strerror(errno));
  return r == 0;
}

/* Whether fd is open (fcntl F_GETFD succeeds): for checking that gpures closed its fds. */
API int gp_fd_is_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

API int gp_fd_close(int fd) { return close(fd) == 0 ? 0 : fail_with(-7, "close(%d): %s", fd, strerror(errno)); }

/* =================================================================== Vulkan */

#define GP_VK_INSTANCE_FNS(X)                                                                     \
  X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties2)             \
  X(vkGetPhysicalDeviceMemoryProperties) X(vkGetPhysicalDeviceQueueFamilyProperties)               \
  X(vkEnumerateDeviceExtensionProperties) X(vkCreateDevice) X(vkGetDeviceProcAddr)
#define GP_VK_DEVICE_FNS(X)                                                                       \
  X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer)                      \
  X(vkGetBufferMemoryRequirements) X(vkCreateImage) X(vkDestroyImage)                              \
  X(vkGetImageMemoryRequirements) X(vkGetImageSubresourceLayout) X(vkAllocateMemory)               \
  X(vkFreeMemory) X(vkBindBufferMemory) X(vkBindImageMemory) X(vkMapMemory) X(vkUnmapMemory)       \
  X(vkGetMemoryFdKHR) X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers)   \
  X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkResetCommandBuffer) X(vkCmdCopyBuffer)         \
  X(vkCmdPipelineBarrier) X(vkQueueSubmit) X(vkQueueWaitIdle)
GP_VK_INSTANCE_FNS(GP_VK_DECL) GP_VK_DEVICE_FNS(GP_VK_DECL)

static PFN_vkGetInstanceProcAddr vk_gipa;
static VkInstance g_instance;
static VkPhysicalDevice g_phys;
static VkDevice g_device;
static VkQueue g_queue;
static uint32_t g_queue_family;
static VkCommandPool g_pool;
static VkCommandBuffer g_cmd;
static VkPhysicalDeviceMemoryProperties g_memprops;
static VkPhysicalDeviceProperties2 g_props;
static VkPhysicalDeviceIDProperties g_idprops;
static int g_has_dma_buf;
/* Semaphores (the sync checks): what the device was created with, or why not. */
static int g_vk_api_1_2, g_has_sem_fd, g_has_timeline;
static char g_sync_note[512];
GP_VK_DECL(vkGetPhysicalDeviceFeatures2)
GP_VK_DECL(vkGetPhysicalDeviceExternalSemaphoreProperties)
#define GP_VK_SYNC_FNS(X)                                                                         \
  X(vkCreateSemaphore) X(vkDestroySemaphore) X(vkGetSemaphoreFdKHR) X(vkGetSemaphoreCounterValue)  \
  X(vkWaitSemaphores) X(vkSignalSemaphore)
GP_VK_SYNC_FNS(GP_VK_DECL)

typedef struct {
  VkBuffer buffer;
  VkDeviceMemory memory;
  VkDeviceSize size;
  void *mapped;
} gp_vk_buffer;

#define GP_VK_SLOTS 64
static gp_vk_buffer g_slots[GP_VK_SLOTS];
static gp_vk_buffer g_staging;

#define VK(call)                                                                                  \
  do {                                                                                            \
    VkResult r_ = (call);                                                                         \
    if (r_ != VK_SUCCESS) return fail_with(-2000 + r_, "%s: VkResult %d", #call, (int)r_);            \
  } while (0)

/* A memory type in `bits` with all of `need` (preferring `prefer`, avoiding `avoid`), or -1. */
static int pick_memory_type(uint32_t bits, VkFlags need, VkFlags prefer, VkFlags avoid) {
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < g_memprops.memoryTypeCount; i++) {
    VkFlags f = g_memprops.memoryTypes[i].propertyFlags;
    if (!(bits & (1u << i)) || (f & need) != need) continue;
    int score = ((f & prefer) == prefer ? 2 : 0) + (f & avoid ? 0 : 1);
    if (score > best_score) best = (int)i, best_score = score;
  }
  return best;
}

/*
** Opens Vulkan on the physical device whose deviceUUID is `uuid` (CUDA's),
** else the first NVIDIA one, with VK_KHR_external_memory_fd. Returns -1 when
** libvulkan.so.1 is absent and -2 when no suitable device is found.
*/
API int gp_vk_open(const uint8_t *uuid) {
  if (g_device) return 0;
  if (open_lib(&g_vk_lib, "libvulkan.so.1") != 0) return -1;
  vk_gipa = (PFN_vkGetInstanceProcAddr)dlsym(g_vk_lib, "vkGetInstanceProcAddr");
  if (!vk_gipa) return fail_with(-1, "libvulkan.so.1 lacks vkGetInstanceProcAddr");
  PFN_vkCreateInstance create = (PFN_vkCreateInstance)vk_gipa(NULL, "vkCreateInstance");
  /* Vulkan 1.2 where the loader has it: timeline semaphores are core there. */
  PFN_vkEnumerateInstanceVersion inst_version =
      (PFN_vkEnumerateInstanceVersion)vk_gipa(NULL, "vkEnumerateInstanceVersion");
  uint32_t loader_version = VK_API_VERSION_1_1;
  if (inst_version && inst_version(&loader_version) != VK_SUCCESS) loader_version = VK_API_VERSION_1_1;
  g_vk_api_1_2 = loader_version >= VK_API_VERSION_1_2;
  VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "gpures-gpu-probe", 1,
                           "gpures", 1, g_vk_api_1_2 ? VK_API_VERSION_1_2 : VK_API_VERSION_1_1};
  VkInstanceCreateInfo ici;
  memset(&ici, 0, sizeof ici);
  ici.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ici.pApplicationInfo = &app;
  VkResult r = create(&ici, NULL, &g_instance);
  if (r != VK_SUCCESS) return fail_with(-2, "vkCreateInstance: VkResult %d (no Vulkan driver?)", (int)r);
#define GP_VK_LOAD_I(f) GP_FN_LOAD(vk, f, vk_gipa(g_instance, #f), "Vulkan lacks %s")
  GP_VK_INSTANCE_FNS(GP_VK_LOAD_I)
#undef GP_VK_LOAD_I
  VkPhysicalDevice devs[16];
  uint32_t n = 16;
  r = vk_vkEnumeratePhysicalDevices(g_instance, &n, devs);
  if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0)
    return fail_with(-2, "Vulkan lists no physical device (VkResult %d)", (int)r);
  int chosen = -1;
  /* GP_PROBE_ANY_VENDOR=1 accepts any device (checking the probe on a CPU Vulkan such as lavapipe). */
  const char *any = getenv("GP_PROBE_ANY_VENDOR");
  uint32_t want_vendor = any && *any == '1' ? 0 : 0x10de;
  for (uint32_t i = 0; i < n; i++) {
    VkPhysicalDeviceIDProperties idp;
    memset(&idp, 0, sizeof idp);
    idp.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
    VkPhysicalDeviceProperties2 p;
    memset(&p, 0, sizeof p);
    p.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p.pNext = &idp;
    vk_vkGetPhysicalDeviceProperties2(devs[i], &p);
    int match = uuid ? memcmp(idp.deviceUUID, uuid, 16) == 0 : 0;
    if (match || (chosen < 0 && (!want_vendor || p.properties.vendorID == want_vendor))) {
      chosen = (int)i;
      g_props = p;
      g_props.pNext = NULL;
      g_idprops = idp;
      g_idprops.pNext = NULL;
      if (match) break;
    }
  }
  if (chosen < 0) return fail_with(-2, "Vulkan lists %u device(s), none NVIDIA", n);
  g_phys = devs[chosen];
  vk_vkGetPhysicalDeviceMemoryProperties(g_phys, &g_memprops);

  uint32_t next = 0;
  vk_vkEnumerateDeviceExtensionProperties(g_phys, NULL, &next, NULL);
  VkExtensionProperties *exts = calloc(next ? next : 1, sizeof *exts);
  if (!exts) return fail_with(-5, "out of host memory");
  vk_vkEnumerateDeviceExtensionProperties(g_phys, NULL, &next, exts);
  int has_fd = 0, has_timeline_ext = 0;
  for (uint32_t i = 0; i < next; i++) {
    if (!strcmp(exts[i].extensionName, "VK_KHR_external_memory_fd")) has_fd = 1;
    if (!strcmp(exts[i].extensionName, "VK_KHR_external_semaphore_fd")) g_has_sem_fd = 1;
    if (!strcmp(exts[i].extensionName, "VK_KHR_timeline_semaphore")) has_timeline_ext = 1;
    if (!strcmp(exts[i].extensionName, "VK_EXT_external_memory_dma_buf")) g_has_dma_buf = 1;
  }
  free(exts);
  if (!has_fd) return fail_with(-2, "the Vulkan device lacks VK_KHR_external_memory_fd");

  VkQueueFamilyProperties qf[16];
  uint32_t nq = 16;
  vk_vkGetPhysicalDeviceQueueFamilyProperties(g_phys, &nq, qf);
  g_queue_family = UINT32_MAX;
  for (uint32_t i = 0; i < nq && g_queue_family == UINT32_MAX; i++)
    if (qf[i].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) g_queue_family = i;
  if (g_queue_family == UINT32_MAX) return fail_with(-2, "no graphics or compute queue family");
  float prio = 1.0f;
  VkDeviceQueueCreateInfo qci;
  memset(&qci, 0, sizeof qci);
  qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qci.queueFamilyIndex = g_queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &prio;
  /* The semaphore extensions and the timeline feature, where the device has them. */
  const char *ext_names[3] = {"VK_KHR_external_memory_fd"};
  uint32_t n_ext = 1;
  if (g_has_sem_fd) ext_names[n_ext++] = "VK_KHR_external_semaphore_fd";
  if (has_timeline_ext) ext_names[n_ext++] = "VK_KHR_timeline_semaphore";
  vk_vkGetPhysicalDeviceFeatures2 =
      (PFN_vkGetPhysicalDeviceFeatures2)vk_gipa(g_instance, "vkGetPhysicalDeviceFeatures2");
  vk_vkGetPhysicalDeviceExternalSemaphoreProperties =
      (PFN_vkGetPhysicalDeviceExternalSemaphoreProperties)vk_gipa(
          g_instance, "vkGetPhysicalDeviceExternalSemaphoreProperties");
  VkPhysicalDeviceTimelineSemaphoreFeatures tl;
  memset(&tl, 0, sizeof tl);
  tl.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES;
  if (vk_vkGetPhysicalDeviceFeatures2 && (g_vk_api_1_2 || has_timeline_ext)) {
    VkPhysicalDeviceFeatures2 f2;
    memset(&f2, 0, sizeof f2);
    f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f2.pNext = &tl;
    vk_vkGetPhysicalDeviceFeatures2(g_phys, &f2);
    tl.pNext = NULL;
  }
  g_has_timeline = tl.timelineSemaphore == VK_TRUE;
  VkDeviceCreateInfo dci;
  memset(&dci, 0, sizeof dci);
  dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.pNext = g_has_timeline ? &tl : NULL;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = n_ext;
  dci.ppEnabledExtensionNames = ext_names;
  VK(vk_vkCreateDevice(g_phys, &dci, NULL, &g_device));
#define GP_VK_LOAD_D(f) GP_FN_LOAD(vk, f, vk_vkGetDeviceProcAddr(g_device, #f), "Vulkan device lacks %s")
  GP_VK_DEVICE_FNS(GP_VK_LOAD_D)
#undef GP_VK_LOAD_D
  vk_vkGetDeviceQueue(g_device, g_queue_family, 0, &g_queue);
  /* The sync checks' entry points: optional, a missing one skips those checks with its name. */
  g_sync_note[0] = 0;
#define GP_VK_LOAD_SYNC(f)                                                                        \
  vk_##f = (PFN_##f)vk_vkGetDeviceProcAddr(g_device, #f);                                         \
  if (!vk_##f) vk_##f = (PFN_##f)vk_vkGetDeviceProcAddr(g_device, #f "KHR");                      \
  if (!vk_##f && !g_sync_note[0]) snprintf(g_sync_note, sizeof g_sync_note, "the device has no %s", #f);
  GP_VK_SYNC_FNS(GP_VK_LOAD_SYNC)
#undef GP_VK_LOAD_SYNC
  if (!g_has_sem_fd)
    snprintf(g_sync_note, sizeof g_sync_note, "the Vulkan device lacks VK_KHR_external_semaphore_fd");
  else if (!g_has_timeline)
    snprintf(g_sync_note, sizeof g_sync_note, "the Vulkan device has no timelineSemaphore feature");
  VkCommandPoolCreateInfo pci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL,
                                 VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, g_queue_family};
  VK(vk_vkCreateCommandPool(g_device, &pci, NULL, &g_pool));
  VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, g_pool,
                                     VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
  VK(vk_vkAllocateCommandBuffers(g_device, &cai, &g_cmd));
  return 0;
}

/*
** name: the device name. out: [0] VkInstance, [1] VkPhysicalDevice, [2]
** VkDevice, [3] vendorID, [4] apiVersion, [5] driverVersion (NVIDIA packs
** major.minor.patch as 10.8.8.6 bits), [6] VK_EXT_external_memory_dma_buf
** listed, [7] queue family. uuid: VkPhysicalDeviceIDProperties.deviceUUID.
*/
API int gp_vk_info(char *name, uint32_t cap, uint64_t *out, uint8_t *uuid) {
  if (!g_device) return fail_with(-4, "Vulkan is not open");
  snprintf(name, cap, "%s", g_props.properties.deviceName);
  out[0] = (uint64_t)(uintptr_t)g_instance;
  out[1] = (uint64_t)(uintptr_t)g_phys;
  out[2] = (uint64_t)(uintptr_t)g_device;
  out[3] = g_props.properties.vendorID;
  out[4] = g_props.properties.apiVersion;
  out[5] = g_props.properties.driverVersion;
  out[6] = (uint64_t)g_has_dma_buf;
  out[7] = g_queue_family;
  memcpy(uuid, g_idprops.deviceUUID, 16);
  return 0;
}

static int make_buffer(gp_vk_buffer *b, VkDeviceSize size, int exportable, VkFlags need,
                       VkFlags prefer, VkFlags avoid, int dedicated, uint32_t *out_type,
                       VkDeviceSize *out_alloc) {
  memset(b, 0, sizeof *b);
  VkExternalMemoryBufferCreateInfo ebi = {VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                          NULL, VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
  VkBufferCreateInfo bci;
  memset(&bci, 0, sizeof bci);
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.pNext = exportable ? &ebi : NULL;
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VK(vk_vkCreateBuffer(g_device, &bci, NULL, &b->buffer));
  VkMemoryRequirements req;
  vk_vkGetBufferMemoryRequirements(g_device, b->buffer, &req);
  int type = pick_memory_type(req.memoryTypeBits, need, prefer, avoid);
  if (type < 0) {
    vk_vkDestroyBuffer(g_device, b->buffer, NULL);
    return fail_with(-8, "no Vulkan memory type with flags 0x%x for this buffer (bits 0x%x)", need,
                req.memoryTypeBits);
  }
  VkMemoryDedicatedAllocateInfo ded = {VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO, NULL, 0,
                                       b->buffer};
  VkExportMemoryAllocateInfo exp = {VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
                                    dedicated ? &ded : NULL,
                                    VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
  VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                              exportable ? (const void *)&exp : (dedicated ? (const void *)&ded : NULL),
                              req.size, (uint32_t)type};
  VkResult r = vk_vkAllocateMemory(g_device, &mai, NULL, &b->memory);
  if (r != VK_SUCCESS) {
    vk_vkDestroyBuffer(g_device, b->buffer, NULL);
    return fail_with(-2000 + r, "vkAllocateMemory(%llu bytes, type %d): VkResult %d",
                (unsigned long long)req.size, type, (int)r);
  }
  VK(vk_vkBindBufferMemory(g_device, b->buffer, b->memory, 0));
  if (g_memprops.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
    VK(vk_vkMapMemory(g_device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped));
  b->size = size;
  *out_type = (uint32_t)type;
  *out_alloc = req.size;
  return 0;
}

static void free_buffer(gp_vk_buffer *b) {
  if (b->mapped) vk_vkUnmapMemory(g_device, b->memory);
  if (b->buffer) vk_vkDestroyBuffer(g_device, b->buffer, NULL);
  if (b->memory) vk_vkFreeMemory(g_device, b->memory, NULL);
  memset(b, 0, sizeof *b);
}

/*
** A VkBuffer of `size` bytes in exportable memory, exported as an opaque fd
** (the caller owns it). memory: 0 device-local memory the host cannot map,
** 1 host-visible memory, device-local if such a type exists (ReBAR), 2
** host-visible system memory (not device-local).
** out: [0] slot, [1] fd, [2] memory type index, [3] allocation size,
** [4] VkBuffer, [5] VkDeviceMemory, [6] memory property flags, [7] dedicated.
*/
API int gp_vk_export(uint64_t size, uint32_t memory, uint32_t dedicated, uint64_t *out) {
  if (!g_device) return fail_with(-4, "Vulkan is not open");
  int slot = -1;
  for (int i = 0; i < GP_VK_SLOTS && slot < 0; i++)
    if (!g_slots[i].buffer) slot = i;
  if (slot < 0) return fail_with(-9, "all %d probe slots are in use", GP_VK_SLOTS);
  uint32_t type = 0;
  VkDeviceSize alloc = 0;
  const VkFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  VkFlags need = memory ? host : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  VkFlags prefer = memory == 2 ? 0 : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  VkFlags avoid = memory == 0   ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
                  : memory == 2 ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
                                : 0;
  int rc = make_buffer(&g_slots[slot], size, 1, need, prefer, avoid, (int)dedicated, &type, &alloc);
  if (rc) return rc;
  VkMemoryGetFdInfoKHR gi = {VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR, NULL, g_slots[slot].memory,
                             VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
  int fd = -1;
  VkResult r = vk_vkGetMemoryFdKHR(g_device, &gi, &fd);
  if (r != VK_SUCCESS) {
    free_buffer(&g_slots[slot]);
    return fail_with(-2000 + r, "vkGetMemoryFdKHR: VkResult %d", (int)r);
  }
  out[0] = (uint64_t)slot;
  out[1] = (uint64_t)fd;
  out[2] = type;
  out[3] = alloc;
  out[4] = g_slots[slot].buffer;
  out[5] = g_slots[slot].memory;
  out[6] = g_memprops.memoryTypes[type].propertyFlags;
  out[7] = dedicated;
  return 0;
}

API int gp_vk_free(uint32_t slot) {
  if (slot >= GP_VK_SLOTS || !g_slots[slot].buffer) return fail_with(-9, "no probe slot %u", slot);
  vk_vkQueueWaitIdle(g_queue);
  free_buffer(&g_slots[slot]);
  return 0;
}

static int ensure_staging(VkDeviceSize n) {
  if (g_staging.buffer && g_staging.size >= n) return 0;
  if (g_staging.buffer) free_buffer(&g_staging);
  uint32_t type;
  VkDeviceSize alloc;
  return make_buffer(&g_staging, n, 0,
                     VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0,
                     VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, &type, &alloc);
}


/* Starts recording g_cmd for one submission. */
static int begin_commands(void) {
  VK(vk_vkResetCommandBuffer(g_cmd, 0));
  VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL,
                                 VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL};
  VK(vk_vkBeginCommandBuffer(g_cmd, &bi));
  return 0;
}

/* Ends g_cmd, submits it and waits until the queue is idle. */
static int submit_commands(void) {
  VK(vk_vkEndCommandBuffer(g_cmd));
  VkSubmitInfo si;
  memset(&si, 0, sizeof si);
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &g_cmd;
  VK(vk_vkQueueSubmit(g_queue, 1, &si, 0));
  VK(vk_vkQueueWaitIdle(g_queue));
  return 0;
}
/* Records and runs one copy on the Vulkan queue, then makes its writes visible to the host. */
static int vk_copy(VkBuffer src, VkBuffer dst, VkDeviceSize n) {
  int rc = begin_commands();
  if (rc != 0) return rc;
  VkMemoryBarrier before = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_HOST_WRITE_BIT,
                            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
  vk_vkCmdPipelineBarrier(g_cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                          &before, 0, NULL, 0, NULL);
  VkBufferCopy region = {0, 0, n};
  vk_vkCmdCopyBuffer(g_cmd, src, dst, 1, &region);
  VkMemoryBarrier after = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_TRANSFER_WRITE_BIT,
                           VK_ACCESS_HOST_READ_BIT};
  vk_vkCmdPipelineBarrier(g_cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                          &after, 0, NULL, 0, NULL);
  return submit_commands();
}

/*
** An empty submission whose barrier makes host writes available to the
** device (the host-to-device domain operation Vulkan performs at submit).
*/
API int gp_vk_host_flush(void) {
  if (!g_device) return fail_with(-4, "Vulkan is not open");
  int rc = begin_commands();
  if (rc != 0) return rc;
  VkMemoryBarrier b = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_HOST_WRITE_BIT,
                       VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT};
  vk_vkCmdPipelineBarrier(g_cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0,
                          1, &b, 0, NULL, 0, NULL);
  return submit_commands();
}

/*
** Vulkan writes the linear pattern into slot memory: via_gpu 1 copies it on
** the Vulkan queue from a staging buffer; 0 writes through the slot's mapping.
*/
API int gp_vk_write(uint32_t slot, uint64_t n, uint32_t seed, uint32_t via_gpu) {
  if (slot >= GP_VK_SLOTS || !g_slots[slot].buffer) return fail_with(-9, "no probe slot %u", slot);
  gp_vk_buffer *b = &g_slots[slot];
  if (n > b->size) return fail_with(-9, "%llu bytes do not fit slot %u", (unsigned long long)n, slot);
  if (!via_gpu) {
    if (!b->mapped) return fail_with(-9, "slot %u is not host-visible", slot);
    uint8_t *p = b->mapped;
    for (uint64_t i = 0; i < n; i++) p[i] = gp_pattern_byte(i, seed);
    return 0;
  }
  int rc = ensure_staging(n);
  if (rc) return rc;
  uint8_t *p = g_staging.mapped;
  for (uint64_t i = 0; i < n; i++) p[i] = gp_pattern_byte(i, seed);
  return vk_copy(g_staging.buffer, b->buffer, n);
}

/*
** Vulkan reads slot memory (via_gpu: copied on the Vulkan queue; else through its mapping)
** and counts bytes unlike the pattern.
*/
API int gp_vk_check(uint32_t slot, uint64_t n, uint32_t seed, uint32_t via_gpu,
                       uint64_t *out_mismatches) {
  if (slot >= GP_VK_SLOTS || !g_slots[slot].buffer) return fail_with(-9, "no probe slot %u", slot);
  gp_vk_buffer *b = &g_slots[slot];
  if (n > b->size) return fail_with(-9, "%llu bytes do not fit slot %u", (unsigned long long)n, slot);
  if (!via_gpu) {
    if (!b->mapped) return fail_with(-9, "slot %u is not host-visible", slot);
    *out_mismatches = count_bytes(b->mapped, n, seed);
    return 0;
  }
  int rc = ensure_staging(n);
  if (rc) return rc;
  memset(g_staging.mapped, 0, (size_t)n);
  rc = vk_copy(b->buffer, g_staging.buffer, n);
  if (rc) return rc;
  *out_mismatches = count_bytes(g_staging.mapped, n, seed);
  return 0;
}

/*
** A linear-tiling R8G8B8A8_UNORM VkImage in host-visible memory, filled with
** the 2D pattern through its mapping at the driver's row pitch. out: [0]
** VkImage, [1] rowPitch (vkGetImageSubresourceLayout), [2] VkDeviceMemory,
** [3] VkFormat, [4] layout offset, [5] layout size.
*/
API int gp_vk_image(uint32_t width, uint32_t height, uint32_t seed, uint64_t *out) {
  if (!g_device) return fail_with(-4, "Vulkan is not open");
  VkImageCreateInfo ici;
  memset(&ici, 0, sizeof ici);
  ici.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO;
  ici.imageType = VK_IMAGE_TYPE_2D;
  ici.format = VK_FORMAT_R8G8B8A8_UNORM;
  ici.extent.width = width;
  ici.extent.height = height;
  ici.extent.depth = 1;
  ici.mipLevels = 1;
  ici.arrayLayers = 1;
  ici.samples = VK_SAMPLE_COUNT_1_BIT;
  ici.tiling = VK_IMAGE_TILING_LINEAR;
  ici.usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
  ici.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  ici.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImage image = 0;
  VK(vk_vkCreateImage(g_device, &ici, NULL, &image));
  VkMemoryRequirements req;
  vk_vkGetImageMemoryRequirements(g_device, image, &req);
  int type = pick_memory_type(req.memoryTypeBits,
                              VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                  VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                              0, 0);
  if (type < 0) {
    vk_vkDestroyImage(g_device, image, NULL);
    return fail_with(-8, "no host-visible memory type for a linear image");
  }
  VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, req.size,
                              (uint32_t)type};
  VkDeviceMemory mem = 0;
  VK(vk_vkAllocateMemory(g_device, &mai, NULL, &mem));
  VK(vk_vkBindImageMemory(g_device, image, mem, 0));
  VkImageSubresource sub = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0};
  VkSubresourceLayout layout;
  vk_vkGetImageSubresourceLayout(g_device, image, &sub, &layout);
  void *mapped = NULL;
  VK(vk_vkMapMemory(g_device, mem, 0, VK_WHOLE_SIZE, 0, &mapped));
  for (uint32_t y = 0; y < height; y++) {
    uint8_t *row = (uint8_t *)mapped + layout.offset + (uint64_t)y * layout.rowPitch;
    for (uint32_t x = 0; x < width * 4; x++) row[x] = gp_pattern_2d(x, y, seed);
  }
  vk_vkUnmapMemory(g_device, mem);
  out[0] = image;
  out[1] = layout.rowPitch;
  out[2] = mem;
  out[3] = VK_FORMAT_R8G8B8A8_UNORM;
  out[4] = layout.offset;
  out[5] = layout.size;
  return 0;
}

/* Reads the image back through a mapping at `row_pitch` (the handle's) and checks the pattern. */
API int gp_vk_image_check(uint64_t memory, uint64_t offset, uint64_t row_pitch, uint32_t width,
                             uint32_t height, uint32_t seed, uint64_t *out_mismatches) {
  void *mapped = NULL;
  VK(vk_vkMapMemory(g_device, (VkDeviceMemory)memory, 0, VK_WHOLE_SIZE, 0, &mapped));
  uint64_t bad = 0;
  for (uint32_t y = 0; y < height; y++) {
    const uint8_t *row = (const uint8_t *)mapped + offset + (uint64_t)y * row_pitch;
    for (uint32_t x = 0; x < width * 4; x++) bad += row[x] != gp_pattern_2d(x, y, seed);
  }
  vk_vkUnmapMemory(g_device, (VkDeviceMemory)memory);
  *out_mismatches = bad;
  return 0;
}

API int gp_vk_image_destroy(uint64_t image, uint64_t memory) {
  vk_vkDestroyImage(g_device, (VkImage)image, NULL);
  vk_vkFreeMemory(g_device, (VkDeviceMemory)memory, NULL);
  return 0;
}

/* ======================================================================= GL */

#define GP_EGL_FNS(X)                                                                             \
  X(eglInitialize) X(eglTerminate) X(eglQueryString) X(eglBindAPI) X(eglChooseConfig)              \
  X(eglCreateContext) X(eglDestroyContext) X(eglCreatePbufferSurface) X(eglDestroySurface)         \
  X(eglMakeCurrent) X(eglGetError)
#define GP_GL_FNS(X)                                                                              \
  X(glGetString) X(glGetError) X(glGenTextures) X(glDeleteTextures) X(glBindTexture)               \
  X(glTexParameteri) X(glTexImage2D) X(glTexSubImage2D) X(glGetTexImage)                           \
  X(glGetTexLevelParameteriv) X(glPixelStorei) X(glFinish)
GP_EGL_FNS(GP_GL_DECL) GP_GL_FNS(GP_GL_DECL)

static EGLDisplay g_dpy;
static EGLContext g_glctx;
static EGLSurface g_pbuf;

/*
** Opens EGL on the device platform (the EGL device whose CUDA device is
** CUDA's, else the first), with an OpenGL context current on a 16x16 pbuffer.
** renderer: GL_RENDERER. out: [0] EGLDisplay, [1] EGLContext, [2] the EGL
** device's CUDA ordinal or -1, [3] EGL devices listed.
*/
API int gp_gl_open(char *renderer, uint32_t cap, int64_t *out) {
  if (g_glctx) return 0;
  if (open_lib(&g_egl_lib, "libEGL.so.1") != 0) return -1;
  PFN_eglGetProcAddress gpa = (PFN_eglGetProcAddress)dlsym(g_egl_lib, "eglGetProcAddress");
  if (!gpa) return fail_with(-1, "libEGL.so.1 lacks eglGetProcAddress");
#define GP_EGL_LOAD(f) GP_FN_LOAD(gl, f, dlsym(g_egl_lib, #f), "libEGL.so.1 lacks %s")
  GP_EGL_FNS(GP_EGL_LOAD)
#undef GP_EGL_LOAD
  PFN_eglQueryDevicesEXT query_devices = (PFN_eglQueryDevicesEXT)gpa("eglQueryDevicesEXT");
  PFN_eglQueryDeviceAttribEXT query_attrib =
      (PFN_eglQueryDeviceAttribEXT)gpa("eglQueryDeviceAttribEXT");
  PFN_eglGetPlatformDisplayEXT platform_display =
      (PFN_eglGetPlatformDisplayEXT)gpa("eglGetPlatformDisplayEXT");
  if (!query_devices || !platform_display)
    return fail_with(-2, "EGL lacks EGL_EXT_device_enumeration or EGL_EXT_platform_device");
  EGLDeviceEXT devs[16];
  EGLint n = 0;
  if (!query_devices(16, devs, &n) || n == 0)
    return fail_with(-2, "eglQueryDevicesEXT lists no device (EGL error 0x%x)", gl_eglGetError());
  int chosen = 0;
  int64_t cuda_ordinal = -1;
  int ordinal = g_ctx ? (int)g_dev : 0; /* a CUdevice is its ordinal */
  for (EGLint i = 0; i < n && query_attrib; i++) {
    EGLAttrib a = -1;
    if (query_attrib(devs[i], EGL_CUDA_DEVICE_NV, &a) && a == ordinal) {
      chosen = (int)i;
      cuda_ordinal = a;
      break;
    }
  }
  g_dpy = platform_display(EGL_PLATFORM_DEVICE_EXT, devs[chosen], NULL);
  if (!g_dpy) return fail_with(-2, "eglGetPlatformDisplayEXT(device): EGL error 0x%x", gl_eglGetError());
  EGLint major = 0, minor = 0;
  if (!gl_eglInitialize(g_dpy, &major, &minor))
    return fail_with(-2, "eglInitialize: EGL error 0x%x", gl_eglGetError());
  if (!gl_eglBindAPI(EGL_OPENGL_API)) return fail_with(-2, "eglBindAPI(OpenGL): 0x%x", gl_eglGetError());
  const EGLint cfg_attrs[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE,
                              EGL_OPENGL_BIT,   EGL_RED_SIZE,    8,
                              EGL_GREEN_SIZE,   8,               EGL_BLUE_SIZE,
                              8,                EGL_ALPHA_SIZE,  8,
                              EGL_NONE};
  EGLConfig cfg;
  EGLint ncfg = 0;
  if (!gl_eglChooseConfig(g_dpy, cfg_attrs, &cfg, 1, &ncfg) || ncfg < 1)
    return fail_with(-2, "eglChooseConfig: no OpenGL pbuffer config (0x%x)", gl_eglGetError());
  const EGLint pb_attrs[] = {EGL_WIDTH, 16, EGL_HEIGHT, 16, EGL_NONE};
  g_pbuf = gl_eglCreatePbufferSurface(g_dpy, cfg, pb_attrs);
  if (!g_pbuf) return fail_with(-2, "eglCreatePbufferSurface: 0x%x", gl_eglGetError());
  const EGLint ctx_attrs[] = {EGL_NONE};
  g_glctx = gl_eglCreateContext(g_dpy, cfg, EGL_NO_CONTEXT, ctx_attrs);
  if (!g_glctx) return fail_with(-2, "eglCreateContext: 0x%x", gl_eglGetError());
  if (!gl_eglMakeCurrent(g_dpy, g_pbuf, g_pbuf, g_glctx))
    return fail_with(-2, "eglMakeCurrent: 0x%x", gl_eglGetError());
#define GP_GL_LOAD(f) GP_FN_LOAD(gl, f, gpa(#f), "eglGetProcAddress(%s) is NULL")
  GP_GL_FNS(GP_GL_LOAD)
#undef GP_GL_LOAD
  const uint8_t *r = gl_glGetString(GL_RENDERER);
  const uint8_t *v = gl_glGetString(GL_VERSION);
  snprintf(renderer, cap, "%s | OpenGL %s | EGL %d.%d", r ? (const char *)r : "?",
           v ? (const char *)v : "?", major, minor);
  out[0] = (int64_t)(uintptr_t)g_dpy;
  out[1] = (int64_t)(uintptr_t)g_glctx;
  out[2] = cuda_ordinal;
  out[3] = n;
  return 0;
}

#define GLCHECK(what)                                                                             \
  do {                                                                                            \
    GLenum e_ = gl_glGetError();                                                                  \
    if (e_ != GL_NO_ERROR) return fail_with(-10, "%s: GL error 0x%x", what, e_);                       \
  } while (0)

/* An RGBA8 GL_TEXTURE_2D filled with the 2D pattern: *out_name its name. */
API int gp_gl_texture(uint32_t width, uint32_t height, uint32_t seed, uint32_t *out_name) {
  if (!g_glctx) return fail_with(-4, "GL is not open");
  uint8_t *h = host_scratch((size_t)width * 4 * height);
  if (!h) return fail_with(-5, "out of host memory");
  for (uint32_t y = 0; y < height; y++)
    for (uint32_t x = 0; x < width * 4; x++) h[(uint64_t)y * width * 4 + x] = gp_pattern_2d(x, y, seed);
  GLuint tex = 0;
  gl_glGenTextures(1, &tex);
  gl_glBindTexture(GL_TEXTURE_2D, tex);
  gl_glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  gl_glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  gl_glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  gl_glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, (GLsizei)width, (GLsizei)height, 0, GL_RGBA,
                  GL_UNSIGNED_BYTE, h);
  gl_glFinish();
  GLCHECK("glTexImage2D");
  *out_name = tex;
  return 0;
}

/* What GL says about a texture: out [0] width, [1] height, [2] internal format. */
API int gp_gl_texture_query(uint32_t name, int32_t *out) {
  gl_glBindTexture(GL_TEXTURE_2D, name);
  gl_glGetTexLevelParameteriv(GL_TEXTURE_2D, 0, GL_TEXTURE_WIDTH, &out[0]);
  gl_glGetTexLevelParameteriv(GL_TEXTURE_2D, 0, GL_TEXTURE_HEIGHT, &out[1]);
  gl_glGetTexLevelParameteriv(GL_TEXTURE_2D, 0, GL_TEXTURE_INTERNAL_FORMAT, &out[2]);
  GLCHECK("glGetTexLevelParameteriv");
  return 0;
}

/* GL reads the texture back (glGetTexImage) and checks the 2D pattern. */
API int gp_gl_texture_check(uint32_t name, uint32_t width, uint32_t height, uint32_t seed,
                               uint64_t *out_mismatches) {
  uint8_t *h = host_scratch((size_t)width * 4 * height);
  if (!h) return fail_with(-5, "out of host memory");
  gl_glBindTexture(GL_TEXTURE_2D, name);
  gl_glPixelStorei(GL_PACK_ALIGNMENT, 1);
  gl_glGetTexImage(GL_TEXTURE_2D, 0, GL_RGBA, GL_UNSIGNED_BYTE, h);
  GLCHECK("glGetTexImage");
  *out_mismatches = count_2d(h, width * 4, height, seed);
  return 0;
}

API int gp_gl_texture_delete(uint32_t name) {
  gl_glDeleteTextures(1, &name);
  return 0;
}

/*
** CUDA-GL interop on a texture named by (name, target): registers it with
** cuGraphicsGLRegisterImage, maps it and, for write 0, copies its array to the
** host and checks the 2D pattern; for write 1, copies the pattern into it.
*/
API int gp_cu_gl_access(uint32_t name, uint32_t target, uint32_t width, uint32_t height,
                           uint32_t seed, uint32_t write, uint64_t *out_mismatches) {
  if (!p_cuGraphicsGLRegisterImage) return fail_with(-3, "libcuda.so.1 lacks cuGraphicsGLRegisterImage");
  gl_glFinish();
  CUgraphicsResource res = NULL;
  CU(p_cuGraphicsGLRegisterImage(&res, name, target,
                                 write ? CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD
                                       : CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY));
  int rc = 0;
  CUresult r = p_cuGraphicsMapResources(1, &res, NULL);
  if (r != CUDA_SUCCESS) {
    p_cuGraphicsUnregisterResource(res);
    return fail_with(-(int)r - 1000, "cuGraphicsMapResources: %s", cu_name(r));
  }
  CUarray array = NULL;
  r = p_cuGraphicsSubResourceGetMappedArray(&array, res, 0, 0);
  uint8_t *h = host_scratch((size_t)width * 4 * height);
  if (r != CUDA_SUCCESS) {
    rc = fail_with(-(int)r - 1000, "cuGraphicsSubResourceGetMappedArray: %s", cu_name(r));
  } else if (!h) {
    rc = fail_with(-5, "out of host memory");
  } else if (!write) {
    rc = array_to_host(array, h, width * 4, height);
    if (!rc) *out_mismatches = count_2d(h, width * 4, height, seed);
  } else {
    for (uint32_t y = 0; y < height; y++)
      for (uint32_t x = 0; x < width * 4; x++) h[(uint64_t)y * width * 4 + x] = gp_pattern_2d(x, y, seed);
    CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = h, .srcPitch = width * 4,
                       .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = array,
                       .WidthInBytes = width * 4, .Height = height};
    r = p_cuMemcpy2D(&c);
    if (r != CUDA_SUCCESS) rc = fail_with(-(int)r - 1000, "cuMemcpy2D(host to GL array): %s", cu_name(r));
    *out_mismatches = 0;
  }
  p_cuCtxSynchronize();
  p_cuGraphicsUnmapResources(1, &res, NULL);
  p_cuGraphicsUnregisterResource(res);
  return rc;
}

/* ================================================================ shutdown */

static void sync_close(void);
static void pool_close(void);

API int gp_close_all(void) {
  pool_close();
  sync_close();
  if (g_glctx) {
    gl_eglMakeCurrent(g_dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    gl_eglDestroyContext(g_dpy, g_glctx);
    if (g_pbuf) gl_eglDestroySurface(g_dpy, g_pbuf);
    gl_eglTerminate(g_dpy);
    g_glctx = NULL;
    g_pbuf = NULL;
  }
  if (g_device) {
    vk_vkQueueWaitIdle(g_queue);
    for (int i = 0; i < GP_VK_SLOTS; i++)
      if (g_slots[i].buffer) free_buffer(&g_slots[i]);
    if (g_staging.buffer) free_buffer(&g_staging);
    vk_vkDestroyCommandPool(g_device, g_pool, NULL);
    vk_vkDestroyDevice(g_device, NULL);
    vk_vkDestroyInstance(g_instance, NULL);
    g_device = NULL;
    g_instance = NULL;
  }
  if (g_ctx) {
    p_cuCtxSynchronize();
    if (g_counter) p_cuMemFree(g_counter);
    if (g_module) p_cuModuleUnload(g_module);
    p_cuDevicePrimaryCtxRelease(g_dev);
    g_ctx = NULL;
    g_module = NULL;
    g_counter = 0;
  }
  return 0;
}

/* ============================================================ SyncPoints */
/*
** The sync checks (issue 16): a Vulkan timeline semaphore exported as an
** opaque fd and imported by CUDA (cuImportExternalSemaphore), hand-offs in
** both directions with only the semaphore between the APIs, CUDA events, and
** a binary semaphore exported as a sync fd (a kernel sync_file). The gpures
** handles are made by the tests (gpu_test.ts); the probe makes and drives the
** GPU objects, and calls gpures's C API itself (gp_gpures_*: the library the
** tests loaded, opened again by path) where C timings or the event queue
** are the point.
**
** Vulkan work here is submitted without waiting: one command buffer of its
** own, reused only after the queue went idle (each function starts so).
*/

static CUstream g_stream;
static VkCommandBuffer g_sync_cmd;
static gp_vk_buffer g_sync_src;  /* device-local, the new frame's pattern */
static gp_vk_buffer g_sync_read; /* host-visible, what Vulkan copied back */
static void *g_sync_pinned;      /* page-locked host memory CUDA copies into */
static size_t g_sync_pinned_size;
static CUdeviceptr g_sync_scratch; /* memset target that keeps a stream busy */
static size_t g_sync_scratch_size;
static uint64_t *g_sync_counter_host; /* pinned: the check kernel's count */

/* Why the semaphore checks cannot run here ("" when they can). */
API const char *gp_sync_note(void) {
  if (!g_device) return "Vulkan is not open";
  return g_sync_note;
}

static int sync_ready(void) {
  if (!g_device) return fail_with(-4, "Vulkan is not open");
  if (!g_sync_cmd) {
    VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, g_pool,
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    VK(vk_vkAllocateCommandBuffers(g_device, &cai, &g_sync_cmd));
  }
  return 0;
}

/* sync_ready, plus the CUDA side: the probe's stream and pinned counter. */
static int sync_ready_cuda(void) {
  int rc = sync_ready();
  if (rc) return rc;
  if (g_sync_note[0]) return fail_with(-3, "%s", g_sync_note);
  if (!g_ctx) return fail_with(-4, "CUDA is not open");
  if (!g_stream) CU(p_cuStreamCreate(&g_stream, CU_STREAM_NON_BLOCKING));
  if (!g_sync_counter_host) {
    void *p = NULL;
    CU(p_cuMemAllocHost(&p, 64));
    g_sync_counter_host = p;
  }
  return 0;
}

static int ensure_pinned(size_t n) {
  if (g_sync_pinned && g_sync_pinned_size >= n) return 0;
  if (g_sync_pinned) p_cuMemFreeHost(g_sync_pinned);
  g_sync_pinned = NULL;
  g_sync_pinned_size = 0;
  CU(p_cuMemAllocHost(&g_sync_pinned, n));
  g_sync_pinned_size = n;
  return 0;
}

static int ensure_sync_buffer(gp_vk_buffer *b, VkDeviceSize n, int host) {
  if (b->buffer && b->size >= n) return 0;
  if (b->buffer) free_buffer(b);
  uint32_t type;
  VkDeviceSize alloc;
  const VkFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  return host ? make_buffer(b, n, 0, hv, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, &type, &alloc)
              : make_buffer(b, n, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0,
                            VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, 0, &type, &alloc);
}

/*
** Semaphore support as the physical device reports it for `handle_type`
** (VkExternalSemaphoreHandleTypeFlagBits: 1 opaque fd, 16 sync fd) and
** timeline (1) or binary (0): out [0] compatibleHandleTypes, [1]
** externalSemaphoreFeatures (1 exportable, 2 importable), [2]
** exportFromImportedHandleTypes.
*/
API int gp_vk_semaphore_props(uint32_t handle_type, uint32_t timeline, uint32_t *out) {
  if (!g_device) return fail_with(-4, "Vulkan is not open");
  if (!vk_vkGetPhysicalDeviceExternalSemaphoreProperties)
    return fail_with(-3, "Vulkan lacks vkGetPhysicalDeviceExternalSemaphoreProperties");
  VkSemaphoreTypeCreateInfo type = {VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, NULL,
                                    VK_SEMAPHORE_TYPE_TIMELINE, 0};
  VkPhysicalDeviceExternalSemaphoreInfo info = {
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO, timeline ? &type : NULL,
      handle_type};
  VkExternalSemaphoreProperties props;
  memset(&props, 0, sizeof props);
  props.sType = VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES;
  vk_vkGetPhysicalDeviceExternalSemaphoreProperties(g_phys, &info, &props);
  out[0] = props.compatibleHandleTypes;
  out[1] = props.externalSemaphoreFeatures;
  out[2] = props.exportFromImportedHandleTypes;
  return 0;
}

/*
** A VkSemaphore: timeline (starting at `initial`) or binary, exportable as
** `handle_types` (0: not exportable). *out_sem gets it.
*/
API int gp_vk_semaphore_create(uint32_t timeline, uint32_t handle_types, uint64_t initial,
                                  uint64_t *out_sem) {
  int rc = sync_ready();
  if (rc) return rc;
  if (timeline && !g_has_timeline) return fail_with(-3, "the Vulkan device has no timelineSemaphore feature");
  if (handle_types && !g_has_sem_fd)
    return fail_with(-3, "the Vulkan device lacks VK_KHR_external_semaphore_fd");
  VkSemaphoreTypeCreateInfo type = {VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, NULL,
                                    VK_SEMAPHORE_TYPE_TIMELINE, initial};
  VkExportSemaphoreCreateInfo exp = {VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
                                     timeline ? &type : NULL, handle_types};
  VkSemaphoreCreateInfo ci = {VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                              handle_types ? (const void *)&exp
                                           : (timeline ? (const void *)&type : NULL),
                              0};
  VkSemaphore sem = 0;
  VK(vk_vkCreateSemaphore(g_device, &ci, NULL, &sem));
  *out_sem = sem;
  return 0;
}

/*
** vkGetSemaphoreFdKHR: the semaphore as an fd of `handle_type` (1 opaque fd,
** 16 sync fd); the caller owns it. A sync fd export needs the semaphore's
** signal operation submitted, and may give -1 when it already completed.
*/
API int gp_vk_semaphore_export(uint64_t sem, uint32_t handle_type, int32_t *out_fd) {
  if (!g_device) return fail_with(-4, "Vulkan is not open");
  if (!vk_vkGetSemaphoreFdKHR) return fail_with(-3, "the Vulkan device has no vkGetSemaphoreFdKHR");
  VkSemaphoreGetFdInfoKHR gi = {VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR, NULL,
                                (VkSemaphore)sem, handle_type};
  int fd = -1;
  VK(vk_vkGetSemaphoreFdKHR(g_device, &gi, &fd));
  *out_fd = fd;
  return 0;
}

/* vkGetSemaphoreCounterValue of a timeline. */
API int gp_vk_semaphore_value(uint64_t sem, uint64_t *out) {
  if (!g_device || !vk_vkGetSemaphoreCounterValue) return fail_with(-4, "Vulkan semaphores are not open");
  VK(vk_vkGetSemaphoreCounterValue(g_device, (VkSemaphore)sem, out));
  return 0;
}

/* Waits for the queue, then destroys the semaphore. */
API int gp_vk_semaphore_destroy(uint64_t sem) {
  if (!g_device || !vk_vkDestroySemaphore) return fail_with(-4, "Vulkan semaphores are not open");
  vk_vkQueueWaitIdle(g_queue);
  vk_vkDestroySemaphore(g_device, (VkSemaphore)sem, NULL);
  return 0;
}

/*
** cuImportExternalSemaphore of an fd (timeline: TIMELINE_SEMAPHORE_FD, else
** OPAQUE_FD). CUDA owns the fd once the import succeeds; on failure the
** probe closes it. *out_ext gets the CUexternalSemaphore.
*/
API int gp_cu_semaphore_import(int fd, uint32_t timeline, uint64_t *out_ext) {
  CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC hd;
  memset(&hd, 0, sizeof hd);
  hd.type = timeline ? CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD
                     : CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD;
  hd.handle.fd = fd;
  CUexternalSemaphore ext = NULL;
  CUresult r = p_cuImportExternalSemaphore(&ext, &hd);
  if (r != CUDA_SUCCESS) {
    close(fd);
    return fail_with(-(int)r - 1000, "cuImportExternalSemaphore(%s): %s",
                timeline ? "TIMELINE_SEMAPHORE_FD" : "OPAQUE_FD", cu_name(r));
  }
  *out_ext = (uint64_t)(uintptr_t)ext;
  return 0;
}

API int gp_cu_semaphore_destroy(uint64_t ext) {
  if (g_stream) p_cuStreamSynchronize(g_stream);
  CU(p_cuDestroyExternalSemaphore((CUexternalSemaphore)(uintptr_t)ext));
  return 0;
}

/* The new frame's bytes in device-local Vulkan memory (copied there once, waited for). */
API int gp_sync_source(uint64_t n, uint32_t seed) {
  int rc = sync_ready();
  if (rc) return rc;
  if ((rc = ensure_sync_buffer(&g_sync_src, n, 0)) != 0) return rc;
  if ((rc = ensure_staging(n)) != 0) return rc;
  uint8_t *p = g_staging.mapped;
  for (uint64_t i = 0; i < n; i++) p[i] = gp_pattern_byte(i, seed);
  return vk_copy(g_staging.buffer, g_sync_src.buffer, n);
}

static int cu_fill_on_stream(uint64_t ptr, uint64_t n, uint32_t seed) {
  if (g_fill_bytes) {
    CUdeviceptr p = ptr;
    unsigned long long nn = n;
    void *args[] = {&p, &nn, &seed};
    CU(p_cuLaunchKernel(g_fill_bytes, grid_for(n), 1, 1, 256, 1, 1, 0, g_stream, args, NULL));
    return 0;
  }
  int rc = ensure_pinned((size_t)n);
  if (rc) return rc;
  uint8_t *h = g_sync_pinned;
  for (uint64_t i = 0; i < n; i++) h[i] = gp_pattern_byte(i, seed);
  CU(p_cuMemcpyHtoDAsync((CUdeviceptr)ptr, h, (size_t)n, g_stream));
  return 0;
}

/* Starts g_sync_cmd once the queue is idle (its last use is then finished). */
static int begin_sync_commands(void) {
  VK(vk_vkQueueWaitIdle(g_queue));
  VK(vk_vkResetCommandBuffer(g_sync_cmd, 0));
  VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL,
                                 VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL};
  VK(vk_vkBeginCommandBuffer(g_sync_cmd, &bi));
  return 0;
}

static void transfer_barrier(VkFlags src_access, VkFlags dst_access, VkFlags src_stage,
                             VkFlags dst_stage) {
  VkMemoryBarrier b = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, src_access, dst_access};
  vk_vkCmdPipelineBarrier(g_sync_cmd, src_stage, dst_stage, 0, 1, &b, 0, NULL, 0, NULL);
}

/*
** Starts g_sync_cmd with `repeats` (at least one) copies of n bytes of the
** sync source into probe slot `slot`, each after the last one's writes: the
** work a Vulkan-signalled sync check hands to the other side.
*/
static int record_source_copies(uint32_t slot, uint64_t n, uint32_t repeats) {
  int rc = begin_sync_commands();
  if (rc) return rc;
  VkBufferCopy region = {0, 0, n};
  for (uint32_t i = 0; i < (repeats ? repeats : 1); i++) {
    if (i) transfer_barrier(VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                            VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT);
    vk_vkCmdCopyBuffer(g_sync_cmd, g_sync_src.buffer, g_slots[slot].buffer, 1, &region);
  }
  return 0;
}

/* Submits g_sync_cmd, waiting on (wait_sem, wait_value) when wait_sem, signalling (sig_sem, sig_value). */
static int submit_sync(VkSemaphore wait_sem, uint64_t wait_value, VkSemaphore sig_sem,
                       uint64_t sig_value, int timeline) {
  VK(vk_vkEndCommandBuffer(g_sync_cmd));
  VkFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
  VkTimelineSemaphoreSubmitInfo ts = {VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO, NULL,
                                      wait_sem ? 1u : 0u, &wait_value, sig_sem ? 1u : 0u,
                                      &sig_value};
  VkSubmitInfo si;
  memset(&si, 0, sizeof si);
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.pNext = timeline ? &ts : NULL;
  si.waitSemaphoreCount = wait_sem ? 1 : 0;
  si.pWaitSemaphores = &wait_sem;
  si.pWaitDstStageMask = &stage;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &g_sync_cmd;
  si.signalSemaphoreCount = sig_sem ? 1 : 0;
  si.pSignalSemaphores = &sig_sem;
  VK(vk_vkQueueSubmit(g_queue, 1, &si, 0));
  return 0;
}

/*
** Vulkan -> CUDA with only the semaphore between them. CUDA first writes
** `old_seed` into the imported frame (cu_ptr) and finishes. Then Vulkan copies
** the new frame (gp_sync_source) into slot `slot`'s buffer `repeats` times
** (more work: a later finish) in one submission that signals the timeline
** `sem` to `value`; right after vkQueueSubmit returns, the CUDA stream (when
** `wait`) waits on the imported semaphore `cu_sem` for `value`
** (cuWaitExternalSemaphoresAsync), then a kernel counts the bytes unlike the
** new frame and cuMemcpyDtoHAsync copies them to pinned memory. The host
** waits for nothing but the CUDA stream (cuStreamSynchronize), and then for
** the queue before returning.
** out: [0] mismatches CUDA's kernel counted (UINT64_MAX without kernels),
** [1] mismatches in the bytes CUDA copied out, [2] ns from vkQueueSubmit to
** the CUDA stream done, [3] the timeline's value when every CUDA call had
** been queued (below `value`: Vulkan had not finished yet), [4] ns the CUDA
** calls took to queue, [5] the timeline's value at the end.
*/
API int gp_sync_vk_to_cuda(uint32_t slot, uint64_t cu_ptr, uint64_t n, uint32_t old_seed,
                              uint32_t seed, uint64_t sem, uint64_t cu_sem, uint64_t value,
                              uint32_t wait, uint32_t repeats, uint64_t *out) {
  int rc = sync_ready_cuda();
  if (rc) return rc;
  if (slot >= GP_VK_SLOTS || !g_slots[slot].buffer) return fail_with(-9, "no probe slot %u", slot);
  if (!g_sync_src.buffer || g_sync_src.size < n) return fail_with(-9, "gp_sync_source was not called");
  if ((rc = ensure_pinned((size_t)n)) != 0) return rc;
  /* The old frame, written and finished by CUDA. */
  if ((rc = cu_fill_on_stream(cu_ptr, n, old_seed)) != 0) return rc;
  CU(p_cuStreamSynchronize(g_stream));
  memset(g_sync_pinned, 0, (size_t)n);

  if ((rc = record_source_copies(slot, n, repeats)) != 0) return rc;
  uint64_t t0 = gp_now_ns();
  if ((rc = submit_sync(0, 0, (VkSemaphore)sem, value, 1)) != 0) return rc;

  CUexternalSemaphore ext = (CUexternalSemaphore)(uintptr_t)cu_sem;
  if (wait) {
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wp;
    memset(&wp, 0, sizeof wp);
    wp.params.fence.value = value;
    CU(p_cuWaitExternalSemaphoresAsync(&ext, &wp, 1, g_stream));
  }
  out[0] = UINT64_MAX;
  if (g_check_bytes) {
    CU(p_cuMemsetD8Async(g_counter, 0, 8, g_stream));
    CUdeviceptr p = cu_ptr, c = g_counter;
    unsigned long long nn = n;
    void *args[] = {&p, &nn, &seed, &c};
    CU(p_cuLaunchKernel(g_check_bytes, grid_for(n), 1, 1, 256, 1, 1, 0, g_stream, args, NULL));
    CU(p_cuMemcpyDtoHAsync(g_sync_counter_host, g_counter, 8, g_stream));
  }
  CU(p_cuMemcpyDtoHAsync(g_sync_pinned, (CUdeviceptr)cu_ptr, (size_t)n, g_stream));
  uint64_t t_queued = gp_now_ns();
  uint64_t at_queue = 0;
  VK(vk_vkGetSemaphoreCounterValue(g_device, (VkSemaphore)sem, &at_queue));
  CU(p_cuStreamSynchronize(g_stream));
  uint64_t t1 = gp_now_ns();
  VK(vk_vkQueueWaitIdle(g_queue));
  uint64_t at_end = 0;
  VK(vk_vkGetSemaphoreCounterValue(g_device, (VkSemaphore)sem, &at_end));
  if (g_check_bytes) out[0] = *g_sync_counter_host;
  out[1] = count_bytes(g_sync_pinned, n, seed);
  out[2] = t1 - t0;
  out[3] = at_queue;
  out[4] = t_queued - t0;
  out[5] = at_end;
  return 0;
}

/*
** CUDA -> Vulkan with only the semaphore between them: a CUDA kernel writes
** `seed` into the imported frame (cu_ptr), then the stream signals `cu_sem` to
** `cu_value` (cuSignalExternalSemaphoresAsync); one Vulkan submission waits
** on the timeline `sem` for `cu_value`, copies slot `slot`'s buffer into a
** host-visible buffer and signals `vk_value`. Nothing here waits: the caller
** waits on `vk_value` (through gpures) and then calls gp_sync_read_check.
** out: [0] the timeline's value right after the submission, [1] ns the calls
** took, [2] 1 when the CUDA stream had not finished when they returned.
*/
API int gp_sync_cuda_to_vk(uint32_t slot, uint64_t cu_ptr, uint64_t n, uint32_t seed,
                              uint64_t sem, uint64_t cu_sem, uint64_t cu_value, uint64_t vk_value,
                              uint64_t *out) {
  int rc = sync_ready_cuda();
  if (rc) return rc;
  if (slot >= GP_VK_SLOTS || !g_slots[slot].buffer) return fail_with(-9, "no probe slot %u", slot);
  if ((rc = ensure_sync_buffer(&g_sync_read, n, 1)) != 0) return rc;
  CU(p_cuStreamSynchronize(g_stream));
  VK(vk_vkQueueWaitIdle(g_queue));
  memset(g_sync_read.mapped, 0, (size_t)n);
  /* Make the cleared bytes the device's before the copy overwrites them. */
  if ((rc = gp_vk_host_flush()) != 0) return rc;

  uint64_t t0 = gp_now_ns();
  if ((rc = cu_fill_on_stream(cu_ptr, n, seed)) != 0) return rc;
  CUexternalSemaphore ext = (CUexternalSemaphore)(uintptr_t)cu_sem;
  CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS sp;
  memset(&sp, 0, sizeof sp);
  sp.params.fence.value = cu_value;
  CU(p_cuSignalExternalSemaphoresAsync(&ext, &sp, 1, g_stream));

  if ((rc = begin_sync_commands()) != 0) return rc;
  VkBufferCopy region = {0, 0, n};
  vk_vkCmdCopyBuffer(g_sync_cmd, g_slots[slot].buffer, g_sync_read.buffer, 1, &region);
  transfer_barrier(VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT,
                   VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT);
  if ((rc = submit_sync((VkSemaphore)sem, cu_value, (VkSemaphore)sem, vk_value, 1)) != 0) return rc;
  uint64_t t1 = gp_now_ns();
  uint64_t now = 0;
  VK(vk_vkGetSemaphoreCounterValue(g_device, (VkSemaphore)sem, &now));
  out[0] = now;
  out[1] = t1 - t0;
  out[2] = p_cuStreamQuery(g_stream) == CUDA_ERROR_NOT_READY;
  return 0;
}

/* The host counts the bytes Vulkan copied back (gp_sync_cuda_to_vk) that are unlike the pattern. */
API int gp_sync_read_check(uint64_t n, uint32_t seed, uint64_t *out_mismatches) {
  if (!g_sync_read.buffer || g_sync_read.size < n) return fail_with(-9, "nothing was read back");
  *out_mismatches = count_bytes(g_sync_read.mapped, n, seed);
  return 0;
}

/*
** A CUevent recorded after `passes` cuMemsetD32Async of `bytes` bytes on the
** probe's stream (work that takes a while). out: [0] CUevent, [1] CUcontext,
** [2] CUdevice ordinal, [3] cuEventQuery right after recording (0 reached,
** 600 not ready), [4] ns the calls took.
*/
API int gp_cu_event_after_work(uint64_t bytes, uint32_t passes, uint64_t *out) {
  if (!g_ctx) return fail_with(-4, "CUDA is not open");
  if (!g_stream) CU(p_cuStreamCreate(&g_stream, CU_STREAM_NON_BLOCKING));
  if (g_sync_scratch_size < bytes) {
    if (g_sync_scratch) p_cuMemFree(g_sync_scratch);
    g_sync_scratch = 0;
    g_sync_scratch_size = 0;
    CU(p_cuMemAlloc(&g_sync_scratch, (size_t)bytes));
    g_sync_scratch_size = (size_t)bytes;
  }
  CUevent ev = NULL;
  CU(p_cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
  uint64_t t0 = gp_now_ns();
  for (uint32_t i = 0; i < passes; i++)
    CU(p_cuMemsetD32Async(g_sync_scratch, 0x01010101u * (i + 1), (size_t)(bytes / 4), g_stream));
  CU(p_cuEventRecord(ev, g_stream));
  uint64_t t1 = gp_now_ns();
  out[0] = (uint64_t)(uintptr_t)ev;
  out[1] = (uint64_t)(uintptr_t)g_ctx;
  out[2] = (uint64_t)g_dev;
  out[3] = (uint64_t)p_cuEventQuery(ev);
  out[4] = t1 - t0;
  return 0;
}

/* cuEventQuery: 0 reached, 600 not ready, else the error. */
API int gp_cu_event_query(uint64_t ev) { return (int)p_cuEventQuery((CUevent)(uintptr_t)ev); }

API int gp_cu_event_destroy(uint64_t ev) {
  CU(p_cuEventDestroy((CUevent)(uintptr_t)ev));
  return 0;
}

/*
** A binary semaphore exportable as a sync fd, signalled by a submission
** that first copies slot `slot`'s buffer into the new frame's source buffer
** `repeats` times (so the signal is still pending at export), then exported
** with vkGetSemaphoreFdKHR(SYNC_FD): a kernel sync_file. out: [0] the fd (the
** caller owns it; -1 when the driver says the signal had already completed),
** [1] the semaphore (destroy it with gp_vk_semaphore_destroy), [2] ns from
** vkQueueSubmit to the export's return.
*/
API int gp_vk_sync_fd_export(uint32_t slot, uint64_t n, uint32_t repeats, int64_t *out) {
  int rc = sync_ready();
  if (rc) return rc;
  if (slot >= GP_VK_SLOTS || !g_slots[slot].buffer) return fail_with(-9, "no probe slot %u", slot);
  if (!g_sync_src.buffer || g_sync_src.size < n) return fail_with(-9, "gp_sync_source was not called");
  uint64_t sem = 0;
  if ((rc = gp_vk_semaphore_create(0, VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT, 0, &sem)) != 0)
    return rc;
  if ((rc = record_source_copies(slot, n, repeats)) != 0) goto fail_sem;
  uint64_t t0 = gp_now_ns();
  if ((rc = submit_sync(0, 0, (VkSemaphore)sem, 0, 0)) != 0) goto fail_sem;
  int32_t fd = -1;
  if ((rc = gp_vk_semaphore_export(sem, VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT, &fd)) != 0)
    goto fail_sem;
  out[0] = fd;
  out[1] = (int64_t)sem;
  out[2] = (int64_t)(gp_now_ns() - t0);
  return 0;
fail_sem:
  vk_vkQueueWaitIdle(g_queue);
  vk_vkDestroySemaphore(g_device, (VkSemaphore)sem, NULL);
  return rc;
}

/* Waits until the Vulkan queue is idle (vkQueueWaitIdle). */
API int gp_vk_queue_idle(void) {
  if (!g_device) return fail_with(-4, "Vulkan is not open");
  VK(vk_vkQueueWaitIdle(g_queue));
  return 0;
}

/* ------------------------------------------------- gpures's C API, directly */

#include "gpures.h"

static void *g_gpures_lib;
#define GP_GPURES_FNS(X)                                                                          \
  X(gpures_sync_wait) X(gpures_sync_poll) X(gpures_sync_wait_async) X(gpures_event_queue_open)     \
  X(gpures_event_queue_close) X(gpures_event_queue_wait) X(gpures_event_queue_poll)                \
  X(gpures_vk_semaphore_fd_create) X(gpures_clone) X(gpures_release) X(gpures_last_error)       \
  X(gpures_cuda_importer_create) X(gpures_cuda_import) X(gpures_importer_forget)                   \
  X(gpures_importer_stats_get) X(gpures_importer_destroy)
#define GP_GPURES_DECL(f) static __typeof__(&f) g_##f;
GP_GPURES_FNS(GP_GPURES_DECL)
#undef GP_GPURES_DECL

/*
** Opens the gpures library the tests loaded (the same file: dlopen gives the
** same instance, so handles made from Deno are valid here).
*/
API int gp_gpures_open(const char *path) {
  if (g_gpures_lib) return 0;
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fail_with(-1, "%s could not be opened: %s", path, dlerror());
#define GP_GPURES_LOAD(f)                                                                         \
  g_##f = (__typeof__(g_##f))dlsym(lib, #f);                                                      \
  if (!g_##f) return fail_with(-3, "%s lacks %s", path, #f);
  GP_GPURES_FNS(GP_GPURES_LOAD)
#undef GP_GPURES_LOAD
  g_gpures_lib = lib;
  return 0;
}

#define GPURES_CALL(call)                                                                         \
  do {                                                                                            \
    int s_ = (call);                                                                              \
    if (s_ != GPURES_OK) return fail_with(-3000 - s_, "%s: status %d: %s", #call, s_, g_gpures_last_error()); \
  } while (0)

/*
** gpures_sync_wait_async on a new event queue, then gpures_event_queue_wait
** and gpures_event_queue_poll for its one event. out: [0] event type
** (GPURES_EVENT_SYNC_DONE = 3), [1] its status, [2] 1 when its token is the
** wait's, [3] ns from the async wait's start to the event's arrival, [4]
** events polled, [5] gpures_sync_poll's answer just before the wait.
*/
API int gp_gpures_async_wait(uint64_t sync, int64_t timeout_ns, uint64_t *out) {
  if (!g_gpures_lib) return fail_with(-4, "gpures is not open in the probe");
  uint32_t reached = 0;
  GPURES_CALL(g_gpures_sync_poll(sync, &reached));
  uint32_t queue = 0;
  GPURES_CALL(g_gpures_event_queue_open(&queue));
  const uint64_t token = 0x5eed0000u + (sync & 0xffff);
  uint64_t t0 = gp_now_ns();
  int s = g_gpures_sync_wait_async(sync, timeout_ns, queue, token);
  if (s != GPURES_OK) {
    g_gpures_event_queue_close(queue);
    return fail_with(-3000 - s, "gpures_sync_wait_async: status %d: %s", s, g_gpures_last_error());
  }
  uint32_t pending = 0;
  int32_t wait_ms = timeout_ns < 0 ? 10000 : (int32_t)(timeout_ns / 1000000 + 1000);
  s = g_gpures_event_queue_wait(queue, wait_ms, &pending);
  uint64_t t1 = gp_now_ns();
  gpures_event ev[4];
  memset(ev, 0, sizeof ev);
  uint32_t count = 0;
  if (s == GPURES_OK) s = g_gpures_event_queue_poll(queue, ev, 4, &count);
  g_gpures_event_queue_close(queue);
  if (s != GPURES_OK) return fail_with(-3000 - s, "gpures_event_queue_*: status %d", s);
  out[0] = count ? ev[0].type : 0;
  out[1] = count ? ev[0].status : 0;
  out[2] = count && ev[0].token == token;
  out[3] = t1 - t0;
  out[4] = count;
  out[5] = reached;
  return 0;
}

/*
** The per-frame semaphore hand-off in gpures terms, from C, means in ns over
** `iters`: out [0] gpures_vk_semaphore_fd_create over `fd` (duplicated,
** opaqueFd timeline, value i) + gpures_clone + 2 x gpures_release; [1]
** gpures_sync_poll on `vk_sem` (a VkSemaphore handle); [2] gpures_sync_wait
** with timeout 0 on it (reached).
*/
API int gp_gpures_bench(int fd, uint64_t vk_sem, uint32_t iters, double *out) {
  if (!g_gpures_lib) return fail_with(-4, "gpures is not open in the probe");
  uint64_t t0 = gp_now_ns();
  for (uint32_t i = 0; i < iters; i++) {
    gpures_vk_semaphore_fd_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.fd = fd;
    d.handle_type = 1;    /* opaqueFd */
    d.semaphore_type = 1; /* timeline */
    d.value = i + 1;
    gpures_handle h = 0;
    GPURES_CALL(g_gpures_vk_semaphore_fd_create(&d, NULL, &h));
    GPURES_CALL(g_gpures_clone(h));
    GPURES_CALL(g_gpures_release(h));
    GPURES_CALL(g_gpures_release(h));
  }
  uint64_t t1 = gp_now_ns();
  uint32_t reached = 0;
  for (uint32_t i = 0; i < iters; i++) GPURES_CALL(g_gpures_sync_poll(vk_sem, &reached));
  uint64_t t2 = gp_now_ns();
  for (uint32_t i = 0; i < iters; i++) GPURES_CALL(g_gpures_sync_wait(vk_sem, 0));
  uint64_t t3 = gp_now_ns();
  out[0] = (double)(t1 - t0) / iters;
  out[1] = (double)(t2 - t1) / iters;
  out[2] = (double)(t3 - t2) / iters;
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The median of n samples (sorted in place). */
static double median_ns(uint64_t *v, uint32_t n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_u64);
  return (double)v[n / 2];
}

/*
** The CUDA importer from C (issue 17's per-frame cost): a new importer on
** device 0 takes `iters` frames cycling over the n VkOpaqueFd handles
** `frames` (a producer's ring), each gpures_cuda_import timed alone and its
** handle released; then `uncached` more, each after gpures_importer_forget
** (a fresh cuImportExternalMemory + map). out: [0] median ns of a cached
** import, [1] its 99th percentile, [2] median of a cached import + release of
** its handle, [3] median of an uncached import, [4..8] stats before destroy
** (imports, hits, freed, cached, failed), [9] imports whose `cached` flag was
** not what the ring predicts (first lap new, the rest cached).
*/
API int gp_gpures_cuda_bench(const uint64_t *frames, uint32_t n, uint32_t iters,
                                uint32_t uncached, double *out) {
  if (!g_gpures_lib) return fail_with(-4, "gpures is not open in the probe");
  if (!n || n > 64 || iters < n || iters > 100000 || uncached > 10000)
    return fail_with(-9, "bad bench sizes (%u frames, %u iterations, %u uncached)", n, iters, uncached);
  uint64_t *alone = calloc(iters, sizeof *alone), *with_release = calloc(iters, sizeof *alone);
  uint64_t *fresh = calloc(uncached ? uncached : 1, sizeof *fresh);
  gpures_importer *imp = NULL;
  int rc = 0;
  if (!alone || !with_release || !fresh) rc = fail_with(-5, "out of host memory");
  gpures_cuda_importer_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  int s = rc ? 0 : g_gpures_cuda_importer_create(&desc, &imp);
  if (s != GPURES_OK) rc = fail_with(-3000 - s, "gpures_cuda_importer_create: %s", g_gpures_last_error());
  uint32_t wrong_flag = 0, timed = 0;
  for (uint32_t i = 0; rc == 0 && i < iters; i++) {
    gpures_cuda_imported r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    uint64_t t0 = gp_now_ns();
    s = g_gpures_cuda_import(imp, frames[i % n], &r);
    uint64_t t1 = gp_now_ns();
    if (s == GPURES_OK) s = g_gpures_release(r.handle);
    uint64_t t2 = gp_now_ns();
    if (s != GPURES_OK) {
      rc = fail_with(-3000 - s, "gpures_cuda_import of frame %u: %s", i, g_gpures_last_error());
      break;
    }
    wrong_flag += r.cached != (i >= n);
    if (i >= n) alone[timed] = t1 - t0, with_release[timed++] = t2 - t0;
  }
  for (uint32_t i = 0; rc == 0 && i < uncached; i++) {
    gpures_cuda_imported r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    s = g_gpures_importer_forget(imp, frames[i % n]);
    uint64_t t0 = gp_now_ns();
    if (s == GPURES_OK) s = g_gpures_cuda_import(imp, frames[i % n], &r);
    fresh[i] = gp_now_ns() - t0;
    if (s == GPURES_OK) s = g_gpures_release(r.handle);
    if (s != GPURES_OK) rc = fail_with(-3000 - s, "uncached import %u: %s", i, g_gpures_last_error());
    else wrong_flag += r.cached != 0;
  }
  gpures_importer_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  if (rc == 0 && (s = g_gpures_importer_stats_get(imp, &st)) != GPURES_OK)
    rc = fail_with(-3000 - s, "gpures_importer_stats_get: %s", g_gpures_last_error());
  if (imp) g_gpures_importer_destroy(imp);
  if (rc == 0) {
    double p99 = 0;
    if (timed) {
      qsort(alone, timed, sizeof *alone, cmp_u64);
      p99 = (double)alone[(uint64_t)timed * 99 / 100];
    }
    out[0] = median_ns(alone, timed);
    out[1] = p99;
    out[2] = median_ns(with_release, timed);
    out[3] = median_ns(fresh, uncached);
    out[4] = (double)st.imports;
    out[5] = (double)st.hits;
    out[6] = (double)st.freed;
    out[7] = (double)st.cached;
    out[8] = (double)st.failed;
    out[9] = wrong_flag;
  }
  free(alone);
  free(with_release);
  free(fresh);
  return rc;
}

static void sync_close(void) {
  if (g_stream) {
    p_cuStreamSynchronize(g_stream);
    p_cuStreamDestroy(g_stream);
    g_stream = NULL;
  }
  if (g_sync_pinned) p_cuMemFreeHost(g_sync_pinned);
  g_sync_pinned = NULL;
  g_sync_pinned_size = 0;
  if (g_sync_counter_host) p_cuMemFreeHost(g_sync_counter_host);
  g_sync_counter_host = NULL;
  if (g_sync_scratch) p_cuMemFree(g_sync_scratch);
  g_sync_scratch = 0;
  g_sync_scratch_size = 0;
  if (g_device) {
    vk_vkQueueWaitIdle(g_queue);
    if (g_sync_src.buffer) free_buffer(&g_sync_src);
    if (g_sync_read.buffer) free_buffer(&g_sync_read);
    g_sync_cmd = NULL; /* freed with the pool */
  }
}

/* ============================================================ CUDA pools */
/*
** The CUDA pool checks (issue 29): frames of a gpures CudaFramePool written
** by a kernel in one process and checked by a kernel in another, ordered only
** by the fences that travel with them. The producer's stream signals a Vulkan
** timeline semaphore imported into CUDA after its fill; the consumer's stream
** waits on the same point, checks, and records a CUevent that becomes the
** frame's release fence. Nothing here waits on the host but gp_pool_counts.
*/
#define GP_POOL_EVENTS 64
#define GP_POOL_COUNTS 4096
static CUdeviceptr g_pool_counts; /* one mismatch count per frame index */
static CUevent g_pool_events[GP_POOL_EVENTS];

static int pool_ready(void) {
  if (!g_ctx) return fail_with(-4, "CUDA is not open");
  if (!g_stream) CU(p_cuStreamCreate(&g_stream, CU_STREAM_NON_BLOCKING));
  if (!g_pool_counts) {
    CU(p_cuMemAlloc(&g_pool_counts, GP_POOL_COUNTS * 8));
    CU(p_cuMemsetD8(g_pool_counts, 0, GP_POOL_COUNTS * 8));
  }
  return 0;
}

/* Queued on the probe's stream: the fill kernel writes `seed` over n bytes at ptr, then cu_sem is signalled to value. */
API int gp_pool_fill_signal(uint64_t ptr, uint64_t n, uint32_t seed, uint64_t cu_sem,
                            uint64_t value) {
  int rc = pool_ready();
  if (rc) return rc;
  if (!g_fill_bytes) return fail_with(-3, "the kernels are not loaded: %s", g_kernel_note);
  if ((rc = cu_fill_on_stream(ptr, n, seed)) != 0) return rc;
  CUexternalSemaphore ext = (CUexternalSemaphore)(uintptr_t)cu_sem;
  CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS sp;
  memset(&sp, 0, sizeof sp);
  sp.params.fence.value = value;
  CU(p_cuSignalExternalSemaphoresAsync(&ext, &sp, 1, g_stream));
  return 0;
}

/*
** Queued on the probe's stream: a wait on cu_sem for value, the check kernel
** counting bytes unlike `seed` into frame `index`'s count, and a CUevent
** recorded after it. out: [0] the CUevent (one of a ring the probe owns),
** [1] the CUcontext, [2] the device ordinal.
*/
API int gp_pool_wait_check(uint64_t ptr, uint64_t n, uint32_t seed, uint64_t cu_sem,
                           uint64_t value, uint32_t index, uint64_t *out) {
  int rc = pool_ready();
  if (rc) return rc;
  if (!g_check_bytes) return fail_with(-3, "the kernels are not loaded: %s", g_kernel_note);
  if (index >= GP_POOL_COUNTS) return fail_with(-9, "frame index %u past %u", index, GP_POOL_COUNTS);
  CUexternalSemaphore ext = (CUexternalSemaphore)(uintptr_t)cu_sem;
  CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wp;
  memset(&wp, 0, sizeof wp);
  wp.params.fence.value = value;
  CU(p_cuWaitExternalSemaphoresAsync(&ext, &wp, 1, g_stream));
  CUdeviceptr p = ptr, c = g_pool_counts + (CUdeviceptr)index * 8;
  unsigned long long nn = n;
  void *args[] = {&p, &nn, &seed, &c};
  CU(p_cuLaunchKernel(g_check_bytes, grid_for(n), 1, 1, 256, 1, 1, 0, g_stream, args, NULL));
  CUevent *ev = &g_pool_events[index % GP_POOL_EVENTS];
  if (!*ev) CU(p_cuEventCreate(ev, CU_EVENT_DISABLE_TIMING));
  CU(p_cuEventRecord(*ev, g_stream));
  out[0] = (uint64_t)(uintptr_t)*ev;
  out[1] = (uint64_t)(uintptr_t)g_ctx;
  out[2] = (uint64_t)g_dev;
  return 0;
}

/* Waits for the probe's stream, then copies the first `count` per-frame counts to out. */
API int gp_pool_counts(uint32_t count, uint64_t *out) {
  int rc = pool_ready();
  if (rc) return rc;
  if (count > GP_POOL_COUNTS) return fail_with(-9, "%u counts asked, %u kept", count, GP_POOL_COUNTS);
  CU(p_cuStreamSynchronize(g_stream));
  CU(p_cuMemcpyDtoH(out, g_pool_counts, (size_t)count * 8));
  return 0;
}

/* cuMemGetInfo: out [0] free bytes, [1] total. */
API int gp_cu_mem_info(uint64_t *out) {
  if (!g_ctx) return fail_with(-4, "CUDA is not open");
  size_t free_bytes = 0, total = 0;
  CU(p_cuMemGetInfo(&free_bytes, &total));
  out[0] = free_bytes;
  out[1] = total;
  return 0;
}

/* cuIpcGetMemHandle of a cuMemAlloc pointer: the 64 bytes another process opens. */
API int gp_cu_ipc_handle(uint64_t ptr, uint8_t *out64) {
  if (!g_ctx) return fail_with(-4, "CUDA is not open");
  CUipcMemHandle h;
  CU(p_cuIpcGetMemHandle(&h, (CUdeviceptr)ptr));
  memcpy(out64, h.reserved, 64);
  return 0;
}

/*
** What CUDA IPC costs a consumer, timed here: out [0] ns of cuIpcOpenMemHandle
** (the first import), [1] ns of cuIpcCloseMemHandle, [2] mismatches the check
** kernel counts in `n` bytes at the opened pointer against `seed`.
*/
API int gp_cu_ipc_open_check(const uint8_t *handle64, uint64_t n, uint32_t seed, uint64_t *out) {
  if (!g_ctx) return fail_with(-4, "CUDA is not open");
  CUipcMemHandle h;
  memcpy(h.reserved, handle64, 64);
  CUdeviceptr ptr = 0;
  uint64_t t0 = gp_now_ns();
  CU(p_cuIpcOpenMemHandle(&ptr, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  uint64_t t1 = gp_now_ns();
  uint64_t wrong = 0;
  int rc = gp_cu_check(ptr, n, seed, &wrong);
  uint64_t t2 = gp_now_ns();
  CU(p_cuIpcCloseMemHandle(ptr));
  uint64_t t3 = gp_now_ns();
  if (rc) return rc;
  out[0] = t1 - t0;
  out[1] = t3 - t2;
  out[2] = wrong;
  return 0;
}

static void pool_close(void) {
  if (g_stream) p_cuStreamSynchronize(g_stream);
  for (int i = 0; i < GP_POOL_EVENTS; i++)
    if (g_pool_events[i]) p_cuEventDestroy(g_pool_events[i]), g_pool_events[i] = NULL;
  if (g_pool_counts) p_cuMemFree(g_pool_counts);
  g_pool_counts = 0;
}
