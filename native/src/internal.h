/*
** internal.h: declarations shared by gpures's sources; not installed.
**
** The sources are layered, one folder a layer. A layer calls only the layers
** below it, never one above (kinds/ and events/ do not call each other):
**
**   codec/    decoders into pool slots and encoders that read frames in
**             place, over FFmpeg opened with dlopen (codec/codec.h)
**   session/  frame streams over a channel: buffers announced once, frames
**             by id and metadata, releases back to the sender, and the one
**             service thread that reads them (POSIX; windows.c refuses)
**   frames/   frame pools: slots of sealed memfds, handed out as handles that
**             borrow them and come home at their last release (Linux)
**   sync/     SyncPoints waited on: how each sync kind is waited on (poll()
**             on its fd, its API opened with dlopen), the one waiter thread
**             of async waits, begin/end access, dma-buf sync files
**   channel/  handles sent to another process: sockets, the wire format, the
**             checks a received message passes (POSIX; windows.c refuses)
**   map/      CPU mappings of owned fds, the ArrayBuffers over them, and which
**             fds may back a frame (received ones too)
**   table/    handles: the generation-checked slot table, create, clone,
**             release, describe, the per-handle operations, the per-kind
**             entry points, JSON (table/table.h lists its files)
**   kinds/    what a descriptor of each kind holds: the kind table, the field
**             rows and what walks them, one file per family of kinds
**   events/   event queues, through which hosts learn of last releases
**   enums/    the named values descriptors store, and pixel format layouts
**   core/     the thread's last error, allocation
**   os/       the platform: fds, a lock, background threads, the thread-exit
**             hook, errno names, what kind of fence an fd is
**
** Where a frame goes: gpures_create() (table/handles.c) checks the struct
** sizes (table/struct_size.c), validates the descriptor through its kind's
** rows (kinds/fields.c) and checks (kinds/<family>.c), takes its fds
** (table/fds.c) and fills a slot (table/slots.c). Clone and release are the
** pin and unpin of table/table.h; describe copies the slot's descriptor out
** (table/handles.c, table/describe_json.c). The last release
** (table/slots.c) closes the fds, runs the keep-alive and posts RELEASED
** (events/). gpures_map() is map/mappings.c; gpures_channel_send() and
** _receive() are channel/messages.c, which encode and decode through
** channel/wire.c.
*/
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

#if defined(_MSC_VER)
#  define GPURES__THREAD_LOCAL __declspec(thread)
#else
#  define GPURES__THREAD_LOCAL _Thread_local
#endif

/* For data one file defines and others read on hot paths: reached directly, not through the GOT. */
#if defined(__GNUC__) && !defined(_WIN32)
#  define GPURES__HIDDEN __attribute__((visibility("hidden")))
#else
#  define GPURES__HIDDEN
#endif

/*
** For static checks that a list of gpures_lists.h numbers its rows 1, 2, ...
** N in order, N being its *_MAX (the tables index by id - 1):
**   enum { LIST(GPURES__POSITION) ROWS };  gives each row its position,
**   LIST(GPURES__IN_ORDER)                 asserts id == position + 1.
** (Two lists checked in one file must not share an UPPER name.)
*/
#define GPURES__POSITION(id, UPPER, ...) GPURES__AT_##UPPER,
#define GPURES__IN_ORDER(id, UPPER, ...) \
  _Static_assert(id == GPURES__AT_##UPPER + 1, #UPPER " is out of order in its list");

/* ------------------------------------------------------------------ os/ */

/* A lock that is cheap when uncontended. */
typedef struct gpures__lock {
  atomic_flag flag;
} gpures__lock;
void gpures__lock_acquire(gpures__lock *l);
void gpures__lock_release(gpures__lock *l);
/*
** fork() (os/fork.c): every lock of the library's own is held across it, so
** that a child never inherits one held by a thread it does not have. A module
** lists its global spin locks once, from a constructor:
** GPURES__LOCKS_ACROSS_FORK(name, first, count, stride) holds `count` locks
** `stride` bytes apart, in the order listed (a lock taken under another comes
** after it). A module with a mutex gives fork.c its lock and what its child
** forgets (a thread, the parent's objects), and fork.c takes the locks in the
** library's lock order. There is no fork() on Windows.
*/
#if defined(_WIN32)
#define GPURES__LOCKS_ACROSS_FORK(name, first, count, stride)
#else
#include <pthread.h>
void gpures__locks_across_fork(gpures__lock *first, size_t count, size_t stride);
#define GPURES__LOCKS_ACROSS_FORK(name, first, count, stride) \
  __attribute__((constructor)) static void name(void) {       \
    gpures__locks_across_fork(first, count, stride);           \
  }
/* Registers the fork handlers, once; at load, or on macOS when the library pins itself. */
void gpures__watch_forks(void);
typedef struct gpures__forking {
  pthread_mutex_t *lock;
  void (*in_child)(void); /* after fork.c let go of the lock: re-initialises it, forgets the rest */
} gpures__forking;
extern const gpures__forking gpures__service_forking;    /* session/service.c */
extern const gpures__forking gpures__waiter_forking;     /* sync/waiter.c */
extern const gpures__forking gpures__pool_forking;       /* frames/pool.c (Linux) */
extern const gpures__forking gpures__importers_forking;  /* interop/importer.c (Linux) */
extern const gpures__forking gpures__event_wait_forking; /* events/wait.c */
#endif

/* A close-on-exec duplicate of fd, or -1 with errno set. */
int gpures__fd_dup(int fd);
/* Marks fd close-on-exec; 0 on success, -1 with errno set. */
int gpures__fd_adopt(int fd);
void gpures__fd_close(int fd);
/*
** Keeps the library mapped until the process ends (os/pin.c). Called before
** anything that may leave a thread inside it after the host lets go: a
** blocking wait a host runs on a helper thread, the service thread.
*/
void gpures__pin_library(void);

/* What a fence fd is (os/fence_fd.c): UNKNOWN when the kernel cannot be asked (no /proc). */
enum {
  GPURES__FENCE_FD_UNKNOWN = 0,
  GPURES__FENCE_FD_SYNC_FILE,
  GPURES__FENCE_FD_EVENTFD,
  GPURES__FENCE_FD_SYNCOBJ,
  GPURES__FENCE_FD_OTHER
};
int gpures__fence_fd_type(int fd);
/* "a sync_file", "an eventfd", "not a fence", ... for error messages. */
const char *gpures__fence_fd_name(int type);
/* The fd's size in bytes when it can be read without side effects, else -1. */
int64_t gpures__fd_size(int fd);
/* 1 when fd names an open file, else 0. */
int gpures__fd_valid(int fd);
/*
** One pointer per thread: when a thread exits with it set (not NULL),
** at_exit(it) runs on that thread (POSIX: a pthread key's destructor;
** Windows: an FLS callback). Every call passes the same at_exit. The
** library's unload disarms it. _set returns 0, or an errno value.
*/
void *gpures__thread_exit_value(void);
int gpures__thread_exit_value_set(void *value, void (*at_exit)(void *value));
/*
** errno's symbolic name, "EMFILE", for messages a person can act on (the
** symbol is what they search for; strerror's text varies by libc and locale).
** An unknown value gives "errno N" in a per-thread buffer that this thread's
** next call overwrites; known names are static.
*/
const char *gpures__errno_name(int err);
/* A few words on what err means, "the process has no free file descriptors"; static. */
const char *gpures__errno_meaning(int err);

/* ---------------------------------------------------------------- core/ */

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

/*
** While on (calls nest), this thread's failures record nothing: work done on
** a releasing thread for a pool is none of that thread's caller's business.
*/
void gpures__errors_quiet(bool on);

/* Records an OS failure: "mmap failed: EMFILE (Too many open files)". */
int gpures__os_fail(gpures__op op, const char *field, const char *what, int err);
/*
** Records the thread's last error again under this operation's verb: a call
** into another gpures function reported "Cannot duplicate fd of X: ...", the
** caller wants "Cannot send X: ...".
*/
int gpures__refail(gpures__op op, int status);
/* "DmaBufHandle" for its id; "handle" for any other value. */
const char *gpures__kind_name(uint32_t kind);
/*
** OUT_OF_MEMORY for a table whose entries retire after their last generation
** (handle slots, event queues) and which has none free: "all N <what> (M
** more were retired after their last generation); <advice>".
*/
int gpures__fail_table_full(gpures__op op, uint32_t capacity, uint32_t retired, const char *what,
                            const char *advice);

#if !defined(_WIN32)
#include <pthread.h>
/*
** A background thread that starts with its first job and ends when it has
** none (os/worker.c): the owner holds its own lock around start, reads
** `running` under it, and the thread sets running = false under it as it ends.
*/
typedef struct gpures__worker {
  int wake[2];      /* the pipe that wakes the thread's poll(); {-1, -1} until the first start */
  bool running;     /* a thread runs (or was just started) */
  bool started;     /* `thread` names a thread that has not been joined */
  pthread_t thread;
} gpures__worker;
#define GPURES__WORKER_INIT {{-1, -1}, false, false, 0}
/* Starts the thread unless it runs; makes the pipe first. Call holding the owner's lock. */
int gpures__worker_start(gpures__op op, gpures__worker *w, void *(*run)(void *));
void gpures__worker_wake(gpures__worker *w);
/* Empties the pipe (the thread, after poll() says it is readable). */
void gpures__worker_drain(gpures__worker *w);
/* In a fork()ed child: no thread, and the parent's pipe is let go. */
void gpures__worker_forget_fork(gpures__worker *w);
#endif

/* A struct_size the library can believe: 8 at least, GPURES_STRUCT_SIZE_MAX at most (table/struct_size.c). */
int gpures__check_struct_size(gpures__op op, const char *field, uint32_t given);
/* Copies a caller's struct of its struct_size bytes into `out` of `own` bytes, zero past them. */
int gpures__copy_versioned(gpures__op op, const char *field, const void *in, uint32_t own,
                           void *out);

/* Every allocation goes through here so tests can make it fail. */
void *gpures__alloc(size_t size);
void *gpures__realloc(void *p, size_t size);
void gpures__free(void *p);
/*
** Makes room for item `count` in an array of *capacity items of `size` bytes:
** `first` items, then twice as many each time, never more than `max`. false
** when it may not (max) or cannot (memory); the array is then as it was.
*/
bool gpures__grow(void **items, uint32_t *capacity, uint32_t count, size_t size, uint32_t first,
                  uint32_t max);

/* --------------------------------------------------------------- kinds/ */

/* What differs between kinds; one per kind, defined in kinds/<family>.c. */
typedef struct gpures__variant {
  const gpures_field_info *fields;
  uint32_t num_fields;
  uint32_t desc_size;
  /* Checks what the field rows cannot say; NULL when they say it all. */
  int (*validate)(gpures__op op, const void *desc);
  /*
  ** GPURES_OWNED in the kind list: the kind has fd rows, which create takes and
  ** the last release closes. Only such kinds may have fd rows: the table skips
  ** the fd work for every other kind.
  */
  bool owns_fds;
} gpures__variant;

/* The kind list's ownership column by snake name, for GPURES__VARIANT. */
enum {
#define GPURES__OWNS_FDS(id, UPPER, snake, Name, own, os) \
  GPURES__OWNS_FDS_##snake = GPURES_##own == GPURES_OWNED,
  GPURES_EVERY_KIND_LIST(GPURES__OWNS_FDS)
#undef GPURES__OWNS_FDS
};

#define GPURES__VARIANT_DECL(id, UPPER, snake, Name, own, os) \
  extern const gpures__variant gpures__variant_##snake;
GPURES_EVERY_KIND_LIST(GPURES__VARIANT_DECL)
#undef GPURES__VARIANT_DECL

/* The variants by kind id; entry 0 is NULL (kinds/kind_table.c). */
extern GPURES__HIDDEN const gpures__variant *const gpures__variants[GPURES_KIND_MAX + 1];

/* The variant of a kind id, or NULL when no kind has that id. Inline: create asks it twice. */
static inline const gpures__variant *gpures__variant_of(uint32_t kind) {
  return kind >= 1 && kind <= GPURES_KIND_MAX ? gpures__variants[kind] : NULL;
}

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
/* A group member that is (part of) the handle's device identity, of GPURES_DEVICE_* kind `dev_`. */
#define GPURES__DEVICE_ROW(T, m, path_, type_, bit_, dev_, doc_)                               \
  { .path = path_, .doc = doc_, .type = type_, .offset = offsetof(T, m),                       \
    .size = GPURES__MEMBER_SIZE(T, m), .count = 1, .stride = GPURES__MEMBER_SIZE(T, m),        \
    .present_bit = bit_, .flags = GPURES_FIELD_DEVICE(dev_) }
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
  GPURES__STRUCT_ARRAY_ROW_F(T, a, m, n, path_, type_, zero_, 0, doc_)
/* The same with field flags (GPURES_FIELD_*). */
#define GPURES__STRUCT_ARRAY_ROW_F(T, a, m, n, path_, type_, zero_, flags_, doc_)              \
  { .path = path_, .doc = doc_, .type = type_, .offset = offsetof(T, a[0].m),                  \
    .size = GPURES__MEMBER_SIZE(T, a[0].m), .count = GPURES__LEN(((T *)0)->a),                 \
    .stride = GPURES__MEMBER_SIZE(T, a[0]), .count_offset = offsetof(T, n),                    \
    .zero_status = zero_, .flags = flags_ }

#define GPURES__VARIANT(snake, fields_, validate_)                                             \
  const gpures__variant gpures__variant_##snake = {                                            \
      fields_, (uint32_t)GPURES__LEN(fields_), (uint32_t)sizeof(gpures_##snake##_desc), validate_, \
      GPURES__OWNS_FDS_##snake}

/* The largest magnitude of a GPURES_FIELD_I64 value: 2^53 - 1. */
#define GPURES__I64_SAFE ((int64_t)9007199254740991LL)

/* Element i of a field as an unsigned 64-bit value (signed ones sign-extended). */
uint64_t gpures__field_get(const gpures_field_info *f, const void *desc, uint32_t i);
void gpures__field_set(const gpures_field_info *f, void *desc, uint32_t i, uint64_t v);
/* Elements in use: the count field for [] rows, 0 for absent groups, else 1. */
uint32_t gpures__field_len(const gpures_field_info *f, const void *desc);
/* "planes[].offset" with index i written in: "planes[1].offset". */
void gpures__field_path(const gpures_field_info *f, uint32_t i, char *out, size_t cap);
/* Checks every row of a descriptor and clears unused elements. */
int gpures__fields_validate(gpures__op op, const gpures__variant *v, void *desc);
/* A descriptor's width and height when its kind has them, else 0: a frame's extent. */
void gpures__desc_extent(const gpures__variant *v, const void *desc, uint32_t *width,
                         uint32_t *height);
/* Width and height that must be given together (both 0 means not given). */
int gpures__check_extent(gpures__op op, uint32_t width, uint32_t height);
/* The metadata's rows and checks (kinds/meta.c); width/height 0: the frame has no extent. */
int gpures__meta_validate(gpures__op op, gpures_frame_meta *meta, uint32_t width, uint32_t height);
/* A present slot release needs an aligned gate. */
int gpures__check_slot_release(gpures__op op, uint32_t flags, const gpures_slot_release_desc *s);
/*
** A VkOpaqueFd-shaped frame (VkOpaqueFd, CudaVmmFd): offset below size, its
** rows at rowPitch fitting after offset, and its slot release.
*/
int gpures__check_opaque_frame(gpures__op op, const gpures_vk_opaque_fd_desc *d);
/* A field row by path, or NULL. */
const gpures_field_info *gpures__field_find(const gpures__variant *v, const char *path);

/*
** The device id a descriptor's flagged rows give (interop/device.c); NONE when
** an optional one is absent or zero. *id must be zeroed by the caller.
*/
int gpures__device_of_desc(gpures__op op, uint32_t kind, const void *desc, gpures_device_id *id);

/* Every GPURES_MEMORY_* bit there is. */
#define GPURES__MEMORY_ALL                                                 \
  (GPURES_MEMORY_DMA_BUF | GPURES_MEMORY_OPAQUE_FD | GPURES_MEMORY_HOST | \
   GPURES_MEMORY_CUDA_VMM_FD)

/* -------------------------------------------------------------- events/ */

/* Whether queue id is open (events.c). */
bool gpures__event_queue_open(uint32_t id);
/* Queues open at once, at most; an id's low 16 bits are its index + 1. */
#define GPURES__MAX_QUEUES 4096u
/* Wakes the threads in gpures_event_queue_wait() on `queue` (events/wait.c); cheap when none waits. */
void gpures__events_wake(uint32_t queue);
/* The queue closed: its fd watches go (events/wait.c). */
void gpures__watches_queue_ended(uint32_t queue);
/* Posts an event; GPURES_E_OUT_OF_MEMORY when the queue cannot grow. */
int gpures__event_post(uint32_t queue, uint64_t token, uint32_t type);
/* The same, with the event's status (SYNC_DONE's outcome). */
int gpures__event_post_status(uint32_t queue, uint64_t token, uint32_t type, int status);
/* Reserves room for one RELEASED, SYNC_DONE or FD_READY event, so that its post cannot fail. */
int gpures__event_reserve(uint32_t queue);
void gpures__event_unreserve(uint32_t queue);
/*
** A queue closed (by hand, or as its thread exited: its isolate ended), so
** the waits made on its behalf end now, each freeing what it holds: the
** SyncPoint waits told on it (sync/waiter.c) and the pool waits bound to it
** (frames/pool.c). Called by events.c holding no lock, after the queue reads
** as closed, so a wait added meanwhile sees it closed and ends by itself.
*/
void gpures__sync_queue_ended(uint32_t queue);
void gpures__pool_queue_ended(uint32_t queue);

/* ---------------------------------------------------------------- sync/ */

/*
** Calls then(ctx, status) on the waiter thread once `sync` is reached (OK) or
** cannot be waited on (its error status); the wait holds its own reference.
** For the layers above (a session that releases a frame only once its
** consumer's release fence is reached).
*/
int gpures__sync_then(gpures__op op, gpures_handle sync, void (*then)(void *ctx, int status),
                      void *ctx);

/* --------------------------------------------------------------- table/ */

/*
** A handle over fds that someone else owns: a pool's slot, a session's cached
** buffer. At the handle's last release at_last_release(ctx, retired) runs
** instead of closing the fds; `retired` says the memory may still be in use
** elsewhere (gpures__frame_retire) and must not be handed out again.
*/
typedef struct gpures__borrow {
  void (*at_last_release)(void *ctx, bool retired);
  void *ctx;
  uint64_t buffer_id; /* gpures_buffer_id() */
  /* Optional: takes the handle's release fence (a reference) just before at_last_release. */
  void (*keep_fence)(void *ctx, gpures_handle release_fence);
} gpures__borrow;

/*
** A handle of `kind` over `desc`, whose fds stay the borrow's owner's. The
** descriptor was validated when its owner made it, so create's checks are
** not run again: this is the per-frame path.
*/
int gpures__create_borrowing(gpures__op op, uint32_t kind, const void *desc,
                             const gpures_create_options *options, const gpures__borrow *borrow,
                             gpures_handle *out_handle);
/* begin/end access's halves of gpures_fences_set(), each one step under the slot's lock (meta.c). */
int gpures__fences_drop_acquire(gpures_handle handle, gpures_handle expected);
int gpures__fences_put_release(gpures__op op, gpures_handle handle, gpures_handle release);
/* Marks the frame's memory as given away for good: its at_last_release gets retired = true. */
int gpures__frame_retire(gpures_handle handle);
/* The next buffer id: process-wide, never 0, never reused. */
uint64_t gpures__next_buffer_id(void);
/*
** A buffer's owner let its memory go (a pool slot renewed or closed): the
** sessions that announced it tell their peers, which drop what they kept.
** The session layer installs the hook; until then this does nothing. Call it
** holding no lock.
*/
void gpures__buffer_gone(uint64_t id);
/* Marks the imports made for buffer `id` for freeing (interop/importer.c). */
void gpures__importers_buffer_gone(uint64_t id);
void gpures__set_buffer_gone_hook(void (*hook)(uint64_t id));

/* The largest descriptor of any kind, in bytes. */
#define GPURES__DESC_MAX 256
/* Copies a live handle's kind, refcount (not counting this call) and descriptor. */
int gpures__snapshot(gpures_handle h, const char *verb, uint32_t *kind, uint32_t *refcount,
                     void *desc /* GPURES__DESC_MAX bytes */);

/*
** Test hooks (exported for the C tests, as core/alloc.c's are; not in gpures.h).
** gpures__test_set_next_generation(g): the next create gets generation g, as
** if its slot had served g - 1 handles (single-threaded use only).
** gpures__test_retired_slots(): slots retired after their last generation.
*/
GPURES_API void gpures__test_set_next_generation(uint32_t generation);
/* gpures__test_fence_fd_as(fd, GPURES__FENCE_FD_*): the file fd names counts as that fence. */
GPURES_API void gpures__test_fence_fd_as(int fd, int type);
GPURES_API uint32_t gpures__test_retired_slots(void);

/* ----------------------------------------------------------------- map/ */

/*
** Refuses an fd that cannot back a frame (a pipe, a socket, a directory, a
** device), or whose memory could shrink under a mapping: a regular file or a
** memfd not sealed with F_SEAL_SHRINK (one that allows sealing is sealed),
** unless allow_unsealed. map/frame_fd.c says why.
*/
int gpures__check_frame_fd(gpures__op op, const char *field, int fd, uint32_t flags);
#define GPURES__FRAME_FD_ALLOW_UNSEALED (1u << 0) /* the caller trusts the producer */
#define GPURES__FRAME_FD_OPAQUE (1u << 1)         /* a driver's opaque export: devices pass */
#define GPURES__FRAME_FD_MEMORY (1u << 2)         /* memory: eventfds, sync_files, ... refused */
/* gpures_map(), also giving the mapping's id (never reused). */
int gpures__map(gpures_handle handle, uint32_t index, uint32_t flags, void **out_ptr,
                uint64_t *out_size, uint64_t *out_id);
/* Ends the mapping with this id if it is still live; nothing otherwise. */
void gpures__unmap_id(uint64_t id);

#endif /* GPURES_INTERNAL_H */
