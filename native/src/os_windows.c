/* os_windows.c: Windows has no fd-owning kinds; only the lock is real. */
#if defined(_WIN32)
#include <windows.h>

#include "internal.h"

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
#endif
