/*
** test_regressions.c: what fuzzing found, kept as tests.
**
** Every input that once broke native/fuzz/fuzz_create.c (a crash, a
** sanitizer report or a broken promise) is kept in native/fuzz/regressions/
** and replayed here through the fuzz target itself, built without libFuzzer;
** each finding also has a test below that states the rule in plain C.
** Add a crash by copying libFuzzer's crash-<sha1> file into that directory
** under a name that says what it broke.
**
** Findings so far (docs/reliability.md has the runs):
**   1. A descriptor whose struct_size ended inside a field (VkImage, 79 bytes:
**      7 of the 8 bytes of slotRelease.gate) was accepted; the missing byte
**      read as zero, and gpures_slot_release() then stored through that half
**      pointer (SEGV). Now create refuses it: ABI_MISMATCH on structSize.
**   2. The same for the options: options.struct_size 20 ended inside
**      keep_alive.release, and the last release called half a function
**      pointer. Now ABI_MISMATCH on options.structSize.
*/
#define _GNU_SOURCE
#include <dirent.h>
#include <stdlib.h>

#include "check.h"
#include "fd_util.h"

/* The fuzz target reports a broken promise as a failed check instead of abort(). */
#define FUZZ_FAIL(...)                                                           \
  do {                                                                           \
    check_report(0, __FILE__, __LINE__, "fuzz_create promise");                  \
    fprintf(stderr, "    ");                                                     \
    fprintf(stderr, __VA_ARGS__);                                                \
    fprintf(stderr, "\n    last error: %s\n", gpures_last_error());              \
  } while (0)
#include "../fuzz/fuzz_create.c"

#ifndef GPURES_FUZZ_REGRESSIONS
#  define GPURES_FUZZ_REGRESSIONS "native/fuzz/regressions"
#endif

static int releases;
static void count_release(void *ctx) {
  (void)ctx;
  releases++;
}

/* ------------------------------------------------ 1: a cut descriptor */

static void a_struct_size_that_ends_inside_a_field_is_refused(void) {
  uint64_t live = gpures_live_handles(0);
  gpures_vk_image_desc d;
  gpures_handle h = 7;
  /* 7 of the 8 bytes of slotRelease.gate: the fuzzer's first crash */
  gpures_fixture_fill_vk_image(&d);
  d.struct_size = (uint32_t)offsetof(gpures_vk_image_desc, slot_release.gate) + 7;
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", gpures_vk_image_create(&d, NULL, &h));
  CHECK_EQ(h, 0);
  CHECK(strstr(gpures_last_error(), "slotRelease.gate") != NULL);
  /* inside the 16 bytes of a UUID, inside a 64-bit value, one byte into a field */
  gpures_fixture_fill_vk_image(&d);
  d.struct_size = (uint32_t)offsetof(gpures_vk_image_desc, device_uuid) + 8;
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", gpures_vk_image_create(&d, NULL, &h));
  d.struct_size = (uint32_t)offsetof(gpures_vk_image_desc, image) + 4;
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", gpures_vk_image_create(&d, NULL, &h));
  d.struct_size = (uint32_t)offsetof(gpures_vk_image_desc, row_pitch) + 1;
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", gpures_vk_image_create(&d, NULL, &h));
  CHECK_EQ(gpures_live_handles(0), live);
  CHECK_EQ(gpures_fixture_gate, 0);
}

static void a_struct_size_that_ends_inside_an_array_is_refused(void) {
  /* DmaBufHandle with one of four fds given: the others would read as 0, stdin */
  int fd = make_memfd(4096, 1);
  gpures_dma_buf_handle_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = (uint32_t)offsetof(gpures_dma_buf_handle_desc, fds[1]);
  d.num_fds = 4;
  d.fds[0] = fd;
  gpures_handle h = 0;
  gpures_create_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = GPURES_CREATE_TAKE_OWNERSHIP;
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", gpures_dma_buf_handle_create(&d, &o, &h));
  CHECK(fd_is_open(0) || fd_is_closed(0)); /* untouched either way */
  CHECK(fd_is_open(fd));
  /* and a cut between two planes */
  d.struct_size = (uint32_t)offsetof(gpures_dma_buf_handle_desc, planes[1]);
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", gpures_dma_buf_handle_create(&d, &o, &h));
  close(fd);
}

static void a_struct_size_that_ends_between_fields_is_still_an_older_struct(void) {
  gpures_vk_image_desc d;
  gpures_fixture_fill_vk_image(&d);
  d.flags = 0; /* the older struct has no slot release */
  d.struct_size = (uint32_t)offsetof(gpures_vk_image_desc, slot_release);
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_vk_image_create(&d, NULL, &h))) return;
  gpures_vk_image_desc out;
  memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  CHECK_OK(gpures_vk_image_describe(h, &out));
  CHECK(out.slot_release.gate == NULL);
  CHECK_OK(gpures_slot_release(h));
  CHECK_OK(gpures_release(h));
  CHECK_EQ(gpures_fixture_gate, 0);
}

/* --------------------------------------------------- 2: cut options */

static void an_options_struct_size_that_ends_inside_a_field_is_refused(void) {
  gpures_cpu_bytes_desc d = gpures_fixture_cpu_bytes();
  gpures_create_options o;
  memset(&o, 0, sizeof o);
  o.keep_alive.release = count_release;
  releases = 0;
  gpures_handle h = 0;
  static const uint32_t cuts[] = {12, 20, 28, 34, 44};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    o.struct_size = cuts[i];
    CHECK_FAILS(GPURES_E_ABI_MISMATCH, "options.structSize", gpures_cpu_bytes_create(&d, &o, &h));
    CHECK_EQ(h, 0);
  }
  /* ending between fields: what is past the end is absent */
  o.struct_size = (uint32_t)offsetof(gpures_create_options, keep_alive.release);
  if (CHECK_OK(gpures_cpu_bytes_create(&d, &o, &h))) CHECK_OK(gpures_release(h));
  CHECK_EQ(releases, 0);
  o.struct_size = (uint32_t)offsetof(gpures_create_options, keep_alive.mark_consumed);
  if (CHECK_OK(gpures_cpu_bytes_create(&d, &o, &h))) CHECK_OK(gpures_release(h));
  CHECK_EQ(releases, 1);
}

/* ------------------------------------------ every saved fuzz input */

static void every_saved_fuzz_input_keeps_every_promise(void) {
  DIR *dir = opendir(GPURES_FUZZ_REGRESSIONS);
  if (!CHECK(dir != NULL)) {
    fprintf(stderr, "    cannot open %s\n", GPURES_FUZZ_REGRESSIONS);
    return;
  }
  int replayed = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", GPURES_FUZZ_REGRESSIONS, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!CHECK(f != NULL)) continue;
    unsigned char data[8192];
    size_t n = fread(data, 1, sizeof data, f);
    fclose(f);
    int before = atomic_load(&check_failures);
    LLVMFuzzerTestOneInput(data, n);
    if (atomic_load(&check_failures) != before) fprintf(stderr, "    ^ replaying %s\n", path);
    replayed++;
  }
  closedir(dir);
  CHECK(replayed >= 3);
  CHECK_EQ(gpures_live_handles(0), 0);
}

int main(void) {
  int fds = count_open_fds();
  RUN(a_struct_size_that_ends_inside_a_field_is_refused);
  RUN(a_struct_size_that_ends_inside_an_array_is_refused);
  RUN(a_struct_size_that_ends_between_fields_is_still_an_older_struct);
  RUN(an_options_struct_size_that_ends_inside_a_field_is_refused);
  RUN(every_saved_fuzz_input_keeps_every_promise);
  fuzz_teardown();
  CHECK_EQ(count_open_fds(), fds);
  CHECK_EQ(gpures_live_handles(0), 0);
  return check_finish("test_regressions");
}
