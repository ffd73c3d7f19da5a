/*
** pin.c: keeps the library mapped for the life of the process. A host may
** close it while a thread is still inside (a JavaScript isolate that ends
** closes its libraries, and its waits on helper threads may still run; the
** session service thread sleeps in poll()): without this that thread would
** return into memory that is gone. Linux builds also link with -z nodelete;
** this covers every other platform, and builds that do not.
*/
#if !defined(_WIN32)
#define _GNU_SOURCE /* dladdr, RTLD_NODELETE: glibc and musl show them on request */
#endif
#if defined(__APPLE__)
#define _DARWIN_C_SOURCE
#endif
#include "../internal.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#endif

void gpures__pin_library(void) {
  static atomic_flag pinned = ATOMIC_FLAG_INIT;
  if (atomic_flag_test_and_set(&pinned)) return;
#if defined(_WIN32)
  HMODULE self;
  (void)GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_PIN,
                           (LPCWSTR)(void *)gpures__pin_library, &self);
#elif defined(RTLD_NODELETE)
  Dl_info self;
  /* Opening ourselves again with RTLD_NODELETE marks the loaded object as never unloaded. */
  if (dladdr((void *)gpures__pin_library, &self) && self.dli_fname)
    (void)dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
#endif
#if !defined(_WIN32)
  gpures__watch_forks(); /* now that no fork() can call into unmapped code (macOS; elsewhere done at load) */
#endif
}
