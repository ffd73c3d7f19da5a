/*
** gpu_pool.c: what the GPU pools (vulkan_pool.c, cuda_pool.c) share. Their
** frames have one shape (VkOpaqueFd's layout: plane 0's rows at a pitch
** aligned to rowAlign, later planes after it), checked before any API call;
** and a pool is made only once one trial slot's frame passes the kind's own
** create, so no per-frame check is skipped wrongly.
*/
#if defined(__linux__)
#define _GNU_SOURCE
#include <string.h>
#include <unistd.h>

#include "../frames/backing.h"

#define ROW_ALIGN_DEFAULT 256u /* what CUDA's pitched copies and most GPUs' row pitches like */
#define MAX_FRAME_BYTES (1ull << 34) /* 16 GiB: past any frame, below what a size could saturate to */

int gpures__gpu_pool_shape(gpures__op op, const gpures__gpu_pool_shape_desc *d,
                           gpures_vk_opaque_fd_desc *f, uint64_t *out_bytes) {
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
  int status = gpures_pixel_format_frame_size(d->format, d->width, d->height, f->row_pitch,
                                              out_bytes);
  if (status != GPURES_OK) return gpures__refail(op, status);
  if (*out_bytes > MAX_FRAME_BYTES) /* before any API call sees a saturated size */
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "height",
                        "a %ux%u frame takes %llu bytes; a GPU pool's slot holds at most %llu",
                        d->width, d->height, (unsigned long long)*out_bytes,
                        (unsigned long long)MAX_FRAME_BYTES);
  return GPURES_OK;
}

/* The frame over a trial slot's fd, created as the kind's create sees it. */
static int check_frame(gpures__op op, uint32_t kind, const gpures__pool_frame *frame, int fd) {
  gpures__pool_frame probe = *frame;
  probe.opaque.fd = fd;
  gpures_handle h = 0;
  int status = gpures_create(kind, &probe, NULL, &h);
  (void)gpures_release(h);
  return status == GPURES_OK ? GPURES_OK : gpures__refail(op, status);
}

int gpures__gpu_pool_create(gpures__op op, uint32_t slots, const gpures__pool_frame *frame,
                            const gpures__pool_backing *backing, void *state,
                            gpures_pool **out_pool) {
  gpures__slot_memory trial = {-1, {0, 0}};
  int status = backing->make(state, op, frame->opaque.size, &trial);
  if (status == GPURES_OK) {
    status = check_frame(op, backing->kind, frame, trial.fd);
    backing->unmake(state, &trial);
    close(trial.fd);
  }
  if (status != GPURES_OK) return backing->destroy(state), status;
  return gpures__pool_create_backed(op, slots, frame->opaque.size, frame, backing, state, out_pool);
}
#endif
