/*
** meta.c: the rows and checks of gpures_frame_meta, the metadata any handle
** may carry. They are field rows like a descriptor's, so the same code
** validates them, JSON shows them and TypeScript compiles their codec.
*/
#include <stdio.h>

#include "../internal.h"

#define T gpures_frame_meta
#define GROUP(m, path, type, bit, doc) GPURES__GROUP_ROW(T, m, path, type, bit, doc)
#define COLOR_ENUM(m, path_, set_, doc_)                                                       \
  { .path = path_, .doc = doc_, .type = GPURES_FIELD_ENUM, .offset = offsetof(T, m), .size = 4, \
    .count = 1, .stride = 4, .enum_set = set_, .present_bit = GPURES_META_HAS_COLOR }
static const gpures_field_info meta_fields[] = {
  GROUP(sequence, "sequence", GPURES_FIELD_I64, GPURES_META_HAS_SEQUENCE, "the frame's number in its stream"),
  GROUP(pts, "timing.pts", GPURES_FIELD_I64, GPURES_META_HAS_TIMING, "presentation time, in timebase units"),
  GROUP(duration, "timing.duration", GPURES_FIELD_I64, GPURES_META_HAS_TIMING, "duration, in timebase units"),
  GROUP(timebase_num, "timing.timebaseNum", GPURES_FIELD_U32, GPURES_META_HAS_TIMING, "seconds per unit: numerator"),
  GROUP(timebase_den, "timing.timebaseDen", GPURES_FIELD_U32, GPURES_META_HAS_TIMING, "seconds per unit: denominator"),
  GROUP(visible.x, "visible.x", GPURES_FIELD_U32, GPURES_META_HAS_VISIBLE, "left edge of the visible rectangle"),
  GROUP(visible.y, "visible.y", GPURES_FIELD_U32, GPURES_META_HAS_VISIBLE, "top edge"),
  GROUP(visible.width, "visible.width", GPURES_FIELD_U32, GPURES_META_HAS_VISIBLE, "width in pixels"),
  GROUP(visible.height, "visible.height", GPURES_FIELD_U32, GPURES_META_HAS_VISIBLE, "height in pixels"),
  COLOR_ENUM(primaries, "color.primaries", GPURES_ENUM_COLOR_PRIMARIES, "H.273 colour primaries"),
  COLOR_ENUM(transfer, "color.transfer", GPURES_ENUM_TRANSFER, "H.273 transfer characteristics"),
  COLOR_ENUM(matrix, "color.matrix", GPURES_ENUM_MATRIX, "H.273 matrix coefficients"),
  GROUP(full_range, "color.fullRange", GPURES_FIELD_BOOL, GPURES_META_HAS_COLOR, "full range (else limited)"),
  GROUP(mastering.red_x, "mastering.redX", GPURES_FIELD_U32, GPURES_META_HAS_MASTERING, "red x, 0.00002 units"),
  GROUP(mastering.red_y, "mastering.redY", GPURES_FIELD_U32, GPURES_META_HAS_MASTERING, "red y"),
  GROUP(mastering.green_x, "mastering.greenX", GPURES_FIELD_U32, GPURES_META_HAS_MASTERING, "green x"),
  GROUP(mastering.green_y, "mastering.greenY", GPURES_FIELD_U32, GPURES_META_HAS_MASTERING, "green y"),
  GROUP(mastering.blue_x, "mastering.blueX", GPURES_FIELD_U32, GPURES_META_HAS_MASTERING, "blue x"),
  GROUP(mastering.blue_y, "mastering.blueY", GPURES_FIELD_U32, GPURES_META_HAS_MASTERING, "blue y"),
  GROUP(mastering.white_x, "mastering.whiteX", GPURES_FIELD_U32, GPURES_META_HAS_MASTERING, "white point x"),
  GROUP(mastering.white_y, "mastering.whiteY", GPURES_FIELD_U32, GPURES_META_HAS_MASTERING, "white point y"),
  GROUP(mastering.max_luminance, "mastering.maxLuminance", GPURES_FIELD_U32, GPURES_META_HAS_MASTERING, "0.0001 cd/m2"),
  GROUP(mastering.min_luminance, "mastering.minLuminance", GPURES_FIELD_U32, GPURES_META_HAS_MASTERING, "0.0001 cd/m2"),
  GROUP(content_light.max_cll, "contentLight.maxCll", GPURES_FIELD_U32, GPURES_META_HAS_CONTENT_LIGHT, "maximum content light level, cd/m2"),
  GROUP(content_light.max_fall, "contentLight.maxFall", GPURES_FIELD_U32, GPURES_META_HAS_CONTENT_LIGHT, "maximum frame-average light level, cd/m2"),
  GROUP(user_data, "userData", GPURES_FIELD_UUID, GPURES_META_HAS_USER_DATA, "16 bytes of the application's own"),
};

static const gpures__variant meta_variant = {
    meta_fields, (uint32_t)GPURES__LEN(meta_fields), (uint32_t)sizeof(T), NULL, false};

const gpures_field_info *gpures_meta_fields(uint32_t *out_count) {
  if (out_count) *out_count = meta_variant.num_fields;
  return meta_fields;
}

static int out_of_range(gpures__op op, const char *field, const char *fmt, unsigned long long v,
                        unsigned long long bound) {
  char why[96];
  snprintf(why, sizeof why, fmt, bound);
  return gpures__fail(op, GPURES_E_INVALID_VALUE, field, "%s is %llu; %s", field, v, why);
}

static int check_timing(gpures__op op, const T *m) {
  if (m->sequence < 0)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "sequence", "sequence is %lld; it must not be negative",
                        (long long)m->sequence);
  if (!(m->flags & GPURES_META_HAS_TIMING)) return GPURES_OK;
  if (m->duration < 0)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "timing.duration",
                        "timing.duration is %lld; it must not be negative", (long long)m->duration);
  if (!m->timebase_num || !m->timebase_den)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, m->timebase_num ? "timing.timebaseDen" : "timing.timebaseNum",
                        "the timebase is %u/%u; neither part may be 0", m->timebase_num, m->timebase_den);
  return GPURES_OK;
}

static int check_visible(gpures__op op, const T *m, uint32_t width, uint32_t height) {
  if (!(m->flags & GPURES_META_HAS_VISIBLE)) return GPURES_OK;
  const gpures_rect *r = &m->visible;
  if (!r->width || !r->height)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, r->width ? "visible.height" : "visible.width",
                        "the visible rectangle is %ux%u; it must not be empty", r->width, r->height);
  if (width && (uint64_t)r->x + r->width > width)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "visible.width",
                        "the visible rectangle ends at x %llu, past the frame's width %u",
                        (unsigned long long)r->x + r->width, width);
  if (height && (uint64_t)r->y + r->height > height)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "visible.height",
                        "the visible rectangle ends at y %llu, past the frame's height %u",
                        (unsigned long long)r->y + r->height, height);
  return GPURES_OK;
}

static int check_hdr(gpures__op op, const T *m) {
  if (m->flags & GPURES_META_HAS_MASTERING) {
    const uint32_t *xy = &m->mastering.red_x;
    static const char *const names[] = {"mastering.redX", "mastering.redY", "mastering.greenX",
                                        "mastering.greenY", "mastering.blueX", "mastering.blueY",
                                        "mastering.whiteX", "mastering.whiteY"};
    for (uint32_t i = 0; i < 8; i++)
      if (xy[i] > 50000)
        return out_of_range(op, names[i], "chromaticity is at most %llu (1.0 in 0.00002 units)", xy[i], 50000);
    if (!m->mastering.max_luminance)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "mastering.maxLuminance", "mastering.maxLuminance is 0");
    if (m->mastering.min_luminance >= m->mastering.max_luminance)
      return out_of_range(op, "mastering.minLuminance", "it must be below maxLuminance, %llu",
                          m->mastering.min_luminance, m->mastering.max_luminance);
  }
  if (m->flags & GPURES_META_HAS_CONTENT_LIGHT) {
    if (m->content_light.max_cll > 65535)
      return out_of_range(op, "contentLight.maxCll", "at most %llu cd/m2", m->content_light.max_cll, 65535);
    if (m->content_light.max_fall > m->content_light.max_cll)
      return out_of_range(op, "contentLight.maxFall", "at most maxCll, %llu", m->content_light.max_fall,
                          m->content_light.max_cll);
  }
  return GPURES_OK;
}

int gpures__meta_validate(gpures__op op, T *meta, uint32_t width, uint32_t height) {
  int status = gpures__fields_validate(op, &meta_variant, meta);
  if (status == GPURES_OK) status = check_timing(op, meta);
  if (status == GPURES_OK) status = check_visible(op, meta, width, height);
  if (status == GPURES_OK) status = check_hdr(op, meta);
  return status;
}
#undef T
