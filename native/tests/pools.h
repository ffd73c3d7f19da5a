/*
** pools.h: what the frame-path tests and fuzz_session start from (Linux).
**   nv12_pool_desc(w, h, slots)      a pool descriptor of w x h NV12 frames
**   new_nv12_pool(w, h, slots)       that pool, created
**   pool_stats(p), session_stats(s)  their counters now
**   sealable_rgba_frame()            a DmaBufHandle of an RGBA 32x32 frame over a
**                                    memfd of 4096 bytes that allows sealing
**   new_cpu_fence()                  a CpuFence, not yet signalled
**   has_acquire_fence(h)             whether h carries an acquire fence
** A failed call is reported through EXPECT_OK(call): check.h makes it a failed
** check, fuzz.h a broken promise; include one of them first.
*/
#ifndef GPURES_TEST_POOLS_H
#define GPURES_TEST_POOLS_H

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fixtures.gen.h"
#include "gpures.h"

#ifndef EXPECT_OK
#  error "include check.h or fuzz.h before pools.h: they say how a failed call is reported"
#endif

static inline gpures_pool_desc nv12_pool_desc(uint32_t width, uint32_t height, uint32_t slots) {
  gpures_pool_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.format = GPURES_PF_NV12;
  d.width = width;
  d.height = height;
  d.slots = slots;
  return d;
}

static inline gpures_pool *new_nv12_pool(uint32_t width, uint32_t height, uint32_t slots) {
  gpures_pool_desc d = nv12_pool_desc(width, height, slots);
  gpures_pool *p = NULL;
  EXPECT_OK(gpures_pool_create(&d, &p));
  return p;
}

static inline gpures_pool_stats pool_stats(gpures_pool *p) {
  gpures_pool_stats s = {.struct_size = sizeof s};
  EXPECT_OK(gpures_pool_stats_get(p, &s));
  return s;
}

static inline gpures_session_stats session_stats(gpures_session *s) {
  gpures_session_stats st = {.struct_size = sizeof st};
  EXPECT_OK(gpures_session_stats_get(s, &st));
  return st;
}

/* Sealable because a receiving session seals what it maps: an unsealable memfd is refused. */
static inline gpures_handle sealable_rgba_frame(void) {
  int fd = memfd_create("gpures-test-frame", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate(fd, 4096) != 0) abort();
  gpures_dma_buf_handle_desc d = gpures_fixture_dma_buf_handle_rgba(fd);
  gpures_handle h = 0;
  EXPECT_OK(gpures_dma_buf_handle_create(&d, NULL, &h));
  close(fd);
  return h;
}

static inline gpures_handle new_cpu_fence(void) {
  gpures_handle h = 0;
  EXPECT_OK(gpures_cpu_fence_new(&h));
  return h;
}

/* Whether h carries an acquire fence; the references gpures_fences_get() gave are released. */
static inline bool has_acquire_fence(gpures_handle h) {
  gpures_handle a = 0, r = 0;
  EXPECT_OK(gpures_fences_get(h, &a, &r));
  if (a) EXPECT_OK(gpures_release(a));
  if (r) EXPECT_OK(gpures_release(r));
  return a != 0;
}

#endif /* GPURES_TEST_POOLS_H */
