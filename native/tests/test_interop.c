/*
** test_interop.c: device identity from the kind table, comparing ids, the
** pool's capabilities and the negotiation between two sides, and how the
** importer entry points treat a careless caller. The importers' caches run on
** real APIs in tests/interop_*_test.ts (lavapipe, llvmpipe) and tests/gpu/.
*/
#define _GNU_SOURCE /* memfd_create */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fd_util.h"
#include "fixtures.gen.h"

static const uint8_t UUID_A[16] = {0xa0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

static gpures_device_id id_of(gpures_handle h) {
  gpures_device_id id;
  memset(&id, 0xff, sizeof id);
  CHECK_OK(gpures_device_of(h, &id));
  return id;
}

static void vulkan_and_cuda_name_one_gpu_by_its_uuid(void) {
  gpures_vk_image_desc vk = gpures_fixture_vk_image();
  gpures_cuda_buffer_handle_desc cu = gpures_fixture_cuda_buffer_handle();
  memcpy(vk.device_uuid, UUID_A, 16);
  memcpy(cu.device_uuid, UUID_A, 16);
  gpures_handle image = 0, memory = 0;
  CHECK_OK(gpures_vk_image_create(&vk, NULL, &image));
  CHECK_OK(gpures_cuda_buffer_handle_create(&cu, NULL, &memory));
  gpures_device_id a = id_of(image), b = id_of(memory);
  CHECK_EQ(a.kind, GPURES_DEVICE_VULKAN_UUID);
  CHECK_EQ(b.kind, GPURES_DEVICE_CUDA_UUID);
  CHECK(memcmp(a.bytes, UUID_A, 16) == 0);
  CHECK_EQ(gpures_device_compare(&a, &b), GPURES_DEVICE_SAME);
  b.bytes[15] ^= 1;
  CHECK_EQ(gpures_device_compare(&a, &b), GPURES_DEVICE_DIFFERENT);
  CHECK_OK(gpures_release(image));
  CHECK_OK(gpures_release(memory));
}

static void an_absent_or_zero_uuid_names_no_device(void) {
  gpures_vk_image_desc vk = gpures_fixture_vk_image();
  vk.flags &= ~GPURES_HAS_DEVICE_UUID;
  gpures_handle image = 0;
  CHECK_OK(gpures_vk_image_create(&vk, NULL, &image));
  CHECK_EQ(id_of(image).kind, GPURES_DEVICE_NONE);
  CHECK_OK(gpures_release(image));
  int fd = make_memfd(4096, 1);
  gpures_vk_opaque_fd_desc opaque = gpures_fixture_vk_opaque_fd(fd);
  memset(opaque.device_uuid, 0, 16); /* not optional, but all zero: unknown */
  gpures_handle memory = 0;
  CHECK_OK(gpures_vk_opaque_fd_create(&opaque, NULL, &memory));
  CHECK_EQ(id_of(memory).kind, GPURES_DEVICE_NONE);
  CHECK_OK(gpures_release(memory));
  close(fd);
}

static void cpu_memory_is_on_the_cpu_and_a_dma_buf_on_any_device(void) {
  gpures_cpu_bytes_desc bytes = gpures_fixture_cpu_bytes();
  int fd = make_memfd(1 << 16, 1);
  gpures_dma_buf_handle_desc dma = gpures_fixture_dma_buf_handle_one_object(fd);
  gpures_handle cpu = 0, buf = 0, fence = 0;
  CHECK_OK(gpures_cpu_bytes_create(&bytes, NULL, &cpu));
  CHECK_OK(gpures_dma_buf_handle_create(&dma, NULL, &buf));
  CHECK_OK(gpures_cpu_fence_new(&fence));
  CHECK_EQ(id_of(cpu).kind, GPURES_DEVICE_CPU);
  CHECK_EQ(id_of(fence).kind, GPURES_DEVICE_CPU);
  CHECK_EQ(id_of(buf).kind, GPURES_DEVICE_NONE);
  gpures_device_id c = id_of(cpu), n = id_of(buf);
  CHECK_EQ(gpures_device_compare(&c, &c), GPURES_DEVICE_SAME);
  CHECK_EQ(gpures_device_compare(&c, &n), GPURES_DEVICE_UNKNOWN);
  CHECK_EQ(gpures_device_compare(NULL, &c), GPURES_DEVICE_UNKNOWN);
  CHECK_OK(gpures_release(cpu));
  CHECK_OK(gpures_release(buf));
  CHECK_OK(gpures_release(fence));
  close(fd);
}

static void every_kind_that_carries_a_device_field_flags_it(void) {
  uint32_t kinds = 0;
  const gpures_kind_info *table = gpures_kind_table(&kinds);
  for (uint32_t k = 0; k < kinds; k++) {
    uint32_t n = 0;
    const gpures_field_info *f = gpures_kind_fields(table[k].id, &n);
    for (uint32_t r = 0; r < n; r++) {
      bool identity = strcmp(f[r].path, "deviceUuid") == 0 || strncmp(f[r].path, "luid.", 5) == 0 ||
                      strcmp(f[r].path, "registryId") == 0;
      if (identity && !CHECK(GPURES_FIELD_DEVICE_OF(f[r].flags) != 0))
        fprintf(stderr, "  %s.%s is not flagged as its device\n", table[k].name, f[r].path);
    }
  }
}

static void device_of_refuses_a_released_handle_and_a_null_out(void) {
  gpures_vk_image_desc vk = gpures_fixture_vk_image();
  gpures_handle image = 0;
  CHECK_OK(gpures_vk_image_create(&vk, NULL, &image));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outId", gpures_device_of(image, NULL));
  CHECK_OK(gpures_release(image));
  gpures_device_id id;
  CHECK_STATUS(GPURES_E_STALE, gpures_device_of(image, &id));
}

/* ----------------------------------------------------------- negotiation */

static gpures_format_cap row(uint32_t format, uint64_t modifier, uint32_t memory, uint32_t align) {
  gpures_format_cap c = {format, memory, modifier, 0, 0, align, 0};
  return c;
}

static void the_pool_lists_its_formats_and_says_when_they_do_not_fit(void) {
  uint32_t count = 0;
  CHECK_OK(gpures_caps_pool(NULL, 0, &count) == GPURES_E_BUFFER_TOO_SMALL ? GPURES_OK : 1);
  CHECK(count > 10);
  gpures_format_cap few[2];
  CHECK_FAILS(GPURES_E_BUFFER_TOO_SMALL, "capacity", gpures_caps_pool(few, 2, &count));
  gpures_format_cap all[64];
  CHECK_OK(gpures_caps_pool(all, 64, &count));
  CHECK_EQ(all[0].format, GPURES_PF_NV12);
  CHECK_EQ(all[0].memory, GPURES_MEMORY_DMA_BUF | GPURES_MEMORY_HOST);
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outCount", gpures_caps_pool(all, 64, NULL));
}

static void negotiation_gives_the_layout_of_the_larger_alignment(void) {
  gpures_format_cap producer[] = {row(GPURES_PF_P010LE, 0, GPURES_MEMORY_DMA_BUF, 64),
                                  row(GPURES_PF_NV12, 0, GPURES_MEMORY_DMA_BUF, 64)};
  gpures_format_cap consumer[] = {row(GPURES_PF_NV12, 0, GPURES_MEMORY_DMA_BUF, 256)};
  gpures_negotiated out = {.struct_size = sizeof out};
  CHECK_OK(gpures_negotiate(producer, 2, consumer, 1, 1280, 720, &out));
  CHECK_EQ(out.format, GPURES_PF_NV12);
  CHECK_EQ(out.producer_index, 1);
  CHECK_EQ(out.row_align, 256);
  CHECK_EQ(out.num_planes, 2);
  CHECK_EQ(out.planes[0].stride, 1280);
  CHECK_EQ(out.planes[1].offset, 1280u * 720u);
  CHECK_EQ(out.size, 1280u * 720u * 3u / 2u);
}

static void negotiation_without_a_fit_is_unsupported_and_says_why(void) {
  gpures_format_cap producer[] = {row(GPURES_PF_NV12, 0, GPURES_MEMORY_DMA_BUF, 1)};
  gpures_format_cap consumer[] = {row(GPURES_PF_NV12, 0, GPURES_MEMORY_OPAQUE_FD, 1)};
  gpures_negotiated out = {.struct_size = sizeof out};
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "format", gpures_negotiate(producer, 1, consumer, 1, 64, 64, &out));
  CHECK(strstr(gpures_last_error(), "NV12: no memory kind in common") != NULL);
  consumer[0].memory = GPURES_MEMORY_DMA_BUF;
  consumer[0].max_width = 32;
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "format", gpures_negotiate(producer, 1, consumer, 1, 64, 64, &out));
  CHECK(strstr(gpures_last_error(), "at most 32x0") != NULL);
}

static void negotiation_refuses_what_it_cannot_read(void) {
  gpures_format_cap ok[] = {row(GPURES_PF_NV12, 0, GPURES_MEMORY_DMA_BUF, 1)};
  gpures_format_cap bad[] = {row(999, 0, GPURES_MEMORY_DMA_BUF, 1)};
  gpures_negotiated out = {.struct_size = sizeof out};
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "producer", gpures_negotiate(bad, 1, ok, 1, 64, 64, &out));
  bad[0] = row(GPURES_PF_NV12, 0, GPURES_MEMORY_DMA_BUF, 48);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "consumer", gpures_negotiate(ok, 1, bad, 1, 64, 64, &out));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "consumer", gpures_negotiate(ok, 1, NULL, 1, 64, 64, &out));
  CHECK_FAILS(GPURES_E_ZERO_SIZE, "width", gpures_negotiate(ok, 1, ok, 1, 0, 64, &out));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "out", gpures_negotiate(ok, 1, ok, 1, 64, 64, NULL));
  out.struct_size = 0; /* an unset out struct is refused, never written past */
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "out.structSize", gpures_negotiate(ok, 1, ok, 1, 64, 64, &out));
}

static void a_long_explanation_is_cut_off_inside_its_buffer(void) {
  gpures_format_cap producer[64], consumer[64];
  uint32_t n = 0;
  CHECK_OK(gpures_caps_pool(producer, 64, &n));
  for (uint32_t i = 0; i < n; i++) consumer[i] = row(producer[i].format, 0x0100000000000001ull, GPURES_MEMORY_DMA_BUF, 1);
  gpures_negotiated out = {.struct_size = sizeof out};
  CHECK_FAILS(GPURES_E_UNSUPPORTED, "format", gpures_negotiate(producer, n, consumer, n, 64, 64, &out));
  CHECK(strlen(gpures_last_error()) < 1100);
}

/* A small, seeded generator: the same rows on every run, so a failure replays. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rng(uint32_t below) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state % below);
}

static gpures_format_cap random_row(void) {
  static const uint64_t modifiers[] = {0, 0x0100000000000001ull, GPURES_MODIFIER_INVALID};
  static const uint32_t sizes[] = {0, 16, 1920, 4096, 65535};
  /* A few formats, so lists meet; now and then one that is no format or no alignment. */
  uint32_t format = rng(200) == 0 ? GPURES_PF_MAX + 1 : 1 + rng(4);
  uint32_t align = rng(200) == 0 ? 3u + rng(5000) : 1u << rng(13);
  gpures_format_cap c = {format, rng(8), modifiers[rng(3)], sizes[rng(5)], sizes[rng(5)], align, 0};
  return c;
}

/* Whether rows p and c could carry a width x height frame: the rule negotiation applies. */
static bool rows_fit(const gpures_format_cap *p, const gpures_format_cap *c, uint32_t w, uint32_t h) {
  bool limits = (!p->max_width || w <= p->max_width) && (!p->max_height || h <= p->max_height) &&
                (!c->max_width || w <= c->max_width) && (!c->max_height || h <= c->max_height);
  return p->format == c->format && p->modifier == c->modifier && (p->memory & c->memory) && limits;
}

static void negotiation_agrees_with_the_rule_on_100000_random_pairs_of_lists(void) {
  static const uint32_t extents[] = {0, 1, 2, 63, 64, 1080, 1920, 4096, 70000};
  uint32_t ok = 0, refused = 0;
  for (int round = 0; round < 100000; round++) {
    gpures_format_cap producer[6], consumer[6];
    uint32_t np = rng(7), nc = rng(7);
    for (uint32_t i = 0; i < np; i++) producer[i] = random_row();
    for (uint32_t i = 0; i < nc; i++) consumer[i] = random_row();
    uint32_t w = extents[rng(9)], h = extents[rng(9)];
    gpures_negotiated out = {.struct_size = sizeof out};
    int status = gpures_negotiate(producer, np, consumer, nc, w, h, &out);
    if (status == GPURES_OK) {
      ok++;
      const gpures_format_cap *p = &producer[out.producer_index], *c = &consumer[out.consumer_index];
      uint32_t both = p->memory & c->memory;
      if (!CHECK(out.producer_index < np && out.consumer_index < nc && rows_fit(p, c, w, h) &&
                 out.format == p->format && (out.memory & both) == out.memory &&
                 out.memory && !(out.memory & (out.memory - 1))))
        break;
      for (uint32_t i = 0; i < out.producer_index; i++) /* no earlier producer row fitted */
        for (uint32_t j = 0; j < nc; j++) CHECK(!rows_fit(&producer[i], &consumer[j], w, h));
      uint32_t align = (p->row_align > c->row_align ? p->row_align : c->row_align);
      CHECK_EQ(out.row_align, align ? align : 1);
      if (out.modifier == 0 && out.num_planes)
        CHECK(out.planes[out.num_planes - 1].offset + out.planes[out.num_planes - 1].size <= out.size);
    } else {
      refused++;
      CHECK(strlen(gpures_last_error()) < 1100);
      if (status == GPURES_E_UNSUPPORTED) /* only when truly nothing fits */
        for (uint32_t i = 0; i < np; i++)
          for (uint32_t j = 0; j < nc; j++) CHECK(!rows_fit(&producer[i], &consumer[j], w, h));
    }
  }
  if (!CHECK(ok > 1000 && refused > 1000)) fprintf(stderr, "  %u agreed, %u refused\n", ok, refused);
}

/* ------------------------------------------------------------- importers */

static void an_older_importer_desc_reads_its_missing_fields_as_absent(void) {
  gpures_vk_importer_desc vk;
  memset(&vk, 0xab, sizeof vk); /* garbage past struct_size must never be called */
  vk.struct_size = 8;
  vk.flags = GPURES_VK_IMPORT_IMAGE;
  gpures_importer *imp = (gpures_importer *)1;
  CHECK_FAILS(GPURES_E_NULL_POINTER, "instance", gpures_vk_importer_create(&vk, &imp));
  gpures_egl_importer_desc egl;
  memset(&egl, 0xab, sizeof egl);
  egl.struct_size = 8;
  egl.flags = 0;
  CHECK_FAILS(GPURES_E_NULL_POINTER, "display", gpures_egl_importer_create(&egl, &imp));
  gpures_cuda_imported short_out = {.struct_size = 24}; /* ends before `handle`: gets none */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "importer", gpures_cuda_import(NULL, 1, &short_out));
}

static void importer_calls_refuse_a_null_importer(void) {
  gpures_importer_stats stats = {.struct_size = sizeof stats};
  CHECK_FAILS(GPURES_E_NULL_POINTER, "importer", gpures_importer_stats_get(NULL, &stats));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "importer", gpures_importer_collect(NULL));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "importer", gpures_importer_forget(NULL, 1));
  CHECK_OK(gpures_importer_destroy(NULL));
  gpures_vk_imported vk = {.struct_size = sizeof vk};
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "importer", gpures_vk_import(NULL, 1, &vk));
  gpures_egl_imported egl = {.struct_size = sizeof egl};
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "importer", gpures_egl_import(NULL, 1, &egl));
  gpures_cuda_imported cuda = {.struct_size = sizeof cuda};
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "importer", gpures_cuda_import(NULL, 1, &cuda));
}

int main(void) {
  RUN(vulkan_and_cuda_name_one_gpu_by_its_uuid);
  RUN(an_absent_or_zero_uuid_names_no_device);
  RUN(cpu_memory_is_on_the_cpu_and_a_dma_buf_on_any_device);
  RUN(every_kind_that_carries_a_device_field_flags_it);
  RUN(device_of_refuses_a_released_handle_and_a_null_out);
  RUN(the_pool_lists_its_formats_and_says_when_they_do_not_fit);
  RUN(negotiation_gives_the_layout_of_the_larger_alignment);
  RUN(negotiation_without_a_fit_is_unsupported_and_says_why);
  RUN(negotiation_refuses_what_it_cannot_read);
  RUN(a_long_explanation_is_cut_off_inside_its_buffer);
  RUN(negotiation_agrees_with_the_rule_on_100000_random_pairs_of_lists);
  RUN(importer_calls_refuse_a_null_importer);
  RUN(an_older_importer_desc_reads_its_missing_fields_as_absent);
  return check_finish("test_interop");
}
