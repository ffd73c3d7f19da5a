/*
** worker.c: a background thread of the library that starts with its first job
** and ends when it has none (the session service thread, the sync waiter
** thread): its wake pipe, its start and its join. The owner's lock guards the
** struct; the thread sleeps in poll() with the pipe's read end in its set.
*/
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "../internal.h"

int gpures__worker_start(gpures__op op, gpures__worker *w, void *(*run)(void *)) {
  if (w->wake[0] < 0) {
    if (pipe(w->wake) != 0) return gpures__os_fail(op, "", "pipe()", errno);
    for (int i = 0; i < 2; i++) {
      (void)fcntl(w->wake[i], F_SETFD, FD_CLOEXEC);
      (void)fcntl(w->wake[i], F_SETFL, O_NONBLOCK);
    }
  }
  if (w->running) return GPURES_OK;
  gpures__pin_library(); /* the thread must never return into an unmapped library */
  if (w->started) pthread_join(w->thread, NULL); /* the last one ended; reap it */
  int err = pthread_create(&w->thread, NULL, run, NULL);
  w->started = err == 0;
  if (err) return gpures__os_fail(op, "", "pthread_create()", err);
  w->running = true;
  return GPURES_OK;
}

void gpures__worker_wake(gpures__worker *w) {
  if (w->wake[1] >= 0) (void)!write(w->wake[1], "", 1);
}

void gpures__worker_drain(gpures__worker *w) {
  char buf[64];
  while (read(w->wake[0], buf, sizeof buf) > 0) {}
}

void gpures__worker_forget_fork(gpures__worker *w) {
  for (int i = 0; i < 2; i++)
    if (w->wake[i] >= 0) close(w->wake[i]), w->wake[i] = -1;
  w->running = w->started = false;
}
#endif
