/*
** backing.h: where a pool's slots get their memory. pool.c owns the slots,
** the waits and the return path; a backing only makes and frees one slot's
** memory (an fd that frames carry, and the API objects the producer writes
** through). The memfd backing is pool.c's own; GPU backings live with their
** API (interop/vulkan_pool.c, interop/cuda_pool.c).
*/
#ifndef GPURES_FRAMES_BACKING_H
#define GPURES_FRAMES_BACKING_H

#include "../internal.h"

/* One slot's memory: the fd its frames carry, and up to two API objects over it. */
typedef struct gpures__slot_memory {
  int fd;
  uint64_t objects[2];
} gpures__slot_memory;

/* Every frame's descriptor, but for its fd (a CudaVmmFd is laid out as `opaque`). */
typedef union gpures__pool_frame {
  gpures_dma_buf_handle_desc dma_buf;
  gpures_vk_opaque_fd_desc opaque;
  gpures_cuda_vmm_fd_desc cuda_vmm;
} gpures__pool_frame;

typedef struct gpures__pool_backing {
  uint32_t kind; /* of the frames: DmaBufHandle, VkOpaqueFd or CudaVmmFd */
  /*
  ** Makes one slot's memory of `size` bytes: on the creating thread, or under
  ** the pool's lock on whichever thread releases a retired frame (its
  ** failures then record nothing). On failure: out->fd -1, nothing left.
  */
  int (*make)(void *state, gpures__op op, uint64_t size, gpures__slot_memory *out);
  /* Frees the API objects of a slot's memory; its fd is the pool's to close. */
  void (*unmake)(void *state, gpures__slot_memory *memory);
  /* Frees the state, at the pool's close (or a failed create): no call follows. */
  void (*destroy)(void *state);
} gpures__pool_backing;

/*
** A pool of `slots` slots of `size` bytes from `backing`, which owns `state`
** from here (destroyed on failure too). `frame` is every frame's descriptor,
** validated by the caller, its fd filled per slot.
*/
int gpures__pool_create_backed(gpures__op op, uint32_t slots, uint64_t size,
                               const gpures__pool_frame *frame, const gpures__pool_backing *backing,
                               void *state, gpures_pool **out_pool);
/* What a GPU pool's frames are shaped by (interop/gpu_pool.c). */
typedef struct gpures__gpu_pool_shape_desc {
  uint32_t slots, format, width, height;
  uint32_t row_align; /* 0: 256 */
} gpures__gpu_pool_shape_desc;

/*
** A GPU pool's frame template, VkOpaqueFd's layout (a CudaVmmFd shares it):
** plane 0's rows at a pitch aligned to row_align, later planes after it;
** *out_bytes what a frame takes. INVALID_VALUE naming "slots", "rowAlign",
** "format", "width" or "height", before any API call. The caller fills the
** device and the size its allocation takes.
*/
int gpures__gpu_pool_shape(gpures__op op, const gpures__gpu_pool_shape_desc *d,
                           gpures_vk_opaque_fd_desc *f, uint64_t *out_bytes);
/*
** The pool, once one trial slot of frame->opaque.size bytes made by
** `backing` gives a frame the kind's own create accepts (so no per-frame
** check is skipped wrongly). Owns `state` from here, as
** gpures__pool_create_backed().
*/
int gpures__gpu_pool_create(gpures__op op, uint32_t slots, const gpures__pool_frame *frame,
                            const gpures__pool_backing *backing, void *state,
                            gpures_pool **out_pool);

/*
** The API objects of the slot whose frame, of buffer `buffer_id`, is held
** now: INVALID_VALUE naming "frame" for a frame not of this pool (or one
** already back), naming "pool" for a pool of another backing; STALE once
** the pool is closed.
*/
int gpures__pool_slot_objects(gpures_pool *pool, const gpures__pool_backing *backing,
                              uint64_t buffer_id, uint64_t out_objects[2]);

#endif
