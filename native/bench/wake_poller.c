/*
** wake_poller.c: the library side of two candidate wake paths in
** bench/wake_paths.ts. A thread of its own sleeps in recv() and hands each
** stamp on: to a Deno.UnsafeCallback.threadSafe, which blocks it until the
** isolate's event loop has run the callback, or into a doorbell, a stream
** socket whose other end Deno's event loop polls through node:net.
*/
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>

typedef void (*wake_poller_cb)(double sent_us);

struct job {
  int fd;
  wake_poller_cb cb; /* or, when NULL: */
  int doorbell;
};

static void *poll_stamps(void *arg) {
  struct job *job = arg;
  double sent;
  while (recv(job->fd, &sent, sizeof sent, 0) == sizeof sent) {
    if (job->cb) job->cb(sent);
    else if (send(job->doorbell, &sent, sizeof sent, MSG_NOSIGNAL) != sizeof sent) break;
  }
  free(job);
  return NULL;
}

static int start(int fd, wake_poller_cb cb, int doorbell) {
  struct job *job = malloc(sizeof *job);
  if (!job) return -1;
  job->fd = fd;
  job->cb = cb;
  job->doorbell = doorbell;
  pthread_t thread;
  if (pthread_create(&thread, NULL, poll_stamps, job) != 0) return free(job), -1;
  pthread_detach(thread);
  return 0;
}

/* Start the thread; it ends when a socket closes. 0, or -1 when it could not start. */
__attribute__((visibility("default"))) int wake_poller_call(int fd, wake_poller_cb cb) {
  return cb ? start(fd, cb, -1) : -1;
}

__attribute__((visibility("default"))) int wake_poller_ring(int fd, int doorbell) {
  return start(fd, NULL, doorbell);
}
