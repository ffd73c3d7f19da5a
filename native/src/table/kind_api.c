/*
** kind_api.c: gpures_<kind>_create, _clone, _describe and _release for every
** kind of GPURES_KIND_LIST: the shared operations, typed by kind and refusing
** a handle of another kind (handles.c's gpures__*_kind). They live with the
** table, not with the kinds, so that kinds/ never calls up into table/. Each
** is a jump into handles.c, kept in another file so that the compiler does
** not copy the reference counting into all eighty of them.
*/
#include "table.h"

#define ENTRY_POINTS(id, UPPER, snake, Name, own, os)                                           \
  int gpures_##snake##_create(const gpures_##snake##_desc *desc,                              \
                              const gpures_create_options *options, gpures_handle *out) {     \
    return gpures_create(id, desc, options, out);                                             \
  }                                                                                           \
  int gpures_##snake##_clone(gpures_handle h) { return gpures__clone_kind(h, id); }           \
  int gpures_##snake##_describe(gpures_handle h, gpures_##snake##_desc *out) {                \
    return gpures__describe_kind(h, id, out);                                                 \
  }                                                                                           \
  int gpures_##snake##_release(gpures_handle h) { return gpures__release_kind(h, id); }
GPURES_EVERY_KIND_LIST(ENTRY_POINTS)
#undef ENTRY_POINTS
