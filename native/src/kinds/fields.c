/*
** fields.c: reading, writing and checking descriptor fields through the
** field rows, so validation and description are written once for all kinds.
*/
#include <stdio.h>
#include <string.h>

#include "../internal.h"

static const unsigned char *element(const gpures_field_info *f, const void *desc, uint32_t i) {
  return (const unsigned char *)desc + f->offset + (size_t)i * f->stride;
}

uint64_t gpures__field_get(const gpures_field_info *f, const void *desc, uint32_t i) {
  const unsigned char *p = element(f, desc, i);
  switch (f->size) {
    case 1: return *p;
    case 4: {
      uint32_t v;
      memcpy(&v, p, 4);
      if (f->type == GPURES_FIELD_I32 || f->type == GPURES_FIELD_FD)
        return (uint64_t)(int64_t)(int32_t)v;
      return v;
    }
    case 8: {
      uint64_t v;
      memcpy(&v, p, 8);
      return v;
    }
  }
  return 0; /* UUIDs are read whole, never as a number */
}

void gpures__field_set(const gpures_field_info *f, void *desc, uint32_t i, uint64_t v) {
  unsigned char *p = (unsigned char *)desc + f->offset + (size_t)i * f->stride;
  if (f->size == 4) {
    uint32_t w = (uint32_t)v;
    memcpy(p, &w, 4);
  } else if (f->size == 8) {
    memcpy(p, &v, 8);
  }
}

uint32_t gpures__field_len(const gpures_field_info *f, const void *desc) {
  if (f->present_bit) {
    uint32_t flags;
    memcpy(&flags, (const unsigned char *)desc + 4, 4);
    if (!(flags & f->present_bit)) return 0;
  }
  if (!f->count_offset) return 1;
  uint32_t n;
  memcpy(&n, (const unsigned char *)desc + f->count_offset, 4);
  return n < f->count ? n : f->count;
}

void gpures__field_path(const gpures_field_info *f, uint32_t i, char *out, size_t cap) {
  const char *brackets = strstr(f->path, "[]");
  if (!brackets) {
    snprintf(out, cap, "%s", f->path);
    return;
  }
  snprintf(out, cap, "%.*s[%u]%s", (int)(brackets - f->path), f->path, i, brackets + 2);
}

const gpures_field_info *gpures__field_find(const gpures__variant *v, const char *path) {
  for (uint32_t r = 0; r < v->num_fields; r++)
    if (strcmp(v->fields[r].path, path) == 0) return &v->fields[r];
  return NULL;
}

static int check_element(gpures__op op, const gpures_field_info *f, const void *desc,
                         uint32_t i) {
  char path[96];
  uint64_t v = gpures__field_get(f, desc, i);
  switch (f->type) {
    case GPURES_FIELD_FD:
      if ((int64_t)v >= 0 && gpures__fd_valid((int)v)) return GPURES_OK;
      gpures__field_path(f, i, path, sizeof path);
      return gpures__fail(op, GPURES_E_INVALID_VALUE, path, "%s is %lld, not an open file descriptor",
                          path, (long long)(int64_t)v);
    case GPURES_FIELD_ENUM:
      if (gpures_enum_name(f->enum_set, (uint32_t)v)) return GPURES_OK;
      gpures__field_path(f, i, path, sizeof path);
      return gpures__fail(op, GPURES_E_INVALID_VALUE, path, "%s 0x%llx is not a %s", path,
                          (unsigned long long)v, gpures_enum_set_name(f->enum_set));
    case GPURES_FIELD_BOOL:
      if (v <= 1) return GPURES_OK;
      gpures__field_path(f, i, path, sizeof path);
      return gpures__fail(op, GPURES_E_INVALID_VALUE, path, "%s is %llu, not 0 or 1", path,
                          (unsigned long long)v);
    case GPURES_FIELD_UUID:
      return GPURES_OK;
    case GPURES_FIELD_I64:
      if ((int64_t)v <= GPURES__I64_SAFE && (int64_t)v >= -GPURES__I64_SAFE) return GPURES_OK;
      gpures__field_path(f, i, path, sizeof path);
      return gpures__fail(op, GPURES_E_INVALID_VALUE, path,
                          "%s is %lld, beyond +-(2^53 - 1), what a JavaScript number holds exactly",
                          path, (long long)(int64_t)v);
    default:
      if (v != 0 || !f->zero_status) return GPURES_OK;
      gpures__field_path(f, i, path, sizeof path);
      return gpures__fail(op, (int)f->zero_status, path, "%s is %s", path,
                          f->type == GPURES_FIELD_PTR ? "null" : "0");
  }
}

/* Zeroes elements past an array's count (fds become -1) so copies show nothing stale. */
static void clear_unused(const gpures_field_info *f, void *desc, uint32_t used) {
  for (uint32_t i = used; i < f->count; i++) {
    unsigned char *p = (unsigned char *)desc + f->offset + (size_t)i * f->stride;
    memset(p, 0, f->size);
    if (f->type == GPURES_FIELD_FD) gpures__field_set(f, desc, i, (uint64_t)(int64_t)-1);
  }
}

int gpures__fields_validate(gpures__op op, const gpures__variant *v, void *desc) {
  uint32_t known = 0, flags;
  for (uint32_t r = 0; r < v->num_fields; r++) known |= v->fields[r].present_bit;
  memcpy(&flags, (unsigned char *)desc + 4, 4);
  if (flags & ~known)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags", "flags has unknown bits 0x%x",
                        flags & ~known);
  for (uint32_t r = 0; r < v->num_fields; r++) {
    const gpures_field_info *f = &v->fields[r];
    if (f->type == GPURES_FIELD_COUNT) {
      uint32_t n = (uint32_t)gpures__field_get(f, desc, 0);
      if (n > f->count)
        return gpures__fail(op, GPURES_E_INVALID_VALUE, f->path,
                            "%s has %u entries; at most %u are allowed", f->path, n, f->count);
      if (n == 0 && f->zero_status)
        return gpures__fail(op, (int)f->zero_status, f->path, "%s is empty", f->path);
      continue;
    }
    uint32_t n = gpures__field_len(f, desc);
    if (f->present_bit && n == 0) {
      memset((unsigned char *)desc + f->offset, 0, f->size); /* an absent group reads as zero */
      continue;
    }
    for (uint32_t i = 0; i < n; i++) {
      int status = check_element(op, f, desc, i);
      if (status != GPURES_OK) return status;
    }
    if (f->count_offset) clear_unused(f, desc, n);
  }
  return GPURES_OK;
}

void gpures__desc_extent(const gpures__variant *v, const void *desc, uint32_t *width,
                         uint32_t *height) {
  const gpures_field_info *w = gpures__field_find(v, "width"), *h = gpures__field_find(v, "height");
  *width = w ? (uint32_t)gpures__field_get(w, desc, 0) : 0;
  *height = h ? (uint32_t)gpures__field_get(h, desc, 0) : 0;
}

int gpures__check_extent(gpures__op op, uint32_t width, uint32_t height) {
  if ((width == 0) == (height == 0)) return GPURES_OK;
  return gpures__fail(op, GPURES_E_ZERO_SIZE, width ? "height" : "width",
                      "%s is 0 but %s is %u; give both or neither", width ? "height" : "width",
                      width ? "width" : "height", width ? width : height);
}

int gpures__check_slot_release(gpures__op op, uint32_t flags, const gpures_slot_release_desc *s) {
  if (!(flags & GPURES_HAS_SLOT_RELEASE)) return GPURES_OK;
  if (!s->gate) return gpures__fail(op, GPURES_E_NULL_POINTER, "slotRelease.gate", "slotRelease.gate is null");
  if ((uintptr_t)s->gate % 8)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "slotRelease.gate",
                        "slotRelease.gate %p is not 8-byte aligned", (void *)s->gate);
  return GPURES_OK;
}

/* A given row pitch holds a row, and the frame's planes at that pitch fit after the offset. */
static int check_opaque_rows(gpures__op op, const gpures_vk_opaque_fd_desc *d) {
  if (!d->row_pitch) return GPURES_OK;
  const char *name = gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, d->format);
  uint64_t row_bytes = 0, frame = 0;
  if (gpures_pixel_format_row_bytes(d->format, 0, d->width, &row_bytes) != GPURES_OK ||
      d->row_pitch < row_bytes)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "rowPitch",
                        "rowPitch %u is below the %llu bytes of a row of %u %s pixels",
                        d->row_pitch, (unsigned long long)row_bytes, d->width, name);
  if (gpures_pixel_format_frame_size(d->format, d->width, d->height, d->row_pitch, &frame) !=
          GPURES_OK ||
      frame > d->size - d->offset)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "rowPitch",
                        "a %ux%u %s frame with rowPitch %u takes %llu bytes; %llu follow offset "
                        "%llu",
                        d->width, d->height, name, d->row_pitch, (unsigned long long)frame,
                        (unsigned long long)(d->size - d->offset), (unsigned long long)d->offset);
  return GPURES_OK;
}

int gpures__check_opaque_frame(gpures__op op, const gpures_vk_opaque_fd_desc *d) {
  if (d->offset >= d->size)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "offset", "offset %llu is not below size %llu",
                        (unsigned long long)d->offset, (unsigned long long)d->size);
  int status = check_opaque_rows(op, d);
  return status != GPURES_OK ? status : gpures__check_slot_release(op, d->flags, &d->slot_release);
}
