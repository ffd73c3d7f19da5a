/*
** fork_util.h: fork() for tests whose process has threads of its own or of
** the library (the session service thread, the sync waiter), on Linux.
**
** gcc 12's ASan allocator takes no lock around fork(): a child forked while
** another thread is inside malloc() inherits the allocator's lock held and
** deadlocks at its next refill, many frames later. fork_quietly() waits until
** every other thread of the process sleeps (a thread ending after its last
** session is the usual one still running), then forks.
*/
#ifndef GPURES_TEST_FORK_UTIL_H
#define GPURES_TEST_FORK_UTIL_H

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* 1 when every thread of this process but the caller is asleep (state S) or gone. */
static inline int others_asleep(void) {
  DIR *dir = opendir("/proc/self/task");
  if (!dir) return 1; /* nothing to ask: fork as before */
  long self = (long)syscall(SYS_gettid);
  int asleep = 1;
  for (struct dirent *e; asleep && (e = readdir(dir));) {
    long tid = strtol(e->d_name, NULL, 10);
    if (tid <= 0 || tid == self) continue;
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f) continue; /* it ended */
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    const char *end = strrchr(line, ')'); /* the name may hold spaces and parentheses */
    asleep = !end || end[1] != ' ' || end[2] == 'S';
  }
  closedir(dir);
  return asleep;
}

/* Waits (up to two seconds) until the other threads have slept for a moment. */
static inline void wait_for_quiet(void) {
  for (int calm = 0, tries = 0; calm < 2 && tries < 2000; tries++) {
    calm = others_asleep() ? calm + 1 : 0;
    usleep(500);
  }
}

static inline pid_t fork_quietly(void) {
  wait_for_quiet();
  fflush(NULL);
  return fork();
}

#endif
