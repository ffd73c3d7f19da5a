/*
** test_platform.c: platform gating (SPEC sections 2 and 3) on the OS this is
** built for.
**
** At compile time the kind table (GPURES_KIND_LIST) is checked against the
** platforms column of SPEC section 2, written out below once more per OS, for
** the OS the compiler targets (native/src/build_os.h, which kinds.c uses too).
** So compiling this file for a target checks that target's gating without
** running anything there:
**   clang -target x86_64-apple-darwin -fsyntax-only -Inative/include native/tests/test_platform.c
** At run time the library must agree: its build OS, gpures_kind_supported()
** for every kind, and create refusing each absent kind with
** UNSUPPORTED_PLATFORM before it looks at the descriptor.
*/

#include "../src/build_os.h"
#include "check.h"

/* ------------------------------------------------- compile-time checks */

#define K(UPPER) (1ull << GPURES_KIND_##UPPER)

/* SPEC section 2's platforms column, per OS. */
#define PORTABLE                                                                               \
  (K(VK_IMAGE) | K(VK_BUFFER_HANDLE) | K(OPEN_CL_MEM) | K(GL_TEXTURE_HANDLE) |                \
   K(GL_BUFFER_HANDLE) | K(CPU_BYTES) | K(CPU_PLANES) | K(CPU_SHARED_SLOT) | K(WGPU_TEXTURE))
#define D3D (K(D3D11_TEXTURE) | K(D3D12_RESOURCE) | K(D3D12_BUFFER_HANDLE))
#define CUDA (K(CUDA_PTR_2D) | K(CUDA_BUFFER_HANDLE) | K(CUDA_SURFACE))
#define METAL (K(METAL_TEXTURE_HANDLE) | K(METAL_BUFFER_HANDLE))
/* The sync kinds: the portable ones, POSIX fds, and the eventfd and sync_file ones. */
#define SYNC_PORTABLE \
  (K(VK_SEMAPHORE) | K(OPEN_CL_EVENT) | K(GL_SEMAPHORE) | K(GL_SYNC) | K(NOOP_SYNC))
#define SYNC_CUDA (K(CUDA_EVENT) | K(CUDA_CONTEXT_EVENT))
#define SYNC_EVENTFD (K(WGPU_SUBMISSION) | K(WGPU_DEFERRED) | K(CPU_FENCE) | K(SYNC_FILE))
#define SYNC_POSIX (SYNC_PORTABLE | K(VK_SEMAPHORE_FD))
#define EXPECTED_LINUX                                                                      \
  (PORTABLE | K(VK_OPAQUE_FD) | CUDA | K(DMA_BUF_HANDLE) | K(VAAPI_SURFACE) | SYNC_POSIX | \
   SYNC_CUDA | SYNC_EVENTFD | K(DRM_SYNCOBJ) | K(CUDA_VMM_FD)) /* CudaVmmFd: added since SPEC */
#define EXPECTED_WINDOWS \
  (PORTABLE | D3D | CUDA | SYNC_PORTABLE | SYNC_CUDA | K(D3D12_FENCE) | K(D3D11_KEYED_MUTEX))
#define EXPECTED_DARWIN (PORTABLE | K(VK_OPAQUE_FD) | METAL | SYNC_POSIX | K(METAL_EVENT))
#define EXPECTED_ANDROID (PORTABLE | K(VK_OPAQUE_FD) | K(DMA_BUF_HANDLE) | SYNC_POSIX | SYNC_EVENTFD)
#define EXPECTED_OTHER (PORTABLE | K(VK_OPAQUE_FD) | SYNC_POSIX) /* the BSDs, AIX, Solaris, illumos */

#define IS(OS) (GPURES__BUILD_OS == GPURES_OS_##OS)
/* Bits past 31 (the sync kinds): macros, since an enum holds an int. */
#define EXPECTED                                                                             \
  (IS(LINUX)     ? EXPECTED_LINUX                                                            \
   : IS(WINDOWS) ? EXPECTED_WINDOWS                                                          \
   : IS(DARWIN)  ? EXPECTED_DARWIN                                                           \
   : IS(ANDROID) ? EXPECTED_ANDROID                                                          \
                 : EXPECTED_OTHER)
/* The kinds whose platforms in GPURES_EVERY_KIND_LIST include the build OS. */
#define TABLE_BIT(id, UPPER, snake, Name, own, os) | (((os) & GPURES__BUILD_OS) ? K(UPPER) : 0ull)
#define TABLE (0ull GPURES_EVERY_KIND_LIST(TABLE_BIT))
#define ON(UPPER) ((TABLE & K(UPPER)) != 0)

/* What the platform table promises, one by one, so a broken row says which. */
_Static_assert(!IS(WINDOWS) || (ON(D3D11_TEXTURE) && ON(D3D12_RESOURCE) && ON(D3D12_BUFFER_HANDLE)),
               "Windows has the D3D kinds");
_Static_assert(!IS(WINDOWS) || !ON(VK_OPAQUE_FD), "Windows refuses VkOpaqueFd (a POSIX fd)");
_Static_assert(!IS(WINDOWS) || !ON(DMA_BUF_HANDLE), "Windows refuses DmaBufHandle");
_Static_assert(!IS(WINDOWS) || !ON(VAAPI_SURFACE), "Windows refuses VaapiSurface");
_Static_assert(!IS(DARWIN) || (ON(METAL_TEXTURE_HANDLE) && ON(METAL_BUFFER_HANDLE)),
               "macOS has the Metal kinds");
_Static_assert(!IS(DARWIN) || ON(VK_OPAQUE_FD), "macOS has VkOpaqueFd");
_Static_assert(!IS(DARWIN) || !ON(DMA_BUF_HANDLE), "macOS refuses DmaBufHandle");
_Static_assert(!IS(DARWIN) || !ON(VAAPI_SURFACE), "macOS refuses VaapiSurface");
_Static_assert(IS(WINDOWS) == ((TABLE & D3D) == D3D), "D3D exists on Windows only");
_Static_assert(IS(DARWIN) == ((TABLE & METAL) == METAL), "Metal exists on macOS only");
_Static_assert((TABLE & PORTABLE) == PORTABLE, "the portable kinds exist everywhere");
/* And the whole set. */
_Static_assert(TABLE == EXPECTED, "the kind table gates the build OS as SPEC section 2 says (and CudaVmmFd: Linux)");

/* ----------------------------------------------------- run-time checks */

static const char *expected_os_name(void) {
  return IS(LINUX)     ? "linux"
         : IS(WINDOWS) ? "windows"
         : IS(DARWIN)  ? "darwin"
         : IS(ANDROID) ? "android"
                       : NULL;
}

static void library_was_built_for_this_os(void) {
  CHECK_EQ(gpures_build_os(), GPURES__BUILD_OS);
  const char *name = expected_os_name();
  uint32_t bit = 0;
  while (bit < 32 && (1u << bit) != (uint32_t)GPURES__BUILD_OS) bit++;
  if (name) CHECK_STR(gpures_os_name(bit), name);
}

static void supported_kinds_are_the_expected_ones(void) {
  for (uint32_t id = 1; id <= GPURES_KIND_MAX; id++) {
    const gpures_kind_info *info = gpures_kind_info_of(id);
    if (!CHECK(info != NULL)) continue;
    int expected = (EXPECTED >> id) & 1u;
    if (!CHECK_EQ(gpures_kind_supported(id), expected))
      fprintf(stderr, "    kind %s\n", info->name);
    CHECK_EQ((info->platforms & gpures_build_os()) != 0, expected);
  }
  CHECK_EQ(gpures_kind_supported(0), 0);
  CHECK_EQ(gpures_kind_supported(GPURES_KIND_MAX + 1), 0);
}

static void absent_kinds_are_refused_before_their_descriptor_is_read(void) {
  uint64_t live = gpures_live_handles(0);
  for (uint32_t id = 1; id <= GPURES_KIND_MAX; id++) {
    if ((EXPECTED >> id) & 1u) continue;
    const gpures_kind_info *info = gpures_kind_info_of(id);
    unsigned char desc[512];
    memset(desc, 0, sizeof desc);
    memcpy(desc, &info->desc_size, 4); /* otherwise all zero: invalid if it were looked at */
    char message[160];
    snprintf(message, sizeof message, "Cannot create %s: %s does not exist on this platform",
             info->name, info->name);
    gpures_handle h = 7;
    CHECK_FAILS(GPURES_E_UNSUPPORTED_PLATFORM, "", gpures_create(id, desc, NULL, &h));
    CHECK_STR(gpures_last_error(), message);
    CHECK_EQ(h, 0);
    h = 7;
    CHECK_FAILS(GPURES_E_UNSUPPORTED_PLATFORM, "", gpures_create(id, NULL, NULL, &h));
    CHECK_EQ(h, 0);
    CHECK_EQ(gpures_live_handles(id), 0);
  }
  CHECK_EQ(gpures_live_handles(0), live);
}

int main(void) {
  RUN(library_was_built_for_this_os);
  RUN(supported_kinds_are_the_expected_ones);
  RUN(absent_kinds_are_refused_before_their_descriptor_is_read);
  return check_finish("test_platform");
}
