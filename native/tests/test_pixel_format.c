/*
** test_pixel_format.c: the PixelFormat table and the size queries built on it
** (SPEC section 2, "PixelFormat"), and the named enumerations (GL enums).
*/
#include <stdlib.h>

#include "check.h"

#define FOURCC(s) \
  ((uint32_t)(s)[0] | (uint32_t)(s)[1] << 8 | (uint32_t)(s)[2] << 16 | (uint32_t)(s)[3] << 24)

static const char *pf_name(uint32_t id) { return gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, id); }

/* ------------------------------------------------------- SPEC examples */

static void nv12_1080p_has_a_full_luma_plane_and_a_half_size_two_channel_chroma_plane(void) {
  const gpures_pixel_format_info *nv12 = gpures_pixel_format_info_of(GPURES_PF_NV12);
  if (!CHECK(nv12 != NULL)) return;
  CHECK_EQ(nv12->num_planes, 2);
  uint32_t w = 0, h = 0;
  CHECK_OK(gpures_pixel_format_plane_extent(GPURES_PF_NV12, 0, 1920, 1080, &w, &h));
  CHECK_EQ(w, 1920);
  CHECK_EQ(h, 1080);
  CHECK_EQ(nv12->planes[0].channels, 1);
  CHECK_OK(gpures_pixel_format_plane_extent(GPURES_PF_NV12, 1, 1920, 1080, &w, &h));
  CHECK_EQ(w, 960);
  CHECK_EQ(h, 540);
  CHECK_EQ(nv12->planes[1].channels, 2);
  CHECK_EQ(nv12->planes[1].bytes_per_sample, 2);
  /* odd sizes round up */
  CHECK_OK(gpures_pixel_format_plane_extent(GPURES_PF_NV12, 1, 1921, 1081, &w, &h));
  CHECK_EQ(w, 961);
  CHECK_EQ(h, 541);
  /* either output may be NULL */
  CHECK_OK(gpures_pixel_format_plane_extent(GPURES_PF_NV12, 1, 1920, 1080, NULL, &h));
  CHECK_OK(gpures_pixel_format_plane_extent(GPURES_PF_NV12, 1, 1920, 1080, &w, NULL));
}

static void nv12_is_8_bit_and_not_hdr(void) {
  const gpures_pixel_format_info *nv12 = gpures_pixel_format_info_of(GPURES_PF_NV12);
  CHECK_EQ(nv12->bits_per_sample, 8);
  CHECK(!(nv12->flags & GPURES_PF_FLAG_HDR));
  CHECK(nv12->flags & GPURES_PF_FLAG_YUV);
}

static void p010le_rgbaf16_and_rgbau16_are_hdr(void) {
  const uint32_t hdr[] = {GPURES_PF_P010LE, GPURES_PF_RGBA_F16, GPURES_PF_RGBA_U16};
  for (size_t i = 0; i < 3; i++) {
    const gpures_pixel_format_info *f = gpures_pixel_format_info_of(hdr[i]);
    if (!CHECK(f && (f->flags & GPURES_PF_FLAG_HDR))) fprintf(stderr, "    %s\n", pf_name(hdr[i]));
  }
  CHECK_EQ(gpures_pixel_format_info_of(GPURES_PF_P010LE)->bits_per_sample, 10);
  CHECK(gpures_pixel_format_info_of(GPURES_PF_RGBA_F16)->flags & GPURES_PF_FLAG_FLOAT);
  CHECK(!(gpures_pixel_format_info_of(GPURES_PF_RGBA_U16)->flags & GPURES_PF_FLAG_FLOAT));
}

/* -------------------------------------------------------------- table */

static void all_48_formats_have_unique_names_from_the_list(void) {
  static const struct { uint32_t id; const char *name; } list[] = {
#define PF_ROW(id, UPPER, Name) {id, #Name},
    GPURES_PIXEL_FORMAT_LIST(PF_ROW)
#undef PF_ROW
  };
  CHECK_EQ(sizeof list / sizeof list[0], 48);
  uint32_t count = 0;
  const gpures_pixel_format_info *table = gpures_pixel_format_table(&count);
  CHECK_EQ(count, 48);
  for (uint32_t id = 1; id <= 48; id++) {
    const char *name = pf_name(id);
    if (!CHECK(name != NULL)) continue;
    CHECK_STR(name, list[id - 1].name);
    CHECK_EQ(list[id - 1].id, id);
    CHECK_EQ(table[id - 1].id, id);
    CHECK(gpures_pixel_format_info_of(id) == &table[id - 1]);
    uint32_t looked_up = 0;
    CHECK_OK(gpures_enum_lookup(GPURES_ENUM_PIXEL_FORMAT, name, &looked_up));
    CHECK_EQ(looked_up, id);
    for (uint32_t other = 1; other < id; other++)
      if (!CHECK(strcmp(name, pf_name(other)) != 0)) fprintf(stderr, "    %s twice\n", name);
  }
  CHECK(pf_name(0) == NULL);
  CHECK(pf_name(49) == NULL);
  CHECK(gpures_pixel_format_info_of(0) == NULL);
  CHECK(gpures_pixel_format_info_of(49) == NULL);
  uint32_t v = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "name",
              gpures_enum_lookup(GPURES_ENUM_PIXEL_FORMAT, "nv12", &v)); /* names are exact */
  CHECK_FAILS(GPURES_E_NULL_POINTER, "name", gpures_enum_lookup(GPURES_ENUM_PIXEL_FORMAT, NULL, &v));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outValue",
              gpures_enum_lookup(GPURES_ENUM_PIXEL_FORMAT, "NV12", NULL));
}

static void every_format_has_1_to_4_well_formed_planes(void) {
  for (uint32_t id = 1; id <= 48; id++) {
    const gpures_pixel_format_info *f = gpures_pixel_format_info_of(id);
    int ok = CHECK(f->num_planes >= 1 && f->num_planes <= 4);
    ok &= CHECK(f->bits_per_sample >= 8 && f->bits_per_sample <= 32);
    for (uint32_t p = 0; p < 4; p++) {
      const gpures_plane_info *pl = &f->planes[p];
      if (p < f->num_planes) {
        ok &= CHECK(pl->hsub == 1 || pl->hsub == 2);
        ok &= CHECK(pl->vsub == 1 || pl->vsub == 2);
        ok &= CHECK(pl->channels >= 1 && pl->channels <= 4);
        ok &= CHECK(pl->block_width >= 1);
        ok &= CHECK(pl->bytes_per_sample >= 1);
      } else {
        ok &= CHECK(pl->hsub == 0 && pl->vsub == 0 && pl->channels == 0 && pl->bytes_per_sample == 0);
      }
    }
    /* HDR means more than 8 bits per sample */
    ok &= CHECK_EQ((f->flags & GPURES_PF_FLAG_HDR) != 0, f->bits_per_sample > 8);
    if (!ok) fprintf(stderr, "    format %s\n", pf_name(id));
  }
  CHECK_EQ(gpures_pixel_format_info_of(GPURES_PF_YUV420P)->num_planes, 3);
  CHECK_EQ(gpures_pixel_format_info_of(GPURES_PF_NV12A)->num_planes, 3);
  CHECK_EQ(gpures_pixel_format_info_of(GPURES_PF_YUVA444P12LE)->num_planes, 4);
  CHECK_EQ(gpures_pixel_format_info_of(GPURES_PF_UYVY422)->num_planes, 1);
}

/* --------------------------------------------------------- row bytes */

static void row_bytes_round_packed_422_up_to_whole_blocks(void) {
  uint64_t bytes = 0;
  CHECK_OK(gpures_pixel_format_row_bytes(GPURES_PF_UYVY422, 0, 3, &bytes));
  CHECK_EQ(bytes, 8); /* 3 pixels need 2 two-pixel blocks of 4 bytes */
  CHECK_OK(gpures_pixel_format_row_bytes(GPURES_PF_UYVY422, 0, 4, &bytes));
  CHECK_EQ(bytes, 8);
  CHECK_OK(gpures_pixel_format_row_bytes(GPURES_PF_UYVY422, 0, 1, &bytes));
  CHECK_EQ(bytes, 4);
  CHECK_OK(gpures_pixel_format_row_bytes(GPURES_PF_YUYV422, 0, 1920, &bytes));
  CHECK_EQ(bytes, 3840);
  CHECK_OK(gpures_pixel_format_row_bytes(GPURES_PF_Y210LE, 0, 3, &bytes));
  CHECK_EQ(bytes, 16);
}

static void row_bytes_follow_subsampling_and_sample_size(void) {
  static const struct { uint32_t format, plane, width; uint64_t bytes; } cases[] = {
    {GPURES_PF_NV12, 0, 1920, 1920},     {GPURES_PF_NV12, 1, 1920, 1920},
    {GPURES_PF_NV12, 1, 1921, 1922},     {GPURES_PF_P010LE, 0, 1920, 3840},
    {GPURES_PF_P010LE, 1, 1920, 3840},   {GPURES_PF_YUV420P, 1, 1920, 960},
    {GPURES_PF_YUV420P, 2, 1921, 961},   {GPURES_PF_YUV444P16LE, 2, 100, 200},
    {GPURES_PF_RGBA_U8, 0, 1920, 7680},  {GPURES_PF_RGBA_F32, 0, 10, 160},
    {GPURES_PF_RGB_U16, 0, 10, 60},      {GPURES_PF_R16U, 0, 7, 14},
    {GPURES_PF_NV24, 1, 100, 200},       {GPURES_PF_NV12A, 2, 64, 64},
    {GPURES_PF_RGBA_U8, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint64_t bytes = 0;
    CHECK_OK(gpures_pixel_format_row_bytes(cases[i].format, cases[i].plane, cases[i].width, &bytes));
    if (!CHECK_EQ(bytes, cases[i].bytes))
      fprintf(stderr, "    %s plane %u width %u\n", pf_name(cases[i].format), cases[i].plane,
              cases[i].width);
  }
}

/* -------------------------------------------------------- frame sizes */

static void nv12_1080p_frame_with_pitch_1920_is_3110400_bytes(void) {
  uint64_t bytes = 0;
  CHECK_OK(gpures_pixel_format_frame_size(GPURES_PF_NV12, 1920, 1080, 1920, &bytes));
  CHECK_EQ(bytes, 3110400);
  uint64_t pitch = 0;
  CHECK_OK(gpures_pixel_format_plane_pitch(GPURES_PF_NV12, 1, 1920, &pitch));
  CHECK_EQ(pitch, 1920);
  /* a padded pitch scales every plane */
  CHECK_OK(gpures_pixel_format_frame_size(GPURES_PF_NV12, 1920, 1080, 2048, &bytes));
  CHECK_EQ(bytes, 2048ull * 1080 + 2048ull * 540);
}

static void yuv420p_contiguous_frame_has_half_pitch_chroma_planes(void) {
  uint64_t bytes = 0, pitch = 0;
  CHECK_OK(gpures_pixel_format_plane_pitch(GPURES_PF_YUV420P, 1, 1920, &pitch));
  CHECK_EQ(pitch, 960);
  CHECK_OK(gpures_pixel_format_plane_pitch(GPURES_PF_YUV420P, 2, 1920, &pitch));
  CHECK_EQ(pitch, 960);
  CHECK_OK(gpures_pixel_format_frame_size(GPURES_PF_YUV420P, 1920, 1080, 1920, &bytes));
  CHECK_EQ(bytes, 1920ull * 1080 + 2 * 960ull * 540);
  CHECK_OK(gpures_pixel_format_frame_size(GPURES_PF_YUV420P, 1919, 1079, 1920, &bytes));
  CHECK_EQ(bytes, 1920ull * 1079 + 2 * 960ull * 540);
  CHECK_OK(gpures_pixel_format_frame_size(GPURES_PF_YUV444P, 64, 64, 64, &bytes));
  CHECK_EQ(bytes, 3 * 64 * 64);
  CHECK_OK(gpures_pixel_format_frame_size(GPURES_PF_RGBA_U8, 64, 64, 256, &bytes));
  CHECK_EQ(bytes, 64 * 256);
}

static void frame_size_refuses_a_pitch_below_the_row(void) {
  uint64_t bytes = 7;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "rowPitch",
              gpures_pixel_format_frame_size(GPURES_PF_RGBA_U8, 64, 64, 255, &bytes));
  CHECK_EQ(bytes, 7); /* untouched on failure */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "rowPitch",
              gpures_pixel_format_frame_size(GPURES_PF_UYVY422, 3, 1, 7, &bytes));
}

/* ------------------------------------------------------- bad arguments */

static void plane_index_out_of_range_is_invalid_value(void) {
  uint32_t w, h;
  uint64_t n;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "plane",
              gpures_pixel_format_plane_extent(GPURES_PF_NV12, 2, 64, 64, &w, &h));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "plane",
              gpures_pixel_format_row_bytes(GPURES_PF_RGBA_U8, 1, 64, &n));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "plane",
              gpures_pixel_format_plane_pitch(GPURES_PF_YUV420P, 3, 64, &n));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "plane",
              gpures_pixel_format_row_bytes(GPURES_PF_YUVA444P10LE, 4, 64, &n));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "plane",
              gpures_pixel_format_row_bytes(GPURES_PF_NV12, UINT32_MAX, 64, &n));
  CHECK_OK(gpures_pixel_format_row_bytes(GPURES_PF_YUVA444P10LE, 3, 64, &n));
}

static void unknown_format_ids_are_invalid_value(void) {
  const uint32_t unknown[] = {0, 49, 255, UINT32_MAX};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    uint32_t f = unknown[i], w, h;
    uint64_t n;
    CHECK_FAILS(GPURES_E_INVALID_VALUE, "format", gpures_pixel_format_plane_extent(f, 0, 8, 8, &w, &h));
    CHECK_FAILS(GPURES_E_INVALID_VALUE, "format", gpures_pixel_format_row_bytes(f, 0, 8, &n));
    CHECK_FAILS(GPURES_E_INVALID_VALUE, "format", gpures_pixel_format_frame_size(f, 8, 8, 64, &n));
    CHECK_FAILS(GPURES_E_INVALID_VALUE, "format", gpures_pixel_format_plane_pitch(f, 0, 64, &n));
  }
}

/* ------------------------------------------------------------ overflow */

static void huge_extents_do_not_overflow(void) {
  uint32_t w = 0, h = 0;
  uint64_t n = 0;
  CHECK_OK(gpures_pixel_format_plane_extent(GPURES_PF_NV12, 1, UINT32_MAX, UINT32_MAX, &w, &h));
  CHECK_EQ(w, 2147483648u);
  CHECK_EQ(h, 2147483648u);
  CHECK_OK(gpures_pixel_format_row_bytes(GPURES_PF_RGBA_F32, 0, UINT32_MAX, &n));
  CHECK_EQ(n, 16ull * UINT32_MAX);
  CHECK_OK(gpures_pixel_format_row_bytes(GPURES_PF_UYVY422, 0, UINT32_MAX, &n));
  CHECK_EQ(n, 4ull * 2147483648u);
  CHECK_OK(gpures_pixel_format_plane_pitch(GPURES_PF_P016LE, 1, UINT32_MAX, &n));
  CHECK_EQ(n, UINT32_MAX);
  /* more than 32 bits, exact */
  CHECK_OK(gpures_pixel_format_frame_size(GPURES_PF_NV12, 65536, 65536, 65536, &n));
  CHECK_EQ(n, 6442450944ull);
  CHECK_OK(gpures_pixel_format_frame_size(GPURES_PF_R16U, 0x7fffffff, UINT32_MAX, UINT32_MAX, &n));
  CHECK_EQ(n, (uint64_t)UINT32_MAX * UINT32_MAX);
  /* more than 64 bits: saturates instead of wrapping */
  CHECK_OK(gpures_pixel_format_frame_size(GPURES_PF_YUVA444P12LE, 0x7fffffff, UINT32_MAX,
                                          UINT32_MAX, &n));
  CHECK_EQ(n, UINT64_MAX);
}

static void cpu_bytes_with_an_overflowing_extent_and_a_tiny_size_is_refused(void) {
  static unsigned char bytes[4096];
  gpures_cpu_bytes_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.ptr = bytes;
  d.size = sizeof bytes;
  d.format = GPURES_PF_YUVA444P12LE;
  d.width = 0x7fffffff;
  d.height = UINT32_MAX;
  d.row_pitch = UINT32_MAX;
  gpures_handle h = 1;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "size", gpures_cpu_bytes_create(&d, NULL, &h));
  CHECK_EQ(h, 0);
  d.size = UINT64_MAX - 1; /* even the largest real size is below a saturated frame */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "size", gpures_cpu_bytes_create(&d, NULL, &h));
  /* a frame that would wrap a 32-bit or 64-bit product back to something small */
  d.format = GPURES_PF_R16U;
  d.size = sizeof bytes;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "size", gpures_cpu_bytes_create(&d, NULL, &h));
  d.format = GPURES_PF_NV12;
  d.width = d.height = d.row_pitch = 65536;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "size", gpures_cpu_bytes_create(&d, NULL, &h));
  /* a row wider than any u32 pitch */
  d.format = GPURES_PF_RGBA_F32;
  d.width = UINT32_MAX;
  d.height = 1;
  d.row_pitch = UINT32_MAX;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "rowPitch", gpures_cpu_bytes_create(&d, NULL, &h));
  CHECK_EQ(gpures_live_handles(0), 0);
}

/* ------------------------------------------------------------ fourccs */

static void fourcc_lookup_finds_the_drm_layout(void) {
  static const struct { uint32_t format; const char *fourcc; } cases[] = {
    {GPURES_PF_NV12, "NV12"},    {GPURES_PF_NV21, "NV21"},    {GPURES_PF_P010LE, "P010"},
    {GPURES_PF_P016LE, "P016"},  {GPURES_PF_NV16, "NV16"},    {GPURES_PF_P210LE, "P210"},
    {GPURES_PF_NV24, "NV24"},    {GPURES_PF_YUV420P, "YU12"}, {GPURES_PF_YUV422P, "YU16"},
    {GPURES_PF_YUV444P, "YU24"}, {GPURES_PF_UYVY422, "UYVY"}, {GPURES_PF_YUYV422, "YUYV"},
    {GPURES_PF_Y210LE, "Y210"},  {GPURES_PF_RGBA_U8, "AB24"}, {GPURES_PF_BGRA_U8, "AR24"},
    {GPURES_PF_RGBX_U8, "XB24"}, {GPURES_PF_BGRX_U8, "XR24"}, {GPURES_PF_RGBA_U16, "AB48"},
    {GPURES_PF_RGBA_F16, "AB4H"}, {GPURES_PF_RGB10A2, "AB30"}, {GPURES_PF_R16U, "R16 "},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const gpures_pixel_format_info *f = gpures_pixel_format_from_fourcc(FOURCC(cases[i].fourcc));
    if (!CHECK(f && f->id == cases[i].format))
      fprintf(stderr, "    '%s' should be %s\n", cases[i].fourcc, pf_name(cases[i].format));
    CHECK_EQ(gpures_pixel_format_info_of(cases[i].format)->drm_fourcc, FOURCC(cases[i].fourcc));
  }
  CHECK(gpures_pixel_format_from_fourcc(0) == NULL);
  CHECK(gpures_pixel_format_from_fourcc(FOURCC("ZZZZ")) == NULL);
  /* every fourcc in the table names one format only */
  for (uint32_t a = 1; a <= 48; a++) {
    uint32_t fourcc = gpures_pixel_format_info_of(a)->drm_fourcc;
    if (!fourcc) continue;
    CHECK_EQ(gpures_pixel_format_from_fourcc(fourcc)->id, a);
  }
}

/* -------------------------------------------------------- enumerations */

static void gl_enums_map_spec_names_to_real_gl_values(void) {
  static const struct { uint32_t set, value; const char *name; } cases[] = {
    {GPURES_ENUM_GL_TEXTURE_TARGET, 0x0DE1, "Texture2D"},
    {GPURES_ENUM_GL_TEXTURE_TARGET, 0x8C1A, "Texture2DArray"},
    {GPURES_ENUM_GL_TEXTURE_TARGET, 0x806F, "Texture3D"},
    {GPURES_ENUM_GL_TEXTURE_TARGET, 0x8513, "CubeMap"},
    {GPURES_ENUM_GL_TEXTURE_TARGET, 0x84F5, "Rectangle"},
    {GPURES_ENUM_GL_TEXTURE_TARGET, 0x8D41, "Renderbuffer"},
    {GPURES_ENUM_GL_BUFFER_TARGET, 0x8892, "ArrayBuffer"},
    {GPURES_ENUM_GL_BUFFER_TARGET, 0x8893, "ElementArrayBuffer"},
    {GPURES_ENUM_GL_BUFFER_TARGET, 0x88EC, "PixelUnpackBuffer"},
    {GPURES_ENUM_GL_BUFFER_TARGET, 0x88EB, "PixelPackBuffer"},
    {GPURES_ENUM_GL_BUFFER_TARGET, 0x90D2, "ShaderStorageBuffer"},
    {GPURES_ENUM_GL_BUFFER_TARGET, 0x8A11, "UniformBuffer"},
    {GPURES_ENUM_GL_BUFFER_TARGET, 0x8C8E, "TransformFeedbackBuffer"},
    {GPURES_ENUM_GL_BUFFER_TARGET, 0x8F36, "CopyReadBuffer"},
    {GPURES_ENUM_GL_BUFFER_TARGET, 0x8F37, "CopyWriteBuffer"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x0000, "Unspecified"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x8229, "R8"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x8F94, "R8Snorm"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x8232, "R8Ui"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x8231, "R8I"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x822A, "R16"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x822D, "R16F"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x8234, "R16Ui"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x8233, "R16I"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x822E, "R32F"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x822B, "Rg8"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x8F95, "Rg8Snorm"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x822C, "Rg16"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x822F, "Rg16F"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x8058, "Rgba8"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x8C43, "Srgb8Alpha8"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x8F97, "Rgba8Snorm"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x8059, "Rgb10A2"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x805B, "Rgba16"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x881A, "Rgba16F"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x8814, "Rgba32F"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x8C3A, "R11fG11fB10f"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x93A1, "Bgra8"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x81A5, "Depth16"},
    {GPURES_ENUM_GL_INTERNAL_FORMAT, 0x88F0, "Depth24Stencil8"},
  };
  uint32_t per_set[GPURES_ENUM_SET_MAX + 1] = {0};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint32_t v = 0xdead;
    CHECK_STR(gpures_enum_name(cases[i].set, cases[i].value), cases[i].name);
    CHECK_OK(gpures_enum_lookup(cases[i].set, cases[i].name, &v));
    CHECK_EQ(v, cases[i].value);
  }
  uint32_t count = 0;
  const gpures_enum_value *table = gpures_enum_table(&count);
  for (uint32_t i = 0; i < count; i++) {
    if (CHECK(table[i].set >= 1 && table[i].set <= GPURES_ENUM_SET_MAX)) per_set[table[i].set]++;
    if (i) CHECK(table[i].set >= table[i - 1].set); /* grouped by set */
  }
  CHECK_EQ(per_set[GPURES_ENUM_PIXEL_FORMAT], 48);
  CHECK_EQ(per_set[GPURES_ENUM_GL_TEXTURE_TARGET], 6);
  CHECK_EQ(per_set[GPURES_ENUM_GL_BUFFER_TARGET], 9);
  CHECK_EQ(per_set[GPURES_ENUM_GL_INTERNAL_FORMAT], 25);
  CHECK_EQ(per_set[GPURES_ENUM_WGPU_TEXTURE_DIMENSION], 3);
  CHECK_STR(gpures_enum_name(GPURES_ENUM_WGPU_TEXTURE_FORMAT, 18), "rgba8unorm");
  CHECK_STR(gpures_enum_name(GPURES_ENUM_WGPU_TEXTURE_FORMAT, 34), "rgba16float");
  /* a value is only a name within its own set */
  CHECK(gpures_enum_name(GPURES_ENUM_GL_BUFFER_TARGET, 0x0DE1) == NULL);
  CHECK(gpures_enum_name(GPURES_ENUM_GL_TEXTURE_TARGET, 0) == NULL);
  CHECK(gpures_enum_name(0, 1) == NULL);
  CHECK(gpures_enum_name(GPURES_ENUM_SET_MAX + 1, 1) == NULL);
  uint32_t v;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "name",
              gpures_enum_lookup(GPURES_ENUM_GL_BUFFER_TARGET, "Texture2D", &v));
}

int main(void) {
  RUN(nv12_1080p_has_a_full_luma_plane_and_a_half_size_two_channel_chroma_plane);
  RUN(nv12_is_8_bit_and_not_hdr);
  RUN(p010le_rgbaf16_and_rgbau16_are_hdr);
  RUN(all_48_formats_have_unique_names_from_the_list);
  RUN(every_format_has_1_to_4_well_formed_planes);
  RUN(row_bytes_round_packed_422_up_to_whole_blocks);
  RUN(row_bytes_follow_subsampling_and_sample_size);
  RUN(nv12_1080p_frame_with_pitch_1920_is_3110400_bytes);
  RUN(yuv420p_contiguous_frame_has_half_pitch_chroma_planes);
  RUN(frame_size_refuses_a_pitch_below_the_row);
  RUN(plane_index_out_of_range_is_invalid_value);
  RUN(unknown_format_ids_are_invalid_value);
  RUN(huge_extents_do_not_overflow);
  RUN(cpu_bytes_with_an_overflowing_extent_and_a_tiny_size_is_refused);
  RUN(fourcc_lookup_finds_the_drm_layout);
  RUN(gl_enums_map_spec_names_to_real_gl_values);
  return check_finish("test_pixel_format");
}
