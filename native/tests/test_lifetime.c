/*
** test_lifetime.c: keep-alives, mark_consumed, slot release, forged and stale
** handle values, slot reuse and live counts (SPEC sections 4.1, 4.2, 4.3, 4.5).
*/
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>
#if defined(_WIN32) /* an fd to offer VkOpaqueFd, which Windows refuses */
#  include <fcntl.h>
#  include <io.h>
#  define pipe(fds) _pipe((fds), 4096, _O_BINARY)
#endif

#include "check.h"
#include "handles.h"

/* What a keep-alive saw. */
typedef struct probe {
  atomic_int releases;
  atomic_int consumed;
  gpures_handle handle;     /* the handle it keeps alive */
  int handle_was_live;      /* at release: did the handle still answer? */
  uint64_t live_at_release; /* gpures_live_handles(0) inside release */
  gpures_handle chain;      /* a handle to release from inside release, or 0 */
  int chain_status;
} probe;

static void probe_release(void *ctx) {
  probe *p = ctx;
  uint32_t refcount;
  atomic_fetch_add(&p->releases, 1);
  p->handle_was_live = gpures_refcount(p->handle, &refcount) == GPURES_OK;
  p->live_at_release = gpures_live_handles(0);
  if (p->chain) p->chain_status = gpures_release(p->chain);
}

static void probe_mark_consumed(void *ctx) { atomic_fetch_add(&((probe *)ctx)->consumed, 1); }

static gpures_create_options keep_alive_options(probe *p) {
  gpures_create_options o = {.struct_size = sizeof o,
                             .keep_alive = {p, probe_release, probe_mark_consumed}};
  return o;
}

/* A CpuBytes handle of the fixture descriptor whose keep-alive is `p`. */
static gpures_handle probed_cpu_bytes(probe *p) {
  gpures_create_options o = keep_alive_options(p);
  p->handle = new_cpu_bytes(&o);
  return p->handle;
}

/* ---------------------------------------------------------- keep-alive */

static void keep_alive_release_runs_once_after_the_last_clone_is_released(void) {
  probe p = {0};
  gpures_handle h = probed_cpu_bytes(&p);
  for (int i = 0; i < 3; i++) CHECK_OK(gpures_clone(h));
  CHECK_EQ(refcount_of(h), 4);
  for (int i = 0; i < 3; i++) {
    CHECK_OK(gpures_release(h));
    CHECK_EQ(atomic_load(&p.releases), 0);
  }
  CHECK_EQ(refcount_of(h), 1);
  uint64_t live = gpures_live_handles(0);
  CHECK_OK(gpures_release(h));
  CHECK_EQ(atomic_load(&p.releases), 1);
  CHECK(!p.handle_was_live);               /* it ran after the handle died... */
  CHECK_EQ(p.live_at_release, live);       /* ...while the slot was still counted */
  CHECK_EQ(gpures_live_handles(0), live - 1);
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_release(h));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_clone(h));
  CHECK_EQ(atomic_load(&p.releases), 1);
  CHECK_EQ(atomic_load(&p.consumed), 0);
}

static void keep_alive_works_for_every_borrowed_kind_it_is_given_to(void) {
  gpures_gl_texture_handle_desc gl = gpures_fixture_gl_texture_handle();
  gpures_wgpu_texture_desc wgpu = gpures_fixture_wgpu_texture();
  gpures_vk_image_desc vk = gpures_fixture_vk_image();
  gpures_cpu_bytes_desc cpu = gpures_fixture_cpu_bytes();
  struct { uint32_t kind; const void *desc; } cases[] = {
    {GPURES_KIND_GL_TEXTURE_HANDLE, &gl},
    {GPURES_KIND_WGPU_TEXTURE, &wgpu},
    {GPURES_KIND_VK_IMAGE, &vk},
    {GPURES_KIND_CPU_BYTES, &cpu},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    probe p = {0};
    gpures_create_options o = keep_alive_options(&p);
    gpures_handle h = 0;
    if (!CHECK_OK(gpures_create(cases[i].kind, cases[i].desc, &o, &h))) continue;
    p.handle = h;
    CHECK_OK(gpures_clone(h));
    CHECK_OK(gpures_mark_consumed(h));
    CHECK_OK(gpures_release(h));
    CHECK_EQ(atomic_load(&p.releases), 0);
    CHECK_OK(gpures_release(h));
    CHECK_EQ(atomic_load(&p.releases), 1);
    CHECK_EQ(atomic_load(&p.consumed), 1);
  }
}

static void keep_alive_release_may_release_another_handle(void) {
  probe outer = {0}, inner = {0};
  gpures_handle inner_h = probed_cpu_bytes(&inner);
  gpures_handle outer_h = probed_cpu_bytes(&outer);
  outer.chain = inner_h;
  CHECK_OK(gpures_release(outer_h));
  CHECK_EQ(atomic_load(&outer.releases), 1);
  CHECK_EQ(outer.chain_status, GPURES_OK);
  CHECK_EQ(atomic_load(&inner.releases), 1);
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_release(inner_h));
}

static void handle_without_keep_alive_functions_releases_quietly(void) {
  /* a context without functions is never used */
  gpures_create_options o = {.struct_size = sizeof o, .keep_alive = {(void *)0x1, NULL, NULL}};
  gpures_handle h = new_cpu_bytes(&o);
  if (!h) return;
  CHECK_OK(gpures_mark_consumed(h));
  CHECK_OK(gpures_release(h));
}

static void failed_create_never_calls_the_keep_alive(void) {
  probe p = {0};
  gpures_cpu_bytes_desc d = gpures_fixture_cpu_bytes();
  d.row_pitch = 1; /* below the row */
  gpures_create_options o = keep_alive_options(&p);
  gpures_handle h = 0;
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "rowPitch", gpures_cpu_bytes_create(&d, &o, &h));
  o.event_queue = 0xffff; /* fails later in create, after validation */
  d = gpures_fixture_cpu_bytes();
  CHECK_FAILS(GPURES_E_INVALID_VALUE, "options.eventQueue", gpures_cpu_bytes_create(&d, &o, &h));
  CHECK_EQ(atomic_load(&p.releases), 0); /* the producer still owns what ctx names */
  CHECK_EQ(atomic_load(&p.consumed), 0);
}

static void mark_consumed_calls_the_keep_alive_once_per_call(void) {
  probe p = {0};
  gpures_handle h = probed_cpu_bytes(&p);
  for (int i = 1; i <= 5; i++) {
    CHECK_OK(gpures_mark_consumed(h));
    CHECK_EQ(atomic_load(&p.consumed), i);
  }
  CHECK_EQ(atomic_load(&p.releases), 0);
  CHECK_EQ(refcount_of(h), 1); /* marking takes no reference */
  CHECK_OK(gpures_release(h));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_mark_consumed(h));
  CHECK_EQ(atomic_load(&p.consumed), 5);
  CHECK_FAILS(GPURES_E_NULL_HANDLE, "handle", gpures_mark_consumed(0));
}

/* --------------------------------------------------------- slot release */

static void slot_release_stores_the_value_into_the_gate(void) {
  const uint64_t value = 0xFFFFFFFFFFFFFFF0ull;
  gpures_vk_image_desc d = gpures_fixture_vk_image();
  d.slot_release.value = value;
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_vk_image_create(&d, NULL, &h))) return;
  gpures_fixture_gate = 0;
  CHECK_OK(gpures_slot_release(h));
  CHECK_EQ(gpures_fixture_gate, value);
  gpures_fixture_gate = 1; /* the producer reused the slot; a second consumer signals again */
  CHECK_OK(gpures_slot_release(h));
  CHECK_EQ(gpures_fixture_gate, value);
  CHECK_EQ(refcount_of(h), 1);
  CHECK_OK(gpures_release(h));
  gpures_fixture_gate = 2;
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_slot_release(h));
  CHECK_EQ(gpures_fixture_gate, 2);
}

static void vk_opaque_fd_slot_release_stores_the_value_into_the_gate(void) {
  int pipe_fds[2];
  if (!CHECK(pipe(pipe_fds) == 0)) return;
  gpures_vk_opaque_fd_desc d = gpures_fixture_vk_opaque_fd(pipe_fds[0]);
  d.slot_release.value = 42;
  gpures_handle h = 0;
  if (!gpures_kind_supported(GPURES_KIND_VK_OPAQUE_FD)) { /* Windows: refused, gate untouched */
    gpures_fixture_gate = 5;
    CHECK_FAILS(GPURES_E_UNSUPPORTED_PLATFORM, "", gpures_vk_opaque_fd_create(&d, NULL, &h));
    CHECK_EQ(h, 0);
    CHECK_EQ(gpures_fixture_gate, 5);
  } else if (CHECK_OK(gpures_vk_opaque_fd_create(&d, NULL, &h))) {
    gpures_fixture_gate = 0;
    CHECK_OK(gpures_slot_release(h));
    CHECK_EQ(gpures_fixture_gate, 42);
    CHECK_OK(gpures_release(h));
  }
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

static void slot_release_without_a_slot_does_nothing(void) {
  gpures_vk_image_desc d = gpures_fixture_vk_image();
  d.flags &= ~GPURES_HAS_SLOT_RELEASE; /* the gate is ignored: the flag is not set */
  d.slot_release.value = 5;
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_vk_image_create(&d, NULL, &h))) return;
  gpures_fixture_gate = 77;
  CHECK_OK(gpures_slot_release(h));
  CHECK_EQ(gpures_fixture_gate, 77);
  CHECK_OK(gpures_release(h));
}

static void slot_release_of_a_kind_without_slots_is_wrong_kind(void) {
  gpures_handle h = new_cpu_bytes(NULL);
  CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", gpures_slot_release(h));
  CHECK_PREFIX(gpures_last_error(), "Cannot release slot of CpuBytes: ");
  CHECK_EQ(refcount_of(h), 1);
  CHECK_OK(gpures_release(h));
  CHECK_FAILS(GPURES_E_NULL_HANDLE, "handle", gpures_slot_release(0));
}

/* ------------------------------------------------------ forged handles */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void) { /* splitmix64: the same values every run */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Every operation on a value that names no live handle is refused, never followed. */
static void every_operation_refuses(gpures_handle forged, int expected) {
  uint32_t u32;
  int fd = 7;
  char json[256];
  unsigned char desc[256];
  uint32_t size = sizeof desc;
  memcpy(desc, &size, 4);
  int ok = 1;
  ok &= CHECK_STATUS(expected, gpures_clone(forged));
  ok &= CHECK_STATUS(forged ? expected : GPURES_OK, gpures_release(forged)); /* release(0): no-op */
  ok &= CHECK_STATUS(expected, gpures_describe(forged, desc, sizeof desc));
  ok &= CHECK_STATUS(expected, gpures_kind(forged, &u32));
  ok &= CHECK_STATUS(expected, gpures_refcount(forged, &u32));
  ok &= CHECK_STATUS(expected, gpures_describe_json(forged, json, sizeof json, NULL));
  ok &= CHECK_STATUS(expected, gpures_dup_fd(forged, 0, &fd));
  ok &= CHECK_EQ(fd, -1);
  ok &= CHECK_STATUS(expected, gpures_slot_release(forged));
  ok &= CHECK_STATUS(expected, gpures_mark_consumed(forged));
  ok &= CHECK_STATUS(forged ? expected : GPURES_OK, gpures_cpu_bytes_release(forged));
  ok &= CHECK_STATUS(expected, gpures_vk_image_clone(forged));
  ok &= CHECK_STR(gpures_last_error_field(), "handle");
  if (!ok) fprintf(stderr, "    forged handle 0x%016" PRIx64 "\n", forged);
}

static void zero_handle_is_null_handle(void) { every_operation_refuses(0, GPURES_E_NULL_HANDLE); }

static void random_handle_values_are_stale_and_never_crash(void) {
  probe p = {0};
  gpures_handle real[64];
  for (int i = 0; i < 64; i++) real[i] = i == 0 ? probed_cpu_bytes(&p) : new_cpu_bytes(NULL);
  int before = atomic_load(&check_failures);
  for (int n = 0; n < 20000 && atomic_load(&check_failures) == before; n++) {
    uint64_t v = next_random();
    switch (n % 4) {
      case 1: v &= 0x0000000fffffffffull; break; /* small generations */
      case 2: v &= 0x00000003ff000fffull; break; /* and indexes in the first chunk */
      case 3: v = (v & 0xffffffffff000000ull) | (real[n % 64] & 0xffffff); break; /* real slots */
    }
    int is_real = v == 0;
    for (int i = 0; i < 64; i++) is_real |= v == real[i];
    if (!is_real) every_operation_refuses(v, GPURES_E_STALE);
  }
  for (int i = 0; i < 64; i++) {
    CHECK_EQ(refcount_of(real[i]), 1);
    CHECK_OK(gpures_release(real[i]));
  }
  CHECK_EQ(atomic_load(&p.releases), 1);
  CHECK_EQ(atomic_load(&p.consumed), 0);
}

static void neighbouring_generations_of_a_live_handle_are_stale(void) {
  probe p = {0};
  gpures_handle h = probed_cpu_bytes(&p);
  const uint64_t one = 1ull << 32;
  every_operation_refuses(h + one, GPURES_E_STALE);
  every_operation_refuses(h - one, GPURES_E_STALE);
  every_operation_refuses(h & 0xffffffffull, GPURES_E_STALE); /* generation 0 */
  every_operation_refuses(h | 0xffffffff00000000ull, GPURES_E_STALE);
  CHECK_EQ(refcount_of(h), 1);
  CHECK_EQ(atomic_load(&p.releases), 0);
  CHECK_OK(gpures_release(h));
  CHECK_EQ(atomic_load(&p.releases), 1);
}

static void live_handle_with_its_kind_byte_changed_is_stale(void) {
  probe p = {0};
  gpures_handle h = probed_cpu_bytes(&p);
  for (uint64_t kind = 0; kind < 256; kind++) {
    if (kind == GPURES_KIND_CPU_BYTES) continue;
    gpures_handle forged = (h & ~(0xffull << 24)) | (kind << 24);
    every_operation_refuses(forged, GPURES_E_STALE);
    if (!CHECK_EQ(refcount_of(h), 1)) {
      fprintf(stderr, "    the forged kind %u reached the real handle\n", (unsigned)kind);
      break;
    }
  }
  CHECK_EQ(atomic_load(&p.releases), 0);
  /* the kind's own entry point cannot be fooled either */
  gpures_handle as_vk_image = (h & ~(0xffull << 24)) | ((uint64_t)GPURES_KIND_VK_IMAGE << 24);
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_vk_image_release(as_vk_image));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_vk_image_clone(as_vk_image));
  CHECK_EQ(refcount_of(h), 1);
  CHECK_EQ(atomic_load(&p.releases), 0);
  CHECK_OK(gpures_release(h));
  CHECK_EQ(atomic_load(&p.releases), 1);
}

/* ---------------------------------------------------------- slot reuse */

static void reused_slot_is_unreachable_through_the_old_value(void) {
  probe first = {0}, second = {0};
  gpures_handle old = probed_cpu_bytes(&first);
  CHECK_OK(gpures_release(old));
  gpures_handle fresh = probed_cpu_bytes(&second);
  CHECK((fresh & 0xffffff) == (old & 0xffffff)); /* the freed slot is reused at once */
  CHECK(fresh != old);
  every_operation_refuses(old, GPURES_E_STALE);
  CHECK_EQ(refcount_of(fresh), 1);
  CHECK_EQ(atomic_load(&first.releases), 1);
  CHECK_EQ(atomic_load(&second.releases), 0);
  CHECK_EQ(atomic_load(&second.consumed), 0);

  /* many generations of one slot: every old value stays dead */
  gpures_handle olds[1000];
  CHECK_OK(gpures_release(fresh));
  for (int i = 0; i < 1000; i++) {
    olds[i] = new_cpu_bytes(NULL);
    CHECK_OK(gpures_release(olds[i]));
  }
  gpures_handle current = probed_cpu_bytes(&second);
  for (int i = 0; i < 1000; i++) {
    CHECK(olds[i] != current);
    if (!CHECK_STATUS(GPURES_E_STALE, gpures_release(olds[i]))) break;
    if (!CHECK_STATUS(GPURES_E_STALE, gpures_clone(olds[i]))) break;
  }
  CHECK_EQ(refcount_of(current), 1);
  CHECK_OK(gpures_release(current));
  CHECK_EQ(atomic_load(&second.releases), 2);
}

/* -------------------------------------------------------- live counts */

static void live_handles_counts_per_kind_and_in_total(void) {
  uint64_t all = gpures_live_handles(0);
  uint64_t cpu = gpures_live_handles(GPURES_KIND_CPU_BYTES);
  uint64_t vk = gpures_live_handles(GPURES_KIND_VK_IMAGE);
  gpures_handle c[3], v[2];
  for (int i = 0; i < 3; i++) c[i] = new_cpu_bytes(NULL);
  gpures_vk_image_desc d = gpures_fixture_vk_image();
  for (int i = 0; i < 2; i++) CHECK_OK(gpures_vk_image_create(&d, NULL, &v[i]));
  CHECK_EQ(gpures_live_handles(GPURES_KIND_CPU_BYTES), cpu + 3);
  CHECK_EQ(gpures_live_handles(GPURES_KIND_VK_IMAGE), vk + 2);
  CHECK_EQ(gpures_live_handles(0), all + 5);
  CHECK_OK(gpures_clone(c[0])); /* clones are references, not handles */
  CHECK_EQ(gpures_live_handles(GPURES_KIND_CPU_BYTES), cpu + 3);
  CHECK_OK(gpures_release(c[0]));
  CHECK_OK(gpures_release(c[0]));
  CHECK_EQ(gpures_live_handles(GPURES_KIND_CPU_BYTES), cpu + 2);
  CHECK_EQ(gpures_live_handles(0), all + 4);
  CHECK_OK(gpures_release(c[1]));
  CHECK_OK(gpures_release(c[2]));
  CHECK_OK(gpures_release(v[0]));
  CHECK_OK(gpures_release(v[1]));
  CHECK_EQ(gpures_live_handles(GPURES_KIND_CPU_BYTES), cpu);
  CHECK_EQ(gpures_live_handles(GPURES_KIND_VK_IMAGE), vk);
  CHECK_EQ(gpures_live_handles(0), all);
  CHECK_EQ(gpures_live_handles(GPURES_KIND_D3D11_TEXTURE), 0);
  CHECK_EQ(gpures_live_handles(21), 0);
  CHECK_EQ(gpures_live_handles(UINT32_MAX), 0);
}

static void queries_refuse_null_out_pointers(void) {
  gpures_handle h = new_cpu_bytes(NULL);
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outKind", gpures_kind(h, NULL));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outRefcount", gpures_refcount(h, NULL));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "outFd", gpures_dup_fd(h, 0, NULL));
  CHECK_FAILS(GPURES_E_BUFFER_TOO_SMALL, "out", gpures_describe(h, NULL, 64));
  unsigned char small[4];
  CHECK_FAILS(GPURES_E_BUFFER_TOO_SMALL, "out", gpures_describe(h, small, sizeof small));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "out", gpures_cpu_bytes_describe(h, NULL));
  CHECK_EQ(refcount_of(h), 1);
  CHECK_OK(gpures_release(h));
}

int main(void) {
  uint64_t live = gpures_live_handles(0);
  RUN(keep_alive_release_runs_once_after_the_last_clone_is_released);
  RUN(keep_alive_works_for_every_borrowed_kind_it_is_given_to);
  RUN(keep_alive_release_may_release_another_handle);
  RUN(handle_without_keep_alive_functions_releases_quietly);
  RUN(failed_create_never_calls_the_keep_alive);
  RUN(mark_consumed_calls_the_keep_alive_once_per_call);
  RUN(slot_release_stores_the_value_into_the_gate);
  RUN(vk_opaque_fd_slot_release_stores_the_value_into_the_gate);
  RUN(slot_release_without_a_slot_does_nothing);
  RUN(slot_release_of_a_kind_without_slots_is_wrong_kind);
  RUN(zero_handle_is_null_handle);
  RUN(random_handle_values_are_stale_and_never_crash);
  RUN(neighbouring_generations_of_a_live_handle_are_stale);
  RUN(live_handle_with_its_kind_byte_changed_is_stale);
  RUN(reused_slot_is_unreachable_through_the_old_value);
  RUN(live_handles_counts_per_kind_and_in_total);
  RUN(queries_refuse_null_out_pointers);
  CHECK_EQ(gpures_live_handles(0), live);
  return check_finish("test_lifetime");
}
