/*
** test_layout.c: the standard layout of a frame in one buffer
** (gpures_pixel_format_layout), and the checks that hold a described layout to
** its memory: DmaBufHandle planes inside their objects and apart, CpuPlanes
** planes that hold their rows.
*/
#include "fd_util.h" /* first: it asks for _GNU_SOURCE (memfd_create) */

#include <stddef.h>

#include "check.h"

/* One plane's expected numbers: offset, size, stride, width, height. */
typedef struct expected_plane {
  uint64_t offset, size;
  uint32_t stride, width, height;
} expected_plane;

static void check_layout(uint32_t format, uint32_t width, uint32_t height, uint32_t align,
                         uint64_t size, uint32_t num_planes, const expected_plane *want) {
  gpures_plane_layout planes[4];
  uint64_t got_size = 0;
  if (!CHECK_OK(gpures_pixel_format_layout(format, width, height, align, planes, &got_size))) return;
  CHECK_EQ(got_size, size);
  for (uint32_t i = 0; i < num_planes; i++) {
    if (!CHECK_EQ(planes[i].offset, want[i].offset)) fprintf(stderr, "    plane %u\n", i);
    CHECK_EQ(planes[i].size, want[i].size);
    CHECK_EQ(planes[i].stride, want[i].stride);
    CHECK_EQ(planes[i].width, want[i].width);
    CHECK_EQ(planes[i].height, want[i].height);
    CHECK_EQ(planes[i].offset % align, 0);
  }
  for (uint32_t i = num_planes; i < 4; i++) CHECK_EQ(planes[i].size, 0); /* unused: zeroed */
}

/* ------------------------------------------------------------- layouts */

static void nv12_1080p_is_luma_then_half_height_chroma_rows_of_the_same_bytes(void) {
  const expected_plane want[] = {{0, 2073600, 1920, 1920, 1080}, {2073600, 1036800, 1920, 960, 540}};
  check_layout(GPURES_PF_NV12, 1920, 1080, 64, 3110400, 2, want);
}

static void nv12_odd_size_rounds_chroma_up_and_pads_rows(void) {
  /* 33x17: luma rows of 33 bytes pad to 48; chroma is 17 samples of 2 bytes = 34 -> 48, 9 rows. */
  const expected_plane want[] = {{0, 816, 48, 33, 17}, {816, 432, 48, 17, 9}};
  check_layout(GPURES_PF_NV12, 33, 17, 16, 1248, 2, want);
}

static void i420_odd_size_has_two_quarter_chroma_planes(void) {
  /* 33x17: luma 48 x 17 = 816; U and V 17 bytes -> 32, 9 rows = 288 each. */
  const expected_plane want[] = {{0, 816, 48, 33, 17}, {816, 288, 32, 17, 9}, {1104, 288, 32, 17, 9}};
  check_layout(GPURES_PF_YUV420P, 33, 17, 16, 1392, 3, want);
}

static void p010_has_two_bytes_a_sample(void) {
  /* 33x17: luma 66 bytes -> 128, 17 rows = 2176; chroma 17 x 4 = 68 -> 128, 9 rows = 1152. */
  const expected_plane want[] = {{0, 2176, 128, 33, 17}, {2176, 1152, 128, 17, 9}};
  check_layout(GPURES_PF_P010LE, 33, 17, 64, 3328, 2, want);
}

static void rgba_rows_are_packed_with_align_1_and_padded_with_256(void) {
  const expected_plane tight[] = {{0, 2244, 132, 33, 17}};
  check_layout(GPURES_PF_RGBA_U8, 33, 17, 1, 2244, 1, tight);
  const expected_plane padded[] = {{0, 4352, 256, 33, 17}};
  check_layout(GPURES_PF_RGBA_U8, 33, 17, 256, 4352, 1, padded);
}

static void packed_422_rows_hold_whole_pixel_pairs(void) {
  /* UYVY 33 wide: 17 pairs of 4 bytes = 68. */
  const expected_plane want[] = {{0, 68 * 3, 68, 33, 3}};
  check_layout(GPURES_PF_UYVY422, 33, 3, 4, 68 * 3, 1, want);
}

static void outputs_may_be_null(void) {
  uint64_t size = 0;
  CHECK_OK(gpures_pixel_format_layout(GPURES_PF_NV12, 2, 2, 1, NULL, &size));
  CHECK_EQ(size, 6);
  gpures_plane_layout planes[4];
  CHECK_OK(gpures_pixel_format_layout(GPURES_PF_NV12, 2, 2, 1, planes, NULL));
  CHECK_EQ(planes[1].offset, 4);
}

static void every_format_lays_out_planes_in_order_inside_the_buffer(void) {
  for (uint32_t format = 1; format <= GPURES_PF_MAX; format++) {
    gpures_plane_layout planes[4];
    uint64_t size = 0, end = 0;
    if (!CHECK_OK(gpures_pixel_format_layout(format, 101, 37, 32, planes, &size))) continue;
    for (uint32_t i = 0; i < gpures_pixel_format_info_of(format)->num_planes; i++) {
      uint64_t row = 0;
      gpures_pixel_format_row_bytes(format, i, 101, &row);
      CHECK(planes[i].offset == end);
      CHECK(planes[i].stride >= row && planes[i].stride % 32 == 0);
      CHECK(planes[i].size == (uint64_t)planes[i].stride * planes[i].height);
      end = planes[i].offset + planes[i].size;
    }
    CHECK_EQ(size, end);
  }
}

/* ----------------------------------------------------------- refusals */

static void bad_arguments_name_their_field_and_leave_the_outputs_alone(void) {
  gpures_plane_layout planes[4];
  uint64_t size = 7;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "format", gpures_pixel_format_layout(0, 64, 64, 64, planes, &size));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "format",
              gpures_pixel_format_layout(GPURES_PF_MAX + 1, 64, 64, 64, planes, &size));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "width", gpures_pixel_format_layout(GPURES_PF_NV12, 0, 64, 64, planes, &size));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "height", gpures_pixel_format_layout(GPURES_PF_NV12, 64, 0, 64, planes, &size));
  const uint32_t bad_aligns[] = {0, 3, 48, 8192, 0x80000000u};
  for (size_t i = 0; i < sizeof bad_aligns / sizeof bad_aligns[0]; i++)
    CHECK_FAILS(GPURES_E_INVALID_VALUE, "rowAlign",
                gpures_pixel_format_layout(GPURES_PF_NV12, 64, 64, bad_aligns[i], planes, &size));
  CHECK_EQ(size, 7);
}

static void a_row_wider_than_a_stride_holds_is_the_widths_fault(void) {
  uint64_t size = 0;
  /* RgbaF32 rows of 2^32 - 1 pixels are 16 bytes each: far past 32 bits. */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "width",
              gpures_pixel_format_layout(GPURES_PF_RGBA_F32, UINT32_MAX, 1, 1, NULL, &size));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "width",
              gpures_pixel_format_layout(GPURES_PF_RGBA_U8, 0x40000000u, 1, 1, NULL, &size));
}

static void a_buffer_of_2_to_the_32_bytes_or_more_is_the_heights_fault(void) {
  uint64_t size = 0;
  /* 16384 RGBA pixels make 65536-byte rows: 65535 rows fit below 2^32, 65536 do not. */
  CHECK_OK(gpures_pixel_format_layout(GPURES_PF_RGBA_U8, 16384, 65535, 1, NULL, &size));
  CHECK_EQ(size, 4294901760u);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "height",
              gpures_pixel_format_layout(GPURES_PF_RGBA_U8, 16384, 65536, 1, NULL, &size));
  CHECK(strstr(gpures_last_error(), "4294967296 bytes") != NULL);
  /* the largest sizes of every factor saturate rather than wrap */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "height",
              gpures_pixel_format_layout(GPURES_PF_YUVA444P12LE, 0x7fffffffu, UINT32_MAX, 1, NULL, &size));
}

/* ----------------------------------------------- a layout as a DMA-BUF */

/* One memfd holding a frame of `format` laid out by gpures_pixel_format_layout. */
static gpures_dma_buf_handle_desc laid_out_dma_buf(uint32_t format, uint32_t w, uint32_t h, int *fd) {
  gpures_plane_layout planes[4];
  uint64_t size = 0;
  gpures_pixel_format_layout(format, w, h, 64, planes, &size);
  *fd = make_memfd((long)size, 1);
  gpures_dma_buf_handle_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.num_fds = 1;
  d.fds[0] = *fd;
  d.fourcc = gpures_pixel_format_info_of(format)->drm_fourcc;
  d.width = w;
  d.height = h;
  d.num_planes = gpures_pixel_format_info_of(format)->num_planes;
  for (uint32_t i = 0; i < d.num_planes; i++)
    d.planes[i] = (gpures_dma_buf_plane){0, (uint32_t)planes[i].offset, planes[i].stride};
  return d;
}

static void a_layout_is_a_valid_dma_buf_of_every_format_with_a_fourcc(void) {
  for (uint32_t format = 1; format <= GPURES_PF_MAX; format++) {
    if (!gpures_pixel_format_info_of(format)->drm_fourcc) continue;
    int fd;
    gpures_dma_buf_handle_desc d = laid_out_dma_buf(format, 33, 17, &fd);
    gpures_handle h = 0;
    if (!CHECK_OK(gpures_dma_buf_handle_create(&d, NULL, &h)))
      fprintf(stderr, "    %s\n", gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, format));
    CHECK_OK(gpures_release(h));
    close(fd);
  }
}

static void dma_buf_planes_that_overlap_in_one_object_are_refused(void) {
  int fd;
  gpures_dma_buf_handle_desc d = laid_out_dma_buf(GPURES_PF_NV12, 64, 32, &fd); /* UV at 2048 */
  gpures_handle h = 0;
  d.planes[1].offset = 2048 - 64; /* UV's first row on luma's last */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "planes[1].offset", gpures_dma_buf_handle_create(&d, NULL, &h));
  CHECK(strstr(gpures_last_error(), "planes[1] (bytes 1984 to 3008) overlaps planes[0] (bytes 0 to 2048)"));
  /* a tiled layout is the driver's to check: its planes mean other things */
  d.modifier = 0x0100000000000001ull; /* I915_FORMAT_MOD_X_TILED */
  CHECK_OK(gpures_dma_buf_handle_create(&d, NULL, &h));
  CHECK_OK(gpures_release(h));
  close(fd);
}

static void dma_buf_planes_past_their_objects_end_are_refused_with_numbers(void) {
  int fd;
  gpures_dma_buf_handle_desc d = laid_out_dma_buf(GPURES_PF_NV12, 64, 32, &fd); /* 3072 bytes */
  gpures_handle h = 0;
  d.planes[1].offset = 2048 + 64;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "planes[1].offset", gpures_dma_buf_handle_create(&d, NULL, &h));
  CHECK(strstr(gpures_last_error(), "planes[1] ends at byte 3136 but object 0 has 3072 bytes"));
  close(fd);
}

static void an_unknown_fourcc_is_held_to_plane_0s_rows(void) {
  int fd;
  gpures_dma_buf_handle_desc d = laid_out_dma_buf(GPURES_PF_NV12, 64, 32, &fd); /* 3072 bytes */
  gpures_handle h = 0;
  d.fourcc = FOURCC('Z', 'Z', 'Z', 'Z');
  d.height = 48; /* 47 rows of 64 bytes and one byte of the 48th: 3009 bytes, which fit */
  d.planes[1].offset = 3009;
  CHECK_OK(gpures_dma_buf_handle_create(&d, NULL, &h));
  CHECK_OK(gpures_release(h));
  d.planes[1].offset = 3008; /* on plane 0's last row */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "planes[1].offset", gpures_dma_buf_handle_create(&d, NULL, &h));
  d.height = 49; /* plane 0 alone now passes the end */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "planes[0].offset", gpures_dma_buf_handle_create(&d, NULL, &h));
  CHECK(strstr(gpures_last_error(), "ends at byte 3073 but object 0 has 3072 bytes"));
  close(fd);
}

static void a_known_fourcc_needs_its_plane_count(void) {
  int fd;
  gpures_dma_buf_handle_desc d = laid_out_dma_buf(GPURES_PF_YUV420P, 64, 32, &fd);
  gpures_handle h = 0;
  d.num_planes = 2;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "planes", gpures_dma_buf_handle_create(&d, NULL, &h));
  CHECK(strstr(gpures_last_error(), "planes has 2 entries but YUV420P has 3"));
  close(fd);
}

/* ------------------------------------------------------- CpuPlanes */

static gpures_cpu_planes_desc nv12_planes(void *luma, uint64_t luma_size, void *chroma,
                                          uint64_t chroma_size) {
  gpures_cpu_planes_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.format = GPURES_PF_NV12;
  d.num_planes = 2;
  d.planes[0] = (gpures_cpu_plane){luma, luma_size, 64, 0};
  d.planes[1] = (gpures_cpu_plane){chroma, chroma_size, 64, 0};
  d.width = 64;
  d.height = 64;
  return d;
}

static void cpu_planes_with_an_extent_refuse_an_undersized_chroma_plane(void) {
  static uint8_t luma[4096], chroma[2048];
  gpures_cpu_planes_desc d = nv12_planes(luma, 4096, chroma, 2047);
  gpures_handle h = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "planes[1].size", gpures_cpu_planes_create(&d, NULL, &h));
  CHECK(strstr(gpures_last_error(), "planes[1].size 2047 is below the 2048 bytes of 32 rows of 64"));
  d.planes[1].size = 2048;
  CHECK_OK(gpures_cpu_planes_create(&d, NULL, &h));
  CHECK_OK(gpures_release(h));
}

static void cpu_planes_refuse_a_row_pitch_below_the_row_and_rows_past_the_end(void) {
  static uint8_t luma[4096], chroma[2048];
  gpures_cpu_planes_desc d = nv12_planes(luma, 4096, chroma, 2048);
  gpures_handle h = 0;
  d.planes[1].row_pitch = 62;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "planes[1].rowPitch", gpures_cpu_planes_create(&d, NULL, &h));
  d.planes[1].row_pitch = 64;
  d.height = 65;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "planes[0].size", gpures_cpu_planes_create(&d, NULL, &h));
  d.height = 0;
  CHECK_FAILS(GPURES_E_ZERO_SIZE, "height", gpures_cpu_planes_create(&d, NULL, &h));
}

static void cpu_planes_without_an_extent_are_checked_as_before(void) {
  static uint8_t luma[4096], chroma[16];
  gpures_cpu_planes_desc d = nv12_planes(luma, 4096, chroma, 16);
  d.width = d.height = 0;
  gpures_handle h = 0;
  CHECK_OK(gpures_cpu_planes_create(&d, NULL, &h));
  CHECK_OK(gpures_release(h));
  /* a caller built before width and height existed passes the shorter struct */
  d.struct_size = offsetof(gpures_cpu_planes_desc, width);
  CHECK_OK(gpures_cpu_planes_create(&d, NULL, &h));
  gpures_cpu_planes_desc out;
  memset(&out, 0xff, sizeof out);
  out.struct_size = sizeof out;
  CHECK_OK(gpures_cpu_planes_describe(h, &out));
  CHECK_EQ(out.width, 0);
  CHECK_EQ(out.height, 0);
  CHECK_OK(gpures_release(h));
}

int main(void) {
  RUN(nv12_1080p_is_luma_then_half_height_chroma_rows_of_the_same_bytes);
  RUN(nv12_odd_size_rounds_chroma_up_and_pads_rows);
  RUN(i420_odd_size_has_two_quarter_chroma_planes);
  RUN(p010_has_two_bytes_a_sample);
  RUN(rgba_rows_are_packed_with_align_1_and_padded_with_256);
  RUN(packed_422_rows_hold_whole_pixel_pairs);
  RUN(outputs_may_be_null);
  RUN(every_format_lays_out_planes_in_order_inside_the_buffer);
  RUN(bad_arguments_name_their_field_and_leave_the_outputs_alone);
  RUN(a_row_wider_than_a_stride_holds_is_the_widths_fault);
  RUN(a_buffer_of_2_to_the_32_bytes_or_more_is_the_heights_fault);
  RUN(a_layout_is_a_valid_dma_buf_of_every_format_with_a_fourcc);
  RUN(dma_buf_planes_that_overlap_in_one_object_are_refused);
  RUN(dma_buf_planes_past_their_objects_end_are_refused_with_numbers);
  RUN(an_unknown_fourcc_is_held_to_plane_0s_rows);
  RUN(a_known_fourcc_needs_its_plane_count);
  RUN(cpu_planes_with_an_extent_refuse_an_undersized_chroma_plane);
  RUN(cpu_planes_refuse_a_row_pitch_below_the_row_and_rows_past_the_end);
  RUN(cpu_planes_without_an_extent_are_checked_as_before);
  CHECK_EQ(gpures_live_handles(0), 0);
  return check_finish("test_layout");
}
