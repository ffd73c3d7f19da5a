/* internal.h: declarations shared by gpures's sources; not installed. */
#ifndef GPURES_INTERNAL_H
#define GPURES_INTERNAL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpures.h"

#define GPURES__LEN(a) (sizeof(a) / sizeof((a)[0]))
#define GPURES__MEMBER_SIZE(T, m) sizeof(((T *)0)->m)

/* ------------------------------------------------------------- errors */

/* What a failing call was doing, for the "Cannot <verb> <Kind>: ..." text. */
typedef struct gpures__op {
  const char *verb; /* "create", "clone", ... */
  uint32_t kind;    /* 0 when unknown */
} gpures__op;

/* Records the thread's last error and returns `status`. */
int gpures__fail(gpures__op op, int status, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Records an OS failure: "mmap failed: EMFILE (Too many open files)". */
int gpures__os_fail(gpures__op op, const char *field, const char *what, int err);
/*
** Records the thread's last error again under this operation's verb: a call
** into another gpures function reported "Cannot duplicate fd of X: ...", the
** caller wants "Cannot send X: ...".
*/
int gpures__refail(gpures__op op, int status);

/* ------------------------------------------------------------ variants */

/* What differs between kinds; one per kind, defined in variants/<family>.c. */
typedef struct gpures__variant {
  const gpures_field_info *fields;
  uint32_t num_fields;
  uint32_t desc_size;
  /* Checks what the field rows cannot say; NULL when they say it all. */
  int (*validate)(gpures__op op, const void *desc);
} gpures__variant;

#define GPURES__VARIANT_DECL(id, UPPER, snake, Name, own, os) \
  extern const gpures__variant gpures__variant_##snake;
GPURES_KIND_LIST(GPURES__VARIANT_DECL)
#undef GPURES__VARIANT_DECL

const gpures__variant *gpures__variant_of(uint32_t kind);
const char *gpures__kind_name(uint32_t kind);

/* Field-row builders for the variant tables. */
#define GPURES__ROW(T, m, path_, type_, zero_, flags_, doc_)                                   \
  { .path = path_, .doc = doc_, .type = type_, .offset = offsetof(T, m),                       \
    .size = GPURES__MEMBER_SIZE(T, m), .count = 1, .stride = GPURES__MEMBER_SIZE(T, m),        \
    .zero_status = zero_, .flags = flags_ }
#define GPURES__ENUM_ROW(T, m, path_, set_, doc_)                                              \
  { .path = path_, .doc = doc_, .type = GPURES_FIELD_ENUM, .offset = offsetof(T, m),           \
    .size = 4, .count = 1, .stride = 4, .enum_set = set_ }
/* A member of an optional group, present when flags has `bit`. */
#define GPURES__GROUP_ROW(T, m, path_, type_, bit_, doc_)                                      \
  { .path = path_, .doc = doc_, .type = type_, .offset = offsetof(T, m),                       \
    .size = GPURES__MEMBER_SIZE(T, m), .count = 1, .stride = GPURES__MEMBER_SIZE(T, m),        \
    .present_bit = bit_ }
#define GPURES__COUNT_ROW(T, m, path_, max_, zero_, doc_)                                      \
  { .path = path_, .doc = doc_, .type = GPURES_FIELD_COUNT, .offset = offsetof(T, m),          \
    .size = 4, .count = max_, .stride = 4, .zero_status = zero_ }
/* An array of scalars whose length is the field `n`. */
#define GPURES__ARRAY_ROW(T, a, n, path_, type_, zero_, doc_)                                  \
  { .path = path_, .doc = doc_, .type = type_, .offset = offsetof(T, a),                       \
    .size = GPURES__MEMBER_SIZE(T, a[0]), .count = GPURES__LEN(((T *)0)->a),                   \
    .stride = GPURES__MEMBER_SIZE(T, a[0]), .count_offset = offsetof(T, n), .zero_status = zero_ }
/* Member m of an array of structs a whose length is the field `n`. */
#define GPURES__STRUCT_ARRAY_ROW(T, a, m, n, path_, type_, zero_, doc_)                        \
  { .path = path_, .doc = doc_, .type = type_, .offset = offsetof(T, a[0].m),                  \
    .size = GPURES__MEMBER_SIZE(T, a[0].m), .count = GPURES__LEN(((T *)0)->a),                 \
    .stride = GPURES__MEMBER_SIZE(T, a[0]), .count_offset = offsetof(T, n), .zero_status = zero_ }

#define GPURES__VARIANT(snake, fields_, validate_)                                             \
  const gpures__variant gpures__variant_##snake = {                                            \
      fields_, (uint32_t)GPURES__LEN(fields_), (uint32_t)sizeof(gpures_##snake##_desc), validate_}

/* ------------------------------------------------------------- fields */

/* Element i of a field as an unsigned 64-bit value (signed ones sign-extended). */
uint64_t gpures__field_get(const gpures_field_info *f, const void *desc, uint32_t i);
void gpures__field_set(const gpures_field_info *f, void *desc, uint32_t i, uint64_t v);
/* Elements in use: the count field for [] rows, 0 for absent groups, else 1. */
uint32_t gpures__field_len(const gpures_field_info *f, const void *desc);
/* "planes[].offset" with index i written in: "planes[1].offset". */
void gpures__field_path(const gpures_field_info *f, uint32_t i, char *out, size_t cap);
/* Checks every row of a descriptor and clears unused elements. */
int gpures__fields_validate(gpures__op op, const gpures__variant *v, void *desc);
/* Width and height that must be given together (both 0 means not given). */
int gpures__check_extent(gpures__op op, uint32_t width, uint32_t height);
/* A present slot release needs an aligned gate. */
int gpures__check_slot_release(gpures__op op, uint32_t flags, const gpures_slot_release_desc *s);
/* A field row by path, or NULL. */
const gpures_field_info *gpures__field_find(const gpures__variant *v, const char *path);

/* ------------------------------------------------------------ os layer */

/* A lock that is cheap when uncontended. */
typedef struct gpures__lock {
  atomic_flag flag;
} gpures__lock;
void gpures__lock_acquire(gpures__lock *l);
void gpures__lock_release(gpures__lock *l);

/* A close-on-exec duplicate of fd, or -1 with errno set. */
int gpures__fd_dup(int fd);
/* Marks fd close-on-exec; 0 on success, -1 with errno set. */
int gpures__fd_adopt(int fd);
void gpures__fd_close(int fd);
/* The fd's size in bytes when it can be read without side effects, else -1. */
int64_t gpures__fd_size(int fd);
/* 1 when fd names an open file, else 0. */
int gpures__fd_valid(int fd);
/*
** One pointer per thread: when a thread exits with it set (not NULL),
** gpures__event_thread_exit(it) runs on that thread (POSIX: a pthread key's
** destructor; Windows: an FLS callback). The library's unload disarms it.
** _set returns 0, or an errno value.
*/
void *gpures__thread_exit_value(void);
int gpures__thread_exit_value_set(void *value);
/*
** errno's symbolic name, "EMFILE", for messages a person can act on (the
** symbol is what they search for; strerror's text varies by libc and locale).
** An unknown value gives "errno N" in a per-thread buffer that this thread's
** next call overwrites; known names are static.
*/
const char *gpures__errno_name(int err);
/* A few words on what err means, "the process has no free file descriptors"; static. */
const char *gpures__errno_meaning(int err);

/* ------------------------------------------------------ frames and maps */

/*
** Refuses an fd that cannot back a frame (a pipe, a socket, a directory, a
** device), or whose memory could shrink under a mapping: a regular file or a
** memfd not sealed with F_SEAL_SHRINK (one that allows sealing is sealed),
** unless allow_unsealed. frame_fd.c says why.
*/
int gpures__check_frame_fd(gpures__op op, const char *field, int fd, bool allow_unsealed);
/* gpures_map(), also giving the mapping's id (never reused). */
int gpures__map(gpures_handle handle, uint32_t index, uint32_t flags, void **out_ptr,
                uint64_t *out_size, uint64_t *out_id);
/* Ends the mapping with this id if it is still live; nothing otherwise. */
void gpures__unmap_id(uint64_t id);

/* ------------------------------------------------------------- events */

/* Posts an event; GPURES_E_OUT_OF_MEMORY when the queue cannot grow. */
int gpures__event_post(uint32_t queue, uint64_t token, uint32_t type);
/* Reserves room for one RELEASED event, so that the last release cannot fail. */
int gpures__event_reserve(uint32_t queue);
void gpures__event_unreserve(uint32_t queue);
/* Closes the queues the exiting thread bound; the os layer's thread-exit hook calls it. */
void gpures__event_thread_exit(void *bound);

/* ------------------------------------------------------------- handles */

/* The largest descriptor of any kind, in bytes. */
#define GPURES__DESC_MAX 256
/* Copies a live handle's kind, refcount (not counting this call) and descriptor. */
int gpures__snapshot(gpures_handle h, const char *verb, uint32_t *kind, uint32_t *refcount,
                     void *desc /* GPURES__DESC_MAX bytes */);
int gpures__clone_kind(gpures_handle h, uint32_t kind);
int gpures__release_kind(gpures_handle h, uint32_t kind);
int gpures__describe_kind(gpures_handle h, uint32_t kind, void *out);

/*
** Test hooks (exported for the C tests, as alloc.c's are; not in gpures.h).
** gpures__test_set_next_generation(g): the next create gets generation g, as
** if its slot had served g - 1 handles (single-threaded use only).
** gpures__test_retired_slots(): slots retired after their last generation.
*/
GPURES_API void gpures__test_set_next_generation(uint32_t generation);
GPURES_API uint32_t gpures__test_retired_slots(void);

/* ----------------------------------------------------------- allocation */

/* Every allocation goes through here so tests can make it fail. */
void *gpures__alloc(size_t size);
void *gpures__realloc(void *p, size_t size);
void gpures__free(void *p);

#endif /* GPURES_INTERNAL_H */
