/*
** test_json.c: gpures_describe_json (SPEC section 5): the exact text for a few
** handles, 64-bit values and addresses as strings, absent optionals as null,
** enums by name, and the buffer protocol (BUFFER_TOO_SMALL, truncation, sizing).
*/
#define _GNU_SOURCE
#include <stdlib.h>

#include "check.h"
#include "fd_util.h"
#include "handles.h"
#include "json_check.h"


static const uint8_t uuid[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
static _Alignas(8) uint64_t gate;

/* The handle's JSON must parse and equal `expected` exactly. */
static void check_json(gpures_handle h, const char *expected) {
  char json[2048];
  size_t length = 0;
  if (!CHECK_OK(gpures_describe_json(h, json, sizeof json, &length))) return;
  CHECK_EQ(length, strlen(json));
  if (!CHECK(json_valid(json))) fprintf(stderr, "    not JSON: %s\n", json);
  CHECK_STR(json, expected);
}

static void cpu_bytes_json_shows_64_bit_values_as_strings_and_absent_extent_as_null(void) {
  gpures_cpu_bytes_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.ptr = (void *)(uintptr_t)0x7f00deadbeef00ull;
  d.size = 0xFFFFFFFFFFFFFFFFull;
  d.row_pitch = 4294967295u;
  d.format = GPURES_PF_NV12;
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_cpu_bytes_create(&d, NULL, &h))) return;
  check_json(h, "{\"kind\":\"CpuBytes\",\"kindId\":17,\"refcount\":1,"
                "\"ptr\":\"0x7f00deadbeef00\",\"size\":\"18446744073709551615\","
                "\"rowPitch\":4294967295,\"format\":\"NV12\",\"width\":null,\"height\":null}");
  CHECK_OK(gpures_release(h));
}

static void cpu_bytes_json_shows_an_extent_and_the_refcount(void) {
  gpures_cpu_bytes_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.ptr = (void *)(uintptr_t)0x1000;
  d.size = 9007199254740993ull; /* 2^53 + 1: a double would round it */
  d.row_pitch = 256;
  d.format = GPURES_PF_RGBA_U8;
  d.width = 64;
  d.height = 48;
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_cpu_bytes_create(&d, NULL, &h))) return;
  CHECK_OK(gpures_clone(h));
  CHECK_OK(gpures_clone(h));
  check_json(h, "{\"kind\":\"CpuBytes\",\"kindId\":17,\"refcount\":3,"
                "\"ptr\":\"0x1000\",\"size\":\"9007199254740993\","
                "\"rowPitch\":256,\"format\":\"RgbaU8\",\"width\":64,\"height\":48}");
  CHECK_OK(gpures_release(h));
  CHECK_OK(gpures_release(h));
  check_json(h, "{\"kind\":\"CpuBytes\",\"kindId\":17,\"refcount\":1,"
                "\"ptr\":\"0x1000\",\"size\":\"9007199254740993\","
                "\"rowPitch\":256,\"format\":\"RgbaU8\",\"width\":64,\"height\":48}");
  CHECK_OK(gpures_release(h));
}

static void dma_buf_json_lists_fds_and_planes(void) {
  int luma = make_memfd(4096, 0), chroma = make_memfd(2048, 0);
  gpures_dma_buf_handle_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.num_fds = 2;
  d.fds[0] = luma;
  d.fds[1] = chroma;
  d.fourcc = FOURCC('N', 'V', '1', '2');
  d.modifier = 0x00ffffffffffffffull; /* DRM_FORMAT_MOD_INVALID: above 2^53 */
  d.width = 64;
  d.height = 64;
  d.num_planes = 2;
  d.planes[0] = (gpures_dma_buf_plane){0, 0, 64};
  d.planes[1] = (gpures_dma_buf_plane){1, 0, 64};
  gpures_handle h = 0;
  if (CHECK_OK(gpures_dma_buf_handle_create(&d, NULL, &h))) {
    CHECK_OK(gpures_clone(h));
    gpures_dma_buf_handle_desc own;
    own.struct_size = sizeof own;
    CHECK_OK(gpures_dma_buf_handle_describe(h, &own));
    char expected[1024];
    snprintf(expected, sizeof expected,
             "{\"kind\":\"DmaBufHandle\",\"kindId\":15,\"refcount\":2,\"fds\":[%d,%d],"
             "\"fourcc\":842094158,\"modifier\":\"72057594037927935\",\"width\":64,"
             "\"height\":64,\"planes\":[{\"objectIndex\":0,\"offset\":0,\"stride\":64},"
             "{\"objectIndex\":1,\"offset\":0,\"stride\":64}]}",
             own.fds[0], own.fds[1]);
    check_json(h, expected);
    CHECK_OK(gpures_release(h));
    CHECK_OK(gpures_release(h));
  }
  close(luma);
  close(chroma);
}

static void vk_image_json_shows_uuid_slot_release_and_null_pointers(void) {
  gpures_vk_image_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.flags = GPURES_HAS_DEVICE_UUID | GPURES_HAS_SLOT_RELEASE;
  d.image = 0xFFFFFFFFFFFFFFFFull;
  d.device = (void *)(uintptr_t)0xffff8000deadb000ull;
  d.physical_device = (void *)(uintptr_t)0x10;
  memcpy(d.device_uuid, uuid, 16);
  d.row_pitch = 256;
  d.vk_format = 37;
  d.width = 64;
  d.height = 64;
  d.slot_release.gate = &gate;
  d.slot_release.value = 0xFFFFFFFFFFFFFFFEull;
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_vk_image_create(&d, NULL, &h))) return;
  char expected[1024];
  snprintf(expected, sizeof expected,
           "{\"kind\":\"VkImage\",\"kindId\":4,\"refcount\":1,\"image\":\"18446744073709551615\","
           "\"device\":\"0xffff8000deadb000\",\"instance\":null,\"physicalDevice\":\"0x10\","
           "\"deviceUuid\":\"00112233-4455-6677-8899-aabbccddeeff\",\"rowPitch\":256,"
           "\"vkFormat\":37,\"width\":64,\"height\":64,"
           "\"slotRelease\":{\"gate\":\"0x%llx\",\"value\":\"18446744073709551614\"}}",
           (unsigned long long)(uintptr_t)&gate);
  check_json(h, expected);
  CHECK_OK(gpures_release(h));

  /* without the optional groups and fields: nulls, not zeros */
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.image = 1;
  if (!CHECK_OK(gpures_vk_image_create(&d, NULL, &h))) return;
  check_json(h, "{\"kind\":\"VkImage\",\"kindId\":4,\"refcount\":1,\"image\":\"1\","
                "\"device\":null,\"instance\":null,\"physicalDevice\":null,\"deviceUuid\":null,"
                "\"rowPitch\":0,\"vkFormat\":null,\"width\":null,\"height\":null,"
                "\"slotRelease\":null}");
  CHECK_OK(gpures_release(h));
}

static void gl_texture_json_names_its_enums(void) {
  gpures_gl_texture_handle_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.name = 7;
  d.target = 0x0DE1;          /* GL_TEXTURE_2D */
  d.internal_format = 0x8058; /* GL_RGBA8 */
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_gl_texture_handle_create(&d, NULL, &h))) return;
  check_json(h, "{\"kind\":\"GlTextureHandle\",\"kindId\":13,\"refcount\":1,\"name\":7,"
                "\"target\":\"Texture2D\",\"internalFormat\":\"Rgba8\",\"context\":null,"
                "\"shareGroup\":null}");
  CHECK_OK(gpures_release(h));

  d.flags = GPURES_HAS_SHARE_GROUP;
  d.share_group = 0xFFFFFFFFFFFFFFFFull;
  d.target = 0x8513; /* GL_TEXTURE_CUBE_MAP */
  d.internal_format = 0;
  d.context = (void *)(uintptr_t)0xabc0;
  if (!CHECK_OK(gpures_gl_texture_handle_create(&d, NULL, &h))) return;
  check_json(h, "{\"kind\":\"GlTextureHandle\",\"kindId\":13,\"refcount\":1,\"name\":7,"
                "\"target\":\"CubeMap\",\"internalFormat\":\"Unspecified\",\"context\":\"0xabc0\","
                "\"shareGroup\":\"18446744073709551615\"}");
  CHECK_OK(gpures_release(h));
}

static void gl_buffer_json_names_its_target(void) {
  gpures_gl_buffer_handle_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.name = 9;
  d.target = 0x88EC; /* GL_PIXEL_UNPACK_BUFFER */
  d.size = 4096;
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_gl_buffer_handle_create(&d, NULL, &h))) return;
  check_json(h, "{\"kind\":\"GlBufferHandle\",\"kindId\":14,\"refcount\":1,\"name\":9,"
                "\"target\":\"PixelUnpackBuffer\",\"size\":\"4096\",\"context\":null,"
                "\"shareGroup\":null}");
  CHECK_OK(gpures_release(h));
}

static void cuda_ptr_2d_json_shows_plane_offsets_as_strings(void) {
  gpures_cuda_ptr_2d_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.ptr = 0xFFFFFFFFFFFF0000ull;
  d.row_pitch = 2048;
  d.num_plane_byte_offsets = 2;
  d.plane_byte_offsets[1] = 9007199254740993ull;
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_cuda_ptr_2d_create(&d, NULL, &h))) return;
  check_json(h, "{\"kind\":\"CudaPtr2D\",\"kindId\":7,\"refcount\":1,"
                "\"ptr\":\"18446744073709486080\",\"rowPitch\":2048,\"deviceUuid\":null,"
                "\"planeByteOffsets\":[\"0\",\"9007199254740993\"],\"width\":null,\"height\":null}");
  CHECK_OK(gpures_release(h));
}

/* Fields come in the order of SPEC section 9's table, not the C struct's. */
static void vk_opaque_fd_json_shows_fd_bool_format_and_uuid(void) {
  int fd = make_memfd(4096, 0);
  gpures_vk_opaque_fd_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.fd = fd;
  d.memory_type_index = 2;
  d.size = 4096;
  d.offset = 0;
  d.dedicated = 1;
  d.width = 32;
  d.height = 32;
  d.format = GPURES_PF_P010LE;
  memcpy(d.device_uuid, uuid, 16);
  gpures_handle h = 0;
  if (CHECK_OK(gpures_vk_opaque_fd_create(&d, NULL, &h))) {
    gpures_vk_opaque_fd_desc own;
    own.struct_size = sizeof own;
    CHECK_OK(gpures_vk_opaque_fd_describe(h, &own));
    char expected[1024];
    snprintf(expected, sizeof expected,
             "{\"kind\":\"VkOpaqueFd\",\"kindId\":6,\"refcount\":1,\"fd\":%d,"
             "\"size\":\"4096\",\"memoryTypeIndex\":2,\"offset\":\"0\",\"dedicated\":true,"
             "\"width\":32,\"height\":32,\"format\":\"P010LE\","
             "\"deviceUuid\":\"00112233-4455-6677-8899-aabbccddeeff\",\"slotRelease\":null,"
             "\"rowPitch\":null}",
             own.fd);
    check_json(h, expected);
    CHECK_OK(gpures_release(h));
  }
  close(fd);
}

static void cpu_planes_json_lists_each_plane(void) {
  gpures_cpu_planes_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.format = GPURES_PF_NV12;
  d.num_planes = 2;
  d.planes[0] = (gpures_cpu_plane){(void *)(uintptr_t)0x10000, 4096, 64, 0};
  d.planes[1] = (gpures_cpu_plane){(void *)(uintptr_t)0x20000, 2048, 64, 0};
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_cpu_planes_create(&d, NULL, &h))) return;
  check_json(h, "{\"kind\":\"CpuPlanes\",\"kindId\":18,\"refcount\":1,\"format\":\"NV12\","
                "\"planes\":[{\"data\":\"0x10000\",\"size\":\"4096\",\"rowPitch\":64},"
                "{\"data\":\"0x20000\",\"size\":\"2048\",\"rowPitch\":64}],"
                "\"width\":null,\"height\":null}");
  CHECK_OK(gpures_release(h));
}

static void wgpu_texture_json_names_format_and_dimension(void) {
  gpures_wgpu_texture_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.token = 0xFFFFFFFFFFFFFFFFull;
  d.width = 1920;
  d.height = 1080;
  d.depth_or_array_layers = 1;
  d.mip_level_count = 1;
  d.sample_count = 4;
  d.dimension = 2;
  d.format = 24; /* bgra8unorm-srgb */
  d.usage = 0x14;
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_wgpu_texture_create(&d, NULL, &h))) return;
  check_json(h, "{\"kind\":\"WgpuTexture\",\"kindId\":20,\"refcount\":1,"
                "\"token\":\"18446744073709551615\",\"width\":1920,\"height\":1080,"
                "\"depthOrArrayLayers\":1,\"mipLevelCount\":1,\"sampleCount\":4,"
                "\"dimension\":\"2d\",\"format\":\"bgra8unorm-srgb\",\"usage\":20}");
  CHECK_OK(gpures_release(h));
}

static void d3d_kinds_have_no_json_off_windows(void) {
#if !defined(_WIN32)
  gpures_d3d11_texture_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.texture = (void *)(uintptr_t)0x1000;
  d.flags = GPURES_HAS_LUID;
  d.luid.high = -1;
  gpures_handle h = 9;
  CHECK_FAILS(GPURES_E_UNSUPPORTED_PLATFORM, "", gpures_d3d11_texture_create(&d, NULL, &h));
  CHECK_EQ(h, 0);
  char json[64] = "untouched";
  size_t length = 99;
  CHECK_FAILS(GPURES_E_NULL_HANDLE, "handle", gpures_describe_json(h, json, sizeof json, &length));
  CHECK_STR(json, "untouched");
#endif
}

/* ------------------------------------------------------ buffer protocol */

static void null_buffer_with_capacity_zero_reports_the_length(void) {
  gpures_handle h = new_cpu_bytes(NULL);
  char full[1024];
  size_t full_length = 0, length = 12345;
  CHECK_OK(gpures_describe_json(h, full, sizeof full, &full_length));
  CHECK_FAILS(GPURES_E_BUFFER_TOO_SMALL, "capacity", gpures_describe_json(h, NULL, 0, &length));
  CHECK_EQ(length, full_length);
  /* a NULL buffer is never written, whatever capacity says */
  length = 0;
  CHECK_FAILS(GPURES_E_BUFFER_TOO_SMALL, "capacity", gpures_describe_json(h, NULL, 4096, &length));
  CHECK_EQ(length, full_length);
  /* out_length may be NULL */
  CHECK_OK(gpures_describe_json(h, full, sizeof full, NULL));
  CHECK_OK(gpures_release(h));
}

static void too_small_buffer_is_truncated_and_still_nul_terminated(void) {
  gpures_handle h = new_cpu_bytes(NULL);
  char full[1024];
  size_t n = 0;
  CHECK_OK(gpures_describe_json(h, full, sizeof full, &n));
  CHECK(n > 10 && n < sizeof full - 16);
  char buffer[1024];
  int ok = 1;
  for (size_t capacity = 1; capacity <= n && ok; capacity++) {
    size_t length = 0;
    memset(buffer, 'X', sizeof buffer);
    ok &= CHECK_FAILS(GPURES_E_BUFFER_TOO_SMALL, "capacity",
                      gpures_describe_json(h, buffer, capacity, &length));
    ok &= CHECK_EQ(length, n); /* the length it needs, without the NUL */
    ok &= CHECK_EQ(buffer[capacity - 1], '\0');
    ok &= CHECK(strncmp(buffer, full, capacity - 1) == 0);
    ok &= CHECK_EQ(buffer[capacity], 'X'); /* nothing past capacity */
    if (!ok) fprintf(stderr, "    at capacity %zu\n", capacity);
  }
  /* capacity 0 with a real buffer writes nothing at all */
  memset(buffer, 'X', sizeof buffer);
  size_t length = 0;
  CHECK_FAILS(GPURES_E_BUFFER_TOO_SMALL, "capacity", gpures_describe_json(h, buffer, 0, &length));
  CHECK_EQ(length, n);
  CHECK_EQ(buffer[0], 'X');
  CHECK_PREFIX(gpures_last_error(), "Cannot describe CpuBytes: ");
  /* exactly length + 1 fits */
  memset(buffer, 'X', sizeof buffer);
  CHECK_OK(gpures_describe_json(h, buffer, n + 1, &length));
  CHECK_EQ(length, n);
  CHECK_STR(buffer, full);
  CHECK_EQ(buffer[n + 1], 'X');
  CHECK_OK(gpures_release(h));
}

static void stale_handle_has_no_json(void) {
  gpures_handle h = new_cpu_bytes(NULL);
  CHECK_OK(gpures_release(h));
  char json[256] = "";
  size_t length = 77;
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_describe_json(h, json, sizeof json, &length));
  CHECK_STR(json, "");
}

static void validator_rejects_broken_json(void) {
  /* the checker itself: it must tell JSON from text that only looks like it */
  CHECK(json_valid("{\"a\":[1,-2.5e3,\"x\\\"y\",true,false,null,{}]}"));
  CHECK(!json_valid("{\"a\":1"));
  CHECK(!json_valid("{\"a\":\"unclosed}"));
  CHECK(!json_valid("{\"a\":1}}"));
  CHECK(!json_valid("{\"a\":[1,]}"));
  CHECK(!json_valid("{\"a\":01}"));
  CHECK(!json_valid("{a:1}"));
  CHECK(!json_valid(""));
}

int main(void) {
  RUN(validator_rejects_broken_json);
  RUN(cpu_bytes_json_shows_64_bit_values_as_strings_and_absent_extent_as_null);
  RUN(cpu_bytes_json_shows_an_extent_and_the_refcount);
  RUN(dma_buf_json_lists_fds_and_planes);
  RUN(vk_image_json_shows_uuid_slot_release_and_null_pointers);
  RUN(gl_texture_json_names_its_enums);
  RUN(gl_buffer_json_names_its_target);
  RUN(cuda_ptr_2d_json_shows_plane_offsets_as_strings);
  RUN(vk_opaque_fd_json_shows_fd_bool_format_and_uuid);
  RUN(cpu_planes_json_lists_each_plane);
  RUN(wgpu_texture_json_names_format_and_dimension);
  RUN(d3d_kinds_have_no_json_off_windows);
  RUN(null_buffer_with_capacity_zero_reports_the_length);
  RUN(too_small_buffer_is_truncated_and_still_nul_terminated);
  RUN(stale_handle_has_no_json);
  CHECK_EQ(gpures_live_handles(0), 0);
  return check_finish("test_json");
}
