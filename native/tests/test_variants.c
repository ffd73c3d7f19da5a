/*
** test_variants.c: the contract every one of the twenty kinds keeps, and what
** each kind refuses at create (SPEC sections 2, 4.1, 4.2, 5, 6 and 7).
**
** The kinds are walked with GPURES_KIND_LIST: one row per kind holds a
** function that fills a minimal valid descriptor and the kind's own
** create/clone/describe/release entry points, so a kind added to the list
** without a valid descriptor here fails to compile.
*/
#define _GNU_SOURCE
#include <stdlib.h>

#include "check.h"
#include "fd_util.h"
#include "json_check.h"

/* ------------------------------------------------------------ fixtures */

/* What the borrowed descriptors point at; gpures never touches it. */
static unsigned char pixels[64 * 64 * 4];
static _Alignas(8) uint64_t gate;

/* memfds the fd kinds duplicate (created in main, closed at the end). */
static int vk_memory_fd;  /* 4096 bytes */
static int luma_fd;       /* 64x64 NV12 plane 0: 4096 bytes */
static int chroma_fd;     /* 64x64 NV12 plane 1: 2048 bytes */
static int pipe_fds[2];   /* an fd whose size cannot be read */

static const uint8_t uuid[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};


#define GL_TEXTURE_2D 0x0DE1u
#define GL_RGBA8 0x8058u
#define GL_ARRAY_BUFFER 0x8892u
#define WGPU_RGBA8UNORM 18u
#define WGPU_2D 2u

/* ------------------------------------------- minimal valid descriptors */

static void fill_d3d11_texture(gpures_d3d11_texture_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->flags = GPURES_HAS_LUID;
  d->texture = (void *)0x1000;
  d->luid.high = -2;
  d->luid.low = 7;
  d->row_pitch = 256;
}

static void fill_d3d12_resource(gpures_d3d12_resource_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->flags = GPURES_HAS_LUID;
  d->resource = (void *)0x1100;
  d->luid.high = -2;
  d->luid.low = 7;
  d->row_pitch = 256;
}

static void fill_d3d12_buffer_handle(gpures_d3d12_buffer_handle_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->resource = (void *)0x1200;
  d->size = 4096;
}

static void fill_vk_image(gpures_vk_image_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->flags = GPURES_HAS_DEVICE_UUID | GPURES_HAS_SLOT_RELEASE;
  d->image = 0xabcdef;
  d->device = (void *)0x2000;
  d->instance = (void *)0x3000;
  d->physical_device = (void *)0x4000;
  memcpy(d->device_uuid, uuid, 16);
  d->row_pitch = 256;
  d->vk_format = 37; /* VK_FORMAT_R8G8B8A8_UNORM */
  d->width = 64;
  d->height = 64;
  d->slot_release.gate = &gate;
  d->slot_release.value = 7;
}

static void fill_vk_buffer_handle(gpures_vk_buffer_handle_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->flags = GPURES_HAS_DEVICE_UUID;
  d->buffer = 0x55;
  d->device = (void *)0x2000;
  memcpy(d->device_uuid, uuid, 16);
  d->size = 65536;
}

static void fill_vk_opaque_fd(gpures_vk_opaque_fd_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->flags = GPURES_HAS_SLOT_RELEASE;
  d->fd = vk_memory_fd;
  d->memory_type_index = 3;
  d->size = 4096;
  d->offset = 256;
  d->dedicated = 1;
  d->width = 16;
  d->height = 16;
  d->format = GPURES_PF_RGBA_U8;
  memcpy(d->device_uuid, uuid, 16);
  d->slot_release.gate = &gate;
  d->slot_release.value = 9;
}

static void fill_cuda_ptr_2d(gpures_cuda_ptr_2d_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->flags = GPURES_HAS_DEVICE_UUID;
  d->ptr = 0x7f0000000000ull;
  d->row_pitch = 2048;
  d->num_plane_byte_offsets = 2;
  d->plane_byte_offsets[0] = 0;
  d->plane_byte_offsets[1] = 2048ull * 1080;
  memcpy(d->device_uuid, uuid, 16);
  d->width = 1920;
  d->height = 1080;
}

static void fill_cuda_buffer_handle(gpures_cuda_buffer_handle_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->flags = GPURES_HAS_DEVICE_UUID;
  d->ptr = 0x7f0000100000ull;
  d->size = 1u << 20;
  memcpy(d->device_uuid, uuid, 16);
}

static void fill_cuda_surface(gpures_cuda_surface_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->surface = 0x99;
  d->format = WGPU_RGBA8UNORM;
  d->width = 64;
  d->height = 64;
}

static void fill_open_cl_mem(gpures_open_cl_mem_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->mem = (void *)0x5000;
  d->queue = (void *)0x6000;
  d->row_pitch = 256;
}

static void fill_metal_texture_handle(gpures_metal_texture_handle_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->flags = GPURES_HAS_REGISTRY_ID;
  d->texture = (void *)0x7000;
  d->registry_id = 0x1234;
}

static void fill_metal_buffer_handle(gpures_metal_buffer_handle_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->buffer = (void *)0x7100;
  d->row_pitch = 256;
}

static void fill_gl_texture_handle(gpures_gl_texture_handle_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->flags = GPURES_HAS_SHARE_GROUP;
  d->name = 7;
  d->target = GL_TEXTURE_2D;
  d->internal_format = GL_RGBA8;
  d->context = (void *)0x8000;
  d->share_group = 99;
}

static void fill_gl_buffer_handle(gpures_gl_buffer_handle_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->name = 8;
  d->target = GL_ARRAY_BUFFER;
  d->size = 4096;
}

/* NV12 64x64, linear: plane 0 in luma_fd, plane 1 in chroma_fd. */
static void fill_dma_buf_handle(gpures_dma_buf_handle_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->num_fds = 2;
  d->fds[0] = luma_fd;
  d->fds[1] = chroma_fd;
  d->fds[2] = d->fds[3] = -1; /* what unused fds read back as */
  d->fourcc = FOURCC('N', 'V', '1', '2');
  d->modifier = 0; /* DRM_FORMAT_MOD_LINEAR */
  d->width = 64;
  d->height = 64;
  d->num_planes = 2;
  d->planes[0] = (gpures_dma_buf_plane){0, 0, 64};
  d->planes[1] = (gpures_dma_buf_plane){1, 0, 64};
}

static void fill_vaapi_surface(gpures_vaapi_surface_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->surface = 0; /* a legal VASurfaceID */
  d->display = (void *)0x9000;
}

static void fill_cpu_bytes(gpures_cpu_bytes_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->ptr = pixels;
  d->size = sizeof pixels;
  d->row_pitch = 256;
  d->format = GPURES_PF_RGBA_U8;
  d->width = 64;
  d->height = 64;
}

static void fill_cpu_planes(gpures_cpu_planes_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->format = GPURES_PF_NV12;
  d->num_planes = 2;
  d->planes[0] = (gpures_cpu_plane){pixels, 4096, 64, 0};
  d->planes[1] = (gpures_cpu_plane){pixels + 4096, 2048, 64, 0};
}

static void fill_cpu_shared_slot(gpures_cpu_shared_slot_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->size = 16384;
  d->row_pitch = 256;
  d->format = GPURES_PF_RGBA_U8;
}

static void fill_wgpu_texture(gpures_wgpu_texture_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  d->token = 42;
  d->width = 64;
  d->height = 64;
  d->depth_or_array_layers = 1;
  d->mip_level_count = 1;
  d->sample_count = 1;
  d->dimension = WGPU_2D;
  d->format = WGPU_RGBA8UNORM;
  d->usage = 0x10;
}

/* ------------------------------------------------------- the kind table */

typedef struct kind_row {
  uint32_t id;
  const char *name;
  const char *snake;
  uint32_t ownership;
  uint32_t platforms;
  size_t desc_size;
  void (*fill)(void *desc);
  int (*create)(const void *desc, const gpures_create_options *options, gpures_handle *out);
  int (*clone)(gpures_handle h);
  int (*describe)(gpures_handle h, void *out);
  int (*release)(gpures_handle h);
} kind_row;

#define KIND_ADAPTERS(id, UPPER, snake, Name, own, os)                                        \
  static void snake##_fill(void *d) { fill_##snake(d); }                                       \
  static int snake##_create(const void *d, const gpures_create_options *o, gpures_handle *h) { \
    return gpures_##snake##_create(d, o, h);                                                   \
  }                                                                                            \
  static int snake##_describe(gpures_handle h, void *out) {                                    \
    return gpures_##snake##_describe(h, out);                                                  \
  }
GPURES_KIND_LIST(KIND_ADAPTERS)
#undef KIND_ADAPTERS

static const kind_row kinds[] = {
#define KIND_ROW(id, UPPER, snake, Name, own, os)                                             \
  {id, #Name, #snake, GPURES_##own, (os), sizeof(gpures_##snake##_desc), snake##_fill,         \
   snake##_create, gpures_##snake##_clone, snake##_describe, gpures_##snake##_release},
    GPURES_KIND_LIST(KIND_ROW)
#undef KIND_ROW
};
#define NUM_KINDS (sizeof kinds / sizeof kinds[0])

static const kind_row *row_of(uint32_t kind) { return &kinds[kind - 1]; }

/* A CpuBytes handle nobody else touches: bad input must leave it intact. */
static gpures_handle bystander;

static void bystander_is_intact(void) {
  uint32_t refcount = 0;
  CHECK_OK(gpures_refcount(bystander, &refcount));
  CHECK_EQ(refcount, 1);
}

/* ----------------------------------------------------------- the tables */

static void kind_table_matches_the_kind_list(void) {
  uint32_t count = 0;
  const gpures_kind_info *table = gpures_kind_table(&count);
  CHECK_EQ(count, 20);
  CHECK_EQ(NUM_KINDS, 20);
  for (uint32_t i = 0; i < count && i < NUM_KINDS; i++) {
    const kind_row *k = &kinds[i];
    CHECK_EQ(table[i].id, i + 1);
    CHECK_EQ(k->id, i + 1);
    CHECK_STR(table[i].name, k->name);
    CHECK_STR(table[i].snake, k->snake);
    CHECK_EQ(table[i].ownership, k->ownership);
    CHECK_EQ(table[i].platforms, k->platforms);
    CHECK_EQ(table[i].desc_size, k->desc_size);
    uint32_t num_fields = 0;
    CHECK(gpures_kind_fields(k->id, &num_fields) != NULL);
    CHECK_EQ(table[i].num_fields, num_fields);
    CHECK(gpures_kind_info_of(k->id) == &table[i]);
  }
  CHECK(gpures_kind_info_of(0) == NULL);
  CHECK(gpures_kind_info_of(21) == NULL);
  CHECK(gpures_kind_fields(21, NULL) == NULL);
}

static void owned_kinds_are_exactly_the_fd_kinds(void) {
  for (size_t i = 0; i < NUM_KINDS; i++) {
    uint32_t id = kinds[i].id;
    int owns = id == GPURES_KIND_VK_OPAQUE_FD || id == GPURES_KIND_DMA_BUF_HANDLE;
    CHECK_EQ(kinds[i].ownership, owns ? GPURES_OWNED : GPURES_BORROWED);
  }
}

static void linux_supports_every_kind_but_d3d_and_metal(void) {
#if defined(__linux__) && !defined(__ANDROID__)
  CHECK_EQ(gpures_build_os(), GPURES_OS_LINUX);
  for (size_t i = 0; i < NUM_KINDS; i++) {
    uint32_t id = kinds[i].id;
    int absent = id == GPURES_KIND_D3D11_TEXTURE || id == GPURES_KIND_D3D12_RESOURCE ||
                 id == GPURES_KIND_D3D12_BUFFER_HANDLE || id == GPURES_KIND_METAL_TEXTURE_HANDLE ||
                 id == GPURES_KIND_METAL_BUFFER_HANDLE;
    if (!CHECK_EQ(gpures_kind_supported(id), absent ? 0 : 1))
      fprintf(stderr, "    kind %s\n", kinds[i].name);
  }
#endif
  for (size_t i = 0; i < NUM_KINDS; i++)
    CHECK_EQ(gpures_kind_supported(kinds[i].id),
             (kinds[i].platforms & gpures_build_os()) ? 1 : 0);
  CHECK_EQ(gpures_kind_supported(0), 0);
  CHECK_EQ(gpures_kind_supported(21), 0);
}

/* -------------------------------------------------- the shared contract */

/*
** The descriptor a handle describes back: the input with each owned fd
** replaced by the handle's own, which must be an open, close-on-exec
** duplicate of the same file, not the caller's number.
*/
static void expect_owned_fds(uint32_t kind, const void *described, void *expected) {
  uint32_t n_rows = 0;
  const gpures_field_info *rows = gpures_kind_fields(kind, &n_rows);
  for (uint32_t r = 0; r < n_rows; r++) {
    const gpures_field_info *f = &rows[r];
    if (f->type != GPURES_FIELD_FD) continue;
    uint32_t used = 1;
    if (f->count_offset) memcpy(&used, (const unsigned char *)described + f->count_offset, 4);
    for (uint32_t i = 0; i < used && i < f->count; i++) {
      int32_t own, given;
      memcpy(&own, (const unsigned char *)described + f->offset + i * f->stride, 4);
      memcpy(&given, (const unsigned char *)expected + f->offset + i * f->stride, 4);
      CHECK(own != given);
      CHECK(fd_is_cloexec(own));
      CHECK(same_file(own, given));
      memcpy((unsigned char *)expected + f->offset + i * f->stride, &own, 4);
    }
  }
}

static void check_json_names_kind(gpures_handle h, const kind_row *k, uint32_t refcount) {
  char json[4096], needle[96];
  size_t length = 0;
  if (!CHECK_OK(gpures_describe_json(h, json, sizeof json, &length))) return;
  CHECK_EQ(length, strlen(json));
  if (!CHECK(json_valid(json))) fprintf(stderr, "    %s\n", json);
  snprintf(needle, sizeof needle, "{\"kind\":\"%s\",\"kindId\":%u,\"refcount\":%u,", k->name,
           k->id, refcount);
  if (!CHECK(strncmp(json, needle, strlen(needle)) == 0))
    fprintf(stderr, "    %s\n    does not begin with %s\n", json, needle);
}

static void supported_kind_keeps_the_contract(const kind_row *k) {
  unsigned char desc[512], expected[512], out[512];
  uint64_t live_kind = gpures_live_handles(k->id), live_all = gpures_live_handles(0);
  k->fill(desc);
  memcpy(expected, desc, k->desc_size);

  gpures_handle h = 0;
  if (!CHECK_OK(k->create(desc, NULL, &h))) return;
  CHECK(h != 0);
  CHECK(memcmp(desc, expected, k->desc_size) == 0); /* create does not write the caller's desc */
  CHECK_EQ(gpures_live_handles(k->id), live_kind + 1);
  CHECK_EQ(gpures_live_handles(0), live_all + 1);
  uint32_t kind = 0, refcount = 0;
  CHECK_OK(gpures_kind(h, &kind));
  CHECK_EQ(kind, k->id);
  CHECK_OK(gpures_refcount(h, &refcount));
  CHECK_EQ(refcount, 1);

  /* clone gives refcount 2 */
  CHECK_OK(k->clone(h));
  CHECK_OK(gpures_refcount(h, &refcount));
  CHECK_EQ(refcount, 2);

  /* the kind's describe round-trips every field */
  memset(out, 0xa5, sizeof out);
  uint32_t size = (uint32_t)k->desc_size;
  memcpy(out, &size, 4);
  if (CHECK_OK(k->describe(h, out))) {
    expect_owned_fds(k->id, out, expected);
    if (!CHECK(memcmp(out, expected, k->desc_size) == 0))
      fprintf(stderr, "    %s describes back another descriptor\n", k->name);
    CHECK(out[k->desc_size] == 0xa5); /* nothing written past the struct */
  }
  /* and so does the generic describe, into a larger buffer: nothing is written past the struct */
  memset(out, 0xa5, sizeof out);
  if (CHECK_OK(gpures_describe(h, out, (uint32_t)k->desc_size + 16))) {
    CHECK(memcmp(out, expected, k->desc_size) == 0);
    for (size_t i = k->desc_size; i <= k->desc_size + 16; i++) CHECK(out[i] == 0xa5);
  }
  /* a smaller buffer gets the prefix, and struct_size says how much */
  memset(out, 0xa5, sizeof out);
  if (CHECK_OK(gpures_describe(h, out, 8))) {
    uint32_t written;
    memcpy(&written, out, 4);
    CHECK_EQ(written, 8);
    CHECK(memcmp(out + 4, expected + 4, 4) == 0);
    CHECK(out[8] == 0xa5);
  }

  /* another kind's clone/release/describe refuse the handle and leave it alone */
  for (size_t j = 0; j < NUM_KINDS; j++) {
    const kind_row *other = &kinds[j];
    if (other->id == k->id) continue;
    char prefix[64];
    CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", other->clone(h));
    snprintf(prefix, sizeof prefix, "Cannot clone %s: ", other->name);
    CHECK_PREFIX(gpures_last_error(), prefix);
    CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", other->release(h));
    snprintf(prefix, sizeof prefix, "Cannot release %s: ", other->name);
    CHECK_PREFIX(gpures_last_error(), prefix);
    uint32_t other_size = (uint32_t)other->desc_size;
    memcpy(out, &other_size, 4);
    CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", other->describe(h, out));
  }
  CHECK_OK(gpures_refcount(h, &refcount));
  CHECK_EQ(refcount, 2);

  check_json_names_kind(h, k, 2);

  /* release twice; then every use is STALE */
  CHECK_OK(k->release(h));
  CHECK_OK(gpures_refcount(h, &refcount));
  CHECK_EQ(refcount, 1);
  CHECK_OK(k->release(h));
  CHECK_EQ(gpures_live_handles(k->id), live_kind);
  CHECK_EQ(gpures_live_handles(0), live_all);
  CHECK_FAILS(GPURES_E_STALE, "handle", k->release(h));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_release(h));
  CHECK_FAILS(GPURES_E_STALE, "handle", k->clone(h));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_clone(h));
  memcpy(out, &size, 4);
  CHECK_FAILS(GPURES_E_STALE, "handle", k->describe(h, out));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_describe(h, out, size));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_refcount(h, &refcount));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_kind(h, &kind));
  char json[64];
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_describe_json(h, json, sizeof json, NULL));
  CHECK_EQ(gpures_live_handles(k->id), live_kind);
}

static void unsupported_kind_refuses_create(const kind_row *k) {
  unsigned char desc[512];
  uint64_t live_all = gpures_live_handles(0);
  char prefix[96];
  snprintf(prefix, sizeof prefix, "Cannot create %s: ", k->name);
  k->fill(desc);

  gpures_handle h = 123;
  CHECK_FAILS(GPURES_E_UNSUPPORTED_PLATFORM, "", k->create(desc, NULL, &h));
  CHECK_EQ(h, 0);
  CHECK_PREFIX(gpures_last_error(), prefix);
  CHECK(strstr(gpures_last_error(), "platform") != NULL);

  gpures_create_options options = {sizeof options, GPURES_CREATE_TAKE_OWNERSHIP, {0}, 0, 0, 0};
  h = 123;
  CHECK_FAILS(GPURES_E_UNSUPPORTED_PLATFORM, "", k->create(desc, &options, &h));
  CHECK_EQ(h, 0);
  h = 123;
  CHECK_FAILS(GPURES_E_UNSUPPORTED_PLATFORM, "", gpures_create(k->id, desc, NULL, &h));
  CHECK_EQ(h, 0);
  /* the platform is refused before anything in the descriptor is looked at */
  h = 123;
  CHECK_FAILS(GPURES_E_UNSUPPORTED_PLATFORM, "", k->create(NULL, NULL, &h));
  CHECK_EQ(h, 0);
  memset(desc, 0, sizeof desc);
  CHECK_FAILS(GPURES_E_UNSUPPORTED_PLATFORM, "", gpures_create(k->id, desc, NULL, &h));
  CHECK_EQ(gpures_live_handles(k->id), 0);
  CHECK_EQ(gpures_live_handles(0), live_all);

  /* its entry points still refuse other kinds' handles */
  uint32_t size = (uint32_t)k->desc_size;
  memcpy(desc, &size, 4);
  CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", k->clone(bystander));
  CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", k->release(bystander));
  CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", k->describe(bystander, desc));
  bystander_is_intact();
}

static void every_kind_keeps_the_shared_contract(void) {
  for (size_t i = 0; i < NUM_KINDS; i++) {
    int before = atomic_load(&check_failures);
    if (gpures_kind_supported(kinds[i].id))
      supported_kind_keeps_the_contract(&kinds[i]);
    else
      unsupported_kind_refuses_create(&kinds[i]);
    if (atomic_load(&check_failures) != before)
      fprintf(stderr, "    ^ in kind %s\n", kinds[i].name);
  }
  bystander_is_intact();
}

/* ------------------------------------------------------------- rejects */

/*
** One rule of SPEC section 2: a change to a valid descriptor, and what create
** must answer: a status, and the field path gpures_last_error_field() names.
*/
typedef struct reject {
  const char *behaviour;
  void (*mutate)(void *desc);
  int status;
  const char *field;
} reject;

#define MUTATION(snake, label, ...)                 \
  static void snake##__##label(void *p) {          \
    gpures_##snake##_desc *d = p;                  \
    (void)d;                                       \
    __VA_ARGS__;                                   \
  }
#define REJECT(snake, label, status, field) \
  {#snake "_rejects_" #label, snake##__##label, GPURES_E_##status, field}
#define ACCEPT(snake, label) {#snake "_accepts_" #label, snake##__##label, GPURES_OK, ""}

/* An fd number that names nothing: a memfd opened and closed again. */
static int closed_fd(void) {
  int fd = make_memfd(16, 1);
  close(fd);
  return fd;
}

static void run_rejects(uint32_t kind, const reject *rows, size_t n) {
  const kind_row *k = row_of(kind);
  if (!gpures_kind_supported(kind)) return;
  char prefix[96];
  snprintf(prefix, sizeof prefix, "Cannot create %s: ", k->name);
  for (size_t i = 0; i < n; i++) {
    unsigned char desc[512];
    uint64_t live = gpures_live_handles(0);
    int before = atomic_load(&check_failures);
    k->fill(desc);
    rows[i].mutate(desc);
    gpures_handle h = 77;
    if (rows[i].status == GPURES_OK) {
      if (CHECK_OK(k->create(desc, NULL, &h))) CHECK_OK(gpures_release(h));
    } else {
      CHECK_FAILS(rows[i].status, rows[i].field, k->create(desc, NULL, &h));
      CHECK_EQ(h, 0);
      CHECK_PREFIX(gpures_last_error(), prefix);
      CHECK_EQ(gpures_live_handles(0), live);
    }
    if (atomic_load(&check_failures) != before) fprintf(stderr, "    ^ in %s\n", rows[i].behaviour);
  }
  bystander_is_intact();
}
#define RUN_REJECTS(kind, table) run_rejects(kind, table, sizeof table / sizeof table[0])

/* VkImage */
MUTATION(vk_image, image_zero, d->image = 0)
MUTATION(vk_image, width_without_height, d->height = 0)
MUTATION(vk_image, height_without_width, d->width = 0)
MUTATION(vk_image, null_slot_gate, d->slot_release.gate = NULL)
MUTATION(vk_image, unaligned_slot_gate, d->slot_release.gate = (uint64_t *)((char *)&gate + 1))
MUTATION(vk_image, unknown_flag_bits, d->flags |= 1u << 7)
MUTATION(vk_image, no_device_trusted_import, d->device = NULL; d->instance = NULL;
         d->physical_device = NULL; d->flags = 0)
MUTATION(vk_image, no_extent, d->width = 0; d->height = 0)
MUTATION(vk_image, null_gate_without_slot_flag, d->flags &= ~GPURES_HAS_SLOT_RELEASE;
         d->slot_release.gate = NULL)
static void vk_image_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(vk_image, image_zero, NULL_HANDLE, "image"),
    REJECT(vk_image, width_without_height, ZERO_SIZE, "height"),
    REJECT(vk_image, height_without_width, ZERO_SIZE, "width"),
    REJECT(vk_image, null_slot_gate, NULL_POINTER, "slotRelease.gate"),
    REJECT(vk_image, unaligned_slot_gate, INVALID_VALUE, "slotRelease.gate"),
    REJECT(vk_image, unknown_flag_bits, INVALID_VALUE, "flags"),
    ACCEPT(vk_image, no_device_trusted_import),
    ACCEPT(vk_image, no_extent),
    ACCEPT(vk_image, null_gate_without_slot_flag),
  };
  RUN_REJECTS(GPURES_KIND_VK_IMAGE, rows);
}

/* VkBufferHandle */
MUTATION(vk_buffer_handle, buffer_zero, d->buffer = 0)
MUTATION(vk_buffer_handle, size_zero, d->size = 0)
MUTATION(vk_buffer_handle, unknown_flag_bits, d->flags = GPURES_HAS_LUID)
MUTATION(vk_buffer_handle, no_device, d->device = NULL)
static void vk_buffer_handle_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(vk_buffer_handle, buffer_zero, NULL_HANDLE, "buffer"),
    REJECT(vk_buffer_handle, size_zero, ZERO_SIZE, "size"),
    REJECT(vk_buffer_handle, unknown_flag_bits, INVALID_VALUE, "flags"),
    ACCEPT(vk_buffer_handle, no_device),
  };
  RUN_REJECTS(GPURES_KIND_VK_BUFFER_HANDLE, rows);
}

/* VkOpaqueFd */
MUTATION(vk_opaque_fd, negative_fd, d->fd = -1)
MUTATION(vk_opaque_fd, closed_fd, d->fd = closed_fd())
MUTATION(vk_opaque_fd, size_zero, d->size = 0)
MUTATION(vk_opaque_fd, width_zero, d->width = 0)
MUTATION(vk_opaque_fd, height_zero, d->height = 0)
MUTATION(vk_opaque_fd, offset_equal_to_size, d->offset = d->size)
MUTATION(vk_opaque_fd, offset_above_size, d->offset = UINT64_MAX)
MUTATION(vk_opaque_fd, unknown_pixel_format, d->format = 0)
MUTATION(vk_opaque_fd, dedicated_not_a_bool, d->dedicated = 2)
MUTATION(vk_opaque_fd, null_slot_gate, d->slot_release.gate = NULL)
MUTATION(vk_opaque_fd, unknown_flag_bits, d->flags |= GPURES_HAS_LUID)
MUTATION(vk_opaque_fd, offset_just_below_size, d->offset = d->size - 1)
MUTATION(vk_opaque_fd, no_slot_release, d->flags = 0)
static void vk_opaque_fd_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(vk_opaque_fd, negative_fd, INVALID_VALUE, "fd"),
    REJECT(vk_opaque_fd, closed_fd, INVALID_VALUE, "fd"),
    REJECT(vk_opaque_fd, size_zero, ZERO_SIZE, "size"),
    REJECT(vk_opaque_fd, width_zero, ZERO_SIZE, "width"),
    REJECT(vk_opaque_fd, height_zero, ZERO_SIZE, "height"),
    REJECT(vk_opaque_fd, offset_equal_to_size, INVALID_VALUE, "offset"),
    REJECT(vk_opaque_fd, offset_above_size, INVALID_VALUE, "offset"),
    REJECT(vk_opaque_fd, unknown_pixel_format, INVALID_VALUE, "format"),
    REJECT(vk_opaque_fd, dedicated_not_a_bool, INVALID_VALUE, "dedicated"),
    REJECT(vk_opaque_fd, null_slot_gate, NULL_POINTER, "slotRelease.gate"),
    REJECT(vk_opaque_fd, unknown_flag_bits, INVALID_VALUE, "flags"),
    ACCEPT(vk_opaque_fd, offset_just_below_size),
    ACCEPT(vk_opaque_fd, no_slot_release),
  };
  RUN_REJECTS(GPURES_KIND_VK_OPAQUE_FD, rows);
}

/* CudaPtr2D */
MUTATION(cuda_ptr_2d, ptr_zero, d->ptr = 0)
MUTATION(cuda_ptr_2d, row_pitch_zero, d->row_pitch = 0)
MUTATION(cuda_ptr_2d, five_plane_offsets, d->num_plane_byte_offsets = 5)
MUTATION(cuda_ptr_2d, width_without_height, d->height = 0)
MUTATION(cuda_ptr_2d, unknown_flag_bits, d->flags |= GPURES_HAS_SHARE_GROUP)
MUTATION(cuda_ptr_2d, no_plane_offsets_and_no_size_hint, d->num_plane_byte_offsets = 0;
         memset(d->plane_byte_offsets, 0, sizeof d->plane_byte_offsets); d->width = 0;
         d->height = 0)
static void cuda_ptr_2d_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(cuda_ptr_2d, ptr_zero, NULL_HANDLE, "ptr"),
    REJECT(cuda_ptr_2d, row_pitch_zero, ZERO_SIZE, "rowPitch"),
    REJECT(cuda_ptr_2d, five_plane_offsets, INVALID_VALUE, "planeByteOffsets"),
    REJECT(cuda_ptr_2d, width_without_height, ZERO_SIZE, "height"),
    REJECT(cuda_ptr_2d, unknown_flag_bits, INVALID_VALUE, "flags"),
    ACCEPT(cuda_ptr_2d, no_plane_offsets_and_no_size_hint),
  };
  RUN_REJECTS(GPURES_KIND_CUDA_PTR_2D, rows);
}

/* CudaBufferHandle */
MUTATION(cuda_buffer_handle, ptr_zero, d->ptr = 0)
MUTATION(cuda_buffer_handle, size_zero, d->size = 0)
MUTATION(cuda_buffer_handle, unknown_flag_bits, d->flags = 1u << 31)
static void cuda_buffer_handle_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(cuda_buffer_handle, ptr_zero, NULL_HANDLE, "ptr"),
    REJECT(cuda_buffer_handle, size_zero, ZERO_SIZE, "size"),
    REJECT(cuda_buffer_handle, unknown_flag_bits, INVALID_VALUE, "flags"),
  };
  RUN_REJECTS(GPURES_KIND_CUDA_BUFFER_HANDLE, rows);
}

/* CudaSurface */
MUTATION(cuda_surface, surface_zero, d->surface = 0)
MUTATION(cuda_surface, width_zero, d->width = 0)
MUTATION(cuda_surface, height_zero, d->height = 0)
MUTATION(cuda_surface, format_zero, d->format = 0)
MUTATION(cuda_surface, unknown_format, d->format = 102)
MUTATION(cuda_surface, pixel_format_id_as_format, d->format = 0x8058)
MUTATION(cuda_surface, unknown_flag_bits, d->flags |= GPURES_HAS_SLOT_RELEASE)
MUTATION(cuda_surface, rgba16float, d->format = 34)
static void cuda_surface_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(cuda_surface, surface_zero, NULL_HANDLE, "surface"),
    REJECT(cuda_surface, width_zero, ZERO_SIZE, "width"),
    REJECT(cuda_surface, height_zero, ZERO_SIZE, "height"),
    REJECT(cuda_surface, format_zero, INVALID_VALUE, "format"),
    REJECT(cuda_surface, unknown_format, INVALID_VALUE, "format"),
    REJECT(cuda_surface, pixel_format_id_as_format, INVALID_VALUE, "format"),
    REJECT(cuda_surface, unknown_flag_bits, INVALID_VALUE, "flags"),
    ACCEPT(cuda_surface, rgba16float),
  };
  RUN_REJECTS(GPURES_KIND_CUDA_SURFACE, rows);
}

/* OpenClMem */
MUTATION(open_cl_mem, null_mem, d->mem = NULL)
MUTATION(open_cl_mem, null_queue, d->queue = NULL)
MUTATION(open_cl_mem, unknown_flag_bits, d->flags = 1)
static void open_cl_mem_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(open_cl_mem, null_mem, NULL_HANDLE, "mem"),
    REJECT(open_cl_mem, null_queue, NULL_HANDLE, "queue"),
    REJECT(open_cl_mem, unknown_flag_bits, INVALID_VALUE, "flags"),
  };
  RUN_REJECTS(GPURES_KIND_OPEN_CL_MEM, rows);
}

/* GlTextureHandle */
MUTATION(gl_texture_handle, name_zero, d->name = 0)
MUTATION(gl_texture_handle, unknown_target, d->target = 0x1234)
MUTATION(gl_texture_handle, buffer_target_as_texture_target, d->target = GL_ARRAY_BUFFER)
MUTATION(gl_texture_handle, unknown_internal_format, d->internal_format = 0x1908 /* GL_RGBA, unsized */)
MUTATION(gl_texture_handle, unknown_flag_bits, d->flags |= GPURES_HAS_DEVICE_UUID)
MUTATION(gl_texture_handle, unspecified_format_and_current_context, d->internal_format = 0;
         d->context = NULL; d->flags = 0; d->share_group = 0)
MUTATION(gl_texture_handle, cube_map_depth24_stencil8, d->target = 0x8513;
         d->internal_format = 0x88F0)
static void gl_texture_handle_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(gl_texture_handle, name_zero, NULL_HANDLE, "name"),
    REJECT(gl_texture_handle, unknown_target, INVALID_VALUE, "target"),
    REJECT(gl_texture_handle, buffer_target_as_texture_target, INVALID_VALUE, "target"),
    REJECT(gl_texture_handle, unknown_internal_format, INVALID_VALUE, "internalFormat"),
    REJECT(gl_texture_handle, unknown_flag_bits, INVALID_VALUE, "flags"),
    ACCEPT(gl_texture_handle, unspecified_format_and_current_context),
    ACCEPT(gl_texture_handle, cube_map_depth24_stencil8),
  };
  RUN_REJECTS(GPURES_KIND_GL_TEXTURE_HANDLE, rows);
}

/* GlBufferHandle */
MUTATION(gl_buffer_handle, name_zero, d->name = 0)
MUTATION(gl_buffer_handle, size_zero, d->size = 0)
MUTATION(gl_buffer_handle, unknown_target, d->target = 0x1234)
MUTATION(gl_buffer_handle, texture_target_as_buffer_target, d->target = GL_TEXTURE_2D)
MUTATION(gl_buffer_handle, unknown_flag_bits, d->flags = GPURES_HAS_REGISTRY_ID)
MUTATION(gl_buffer_handle, copy_write_buffer, d->target = 0x8F37)
static void gl_buffer_handle_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(gl_buffer_handle, name_zero, NULL_HANDLE, "name"),
    REJECT(gl_buffer_handle, size_zero, ZERO_SIZE, "size"),
    REJECT(gl_buffer_handle, unknown_target, INVALID_VALUE, "target"),
    REJECT(gl_buffer_handle, texture_target_as_buffer_target, INVALID_VALUE, "target"),
    REJECT(gl_buffer_handle, unknown_flag_bits, INVALID_VALUE, "flags"),
    ACCEPT(gl_buffer_handle, copy_write_buffer),
  };
  RUN_REJECTS(GPURES_KIND_GL_BUFFER_HANDLE, rows);
}

/* DmaBufHandle (fill: NV12 64x64, plane 0 in fds[0] of 4096 bytes, plane 1 in fds[1] of 2048) */
MUTATION(dma_buf_handle, negative_fd, d->fds[0] = -1)
MUTATION(dma_buf_handle, negative_second_fd, d->fds[1] = -7)
MUTATION(dma_buf_handle, closed_fd, d->fds[1] = closed_fd())
MUTATION(dma_buf_handle, zero_fds, d->num_fds = 0)
MUTATION(dma_buf_handle, five_fds, d->num_fds = 5)
MUTATION(dma_buf_handle, zero_planes, d->num_planes = 0)
MUTATION(dma_buf_handle, five_planes, d->num_planes = 5)
MUTATION(dma_buf_handle, width_zero, d->width = 0)
MUTATION(dma_buf_handle, height_zero, d->height = 0)
MUTATION(dma_buf_handle, plane_naming_missing_object, d->planes[1].object_index = 2)
MUTATION(dma_buf_handle, plane_naming_object_beyond_one_fd, d->num_fds = 1;
         d->planes[1].object_index = 1)
MUTATION(dma_buf_handle, plane_outside_object, d->planes[1].offset = 2048)
MUTATION(dma_buf_handle, plane_one_byte_past_object_end, d->planes[1].offset = 1)
MUTATION(dma_buf_handle, plane_rows_past_object_end, d->height = 66)
MUTATION(dma_buf_handle, stride_below_row_bytes, d->planes[0].stride = 63)
MUTATION(dma_buf_handle, chroma_stride_below_row_bytes, d->planes[1].stride = 62)
MUTATION(dma_buf_handle, nv12_with_one_plane, d->num_planes = 1)
MUTATION(dma_buf_handle, unknown_fourcc_plane_outside_object, d->fourcc = FOURCC('Z', 'Z', 'Z', 'Z');
         d->planes[1].offset = 2048)
MUTATION(dma_buf_handle, unknown_flag_bits, d->flags = GPURES_HAS_LUID)
MUTATION(dma_buf_handle, both_planes_in_one_object, d->num_fds = 1; d->fds[1] = -1;
         d->planes[1].object_index = 0; d->planes[1].offset = 2048; d->planes[0].stride = 32;
         d->planes[1].stride = 32; d->width = 32; d->height = 64)
MUTATION(dma_buf_handle, tiled_modifier_is_the_drivers_to_check,
         d->modifier = 0x0100000000000001ull; /* I915_FORMAT_MOD_X_TILED */
         d->num_planes = 1; d->planes[0].stride = 1)
MUTATION(dma_buf_handle, unknown_fourcc_with_plane_inside_object,
         d->fourcc = FOURCC('Z', 'Z', 'Z', 'Z'); d->planes[1].offset = 2047)
MUTATION(dma_buf_handle, plane_in_an_object_of_unknown_size, d->fds[1] = pipe_fds[0];
         d->planes[1].offset = 1u << 30)
MUTATION(dma_buf_handle, padded_stride, d->planes[0].stride = 64; d->planes[1].stride = 32;
         d->width = 32; d->height = 32)
static void dma_buf_handle_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(dma_buf_handle, negative_fd, INVALID_VALUE, "fds[0]"),
    REJECT(dma_buf_handle, negative_second_fd, INVALID_VALUE, "fds[1]"),
    REJECT(dma_buf_handle, closed_fd, INVALID_VALUE, "fds[1]"),
    REJECT(dma_buf_handle, zero_fds, INVALID_VALUE, "fds"),
    REJECT(dma_buf_handle, five_fds, INVALID_VALUE, "fds"),
    REJECT(dma_buf_handle, zero_planes, INVALID_VALUE, "planes"),
    REJECT(dma_buf_handle, five_planes, INVALID_VALUE, "planes"),
    REJECT(dma_buf_handle, width_zero, ZERO_SIZE, "width"),
    REJECT(dma_buf_handle, height_zero, ZERO_SIZE, "height"),
    REJECT(dma_buf_handle, plane_naming_missing_object, INVALID_VALUE, "planes[1].objectIndex"),
    REJECT(dma_buf_handle, plane_naming_object_beyond_one_fd, INVALID_VALUE, "planes[1].objectIndex"),
    REJECT(dma_buf_handle, plane_outside_object, INVALID_VALUE, "planes[1].offset"),
    REJECT(dma_buf_handle, plane_one_byte_past_object_end, INVALID_VALUE, "planes[1].offset"),
    REJECT(dma_buf_handle, plane_rows_past_object_end, INVALID_VALUE, "planes[0].offset"),
    REJECT(dma_buf_handle, stride_below_row_bytes, INVALID_VALUE, "planes[0].stride"),
    REJECT(dma_buf_handle, chroma_stride_below_row_bytes, INVALID_VALUE, "planes[1].stride"),
    REJECT(dma_buf_handle, nv12_with_one_plane, INVALID_VALUE, "planes"),
    REJECT(dma_buf_handle, unknown_fourcc_plane_outside_object, INVALID_VALUE, "planes[1].offset"),
    REJECT(dma_buf_handle, unknown_flag_bits, INVALID_VALUE, "flags"),
    ACCEPT(dma_buf_handle, both_planes_in_one_object),
    ACCEPT(dma_buf_handle, tiled_modifier_is_the_drivers_to_check),
    ACCEPT(dma_buf_handle, unknown_fourcc_with_plane_inside_object),
    ACCEPT(dma_buf_handle, padded_stride),
    ACCEPT(dma_buf_handle, plane_in_an_object_of_unknown_size), /* checked only when readable */
  };
  RUN_REJECTS(GPURES_KIND_DMA_BUF_HANDLE, rows);
}

/* VaapiSurface */
MUTATION(vaapi_surface, null_display, d->display = NULL)
MUTATION(vaapi_surface, unknown_flag_bits, d->flags = 2)
MUTATION(vaapi_surface, surface_id_zero, d->surface = 0)
MUTATION(vaapi_surface, surface_id_max, d->surface = UINT32_MAX)
static void vaapi_surface_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(vaapi_surface, null_display, NULL_HANDLE, "display"),
    REJECT(vaapi_surface, unknown_flag_bits, INVALID_VALUE, "flags"),
    ACCEPT(vaapi_surface, surface_id_zero),
    ACCEPT(vaapi_surface, surface_id_max),
  };
  RUN_REJECTS(GPURES_KIND_VAAPI_SURFACE, rows);
}

/* CpuBytes (fill: RgbaU8 64x64, rowPitch 256, 16384 bytes) */
MUTATION(cpu_bytes, null_ptr, d->ptr = NULL)
MUTATION(cpu_bytes, size_zero, d->size = 0)
MUTATION(cpu_bytes, row_pitch_below_row_bytes, d->row_pitch = 255)
MUTATION(cpu_bytes, rows_that_do_not_fit_size, d->size = 256 * 64 - 1)
MUTATION(cpu_bytes, rows_that_do_not_fit_with_padded_pitch, d->row_pitch = 512)
MUTATION(cpu_bytes, width_without_height, d->height = 0)
MUTATION(cpu_bytes, height_without_width, d->width = 0)
MUTATION(cpu_bytes, unknown_pixel_format, d->format = 49)
MUTATION(cpu_bytes, pixel_format_zero, d->format = 0)
MUTATION(cpu_bytes, nv12_frame_one_byte_short, d->format = GPURES_PF_NV12; d->row_pitch = 64;
         d->size = 64 * 64 * 3 / 2 - 1)
MUTATION(cpu_bytes, unknown_flag_bits, d->flags = 1)
MUTATION(cpu_bytes, no_extent, d->width = 0; d->height = 0; d->row_pitch = 0; d->size = 1)
MUTATION(cpu_bytes, exact_frame, d->size = 256 * 64)
MUTATION(cpu_bytes, nv12_exact_frame, d->format = GPURES_PF_NV12; d->row_pitch = 64;
         d->size = 64 * 64 * 3 / 2)
static void cpu_bytes_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(cpu_bytes, null_ptr, NULL_POINTER, "ptr"),
    REJECT(cpu_bytes, size_zero, ZERO_SIZE, "size"),
    REJECT(cpu_bytes, row_pitch_below_row_bytes, INVALID_VALUE, "rowPitch"),
    REJECT(cpu_bytes, rows_that_do_not_fit_size, INVALID_VALUE, "size"),
    REJECT(cpu_bytes, rows_that_do_not_fit_with_padded_pitch, INVALID_VALUE, "size"),
    REJECT(cpu_bytes, width_without_height, ZERO_SIZE, "height"),
    REJECT(cpu_bytes, height_without_width, ZERO_SIZE, "width"),
    REJECT(cpu_bytes, unknown_pixel_format, INVALID_VALUE, "format"),
    REJECT(cpu_bytes, pixel_format_zero, INVALID_VALUE, "format"),
    REJECT(cpu_bytes, nv12_frame_one_byte_short, INVALID_VALUE, "size"),
    REJECT(cpu_bytes, unknown_flag_bits, INVALID_VALUE, "flags"),
    ACCEPT(cpu_bytes, no_extent),
    ACCEPT(cpu_bytes, exact_frame),
    ACCEPT(cpu_bytes, nv12_exact_frame),
  };
  RUN_REJECTS(GPURES_KIND_CPU_BYTES, rows);
}

/* CpuPlanes (fill: NV12 with 2 planes) */
MUTATION(cpu_planes, zero_planes, d->num_planes = 0)
MUTATION(cpu_planes, five_planes, d->num_planes = 5)
MUTATION(cpu_planes, plane_count_not_the_formats, d->num_planes = 1)
MUTATION(cpu_planes, three_planes_for_nv12, d->num_planes = 3;
         d->planes[2] = (gpures_cpu_plane){pixels, 16, 4, 0})
MUTATION(cpu_planes, yuv420p_with_two_planes, d->format = GPURES_PF_YUV420P)
MUTATION(cpu_planes, null_plane_data, d->planes[1].data = NULL)
MUTATION(cpu_planes, zero_size_plane, d->planes[0].size = 0)
MUTATION(cpu_planes, unknown_pixel_format, d->format = 0)
MUTATION(cpu_planes, unknown_flag_bits, d->flags = 1)
MUTATION(cpu_planes, yuva444p10le_with_four_planes, d->format = GPURES_PF_YUVA444P10LE;
         d->num_planes = 4; d->planes[2] = d->planes[1]; d->planes[3] = d->planes[0])
static void cpu_planes_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(cpu_planes, zero_planes, INVALID_VALUE, "planes"),
    REJECT(cpu_planes, five_planes, INVALID_VALUE, "planes"),
    REJECT(cpu_planes, plane_count_not_the_formats, INVALID_VALUE, "planes"),
    REJECT(cpu_planes, three_planes_for_nv12, INVALID_VALUE, "planes"),
    REJECT(cpu_planes, yuv420p_with_two_planes, INVALID_VALUE, "planes"),
    REJECT(cpu_planes, null_plane_data, NULL_POINTER, "planes[1].data"),
    REJECT(cpu_planes, zero_size_plane, ZERO_SIZE, "planes[0].size"),
    REJECT(cpu_planes, unknown_pixel_format, INVALID_VALUE, "format"),
    REJECT(cpu_planes, unknown_flag_bits, INVALID_VALUE, "flags"),
    ACCEPT(cpu_planes, yuva444p10le_with_four_planes),
  };
  RUN_REJECTS(GPURES_KIND_CPU_PLANES, rows);
}

/* CpuSharedSlot */
MUTATION(cpu_shared_slot, size_zero, d->size = 0)
MUTATION(cpu_shared_slot, unknown_pixel_format, d->format = 49)
MUTATION(cpu_shared_slot, unknown_flag_bits, d->flags = 1u << 16)
static void cpu_shared_slot_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(cpu_shared_slot, size_zero, ZERO_SIZE, "size"),
    REJECT(cpu_shared_slot, unknown_pixel_format, INVALID_VALUE, "format"),
    REJECT(cpu_shared_slot, unknown_flag_bits, INVALID_VALUE, "flags"),
  };
  RUN_REJECTS(GPURES_KIND_CPU_SHARED_SLOT, rows);
}

/* WgpuTexture */
MUTATION(wgpu_texture, token_zero, d->token = 0)
MUTATION(wgpu_texture, width_zero, d->width = 0)
MUTATION(wgpu_texture, height_zero, d->height = 0)
MUTATION(wgpu_texture, depth_zero, d->depth_or_array_layers = 0)
MUTATION(wgpu_texture, mip_levels_zero, d->mip_level_count = 0)
MUTATION(wgpu_texture, samples_zero, d->sample_count = 0)
MUTATION(wgpu_texture, unknown_dimension, d->dimension = 4)
MUTATION(wgpu_texture, unknown_format, d->format = 0)
MUTATION(wgpu_texture, unknown_flag_bits, d->flags = 1)
static void wgpu_texture_rejects_what_section_2_rejects(void) {
  static const reject rows[] = {
    REJECT(wgpu_texture, token_zero, NULL_HANDLE, "token"),
    REJECT(wgpu_texture, width_zero, ZERO_SIZE, "width"),
    REJECT(wgpu_texture, height_zero, ZERO_SIZE, "height"),
    REJECT(wgpu_texture, depth_zero, ZERO_SIZE, "depthOrArrayLayers"),
    REJECT(wgpu_texture, mip_levels_zero, ZERO_SIZE, "mipLevelCount"),
    REJECT(wgpu_texture, samples_zero, ZERO_SIZE, "sampleCount"),
    REJECT(wgpu_texture, unknown_dimension, INVALID_VALUE, "dimension"),
    REJECT(wgpu_texture, unknown_format, INVALID_VALUE, "format"),
    REJECT(wgpu_texture, unknown_flag_bits, INVALID_VALUE, "flags"),
  };
  RUN_REJECTS(GPURES_KIND_WGPU_TEXTURE, rows);
}

/* -------------------------------------------------- ABI: struct sizes */

static void every_kind_rejects_struct_size_zero_and_a_set_unknown_tail(void) {
  for (size_t i = 0; i < NUM_KINDS; i++) {
    const kind_row *k = &kinds[i];
    if (!gpures_kind_supported(k->id)) continue;
    int before = atomic_load(&check_failures);
    char prefix[96];
    snprintf(prefix, sizeof prefix, "Cannot create %s: ", k->name);
    unsigned char big[512];
    uint32_t size;
    gpures_handle h = 0;

    memset(big, 0, sizeof big);
    k->fill(big);
    size = 0;
    memcpy(big, &size, 4);
    CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", k->create(big, NULL, &h));
    CHECK_PREFIX(gpures_last_error(), prefix);
    size = 4;
    memcpy(big, &size, 4);
    CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", k->create(big, NULL, &h));

    /* a newer, larger struct whose extra bytes are set: this library cannot honour them */
    memset(big, 0, sizeof big);
    k->fill(big);
    size = (uint32_t)k->desc_size + 24;
    memcpy(big, &size, 4);
    big[k->desc_size + 23] = 1;
    CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", k->create(big, NULL, &h));
    CHECK_PREFIX(gpures_last_error(), prefix);
    CHECK_EQ(h, 0);

    /* the same larger struct with a zero tail is accepted */
    big[k->desc_size + 23] = 0;
    if (CHECK_OK(k->create(big, NULL, &h))) {
      unsigned char out[512];
      uint32_t own = (uint32_t)k->desc_size, written = 0;
      memcpy(out, &own, 4);
      CHECK_OK(k->describe(h, out));
      memcpy(&written, out, 4);
      CHECK_EQ(written, k->desc_size);
      CHECK_OK(gpures_release(h));
    }
    if (atomic_load(&check_failures) != before) fprintf(stderr, "    ^ in kind %s\n", k->name);
  }
  bystander_is_intact();
}

static void older_shorter_struct_reads_missing_fields_as_zero(void) {
  gpures_vk_image_desc d;
  fill_vk_image(&d);
  d.flags = GPURES_HAS_DEVICE_UUID; /* the old struct had no slot release */
  d.struct_size = (uint32_t)offsetof(gpures_vk_image_desc, slot_release);
  d.slot_release.gate = (uint64_t *)(uintptr_t)0xdead; /* beyond struct_size: never read */
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_vk_image_create(&d, NULL, &h))) return;
  gpures_vk_image_desc out;
  out.struct_size = sizeof out;
  CHECK_OK(gpures_vk_image_describe(h, &out));
  CHECK_EQ(out.struct_size, sizeof out);
  CHECK(out.slot_release.gate == NULL);
  CHECK_EQ(out.image, d.image);
  CHECK_OK(gpures_slot_release(h)); /* no slot release: nothing to do */
  CHECK_OK(gpures_release(h));
}

static void create_checks_its_own_arguments(void) {
  gpures_cpu_bytes_desc d;
  fill_cpu_bytes(&d);
  gpures_handle h = 5;
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outHandle", gpures_cpu_bytes_create(&d, NULL, NULL));
  CHECK_PREFIX(gpures_last_error(), "Cannot create CpuBytes: ");
  CHECK_FAILS(GPURES_E_NULL_POINTER, "desc", gpures_cpu_bytes_create(NULL, NULL, &h));
  CHECK_EQ(h, 0);
  CHECK_PREFIX(gpures_last_error(), "Cannot create CpuBytes: ");
  h = 5;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "kind", gpures_create(0, &d, NULL, &h));
  CHECK_EQ(h, 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "kind", gpures_create(21, &d, NULL, &h));
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "kind", gpures_create(UINT32_MAX, &d, NULL, &h));

  gpures_create_options options;
  memset(&options, 0, sizeof options);
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "options.structSize", gpures_cpu_bytes_create(&d, &options, &h));
  options.struct_size = sizeof options;
  options.flags = 1u << 5;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "options.flags", gpures_cpu_bytes_create(&d, &options, &h));
  CHECK_PREFIX(gpures_last_error(), "Cannot create CpuBytes: ");
  /* options whose struct is larger with a zero tail are accepted */
  unsigned char big[sizeof options + 16];
  memset(big, 0, sizeof big);
  options.flags = 0;
  options.struct_size = sizeof big;
  memcpy(big, &options, sizeof options);
  if (CHECK_OK(gpures_cpu_bytes_create(&d, (const gpures_create_options *)(void *)big, &h)))
    CHECK_OK(gpures_release(h));
  big[sizeof big - 1] = 3;
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "options.structSize",
              gpures_cpu_bytes_create(&d, (const gpures_create_options *)(void *)big, &h));
  bystander_is_intact();
}

static void a_success_leaves_the_last_error_alone(void) {
  gpures_cpu_bytes_desc d;
  fill_cpu_bytes(&d);
  d.size = 0;
  gpures_handle h = 0;
  CHECK_FAILS(GPURES_E_ZERO_SIZE, "size", gpures_cpu_bytes_create(&d, NULL, &h));
  char message[512];
  snprintf(message, sizeof message, "%s", gpures_last_error());
  fill_cpu_bytes(&d);
  if (CHECK_OK(gpures_cpu_bytes_create(&d, NULL, &h))) CHECK_OK(gpures_release(h));
  CHECK_STR(gpures_last_error(), message);
  CHECK_STR(gpures_last_error_field(), "size");
  CHECK_EQ(gpures_last_status(), GPURES_E_ZERO_SIZE);
}

static void status_names_and_messages_cover_every_code(void) {
#define STATUS_NAME(code, UPPER, message)              \
  CHECK_STR(gpures_status_name(code), #UPPER);         \
  CHECK_STR(gpures_status_message(code), message);
  GPURES_STATUS_LIST(STATUS_NAME)
#undef STATUS_NAME
  CHECK(gpures_status_name(12) == NULL);
  CHECK(gpures_status_name(-1) == NULL);
  CHECK(gpures_status_message(12) == NULL);
  CHECK_EQ(GPURES_E_OK, GPURES_OK);
  CHECK_EQ(gpures_abi_version(), GPURES_ABI_VERSION);
  CHECK_EQ(gpures_abi_version() >> 16, 1);
}

int main(void) {
  vk_memory_fd = make_memfd(4096, 0);
  luma_fd = make_memfd(4096, 0);
  chroma_fd = make_memfd(2048, 0);
  if (pipe(pipe_fds) != 0) {
    perror("pipe");
    return 1;
  }
  gpures_cpu_bytes_desc d;
  fill_cpu_bytes(&d);
  if (gpures_cpu_bytes_create(&d, NULL, &bystander) != GPURES_OK) {
    fprintf(stderr, "cannot create the bystander handle: %s\n", gpures_last_error());
    return 1;
  }

  RUN(kind_table_matches_the_kind_list);
  RUN(owned_kinds_are_exactly_the_fd_kinds);
  RUN(linux_supports_every_kind_but_d3d_and_metal);
  RUN(every_kind_keeps_the_shared_contract);
  RUN(vk_image_rejects_what_section_2_rejects);
  RUN(vk_buffer_handle_rejects_what_section_2_rejects);
  RUN(vk_opaque_fd_rejects_what_section_2_rejects);
  RUN(cuda_ptr_2d_rejects_what_section_2_rejects);
  RUN(cuda_buffer_handle_rejects_what_section_2_rejects);
  RUN(cuda_surface_rejects_what_section_2_rejects);
  RUN(open_cl_mem_rejects_what_section_2_rejects);
  RUN(gl_texture_handle_rejects_what_section_2_rejects);
  RUN(gl_buffer_handle_rejects_what_section_2_rejects);
  RUN(dma_buf_handle_rejects_what_section_2_rejects);
  RUN(vaapi_surface_rejects_what_section_2_rejects);
  RUN(cpu_bytes_rejects_what_section_2_rejects);
  RUN(cpu_planes_rejects_what_section_2_rejects);
  RUN(cpu_shared_slot_rejects_what_section_2_rejects);
  RUN(wgpu_texture_rejects_what_section_2_rejects);
  RUN(every_kind_rejects_struct_size_zero_and_a_set_unknown_tail);
  RUN(older_shorter_struct_reads_missing_fields_as_zero);
  RUN(create_checks_its_own_arguments);
  RUN(a_success_leaves_the_last_error_alone);
  RUN(status_names_and_messages_cover_every_code);

  CHECK_OK(gpures_release(bystander));
  CHECK_EQ(gpures_live_handles(0), 0);
  close(vk_memory_fd);
  close(luma_fd);
  close(chroma_fd);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  return check_finish("test_variants");
}
