/* dma_buf.c: DmaBufHandle (Linux, Android): owned fds and a DRM plane layout. */
#include <stdio.h>

#include "../internal.h"

#define DRM_FORMAT_MOD_LINEAR 0ull
#define DRM_FORMAT_MOD_INVALID 0x00ffffffffffffffull

#define T gpures_dma_buf_handle_desc
static const gpures_field_info dma_buf_handle_fields[] = {
  GPURES__COUNT_ROW(T, num_fds, "fds", 4, GPURES_E_INVALID_VALUE, "number of fds (objects)"),
  GPURES__ARRAY_ROW(T, fds, num_fds, "fds[]", GPURES_FIELD_FD, 0, "one fd per memory object, owned by the handle"),
  GPURES__ROW(T, fourcc, "fourcc", GPURES_FIELD_U32, 0, 0, "DRM fourcc"),
  GPURES__ROW(T, modifier, "modifier", GPURES_FIELD_U64, 0, 0, "DRM format modifier"),
  GPURES__ROW(T, width, "width", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "width in pixels"),
  GPURES__ROW(T, height, "height", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "height in pixels"),
  GPURES__COUNT_ROW(T, num_planes, "planes", 4, GPURES_E_INVALID_VALUE, "number of planes"),
  GPURES__STRUCT_ARRAY_ROW(T, planes, object_index, num_planes, "planes[].objectIndex", GPURES_FIELD_U32, 0, "index of the fd holding the plane"),
  GPURES__STRUCT_ARRAY_ROW(T, planes, offset, num_planes, "planes[].offset", GPURES_FIELD_U32, 0, "bytes from the object's start"),
  GPURES__STRUCT_ARRAY_ROW(T, planes, stride, num_planes, "planes[].stride", GPURES_FIELD_U32, 0, "bytes per row"),
};

/* With a linear layout of a known format, each plane must fit its object row by row. */
static int check_plane(gpures__op op, const T *d, uint32_t i, int64_t object_size,
                       const gpures_pixel_format_info *format) {
  const gpures_dma_buf_plane *p = &d->planes[i];
  char field[32];
  uint64_t end = (uint64_t)p->offset + 1u;
  if (format) {
    uint64_t row_bytes;
    uint32_t rows;
    gpures_pixel_format_row_bytes(format->id, i, d->width, &row_bytes);
    gpures_pixel_format_plane_extent(format->id, i, d->width, d->height, NULL, &rows);
    if (p->stride < row_bytes) {
      snprintf(field, sizeof field, "planes[%u].stride", i);
      return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                          "%s %u is below the %llu bytes of a row of plane %u", field, p->stride,
                          (unsigned long long)row_bytes, i);
    }
    end = (uint64_t)p->offset + (uint64_t)p->stride * (rows - 1u) + row_bytes;
  }
  if (object_size < 0 || end <= (uint64_t)object_size) return GPURES_OK;
  snprintf(field, sizeof field, "planes[%u].offset", i);
  return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                      "planes[%u] ends at byte %llu but object %u has %lld bytes", i,
                      (unsigned long long)end, p->object_index, (long long)object_size);
}

static int validate_dma_buf_handle(gpures__op op, const void *desc) {
  const T *d = desc;
  const gpures_pixel_format_info *format = NULL;
  if (d->modifier == DRM_FORMAT_MOD_LINEAR || d->modifier == DRM_FORMAT_MOD_INVALID)
    format = gpures_pixel_format_from_fourcc(d->fourcc); /* tiled layouts are the driver's to check */
  if (format && format->num_planes != d->num_planes)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "planes", "planes has %u entries but %s has %u",
                        d->num_planes, gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, format->id),
                        format->num_planes);
  /* Each object's size is read once, however many planes it holds (NV12 has two in one):
     a system call costs more than everything else create does. */
  int64_t sizes[4];
  bool sized[4] = {false, false, false, false};
  for (uint32_t i = 0; i < d->num_planes; i++) {
    uint32_t object = d->planes[i].object_index;
    if (object >= d->num_fds) {
      char field[32];
      snprintf(field, sizeof field, "planes[%u].objectIndex", i);
      return gpures__fail(op, GPURES_E_INVALID_VALUE, field, "%s is %u but there are %u fds",
                          field, object, d->num_fds);
    }
    if (!sized[object]) {
      sizes[object] = gpures__fd_size(d->fds[object]);
      sized[object] = true;
    }
    int status = check_plane(op, d, i, sizes[object], format);
    if (status != GPURES_OK) return status;
  }
  return GPURES_OK;
}
GPURES__VARIANT(dma_buf_handle, dma_buf_handle_fields, validate_dma_buf_handle);
#undef T
