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
static int new_state(gpures__op op, const gpures_cuda_pool_desc *d, uint64_t bytes,
                     cuda_pool **out, gpures_cuda_vmm_fd_desc *frame) {
  int status = gpures__cu_ready(op);
  cu_device dev = 0;
  gpures_device_info info;
  if (status == GPURES_OK) status = gpures__cu_device_of(op, "device", d->device, &dev);
  if (status == GPURES_OK) status = check_device(op, dev);
  if (status == GPURES_OK) status = gpures__cu_describe(op, dev, &info);
  if (status != GPURES_OK) return status;
  memcpy(frame->device_uuid, info.id.bytes, 16);
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

int gpures_cuda_pool_create(const gpures_cuda_pool_desc *desc, gpures_pool **out_pool) {
  gpures__op op = pool_op("create a CUDA pool of");
  if (!out_pool) return gpures__fail(op, GPURES_E_NULL_POINTER, "outPool", "outPool is null");
  *out_pool = NULL;
  if (!desc) return gpures__fail(op, GPURES_E_NULL_POINTER, "desc", "desc is null");
  gpures_cuda_pool_desc d;
  memset(&d, 0, sizeof d);
  int status = gpures__copy_versioned(op, "structSize", desc, sizeof d, &d);
  if (status == GPURES_OK && d.flags)
    status = gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags is 0x%x; no flag is defined",
                          d.flags);
  gpures__gpu_pool_shape_desc shape = {d.slots, d.format, d.width, d.height, d.row_align};
  gpures__pool_frame frame;
  uint64_t bytes = 0;
  if (status == GPURES_OK) status = gpures__gpu_pool_shape(op, &shape, &frame.opaque, &bytes);
  cuda_pool *cp = NULL;
  if (status == GPURES_OK) status = new_state(op, &d, bytes, &cp, &frame.cuda_vmm);
  if (status != GPURES_OK) return status;
  return gpures__gpu_pool_create(op, d.slots, &frame, &cuda_backing, cp, out_pool);
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
