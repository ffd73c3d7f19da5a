/*
** test_windows.c: what only Windows has (SPEC sections 2, 3, 4 and 5). The
** three D3D kinds keep the contract every kind keeps on Linux: create,
** clone, describe, JSON, wrong-kind and stale refusals, keep-alives and event
** queues, clones and releases from native Windows threads. The kinds built
** on POSIX fds (VkOpaqueFd, DmaBufHandle) and VaapiSurface are refused, and a
** refused create leaves the caller's fd open even when asked to adopt it.
** Built and run only for Windows (under Wine in CI).
*/
#include <fcntl.h>
#include <io.h>
#include <windows.h>

#include "check.h"
#include "handles.h"
#include "json_check.h"

/*
** The D3D descriptors are the fixtures' (fixtures.gen.h): addresses above
** 4 GiB and a 4 GiB size, so a 32-bit `long` anywhere on the way would show.
*/

static void check_json(gpures_handle h, const char *expected) {
  char json[512];
  size_t length = 0;
  if (!CHECK_OK(gpures_describe_json(h, json, sizeof json, &length))) return;
  CHECK_EQ(length, strlen(expected));
  CHECK(json_valid(json));
  CHECK_STR(json, expected);
}

/* `out`, zeroed, with struct_size saying its size: for a describe to fill. */
static void *zeroed(void *out, uint32_t size) {
  memset(out, 0, size);
  memcpy(out, &size, sizeof size);
  return out;
}

/* ------------------------------------------------------------ the D3D kinds */

static void windows_is_the_build_os_and_has_the_d3d_kinds(void) {
  CHECK_EQ(gpures_build_os(), GPURES_OS_WINDOWS);
  CHECK_STR(gpures_os_name(1), "windows");
  CHECK_EQ(gpures_kind_supported(GPURES_KIND_D3D11_TEXTURE), 1);
  CHECK_EQ(gpures_kind_supported(GPURES_KIND_D3D12_RESOURCE), 1);
  CHECK_EQ(gpures_kind_supported(GPURES_KIND_D3D12_BUFFER_HANDLE), 1);
  CHECK_EQ(gpures_kind_supported(GPURES_KIND_VK_OPAQUE_FD), 0);
  CHECK_EQ(gpures_kind_supported(GPURES_KIND_DMA_BUF_HANDLE), 0);
  CHECK_EQ(gpures_kind_supported(GPURES_KIND_VAAPI_SURFACE), 0);
  CHECK_EQ(gpures_kind_supported(GPURES_KIND_METAL_TEXTURE_HANDLE), 0);
}

static void d3d11_texture_creates_clones_describes_and_releases(void) {
  uint64_t live = gpures_live_handles(0);
  gpures_d3d11_texture_desc d = gpures_fixture_d3d11_texture(), out;
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_d3d11_texture_create(&d, NULL, &h))) return;
  CHECK(h != 0);
  CHECK_EQ(gpures_live_handles(GPURES_KIND_D3D11_TEXTURE), 1);
  CHECK_EQ(gpures_live_handles(0), live + 1);
  uint32_t kind = 0;
  CHECK_OK(gpures_kind(h, &kind));
  CHECK_EQ(kind, GPURES_KIND_D3D11_TEXTURE);

  CHECK_OK(gpures_d3d11_texture_clone(h));
  CHECK_EQ(refcount_of(h), 2);
  memset(&out, 0xa5, sizeof out);
  out.struct_size = sizeof out;
  if (CHECK_OK(gpures_d3d11_texture_describe(h, &out))) {
    CHECK(memcmp(&out, &d, sizeof d) == 0);
    CHECK(out.texture == (void *)(uintptr_t)0x00007ff612340000ull);
    CHECK_EQ(out.luid.high, -2);
    CHECK_EQ(out.luid.low, 0x80000007u);
  }
  memset(&out, 0, sizeof out);
  CHECK_OK(gpures_describe(h, &out, sizeof out));
  CHECK(memcmp(&out, &d, sizeof d) == 0);
  check_json(h, "{\"kind\":\"D3D11Texture\",\"kindId\":1,\"refcount\":2,"
                "\"texture\":\"0x7ff612340000\",\"luid\":{\"high\":-2,\"low\":2147483655},"
                "\"rowPitch\":7680}");

  CHECK_OK(gpures_d3d11_texture_release(h));
  CHECK_EQ(refcount_of(h), 1);
  CHECK_OK(gpures_release(h));
  CHECK_EQ(gpures_live_handles(GPURES_KIND_D3D11_TEXTURE), 0);
  CHECK_EQ(gpures_live_handles(0), live);
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_d3d11_texture_release(h));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_d3d11_texture_clone(h));
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_d3d11_texture_describe(h, &out));
  char json[64];
  CHECK_FAILS(GPURES_E_STALE, "handle", gpures_describe_json(h, json, sizeof json, NULL));
  CHECK_PREFIX(gpures_last_error(), "Cannot describe D3D11Texture: ");
}

static void d3d12_kinds_create_describe_and_release(void) {
  gpures_d3d12_resource_desc r = gpures_fixture_d3d12_resource(), r_out;
  gpures_handle hr = 0;
  if (CHECK_OK(gpures_d3d12_resource_create(&r, NULL, &hr))) {
    CHECK_OK(gpures_d3d12_resource_describe(hr, zeroed(&r_out, sizeof r_out)));
    CHECK(memcmp(&r_out, &r, sizeof r) == 0);
    check_json(hr, "{\"kind\":\"D3D12Resource\",\"kindId\":2,\"refcount\":1,"
                   "\"resource\":\"0x7ff6abcd0010\",\"luid\":null,\"rowPitch\":256}");
    CHECK_OK(gpures_d3d12_resource_release(hr));
  }
  gpures_d3d12_buffer_handle_desc b = gpures_fixture_d3d12_buffer_handle(), b_out;
  gpures_handle hb = 0;
  if (CHECK_OK(gpures_d3d12_buffer_handle_create(&b, NULL, &hb))) {
    CHECK_OK(gpures_d3d12_buffer_handle_describe(hb, zeroed(&b_out, sizeof b_out)));
    CHECK(memcmp(&b_out, &b, sizeof b) == 0);
    CHECK_EQ(b_out.size, 0x100000000ull);
    check_json(hb, "{\"kind\":\"D3D12BufferHandle\",\"kindId\":3,\"refcount\":1,"
                   "\"resource\":\"0x7ff6abcd0010\",\"luid\":{\"high\":1,\"low\":2},"
                   "\"size\":\"4294967296\"}");
    CHECK_OK(gpures_d3d12_buffer_handle_release(hb));
  }
  CHECK_EQ(gpures_live_handles(0), 0);
}

static void d3d_kinds_reject_what_section_2_rejects(void) {
  gpures_handle h = 5;
  gpures_d3d11_texture_desc t = gpures_fixture_d3d11_texture();
  t.texture = NULL;
  CHECK_FAILS(GPURES_E_NULL_HANDLE, "texture", gpures_d3d11_texture_create(&t, NULL, &h));
  CHECK_PREFIX(gpures_last_error(), "Cannot create D3D11Texture: ");
  CHECK_EQ(h, 0);
  gpures_d3d12_resource_desc r = gpures_fixture_d3d12_resource();
  r.resource = NULL;
  CHECK_FAILS(GPURES_E_NULL_HANDLE, "resource", gpures_d3d12_resource_create(&r, NULL, &h));
  gpures_d3d12_buffer_handle_desc b = gpures_fixture_d3d12_buffer_handle();
  b.size = 0;
  CHECK_FAILS(GPURES_E_ZERO_SIZE, "size", gpures_d3d12_buffer_handle_create(&b, NULL, &h));
  b = gpures_fixture_d3d12_buffer_handle();
  b.resource = NULL;
  CHECK_FAILS(GPURES_E_NULL_HANDLE, "resource", gpures_d3d12_buffer_handle_create(&b, NULL, &h));
  t = gpures_fixture_d3d11_texture();
  t.struct_size = 4;
  CHECK_FAILS(GPURES_E_ABI_MISMATCH, "structSize", gpures_d3d11_texture_create(&t, NULL, &h));
  CHECK_FAILS(GPURES_E_NULL_POINTER, "desc", gpures_d3d11_texture_create(NULL, NULL, &h));
  CHECK_EQ(gpures_live_handles(0), 0);
}

static void other_kinds_entry_points_refuse_a_d3d_handle(void) {
  gpures_d3d11_texture_desc d = gpures_fixture_d3d11_texture();
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_d3d11_texture_create(&d, NULL, &h))) return;
  CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", gpures_d3d12_resource_clone(h));
  CHECK_STR(gpures_last_error(),
            "Cannot clone D3D12Resource: handle is a D3D11Texture, not a D3D12Resource");
  CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", gpures_vk_opaque_fd_release(h));
  gpures_cpu_bytes_desc c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", gpures_cpu_bytes_describe(h, &c));
  int fd = 99;
  CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", gpures_dup_fd(h, 0, &fd));
  CHECK_STR(gpures_last_error(), "Cannot duplicate fd of D3D11Texture: D3D11Texture owns no fds");
  CHECK_EQ(fd, -1);
  CHECK_FAILS(GPURES_E_WRONG_KIND, "handle", gpures_slot_release(h));
  CHECK_EQ(refcount_of(h), 1);
  CHECK_OK(gpures_release(h));
}

/* ------------------------------------------- keep-alives and event queues */

static atomic_int released, consumed;
static void on_release(void *ctx) { (void)ctx; atomic_fetch_add(&released, 1); }
static void on_consumed(void *ctx) { (void)ctx; atomic_fetch_add(&consumed, 1); }

static void d3d_keep_alive_and_event_queue_see_the_last_release_once(void) {
  uint32_t q = 0;
  if (!CHECK_OK(gpures_event_queue_open(&q))) return;
  gpures_create_options o = {.struct_size = sizeof o,
                             .keep_alive = {NULL, on_release, on_consumed},
                             .event_queue = q,
                             .event_token = 0xfeedface12345678ull};
  gpures_d3d12_resource_desc d = gpures_fixture_d3d12_resource();
  gpures_handle h = 0;
  if (CHECK_OK(gpures_d3d12_resource_create(&d, &o, &h))) {
    CHECK_OK(gpures_clone(h));
    CHECK_OK(gpures_mark_consumed(h));
    CHECK_OK(gpures_release(h));
    CHECK_EQ(atomic_load(&released), 0);
    CHECK_OK(gpures_release(h));
    CHECK_EQ(atomic_load(&released), 1);
    CHECK_EQ(atomic_load(&consumed), 1);
    gpures_event events[4];
    uint32_t n = 0;
    CHECK_OK(gpures_event_queue_poll(q, events, 4, &n));
    if (CHECK_EQ(n, 2)) {
      CHECK_EQ(events[0].type, GPURES_EVENT_MARK_CONSUMED);
      CHECK_EQ(events[1].type, GPURES_EVENT_RELEASED);
      CHECK_EQ(events[1].token, 0xfeedface12345678ull);
    }
  }
  CHECK_OK(gpures_event_queue_close(q));
}

/* --------------------------------------------- native Windows threads */

#define THREADS 8
#define ROUNDS 20000

static DWORD WINAPI clone_release_loop(LPVOID arg) {
  gpures_handle h = *(const gpures_handle *)arg;
  for (int i = 0; i < ROUNDS; i++) {
    if (gpures_d3d11_texture_clone(h) != GPURES_OK) atomic_fetch_add(&check_failures, 1);
    if (gpures_d3d11_texture_release(h) != GPURES_OK) atomic_fetch_add(&check_failures, 1);
  }
  return 0;
}

static void win32_threads_clone_and_release_one_d3d_handle(void) {
  atomic_store(&released, 0);
  gpures_create_options o = {.struct_size = sizeof o, .keep_alive = {NULL, on_release, NULL}};
  gpures_d3d11_texture_desc d = gpures_fixture_d3d11_texture();
  gpures_handle h = 0;
  if (!CHECK_OK(gpures_d3d11_texture_create(&d, &o, &h))) return;
  HANDLE threads[THREADS];
  for (int t = 0; t < THREADS; t++) {
    threads[t] = CreateThread(NULL, 0, clone_release_loop, &h, 0, NULL);
    CHECK(threads[t] != NULL);
  }
  CHECK_EQ(WaitForMultipleObjects(THREADS, threads, TRUE, 60000), WAIT_OBJECT_0);
  for (int t = 0; t < THREADS; t++) CloseHandle(threads[t]);
  CHECK_EQ(refcount_of(h), 1);
  CHECK_EQ(atomic_load(&released), 0);
  CHECK_OK(gpures_release(h));
  CHECK_EQ(atomic_load(&released), 1);
}

/* ----------------------------------------------- the POSIX-only kinds */

static void fd_kinds_are_refused_and_leave_the_callers_fd_open(void) {
  int fds[2];
  if (!CHECK(_pipe(fds, 4096, _O_BINARY) == 0)) return;
  gpures_create_options adopt;
  memset(&adopt, 0, sizeof adopt);
  adopt.struct_size = sizeof adopt;
  adopt.flags = GPURES_CREATE_TAKE_OWNERSHIP;

  gpures_vk_opaque_fd_desc v;
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.fd = fds[0];
  v.size = 4096;
  v.width = v.height = 16;
  v.format = GPURES_PF_RGBA_U8;
  gpures_handle h = 3;
  CHECK_FAILS(GPURES_E_UNSUPPORTED_PLATFORM, "", gpures_vk_opaque_fd_create(&v, &adopt, &h));
  CHECK_STR(gpures_last_error(), "Cannot create VkOpaqueFd: VkOpaqueFd does not exist on this platform");
  CHECK_EQ(h, 0);

  gpures_dma_buf_handle_desc b;
  memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  b.num_fds = 1;
  b.fds[0] = fds[0];
  b.fourcc = 0x34325241; /* AR24 */
  b.width = b.height = 16;
  b.num_planes = 1;
  b.planes[0].stride = 64;
  CHECK_FAILS(GPURES_E_UNSUPPORTED_PLATFORM, "", gpures_dma_buf_handle_create(&b, &adopt, &h));
  CHECK_PREFIX(gpures_last_error(), "Cannot create DmaBufHandle: ");
  CHECK_FAILS(GPURES_E_UNSUPPORTED_PLATFORM, "", gpures_dma_buf_handle_create(&b, NULL, &h));

  gpures_vaapi_surface_desc s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.display = (void *)0x1000;
  CHECK_FAILS(GPURES_E_UNSUPPORTED_PLATFORM, "", gpures_vaapi_surface_create(&s, NULL, &h));
  CHECK_PREFIX(gpures_last_error(), "Cannot create VaapiSurface: ");

  /* gpures neither adopted nor closed it: the pipe still carries bytes. */
  char byte = 'g';
  CHECK(_write(fds[1], &byte, 1) == 1);
  byte = 0;
  CHECK(_read(fds[0], &byte, 1) == 1);
  CHECK(byte == 'g');
  CHECK_EQ(gpures_live_handles(0), 0);
  _close(fds[0]);
  _close(fds[1]);
}

int main(void) {
  RUN(windows_is_the_build_os_and_has_the_d3d_kinds);
  RUN(d3d11_texture_creates_clones_describes_and_releases);
  RUN(d3d12_kinds_create_describe_and_release);
  RUN(d3d_kinds_reject_what_section_2_rejects);
  RUN(other_kinds_entry_points_refuse_a_d3d_handle);
  RUN(d3d_keep_alive_and_event_queue_see_the_last_release_once);
  RUN(win32_threads_clone_and_release_one_d3d_handle);
  RUN(fd_kinds_are_refused_and_leave_the_callers_fd_open);
  CHECK_EQ(gpures_live_handles(0), 0);
  return check_finish("test_windows");
}
