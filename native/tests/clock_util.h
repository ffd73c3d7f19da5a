/*
** clock_util.h: time for the tests that wait on another thread or process.
**   now_ms()               the monotonic clock, in milliseconds
**   sleep_ms(ms)           sleeps that long
**   EVENTUALLY(expr, ms)   true once expr is, false when ms pass first
*/
#ifndef GPURES_TEST_CLOCK_UTIL_H
#define GPURES_TEST_CLOCK_UTIL_H

#include <stdbool.h>
#include <time.h>

static inline double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static inline void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* Polls expr every millisecond: another thread or process makes it true. */
#define EVENTUALLY(expr, ms)                                  \
  ({                                                          \
    double until_ = now_ms() + (ms);                          \
    bool ok_ = false;                                         \
    while (!(ok_ = (expr)) && now_ms() < until_) sleep_ms(1); \
    ok_;                                                      \
  })

#endif /* GPURES_TEST_CLOCK_UTIL_H */
