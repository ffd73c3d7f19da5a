/* cpu.c: CpuBytes, CpuPlanes and CpuSharedSlot. */
#include <stdio.h>

#include "rows.h"

/* The optional extent of both CPU kinds: given, it is checked against the bytes (one needs the other). */
#define EXTENT_ROWS(T)                                                                       \
  GPURES__ROW(T, width, "width", GPURES_FIELD_U32, 0, GPURES_FIELD_OPTIONAL,                  \
              "width in pixels, with height"),                                               \
  GPURES__ROW(T, height, "height", GPURES_FIELD_U32, 0, GPURES_FIELD_OPTIONAL,                \
              "height in pixels, with width")

#define T gpures_cpu_bytes_desc
static const gpures_field_info cpu_bytes_fields[] = {
  GPURES__ROW(T, ptr, "ptr", GPURES_FIELD_PTR, GPURES_E_NULL_POINTER, GPURES_FIELD_DEVICE(GPURES_DEVICE_CPU), "address of the first byte"),
  GPURES__SIZE_ROW(T),
  GPURES__ROW(T, row_pitch, "rowPitch", GPURES_FIELD_U32, 0, 0, "bytes per row of plane 0"),
  GPURES__PIXEL_FORMAT_ROW(T),
  EXTENT_ROWS(T),
};

static int validate_cpu_bytes(gpures__op op, const void *desc) {
  const T *d = desc;
  int status = gpures__check_extent(op, d->width, d->height);
  if (status != GPURES_OK || d->width == 0) return status;
  const char *name = gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, d->format);
  uint64_t row_bytes = 0, frame = 0; /* the format row checked the format: both calls succeed */
  gpures_pixel_format_row_bytes(d->format, 0, d->width, &row_bytes);
  if (d->row_pitch < row_bytes)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "rowPitch",
                        "rowPitch %u is below the %llu bytes of a row of %u %s pixels",
                        d->row_pitch, (unsigned long long)row_bytes, d->width, name);
  gpures_pixel_format_frame_size(d->format, d->width, d->height, d->row_pitch, &frame);
  if (frame > d->size)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "size",
                        "size %llu is below the %llu bytes of a %ux%u %s frame with rowPitch %u",
                        (unsigned long long)d->size, (unsigned long long)frame, d->width,
                        d->height, name, d->row_pitch);
  return GPURES_OK;
}
GPURES__VARIANT(cpu_bytes, cpu_bytes_fields, validate_cpu_bytes);
#undef T

#define T gpures_cpu_planes_desc
static const gpures_field_info cpu_planes_fields[] = {
  GPURES__PIXEL_FORMAT_ROW(T),
  GPURES__COUNT_ROW(T, num_planes, "planes", 4, GPURES_E_INVALID_VALUE, "number of planes"),
  GPURES__STRUCT_ARRAY_ROW_F(T, planes, data, num_planes, "planes[].data", GPURES_FIELD_PTR, GPURES_E_NULL_POINTER, GPURES_FIELD_DEVICE(GPURES_DEVICE_CPU), "address of the plane"),
  GPURES__STRUCT_ARRAY_ROW(T, planes, size, num_planes, "planes[].size", GPURES_FIELD_U64, GPURES_E_ZERO_SIZE, "bytes"),
  GPURES__STRUCT_ARRAY_ROW(T, planes, row_pitch, num_planes, "planes[].rowPitch", GPURES_FIELD_U32, 0, "bytes per row"),
  EXTENT_ROWS(T),
};

/* With an extent, plane i must hold its rows: a short chroma plane would be read past its end. */
static int check_cpu_plane(gpures__op op, const T *d, uint32_t i) {
  const gpures_cpu_plane *p = &d->planes[i];
  const char *name = gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, d->format);
  char field[32];
  uint64_t row_bytes = 0;
  uint32_t rows = 0;
  gpures_pixel_format_row_bytes(d->format, i, d->width, &row_bytes);
  gpures_pixel_format_plane_extent(d->format, i, d->width, d->height, NULL, &rows);
  if (p->row_pitch < row_bytes) {
    snprintf(field, sizeof field, "planes[%u].rowPitch", i);
    return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                        "%s %u is below the %llu bytes of a row of plane %u of a %u pixel wide "
                        "%s frame",
                        field, p->row_pitch, (unsigned long long)row_bytes, i, d->width, name);
  }
  uint64_t needed = (uint64_t)p->row_pitch * rows; /* both below 2^32: no overflow */
  if (p->size >= needed) return GPURES_OK;
  snprintf(field, sizeof field, "planes[%u].size", i);
  return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                      "%s %llu is below the %llu bytes of %u rows of %u bytes (plane %u of a "
                      "%ux%u %s frame)",
                      field, (unsigned long long)p->size, (unsigned long long)needed, rows,
                      p->row_pitch, i, d->width, d->height, name);
}

static int validate_cpu_planes(gpures__op op, const void *desc) {
  const T *d = desc;
  const gpures_pixel_format_info *format = gpures_pixel_format_info_of(d->format);
  if (format->num_planes != d->num_planes)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "planes", "planes has %u entries but %s has %u",
                        d->num_planes, gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, d->format),
                        format->num_planes);
  int status = gpures__check_extent(op, d->width, d->height);
  for (uint32_t i = 0; status == GPURES_OK && d->width && i < d->num_planes; i++)
    status = check_cpu_plane(op, d, i);
  return status;
}
GPURES__VARIANT(cpu_planes, cpu_planes_fields, validate_cpu_planes);
#undef T

#define T gpures_cpu_shared_slot_desc
static const gpures_field_info cpu_shared_slot_fields[] = {
  GPURES__SIZE_ROW(T),
  GPURES__ROW_PITCH_ROW(T),
  GPURES__PIXEL_FORMAT_ROW(T),
};
GPURES__VARIANT(cpu_shared_slot, cpu_shared_slot_fields, NULL);
#undef T
