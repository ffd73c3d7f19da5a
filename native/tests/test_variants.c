/*
** test_variants.c: the contract every one of the twenty kinds keeps, and what
** each kind refuses at create (SPEC sections 2, 4.1, 4.2, 5, 6 and 7).
**
** The kinds are walked with GPURES_KIND_LIST: one row per kind holds the
** kind's own create/clone/describe/release entry points. Each kind's valid
** descriptor and the changes create must refuse (or still accept) come from
** fixtures.gen.h, which tools/gen_fixtures.ts writes from tools/fixtures.ts,
** the same fixtures the Deno tests use; a kind added to the list without
** fixtures fails the generator.
*/
#define _GNU_SOURCE
#include <stdlib.h>

#include "check.h"
#include "fd_util.h"
#include "fixtures.gen.h"
#include "json_check.h"

/* The fds each kind's fixtures name: memfds (not close-on-exec), a pipe's read end. */
static int kind_fds[GPURES_KIND_MAX + 1][GPURES_FIXTURE_MAX_FDS];

/* ------------------------------------------------------- the kind table */

typedef struct kind_row {
  uint32_t id;
  const char *name;
  const char *snake;
  uint32_t ownership;
  uint32_t platforms;
  size_t desc_size;
  int (*create)(const void *desc, const gpures_create_options *options, gpures_handle *out);
  int (*clone)(gpures_handle h);
  int (*describe)(gpures_handle h, void *out);
  int (*release)(gpures_handle h);
} kind_row;

#define KIND_ADAPTERS(id, UPPER, snake, Name, own, os)                                        \
  static int snake##_create(const void *d, const gpures_create_options *o, gpures_handle *h) { \
    return gpures_##snake##_create(d, o, h);                                                   \
  }                                                                                            \
  static int snake##_describe(gpures_handle h, void *out) {                                    \
    return gpures_##snake##_describe(h, out);                                                  \
  }
GPURES_EVERY_KIND_LIST(KIND_ADAPTERS)
#undef KIND_ADAPTERS

static const kind_row kinds[GPURES_KIND_MAX] = {
#define KIND_ROW(id, UPPER, snake, Name, own, os)                                             \
  [id - 1] = {id, #Name, #snake, GPURES_##own, (os), sizeof(gpures_##snake##_desc), snake##_create, \
   gpures_##snake##_clone, snake##_describe, gpures_##snake##_release},
    GPURES_EVERY_KIND_LIST(KIND_ROW)
#undef KIND_ROW
};
#define NUM_KINDS (sizeof kinds / sizeof kinds[0])

static const kind_row *row_of(uint32_t kind) { return &kinds[kind - 1]; }

/* Writes k's valid descriptor into desc. */
static void fill(const kind_row *k, void *desc) { gpures_fixture_fill(k->id, desc, kind_fds[k->id]); }

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
  CHECK_EQ(count, 37);
  CHECK_EQ(NUM_KINDS, 37);
  CHECK_EQ(GPURES_RESOURCE_KIND_MAX, 21); /* 1..20 and 37 */
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
    /* The resource kinds, then the sync kinds (SyncPoints). */
    int sync = 0;
#define SYNC_ID(sync_id, ...) sync |= k->id == sync_id;
    GPURES_SYNC_KIND_LIST(SYNC_ID)
#undef SYNC_ID
    CHECK_EQ(table[i].family, sync ? GPURES_FAMILY_SYNC : GPURES_FAMILY_RESOURCE);
  }
  CHECK(gpures_kind_info_of(0) == NULL);
  CHECK(gpures_kind_info_of(38) == NULL);
  CHECK(gpures_kind_fields(38, NULL) == NULL);
}

static void owned_kinds_are_exactly_the_fd_kinds(void) {
  for (size_t i = 0; i < NUM_KINDS; i++) {
    uint32_t id = kinds[i].id;
    int owns = id == GPURES_KIND_VK_OPAQUE_FD || id == GPURES_KIND_DMA_BUF_HANDLE ||
               id == GPURES_KIND_CUDA_VMM_FD ||
               id == GPURES_KIND_VK_SEMAPHORE_FD || id == GPURES_KIND_WGPU_SUBMISSION ||
               id == GPURES_KIND_WGPU_DEFERRED || id == GPURES_KIND_CPU_FENCE ||
               id == GPURES_KIND_SYNC_FILE || id == GPURES_KIND_DRM_SYNCOBJ;
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
                 id == GPURES_KIND_METAL_BUFFER_HANDLE || id == GPURES_KIND_D3D12_FENCE ||
                 id == GPURES_KIND_D3D11_KEYED_MUTEX || id == GPURES_KIND_METAL_EVENT;
    if (!CHECK_EQ(gpures_kind_supported(id), absent ? 0 : 1))
      fprintf(stderr, "    kind %s\n", kinds[i].name);
  }
#endif
  for (size_t i = 0; i < NUM_KINDS; i++)
    CHECK_EQ(gpures_kind_supported(kinds[i].id),
             (kinds[i].platforms & gpures_build_os()) ? 1 : 0);
  CHECK_EQ(gpures_kind_supported(0), 0);
  CHECK_EQ(gpures_kind_supported(38), 0);
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
  uint32_t num_fields = 0;
  (void)gpures_kind_fields(k->id, &num_fields);
  snprintf(needle, sizeof needle, "{\"kind\":\"%s\",\"kindId\":%u,\"refcount\":%u%s", k->name,
           k->id, refcount, num_fields ? "," : "}"); /* NoopSync has no fields */
  if (!CHECK(strncmp(json, needle, strlen(needle)) == 0))
    fprintf(stderr, "    %s\n    does not begin with %s\n", json, needle);
}

static void supported_kind_keeps_the_contract(const kind_row *k) {
  unsigned char desc[512], expected[512], out[512];
  uint64_t live_kind = gpures_live_handles(k->id), live_all = gpures_live_handles(0);
  fill(k, desc);
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
  fill(k, desc);

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
** Every change of fixtures.gen.h: a change to a kind's valid descriptor (one
** rule of SPEC section 2, or a case the rule must still accept), and what
** create must answer: a status, and the field path gpures_last_error_field()
** names.
*/
static void every_kind_rejects_what_section_2_rejects(void) {
  uint32_t runs[GPURES_KIND_MAX + 1] = {0};
  for (size_t i = 0; i < GPURES_FIXTURE_NUM_CHANGES; i++) {
    const gpures_fixture_change *c = &gpures_fixture_changes[i];
    const kind_row *k = row_of(c->kind);
    if (!gpures_kind_supported(c->kind)) continue;
    char prefix[96];
    snprintf(prefix, sizeof prefix, "Cannot create %s: ", k->name);
    unsigned char desc[512];
    uint64_t live = gpures_live_handles(0);
    int before = atomic_load(&check_failures);
    fill(k, desc);
    c->apply(desc, kind_fds[c->kind]);
    gpures_handle h = 77;
    if (c->status == GPURES_OK) {
      if (CHECK_OK(k->create(desc, NULL, &h))) CHECK_OK(gpures_release(h));
    } else {
      CHECK_FAILS(c->status, c->field, k->create(desc, NULL, &h));
      CHECK_EQ(h, 0);
      CHECK_PREFIX(gpures_last_error(), prefix);
      CHECK_EQ(gpures_live_handles(0), live);
    }
    if (atomic_load(&check_failures) != before)
      fprintf(stderr, "    ^ in %s.create() %s %s\n", k->name,
              c->status == GPURES_OK ? "accepts" : "rejects", c->what);
    runs[c->kind]++;
  }
  /* every supported kind has rejections to run */
  for (size_t i = 0; i < NUM_KINDS; i++)
    if (gpures_kind_supported(kinds[i].id) && !CHECK(runs[kinds[i].id] >= 1))
      fprintf(stderr, "    kind %s has no changes\n", kinds[i].name);
  bystander_is_intact();
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
    fill(k, big);
    size = 0;
    memcpy(big, &size, 4);
    CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", k->create(big, NULL, &h));
    CHECK_PREFIX(gpures_last_error(), prefix);
    size = 4;
    memcpy(big, &size, 4);
    CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", k->create(big, NULL, &h));

    /* a newer, larger struct whose extra bytes are set: this library cannot honour them */
    memset(big, 0, sizeof big);
    fill(k, big);
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
  gpures_vk_image_desc d = gpures_fixture_vk_image();
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

/* CudaVmmFd keeps VkOpaqueFd's layout: its reserved words hold nothing, so a set one is refused. */
static void cuda_vmm_fd_refuses_reserved_words(void) {
  int fd = kind_fds[GPURES_KIND_CUDA_VMM_FD][0];
  gpures_cuda_vmm_fd_desc d = gpures_fixture_cuda_vmm_fd(fd);
  gpures_handle h = 0;
  d.reserved0 = 1;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "reserved0", gpures_cuda_vmm_fd_create(&d, NULL, &h));
  d.reserved0 = 0, d.reserved1 = 2;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "reserved1", gpures_cuda_vmm_fd_create(&d, NULL, &h));
  d.reserved1 = 0, d.reserved = 3;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "reserved", gpures_cuda_vmm_fd_create(&d, NULL, &h));
  CHECK_EQ(h, 0);
  d.reserved = 0;
  CHECK_OK(gpures_cuda_vmm_fd_create(&d, NULL, &h));
  CHECK_OK(gpures_release(h));
}

static void create_checks_its_own_arguments(void) {
  gpures_cpu_bytes_desc d = gpures_fixture_cpu_bytes();
  gpures_handle h = 5;
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outHandle", gpures_cpu_bytes_create(&d, NULL, NULL));
  CHECK_PREFIX(gpures_last_error(), "Cannot create CpuBytes: ");
  CHECK_FAILS(GPURES_E_NULL_POINTER, "desc", gpures_cpu_bytes_create(NULL, NULL, &h));
  CHECK_EQ(h, 0);
  CHECK_PREFIX(gpures_last_error(), "Cannot create CpuBytes: ");
  h = 5;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "kind", gpures_create(0, &d, NULL, &h));
  CHECK_EQ(h, 0);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "kind", gpures_create(38, &d, NULL, &h));
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
  gpures_cpu_bytes_desc d = gpures_fixture_cpu_bytes();
  d.size = 0;
  gpures_handle h = 0;
  CHECK_FAILS(GPURES_E_ZERO_SIZE, "size", gpures_cpu_bytes_create(&d, NULL, &h));
  char message[512];
  snprintf(message, sizeof message, "%s", gpures_last_error());
  d = gpures_fixture_cpu_bytes();
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
  CHECK(gpures_status_name(17) == NULL);
  CHECK(gpures_status_name(-1) == NULL);
  CHECK(gpures_status_message(17) == NULL);
  CHECK_EQ(GPURES_E_OK, GPURES_OK);
  CHECK_EQ(gpures_abi_version(), GPURES_ABI_VERSION);
  CHECK_EQ(gpures_abi_version() >> 16, 1);
}

int main(void) {
  for (uint32_t kind = 1; kind <= GPURES_KIND_MAX; kind++) {
    uint32_t n = gpures_fixture_open_fds(kind, kind_fds[kind], 0);
    for (uint32_t i = 0; i < n; i++)
      if (kind_fds[kind][i] < 0) {
        perror("memfd_create/pipe");
        return 1;
      }
  }
  gpures_cpu_bytes_desc d = gpures_fixture_cpu_bytes();
  if (gpures_cpu_bytes_create(&d, NULL, &bystander) != GPURES_OK) {
    fprintf(stderr, "cannot create the bystander handle: %s\n", gpures_last_error());
    return 1;
  }

  RUN(kind_table_matches_the_kind_list);
  RUN(owned_kinds_are_exactly_the_fd_kinds);
  RUN(linux_supports_every_kind_but_d3d_and_metal);
  RUN(every_kind_keeps_the_shared_contract);
  RUN(every_kind_rejects_what_section_2_rejects);
  RUN(every_kind_rejects_struct_size_zero_and_a_set_unknown_tail);
  RUN(older_shorter_struct_reads_missing_fields_as_zero);
  RUN(cuda_vmm_fd_refuses_reserved_words);
  RUN(create_checks_its_own_arguments);
  RUN(a_success_leaves_the_last_error_alone);
  RUN(status_names_and_messages_cover_every_code);

  CHECK_OK(gpures_release(bystander));
  CHECK_EQ(gpures_live_handles(0), 0);
  for (uint32_t kind = 1; kind <= GPURES_KIND_MAX; kind++) gpures_fixture_close_fds(kind, kind_fds[kind]);
  return check_finish("test_variants");
}
