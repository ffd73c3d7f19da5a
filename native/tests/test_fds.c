/*
** test_fds.c: the fds DmaBufHandle and VkOpaqueFd own (SPEC section 4.4):
** duplicate by default, adopt with GPURES_CREATE_TAKE_OWNERSHIP, close on the
** last release exactly once, everything close-on-exec, dup_fd for importers,
** and no fd leaked over many create/release cycles.
**
** This executable defines close() so it can count what the library closes:
** the dynamic linker binds libgpures's close() to it. It forwards to the
** close system call and records every fd number closed and every EBADF.
** The take-ownership tests expect a count of exactly 1, which also proves
** the binding works.
*/
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>

#include "check.h"
#include "fd_util.h"

/* ------------------------------------------------------- close() counting */

#define MAX_TRACKED_FD 4096
static atomic_int closes_of[MAX_TRACKED_FD];
static atomic_int close_ebadf;

/* Visible, so the dynamic linker binds the library's close() here (the build hides symbols). */
__attribute__((visibility("default"))) int close(int fd) {
  long r = syscall(SYS_close, fd);
  if (fd >= 0 && fd < MAX_TRACKED_FD) atomic_fetch_add(&closes_of[fd], 1);
  if (r != 0 && errno == EBADF) atomic_fetch_add(&close_ebadf, 1);
  return (int)r;
}

static void reset_close_counts(void) {
  for (int i = 0; i < MAX_TRACKED_FD; i++) atomic_store(&closes_of[i], 0);
  atomic_store(&close_ebadf, 0);
}

/* -------------------------------------------------------------- helpers */

/* The objects of the DmaBufHandle fixture: NV12 luma, then chroma. */
#define LUMA_BYTES GPURES_FIXTURE_DMA_BUF_HANDLE_FD0_SIZE
#define CHROMA_BYTES GPURES_FIXTURE_DMA_BUF_HANDLE_FD1_SIZE

static gpures_create_options take_ownership(void) {
  gpures_create_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = GPURES_CREATE_TAKE_OWNERSHIP;
  return o;
}

static int handle_fd(gpures_handle h, uint32_t index) {
  gpures_dma_buf_handle_desc d;
  uint32_t kind = 0;
  gpures_kind(h, &kind);
  if (kind == GPURES_KIND_VK_OPAQUE_FD) {
    gpures_vk_opaque_fd_desc v;
    v.struct_size = sizeof v;
    return gpures_vk_opaque_fd_describe(h, &v) == GPURES_OK ? v.fd : -1;
  }
  d.struct_size = sizeof d;
  return gpures_dma_buf_handle_describe(h, &d) == GPURES_OK && index < d.num_fds ? d.fds[index] : -1;
}

/* ------------------------------------------------------------- default */

static void default_create_duplicates_and_leaves_the_callers_fd_open(void) {
  int fd = make_memfd(4096, 0);
  gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle_rgba(fd);
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_dma_buf_handle_create(&d, NULL, &h))) return;
  int own = handle_fd(h, 0);
  CHECK(own >= 0 && own != fd);
  CHECK(same_file(own, fd));
  CHECK(fd_is_cloexec(own));
  CHECK(!fd_is_cloexec(fd)); /* the caller's fd is not touched */
  CHECK_OK(gpures_release(h));
  CHECK(fd_is_closed(own));
  CHECK(fd_is_open(fd));
  close(fd);
}

static void vk_opaque_fd_default_create_duplicates(void) {
  int fd = make_memfd(4096, 0);
  gpures_vk_opaque_fd_desc d = gpures_fixture_vk_opaque_fd(fd);
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_vk_opaque_fd_create(&d, NULL, &h))) return;
  int own = handle_fd(h, 0);
  CHECK(own >= 0 && own != fd);
  CHECK(same_file(own, fd));
  CHECK(fd_is_cloexec(own));
  CHECK_OK(gpures_clone(h));
  CHECK_OK(gpures_release(h));
  CHECK(fd_is_open(own)); /* a clone still holds it */
  CHECK_OK(gpures_release(h));
  CHECK(fd_is_closed(own));
  CHECK(fd_is_open(fd));
  close(fd);
}

/* ------------------------------------------------------ take ownership */

static void take_ownership_adopts_the_fd_and_closes_it_on_the_last_release(void) {
  int fd = make_memfd(4096, 0);
  gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle_rgba(fd);
  gpures_create_options o = take_ownership();
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_dma_buf_handle_create(&d, &o, &h))) return;
  CHECK_EQ(handle_fd(h, 0), fd);
  CHECK(fd_is_cloexec(fd)); /* adopted fds become close-on-exec */
  gpures_dma_buf_handle_desc own;
  own.struct_size = sizeof own;
  CHECK_OK(gpures_dma_buf_handle_describe(h, &own));
  CHECK(own.fds[1] == -1 && own.fds[2] == -1 && own.fds[3] == -1); /* unused entries, not 0 */
  CHECK_OK(gpures_clone(h));
  CHECK_OK(gpures_release(h));
  CHECK(fd_is_open(fd));
  reset_close_counts();
  CHECK_OK(gpures_release(h));
  CHECK(fd_is_closed(fd));
  CHECK_EQ(atomic_load(&closes_of[fd]), 1);
  CHECK_EQ(atomic_load(&closes_of[0]), 0); /* the zeroed fds[1..3] were never stdin's */
  CHECK_EQ(atomic_load(&close_ebadf), 0);
}

static void vk_opaque_fd_take_ownership_adopts_and_closes(void) {
  int fd = make_memfd(4096, 0);
  gpures_vk_opaque_fd_desc d = gpures_fixture_vk_opaque_fd(fd);
  gpures_create_options o = take_ownership();
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_vk_opaque_fd_create(&d, &o, &h))) return;
  CHECK_EQ(handle_fd(h, 0), fd);
  CHECK(fd_is_cloexec(fd));
  CHECK(fd_is_open(fd));
  reset_close_counts();
  CHECK_OK(gpures_release(h));
  CHECK(fd_is_closed(fd));
  CHECK_EQ(atomic_load(&closes_of[fd]), 1);
  CHECK_EQ(atomic_load(&close_ebadf), 0);
}

static void every_fd_a_handle_holds_is_cloexec(void) {
  int a = make_memfd(LUMA_BYTES, 0), b = make_memfd(CHROMA_BYTES, 0), c = make_memfd(4096, 1);
  CHECK(!fd_is_cloexec(a) && !fd_is_cloexec(b) && fd_is_cloexec(c));
  gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle(a, b);
  gpures_create_options o = take_ownership();
  gpures_handle adopted = 0, duplicated = 0;
  if (CHECK_OK(gpures_dma_buf_handle_create(&d, &o, &adopted))) {
    CHECK(fd_is_cloexec(handle_fd(adopted, 0)));
    CHECK(fd_is_cloexec(handle_fd(adopted, 1)));
    CHECK_OK(gpures_release(adopted));
  } else {
    close(a);
    close(b);
  }
  gpures_vk_opaque_fd_desc v = gpures_fixture_vk_opaque_fd(c);
  if (CHECK_OK(gpures_vk_opaque_fd_create(&v, NULL, &duplicated))) {
    CHECK(fd_is_cloexec(handle_fd(duplicated, 0)));
    CHECK_OK(gpures_release(duplicated));
  }
  close(c);
}

static void failing_create_with_take_ownership_leaves_the_callers_fds_open(void) {
  int a = make_memfd(LUMA_BYTES, 0), b = make_memfd(CHROMA_BYTES, 0);
  int before = count_open_fds();
  gpures_create_options o = take_ownership();
  gpures_handle h = 0;
  reset_close_counts();

  gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle(a, b);
  d.planes[1].offset = 4096; /* does not fit object 1 */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "planes[1].offset", gpures_dma_buf_handle_create(&d, &o, &h));
  d = gpures_fixture_dma_buf_handle(a, b);
  d.fds[1] = -1;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "fds[1]", gpures_dma_buf_handle_create(&d, &o, &h));
  d = gpures_fixture_dma_buf_handle(a, b);
  d.width = 0;
  CHECK_FAILS(GPURES_E_ZERO_SIZE, "width", gpures_dma_buf_handle_create(&d, &o, &h));
  d = gpures_fixture_dma_buf_handle(a, b);
  o.event_queue = 0xffff; /* no such queue: fails after the fds were looked at */
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "options.eventQueue", gpures_dma_buf_handle_create(&d, &o, &h));
  o.event_queue = 0;
  gpures_vk_opaque_fd_desc v = gpures_fixture_vk_opaque_fd(a);
  v.offset = v.size;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "offset", gpures_vk_opaque_fd_create(&v, &o, &h));

  CHECK(fd_is_open(a));
  CHECK(fd_is_open(b));
  CHECK(!fd_is_cloexec(a)); /* not even their flags changed */
  CHECK(!fd_is_cloexec(b));
  CHECK_EQ(atomic_load(&closes_of[a]), 0);
  CHECK_EQ(atomic_load(&closes_of[b]), 0);
  CHECK_EQ(count_open_fds(), before);
  CHECK_EQ(gpures_live_handles(GPURES_KIND_DMA_BUF_HANDLE), 0);
  close(a);
  close(b);
}

static void one_fd_named_twice_with_take_ownership_is_closed_exactly_once(void) {
  int fd = make_memfd(8192, 0);
  gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle(fd, fd);
  d.planes[1].offset = 4096;
  gpures_create_options o = take_ownership();
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_dma_buf_handle_create(&d, &o, &h))) {
    close(fd);
    return;
  }
  int first = handle_fd(h, 0), second = handle_fd(h, 1);
  CHECK_EQ(first, fd);        /* the first object adopts it */
  CHECK(second != fd);        /* the second gets a duplicate of its own */
  CHECK(same_file(second, fd));
  CHECK(fd_is_cloexec(second));
  reset_close_counts();
  CHECK_OK(gpures_release(h));
  CHECK(fd_is_closed(fd));
  CHECK(fd_is_closed(second));
  CHECK_EQ(atomic_load(&closes_of[fd]), 1);
  CHECK_EQ(atomic_load(&closes_of[second]), 1);
  CHECK_EQ(atomic_load(&close_ebadf), 0);
}

static void one_fd_named_twice_without_take_ownership_is_duplicated_twice(void) {
  int fd = make_memfd(8192, 0);
  gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle(fd, fd);
  d.planes[1].offset = 4096;
  gpures_handle h = 0;
  if (CHECK_OK(gpures_dma_buf_handle_create(&d, NULL, &h))) {
    int first = handle_fd(h, 0), second = handle_fd(h, 1);
    CHECK(first != fd && second != fd && first != second);
    reset_close_counts();
    CHECK_OK(gpures_release(h));
    CHECK_EQ(atomic_load(&closes_of[first]), 1);
    CHECK_EQ(atomic_load(&closes_of[second]), 1);
    CHECK_EQ(atomic_load(&close_ebadf), 0);
  }
  CHECK(fd_is_open(fd));
  close(fd);
}

/* --------------------------------------------------------------- dup_fd */

static void dup_fd_returns_a_fresh_cloexec_fd_of_the_same_file(void) {
  int a = make_memfd(LUMA_BYTES, 0), b = make_memfd(CHROMA_BYTES, 0);
  gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle(a, b);
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_dma_buf_handle_create(&d, NULL, &h))) return;
  for (uint32_t i = 0; i < 2; i++) {
    int dup = -1;
    if (!CHECK_OK(gpures_dup_fd(h, i, &dup))) continue;
    CHECK(dup != handle_fd(h, i));
    CHECK(dup != (i ? b : a));
    CHECK(same_file(dup, i ? b : a));
    CHECK(fd_is_cloexec(dup));
    close(dup); /* the caller owns it: closing it leaves the handle's fd open */
    CHECK(fd_is_open(handle_fd(h, i)));
  }
  int dup = 123;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "index", gpures_dup_fd(h, 2, &dup));
  CHECK_EQ(dup, -1);
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "index", gpures_dup_fd(h, UINT32_MAX, &dup));
  CHECK_PREFIX(gpures_last_error(), "Cannot duplicate fd of DmaBufHandle: ");

  /* a dup outlives the handle */
  CHECK_OK(gpures_dup_fd(h, 0, &dup));
  CHECK_OK(gpures_release(h));
  CHECK(fd_is_open(dup));
  CHECK(same_file(dup, a));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_dup_fd(h, 0, &dup));
  CHECK_EQ(dup, -1);
  close(a);
  close(b);
}

static void dup_fd_of_vk_opaque_fd_has_one_index(void) {
  int fd = make_memfd(4096, 0);
  gpures_vk_opaque_fd_desc v = gpures_fixture_vk_opaque_fd(fd);
  gpures_handle h = 0;
  if (CHECK_OK(gpures_vk_opaque_fd_create(&v, NULL, &h))) {
    int dup = -1;
    if (CHECK_OK(gpures_dup_fd(h, 0, &dup))) {
      CHECK(same_file(dup, fd));
      CHECK(fd_is_cloexec(dup));
      close(dup);
    }
    CHECK_FAILS(GPURES_E_INVALID_VALUE, "index", gpures_dup_fd(h, 1, &dup));
    CHECK_OK(gpures_release(h));
  }
  close(fd);
}

static void dup_fd_of_a_kind_without_fds_is_wrong_kind(void) {
  gpures_cpu_bytes_desc d = gpures_fixture_cpu_bytes();
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_cpu_bytes_create(&d, NULL, &h))) return;
  int dup = 5;
  CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", gpures_dup_fd(h, 0, &dup));
  CHECK_EQ(dup, -1);
  CHECK_OK(gpures_release(h));
}

/* ---------------------------------------------------------------- leaks */

static void ten_thousand_cycles_leak_no_fd(void) {
  int a = make_memfd(LUMA_BYTES, 0), b = make_memfd(CHROMA_BYTES, 0);
  int before = count_open_fds();
  int ok = 1;
  for (int i = 0; i < 10000 && ok; i++) {
    gpures_handle h = 0;
    gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle(a, b);
    ok &= CHECK_OK(gpures_dma_buf_handle_create(&d, NULL, &h));
    ok &= CHECK_OK(gpures_clone(h));
    ok &= CHECK_OK(gpures_release(h));
    ok &= CHECK_OK(gpures_release(h));
  }
  CHECK_EQ(count_open_fds(), before);
  for (int i = 0; i < 10000 && ok; i++) {
    gpures_handle h = 0;
    gpures_vk_opaque_fd_desc v = gpures_fixture_vk_opaque_fd(a);
    ok &= CHECK_OK(gpures_vk_opaque_fd_create(&v, NULL, &h));
    ok &= CHECK_OK(gpures_release(h));
  }
  CHECK_EQ(count_open_fds(), before);
  /* adopting: each cycle hands over a fresh dup, and gets it closed */
  gpures_create_options o = take_ownership();
  for (int i = 0; i < 10000 && ok; i++) {
    gpures_handle h = 0;
    gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle(dup(a), dup(b));
    ok &= CHECK_OK(gpures_dma_buf_handle_create(&d, &o, &h));
    ok &= CHECK_OK(gpures_release(h));
    gpures_vk_opaque_fd_desc v = gpures_fixture_vk_opaque_fd(dup(a));
    ok &= CHECK_OK(gpures_vk_opaque_fd_create(&v, &o, &h));
    ok &= CHECK_OK(gpures_release(h));
  }
  CHECK_EQ(count_open_fds(), before);
  /* and failing creates leak nothing either */
  for (int i = 0; i < 10000 && ok; i++) {
    gpures_handle h = 0;
    gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle(a, b);
    d.planes[1].offset = 1; /* one byte too far */
    ok &= CHECK_STATUS(GPURES_E_INVALID_VALUE, gpures_dma_buf_handle_create(&d, NULL, &h));
  }
  CHECK_EQ(count_open_fds(), before);
  CHECK_EQ(gpures_live_handles(0), 0);
  close(a);
  close(b);
}

int main(void) {
  RUN(default_create_duplicates_and_leaves_the_callers_fd_open);
  RUN(vk_opaque_fd_default_create_duplicates);
  RUN(take_ownership_adopts_the_fd_and_closes_it_on_the_last_release);
  RUN(vk_opaque_fd_take_ownership_adopts_and_closes);
  RUN(every_fd_a_handle_holds_is_cloexec);
  RUN(failing_create_with_take_ownership_leaves_the_callers_fds_open);
  RUN(one_fd_named_twice_with_take_ownership_is_closed_exactly_once);
  RUN(one_fd_named_twice_without_take_ownership_is_duplicated_twice);
  RUN(dup_fd_returns_a_fresh_cloexec_fd_of_the_same_file);
  RUN(dup_fd_of_vk_opaque_fd_has_one_index);
  RUN(dup_fd_of_a_kind_without_fds_is_wrong_kind);
  RUN(ten_thousand_cycles_leak_no_fd);
  return check_finish("test_fds");
}
