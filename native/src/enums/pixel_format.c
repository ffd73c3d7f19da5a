/*
** pixel_format.c: the one table of pixel format layouts, and the size
** queries built on it. Ids and names are GPURES_PIXEL_FORMAT_LIST.
*/
#include <string.h>

#include "../internal.h"

#define FOURCC(a, b, c, d) \
  ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

/* A plane: subsampling, channels per sample, samples per block, bytes per sample. */
#define PLANE(hsub, vsub, channels, block, bytes) {hsub, vsub, channels, block, bytes}
#define LUMA(bytes) PLANE(1, 1, 1, 1, bytes)
#define CHROMA(hsub, vsub, bytes) PLANE(hsub, vsub, 1, 1, bytes)
#define CHROMA_PAIR(hsub, vsub, bytes) PLANE(hsub, vsub, 2, 1, bytes)
#define PACKED(channels, bytes) PLANE(1, 1, channels, 1, bytes)

#define HDR GPURES_PF_FLAG_HDR
#define YUV GPURES_PF_FLAG_YUV
#define ALPHA GPURES_PF_FLAG_ALPHA
#define FLOAT GPURES_PF_FLAG_FLOAT

#define ROW(UPPER, ...) [GPURES_PF_##UPPER - 1] = {.id = GPURES_PF_##UPPER, __VA_ARGS__}

static const gpures_pixel_format_info formats[GPURES_PF_MAX] = {
  ROW(NV12, .num_planes = 2, .bits_per_sample = 8, .flags = YUV, .drm_fourcc = FOURCC('N', 'V', '1', '2'),
      .planes = {LUMA(1), CHROMA_PAIR(2, 2, 2)}),
  ROW(NV21, .num_planes = 2, .bits_per_sample = 8, .flags = YUV, .drm_fourcc = FOURCC('N', 'V', '2', '1'),
      .planes = {LUMA(1), CHROMA_PAIR(2, 2, 2)}),
  ROW(P010LE, .num_planes = 2, .bits_per_sample = 10, .flags = YUV | HDR, .drm_fourcc = FOURCC('P', '0', '1', '0'),
      .planes = {LUMA(2), CHROMA_PAIR(2, 2, 4)}),
  ROW(P016LE, .num_planes = 2, .bits_per_sample = 16, .flags = YUV | HDR, .drm_fourcc = FOURCC('P', '0', '1', '6'),
      .planes = {LUMA(2), CHROMA_PAIR(2, 2, 4)}),
  ROW(NV16, .num_planes = 2, .bits_per_sample = 8, .flags = YUV, .drm_fourcc = FOURCC('N', 'V', '1', '6'),
      .planes = {LUMA(1), CHROMA_PAIR(2, 1, 2)}),
  ROW(P210LE, .num_planes = 2, .bits_per_sample = 10, .flags = YUV | HDR, .drm_fourcc = FOURCC('P', '2', '1', '0'),
      .planes = {LUMA(2), CHROMA_PAIR(2, 1, 4)}),
  ROW(P216LE, .num_planes = 2, .bits_per_sample = 16, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA_PAIR(2, 1, 4)}),
  ROW(P410LE, .num_planes = 2, .bits_per_sample = 10, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA_PAIR(1, 1, 4)}),
  ROW(P416LE, .num_planes = 2, .bits_per_sample = 16, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA_PAIR(1, 1, 4)}),
  ROW(NV24, .num_planes = 2, .bits_per_sample = 8, .flags = YUV, .drm_fourcc = FOURCC('N', 'V', '2', '4'),
      .planes = {LUMA(1), CHROMA_PAIR(1, 1, 2)}),
  ROW(NV12A, .num_planes = 3, .bits_per_sample = 8, .flags = YUV | ALPHA,
      .planes = {LUMA(1), CHROMA_PAIR(2, 2, 2), LUMA(1)}),
  ROW(YUV420P, .num_planes = 3, .bits_per_sample = 8, .flags = YUV, .drm_fourcc = FOURCC('Y', 'U', '1', '2'),
      .planes = {LUMA(1), CHROMA(2, 2, 1), CHROMA(2, 2, 1)}),
  ROW(YUV422P, .num_planes = 3, .bits_per_sample = 8, .flags = YUV, .drm_fourcc = FOURCC('Y', 'U', '1', '6'),
      .planes = {LUMA(1), CHROMA(2, 1, 1), CHROMA(2, 1, 1)}),
  ROW(YUV444P, .num_planes = 3, .bits_per_sample = 8, .flags = YUV, .drm_fourcc = FOURCC('Y', 'U', '2', '4'),
      .planes = {LUMA(1), CHROMA(1, 1, 1), CHROMA(1, 1, 1)}),
  ROW(YUV420P10LE, .num_planes = 3, .bits_per_sample = 10, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA(2, 2, 2), CHROMA(2, 2, 2)}),
  ROW(YUV420P12LE, .num_planes = 3, .bits_per_sample = 12, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA(2, 2, 2), CHROMA(2, 2, 2)}),
  ROW(YUV420P14LE, .num_planes = 3, .bits_per_sample = 14, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA(2, 2, 2), CHROMA(2, 2, 2)}),
  ROW(YUV420P16LE, .num_planes = 3, .bits_per_sample = 16, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA(2, 2, 2), CHROMA(2, 2, 2)}),
  ROW(YUV422P10LE, .num_planes = 3, .bits_per_sample = 10, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA(2, 1, 2), CHROMA(2, 1, 2)}),
  ROW(YUV422P12LE, .num_planes = 3, .bits_per_sample = 12, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA(2, 1, 2), CHROMA(2, 1, 2)}),
  ROW(YUV422P14LE, .num_planes = 3, .bits_per_sample = 14, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA(2, 1, 2), CHROMA(2, 1, 2)}),
  ROW(YUV422P16LE, .num_planes = 3, .bits_per_sample = 16, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA(2, 1, 2), CHROMA(2, 1, 2)}),
  ROW(YUV444P10LE, .num_planes = 3, .bits_per_sample = 10, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA(1, 1, 2), CHROMA(1, 1, 2)}),
  ROW(YUV444P12LE, .num_planes = 3, .bits_per_sample = 12, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA(1, 1, 2), CHROMA(1, 1, 2)}),
  ROW(YUV444P14LE, .num_planes = 3, .bits_per_sample = 14, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA(1, 1, 2), CHROMA(1, 1, 2)}),
  ROW(YUV444P16LE, .num_planes = 3, .bits_per_sample = 16, .flags = YUV | HDR,
      .planes = {LUMA(2), CHROMA(1, 1, 2), CHROMA(1, 1, 2)}),
  ROW(YUVA444P10LE, .num_planes = 4, .bits_per_sample = 10, .flags = YUV | ALPHA | HDR,
      .planes = {LUMA(2), CHROMA(1, 1, 2), CHROMA(1, 1, 2), LUMA(2)}),
  ROW(YUVA444P12LE, .num_planes = 4, .bits_per_sample = 12, .flags = YUV | ALPHA | HDR,
      .planes = {LUMA(2), CHROMA(1, 1, 2), CHROMA(1, 1, 2), LUMA(2)}),
  /* Packed 4:2:2: two pixels share one chroma pair, so a block is two samples wide. */
  ROW(UYVY422, .num_planes = 1, .bits_per_sample = 8, .flags = YUV, .drm_fourcc = FOURCC('U', 'Y', 'V', 'Y'),
      .planes = {PLANE(1, 1, 2, 2, 2)}),
  ROW(YUYV422, .num_planes = 1, .bits_per_sample = 8, .flags = YUV, .drm_fourcc = FOURCC('Y', 'U', 'Y', 'V'),
      .planes = {PLANE(1, 1, 2, 2, 2)}),
  ROW(AYUV64LE, .num_planes = 1, .bits_per_sample = 16, .flags = YUV | ALPHA | HDR,
      .planes = {PACKED(4, 8)}),
  ROW(V216, .num_planes = 1, .bits_per_sample = 16, .flags = YUV | HDR,
      .planes = {PLANE(1, 1, 2, 2, 4)}),
  ROW(Y210LE, .num_planes = 1, .bits_per_sample = 10, .flags = YUV | HDR, .drm_fourcc = FOURCC('Y', '2', '1', '0'),
      .planes = {PLANE(1, 1, 2, 2, 4)}),
  ROW(RGBA_U8, .num_planes = 1, .bits_per_sample = 8, .flags = ALPHA, .drm_fourcc = FOURCC('A', 'B', '2', '4'),
      .planes = {PACKED(4, 4)}),
  ROW(BGRA_U8, .num_planes = 1, .bits_per_sample = 8, .flags = ALPHA, .drm_fourcc = FOURCC('A', 'R', '2', '4'),
      .planes = {PACKED(4, 4)}),
  ROW(RGBX_U8, .num_planes = 1, .bits_per_sample = 8, .drm_fourcc = FOURCC('X', 'B', '2', '4'),
      .planes = {PACKED(4, 4)}),
  ROW(BGRX_U8, .num_planes = 1, .bits_per_sample = 8, .drm_fourcc = FOURCC('X', 'R', '2', '4'),
      .planes = {PACKED(4, 4)}),
  ROW(RGBA_U16, .num_planes = 1, .bits_per_sample = 16, .flags = ALPHA | HDR, .drm_fourcc = FOURCC('A', 'B', '4', '8'),
      .planes = {PACKED(4, 8)}),
  ROW(BGRA_U16, .num_planes = 1, .bits_per_sample = 16, .flags = ALPHA | HDR, .drm_fourcc = FOURCC('A', 'R', '4', '8'),
      .planes = {PACKED(4, 8)}),
  ROW(RGBA_F16, .num_planes = 1, .bits_per_sample = 16, .flags = ALPHA | HDR | FLOAT, .drm_fourcc = FOURCC('A', 'B', '4', 'H'),
      .planes = {PACKED(4, 8)}),
  ROW(BGRA_F16, .num_planes = 1, .bits_per_sample = 16, .flags = ALPHA | HDR | FLOAT, .drm_fourcc = FOURCC('A', 'R', '4', 'H'),
      .planes = {PACKED(4, 8)}),
  ROW(RGBA_F32, .num_planes = 1, .bits_per_sample = 32, .flags = ALPHA | HDR | FLOAT,
      .planes = {PACKED(4, 16)}),
  ROW(BGRA_F32, .num_planes = 1, .bits_per_sample = 32, .flags = ALPHA | HDR | FLOAT,
      .planes = {PACKED(4, 16)}),
  ROW(RGB10A2, .num_planes = 1, .bits_per_sample = 10, .flags = ALPHA | HDR, .drm_fourcc = FOURCC('A', 'B', '3', '0'),
      .planes = {PACKED(4, 4)}),
  ROW(RGB_U16, .num_planes = 1, .bits_per_sample = 16, .flags = HDR, .planes = {PACKED(3, 6)}),
  ROW(R16U, .num_planes = 1, .bits_per_sample = 16, .flags = HDR, .drm_fourcc = FOURCC('R', '1', '6', ' '),
      .planes = {PACKED(1, 2)}),
  ROW(R32F, .num_planes = 1, .bits_per_sample = 32, .flags = HDR | FLOAT, .planes = {PACKED(1, 4)}),
  /* Integer (unnormalized) RGBA: same bytes as RgbaU16, read as integers. */
  ROW(RGBA16U, .num_planes = 1, .bits_per_sample = 16, .flags = ALPHA | HDR, .planes = {PACKED(4, 8)}),
};

const gpures_pixel_format_info *gpures_pixel_format_table(uint32_t *out_count) {
  if (out_count) *out_count = GPURES_PF_MAX;
  return formats;
}

const gpures_pixel_format_info *gpures_pixel_format_info_of(uint32_t format) {
  return format >= 1 && format <= GPURES_PF_MAX ? &formats[format - 1] : NULL;
}

const gpures_pixel_format_info *gpures_pixel_format_from_fourcc(uint32_t fourcc) {
  if (!fourcc) return NULL;
  for (uint32_t i = 0; i < GPURES_PF_MAX; i++)
    if (formats[i].drm_fourcc == fourcc) return &formats[i];
  return NULL;
}

/* Sizes saturate at UINT64_MAX, which no buffer has, so overflow fails the size check. */
static uint64_t saturating_mul(uint64_t a, uint64_t b) {
  return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}
static uint64_t saturating_add(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

static uint32_t ceil_div(uint32_t a, uint32_t b) { return a / b + (a % b != 0); }

/* Row `plane` of format's layout, or NULL once it has failed the call with
** GPURES_E_INVALID_VALUE (format is not a PixelFormat, or has no such plane). */
static const gpures_plane_info *plane_of(const char *verb, uint32_t format, uint32_t plane) {
  gpures__op op = {verb, 0};
  const gpures_pixel_format_info *info = gpures_pixel_format_info_of(format);
  if (!info) {
    gpures__fail(op, GPURES_E_INVALID_VALUE, "format", "format %u is not a PixelFormat", format);
    return NULL;
  }
  if (plane >= info->num_planes) {
    gpures__fail(op, GPURES_E_INVALID_VALUE, "plane", "plane %u is out of range; %s has %u", plane,
                 gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, format), info->num_planes);
    return NULL;
  }
  return &info->planes[plane];
}

int gpures_pixel_format_plane_extent(uint32_t format, uint32_t plane, uint32_t width,
                                     uint32_t height, uint32_t *out_width, uint32_t *out_height) {
  const gpures_plane_info *p = plane_of("measure plane", format, plane);
  if (!p) return GPURES_E_INVALID_VALUE;
  if (out_width) *out_width = ceil_div(width, p->hsub);
  if (out_height) *out_height = ceil_div(height, p->vsub);
  return GPURES_OK;
}

int gpures_pixel_format_row_bytes(uint32_t format, uint32_t plane, uint32_t width,
                                  uint64_t *out_bytes) {
  const gpures_plane_info *p = plane_of("measure row", format, plane);
  if (!p) return GPURES_E_INVALID_VALUE;
  uint64_t blocks = ceil_div(ceil_div(width, p->hsub), p->block_width);
  if (out_bytes) *out_bytes = blocks * p->block_width * p->bytes_per_sample;
  return GPURES_OK;
}

int gpures_pixel_format_plane_pitch(uint32_t format, uint32_t plane, uint32_t row_pitch,
                                    uint64_t *out_pitch) {
  const gpures_plane_info *p = plane_of("measure pitch", format, plane);
  if (!p) return GPURES_E_INVALID_VALUE;
  /* Scale plane 0's pitch by how many bytes a row of this plane holds per pixel of plane 0. */
  const gpures_plane_info *p0 = &formats[format - 1].planes[0];
  uint64_t num = (uint64_t)row_pitch * p->bytes_per_sample * p0->hsub;
  uint64_t den = (uint64_t)p0->bytes_per_sample * p->hsub;
  if (out_pitch) *out_pitch = num / den + (num % den != 0);
  return GPURES_OK;
}

int gpures_pixel_format_frame_size(uint32_t format, uint32_t width, uint32_t height,
                                   uint32_t row_pitch, uint64_t *out_bytes) {
  if (!plane_of("measure frame", format, 0)) return GPURES_E_INVALID_VALUE;
  const gpures_pixel_format_info *info = &formats[format - 1];
  uint64_t row0 = 0; /* always set below; mingw-w64 gcc cannot see it (-Wmaybe-uninitialized) */
  gpures_pixel_format_row_bytes(format, 0, width, &row0);
  if (row_pitch < row0) {
    gpures__op op = {"measure frame", 0};
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "rowPitch",
                        "rowPitch %u is below the %llu bytes of a row of %u %s pixels", row_pitch,
                        (unsigned long long)row0, width,
                        gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, format));
  }
  uint64_t total = 0;
  for (uint32_t i = 0; i < info->num_planes; i++) {
    uint64_t pitch = 0;
    uint32_t rows = 0;
    gpures_pixel_format_plane_pitch(format, i, row_pitch, &pitch);
    gpures_pixel_format_plane_extent(format, i, width, height, NULL, &rows);
    total = saturating_add(total, saturating_mul(pitch, rows));
  }
  if (out_bytes) *out_bytes = total;
  return GPURES_OK;
}

/* ------------------------------------------------------- standard layout */

static bool is_row_align(uint32_t a) { return a >= 1 && a <= 4096 && (a & (a - 1)) == 0; }

static uint64_t align_up(uint64_t value, uint32_t align) {
  return (value + align - 1) & ~(uint64_t)(align - 1);
}

/* Refuses what no layout exists for, before anything is measured. */
static int check_layout_args(gpures__op op, uint32_t format, uint32_t width, uint32_t height,
                             uint32_t row_align) {
  if (!gpures_pixel_format_info_of(format))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "format", "format %u is not a PixelFormat",
                        format);
  if (width == 0) return gpures__fail(op, GPURES_E_INVALID_VALUE, "width", "width is 0");
  if (height == 0) return gpures__fail(op, GPURES_E_INVALID_VALUE, "height", "height is 0");
  if (!is_row_align(row_align))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "rowAlign",
                        "rowAlign %u is not a power of two from 1 to 4096", row_align);
  return GPURES_OK;
}

/* Plane `i` placed at `offset`; a stride that does not fit 32 bits is the width's fault. */
static int lay_out_plane(gpures__op op, uint32_t format, uint32_t i, uint32_t width,
                         uint32_t height, uint32_t row_align, uint64_t offset,
                         gpures_plane_layout *out) {
  uint64_t row_bytes = 0;
  gpures_pixel_format_row_bytes(format, i, width, &row_bytes);
  uint64_t stride = align_up(row_bytes, row_align); /* row_bytes < 2^36: no overflow */
  if (stride > UINT32_MAX)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "width",
                        "a row of plane %u of a %u pixel wide %s frame has %llu bytes; a stride "
                        "holds at most %u",
                        i, width, gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, format),
                        (unsigned long long)stride, UINT32_MAX);
  *out = (gpures_plane_layout){.offset = offset, .stride = (uint32_t)stride};
  gpures_pixel_format_plane_extent(format, i, width, height, &out->width, &out->height);
  out->size = stride * out->height; /* < 2^64: both factors are below 2^32 */
  return GPURES_OK;
}

int gpures_pixel_format_layout(uint32_t format, uint32_t width, uint32_t height,
                               uint32_t row_align, gpures_plane_layout out_planes[4],
                               uint64_t *out_size) {
  gpures__op op = {"lay out frame", 0};
  int status = check_layout_args(op, format, width, height, row_align);
  if (status != GPURES_OK) return status;
  const gpures_pixel_format_info *info = &formats[format - 1];
  gpures_plane_layout planes[4] = {{0}};
  uint64_t end = 0; /* every size is a multiple of row_align, so each plane starts aligned */
  for (uint32_t i = 0; i < info->num_planes; i++) {
    status = lay_out_plane(op, format, i, width, height, row_align, end, &planes[i]);
    if (status != GPURES_OK) return status;
    end = saturating_add(end, planes[i].size);
  }
  if (end > UINT32_MAX)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "height",
                        "a %ux%u %s frame with rows aligned to %u takes %llu bytes; a DmaBufHandle "
                        "offset reaches at most %u",
                        width, height, gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, format),
                        row_align, (unsigned long long)end, UINT32_MAX);
  if (out_planes) memcpy(out_planes, planes, sizeof planes);
  if (out_size) *out_size = end;
  return GPURES_OK;
}
