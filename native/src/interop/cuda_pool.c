/*
** cuda_pool.c: frame pools in CUDA memory. Each slot is a VMM allocation
** (cuMemCreate, pinned on the device, exportable as a POSIX fd) mapped
** read-write in the pool's context; its frames are CudaVmmFd handles over the
** exported fd, so a session sends the fd once per slot and the receiver's
** CudaImporter maps it once. The pool itself is frames/pool.c's; this file is
** its backing: make, free, and the producer's own pointer to a slot.
**
** The context must outlive gpures_pool_close(), not the frames: the close
** unmaps and releases every allocation, and memory still held lives on in
** the fds of its frames (CUDA frees an allocation once its handle is released
** and every fd exported from it is closed).
*/
#if defined(__linux__)
#define _GNU_SOURCE
#include <string.h>
#include <unistd.h>

#include "cuda.h"
#include "../frames/backing.h"

#define ROW_ALIGN_DEFAULT 256u
#define MAX_FRAME_BYTES (1ull << 34) /* 16 GiB: past any frame, below what a size could saturate to */

typedef struct cuda_pool {
  gpures__cu_context ctx;
  cu_mem_prop prop; /* what every slot is allocated as */
  uint64_t size;    /* of every slot's allocation and mapping */
} cuda_pool;

static gpures__op pool_op(const char *verb) {
  gpures__op op = {verb, GPURES_KIND_CUDA_VMM_FD};
  return op;
}

static void unmake(void *state, gpures__slot_memory *m) {
  cuda_pool *cp = state;
  if (!m->objects[0]) return;
  if (gpures__cu.push(cp->ctx.context) == CU_OK) { /* else the context is gone, and its memory */
    if (m->objects[1]) gpures__cu_unmap_whole(m->objects[1], cp->size);
    (void)gpures__cu.mem_release(m->objects[0]);
    gpures__cu_pop();
  }
  m->objects[0] = m->objects[1] = 0;
}

/*
** objects[0]: the CUmemGenericAllocationHandle; objects[1]: the CUdeviceptr
** of its mapping. What a failed CUDA call wrote back is never trusted: each
** object is kept (and freed) only once its call succeeded.
*/
static int make(void *state, gpures__op op, uint64_t size, gpures__slot_memory *out) {
  cuda_pool *cp = state;
  out->fd = -1;
  out->objects[0] = out->objects[1] = 0;
  int status = gpures__cu_push(op, &cp->ctx);
  if (status != GPURES_OK) return status;
  cu_mem_handle handle = 0;
  cu_result r = gpures__cu.mem_create(&handle, size, &cp->prop, 0);
  if (r != CU_OK) status = gpures__cu_fail(op, "device", "cuMemCreate", r);
  else out->objects[0] = handle;
  int fd = -1;
  if (status == GPURES_OK && (r = gpures__cu.mem_export(&fd, handle, CU_MEM_POSIX_FD, 0)) != CU_OK)
    status = gpures__cu_fail(op, "device", "cuMemExportToShareableHandle", r);
  else if (status == GPURES_OK && fd < 0)
    status = gpures__fail(op, GPURES_E_OS_ERROR, "device",
                          "cuMemExportToShareableHandle gave fd %d", fd);
  cu_deviceptr ptr = 0;
  if (status == GPURES_OK)
    status = gpures__cu_map_whole(op, "device", cp->ctx.device, handle, size, &ptr);
  gpures__cu_pop();
  if (status == GPURES_OK) return out->fd = fd, out->objects[1] = ptr, GPURES_OK;
  if (fd >= 0) close(fd);
  unmake(cp, out);
  return status;
}

static void destroy(void *state) {
  cuda_pool *cp = state;
  gpures__cu_context_close(&cp->ctx);
  gpures__free(cp);
}

static const gpures__pool_backing cuda_backing = {GPURES_KIND_CUDA_VMM_FD, make, unmake, destroy};

static int check_desc(gpures__op op, const gpures_cuda_pool_desc *d) {
  if (d->flags)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags is 0x%x; no flag is defined",
                        d->flags);
  if (d->slots == 0 || d->slots > GPURES_POOL_MAX_SLOTS)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "slots", "slots is %u; a pool has 1 to %u",
                        d->slots, GPURES_POOL_MAX_SLOTS);
  uint32_t align = d->row_align ? d->row_align : ROW_ALIGN_DEFAULT;
  if (align > 4096 || (align & (align - 1)))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "rowAlign",
                        "rowAlign %u is not a power of two up to 4096", align);
  if (!gpures_pixel_format_info_of(d->format))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "format", "format %u is not a PixelFormat",
                        d->format);
  if (!d->width || !d->height)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, d->width ? "height" : "width", "%s is 0",
                        d->width ? "height" : "width");
  return GPURES_OK;
}

/* Every frame's descriptor: rows at the aligned pitch, planes one after another. */
static int frame_desc(gpures__op op, const gpures_cuda_pool_desc *d, const uint8_t uuid[16],
                      gpures_cuda_vmm_fd_desc *f, uint64_t *out_bytes) {
  uint32_t align = d->row_align ? d->row_align : ROW_ALIGN_DEFAULT;
  uint64_t row = 0;
  (void)gpures_pixel_format_row_bytes(d->format, 0, d->width, &row);
  uint64_t pitch = (row + align - 1) / align * align;
  if (pitch > UINT32_MAX)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "width", "a row of %u pixels is too long",
                        d->width);
  memset(f, 0, sizeof *f);
  f->struct_size = sizeof *f;
  f->fd = -1;
  f->width = d->width;
  f->height = d->height;
  f->format = d->format;
  f->row_pitch = (uint32_t)pitch;
  memcpy(f->device_uuid, uuid, 16);
  int status = gpures_pixel_format_frame_size(d->format, d->width, d->height, f->row_pitch,
                                              out_bytes);
  if (status != GPURES_OK) return gpures__refail(op, status);
  if (*out_bytes > MAX_FRAME_BYTES) /* before any CUDA call sees a saturated size */
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "height",
                        "a %ux%u frame takes %llu bytes; a CUDA pool's slot holds at most %llu",
                        d->width, d->height, (unsigned long long)*out_bytes,
                        (unsigned long long)MAX_FRAME_BYTES);
  return GPURES_OK;
}

/* Whether the device makes VMM allocations it can export as POSIX fds. */
static int check_device(gpures__op op, cu_device dev) {
  int vmm = 0, fds = 0;
  (void)gpures__cu.device_attribute(&vmm, CU_ATTR_VMM_SUPPORTED, dev);
  (void)gpures__cu.device_attribute(&fds, CU_ATTR_POSIX_FD_SUPPORTED, dev);
  if (vmm && fds) return GPURES_OK;
  return gpures__fail(op, GPURES_E_UNSUPPORTED, "device",
                      "CUDA device %d %s", (int)dev,
                      vmm ? "cannot export VMM allocations as POSIX fds"
                          : "has no virtual memory management (cuMemCreate)");
}

/* The pool's state: its context, and what each slot is allocated as and takes. */
static int new_state(gpures__op op, const gpures_cuda_pool_desc *d, cuda_pool **out,
                     gpures_cuda_vmm_fd_desc *frame) {
  int status = gpures__cu_ready(op);
  cu_device dev = 0;
  gpures_device_info info;
  if (status == GPURES_OK) status = gpures__cu_device_of(op, "device", d->device, &dev);
  if (status == GPURES_OK) status = check_device(op, dev);
  if (status == GPURES_OK) status = gpures__cu_describe(op, dev, &info);
  uint64_t bytes = 0;
  if (status == GPURES_OK) status = frame_desc(op, d, info.id.bytes, frame, &bytes);
  if (status != GPURES_OK) return status;
  cuda_pool *cp = gpures__alloc(sizeof *cp);
  if (!cp) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for the pool");
  memset(cp, 0, sizeof *cp);
  cp->prop.type = CU_MEM_PINNED;
  cp->prop.requested_handle_types = CU_MEM_POSIX_FD;
  cp->prop.location.type = CU_MEM_ON_DEVICE;
  cp->prop.location.id = dev;
  size_t grain = 0;
  cu_result r = gpures__cu.granularity(&grain, &cp->prop, CU_MEM_GRANULARITY_MINIMUM);
  if (r != CU_OK || !grain) {
    gpures__free(cp);
    return gpures__cu_fail(op, "device", "cuMemGetAllocationGranularity", r ? r : CU_INVALID_VALUE);
  }
  frame->size = cp->size = (bytes + grain - 1) / grain * grain;
  if ((status = gpures__cu_context_open(op, d->context, dev, &cp->ctx)) != GPURES_OK) {
    gpures__free(cp);
    return status;
  }
  *out = cp;
  return GPURES_OK;
}

/* A descriptor the kind's own checks accept (they are skipped per frame). */
static int check_frame(gpures__op op, const gpures_cuda_vmm_fd_desc *f, int fd) {
  gpures_cuda_vmm_fd_desc probe = *f;
  probe.fd = fd;
  gpures_handle h = 0;
  int status = gpures_create(GPURES_KIND_CUDA_VMM_FD, &probe, NULL, &h);
  (void)gpures_release(h);
  return status == GPURES_OK ? GPURES_OK : gpures__refail(op, status);
}

int gpures_cuda_pool_create(const gpures_cuda_pool_desc *desc, gpures_pool **out_pool) {
  gpures__op op = pool_op("create a CUDA pool of");
  if (!out_pool) return gpures__fail(op, GPURES_E_NULL_POINTER, "outPool", "outPool is null");
  *out_pool = NULL;
  if (!desc) return gpures__fail(op, GPURES_E_NULL_POINTER, "desc", "desc is null");
  gpures_cuda_pool_desc d;
  memset(&d, 0, sizeof d);
  int status = gpures__copy_versioned(op, "structSize", desc, sizeof d, &d);
  if (status == GPURES_OK) status = check_desc(op, &d);
  gpures__pool_frame frame;
  cuda_pool *cp = NULL;
  if (status == GPURES_OK) status = new_state(op, &d, &cp, &frame.cuda_vmm);
  if (status != GPURES_OK) return status;
  /* One allocation as the kind's create sees it: a bad template fails here, never per frame. */
  gpures__slot_memory trial = {-1, {0, 0}};
  if ((status = make(cp, op, frame.cuda_vmm.size, &trial)) == GPURES_OK) {
    status = check_frame(op, &frame.cuda_vmm, trial.fd);
    unmake(cp, &trial);
    close(trial.fd);
  }
  if (status != GPURES_OK) return destroy(cp), status;
  return gpures__pool_create_backed(op, d.slots, frame.cuda_vmm.size, &frame, &cuda_backing, cp,
                                    out_pool);
}

int gpures_cuda_pool_objects(gpures_pool *pool, gpures_handle frame, gpures_cuda_pool_slot *out) {
  gpures__op op = pool_op("find the CUDA memory of");
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  uint64_t buffer_id = 0, objects[2] = {0, 0};
  int status = gpures_buffer_id(frame, &buffer_id);
  if (status != GPURES_OK) return gpures__refail(op, status);
  if ((status = gpures__pool_slot_objects(pool, &cuda_backing, buffer_id, objects)) != GPURES_OK)
    return gpures__refail(op, status);
  gpures_cuda_vmm_fd_desc d;
  if ((status = gpures_describe(frame, &d, sizeof d)) != GPURES_OK) return gpures__refail(op, status);
  gpures_cuda_pool_slot slot;
  memset(&slot, 0, sizeof slot);
  slot.struct_size = sizeof slot;
  slot.row_pitch = d.row_pitch;
  slot.ptr = objects[1];
  slot.size = d.size;
  slot.allocation = objects[0];
  return gpures__copy_out(op, out, &slot, sizeof slot);
}

#endif /* __linux__ */
