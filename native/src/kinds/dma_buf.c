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

/* The bytes of its object a plane is known to cover: [start, end). */
typedef struct span {
  uint64_t start, end;
} span;

/*
** With a linear layout of a known format a plane covers its rows up to the
** last byte of its last row, the bound the kernel's own framebuffer check
** uses (a last row without padding is legal). Of an unknown linear format
** only plane 0's height is known (DRM never subsamples plane 0), not its row
** bytes: at least one byte of its last row. Of anything else, its first byte.
*/
static int plane_span(gpures__op op, const T *d, uint32_t i, bool linear,
                      const gpures_pixel_format_info *format, span *out) {
  const gpures_dma_buf_plane *p = &d->planes[i];
  uint64_t row_bytes = 1;
  uint32_t rows = i == 0 && linear ? d->height : 1;
  if (format) {
    gpures_pixel_format_row_bytes(format->id, i, d->width, &row_bytes);
    gpures_pixel_format_plane_extent(format->id, i, d->width, d->height, NULL, &rows);
    if (p->stride < row_bytes) {
      char field[32];
      snprintf(field, sizeof field, "planes[%u].stride", i);
      return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                          "%s %u is below the %llu bytes of a row of plane %u", field, p->stride,
                          (unsigned long long)row_bytes, i);
    }
  }
  /* stride and rows are below 2^32 and row_bytes below 2^37: no overflow */
  out->start = p->offset;
  out->end = (uint64_t)p->offset + (uint64_t)p->stride * (rows - 1u) + row_bytes;
  return GPURES_OK;
}

static int check_fits(gpures__op op, const T *d, uint32_t i, span s, int64_t object_size) {
  if (object_size < 0 || s.end <= (uint64_t)object_size) return GPURES_OK;
  char field[32];
  snprintf(field, sizeof field, "planes[%u].offset", i);
  return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                      "planes[%u] ends at byte %llu but object %u has %lld bytes", i,
                      (unsigned long long)s.end, d->planes[i].object_index,
                      (long long)object_size);
}

/* Two planes sharing bytes would each be written over by the other's producer. */
static int check_overlap(gpures__op op, const T *d, uint32_t j, const span *spans) {
  for (uint32_t i = 0; i < j; i++) {
    if (d->planes[i].object_index != d->planes[j].object_index) continue;
    if (spans[i].start >= spans[j].end || spans[j].start >= spans[i].end) continue;
    char field[32];
    snprintf(field, sizeof field, "planes[%u].offset", j);
    return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                        "planes[%u] (bytes %llu to %llu) overlaps planes[%u] (bytes %llu to %llu) "
                        "in object %u",
                        j, (unsigned long long)spans[j].start, (unsigned long long)spans[j].end,
                        i, (unsigned long long)spans[i].start, (unsigned long long)spans[i].end,
                        d->planes[j].object_index);
  }
  return GPURES_OK;
}

static int check_object_index(gpures__op op, const T *d, uint32_t i) {
  if (d->planes[i].object_index < d->num_fds) return GPURES_OK;
  char field[32];
  snprintf(field, sizeof field, "planes[%u].objectIndex", i);
  return gpures__fail(op, GPURES_E_INVALID_VALUE, field, "%s is %u but there are %u fds", field,
                      d->planes[i].object_index, d->num_fds);
}

static int validate_dma_buf_handle(gpures__op op, const void *desc) {
  const T *d = desc;
  /* Tiled layouts are the driver's to check: their strides and planes mean other things. */
  bool linear = d->modifier == DRM_FORMAT_MOD_LINEAR || d->modifier == DRM_FORMAT_MOD_INVALID;
  const gpures_pixel_format_info *format = linear ? gpures_pixel_format_from_fourcc(d->fourcc) : NULL;
  if (format && format->num_planes != d->num_planes)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "planes", "planes has %u entries but %s has %u",
                        d->num_planes, gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, format->id),
                        format->num_planes);
  /* Each object's size is read once, however many planes it holds (NV12 has two in one):
     a system call costs more than everything else create does. */
  int64_t sizes[4];
  bool sized[4] = {false, false, false, false};
  span spans[4];
  for (uint32_t i = 0; i < d->num_planes; i++) {
    int status = check_object_index(op, d, i);
    if (status == GPURES_OK) status = plane_span(op, d, i, linear, format, &spans[i]);
    if (status != GPURES_OK) return status;
    uint32_t object = d->planes[i].object_index;
    if (!sized[object]) {
      sizes[object] = gpures__fd_size(d->fds[object]);
      sized[object] = true;
    }
    status = check_fits(op, d, i, spans[i], sizes[object]);
    if (status == GPURES_OK && linear) status = check_overlap(op, d, i, spans);
    if (status != GPURES_OK) return status;
  }
  return GPURES_OK;
}
GPURES__VARIANT(dma_buf_handle, dma_buf_handle_fields, validate_dma_buf_handle);
#undef T
