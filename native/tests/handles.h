/*
** handles.h: what many C tests start from, over fixtures.gen.h (the
** descriptors of tools/fixtures.ts):
**   new_cpu_bytes(&options)  a CpuBytes handle of the fixture descriptor,
**                            created with those options (NULL: none)
**   refcount_of(h)           a handle's reference count, 0 when it has none
** Options are written where they are used, with designated initializers:
**   gpures_create_options o = {.struct_size = sizeof o, .event_queue = q};
*/
#ifndef GPURES_TEST_HANDLES_H
#define GPURES_TEST_HANDLES_H

#include "check.h"
#include "fixtures.gen.h"

/* A CpuBytes handle of the fixture descriptor; 0, and a failed check, when create fails. */
static inline gpures_handle new_cpu_bytes(const gpures_create_options *options) {
  gpures_cpu_bytes_desc d = gpures_fixture_cpu_bytes();
  gpures_handle h = 0;
  CHECK_OK(gpures_cpu_bytes_create(&d, options, &h));
  return h;
}

/* The handle's reference count, or 0 for a stale or forged one. */
static inline uint32_t refcount_of(gpures_handle h) {
  uint32_t n = 0;
  return gpures_refcount(h, &n) == GPURES_OK ? n : 0;
}

#endif /* GPURES_TEST_HANDLES_H */
