/* windows.c: Windows has no fd-owning kinds; the lock and the thread-exit hook are real. */
#if defined(_WIN32)
#include <errno.h>
#include <windows.h>

#include "../internal.h"

uint64_t gpures_clock_us(void) {
  LARGE_INTEGER now, hz; /* one counter for the whole system: every process reads the same */
  QueryPerformanceCounter(&now);
  QueryPerformanceFrequency(&hz);
  return (uint64_t)(now.QuadPart / hz.QuadPart) * 1000000u +
         (uint64_t)(now.QuadPart % hz.QuadPart) * 1000000u / (uint64_t)hz.QuadPart;
}

void gpures__lock_acquire(gpures__lock *l) {
  while (atomic_flag_test_and_set_explicit(&l->flag, memory_order_acquire)) SwitchToThread();
}

void gpures__lock_release(gpures__lock *l) {
  atomic_flag_clear_explicit(&l->flag, memory_order_release);
}

/* The fd-owning kinds are refused on Windows before any of these can run. */
int gpures__fd_dup(int fd) { (void)fd; return -1; }
int gpures__fd_adopt(int fd) { (void)fd; return -1; }
void gpures__fd_close(int fd) { (void)fd; }
int gpures__fd_valid(int fd) { (void)fd; return 0; }
int64_t gpures__fd_size(int fd) { (void)fd; return -1; }

/*
** The thread-exit hook: an FLS index whose callback hands the thread's value
** to the caller's at_exit (it runs at thread exit, like a pthread key's
** destructor). Freed when the library is unloaded, which runs the callback
** for every thread still holding a value, instead of leaving it to run at
** their exit in code that is gone.
*/
static INIT_ONCE exit_once = INIT_ONCE_STATIC_INIT;
static DWORD exit_index = FLS_OUT_OF_INDEXES;
static void (*_Atomic exit_fn)(void *value);

static VOID WINAPI on_thread_exit(PVOID value) {
  void (*fn)(void *) = atomic_load_explicit(&exit_fn, memory_order_acquire);
  if (value && fn) fn(value);
}

static BOOL CALLBACK make_exit_index(PINIT_ONCE once, PVOID param, PVOID *ctx) {
  (void)once, (void)param, (void)ctx;
  exit_index = FlsAlloc(on_thread_exit);
  return TRUE;
}

void *gpures__thread_exit_value(void) {
  InitOnceExecuteOnce(&exit_once, make_exit_index, NULL, NULL);
  return exit_index == FLS_OUT_OF_INDEXES ? NULL : FlsGetValue(exit_index);
}

int gpures__thread_exit_value_set(void *value, void (*at_exit)(void *value)) {
  atomic_store_explicit(&exit_fn, at_exit, memory_order_release);
  InitOnceExecuteOnce(&exit_once, make_exit_index, NULL, NULL);
  if (exit_index == FLS_OUT_OF_INDEXES) return EAGAIN; /* the process has no FLS index left */
  return FlsSetValue(exit_index, value) ? 0 : ENOMEM;
}

BOOL WINAPI DllMain(HINSTANCE dll, DWORD reason, LPVOID reserved);
BOOL WINAPI DllMain(HINSTANCE dll, DWORD reason, LPVOID reserved) {
  (void)dll;
  /* reserved is NULL for FreeLibrary; at process exit the threads are gone already. */
  if (reason == DLL_PROCESS_DETACH && reserved == NULL && exit_index != FLS_OUT_OF_INDEXES)
    FlsFree(exit_index);
  return TRUE;
}
#endif
