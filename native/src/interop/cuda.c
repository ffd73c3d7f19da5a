/*
** cuda.c: frames into CUDA (a VkOpaqueFd by cuImportExternalMemory of a dup
** of its fd, mapped whole with cuExternalMemoryGetMappedBuffer; a CudaVmmFd by
** cuMemImportFromShareableHandle, mapped whole with cuMemMap), what a CUDA
** device says about itself (its identity and what it imports), and the
** driver's loading, shared with cuda_pool.c through cuda.h.
**
** Every CUDA call runs with the importer's context pushed (its own, or the
** device's primary context, retained at create and released at destroy), so
** the caller's current context is left as it was.
*/
#if defined(__linux__)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda.h"

#define LIB_CUDA "libcuda.so.1"

GPURES__HIDDEN cu_api gpures__cu;
#define cu gpures__cu /* this file's short name for it */
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;
static char cu_problem[320]; /* why CUDA cannot be used, or "" once it can */

static void cu_open(void) {
  void *lib = dlopen(LIB_CUDA, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    snprintf(cu_problem, sizeof cu_problem, "%s cannot be opened: %s", LIB_CUDA,
             why ? why : "not found");
    return;
  }
#define CU_LOAD(name, member, result, params)                                              \
  if (!(cu.member = (result(*) params)dlsym(lib, name))) {                                 \
    snprintf(cu_problem, sizeof cu_problem, "%s has no %s (a driver older than CUDA 11.4)", \
             LIB_CUDA, name);                                                              \
    return;                                                                                \
  }
  CU_FNS(CU_LOAD)
#undef CU_LOAD
  cu_result r = cu.init(0);
  if (r != CU_OK) {
    const char *name = NULL;
    if (cu.error_name(r, &name) != CU_OK || !name) name = "an unknown CUresult";
    snprintf(cu_problem, sizeof cu_problem, "cuInit failed: %s (%d)", name, r);
    return;
  }
  cu_problem[0] = 0;
}

int gpures__cu_ready(gpures__op op) {
  pthread_once(&cu_once, cu_open);
  return cu_problem[0] ? gpures__fail(op, GPURES_E_UNSUPPORTED, "", "%s", cu_problem) : GPURES_OK;
}

static const char *cu_error_name(cu_result r) {
  const char *name = NULL;
  return cu.error_name && cu.error_name(r, &name) == CU_OK && name ? name : "CUDA_ERROR_UNKNOWN";
}

int gpures__cu_fail(gpures__op op, const char *field, const char *call, cu_result r) {
  int status = GPURES_E_OS_ERROR;
  if (r == CU_OUT_OF_MEMORY) status = GPURES_E_OUT_OF_MEMORY;
  else if (r == CU_NOT_SUPPORTED) status = GPURES_E_UNSUPPORTED;
  else if (r == CU_INVALID_VALUE || r == CU_INVALID_HANDLE || r == CU_INVALID_CONTEXT)
    status = GPURES_E_INVALID_VALUE;
  else if (r >= CU_STICKY_FIRST && r <= CU_STICKY_LAST) status = GPURES_E_DEVICE_LOST;
  return gpures__fail(op, status, field, "%s failed: %s (%d)", call, cu_error_name(r), r);
}

/* ------------------------------------------------------------- devices */

int gpures__cu_device_of(gpures__op op, const char *field, int32_t ordinal, cu_device *out) {
  int count = 0;
  cu_result r = cu.device_count(&count);
  if (r != CU_OK) return gpures__cu_fail(op, field, "cuDeviceGetCount", r);
  if (ordinal < 0 || ordinal >= count)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                        "device %d does not exist: CUDA lists %d device(s)", (int)ordinal, count);
  r = cu.device_get(out, ordinal);
  return r == CU_OK ? GPURES_OK : gpures__cu_fail(op, field, "cuDeviceGet", r);
}

/* device_id stays 0: CUDA does not give the PCI device id (its PCI_DEVICE_ID is the bus slot). */
int gpures__cu_describe(gpures__op op, cu_device dev, gpures_device_info *info) {
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  info->vendor_id = 0x10de;
  info->id.kind = GPURES_DEVICE_CUDA_UUID;
  cu_result r = cu.device_uuid(info->id.bytes, dev);
  if (r != CU_OK) return gpures__cu_fail(op, "device", "cuDeviceGetUuid", r);
  r = cu.device_name(info->name, (int)sizeof info->name - 1, dev);
  if (r != CU_OK) return gpures__cu_fail(op, "device", "cuDeviceGetName", r);
  return GPURES_OK;
}

int gpures_cuda_device_info(int32_t ordinal, gpures_device_info *out) {
  gpures__op op = {"read CUDA device", 0};
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  int status = gpures__cu_ready(op);
  cu_device dev = 0;
  if (status == GPURES_OK) status = gpures__cu_device_of(op, "ordinal", ordinal, &dev);
  gpures_device_info info;
  if (status == GPURES_OK) status = gpures__cu_describe(op, dev, &info);
  return status == GPURES_OK ? gpures__copy_out(op, out, &info, sizeof info) : status;
}

/* An attribute, or 0 ("not known") when the driver will not say. */
static uint32_t cu_attribute(cu_device dev, int attribute) {
  int value = 0;
  return cu.device_attribute(&value, attribute, dev) == CU_OK && value > 0 ? (uint32_t)value : 0;
}

/*
** Every format with a DRM fourcc, LINEAR, as opaque fds and CUDA VMM fds:
** CUDA maps the memory as plain bytes, so any layout works. The limits are a
** pitched 2D texture's (cuTexObjectCreate over the import), the strictest use
** of one.
*/
int gpures_caps_cuda(int32_t ordinal, gpures_format_cap *out, uint32_t capacity,
                     uint32_t *out_count) {
  gpures__op op = {"list CUDA formats", 0};
  int status = gpures__caps_args(op, out, capacity, out_count);
  if (status == GPURES_OK) status = gpures__cu_ready(op);
  cu_device dev = 0;
  if (status == GPURES_OK) status = gpures__cu_device_of(op, "ordinal", ordinal, &dev);
  if (status != GPURES_OK) return status;
  gpures_format_cap cap = {0};
  cap.memory = GPURES_MEMORY_OPAQUE_FD | GPURES_MEMORY_CUDA_VMM_FD;
  cap.modifier = GPURES_MODIFIER_LINEAR;
  cap.max_width = cu_attribute(dev, CU_ATTR_TEXTURE2D_LINEAR_WIDTH);
  cap.max_height = cu_attribute(dev, CU_ATTR_TEXTURE2D_LINEAR_HEIGHT);
  cap.row_align = 1; /* imports assume rows packed at the format's row bytes */
  uint32_t count = 0;
  gpures__caps_every_format(&cap, out, capacity, &count);
  return gpures__caps_end(op, capacity, count, out_count);
}

/* ------------------------------------------------------------ importer */

/* The importer's CUDA state. */
typedef struct {
  gpures__cu_context ctx;
  uint8_t uuid[16]; /* cuDeviceGetUuid: the deviceUuid of every import's handle */
} cuda_state;

/* One import: the external memory (or VMM mapping), and the frame's place in it. */
typedef struct {
  cu_ext_memory memory; /* a VkOpaqueFd's; NULL for a CudaVmmFd's mapping */
  cu_deviceptr base;  /* the mapping of the whole allocation: what cuMemFree or cuMemUnmap takes */
  uint64_t mapped;    /* a CudaVmmFd's: bytes mapped at base */
  uint64_t offset;    /* of the frame in the allocation */
  uint64_t size;      /* bytes from base + offset */
  uint32_t row_pitch; /* 0: no standard layout (the import is a CudaBufferHandle) */
  uint32_t num_planes;
  uint32_t width;
  uint32_t height;
  uint64_t plane_offsets[4]; /* from base + offset */
  gpures_handle handle; /* the import's CudaPtr2D or CudaBufferHandle; each caller gets a clone */
} cuda_payload;
_Static_assert(sizeof(cuda_payload) <= GPURES__PAYLOAD_MAX, "a CUDA import fits the payload");

int gpures__cu_push(gpures__op op, const gpures__cu_context *c) {
  cu_result r = cu.push(c->context);
  return r == CU_OK ? GPURES_OK : gpures__cu_fail(op, "context", "cuCtxPushCurrent", r);
}

void gpures__cu_pop(void) {
  cu_context popped;
  (void)cu.pop(&popped);
}

int gpures__cu_context_open(gpures__op op, void *context, cu_device dev, gpures__cu_context *c) {
  memset(c, 0, sizeof *c);
  c->device = dev;
  if (!context) {
    cu_result r = cu.primary_retain(&c->context, dev);
    c->retained = r == CU_OK;
    return r == CU_OK ? GPURES_OK : gpures__cu_fail(op, "device", "cuDevicePrimaryCtxRetain", r);
  }
  c->context = context;
  int status = gpures__cu_push(op, c);
  if (status != GPURES_OK) return status;
  cu_device on = -1;
  cu_result r = cu.context_device(&on);
  gpures__cu_pop();
  if (r != CU_OK) return gpures__cu_fail(op, "context", "cuCtxGetDevice", r);
  if (on != dev)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "context",
                        "the context is on CUdevice %d, and device names CUdevice %d", on, dev);
  return GPURES_OK;
}

void gpures__cu_context_close(gpures__cu_context *c) {
  if (c->retained) (void)cu.primary_release(c->device);
  c->retained = false;
}

int gpures__cu_map_whole(gpures__op op, const char *field, cu_device dev, cu_mem_handle handle,
                         uint64_t size, cu_deviceptr *out) {
  cu_deviceptr at = 0;
  cu_result r = cu.address_reserve(&at, size, 0, 0, 0);
  if (r != CU_OK) return gpures__cu_fail(op, field, "cuMemAddressReserve", r);
  const char *call = "cuMemMap";
  if ((r = cu.mem_map(at, size, 0, handle, 0)) == CU_OK) {
    cu_mem_access access = {{CU_MEM_ON_DEVICE, dev}, CU_MEM_READ_WRITE};
    call = "cuMemSetAccess";
    if ((r = cu.mem_set_access(at, size, &access, 1)) == CU_OK) return *out = at, GPURES_OK;
    (void)cu.mem_unmap(at, size);
  }
  (void)cu.address_free(at, size);
  return gpures__cu_fail(op, field, call, r);
}

void gpures__cu_unmap_whole(cu_deviceptr ptr, uint64_t size) {
  (void)cu.mem_unmap(ptr, size);
  (void)cu.address_free(ptr, size);
}

/*
** Where the frame's planes are: at its rowPitch when it gives one, else with
** packed rows (gpures_pixel_format_layout with row_align 1), the layout
** gpures_caps_cuda() asks for. A frame that has no standard layout (over
** 4 GiB) is imported as bytes.
*/
static int frame_shape(gpures__op op, const gpures_vk_opaque_fd_desc *d, cuda_payload *p) {
  p->offset = d->offset;
  p->size = d->size - d->offset; /* create checked offset < size, and that the rows fit */
  gpures_plane_layout planes[4];
  uint64_t bytes = 0;
  if (gpures_pixel_format_layout(d->format, d->width, d->height, 1, planes, &bytes) != GPURES_OK)
    return GPURES_OK;
  if (!d->row_pitch && bytes > p->size)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "size",
                        "a %ux%u %s frame takes %llu bytes, and the allocation has %llu after "
                        "offset %llu",
                        d->width, d->height, gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, d->format),
                        (unsigned long long)bytes, (unsigned long long)p->size,
                        (unsigned long long)d->offset);
  p->num_planes = gpures_pixel_format_info_of(d->format)->num_planes;
  p->row_pitch = d->row_pitch ? d->row_pitch : planes[0].stride;
  p->width = d->width;
  p->height = d->height;
  uint64_t at = 0;
  for (uint32_t i = 0; i < p->num_planes; i++) { /* planes follow each other at their pitch */
    uint64_t pitch = 0;
    uint32_t rows = 0;
    (void)gpures_pixel_format_plane_pitch(d->format, i, p->row_pitch, &pitch);
    (void)gpures_pixel_format_plane_extent(d->format, i, d->width, d->height, NULL, &rows);
    p->plane_offsets[i] = at;
    at += pitch * rows;
  }
  return GPURES_OK;
}

/* cuImportExternalMemory of a dup of the frame's fd (CUDA owns it once imported), mapped whole. */
static int import_memory(gpures__op op, const gpures_vk_opaque_fd_desc *d, cuda_payload *p) {
  int fd = gpures__fd_dup(d->fd);
  if (fd < 0) return gpures__os_fail(op, "fd", "dup", errno);
  cu_ext_memory_desc md;
  memset(&md, 0, sizeof md);
  md.type = CU_EXT_MEMORY_OPAQUE_FD;
  md.handle.fd = fd;
  md.size = d->size;
  md.flags = d->dedicated ? CU_EXT_MEMORY_DEDICATED : 0;
  cu_result r = cu.import_memory(&p->memory, &md);
  if (r != CU_OK) {
    gpures__fd_close(fd);
    return gpures__cu_fail(op, "fd", "cuImportExternalMemory", r);
  }
  cu_ext_buffer_desc bd;
  memset(&bd, 0, sizeof bd);
  bd.size = d->size;
  r = cu.map_buffer(&p->base, p->memory, &bd);
  if (r != CU_OK) {
    (void)cu.destroy_memory(p->memory);
    return gpures__cu_fail(op, "size", "cuExternalMemoryGetMappedBuffer", r);
  }
  return GPURES_OK;
}

/*
** cuMemImportFromShareableHandle of the frame's own fd (CUDA reads it and
** leaves it open), mapped whole: a frame whose size is past the allocation's
** fails at the map, INVALID_VALUE naming "size". The import's handle goes at
** once; the mapping holds the memory.
*/
static int import_vmm(gpures__op op, const cuda_state *st, const gpures_cuda_vmm_fd_desc *d,
                      cuda_payload *p) {
  cu_mem_handle handle = 0;
  cu_result r = cu.mem_import(&handle, (void *)(intptr_t)d->fd, CU_MEM_POSIX_FD);
  if (r != CU_OK) return gpures__cu_fail(op, "fd", "cuMemImportFromShareableHandle", r);
  int status = gpures__cu_map_whole(op, "size", st->ctx.device, handle, d->size, &p->base);
  (void)cu.mem_release(handle);
  if (status == GPURES_OK) p->mapped = d->size;
  return status;
}

/* A new CudaPtr2D over the import's planes, or a CudaBufferHandle over its bytes. */
static int import_handle(const cuda_payload *p, const uint8_t uuid[16], gpures_handle *out) {
  cu_deviceptr at = p->base + p->offset;
  if (!p->row_pitch) {
    gpures_cuda_buffer_handle_desc b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    b.flags = GPURES_HAS_DEVICE_UUID;
    b.ptr = at;
    b.size = p->size;
    memcpy(b.device_uuid, uuid, 16);
    return gpures_cuda_buffer_handle_create(&b, NULL, out);
  }
  gpures_cuda_ptr_2d_desc t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.flags = GPURES_HAS_DEVICE_UUID;
  t.ptr = at;
  t.row_pitch = p->row_pitch;
  t.num_plane_byte_offsets = p->num_planes;
  memcpy(t.plane_byte_offsets, p->plane_offsets, sizeof t.plane_byte_offsets);
  memcpy(t.device_uuid, uuid, 16);
  t.width = p->width;
  t.height = p->height;
  return gpures_cuda_ptr_2d_create(&t, NULL, out);
}

static void cuda_free(void *api, void *payload);

static int cuda_make(void *api, gpures__op op, const gpures__frame *frame, void *payload) {
  const cuda_state *st = api;
  const gpures_vk_opaque_fd_desc *d = &frame->desc.opaque;
  int status = frame_shape(op, d, payload);
  if (status == GPURES_OK) status = gpures__cu_push(op, &st->ctx);
  if (status != GPURES_OK) return status;
  status = frame->kind == GPURES_KIND_CUDA_VMM_FD ? import_vmm(op, st, &frame->desc.cuda_vmm, payload)
                                                  : import_memory(op, d, payload);
  gpures__cu_pop();
  if (status != GPURES_OK) return status;
  /* One handle per import, made once: a cached import costs callers a clone, not a create. */
  cuda_payload *p = payload;
  if ((status = import_handle(p, st->uuid, &p->handle)) != GPURES_OK) {
    cuda_free(api, payload);
    return gpures__refail(op, status);
  }
  return GPURES_OK;
}

static void cuda_free(void *api, void *payload) {
  const cuda_state *st = api;
  const cuda_payload *p = payload;
  (void)gpures_release(p->handle); /* callers' clones stay valid handles; the memory goes now */
  if (cu.push(st->ctx.context) != CU_OK) return; /* the context is gone, and its memory with it */
  if (p->memory) {
    (void)cu.mem_free(p->base);
    (void)cu.destroy_memory(p->memory);
  } else {
    gpures__cu_unmap_whole(p->base, p->mapped);
  }
  gpures__cu_pop();
}

static void cuda_destroy(void *api) {
  cuda_state *st = api;
  gpures__cu_context_close(&st->ctx);
  gpures__free(st);
}

static const gpures__import_ops cuda_ops = {
  .api = "CUDA",
  /* CUDA has no dma-buf import on Linux */
  .kinds = (1ull << GPURES_KIND_VK_OPAQUE_FD) | (1ull << GPURES_KIND_CUDA_VMM_FD),
  .payload_size = sizeof(cuda_payload),
  .make = cuda_make,
  .free = cuda_free,
  .destroy = cuda_destroy,
};

/* The importer's state for a checked descriptor, and its device. */
static int importer_state(gpures__op op, const gpures_cuda_importer_desc *d,
                          gpures_device_info *info, cuda_state **out) {
  int status = gpures__cu_ready(op);
  cu_device dev = 0;
  if (status == GPURES_OK) status = gpures__cu_device_of(op, "device", d->device, &dev);
  if (status == GPURES_OK) status = gpures__cu_describe(op, dev, info);
  if (status != GPURES_OK) return status;
  cuda_state *st = gpures__alloc(sizeof *st);
  if (!st) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for the importer");
  memset(st, 0, sizeof *st);
  status = gpures__cu_context_open(op, d->context, dev, &st->ctx);
  if (status != GPURES_OK) {
    gpures__free(st);
    return status;
  }
  *out = st;
  return GPURES_OK;
}

int gpures_cuda_importer_create(const gpures_cuda_importer_desc *desc,
                                gpures_importer **out_importer) {
  gpures__op op = {"create CUDA importer", 0};
  gpures_cuda_importer_desc d;
  int status = gpures__importer_desc(op, desc, sizeof d, &d, out_importer);
  if (status != GPURES_OK) return status;
  if (d.flags)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags is 0x%x; no flag is defined",
                        d.flags);
  gpures_device_info info;
  cuda_state *st = NULL;
  status = importer_state(op, &d, &info, &st);
  if (status != GPURES_OK) return status;
  memcpy(st->uuid, info.id.bytes, sizeof st->uuid);
  return gpures__importer_new(op, &cuda_ops, st, &info, d.capacity, out_importer);
}

int gpures_cuda_import(gpures_importer *importer, gpures_handle frame, gpures_cuda_imported *out) {
  gpures__op op = {"import", 0};
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  /* An out struct that ends before `handle` gets none: a reference nobody sees would leak. */
  uint32_t given;
  memcpy(&given, out, sizeof given);
  bool wants_handle = given >= offsetof(gpures_cuda_imported, handle) + sizeof out->handle;
  cuda_payload p;
  uint32_t cached = 0;
  int status = gpures__importer_import(importer, &cuda_ops, "import", frame, &p, &cached);
  if (status != GPURES_OK) return status;
  gpures_cuda_imported r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  r.cached = cached;
  r.ptr = p.base + p.offset;
  r.size = p.size;
  r.external_memory = (uint64_t)(uintptr_t)p.memory;
  if (wants_handle && (status = gpures_clone(p.handle)) != GPURES_OK)
    return gpures__refail(op, status);
  if (wants_handle) r.handle = p.handle;
  status = gpures__copy_out(op, out, &r, sizeof r);
  if (status != GPURES_OK && wants_handle) (void)gpures_release(r.handle);
  return status;
}
#endif
