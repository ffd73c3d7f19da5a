/*
** gpures.h: zero-copy GPU resource handles.
**
** A gpures handle is a 64-bit value that names one native resource (a Vulkan
** image, a DMA-BUF, a CUDA pointer, a GL texture, CPU memory, ...), says what
** it looks like (size, format, planes, pitch) and carries its ownership rules.
** Pipelines pass handles between libraries instead of copying frames.
**
** Lifetime, for every kind:
**   - gpures_<kind>_create() validates a descriptor and returns a handle with
**     a reference count of 1.
**   - gpures_clone() takes one more reference to the same handle value.
**   - gpures_release() drops one. The last release closes the file
**     descriptors gpures owns and runs the keep-alive's release exactly once.
**   - After the last release every call on the handle returns GPURES_E_STALE.
**     Handle values name a slot in a generation-checked table, so a stale,
**     double-released or forged value is reported, never dereferenced.
**
** Threads: every function may be called from any thread. Reference counts are
** atomic. gpures_last_error() is per thread.
**
** fork(): the child may go on using the library, whatever other threads were
** doing at the fork. Its global locks are held across fork(), and the
** library's background threads (the session service, the sync waiter) start
** afresh in the child when it first needs them. Plain handles and their
** metadata carry over. What belongs to a peer or a thread stays the
** parent's, and the child must not use it: sessions, pools, importers, the
** frames they gave out, and the parent's pending async waits (the handles
** those hold keep that reference in the child).
**
** Descriptors begin with struct_size and flags. Set struct_size to
** sizeof(the struct) as compiled, both in what you pass in and in what you
** ask gpures_<kind>_describe() to fill. The library accepts older (shorter)
** structs that end between two fields, and newer (longer) ones of up to
** GPURES_STRUCT_SIZE_MAX bytes whose extra bytes are zero, so descriptors can
** grow without new entry points. It never reads more of a caller's struct
** than struct_size says, never more than GPURES_STRUCT_SIZE_MAX, and never
** writes past the struct it knows: a describe into a newer struct sets
** struct_size to the bytes it wrote and leaves the rest alone. Any other
** struct_size (below 8, above the bound, ending inside a field: an unset
** one, most likely) gets GPURES_E_ABI_MISMATCH naming "structSize", and
** options.struct_size likewise "options.structSize".
*/
#ifndef GPURES_H
#define GPURES_H

#include <stddef.h>
#include <stdint.h>

#include "gpures_lists.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  if defined(GPURES_BUILDING)
#    define GPURES_API __declspec(dllexport)
#  else
#    define GPURES_API __declspec(dllimport)
#  endif
#else
#  define GPURES_API __attribute__((visibility("default")))
#endif

/*
** ABI version. The major part changes when a struct's prefix or an existing
** function's meaning changes; the minor part when something is added. A host
** built against major M must refuse a library whose major is not M, and one
** whose minor is lower than the minor it was built against.
*/
#define GPURES_ABI_MAJOR 1
#define GPURES_ABI_MINOR 6
#define GPURES_ABI_VERSION ((GPURES_ABI_MAJOR << 16) | GPURES_ABI_MINOR)

/* (major << 16) | minor of the loaded library. */
GPURES_API uint32_t gpures_abi_version(void);
/*
** Microseconds on the system's monotonic clock (CLOCK_MONOTONIC; Windows: the
** performance counter): one clock for every process and thread of the
** machine, so a producer's stamp and a consumer's compare. Not wall time.
*/
GPURES_API uint64_t gpures_clock_us(void);

/* ---------------------------------------------------------------- statuses */

/* Status codes: GPURES_OK (= GPURES_E_OK), GPURES_E_NULL_HANDLE, ... GPURES_E_ABI_MISMATCH. */
enum {
#define GPURES__STATUS_ENUM(code, UPPER, message) GPURES_E_##UPPER = code,
  GPURES_STATUS_LIST(GPURES__STATUS_ENUM)
#undef GPURES__STATUS_ENUM
  GPURES_OK = 0
};

/* "STALE" for GPURES_E_STALE; NULL for an unknown code. */
GPURES_API const char *gpures_status_name(int status);
/* The fixed one-line text of a status; NULL for an unknown code. */
GPURES_API const char *gpures_status_message(int status);

/*
** The last failure on the calling thread, in detail, naming the offending
** field by path: "Cannot create DmaBufHandle: planes[1] ends at byte 9216 but
** object 0 has 8192 bytes". Valid until the next failing call on this thread.
** Successful calls leave it alone.
*/
GPURES_API const char *gpures_last_error(void);
/* The field path of the last failure ("planes[1].offset"), or "". */
GPURES_API const char *gpures_last_error_field(void);
/* The status of the last failure on this thread (GPURES_OK if none yet). */
GPURES_API int gpures_last_status(void);

/* ------------------------------------------------------------------ kinds */

/*
** Kinds: the resource kinds GPURES_KIND_D3D11_TEXTURE = 1 ...
** GPURES_KIND_WGPU_TEXTURE = 20, then the sync kinds GPURES_KIND_VK_SEMAPHORE
** = 21 ... GPURES_KIND_DRM_SYNCOBJ = 36, then resource kinds added since:
** GPURES_KIND_CUDA_VMM_FD = 37. GPURES_KIND_MAX counts the rows of
** both lists, whose ids are 1 .. MAX in order (the library asserts it), so it
** is also the highest id. The same holds for GPURES_ENUM_SET_MAX and
** GPURES_PF_MAX below.
*/
enum {
#define GPURES__KIND_ENUM(id, UPPER, snake, Name, own, os) GPURES_KIND_##UPPER = id,
  GPURES_EVERY_KIND_LIST(GPURES__KIND_ENUM)
#undef GPURES__KIND_ENUM
#define GPURES__KIND_ROW(id, UPPER, snake, Name, own, os) +1
  GPURES_RESOURCE_KIND_MAX = 0 GPURES_KIND_LIST(GPURES__KIND_ROW), /* 21: how many, not the highest id */
  GPURES_KIND_MAX = 0 GPURES_EVERY_KIND_LIST(GPURES__KIND_ROW)     /* 37 */
#undef GPURES__KIND_ROW
};

/* Operating-system bits: GPURES_OS_LINUX, GPURES_OS_WINDOWS, ... */
enum {
#define GPURES__OS_ENUM(bit, UPPER, name) GPURES_OS_##UPPER = 1u << bit,
  GPURES_OS_LIST(GPURES__OS_ENUM)
#undef GPURES__OS_ENUM
  GPURES_OS_ALL = 0x3ff
};

/* Ownership of the native object. */
enum {
  GPURES_BORROWED = 0, /* gpures never frees it; the producer's keep-alive holds it */
  GPURES_OWNED = 1     /* gpures owns its file descriptors and closes them */
};

/* What a kind names: a resource (memory, an image) or a SyncPoint. */
enum {
  GPURES_FAMILY_RESOURCE = 0,
  GPURES_FAMILY_SYNC = 1
};

/* One row of the kind table. */
typedef struct gpures_kind_info {
  uint32_t id;         /* GPURES_KIND_* */
  uint32_t ownership;  /* GPURES_BORROWED or GPURES_OWNED */
  uint32_t platforms;  /* GPURES_OS_* bits where the kind exists */
  uint32_t desc_size;  /* sizeof the kind's descriptor struct */
  uint32_t num_fields; /* rows in gpures_kind_fields() */
  uint32_t family;     /* GPURES_FAMILY_RESOURCE or GPURES_FAMILY_SYNC */
  const char *name;    /* "DmaBufHandle" */
  const char *snake;   /* "dma_buf_handle" */
} gpures_kind_info;

/* The kind table, ordered by id (row i has id i + 1). */
GPURES_API const gpures_kind_info *gpures_kind_table(uint32_t *out_count);
/* The row of one kind, or NULL for an unknown id. */
GPURES_API const gpures_kind_info *gpures_kind_info_of(uint32_t kind);
/* 1 when the kind exists on the OS this library was built for, else 0. */
GPURES_API int gpures_kind_supported(uint32_t kind);
/* The Deno.build.os name of OS bit `bit` (0..9): "linux", "windows", ...; NULL past the end. */
GPURES_API const char *gpures_os_name(uint32_t bit);
/* The GPURES_OS_* bit of the OS this library was built for. */
GPURES_API uint32_t gpures_build_os(void);

/* --------------------------------------------------------- enumerations */

/* Enumeration sets: GPURES_ENUM_PIXEL_FORMAT = 1, ... */
enum {
#define GPURES__ENUM_SET_ENUM(id, UPPER, Name) GPURES_ENUM_##UPPER = id,
  GPURES_ENUM_SET_LIST(GPURES__ENUM_SET_ENUM)
#undef GPURES__ENUM_SET_ENUM
#define GPURES__ENUM_SET_ROW(id, UPPER, Name) +1
  GPURES_ENUM_SET_MAX = 0 GPURES_ENUM_SET_LIST(GPURES__ENUM_SET_ROW) /* 12 */
#undef GPURES__ENUM_SET_ROW
};

/* One named value of an enumeration set. */
typedef struct gpures_enum_value {
  uint32_t set;     /* GPURES_ENUM_* */
  uint32_t value;   /* the value stored in descriptors (a real GL enum, a PixelFormat id, ...) */
  const char *name; /* "Texture2D", "NV12", "rgba8unorm" */
} gpures_enum_value;

/* The name of an enumeration set ("PixelFormat"); "enumeration" for an unknown set. */
GPURES_API const char *gpures_enum_set_name(uint32_t set);
/* Every named value of every set, grouped by set. */
GPURES_API const gpures_enum_value *gpures_enum_table(uint32_t *out_count);
/* The name of a value, or NULL when the set has no such value. */
GPURES_API const char *gpures_enum_name(uint32_t set, uint32_t value);
/* The value of a name; GPURES_E_INVALID_VALUE when the set has no such name. */
GPURES_API int gpures_enum_lookup(uint32_t set, const char *name, uint32_t *out_value);

/* ---------------------------------------------------------- pixel formats */

/* PixelFormat ids (stable): GPURES_PF_NV12 = 1 ... GPURES_PF_RGBA16U = 48. 0 is never a format. */
enum {
#define GPURES__PF_ENUM(id, UPPER, Name) GPURES_PF_##UPPER = id,
  GPURES_PIXEL_FORMAT_LIST(GPURES__PF_ENUM)
#undef GPURES__PF_ENUM
#define GPURES__PF_ROW(id, UPPER, Name) +1
  GPURES_PF_MAX = 0 GPURES_PIXEL_FORMAT_LIST(GPURES__PF_ROW) /* 48 */
#undef GPURES__PF_ROW
};

/* Pixel format flags. */
#define GPURES_PF_FLAG_HDR   (1u << 0) /* more than 8 bits per sample */
#define GPURES_PF_FLAG_YUV   (1u << 1) /* luma/chroma, else RGB or single channel */
#define GPURES_PF_FLAG_ALPHA (1u << 2) /* carries alpha */
#define GPURES_PF_FLAG_FLOAT (1u << 3) /* samples are floating point */

/* One plane of a pixel format. */
typedef struct gpures_plane_info {
  uint8_t hsub;             /* horizontal subsampling: plane width = ceil(width / hsub) */
  uint8_t vsub;             /* vertical subsampling: plane height = ceil(height / vsub) */
  uint8_t channels;         /* channels in one sample of this plane (2 for NV12's UV) */
  uint8_t block_width;      /* samples that share one horizontal block (2 for UYVY) */
  uint32_t bytes_per_sample; /* bytes of one sample, all channels */
} gpures_plane_info;

/* One row of the pixel format table. */
typedef struct gpures_pixel_format_info {
  uint32_t id;              /* GPURES_PF_* */
  uint32_t num_planes;      /* 1..4 */
  uint32_t bits_per_sample; /* significant bits per channel sample */
  uint32_t flags;           /* GPURES_PF_FLAG_* */
  uint32_t drm_fourcc;      /* the DRM fourcc with this memory layout, or 0 */
  uint32_t reserved;
  gpures_plane_info planes[4];
} gpures_pixel_format_info; /* names: gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, id) */

/* The format table, ordered by id (row i has id i + 1). */
GPURES_API const gpures_pixel_format_info *gpures_pixel_format_table(uint32_t *out_count);
/* The row of one format, or NULL for an unknown id. */
GPURES_API const gpures_pixel_format_info *gpures_pixel_format_info_of(uint32_t format);
/* The format whose drm_fourcc is `fourcc`, or NULL. */
GPURES_API const gpures_pixel_format_info *gpures_pixel_format_from_fourcc(uint32_t fourcc);
/* Width and height in samples of plane `plane` of a width x height frame. */
GPURES_API int gpures_pixel_format_plane_extent(uint32_t format, uint32_t plane, uint32_t width,
                                                uint32_t height, uint32_t *out_width,
                                                uint32_t *out_height);
/* Bytes of one row of plane `plane` of a frame `width` pixels wide. */
GPURES_API int gpures_pixel_format_row_bytes(uint32_t format, uint32_t plane, uint32_t width,
                                             uint64_t *out_bytes);
/*
** Bytes of a frame whose planes follow each other in one buffer, plane 0
** having `row_pitch` bytes per row and every other plane the pitch scaled by
** its row bytes (the layout of a single contiguous allocation).
*/
GPURES_API int gpures_pixel_format_frame_size(uint32_t format, uint32_t width, uint32_t height,
                                              uint32_t row_pitch, uint64_t *out_bytes);
/* The pitch of plane `plane` in that contiguous layout. */
GPURES_API int gpures_pixel_format_plane_pitch(uint32_t format, uint32_t plane, uint32_t row_pitch,
                                               uint64_t *out_pitch);

/* One plane of a standard layout (gpures_pixel_format_layout). */
typedef struct gpures_plane_layout {
  uint64_t offset;   /* bytes from the buffer's start, a multiple of row_align */
  uint64_t size;     /* stride * height */
  uint32_t stride;   /* bytes per row: the plane's row bytes rounded up to row_align */
  uint32_t width;    /* samples per row */
  uint32_t height;   /* rows */
  uint32_t reserved;
} gpures_plane_layout;
/*
** The standard layout of a width x height frame of `format` in one buffer:
** planes in order, each row padded to a multiple of row_align (a power of two,
** 1..4096) and each plane starting at a multiple of it. Fills
** out_planes[0 .. num_planes-1] and *out_size (the buffer's bytes, below 2^32 so
** every offset fits a DmaBufHandle plane). INVALID_VALUE naming "format",
** "width", "height" or "rowAlign" otherwise.
*/
GPURES_API int gpures_pixel_format_layout(uint32_t format, uint32_t width, uint32_t height,
                                          uint32_t row_align, gpures_plane_layout out_planes[4],
                                          uint64_t *out_size);

/* --------------------------------------------------------------- handles */

/* A handle: 0 is never a handle. */
typedef uint64_t gpures_handle;

/*
** A producer's keep-alive. release(ctx) runs exactly once, after the last
** release of the handle, on whichever thread made it. mark_consumed(ctx) runs
** each time a consumer calls gpures_mark_consumed(), after its own sync
** succeeded. Either function may be NULL.
*/
typedef struct gpures_keep_alive {
  void *ctx;
  void (*release)(void *ctx);
  void (*mark_consumed)(void *ctx);
} gpures_keep_alive;

/* gpures_create_options.flags */
#define GPURES_CREATE_TAKE_OWNERSHIP (1u << 0) /* adopt the descriptor's fds instead of duplicating them */
/* The event queue gets RELEASED only: the host's keep-alive does not listen for mark_consumed. */
#define GPURES_CREATE_NO_CONSUMED_EVENTS (1u << 1)

/*
** Options of every create call; NULL means none. With TAKE_OWNERSHIP the
** descriptor's fds become the handle's on success (on failure they stay the
** caller's); without it gpures duplicates them and the caller keeps its own.
** event_queue/event_token post events to a gpures event queue instead of (or
** besides) calling keep_alive; hosts with an event loop use this.
*/
typedef struct gpures_create_options {
  uint32_t struct_size;
  uint32_t flags;          /* GPURES_CREATE_* */
  gpures_keep_alive keep_alive;
  uint32_t event_queue;    /* a queue from gpures_event_queue_open(), or 0 */
  uint32_t reserved;
  uint64_t event_token;    /* delivered with the queue's events for this handle */
} gpures_create_options;

/*
** The largest struct_size the library believes, of a descriptor or of the
** options. Today's largest descriptor has under 256 bytes, so 4096 leaves
** room for any growth a descriptor of handles, sizes and a few planes will
** see, while a larger value is almost surely an unset struct_size: above it
** create and the per-kind describe refuse the struct (ABI_MISMATCH) before
** touching a byte past their own struct, so a garbage struct_size costs an
** error, never a read or write across the caller's memory.
*/
#define GPURES_STRUCT_SIZE_MAX 4096u

/*
** Generic create: `desc` is the kind's descriptor struct. desc->struct_size
** and options->struct_size follow the rules at the top of this file: at most
** GPURES_STRUCT_SIZE_MAX bytes of either are read.
*/
GPURES_API int gpures_create(uint32_t kind, const void *desc, const gpures_create_options *options,
                             gpures_handle *out_handle);
/* Takes one more reference (an atomic increment). */
GPURES_API int gpures_clone(gpures_handle handle);
/*
** Drops one reference; the last one frees the slot, closes owned fds, runs the
** keep-alive. Releasing 0 does nothing and returns GPURES_OK, as free(NULL)
** does, so cleanup paths need no test; clone, describe and the rest still
** refuse 0 with GPURES_E_NULL_HANDLE.
*/
GPURES_API int gpures_release(gpures_handle handle);
/*
** Copies the handle's descriptor into `out`, which holds `out_size` bytes
** (at least 8): min(out_size, the kind's descriptor size) bytes are written,
** nothing past them, and struct_size is set to that count. Owned fds in the
** copy are the handle's own: do not close them.
*/
GPURES_API int gpures_describe(gpures_handle handle, void *out, uint32_t out_size);
/* The kind of a live handle. */
GPURES_API int gpures_kind(gpures_handle handle, uint32_t *out_kind);
/* The reference count of a live handle. */
GPURES_API int gpures_refcount(gpures_handle handle, uint32_t *out_refcount);
/*
** One JSON object describing the handle: kind, kindId, refcount and every
** field, 64-bit values and addresses as strings. Writes at most `capacity`
** bytes including the terminating NUL; *out_length gets the length without it.
** GPURES_E_BUFFER_TOO_SMALL when it does not fit (*out_length still says how
** much is needed).
*/
GPURES_API int gpures_describe_json(gpures_handle handle, char *buffer, size_t capacity,
                                    size_t *out_length);
/*
** A new close-on-exec duplicate of owned fd `index` of a kind that owns fds (DmaBufHandle,
** VkOpaqueFd, the fd-backed SyncPoints). The caller owns it. Importers that consume an fd get it here.
*/
GPURES_API int gpures_dup_fd(gpures_handle handle, uint32_t index, int *out_fd);
/*
** For VkImage and VkOpaqueFd with a slot release: stores its value into its
** gate with release ordering, telling a ring-pool producer the slot is free.
** A handle without a slot release does nothing.
*/
GPURES_API int gpures_slot_release(gpures_handle handle);
/* Calls the keep-alive's mark_consumed and posts a queue event, if any. */
GPURES_API int gpures_mark_consumed(gpures_handle handle);
/*
** gpures_mark_consumed(), telling whether anyone heard it: *out_heard is 1
** when the handle's keep-alive has a mark_consumed or its event queue takes
** MARK_CONSUMED events, 0 when the call meant nothing (a consumer that syncs
** for nobody can skip the work next time).
*/
GPURES_API int gpures_mark_consumed_heard(gpures_handle handle, uint32_t *out_heard);
/* Live handles of one kind, or of every kind when kind is 0. */
GPURES_API uint64_t gpures_live_handles(uint32_t kind);

/* ----------------------------------------------------------- event queues */

/* Event types. */
enum {
  GPURES_EVENT_RELEASED = 1,      /* the handle's last release happened */
  GPURES_EVENT_MARK_CONSUMED = 2, /* a consumer called gpures_mark_consumed() */
  GPURES_EVENT_SYNC_DONE = 3,      /* a gpures_sync_wait_async() ended; status says how */
  GPURES_EVENT_SLOT_FREE = 4,      /* a gpures_pool_notify() came true; status says how */
  GPURES_EVENT_FD_READY = 5,       /* a gpures_event_queue_watch() fd is ready; status says how */
  GPURES_EVENT_ROOM = 6            /* a gpures_fanout_notify() came true; status says how */
};

typedef struct gpures_event {
  uint64_t token;  /* the create option's (or the wait's) event_token */
  uint32_t type;   /* GPURES_EVENT_* */
  uint32_t status; /* SYNC_DONE, SLOT_FREE, FD_READY: GPURES_OK, GPURES_E_TIMED_OUT, ...; else 0 */
} gpures_event;

/*
** Event queues let a host with its own event loop (a JavaScript isolate, a
** Python interpreter) learn of last releases made on any thread, without a
** callback into it. One queue per isolate; poll it from the isolate's thread.
**
** The process has 4096 queues open at most (GPURES_E_OUT_OF_MEMORY past
** that). Queue ids carry a generation and are never handed out twice: a
** closed id stays closed (GPURES_E_STALE), so it never receives the events
** of whoever opens a queue next. After 65535 queues one table entry retires
** and the 4096 shrink by one; no host opens queues that fast for that long.
*/
GPURES_API int gpures_event_queue_open(uint32_t *out_queue);
/*
** Closes a queue; later events for it are dropped. The waits made on its
** behalf end now, since nobody is left to hear of them: its
** gpures_sync_wait_async() waits (CANCELLED; each lets go of its reference to
** the point) and its gpures_pool_wait_queue() waits (CANCELLED); its fd
** watches are dropped.
*/
GPURES_API int gpures_event_queue_close(uint32_t queue);
/*
** Closes the queue when the calling thread exits: a JavaScript isolate's
** thread ends with the isolate (a Deno Worker's OS thread exits when the
** worker ends), so a host that opens one queue per isolate binds it here,
** from the isolate's own thread, and isolates that come and go do not fill
** the table. Call it on that thread (a Deno FFI call that is not
** nonblocking). A queue may be bound once (GPURES_E_INVALID_VALUE after);
** an unknown id is GPURES_E_INVALID_VALUE and a closed one GPURES_E_STALE,
** both naming "queue". Closing the queue by hand before the thread exits is
** fine: the exit then does nothing, even if its id's table entry was reused.
** A thread may bind several queues. Threads that outlive the library (it is
** unloaded first) leave their queues to the unload. Closing at the exit is a
** close like any other: the queue's pending waits end then (the isolate's end
** ends its waits).
*/
GPURES_API int gpures_event_queue_close_on_thread_exit(uint32_t queue);
/*
** Waits up to timeout_ms (-1: no limit) until the queue has an event, and
** gives the number waiting (0 when the time ran out), polling the fds the
** queue watches meanwhile (a watch that fires posts its event, which ends the
** wait; timeout 0 just looks). GPURES_E_STALE when the queue is closed,
** before or during the wait. out_pending may be NULL.
** For a host's helper thread: a Deno isolate runs it as a nonblocking FFI
** call (passing no buffer, which the isolate's end could free mid-call), so
** releases made in other isolates or native threads reach it at once.
*/
GPURES_API int gpures_event_queue_wait(uint32_t queue, int32_t timeout_ms, uint32_t *out_pending);
/*
** Watches `fd` for `events` (GPURES_CHANNEL_READABLE, GPURES_CHANNEL_WRITABLE)
** on the queue's behalf: GPURES_EVENT_FD_READY with `token` is posted once,
** when they hold or the fd hangs up or fails (status GPURES_OK: the next read
** or write says which), or with GPURES_E_OS_ERROR when the fd was closed
** under the watch. The thread in gpures_event_queue_wait() polls every fd its
** queue watches along with the queue itself, so a watch holds no thread of its
** own and the thread that returns to the host is the one the kernel woke. The
** fd is polled only while a thread waits on the queue: a host keeps one
** waiting while it watches anything. Keep the fd open until the event arrived
** or gpures_event_queue_unwatch() withdrew the watch; the queue's close drops
** its watches. The event's room is set aside here, so its post cannot fail.
** Bad fd: GPURES_E_OS_ERROR naming "fd" (EBADF); bad events:
** GPURES_E_INVALID_VALUE naming "events"; a closed queue: GPURES_E_STALE.
*/
GPURES_API int gpures_event_queue_watch(uint32_t queue, int fd, uint32_t events, uint64_t token);
/*
** Withdraws the watch with `token`: *out_withdrawn is 1 when it was pending
** (no event comes; the fd is the caller's to close), 0 when its event was
** posted already or no such watch exists. out_withdrawn may be NULL.
*/
GPURES_API int gpures_event_queue_unwatch(uint32_t queue, uint64_t token, uint32_t *out_withdrawn);
/* Watches pending on the queue (0 for a closed or unknown queue). */
GPURES_API uint32_t gpures_event_queue_watching(uint32_t queue);
/* Events waiting in the queue (0 for a closed or unknown queue). */
GPURES_API uint32_t gpures_event_queue_pending(uint32_t queue);
/* Moves up to `capacity` events (at most `capacity` are written) out of the queue, oldest first. */
GPURES_API int gpures_event_queue_poll(uint32_t queue, gpures_event *events, uint32_t capacity,
                                       uint32_t *out_count);

/* ------------------------------------------------------- descriptor parts */

/* gpures descriptor flags: which optional groups are present. */
#define GPURES_HAS_LUID         (1u << 0)
#define GPURES_HAS_DEVICE_UUID  (1u << 1)
#define GPURES_HAS_SLOT_RELEASE (1u << 2)
#define GPURES_HAS_REGISTRY_ID  (1u << 3)
#define GPURES_HAS_SHARE_GROUP  (1u << 4)
#define GPURES_HAS_VALUE        (1u << 5) /* CudaEvent: a sequence value is given */

/* A Windows adapter LUID. */
typedef struct gpures_luid {
  int32_t high;
  uint32_t low;
} gpures_luid;

/* A ring-pool slot: gpures_slot_release() stores value into *gate. */
typedef struct gpures_slot_release_desc {
  uint64_t *gate;
  uint64_t value;
} gpures_slot_release_desc;

/* ------------------------------------------------------------ descriptors */
/* One struct per kind. Every struct begins with struct_size and flags. */

/* D3D11Texture (windows): an ID3D11Texture2D. */
typedef struct gpures_d3d11_texture_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_LUID */
  void *texture;        /* ID3D11Texture2D*, not null */
  gpures_luid luid;     /* adapter, when GPURES_HAS_LUID */
  uint32_t row_pitch;   /* bytes per row */
  uint32_t reserved;
} gpures_d3d11_texture_desc;

/* D3D12Resource (windows): a 2D texture ID3D12Resource. */
typedef struct gpures_d3d12_resource_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_LUID */
  void *resource;       /* ID3D12Resource*, not null */
  gpures_luid luid;
  uint32_t row_pitch;
  uint32_t reserved;
} gpures_d3d12_resource_desc;

/* D3D12BufferHandle (windows): a buffer ID3D12Resource. */
typedef struct gpures_d3d12_buffer_handle_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_LUID */
  void *resource;       /* ID3D12Resource*, not null */
  gpures_luid luid;
  uint64_t size;        /* bytes, not 0 */
} gpures_d3d12_buffer_handle_desc;

/* VkImage: a Vulkan image; null device means a trusted import. */
typedef struct gpures_vk_image_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_DEVICE_UUID, GPURES_HAS_SLOT_RELEASE */
  uint64_t image;       /* VkImage, not 0 */
  void *device;         /* VkDevice, optional */
  void *instance;       /* VkInstance, optional */
  void *physical_device; /* VkPhysicalDevice, optional */
  uint8_t device_uuid[16];
  uint32_t row_pitch;
  uint32_t vk_format;   /* VkFormat, 0 = unspecified */
  uint32_t width;       /* 0 = unspecified; with height */
  uint32_t height;
  gpures_slot_release_desc slot_release;
} gpures_vk_image_desc;

/* VkBufferHandle: a Vulkan buffer. */
typedef struct gpures_vk_buffer_handle_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_DEVICE_UUID */
  uint64_t buffer;      /* VkBuffer, not 0 */
  void *device;         /* VkDevice, optional */
  uint8_t device_uuid[16];
  uint64_t size;        /* bytes, not 0 */
} gpures_vk_buffer_handle_desc;

/* VkOpaqueFd (all but windows): exported Vulkan memory as an owned opaque fd. */
typedef struct gpures_vk_opaque_fd_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_SLOT_RELEASE */
  int32_t fd;           /* owned by the handle (adopted or duplicated) */
  uint32_t memory_type_index;
  uint64_t size;        /* allocation size, not 0 */
  uint64_t offset;      /* of the resource in the allocation, below size */
  uint32_t dedicated;   /* 1 when a dedicated allocation */
  uint32_t width;       /* not 0 */
  uint32_t height;      /* not 0 */
  uint32_t format;      /* PixelFormat id */
  uint8_t device_uuid[16];
  gpures_slot_release_desc slot_release;
  uint32_t row_pitch;   /* bytes per row of plane 0 (0: the row bytes, packed); later planes follow
                           at the pitch scaled by their row bytes (gpures_pixel_format_plane_pitch) */
  uint32_t reserved;
} gpures_vk_opaque_fd_desc;

/* CudaPtr2D (linux, windows): pitched device memory, planes at byte offsets. */
typedef struct gpures_cuda_ptr_2d_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_DEVICE_UUID */
  uint64_t ptr;         /* CUdeviceptr of plane 0, not 0 */
  uint32_t row_pitch;   /* bytes, not 0 */
  uint32_t num_plane_byte_offsets; /* 0..4 */
  uint64_t plane_byte_offsets[4];  /* from ptr */
  uint8_t device_uuid[16];
  uint32_t width;       /* size hint, 0 = none */
  uint32_t height;
} gpures_cuda_ptr_2d_desc;

/* CudaBufferHandle (linux, windows): linear device memory. */
typedef struct gpures_cuda_buffer_handle_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_DEVICE_UUID */
  uint64_t ptr;         /* CUdeviceptr, not 0 */
  uint64_t size;        /* bytes, not 0 */
  uint8_t device_uuid[16];
} gpures_cuda_buffer_handle_desc;

/* CudaSurface (linux, windows): a CUsurfObject. */
typedef struct gpures_cuda_surface_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_DEVICE_UUID */
  uint64_t surface;     /* CUsurfObject, not 0 */
  uint32_t format;      /* WgpuTextureFormat value */
  uint32_t width;       /* not 0 */
  uint32_t height;      /* not 0 */
  uint8_t device_uuid[16];
  uint32_t reserved;
} gpures_cuda_surface_desc;

/*
** Laid out as VkOpaqueFd (the reserved words stand where it has
** memoryTypeIndex and dedicated, and are 0), so code that reads a frame's fd
** and shape reads both alike. Imported with cuMemImportFromShareableHandle.
*/
/* CudaVmmFd (linux): a CUDA VMM allocation (cuMemCreate) exported as an owned POSIX fd. */
typedef struct gpures_cuda_vmm_fd_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_SLOT_RELEASE */
  int32_t fd;           /* owned by the handle (adopted or duplicated) */
  uint32_t reserved0;
  uint64_t size;        /* allocation size (a multiple of the device's granularity), not 0 */
  uint64_t offset;      /* of the frame in the allocation, below size */
  uint32_t reserved1;
  uint32_t width;       /* not 0 */
  uint32_t height;      /* not 0 */
  uint32_t format;      /* PixelFormat id */
  uint8_t device_uuid[16]; /* cuDeviceGetUuid of the allocating device */
  gpures_slot_release_desc slot_release;
  uint32_t row_pitch;   /* bytes per row of plane 0 (0: packed); later planes as VkOpaqueFd's */
  uint32_t reserved;
} gpures_cuda_vmm_fd_desc;

/* OpenClMem: a cl_mem and the queue that orders access to it. */
typedef struct gpures_open_cl_mem_desc {
  uint32_t struct_size;
  uint32_t flags;
  void *mem;            /* cl_mem, not null */
  void *queue;          /* cl_command_queue, not null */
  uint32_t row_pitch;
  uint32_t reserved;
} gpures_open_cl_mem_desc;

/* MetalTextureHandle (darwin): an id<MTLTexture>. */
typedef struct gpures_metal_texture_handle_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_REGISTRY_ID */
  void *texture;        /* not null */
  uint64_t registry_id; /* MTLDevice registryID */
} gpures_metal_texture_handle_desc;

/* MetalBufferHandle (darwin): an id<MTLBuffer>. */
typedef struct gpures_metal_buffer_handle_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_REGISTRY_ID */
  void *buffer;         /* not null */
  uint32_t row_pitch;
  uint32_t reserved;
  uint64_t registry_id;
} gpures_metal_buffer_handle_desc;

/* GlTextureHandle: a GL texture name in a context. */
typedef struct gpures_gl_texture_handle_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_SHARE_GROUP */
  uint32_t name;        /* not 0 */
  uint32_t target;      /* GlTextureTarget: a GL texture target enum */
  uint32_t internal_format; /* GlInternalFormat: a sized GL format, or 0 */
  uint32_t reserved;
  void *context;        /* the context, or null for the current one */
  uint64_t share_group;
} gpures_gl_texture_handle_desc;

/* GlBufferHandle: a GL buffer name in a context. */
typedef struct gpures_gl_buffer_handle_desc {
  uint32_t struct_size;
  uint32_t flags;       /* GPURES_HAS_SHARE_GROUP */
  uint32_t name;        /* not 0 */
  uint32_t target;      /* GlBufferTarget */
  uint64_t size;        /* bytes, not 0 */
  void *context;
  uint64_t share_group;
} gpures_gl_buffer_handle_desc;

/* One plane of a DMA-BUF layout. */
typedef struct gpures_dma_buf_plane {
  uint32_t object_index; /* which fd holds the plane */
  uint32_t offset;       /* bytes from the object's start */
  uint32_t stride;       /* bytes per row */
} gpures_dma_buf_plane;

/* DmaBufHandle (linux, android): 1..4 owned fds and a DRM layout. */
typedef struct gpures_dma_buf_handle_desc {
  uint32_t struct_size;
  uint32_t flags;
  uint32_t num_fds;      /* 1..4 */
  int32_t fds[4];        /* owned by the handle (adopted or duplicated) */
  uint32_t fourcc;       /* DRM fourcc */
  uint64_t modifier;     /* DRM format modifier */
  uint32_t width;        /* not 0 */
  uint32_t height;       /* not 0 */
  uint32_t num_planes;   /* 1..4 */
  gpures_dma_buf_plane planes[4];
  uint32_t reserved;
} gpures_dma_buf_handle_desc;

/* VaapiSurface (linux): a VASurfaceID on a VADisplay. */
typedef struct gpures_vaapi_surface_desc {
  uint32_t struct_size;
  uint32_t flags;
  uint32_t surface;     /* VASurfaceID; 0 is a legal id */
  uint32_t reserved;
  void *display;        /* VADisplay, not null */
} gpures_vaapi_surface_desc;

/* CpuBytes: one buffer of CPU memory holding a frame. */
typedef struct gpures_cpu_bytes_desc {
  uint32_t struct_size;
  uint32_t flags;
  void *ptr;            /* not null */
  uint64_t size;        /* bytes, not 0 */
  uint32_t row_pitch;
  uint32_t format;      /* PixelFormat id */
  uint32_t width;       /* 0 = no extent; with height, checked against size */
  uint32_t height;
} gpures_cpu_bytes_desc;

/* One plane of CpuPlanes. */
typedef struct gpures_cpu_plane {
  void *data;           /* not null */
  uint64_t size;        /* bytes, not 0 */
  uint32_t row_pitch;
  uint32_t reserved;
} gpures_cpu_plane;

/* CpuPlanes: one CPU buffer per plane. */
typedef struct gpures_cpu_planes_desc {
  uint32_t struct_size;
  uint32_t flags;
  uint32_t format;      /* PixelFormat id; its plane count must equal num_planes */
  uint32_t num_planes;  /* 1..4 */
  gpures_cpu_plane planes[4];
  uint32_t width;       /* 0 = no extent; with height, every plane is checked to hold its rows */
  uint32_t height;
} gpures_cpu_planes_desc;

/* CpuSharedSlot: an opaque producer slot, read back through the producer. */
typedef struct gpures_cpu_shared_slot_desc {
  uint32_t struct_size;
  uint32_t flags;
  uint64_t size;        /* bytes, not 0 */
  uint32_t row_pitch;
  uint32_t format;      /* PixelFormat id */
} gpures_cpu_shared_slot_desc;

/* WgpuTexture: a WebGPU texture held by its host under an opaque token. */
typedef struct gpures_wgpu_texture_desc {
  uint32_t struct_size;
  uint32_t flags;
  uint64_t token;       /* the host's name for the texture, not 0 */
  uint32_t width;       /* not 0 */
  uint32_t height;      /* not 0 */
  uint32_t depth_or_array_layers; /* not 0 */
  uint32_t mip_level_count;       /* not 0 */
  uint32_t sample_count;          /* not 0 */
  uint32_t dimension;   /* WgpuTextureDimension */
  uint32_t format;      /* WgpuTextureFormat */
  uint32_t usage;       /* GPUTextureUsage bits */
} gpures_wgpu_texture_desc;

/* ------------------------------------------------------- sync descriptors */
/*
** SyncPoints (gpures_sync_*): "the work before this point is finished", in
** one API's terms. A value of 0 in a timeline's `value` is a legal point.
*/

/* VkSemaphore: a Vulkan semaphore; the host waits on timelines through `device`. */
typedef struct gpures_vk_semaphore_desc {
  uint32_t struct_size;
  uint32_t flags;          /* GPURES_HAS_DEVICE_UUID */
  uint64_t semaphore;      /* VkSemaphore, not 0 */
  void *device;            /* VkDevice that owns it, optional (needed for host waits) */
  uint32_t semaphore_type; /* SemaphoreType: VkSemaphoreType (0 binary, 1 timeline) */
  uint32_t reserved;
  uint64_t value;          /* timeline: the point that means finished */
  uint8_t device_uuid[16];
} gpures_vk_semaphore_desc;

/* VkSemaphoreFd (all but windows): a Vulkan semaphore exported as an owned fd. */
typedef struct gpures_vk_semaphore_fd_desc {
  uint32_t struct_size;
  uint32_t flags;          /* GPURES_HAS_DEVICE_UUID */
  int32_t fd;              /* owned by the handle */
  uint32_t handle_type;    /* SemaphoreHandleType: opaqueFd (1) or syncFd (16) */
  uint32_t semaphore_type; /* SemaphoreType; a sync fd is always binary */
  uint32_t reserved;
  uint64_t value;          /* timeline: the point that means finished */
  uint8_t device_uuid[16];
} gpures_vk_semaphore_fd_desc;

/* D3D12Fence (windows): an ID3D12Fence and the value that means finished. */
typedef struct gpures_d3d12_fence_desc {
  uint32_t struct_size;
  uint32_t flags;          /* GPURES_HAS_LUID */
  void *fence;             /* ID3D12Fence*, not null */
  uint64_t value;
  gpures_luid luid;
} gpures_d3d12_fence_desc;

/* D3D11KeyedMutex (windows): an IDXGIKeyedMutex and the key to acquire with. */
typedef struct gpures_d3d11_keyed_mutex_desc {
  uint32_t struct_size;
  uint32_t flags;
  void *mutex;             /* IDXGIKeyedMutex*, not null */
  uint64_t key;
} gpures_d3d11_keyed_mutex_desc;

/* CudaEvent (linux, windows): a CUevent recorded on a stream. */
typedef struct gpures_cuda_event_desc {
  uint32_t struct_size;
  uint32_t flags;          /* GPURES_HAS_VALUE, GPURES_HAS_DEVICE_UUID */
  uint64_t event;          /* CUevent, not 0 */
  uint64_t value;          /* a producer's sequence number for the recording, when given */
  uint8_t device_uuid[16];
} gpures_cuda_event_desc;

/* CudaContextEvent (linux, windows): a CUevent with the context made current to wait on it. */
typedef struct gpures_cuda_context_event_desc {
  uint32_t struct_size;
  uint32_t flags;          /* GPURES_HAS_DEVICE_UUID */
  uint64_t event;          /* CUevent, not 0 */
  uint64_t context;        /* CUcontext, not 0 */
  int32_t device;          /* CUdevice ordinal */
  uint32_t reserved;
  uint8_t device_uuid[16];
} gpures_cuda_context_event_desc;

/* OpenClEvent: a cl_event (gpures waits with clWaitForEvents). */
typedef struct gpures_open_cl_event_desc {
  uint32_t struct_size;
  uint32_t flags;
  void *event;             /* cl_event, not null */
} gpures_open_cl_event_desc;

/* MetalEvent (darwin): an MTLSharedEvent and the value that means finished. */
typedef struct gpures_metal_event_desc {
  uint32_t struct_size;
  uint32_t flags;          /* GPURES_HAS_REGISTRY_ID */
  void *event;             /* id<MTLSharedEvent>, not null */
  uint64_t value;
  uint64_t registry_id;
} gpures_metal_event_desc;

/* GlSemaphore: a GL_EXT_semaphore object, waited on by GL itself (glWaitSemaphoreEXT). */
typedef struct gpures_gl_semaphore_desc {
  uint32_t struct_size;
  uint32_t flags;
  uint32_t name;           /* GLuint semaphore, not 0 */
  uint32_t reserved;
  void *context;           /* the context it lives in, optional */
} gpures_gl_semaphore_desc;

/* GlSync: a GLsync fence; waited on where its context is current. */
typedef struct gpures_gl_sync_desc {
  uint32_t struct_size;
  uint32_t flags;
  void *sync;              /* GLsync, not null */
  void *context;           /* the context it lives in, optional */
} gpures_gl_sync_desc;

/* WgpuSubmission (linux, android): a WebGPU queue's submitted work, signalled through an eventfd when it is done. */
typedef struct gpures_wgpu_submission_desc {
  uint32_t struct_size;
  uint32_t flags;
  int32_t fd;              /* eventfd the host signals, owned by the handle */
  uint32_t reserved;
  uint64_t submission;     /* the host's count of submissions at the point */
} gpures_wgpu_submission_desc;

/* WgpuDeferred (linux, android): a point a WebGPU host fills in later, by the slot it names. */
typedef struct gpures_wgpu_deferred_desc {
  uint32_t struct_size;
  uint32_t flags;
  int32_t fd;              /* eventfd the host signals, owned by the handle */
  uint32_t reserved;
  uint64_t slot;           /* the host's slot, not 0 */
} gpures_wgpu_deferred_desc;

/* CpuFence (linux, android): an eventfd that CPU work signals, which crosses processes with a frame. */
typedef struct gpures_cpu_fence_desc {
  uint32_t struct_size;
  uint32_t flags;
  int32_t fd;              /* eventfd, owned by the handle */
  uint32_t reserved;
} gpures_cpu_fence_desc;

/* NoopSync: a point that is always reached (work with nothing to wait for). */
typedef struct gpures_noop_sync_desc {
  uint32_t struct_size;
  uint32_t flags;
} gpures_noop_sync_desc;

/* SyncFile (linux, android): a kernel sync_file fd (dma-fence), readable once signalled. */
typedef struct gpures_sync_file_desc {
  uint32_t struct_size;
  uint32_t flags;
  int32_t fd;              /* owned by the handle */
  uint32_t reserved;
} gpures_sync_file_desc;

/* DrmSyncobj (linux): a DRM syncobj exported as an fd, and the timeline point (0: binary). */
typedef struct gpures_drm_syncobj_desc {
  uint32_t struct_size;
  uint32_t flags;
  int32_t fd;              /* owned by the handle */
  uint32_t reserved;
  uint64_t point;
} gpures_drm_syncobj_desc;

/* --------------------------------------------------- per-kind entry points */
/*
** For every kind: gpures_<kind>_create(desc, options, &handle),
** gpures_<kind>_clone(handle), gpures_<kind>_describe(handle, &desc) and
** gpures_<kind>_release(handle). The kind-specific forms return
** GPURES_E_WRONG_KIND for a handle of another kind; gpures_<kind>_release(0),
** like gpures_release(0), does nothing and returns GPURES_OK.
**
** gpures_<kind>_describe() fills a struct whose size the caller sets in
** desc.struct_size first: sizeof the struct, or an older struct's size (it
** must end between two fields), or a newer struct's of up to
** GPURES_STRUCT_SIZE_MAX bytes. It writes min(struct_size, the library's
** size) bytes, nothing past them, and sets struct_size to that count. Any
** other struct_size, below 8 or above the bound or ending inside a field
** (an unset struct_size, most likely), gets GPURES_E_ABI_MISMATCH naming
** "structSize" and writes nothing.
*/
#define GPURES__KIND_PROTOTYPES(id, UPPER, snake, Name, own, os)                                 \
  GPURES_API int gpures_##snake##_create(const gpures_##snake##_desc *desc,                      \
                                         const gpures_create_options *options,                   \
                                         gpures_handle *out_handle);                             \
  GPURES_API int gpures_##snake##_clone(gpures_handle handle);                                   \
  GPURES_API int gpures_##snake##_describe(gpures_handle handle, gpures_##snake##_desc *out);    \
  GPURES_API int gpures_##snake##_release(gpures_handle handle);
GPURES_EVERY_KIND_LIST(GPURES__KIND_PROTOTYPES)
#undef GPURES__KIND_PROTOTYPES

/* ------------------------------------------------------------ reflection */
/*
** Every descriptor field, as data: the JSON writer, the validator and the
** TypeScript codec all walk these rows, and TypeScript compares them with
** the layout it was generated from when it loads the library.
**
** path names the field in camelCase as JSON and TypeScript show it:
** "width", "luid.high" (a member of the group "luid"), "fds[]" (an array of
** scalars), "planes[].offset" (a member of an array of structs). A row with a
** present_bit belongs to an optional group (its first path segment) that is
** present when that bit of the descriptor's flags is set.
*/
enum {
  GPURES_FIELD_U32 = 1,
  GPURES_FIELD_I32 = 2,
  GPURES_FIELD_U64 = 3,
  GPURES_FIELD_PTR = 4,     /* an address */
  GPURES_FIELD_BOOL = 5,    /* uint32_t 0 or 1 */
  GPURES_FIELD_UUID = 6,    /* uint8_t[16] */
  GPURES_FIELD_ENUM = 7,    /* uint32_t of enumeration set `enum_set` */
  GPURES_FIELD_FD = 8,      /* int32_t file descriptor owned by the handle */
  GPURES_FIELD_COUNT = 9,   /* uint32_t number of elements of the array `path` (not shown) */
  GPURES_FIELD_I64 = 10     /* int64_t within +-(2^53 - 1), so JavaScript numbers hold it exactly */
};

/* gpures_field_info.flags */
#define GPURES_FIELD_OPTIONAL (1u << 0) /* zero means absent (JSON null) */
/*
** Bits 8..11: the field is (part of) the handle's device identity, of this
** GPURES_DEVICE_* kind (gpures_device_of() reads the rows that say so).
*/
#define GPURES_FIELD_DEVICE_SHIFT 8
#define GPURES_FIELD_DEVICE(kind) ((uint32_t)(kind) << GPURES_FIELD_DEVICE_SHIFT)
#define GPURES_FIELD_DEVICE_OF(flags) (((flags) >> GPURES_FIELD_DEVICE_SHIFT) & 0xfu)

typedef struct gpures_field_info {
  const char *path;      /* "planes[].offset" */
  const char *doc;       /* one line for documentation */
  uint32_t type;         /* GPURES_FIELD_* */
  uint32_t offset;       /* bytes from the descriptor's start to the first element */
  uint32_t size;         /* bytes of one element */
  uint32_t count;        /* elements: the array length for [] paths and COUNT rows, else 1 */
  uint32_t stride;       /* bytes between elements */
  uint32_t count_offset; /* for [] paths: offset of the COUNT field, else 0 */
  uint32_t present_bit;  /* for members of optional groups: the flags bit, else 0 */
  uint32_t enum_set;     /* for ENUM rows */
  uint32_t zero_status;  /* the status create returns when the value is 0 (COUNT: when empty) */
  uint32_t flags;        /* GPURES_FIELD_* */
} gpures_field_info;

/* The field rows of a kind (NULL for an unknown kind). */
GPURES_API const gpures_field_info *gpures_kind_fields(uint32_t kind, uint32_t *out_count);

/* ------------------------------------------------- channels between processes */
/*
** A channel moves handles of the kinds that own fds (DmaBufHandle, VkOpaqueFd)
** to another process over a Unix domain socket (SOCK_SEQPACKET): one message
** per handle, the descriptor as bytes and its fds attached with SCM_RIGHTS.
** The receiver gets a new handle that owns the received fds; the sender keeps
** its own handle (release it when done: the memory lives while either side
** holds an fd). Addresses do not cross processes: a slot release is left out
** of the message, and a message that carries one (or any address) is refused.
** Kinds that name memory or objects of one process (every borrowed kind) are
** refused with GPURES_E_WRONG_KIND, field "resource".
**
** The receiver treats its peer as untrusted. A message must be one whole
** datagram with gpures's header, a kind that owns fds, a descriptor whose
** struct_size is the size the header announces, descriptor fd fields holding
** 0, 1, ... (the positions of the attached fds) and as many fds attached as
** the descriptor names, each able to back a frame: a dma-buf, a memfd sealed
** against shrinking (one that allows sealing is sealed on receipt, so the
** peer can no longer truncate it under a mapping here), or another anonymous
** object; never a pipe, socket, directory or device (but a VkOpaqueFd may be
** a character device: NVIDIA's opaque exports are opens of /dev/nvidiactl),
** and a regular file or an unsealable memfd only with
** GPURES_CHANNEL_ALLOW_UNSEALED. Then
** gpures_create() validates the descriptor exactly as for a local caller,
** adopting the received fds (TAKE_OWNERSHIP). Any failure closes every fd the
** message carried and returns GPURES_E_INVALID_VALUE (or create's own
** status), naming the field at fault ("fds[1]", "fd", "structSize", ...);
** the channel stays usable for the next message.
**
** No message is lost without a word. When this process has no free fd
** (EMFILE) the kernel discards the fds of a message arriving then; receive
** reports that message as GPURES_E_OS_ERROR with field "fds" and a message
** that says it was dropped and why. An empty datagram is refused, never
** taken for the end while messages wait behind it. OS failures name the
** errno symbol and the path or fd ("Cannot listen on "/run/x.sock": EACCES").
**
** A channel is a socket fd, so hosts can poll it (readable: a message or the
** end; writable: room to send). gpures makes every such fd close-on-exec and
** non-blocking; the calls below wait themselves unless given
** GPURES_CHANNEL_NONBLOCK. POSIX only: on Windows every call returns
** GPURES_E_UNSUPPORTED_PLATFORM. A path that begins with '@' names a socket in
** Linux's abstract namespace (no file).
*/

/* gpures_channel_* flags */
#define GPURES_CHANNEL_NONBLOCK (1u << 0) /* return at once, doing nothing, when the call would wait */
/*
** (receive) Trust the peer: accept regular files and memfds not sealed
** against shrinking. Whoever holds another fd of such a file can truncate it,
** and a mapping of it then raises SIGBUS on access past the new end.
*/
#define GPURES_CHANNEL_ALLOW_UNSEALED (1u << 1)

/* gpures_channel_wait() events */
#define GPURES_CHANNEL_READABLE (1u << 0) /* a message, a connection, or the end is waiting */
#define GPURES_CHANNEL_WRITABLE (1u << 1) /* a message can be sent */
#define GPURES_CHANNEL_HANGUP   (1u << 2) /* (out only) the peer closed, or the channel was shut down */

/*
** A listening socket at `path` (a stale socket file nobody listens on is
** replaced; any other file there is left alone and refused). The socket
** file's device and inode are recorded: shutting down or closing the
** listener removes that file, and only while `path` still names it.
*/
GPURES_API int gpures_channel_listen(const char *path, int *out_fd);
/* The next connection to a listener; with NONBLOCK *out_fd is -1 when none is waiting. */
GPURES_API int gpures_channel_accept(int listen_fd, uint32_t flags, int *out_fd);
/* A channel connected to the listener at `path`; with NONBLOCK *out_fd is -1 when its queue is full. */
GPURES_API int gpures_channel_connect(const char *path, uint32_t flags, int *out_fd);
/* Two channels connected to each other (socketpair). */
GPURES_API int gpures_channel_pair(int out_fds[2]);
/*
** Sends one handle of a kind that owns fds; the handle stays the caller's.
** *out_sent is 1 only when the message went, 0 when NONBLOCK and the channel
** is full (nothing was sent). Without NONBLOCK it waits for room.
** GPURES_E_STALE (field "channel") when the peer closed the channel.
*/
GPURES_API int gpures_channel_send(int fd, gpures_handle handle, uint32_t flags, uint32_t *out_sent);
/*
** Receives one handle; the caller owns its one reference. *out_handle is 0
** when NONBLOCK and nothing is waiting. GPURES_E_STALE (field "channel") once
** the peer closed the channel and every message was received. Flags:
** GPURES_CHANNEL_NONBLOCK, GPURES_CHANNEL_ALLOW_UNSEALED. GPURES_E_OS_ERROR
** with field "fds": a message was dropped because its fds could not be
** received (EMFILE); the next call receives the next message.
*/
GPURES_API int gpures_channel_receive(int fd, uint32_t flags, gpures_handle *out_handle);
/*
** Waits up to timeout_ms (-1: no limit, 0: just look) until `events`
** (GPURES_CHANNEL_READABLE, WRITABLE) hold; *out_ready gets those that do,
** plus GPURES_CHANNEL_HANGUP (out_ready may be NULL: a caller that simply
** tries again). Meant for a host that waits on another thread. Such a host
** should pass no memory it may free before the call returns: a JavaScript
** isolate can end while its wait still runs.
*/
GPURES_API int gpures_channel_wait(int fd, uint32_t events, int32_t timeout_ms, uint32_t *out_ready);
/*
** Shuts a channel or listener down: waiters wake, the peer sees the end. The
** fd stays open. A listener's socket file goes, if the path still names it.
*/
GPURES_API int gpures_channel_shutdown(int fd);
/*
** Closes a channel or listener fd (refused for an fd that is not a socket),
** removing a listener's socket file as gpures_channel_shutdown() does.
*/
GPURES_API int gpures_channel_close(int fd);
/*
** Removes whatever socket file is at `path` (a stale one of a process that
** is gone); only a socket, and nothing for '@' names. A listener's own file
** needs no call: closing it removes that file and never a newer one.
*/
GPURES_API int gpures_channel_unlink(const char *path);

/* ------------------------------------------------------------ CPU mappings */
/*
** CPU access to the memory behind an owned fd (DmaBufHandle, VkOpaqueFd):
** the whole object mmap()ed shared, no copy. When the fd is a real dma-buf,
** gpures_map() begins CPU access with DMA_BUF_IOCTL_SYNC (SYNC_START with the
** READ/WRITE bits of `flags`) and gpures_unmap() ends it (SYNC_END) before
** unmapping: map..unmap is one CPU access window. Any other fd is mapped
** without syncs. The mapping does not depend on the handle: it stays valid
** after the handle's release until gpures_unmap().
**
** No access through a mapping can raise SIGBUS. Reading past the end of a
** file that shrank would, and whoever holds another fd of the object (the
** peer that sent it, other code here) could shrink it, so gpures_map() maps
** only objects whose size cannot shrink:
**   - a dma-buf, whose size is fixed for its life;
**   - a memfd sealed with F_SEAL_SHRINK. A memfd that still allows sealing
**     is sealed by gpures_map() (shrinking a frame is never legitimate).
** A regular file, or a memfd that cannot be sealed, gets GPURES_E_INVALID_VALUE
** naming the fd field, unless `flags` has GPURES_MAP_ALLOW_UNSEALED: the
** caller then vouches that nobody truncates the object while it is mapped.
** A pipe, socket, directory or device is always refused.
*/
#define GPURES_MAP_READ  (1u << 0)
#define GPURES_MAP_WRITE (1u << 1)
#define GPURES_MAP_ALLOW_UNSEALED (1u << 2) /* trust the producer: map files and unsealed memfds */

/* Maps owned fd `index` of the handle; *out_ptr and *out_size give the mapping. */
GPURES_API int gpures_map(gpures_handle handle, uint32_t index, uint32_t flags, void **out_ptr,
                          uint64_t *out_size);
/* Ends CPU access and unmaps; `ptr` must be what gpures_map() gave (else GPURES_E_INVALID_VALUE). */
GPURES_API int gpures_unmap(void *ptr);
/* Mappings made by gpures_map() and not yet unmapped, in the whole process. */
GPURES_API uint64_t gpures_live_mappings(void);

/* ---------------------------------------------------------- frame metadata */
/*
** What a frame carries besides its pixels: its place in the stream, its
** timing, the rectangle worth showing, its colour (ITU-T H.273 codes, as
** WebCodecs' VideoColorSpace names them) and HDR static metadata. Any handle
** may carry it: gpures_meta_set() validates it and stores it in the handle,
** clones share it, a Worker given the handle reads it, and a channel carries
** it with the handle to the other process. Each group is present when its
** bit of flags is set; an absent group reads as zeros.
*/
#define GPURES_META_HAS_SEQUENCE      (1u << 0)
#define GPURES_META_HAS_TIMING        (1u << 1)
#define GPURES_META_HAS_VISIBLE       (1u << 2)
#define GPURES_META_HAS_COLOR         (1u << 3)
#define GPURES_META_HAS_MASTERING     (1u << 4)
#define GPURES_META_HAS_CONTENT_LIGHT (1u << 5)
#define GPURES_META_HAS_USER_DATA     (1u << 6)

/* A rectangle of pixels. */
typedef struct gpures_rect {
  uint32_t x;
  uint32_t y;
  uint32_t width;  /* not 0 */
  uint32_t height; /* not 0 */
} gpures_rect;

/* SMPTE ST 2086 mastering display colour volume. */
typedef struct gpures_mastering_display {
  uint32_t red_x, red_y, green_x, green_y, blue_x, blue_y; /* chromaticity in 0.00002 units, 0..50000 */
  uint32_t white_x, white_y;                               /* likewise */
  uint32_t max_luminance;  /* in 0.0001 cd/m2, not 0 */
  uint32_t min_luminance;  /* in 0.0001 cd/m2, below max_luminance */
} gpures_mastering_display;

/* CTA-861.3 content light level. */
typedef struct gpures_content_light {
  uint32_t max_cll;  /* cd/m2, 0..65535 */
  uint32_t max_fall; /* cd/m2, 0..max_cll */
} gpures_content_light;

typedef struct gpures_frame_meta {
  uint32_t struct_size;
  uint32_t flags;          /* GPURES_META_HAS_* */
  int64_t sequence;        /* HAS_SEQUENCE: the frame's number in its stream, >= 0 */
  int64_t pts;             /* HAS_TIMING: presentation time in timebase units */
  int64_t duration;        /* HAS_TIMING: in timebase units, >= 0 */
  uint32_t timebase_num;   /* HAS_TIMING: seconds per unit = num / den; neither 0 */
  uint32_t timebase_den;
  gpures_rect visible;     /* HAS_VISIBLE: within the frame's width x height when it has them */
  uint32_t primaries;      /* HAS_COLOR: ColorPrimaries (H.273 ColourPrimaries) */
  uint32_t transfer;       /* HAS_COLOR: TransferCharacteristics */
  uint32_t matrix;         /* HAS_COLOR: MatrixCoefficients */
  uint32_t full_range;     /* HAS_COLOR: 1 full range, 0 limited (video) range */
  gpures_mastering_display mastering; /* HAS_MASTERING */
  gpures_content_light content_light; /* HAS_CONTENT_LIGHT */
  uint8_t user_data[16];   /* HAS_USER_DATA: the application's own bytes */
} gpures_frame_meta;

/*
** Validates `meta` (its struct_size as for descriptors) and stores it in the
** handle, replacing what it had; NULL removes it. Bad values get
** GPURES_E_INVALID_VALUE naming the field ("visible.width", "color.primaries").
*/
GPURES_API int gpures_meta_set(gpures_handle handle, const gpures_frame_meta *meta);
/* Copies the handle's metadata into `out` (struct_size set by the caller); flags 0: none. */
GPURES_API int gpures_meta_get(gpures_handle handle, gpures_frame_meta *out);
/* The rows of gpures_frame_meta, as gpures_kind_fields() gives a descriptor's. */
GPURES_API const gpures_field_info *gpures_meta_fields(uint32_t *out_count);

/* ------------------------------------------------------------- frame pools */
/*
** A pool allocates its frames' memory once and hands it out again and again.
** Each slot is one shareable buffer holding a whole frame in the standard
** layout (gpures_pixel_format_layout()): on Linux a memfd sealed against
** shrinking, growing and further sealing, so every process that maps it may
** trust its size. gpures_pool_acquire() gives a DmaBufHandle of a free slot;
** when the last reference to that frame anywhere is released (here, in a
** Worker, or in another process through a session), the slot is free again.
** A slot is never handed out while anyone still holds its previous frame:
** producers wait (or time out) instead of overwriting. Another process holds
** a frame through a session (gpures_session_send), which keeps the frame
** until that process releases it; a plain gpures_channel_send() hands over
** the fds with no way back, so the slot would be free at the sender's release.
*/
typedef struct gpures_pool gpures_pool;

typedef struct gpures_pool_desc {
  uint32_t struct_size;
  uint32_t flags;          /* 0 */
  uint32_t format;         /* PixelFormat id; it must have a DRM fourcc */
  uint32_t width;          /* not 0 */
  uint32_t height;         /* not 0 */
  uint32_t slots;          /* 1..GPURES_POOL_MAX_SLOTS */
  uint32_t row_align;      /* a power of two up to 4096; 0 means 64 */
  uint32_t reserved;
} gpures_pool_desc;

#define GPURES_POOL_MAX_SLOTS 256u

typedef struct gpures_pool_stats {
  uint32_t struct_size;
  uint32_t slots;          /* the pool's slots */
  uint32_t in_use;         /* slots whose frame someone holds */
  uint32_t high_water;     /* the most slots in use at once */
  uint64_t acquired;       /* frames handed out */
  uint64_t waits;          /* acquires that found no free slot and waited */
  uint64_t timeouts;       /* acquires that waited and gave up (a try with timeout 0 is none) */
  uint64_t buffer_size;    /* bytes of one slot */
} gpures_pool_stats;

/* A pool of desc->slots frames, every buffer allocated now. */
GPURES_API int gpures_pool_create(const gpures_pool_desc *desc, gpures_pool **out_pool);
/*
** A frame of a free slot, waiting up to timeout_ms for one (0: do not wait,
** -1: no limit): GPURES_E_TIMED_OUT when none came free in time,
** GPURES_E_CANCELLED when gpures_pool_cancel(pool, ticket) was called for
** this ticket (any number the caller picks, 0 for none), GPURES_E_STALE once
** the pool is closed. `options` as for gpures_create() (keep-alive, event
** queue); TAKE_OWNERSHIP is meaningless here and refused.
*/
GPURES_API int gpures_pool_acquire(gpures_pool *pool, int32_t timeout_ms, uint32_t ticket,
                                   const gpures_create_options *options, gpures_handle *out_frame);
/*
** Waits up to timeout_ms (-1: no limit) until a slot is free, without taking
** it; statuses as gpures_pool_acquire(). For hosts that wait on a helper
** thread and then take the slot on their own (with timeout 0, trying again
** if another acquire was faster): the wait writes to no caller memory.
*/
GPURES_API int gpures_pool_wait(gpures_pool *pool, int32_t timeout_ms, uint32_t ticket);
/*
** gpures_pool_wait() for the host that owns event queue `queue` (0: none):
** the wait also ends, with GPURES_E_CANCELLED naming "queue", when that queue
** closes or is closed already. A JavaScript isolate's queue closes with its
** thread (gpures_event_queue_close_on_thread_exit), so a wait it left on a
** helper thread returns when the isolate ends, instead of parking that
** thread, and the pool with it, for as long as no slot comes free.
*/
GPURES_API int gpures_pool_wait_queue(gpures_pool *pool, int32_t timeout_ms, uint32_t ticket,
                                      uint32_t queue);
/*
** Asks to hear, on event queue `queue`, that a slot is free, with no thread
** waiting: GPURES_EVENT_SLOT_FREE with `token` is posted once, at once when a
** slot is free now, else when one comes free (status OK: take it with
** gpures_pool_acquire(timeout 0), and ask again if another was faster), or
** when the pool closes (status GPURES_E_STALE). Every notice of a pool is
** posted at each free slot, as a broadcast wakes every waiting thread. Any
** number may be pending; asking twice with the same (queue, token) is one.
*/
GPURES_API int gpures_pool_notify(gpures_pool *pool, uint32_t queue, uint64_t token);
/*
** Withdraws a notice not posted yet; one posted already stays posted. `why`
** is the waiter's reason: GPURES_E_TIMED_OUT counts in the pool's timeouts,
** anything else (an abort) in nothing.
*/
GPURES_API int gpures_pool_notify_cancel(gpures_pool *pool, uint32_t queue, uint64_t token,
                                         int why);
/* Ends the wait of the acquire (or gpures_pool_wait) with this ticket, now or when it begins. */
GPURES_API int gpures_pool_cancel(gpures_pool *pool, uint32_t ticket);
GPURES_API int gpures_pool_stats_get(gpures_pool *pool, gpures_pool_stats *out);
/*
** Closes the pool: acquires fail with GPURES_E_STALE from now on (waiting
** ones too). Frames still held stay valid, nothing is revoked under a reader:
** each slot's memory goes when its frame comes back, and the pool with the
** last one. The pointer must not be used after this call.
*/
GPURES_API int gpures_pool_close(gpures_pool *pool);
/*
** The identity of the buffer behind a frame: the same for every frame of one
** pool slot (or one received buffer), never reused in the process, 0 for a
** handle that has none. Importers (Vulkan, CUDA, EGL) cache by it.
*/
GPURES_API int gpures_buffer_id(gpures_handle handle, uint64_t *out_id);

/* ---------------------------------------------------------------- sessions */
/*
** A session runs a frame stream over a connected channel. The first frame of
** a buffer carries its fds; later frames of the same buffer carry only its id
** and metadata, and the receiver hands out a frame over the buffer it keeps
** (no new fd, no new mapping). When the receiver's last reference to a frame
** goes, its session sends the release back, and the sender's reference to the
** frame goes with it: a pooled frame returns to its pool. When the receiver
** ends (closes its session or dies), every frame it had not released comes
** back too, and the pool gives that slot new memory instead of reusing it: a
** closed receiver keeps reading what it held (it says which buffers with a
** KEEP as it closes, but the end alone suffices), so no producer overwrites a
** frame that someone still reads.
**
** One side sends frames, the other receives them (GPURES_SESSION_SEND or
** _RECEIVE). The sending side's messages back (releases) are read by the
** library's one service thread, which sleeps in poll() on every sending
** session. The session owns the channel fd from a successful open on.
** A fork()ed child watches none of the parent's sessions (it must not use
** them); its first sending session starts a service thread of its own.
**
** The receiver trusts nothing: a release for a frame it never sent, a frame
** of a buffer it never announced, a second announcement, fds that cannot
** back a frame, metadata out of range: each is refused and counted
** (gpures_session_stats), the session goes on, and no other frame is touched.
*/
typedef struct gpures_session gpures_session;

#define GPURES_SESSION_SEND    (1u << 0)
#define GPURES_SESSION_RECEIVE (1u << 1)

typedef struct gpures_session_stats {
  uint32_t struct_size;
  uint32_t buffers;        /* buffers the peer holds (sending) or this side caches (receiving) */
  uint64_t frames;         /* frames and handles sent (that went) or received */
  uint64_t announced;      /* of which carried fds: the first of their buffer */
  uint64_t in_flight;      /* sending: frames that went and the peer has not released */
  uint64_t returned;       /* sending: releases that came back */
  uint64_t refused;        /* messages refused as malformed, unknown or not the peer's to send */
  uint64_t forgotten;      /* receiving: buffers the sender dropped */
} gpures_session_stats;

/* A session over connected channel `fd`, which it owns from now on. */
GPURES_API int gpures_session_open(int fd, uint32_t flags, gpures_session **out_session);
/*
** Sends a handle of a kind that owns fds. A frame with a buffer identity (a
** pooled one) keeps its buffer's identity across the session and is held
** until the peer releases it. Flags and *out_sent as gpures_channel_send():
** without NONBLOCK it waits for room (releases keep coming in meanwhile); with
** NONBLOCK *out_sent is 0 when the socket is full, and then nothing of the
** frame is sent, counted (stats frames, in_flight) or held, except that its
** acquire fence's FENCE may have gone: call again with the same handle and
** the frame follows it alone. Sending another handle first leaves that FENCE
** naming a frame that never comes (the receiver drops it).
*/
GPURES_API int gpures_session_send(gpures_session *session, gpures_handle handle, uint32_t flags,
                                   uint32_t *out_sent);
/*
** Receives the next handle or frame; flags as gpures_channel_receive(). A
** refused message (counted) fails this call with its reason; the next call
** receives the next message. GPURES_E_STALE at the end.
*/
GPURES_API int gpures_session_receive(gpures_session *session, uint32_t flags,
                                      gpures_handle *out_handle);
/* The channel fd, to poll it (the session still owns it). */
GPURES_API int gpures_session_fd(gpures_session *session);
/*
** A doorbell for a receiving session: a Unix stream socket the sender's
** library writes a byte to after each message it sends, so that an event
** loop can wait on it where it cannot wait on the channel itself (a
** SOCK_SEQPACKET socket, or fds it must not read). The other end goes to the
** sender (a BELL message), which rings it once as soon as it has it: until
** the first byte comes, poll the channel too. Only what the sender sends
** through its session rings (a host that also calls gpures_channel_send() on
** the session's fd must not leave the receiver waiting on the doorbell
** alone). The caller owns *out_fd
** (close-on-exec, nonblocking); its end of file means the sender let go of
** the session.
** Once per session (GPURES_E_INVALID_VALUE after); GPURES_E_OS_ERROR naming
** "channel" when the channel is full (ask again later).
*/
GPURES_API int gpures_session_bell(gpures_session *session, int *out_fd);
GPURES_API int gpures_session_stats_get(gpures_session *session, gpures_session_stats *out);
/*
** Buffer ids (this process's, as gpures_buffer_id() gives them) whose sender
** forgot them since the last call: drop what was cached for them.
*/
GPURES_API int gpures_session_forgotten(gpures_session *session, uint64_t *ids, uint32_t capacity,
                                        uint32_t *out_count);
/*
** Closes the session and its channel. Frames received from it stay valid,
** and their buffers are never reused by the sender; their releases go
** nowhere. Frames sent on it and not yet released are let
** go: a pooled slot whose frame the peer may still hold is retired, never
** reused. The pointer must not be used after this call.
*/
GPURES_API int gpures_session_close(gpures_session *session);
/*
** Ends the session as gpures_session_close() does (a receiver first tells the
** sender which buffers it still holds, then the peer sees the end) but keeps
** the session and its fd until gpures_session_close(), for a host whose
** other threads may still be waiting on the fd. Idempotent.
*/
GPURES_API int gpures_session_shutdown(gpures_session *session);

/* -------------------------------------------------------------- SyncPoints */
/*
** A SyncPoint is a handle of a sync kind (GPURES_FAMILY_SYNC): a fence, a
** semaphore and the value that means "finished", an event. It is created,
** cloned, described and released like any handle and is then waited on:
**   - gpures_sync_wait() blocks the calling thread, up to timeout_ns
**     (negative: no limit; 0: just look);
**   - gpures_sync_poll() answers at once;
**   - gpures_sync_wait_async() gives the wait to the library's one waiter
**     thread, which posts GPURES_EVENT_SYNC_DONE to an event queue when the
**     point is reached, the time runs out or the wait is cancelled.
** The waiter thread ("gpures-sync", started by the first async wait, POSIX)
** sleeps in poll() on every fd-backed point (SyncFile, CpuFence, sync-fd
** semaphores, WebGPU points) and asks the APIs (vkGetSemaphoreCounterValue,
** cuEventQuery, clGetEventInfo, all opened with dlopen) about the others,
** checking sooner the more recently they were added (50 us, doubling to 2 ms),
** so a thousand idle waits cost it nothing but a sleeping poll().
**
** What each kind needs to be waited on by the host:
**   SyncFile, CpuFence, WgpuSubmission, WgpuDeferred, VkSemaphoreFd (syncFd):
**     nothing (poll() on the fd);
**   VkSemaphore: a timeline with its device; OpenClEvent: an OpenCL ICD;
**   CudaEvent, CudaContextEvent: libcuda;  NoopSync: always reached;
**   GlSync: its context current on the calling thread (blocking and poll only);
**   VkSemaphore (binary), VkSemaphoreFd (opaqueFd), GlSemaphore, DrmSyncobj,
**   D3D12Fence, D3D11KeyedMutex, MetalEvent: GPURES_E_UNSUPPORTED naming the
**   kind: their owner's API waits on them (import the fd there).
** A device reported lost is GPURES_E_DEVICE_LOST; an API that cannot be
** opened is GPURES_E_UNSUPPORTED naming the library.
*/
GPURES_API int gpures_sync_wait(gpures_handle sync, int64_t timeout_ns);
/* *out_reached is 1 when the point is reached, else 0. */
GPURES_API int gpures_sync_poll(gpures_handle sync, uint32_t *out_reached);
/*
** Reaches the point from the CPU: CpuFence, WgpuSubmission and WgpuDeferred
** (their host calls it), and a VkSemaphore timeline (vkSignalSemaphore to its
** value; INVALID_VALUE naming "value" when the counter is already at or past
** it, which Vulkan forbids). Signalling a reached CpuFence again does nothing.
*/
GPURES_API int gpures_sync_signal(gpures_handle sync);
/*
** Waits on the waiter thread: GPURES_EVENT_SYNC_DONE with `token` reaches
** `queue` exactly once, with status OK, TIMED_OUT, CANCELLED, DEVICE_LOST or
** OS_ERROR (or INVALID_VALUE: the API stopped knowing the object, as when its
** owner destroyed it meanwhile). The point is asked once before the wait is
** handed over, so an API that cannot be opened or refuses the object fails
** this call instead. The wait holds its own reference to the point, so releasing it
** meanwhile is safe. The room for the event is taken now, so the end of the
** wait cannot fail to be told. Tokens are the caller's; give each wait its own.
** Closing the queue (or the exit of the thread it is bound to) ends its waits
** with CANCELLED, their events dropped with the queue.
*/
GPURES_API int gpures_sync_wait_async(gpures_handle sync, int64_t timeout_ns, uint32_t queue,
                                      uint64_t token);
/* Ends the async wait with this queue and token now, with GPURES_E_CANCELLED; none: no-op. */
GPURES_API int gpures_sync_cancel(uint32_t queue, uint64_t token);
/* Makes a CpuFence over a new eventfd (linux, android). */
GPURES_API int gpures_cpu_fence_new(gpures_handle *out_sync);
/* Async waits the waiter thread holds now (for tests and leak checks). */
GPURES_API uint32_t gpures_sync_pending(void);

/*
** Fences that travel with a resource handle (a frame):
**   acquire: wait on it before touching the memory (the producer's work);
**   release: wait on it before reusing the memory (the consumer's work).
** gpures_fences_set() makes the handle hold a reference to each (0 clears);
** they go with it through clones and Workers, and are released with its
** slot. gpures_fences_get() gives new references (0 when none) that the
** caller releases. Across a session: the acquire fence goes before its frame
** (an fd-backed one; a process-local one makes gpures_session_send() fail
** with GPURES_E_UNSUPPORTED naming "acquire"), and a received frame's release
** fence holds its release back until the waiter thread sees it reached (one
** the host cannot wait on, a GL sync or a binary Vulkan semaphore, cannot be
** honoured there: the release goes at once). A pooled frame's release fence
** becomes the acquire fence of its slot's next frame.
*/
GPURES_API int gpures_fences_set(gpures_handle handle, gpures_handle acquire,
                                 gpures_handle release);
GPURES_API int gpures_fences_get(gpures_handle handle, gpures_handle *out_acquire,
                                 gpures_handle *out_release);
/*
** The common case in one call each side. begin_access waits (up to
** timeout_ns) on the handle's acquire fence and, for a DmaBufHandle whose
** kernel has DMA_BUF_IOCTL_EXPORT_SYNC_FILE, on the buffer's implicit fences,
** then clears the acquire fence. end_access sets `release` (may be 0) as the
** release fence, replacing any.
*/
GPURES_API int gpures_begin_access(gpures_handle handle, int64_t timeout_ns);
GPURES_API int gpures_end_access(gpures_handle handle, gpures_handle release);

/* DMA_BUF_IOCTL_EXPORT_SYNC_FILE / IMPORT_SYNC_FILE access flags. */
#define GPURES_DMA_BUF_SYNC_READ  (1u << 0)
#define GPURES_DMA_BUF_SYNC_WRITE (1u << 1)
/*
** Implicit sync of a real dma-buf, made explicit: the fences of fd `index`
** that an access of `flags` must wait for, as a SyncFile; and a SyncFile's
** fence added to the buffer's implicit fences. GPURES_E_UNSUPPORTED naming
** "fds[i]" when the kernel or the fd lacks them (a memfd, a kernel before 6.0).
*/
GPURES_API int gpures_dma_buf_export_sync_file(gpures_handle dma_buf, uint32_t index,
                                               uint32_t flags, gpures_handle *out_sync);
GPURES_API int gpures_dma_buf_import_sync_file(gpures_handle dma_buf, uint32_t index,
                                               uint32_t flags, gpures_handle sync);

/* ------------------------------------------------------------------ devices */
/*
** Which device a handle's memory or work lives on. Vulkan and CUDA name a GPU
** by the same 16-byte UUID (VkPhysicalDeviceIDProperties.deviceUUID equals
** cuDeviceGetUuid), so a VULKAN_UUID and a CUDA_UUID compare by their bytes.
** Values of the enum set GPURES_ENUM_DEVICE_ID_KIND.
*/
enum {
  GPURES_DEVICE_NONE = 0,              /* not tied to one device (a dma-buf: any importer) */
  GPURES_DEVICE_CPU = 1,               /* host memory */
  GPURES_DEVICE_VULKAN_UUID = 2,       /* bytes: deviceUUID */
  GPURES_DEVICE_CUDA_UUID = 3,         /* bytes: CUuuid */
  GPURES_DEVICE_DXGI_LUID = 4,         /* bytes 0..7: LowPart, HighPart, little-endian */
  GPURES_DEVICE_METAL_REGISTRY_ID = 5, /* bytes 0..7: registryID, little-endian */
  GPURES_DEVICE_OPENCL = 6             /* bytes 0..7: cl_platform_id, 8..15: cl_device_id */
};

typedef struct gpures_device_id {
  uint32_t kind;   /* GPURES_DEVICE_* */
  uint32_t reserved;
  uint8_t bytes[16];
} gpures_device_id;

/*
** The device of a handle, from the descriptor fields its kind marks as its
** device identity (GPURES_FIELD_DEVICE). GPURES_DEVICE_NONE when the handle
** names none (an optional UUID left out, a dma-buf, a GL name). An OpenClMem's
** device is asked of OpenCL (its queue's device), opened with dlopen.
*/
GPURES_API int gpures_device_of(gpures_handle handle, gpures_device_id *out_id);
/* Answers of gpures_device_compare(). */
enum { GPURES_DEVICE_DIFFERENT = 0, GPURES_DEVICE_SAME = 1, GPURES_DEVICE_UNKNOWN = 2 };
/*
** SAME or DIFFERENT when the two ids can be compared (equal kinds, or a
** Vulkan UUID against a CUDA UUID), UNKNOWN when either is NONE or their kinds
** name devices in different terms (a LUID against a UUID).
*/
GPURES_API int gpures_device_compare(const gpures_device_id *a, const gpures_device_id *b);

/* What a consumer says about its device. */
typedef struct gpures_device_info {
  uint32_t struct_size;
  uint32_t vendor_id;      /* PCI vendor (0x10de NVIDIA, 0x10005 Mesa's software devices), or 0 */
  uint32_t device_id;      /* PCI device, or 0 */
  uint32_t has_luid;       /* 1 when luid holds the adapter's LUID (Windows) */
  gpures_device_id id;
  uint8_t luid[8];
  char name[256];          /* NUL-terminated */
} gpures_device_info;

/* A Vulkan physical device (vkGetPhysicalDeviceProperties2). get_instance_proc_addr: NULL for the system loader's. */
GPURES_API int gpures_vk_device_info(void *instance, void *physical_device,
                                     void *get_instance_proc_addr, gpures_device_info *out);
/* A CUDA device by ordinal (cuDeviceGetName, cuDeviceGetUuid_v2), libcuda opened with dlopen. */
GPURES_API int gpures_cuda_device_info(int32_t ordinal, gpures_device_info *out);

/* ------------------------------------------------------------- capabilities */
/*
** What a consumer can import: rows of (pixel format, DRM modifier, memory
** kinds). A producer lists what it can make the same way, in its order of
** preference; gpures_negotiate() picks the first of its rows that the
** consumer takes.
*/
#define GPURES_MEMORY_DMA_BUF   (1u << 0) /* DmaBufHandle (a memfd where the driver takes one) */
#define GPURES_MEMORY_OPAQUE_FD (1u << 1) /* VkOpaqueFd: exported Vulkan memory */
#define GPURES_MEMORY_HOST      (1u << 2) /* mapped CPU memory, copied in (an upload) */
#define GPURES_MEMORY_CUDA_VMM_FD (1u << 3) /* CudaVmmFd: exported CUDA VMM memory */

#define GPURES_MODIFIER_LINEAR  0ull
#define GPURES_MODIFIER_INVALID 0x00ffffffffffffffull /* "implicit": the driver's own choice */

/* gpures_format_cap.flags */
#define GPURES_CAP_EXTERNAL_ONLY (1u << 0) /* EGL: only as GL_TEXTURE_EXTERNAL_OES */

typedef struct gpures_format_cap {
  uint32_t format;      /* PixelFormat id */
  uint32_t memory;      /* GPURES_MEMORY_* it can come in */
  uint64_t modifier;    /* DRM format modifier */
  uint32_t max_width;   /* 0: not known */
  uint32_t max_height;
  uint32_t row_align;   /* row pitch and plane offset alignment it needs, a power of two; 0 or 1: any */
  uint32_t flags;       /* GPURES_CAP_* */
} gpures_format_cap;

/*
** The capability queries fill out[0 .. capacity-1] and set *out_count to the
** rows there are; with too small a capacity they return
** GPURES_E_BUFFER_TOO_SMALL (and *out_count says how many to make room for).
** Only formats gpures names (a PixelFormat with a DRM fourcc) are listed.
**
** Vulkan: vkGetPhysicalDeviceImageFormatProperties2 with external-memory info
** (DMA_BUF and OPAQUE_FD handle types), and with VK_EXT_image_drm_format_modifier
** each modifier of vkGetPhysicalDeviceFormatProperties2's list; without it,
** LINEAR tiling only.
*/
GPURES_API int gpures_caps_vulkan(void *instance, void *physical_device,
                                  void *get_instance_proc_addr, gpures_format_cap *out,
                                  uint32_t capacity, uint32_t *out_count);
/* EGL: eglQueryDmaBufFormatsEXT / eglQueryDmaBufModifiersEXT of an initialized display. */
GPURES_API int gpures_caps_egl(void *display, gpures_format_cap *out, uint32_t capacity,
                               uint32_t *out_count);
/* CUDA: opaque fds and CUDA VMM fds, imported as linear memory: every format, LINEAR. */
GPURES_API int gpures_caps_cuda(int32_t ordinal, gpures_format_cap *out, uint32_t capacity,
                                uint32_t *out_count);
/* What a gpures_pool makes: every format with a DRM fourcc, LINEAR, DMA_BUF and HOST. */
GPURES_API int gpures_caps_pool(gpures_format_cap *out, uint32_t capacity, uint32_t *out_count);

typedef struct gpures_negotiated {
  uint32_t struct_size;
  uint32_t format;         /* PixelFormat id */
  uint64_t modifier;
  uint32_t memory;         /* the one GPURES_MEMORY_* bit chosen: DMA_BUF, OPAQUE_FD, CUDA_VMM_FD, HOST */
  uint32_t row_align;      /* the larger of the two sides' */
  uint32_t width;
  uint32_t height;
  uint32_t producer_index; /* the rows chosen */
  uint32_t consumer_index;
  uint32_t num_planes;     /* LINEAR: the layout below; other modifiers: 0 (the allocator's) */
  uint32_t reserved;
  gpures_plane_layout planes[4];
  uint64_t size;           /* LINEAR: bytes of one buffer */
} gpures_negotiated;

/*
** Picks the first producer row that a consumer row matches: the same format
** and modifier, a memory kind in common, width x height within both sides'
** limits. GPURES_E_UNSUPPORTED when none does, and gpures_last_error() says
** why for each format ("NV12: the consumer takes modifiers 0x..., not
** LINEAR"). INVALID_VALUE naming "width"/"height" for a zero or odd extent the
** format refuses. A LINEAR result in DMA_BUF or HOST memory is what
** gpures_pool_create() makes (format, width, height, row_align).
*/
GPURES_API int gpures_negotiate(const gpures_format_cap *producer, uint32_t num_producer,
                                const gpures_format_cap *consumer, uint32_t num_consumer,
                                uint32_t width, uint32_t height, gpures_negotiated *out);

/* ----------------------------------------------------------------- fan-out */
/*
** A fan-out publishes each frame once to every consumer that joined it, each
** over a sending session of its own: no copy, each buffer announced once per
** consumer, and a slot comes home when every consumer that got its frame
** released it. Each consumer keeps its own pace under the policy it asked for:
**   BLOCK        a queue of `depth` frames; when it is full, publishing waits
**                for this consumer (back-pressure: it gets every frame)
**   DROP_OLDEST  a queue of `depth` frames; when it is full, its oldest
**                undelivered frame is dropped for it (counted)
**   LATEST       a mailbox (depth 1): the newest frame replaces an undelivered one
** A consumer holds at most `window` frames at once (sent to it, not yet
** released); the rest wait in its queue at the producer, where they can still
** be dropped. So a stalled or dead consumer holds at most window + depth
** frames, and the frames all consumers hold never exceed
**     reserve + max(depth) + sum(window)
** (queued frames are the newest frames, shared between queues; frames in
** flight are each consumer's own). A join that would let that bound pass the
** pool's `slots` is refused: with the bound within the pool, a consumer under
** a drop policy never makes the producer wait for a slot. (One exception: a
** consumer refused a new format drains the old frames it had queued, up to
** its depth more, until it has them; the old frames are usually another
** pool's.)
**
** A consumer joins by sending a JOIN (gpures_session_subscribe) as the first
** message on its channel: its policy, depth, window and what it can take
** (format rows, as gpures_negotiate() reads them; none: anything). The
** producer admits it (a WELCOME with the terms granted) or refuses it (a
** REFUSE with the reason, which the consumer's subscribe returns), and the
** consumer gets the next frame published. When the frames' format changes
** (size, pixel format, modifier), a consumer whose rows do not take the new
** one gets the frames of the old one it had queued, then the refusal with the
** reason, and no frame of the new one; the others
** get the new frames in order after every frame of the old format (queues
** are first in, first out), and each old buffer is forgotten only once every
** consumer released it. A consumer that closes or dies leaves: what it held
** comes back (retired, as with any session), its queue is let go.
*/
typedef struct gpures_fanout gpures_fanout;

#define GPURES_POLICY_BLOCK       1u
#define GPURES_POLICY_DROP_OLDEST 2u
#define GPURES_POLICY_LATEST      3u

#define GPURES_FANOUT_MAX_CAPS   24u /* format rows a JOIN carries */
#define GPURES_FANOUT_MAX_DEPTH  64u /* of depth and of window */
#define GPURES_FANOUT_MAX_CONSUMERS 256u

typedef struct gpures_subscription {
  uint32_t struct_size;
  uint32_t policy;   /* GPURES_POLICY_* */
  uint32_t depth;    /* frames queued for it at the producer; 0: 2 (LATEST: 1, the only depth it has) */
  uint32_t window;   /* frames it holds at once; 0: 2 */
  uint32_t num_caps; /* rows of caps; 0: it takes any format */
  uint32_t reserved; /* 0 */
  uint64_t consumer; /* granted: the id the producer knows it by; asking: 0 */
  gpures_device_id device; /* the consumer's device (NONE: any); frames on another: DEVICE_MISMATCH */
  gpures_format_cap caps[GPURES_FANOUT_MAX_CAPS];
} gpures_subscription;

typedef struct gpures_fanout_desc {
  uint32_t struct_size;
  uint32_t slots;         /* the pool's slots (of the largest pool the frames come from) */
  uint32_t reserve;       /* frames the producer holds itself (filling, encoding); 0: 1 */
  uint32_t max_consumers; /* 0: 64; at most GPURES_FANOUT_MAX_CONSUMERS */
  gpures_device_id device; /* the frames' device (a GPU pool's); NONE: the last published frame's */
} gpures_fanout_desc;

typedef struct gpures_consumer_stats {
  uint32_t struct_size;
  uint32_t policy, depth, window;
  uint32_t queued;         /* frames waiting for it at the producer */
  uint32_t in_flight;      /* frames it holds: sent, not released */
  uint64_t consumer;       /* its id */
  uint64_t delivered;      /* frames sent to it */
  uint64_t dropped;        /* frames dropped for it by its policy */
  uint64_t returned;       /* frames it released */
  uint64_t latency_sum_us; /* publish to release, over the returned frames */
  uint64_t latency_max_us;
  uint64_t refused;        /* messages of its that were refused (a release of a frame it never got...) */
} gpures_consumer_stats;

typedef struct gpures_fanout_stats {
  uint32_t struct_size;
  uint32_t consumers; /* joined now */
  uint64_t published; /* frames published */
  uint64_t joined;    /* consumers admitted, ever */
  uint64_t left;      /* of which left: closed, died, left by gpures_fanout_leave(), refused a format */
  uint64_t refused;   /* joins refused */
  uint32_t slots;     /* as created */
  uint32_t bound;     /* reserve + max(depth) + sum(window) of the consumers joined now */
} gpures_fanout_stats;

/* A fan-out for frames of a pool of desc->slots slots; INVALID_VALUE naming the field. */
GPURES_API int gpures_fanout_create(const gpures_fanout_desc *desc, gpures_fanout **out_fanout);
/*
** Reads the JOIN that the consumer at connected channel `fd` sends first,
** waiting up to timeout_ms for it (0: only looks; -1: no limit), and admits
** or refuses it. GPURES_E_TIMED_OUT when none came in time: the fd stays the
** caller's, call again. Any other outcome takes the fd: admitted, it carries
** the consumer's session and *out_consumer is its id; refused (the fan-out is
** full, the pool too small for its terms, terms out of range, caps that do
** not take the frames' format, a device the frames are not on, a first
** message that is no JOIN, a consumer that hung up), the consumer hears the
** reason, the fd is closed, and the call returns it (UNSUPPORTED,
** DEVICE_MISMATCH, INVALID_VALUE or STALE, naming the field).
** An fd that is no channel: INVALID_VALUE naming "fd", and the fd stays the caller's.
*/
GPURES_API int gpures_fanout_join(gpures_fanout *fanout, int fd, int32_t timeout_ms,
                                  uint64_t *out_consumer);
/*
** Offers `frame` (a handle with a buffer identity: pooled or received) to
** every consumer under its policy; the caller keeps its reference. Waits up to
** timeout_ms (0: not at all, -1: no limit) while a BLOCK consumer's queue is
** full: GPURES_E_TIMED_OUT then, and no consumer got the frame (nor did a
** format it brings take effect). STALE when the fan-out is closed;
** UNSUPPORTED naming "acquire" for an acquire fence that cannot cross
** processes, before any consumer got it. A send that fails for the frame
** itself (no free fd) returns its error, the consumers before it having it.
*/
GPURES_API int gpures_fanout_publish(gpures_fanout *fanout, gpures_handle frame, int32_t timeout_ms);
/*
** Posts GPURES_EVENT_ROOM with `token` to event queue `queue` once, when a
** publish may go without waiting (at once if it may now), or with
** GPURES_E_STALE when the fan-out closes: a host's publish waits holding no
** thread. gpures_fanout_notify_cancel() withdraws it.
*/
GPURES_API int gpures_fanout_notify(gpures_fanout *fanout, uint32_t queue, uint64_t token);
GPURES_API int gpures_fanout_notify_cancel(gpures_fanout *fanout, uint32_t queue, uint64_t token);
/*
** Ends a consumer's session as if it had closed: what it holds comes back
** retired, its queue is let go. INVALID_VALUE naming "consumer" for an id
** that is not joined (any more).
*/
GPURES_API int gpures_fanout_leave(gpures_fanout *fanout, uint64_t consumer);
/* The ids of the consumers joined now; BUFFER_TOO_SMALL (and *out_count) when capacity is short. */
GPURES_API int gpures_fanout_consumers(gpures_fanout *fanout, uint64_t *ids, uint32_t capacity,
                                       uint32_t *out_count);
GPURES_API int gpures_fanout_consumer_stats(gpures_fanout *fanout, uint64_t consumer,
                                            gpures_consumer_stats *out);
GPURES_API int gpures_fanout_stats_get(gpures_fanout *fanout, gpures_fanout_stats *out);
/*
** gpures_negotiate() for the set of consumers: the first producer row that
** every consumer with format rows takes. UNSUPPORTED naming the consumer that
** takes none of them ("consumer 3: ..."); with no consumer, the first row.
*/
GPURES_API int gpures_fanout_negotiate(gpures_fanout *fanout, const gpures_format_cap *producer,
                                       uint32_t num_producer, uint32_t width, uint32_t height,
                                       gpures_negotiated *out);
/*
** Ends every consumer's session (their frames come back retired, as a
** sending session's close does), fails waiting publishes with STALE and
** frees the fan-out. NULL: nothing. A publish waiting on another thread
** returns STALE at once; a join waiting there refuses its consumer (STALE)
** when its JOIN comes or its time runs out (both hold the fan-out while they
** wait). Any other call after close, or a second close, uses a pointer that
** is gone.
*/
GPURES_API int gpures_fanout_close(gpures_fanout *fanout);
/*
** The consumer's side: sends the JOIN (the first call) and waits up to
** timeout_ms for the producer's answer. GPURES_OK with the terms granted in
** *out_granted (may be NULL); GPURES_E_TIMED_OUT when no answer came in time
** (call again; the JOIN is not sent twice, `subscription` is then ignored);
** UNSUPPORTED (or INVALID_VALUE) with the producer's reason and field when
** it refused, terms out of range included (the session ends), DEVICE_MISMATCH
** naming "device" when the frames are on another device than
** subscription->device; INVALID_VALUE
** naming "subscription" when the peer answered with anything else (it serves
** no fan-out: the message stays for gpures_session_receive()) or with terms
** out of range, "numCaps" for more rows than a JOIN carries. A receiving
** session, before its first receive; WELCOME and REFUSE reach only a session
** that subscribed (any other refuses them, field "type").
*/
GPURES_API int gpures_session_subscribe(gpures_session *session,
                                        const gpures_subscription *subscription,
                                        int32_t timeout_ms, gpures_subscription *out_granted);

/* ----------------------------------------------------------------- importers */
/*
** An importer turns frames into one API's objects and caches them by the
** frame's buffer identity: gpures_buffer_id() for pooled and received frames
** (so every frame of a pool slot reuses one import), else the (device, inode)
** of each fd plus the layout. An import made for a buffer is freed when the
** buffer goes away (its pool slot gets new memory, its pool closes, its
** sender forgets it), at the importer's next call on its own thread, and is
** never evicted; an import keyed by inode is freed when the cache is full (the
** least recently used first: keep `capacity` above the number of such frames
** held at once), by gpures_importer_forget() or at destroy. Every import is
** freed exactly once (gpures_importer_stats: imports == freed + cached).
**
** The objects an import gives are the importer's: use them while you hold
** the frame, and do not free them. Calls on one importer are serialized (any
** thread; EGL: with its context current on the calling thread).
**
** Refusals: a frame of a kind the API cannot import is WRONG_KIND naming
** "frame"; a released frame STALE; a frame of another device DEVICE_MISMATCH
** naming "deviceUuid"; a format or modifier the device refuses UNSUPPORTED
** naming "format" or "modifier"; a layout the API refuses INVALID_VALUE naming
** the plane ("planes[1].stride"). Nothing is cached or leaked on failure.
*/
typedef struct gpures_importer gpures_importer;

typedef struct gpures_importer_stats {
  uint32_t struct_size;
  uint32_t cached;         /* imports held now */
  uint64_t imports;        /* imports made (cache misses that succeeded) */
  uint64_t hits;           /* imports answered from the cache */
  uint64_t freed;          /* imports freed */
  uint64_t failed;         /* imports the API refused */
} gpures_importer_stats;

GPURES_API int gpures_importer_stats_get(gpures_importer *importer, gpures_importer_stats *out);
/* The importer's device (what frames are matched against). */
GPURES_API int gpures_importer_device(gpures_importer *importer, gpures_device_info *out);
/* Frees the frame's cached import now, if there is one. */
GPURES_API int gpures_importer_forget(gpures_importer *importer, gpures_handle frame);
/* Frees the imports whose buffer went away (every import call does this first). */
GPURES_API int gpures_importer_collect(gpures_importer *importer);
/* Frees every import and the importer. The pointer must not be used after this call. */
GPURES_API int gpures_importer_destroy(gpures_importer *importer);

/* gpures_vk_importer_desc.flags: what an import makes over the memory. */
#define GPURES_VK_IMPORT_IMAGE  (1u << 0) /* a VkImage (linear, or the frame's modifier) */
#define GPURES_VK_IMPORT_BUFFER (1u << 1) /* a VkBuffer over the whole of memory 0 */

typedef struct gpures_vk_importer_desc {
  uint32_t struct_size;
  uint32_t flags;                /* GPURES_VK_IMPORT_*, at least one */
  void *instance;                /* VkInstance */
  void *physical_device;         /* VkPhysicalDevice */
  void *device;                  /* VkDevice with VK_KHR_external_memory_fd (+ _dma_buf for DmaBufHandle) */
  void *get_instance_proc_addr;  /* PFN_vkGetInstanceProcAddr, NULL for the system loader's */
  uint32_t capacity;             /* imports cached at most, 0: 64 */
  uint32_t usage;                /* applied to image and buffer; 0: image SAMPLED|TRANSFER_SRC|TRANSFER_DST, buffer TRANSFER_SRC|TRANSFER_DST|STORAGE */
} gpures_vk_importer_desc;

typedef struct gpures_vk_imported {
  uint32_t struct_size;
  uint32_t cached;               /* 1 when it came from the cache */
  uint32_t num_memories;         /* one VkDeviceMemory per distinct fd */
  uint32_t vk_format;            /* the image's VkFormat */
  uint64_t memories[4];          /* VkDeviceMemory */
  uint64_t image;                /* VkImage, or 0 */
  uint64_t buffer;               /* VkBuffer, or 0 */
  uint64_t size;                 /* bytes of memories[0] */
  uint64_t offset;               /* of the resource in memories[0] */
} gpures_vk_imported;

/* DmaBufHandle and VkOpaqueFd frames into Vulkan memory (VK_EXT_external_memory_dma_buf, opaque fds). */
GPURES_API int gpures_vk_importer_create(const gpures_vk_importer_desc *desc,
                                         gpures_importer **out_importer);
GPURES_API int gpures_vk_import(gpures_importer *importer, gpures_handle frame,
                                gpures_vk_imported *out);

/*
** A frame pool in exported Vulkan memory (gpures_pool_* calls as for any
** pool): each slot a VkBuffer over memory allocated exportable as an opaque
** fd, its frames VkOpaqueFd handles (rows `row_pitch` apart, later planes
** straight after plane 0, as gpures_vk_opaque_fd_desc says) that a session
** sends once per slot and a receiver's Vulkan or CUDA importer imports once.
** The producer writes a slot through its own objects (gpures_vk_pool_objects)
** and orders its writes for the consumer with the frame's fences. The close
** frees every Vulkan object of the pool, so `device` must outlive
** gpures_pool_close(), not the frames: memory still held lives on in the
** fds of its frames. Finish the producer's GPU work on a slot before the
** close and before its frame's last release (a slot whose consumer kept it
** gets new memory then, its old objects freed): Vulkan frees no memory that
** a pending submission uses. Linux only.
*/
#define GPURES_VK_POOL_HOST_VISIBLE (1u << 0) /* memory the host can map; else device-local first */

typedef struct gpures_vk_pool_desc {
  uint32_t struct_size;
  uint32_t flags;                /* GPURES_VK_POOL_* */
  uint32_t format;               /* PixelFormat id */
  uint32_t width;                /* not 0 */
  uint32_t height;               /* not 0 */
  uint32_t slots;                /* 1..GPURES_POOL_MAX_SLOTS */
  uint32_t row_align;            /* a power of two up to 4096; 0 means 256 */
  uint32_t usage;                /* VkBufferUsageFlags; 0: TRANSFER_SRC|TRANSFER_DST|STORAGE */
  void *instance;                /* VkInstance */
  void *physical_device;         /* VkPhysicalDevice */
  void *device;                  /* VkDevice with VK_KHR_external_memory_fd */
  void *get_instance_proc_addr;  /* PFN_vkGetInstanceProcAddr, NULL for the system loader's */
} gpures_vk_pool_desc;

/* A slot's own Vulkan objects, the producer's to write through (the pool's: do not free them). */
typedef struct gpures_vk_pool_slot {
  uint32_t struct_size;
  uint32_t memory_type_index;    /* of memory */
  uint64_t memory;               /* VkDeviceMemory */
  uint64_t buffer;               /* VkBuffer bound over all of memory */
  uint64_t size;                 /* bytes of memory */
  uint32_t row_pitch;            /* bytes between rows of plane 0 */
  uint32_t reserved;
} gpures_vk_pool_slot;

GPURES_API int gpures_vk_pool_create(const gpures_vk_pool_desc *desc, gpures_pool **out_pool);
/*
** The objects of the slot whose frame `frame` is (held now): INVALID_VALUE
** naming "frame" for a frame not of this pool, naming "pool" for a pool that
** is not a Vulkan pool. After gpures_pool_close() the pool pointer must not
** be used, here as anywhere.
*/
GPURES_API int gpures_vk_pool_objects(gpures_pool *pool, gpures_handle frame,
                                      gpures_vk_pool_slot *out);

/*
** Frame pools in CUDA memory: each slot is a VMM allocation (cuMemCreate,
** pinned on the device, exportable as a POSIX fd) mapped read-write in the
** pool's context; its frames are CudaVmmFd handles over the exported fd (rows
** at rowPitch, planes one after another), so a session sends the fd once per
** slot and a receiver's CudaImporter maps it once. Every gpures_pool_* call,
** session and fan-out works on them unchanged. libcuda is opened with dlopen:
** without it, UNSUPPORTED naming libcuda.so.1.
**
** The context must outlive gpures_pool_close(), not the frames: the close
** unmaps and releases every allocation, and memory still held lives on in the
** fds of its frames. The producer's GPU work on a slot must be finished (or
** ordered before the consumer's by the frame's acquire fence) before its
** frame is sent, and finished before the pool's close and before the frame's
** last release.
*/
typedef struct gpures_cuda_pool_desc {
  uint32_t struct_size;
  uint32_t flags;                /* 0 */
  uint32_t format;               /* PixelFormat id */
  uint32_t width;                /* not 0 */
  uint32_t height;               /* not 0 */
  uint32_t slots;                /* 1..GPURES_POOL_MAX_SLOTS */
  uint32_t row_align;            /* a power of two up to 4096; 0 means 256 */
  int32_t device;                /* CUdevice ordinal */
  void *context;                 /* CUcontext on that device, NULL for its primary context */
} gpures_cuda_pool_desc;

/* A slot's own CUDA memory, the producer's to write (the pool's: do not unmap or release it). */
typedef struct gpures_cuda_pool_slot {
  uint32_t struct_size;
  uint32_t row_pitch;            /* bytes between rows of plane 0 */
  uint64_t ptr;                  /* CUdeviceptr of the allocation, mapped in the pool's context */
  uint64_t size;                 /* bytes of the allocation */
  uint64_t allocation;           /* CUmemGenericAllocationHandle */
} gpures_cuda_pool_slot;

GPURES_API int gpures_cuda_pool_create(const gpures_cuda_pool_desc *desc, gpures_pool **out_pool);
/* The memory of the slot whose frame `frame` is (held now), as gpures_vk_pool_objects(). */
GPURES_API int gpures_cuda_pool_objects(gpures_pool *pool, gpures_handle frame,
                                        gpures_cuda_pool_slot *out);

typedef struct gpures_egl_importer_desc {
  uint32_t struct_size;
  uint32_t flags;                /* 0 */
  void *display;                 /* an initialized EGLDisplay with EGL_EXT_image_dma_buf_import */
  void *get_proc_address;        /* eglGetProcAddress, NULL for the system libEGL's */
  uint32_t capacity;             /* 0: 64 */
  uint32_t reserved;
} gpures_egl_importer_desc;

typedef struct gpures_egl_imported {
  uint32_t struct_size;
  uint32_t cached;
  uint32_t texture;              /* GL texture name with the image as its storage */
  uint32_t target;               /* GL_TEXTURE_2D, or GL_TEXTURE_EXTERNAL_OES (YUV, sampled as RGB) */
  void *image;                   /* EGLImage */
} gpures_egl_imported;

/*
** DmaBufHandle frames into an EGLImage and a GL texture of the EGL context
** current at create (UNSUPPORTED naming "context" without one); every call
** needs that context current, since a texture name means something in one
** context only.
*/
GPURES_API int gpures_egl_importer_create(const gpures_egl_importer_desc *desc,
                                          gpures_importer **out_importer);
GPURES_API int gpures_egl_import(gpures_importer *importer, gpures_handle frame,
                                 gpures_egl_imported *out);

typedef struct gpures_cuda_importer_desc {
  uint32_t struct_size;
  uint32_t flags;                /* 0 */
  int32_t device;                /* CUdevice ordinal */
  uint32_t capacity;             /* 0: 64 */
  void *context;                 /* CUcontext, NULL for the device's primary context */
} gpures_cuda_importer_desc;

typedef struct gpures_cuda_imported {
  uint32_t struct_size;
  uint32_t cached;
  uint64_t ptr;                  /* CUdeviceptr of the resource (the frame's offset applied) */
  uint64_t size;                 /* bytes from ptr */
  uint64_t external_memory;      /* CUexternalMemory */
  gpures_handle handle;          /* a new reference to the import's CudaPtr2D (a frame with rows) or
                                    CudaBufferHandle over ptr: release it. An out struct that ends
                                    before it gets none (the cheapest call: no reference taken) */
} gpures_cuda_imported;

/* VkOpaqueFd frames into CUDA (cuImportExternalMemory + cuExternalMemoryGetMappedBuffer). */
GPURES_API int gpures_cuda_importer_create(const gpures_cuda_importer_desc *desc,
                                           gpures_importer **out_importer);
GPURES_API int gpures_cuda_import(gpures_importer *importer, gpures_handle frame,
                                  gpures_cuda_imported *out);

/* ------------------------------------------------------------------ codecs */
/*
** Video decoders and encoders of FFmpeg's libavcodec, opened with dlopen at
** first use and never linked: a host without FFmpeg loads gpures as before,
** and the calls below fail with GPURES_E_UNSUPPORTED naming the library and
** the package that has it. GPURES_LIBAVCODEC, when set, is the path of the
** libavcodec to open (it brings its own libavutil); otherwise the dynamic
** linker is asked for libavcodec.so.62, then .59. gpures reads a few fields
** of FFmpeg's structs, and knows where they sit in libavcodec 59 (FFmpeg 5.1)
** and 62 (FFmpeg 8): another major is refused by name, never guessed, and a
** library whose layout does not match its major is refused at open.
**
** A decoder writes each frame straight into a slot of a frame pool of its own
** (FFmpeg's get_buffer2), so what gpures_decoder_receive() gives is a pooled
** DmaBufHandle: send it over a session, give it to a Worker, import it, with
** no copy after the decoder wrote it. Its slot comes home once the decoder no
** longer needs it as a reference and every holder released the frame; until
** then the frame must be read, never written. An encoder reads a frame's
** memory in place, and holds the frame until libavcodec lets it go. A copy is
** made only where a codec leaves no choice (a decoder that allocates its own
** frames), and counted: gpures_codec_stats_get(). Linux only (pools are
** memfds); elsewhere every call fails with GPURES_E_UNSUPPORTED_PLATFORM.
*/
typedef struct gpures_codec_info {
  uint32_t struct_size;
  uint32_t avcodec_version;  /* (major << 16) | (minor << 8) | micro */
  uint32_t avutil_version;
  uint32_t reserved;
  char library[256];         /* the libavcodec opened, as it was named */
} gpures_codec_info;

/* Opens FFmpeg if it is not open yet, and says which one. */
GPURES_API int gpures_codec_library(gpures_codec_info *out);

#define GPURES_CODEC_DECODER (1u << 0)
#define GPURES_CODEC_ENCODER (1u << 1)
/* OK when libavcodec has a video decoder (or encoder: `flags`) of that name; UNSUPPORTED naming "codec" otherwise. */
GPURES_API int gpures_codec_find(const char *name, uint32_t flags);

typedef struct gpures_codec_stats {
  uint32_t struct_size;
  uint32_t reserved;
  uint64_t decoded;          /* frames out of every decoder of the process */
  uint64_t encoded;          /* frames into every encoder */
  uint64_t copied_frames;    /* frames gpures copied on their way */
  uint64_t copied_bytes;     /* and their bytes */
} gpures_codec_stats;
GPURES_API int gpures_codec_stats_get(gpures_codec_stats *out);

/* Compressed data: what a decoder takes and an encoder gives. */
typedef struct gpures_packet {
  uint32_t struct_size;
  uint32_t flags;            /* GPURES_PACKET_KEY: a key frame */
  const uint8_t *data;
  uint64_t size;             /* below 2^31 */
  int64_t pts;               /* in the codec's timebase */
  int64_t dts;               /* decode order (an encoder's output; decoders ignore it) */
  int64_t duration;          /* 0: unknown */
} gpures_packet;
#define GPURES_PACKET_KEY (1u << 0)
/* A demuxed packet to decode and not show (pre-roll before an edit list's start). */
#define GPURES_PACKET_DISCARD (1u << 1)

typedef struct gpures_decoder gpures_decoder;
typedef struct gpures_decoder_desc {
  uint32_t struct_size;
  uint32_t flags;            /* 0 */
  const char *codec;         /* a libavcodec decoder: "h264", "hevc", "vp9", "libdav1d", ... */
  const uint8_t *extradata;  /* the stream's configuration record (avcC, hvcC, ...), or NULL */
  uint32_t extradata_size;   /* up to 1 MiB */
  uint32_t slots;            /* frames of its pool, 2..256: the decoder's references and what
                                the application holds at once; 0 means 16 + threads + 8 */
  uint32_t threads;          /* decoding threads, 1..64; 0 means 1 */
  uint32_t timebase_num;     /* seconds per pts unit = num / den; 0/0 means 1/1000000 */
  uint32_t timebase_den;
  uint32_t reserved;
} gpures_decoder_desc;

GPURES_API int gpures_decoder_create(const gpures_decoder_desc *desc, gpures_decoder **out);
/*
** Gives the decoder one packet; NULL, or a packet of size 0, drains it: every
** frame still inside comes out of gpures_decoder_receive(), after which the
** decoder starts afresh (its next packet must be a key frame). Frames the
** decoder had ready are kept for gpures_decoder_receive(). GPURES_E_TIMED_OUT
** naming "slots" when every slot of its pool is held: the packet was not
** taken; release frames and send it again. A packet the decoder cannot read
** gets INVALID_VALUE naming "packet".
*/
GPURES_API int gpures_decoder_send(gpures_decoder *decoder, const gpures_packet *packet);
/*
** The next decoded frame, a new reference: a DmaBufHandle of the decoder's
** pool, whose metadata has its sequence (frames out of this decoder so far),
** its timing (pts and duration in the decoder's timebase), its visible
** rectangle (the decoder's crop of the coded frame) and its colour. 0 when no
** frame is ready: send more (or, after a drain, the drain is complete).
** GPURES_E_TIMED_OUT naming "slots" when a decoder that allocates its own
** frames has one to copy and every slot is held: the frame is kept; release
** frames and receive again.
*/
GPURES_API int gpures_decoder_receive(gpures_decoder *decoder, gpures_handle *out_frame);
/*
** For hosts that decode off their own thread (a JavaScript isolate, an event
** loop): gpures_decoder_queue() copies a packet (NULL: a drain) into the
** decoder, cheaply; gpures_decoder_run(), on any one thread at a time, decodes
** every packet queued and keeps the frames for gpures_decoder_receive(),
** touching no memory of the caller's; so a host whose memory may go while a
** run goes on (an isolate that ends) leaves nothing to be written into. Queue
** and receive must not be called while a run goes on (one step at a time). A run
** that finds every slot held stops with TIMED_OUT naming "slots", keeping the
** rest queued for the next run.
*/
GPURES_API int gpures_decoder_queue(gpures_decoder *decoder, const gpures_packet *packet);
GPURES_API int gpures_decoder_run(gpures_decoder *decoder);
/* The last run's status, its error made the calling thread's (a run's is its own thread's). */
GPURES_API int gpures_decoder_last_run(gpures_decoder *decoder);
/*
** For a host that waits for a stalled decoder's slots with no thread: as
** gpures_pool_notify() on the decoder's pool, SLOT_FREE with `token` is posted
** on `queue` once one of its slots is free (at once if one is), or with
** GPURES_E_STALE when the decoder moved to a pool of another shape; either way,
** run again. INVALID_VALUE naming "decoder" before it has a pool.
*/
GPURES_API int gpures_decoder_notify(gpures_decoder *decoder, uint32_t queue, uint64_t token);
/* Withdraws a notice not posted yet, as gpures_pool_notify_cancel() (`why` likewise). */
GPURES_API int gpures_decoder_notify_cancel(gpures_decoder *decoder, uint32_t queue, uint64_t token,
                                            int why);
/* Frees the decoder; frames it gave out stay valid, each slot going when its frame does. */
GPURES_API int gpures_decoder_destroy(gpures_decoder *decoder);

typedef struct gpures_encoder gpures_encoder;
typedef struct gpures_encoder_desc {
  uint32_t struct_size;
  uint32_t flags;            /* GPURES_ENCODER_GLOBAL_HEADER */
  const char *codec;         /* a libavcodec encoder: "libx264", "libvpx-vp9", "libaom-av1", ... */
  const char *options;       /* the encoder's own options, "preset=ultrafast:crf=23", or NULL */
  uint32_t format;           /* PixelFormat of the frames it takes */
  uint32_t width;            /* of every frame, not 0 */
  uint32_t height;
  uint32_t timebase_num;     /* of pts and duration, in and out; 0/0 means 1/1000000 */
  uint32_t timebase_den;
  uint32_t framerate_num;    /* 0/0: not known */
  uint32_t framerate_den;
  uint32_t gop;              /* frames from one key frame to the next at most; 0: the encoder's */
  uint32_t max_b_frames;     /* B-frames in a row: 0 (none, packets in presentation order) .. 16 */
  uint32_t threads;          /* 0: the encoder's default */
  uint64_t bitrate;          /* bits per second; 0: the encoder's default */
} gpures_encoder_desc;
/* The stream's configuration (SPS/PPS, ...) goes in gpures_encoder_extradata(), not in key frames. */
#define GPURES_ENCODER_GLOBAL_HEADER (1u << 0)

GPURES_API int gpures_encoder_create(const gpures_encoder_desc *desc, gpures_encoder **out);
/*
** Gives the encoder one frame: a DmaBufHandle of the encoder's format, width
** and height (a pool's frame, here or received from another process), read
** in place. Its pts is its metadata's timing rescaled to the encoder's
** timebase, or else its sequence, or else the number of frames sent before
** it. GPURES_PACKET_KEY in `flags` makes it a key frame. frame 0 drains: every
** packet still inside comes out of gpures_encoder_receive(), and the encoder
** takes no frame after it.
*/
GPURES_API int gpures_encoder_send(gpures_encoder *encoder, gpures_handle frame, uint32_t flags);
/*
** As for decoders: gpures_encoder_queue() checks a frame and holds it (0: a
** drain), gpures_encoder_run() encodes every frame queued and keeps the
** packets for gpures_encoder_receive(), touching no memory of the caller's.
** A frame a run could not encode is released, and the run says why.
*/
GPURES_API int gpures_encoder_queue(gpures_encoder *encoder, gpures_handle frame, uint32_t flags);
/*
** As gpures_encoder_queue(), with the frame's pts given (in the encoder's
** timebase) instead of read from its metadata: for frames that share one
** handle and not one timestamp (a host's frame objects over one slot).
*/
GPURES_API int gpures_encoder_queue_at(gpures_encoder *encoder, gpures_handle frame, uint32_t flags,
                                       int64_t pts);
GPURES_API int gpures_encoder_run(gpures_encoder *encoder);
GPURES_API int gpures_encoder_last_run(gpures_encoder *encoder);
/*
** The next packet: out->data is the encoder's, valid until its next receive
** or destroy. out->size 0 when none is ready.
*/
GPURES_API int gpures_encoder_receive(gpures_encoder *encoder, gpures_packet *out);
/* The encoder's extradata (GPURES_ENCODER_GLOBAL_HEADER), copied into `out`; BUFFER_TOO_SMALL with *out_size set. */
GPURES_API int gpures_encoder_extradata(gpures_encoder *encoder, uint8_t *out, uint32_t capacity,
                                        uint32_t *out_size);
/* Frees the encoder, and releases every frame it still held. */
GPURES_API int gpures_encoder_destroy(gpures_encoder *encoder);

/* -------------------------------------------------------------- containers */
/*
** Files and streams of libavformat (FFmpeg's, opened with dlopen like
** libavcodec: GPURES_LIBAVFORMAT, else the libavformat of libavcodec's major
** beside it). A demuxer reads a container's tracks and their packets; a muxer
** writes packets into one. Both copy compressed data only, never a frame.
**
** libavformat parses what it is given, and can open more than the one input
** (a playlist names other files and URLs). A demuxer opens the input itself
** under `protocols` (nested opens held to it too): by default "file" for a
** path, and for a URL of a known scheme (http, https, rtmp, rtmps, srt, udp,
** tcp, file) that scheme and what carries it (https and rtmps check the
** server's certificate against the system's authorities); any other scheme (pipe:,
** fd:, subfile:, ...) only when `protocols` names it. It probes the input and
** refuses a container not in `formats` (by default those that open nothing
** else: no playlists, no concatenation lists, no image sequences), and nested
** demuxers are held to the list too. Open, read and a muxer's run block on the
** calling thread, so hosts with an event loop call them off it
** (gpures_*_last_run() then makes the error the host thread's); no other call
** on the same demuxer or muxer may overlap them, except *_interrupt(), which
** any thread may call to make them return CANCELLED.
*/
typedef struct gpures_demuxer gpures_demuxer;
typedef struct gpures_demuxer_desc {
  uint32_t struct_size;
  uint32_t flags;            /* 0 */
  const char *url;           /* a path, or a URL libavformat reads */
  const char *format;        /* a demuxer's name ("mov", "matroska", "mpegts"); NULL: probe */
  const char *protocols;     /* libavformat's protocols it may open, comma-separated; NULL: see above */
  const char *formats;       /* the demuxers probing may pick, comma-separated; NULL: see above */
  uint32_t timeout_ms;       /* for network I/O to make progress; 0: 30 s for a URL, none for a path */
  uint32_t reserved;
} gpures_demuxer_desc;

#define GPURES_MEDIA_OTHER 0u
#define GPURES_MEDIA_VIDEO 1u
#define GPURES_MEDIA_AUDIO 2u
#define GPURES_MEDIA_SUBTITLE 3u
#define GPURES_TRACK_DEFAULT (1u << 0) /* the container marks it the one to play */
#define GPURES_TRACK_END 0xffffffffu   /* no packet: the input ended */

typedef struct gpures_track_info {
  uint32_t struct_size;
  uint32_t media;            /* GPURES_MEDIA_* */
  uint32_t flags;            /* GPURES_TRACK_DEFAULT */
  uint32_t extradata_size;   /* of its configuration record: gpures_demuxer_extradata() */
  char codec[32];            /* libavcodec's codec name: "h264", "hevc", "vp9", "av1"; "" unknown */
  char pixel_format[32];     /* libavutil's name of its pixel format ("yuv420p"), "" unknown */
  uint32_t width, height;    /* coded size; 0 unknown */
  int32_t profile, level;    /* libavcodec's numbers, -99 unknown */
  uint32_t timebase_num;     /* of its packets' timestamps */
  uint32_t timebase_den;
  uint32_t framerate_num;    /* 0/0 unknown */
  uint32_t framerate_den;
  uint32_t sar_num;          /* sample aspect ratio; 0/1 unknown */
  uint32_t sar_den;
  uint32_t color_primaries;  /* H.273 code points, 2: unspecified */
  uint32_t color_transfer;
  uint32_t color_matrix;
  uint32_t color_range;      /* 0 unspecified, 1 limited, 2 full (libavutil's) */
  int64_t duration;          /* in its timebase; -1 unknown */
  int64_t frames;            /* as the container says; 0 unknown */
} gpures_track_info;

/* Checks desc and copies it; no I/O. UNSUPPORTED naming "format" for a demuxer libavformat lacks. */
GPURES_API int gpures_demuxer_create(const gpures_demuxer_desc *desc, gpures_demuxer **out);
/*
** Opens the input and reads ahead to learn its tracks (blocking). Video tracks
** are selected; packets of the others are skipped. OS_ERROR naming "url" and
** the errno for an input that cannot be opened, INVALID_VALUE naming "url" for
** one libavformat cannot read, UNSUPPORTED naming "protocols" or "formats" for
** one they do not allow (a nested open refused is named "formats").
*/
GPURES_API int gpures_demuxer_open(gpures_demuxer *demuxer);
GPURES_API int gpures_demuxer_track_count(gpures_demuxer *demuxer, uint32_t *out_count);
GPURES_API int gpures_demuxer_track(gpures_demuxer *demuxer, uint32_t track, gpures_track_info *out);
/* The track's extradata copied into `out`; BUFFER_TOO_SMALL with *out_size set. */
GPURES_API int gpures_demuxer_extradata(gpures_demuxer *demuxer, uint32_t track, uint8_t *out,
                                        uint32_t capacity, uint32_t *out_size);
/* Whether read() gives the track's packets (selected: 1). */
GPURES_API int gpures_demuxer_select(gpures_demuxer *demuxer, uint32_t track, uint32_t selected);
/*
** Reads the next packet of a selected track (blocking), for
** gpures_demuxer_packet(); at the end of the input it reads none. A packet
** libavformat cannot read gets INVALID_VALUE naming "url"; reading goes on
** with the next call.
*/
GPURES_API int gpures_demuxer_read(gpures_demuxer *demuxer);
GPURES_API int gpures_demuxer_last_run(gpures_demuxer *demuxer);
/*
** The packet the last read gave: *out_track its track, out->data the
** demuxer's, valid until the next read or destroy; timestamps in the track's
** timebase (pts INT64_MIN when the container has none). *out_track is
** GPURES_TRACK_END, and out->size 0, at the end.
*/
GPURES_API int gpures_demuxer_packet(gpures_demuxer *demuxer, uint32_t *out_track,
                                     gpures_packet *out);
/* Makes a blocking open or read return CANCELLED naming "demuxer" (from any thread; no undo). */
GPURES_API int gpures_demuxer_interrupt(gpures_demuxer *demuxer);
GPURES_API int gpures_demuxer_destroy(gpures_demuxer *demuxer);

typedef struct gpures_muxer gpures_muxer;
typedef struct gpures_muxer_desc {
  uint32_t struct_size;
  uint32_t flags;            /* 0 */
  const char *url;           /* the path (or URL) written */
  const char *format;        /* a muxer's name ("mp4", "matroska", "webm", "mpegts"); NULL: by url's extension */
  const char *protocols;     /* as a demuxer's, what the muxer opens itself included */
  const char *options;       /* the muxer's own, "movflags=+faststart", or NULL; no protocol or
                                format list among them */
  uint32_t timeout_ms;       /* for network I/O to make progress; 0: 30 s for a URL, none for a path */
  uint32_t reserved;
} gpures_muxer_desc;

typedef struct gpures_mux_track_desc {
  uint32_t struct_size;
  uint32_t flags;            /* 0 */
  const char *codec;         /* libavcodec's codec name: "h264", "hevc", "vp8", "vp9", "av1" */
  const uint8_t *extradata;  /* its configuration record (avcC, hvcC, av1C), or NULL */
  uint32_t extradata_size;   /* up to 1 MiB */
  uint32_t width, height;    /* not 0 */
  uint32_t timebase_num;     /* of the packets' timestamps; 0/0 means 1/1000000 */
  uint32_t timebase_den;
  uint32_t framerate_num;    /* 0/0 unknown */
  uint32_t framerate_den;
  uint32_t color_primaries;  /* H.273 code points; all three 0, or 2 each: unspecified */
  uint32_t color_transfer;
  uint32_t color_matrix;
  uint32_t color_range;      /* 0 unspecified, 1 limited, 2 full */
} gpures_mux_track_desc;

/* Checks desc and picks the muxer; no I/O. UNSUPPORTED naming "format" for one libavformat lacks. */
GPURES_API int gpures_muxer_create(const gpures_muxer_desc *desc, gpures_muxer **out);
/* A track, before the first packet; UNSUPPORTED naming "codec" for one the container cannot hold. */
GPURES_API int gpures_muxer_add_track(gpures_muxer *muxer, const gpures_mux_track_desc *desc,
                                      uint32_t *out_track);
/*
** Copies a packet of a track (timestamps in its timebase, decode order) for
** gpures_muxer_run(); NULL finishes the file: the run writes its trailer and
** closes it, and the muxer takes nothing after.
*/
GPURES_API int gpures_muxer_queue(gpures_muxer *muxer, uint32_t track, const gpures_packet *packet);
/*
** Writes what was queued (blocking): at the first run it opens the output and
** writes the header. A packet the muxer refuses (timestamps going back) gets
** INVALID_VALUE naming "packet"; the packets after it stay queued. An output
** that cannot be started (an option the muxer does not have: INVALID_VALUE
** naming "options") leaves the muxer unable to write, saying why each call.
*/
GPURES_API int gpures_muxer_run(gpures_muxer *muxer);
GPURES_API int gpures_muxer_last_run(gpures_muxer *muxer);
/* gpures_muxer_queue() then gpures_muxer_run(). */
GPURES_API int gpures_muxer_write(gpures_muxer *muxer, uint32_t track, const gpures_packet *packet);
/* Makes a blocking run return CANCELLED naming "muxer" (from any thread; no undo). */
GPURES_API int gpures_muxer_interrupt(gpures_muxer *muxer);
/* Frees the muxer; an output not finished is closed as it is (without its trailer). */
GPURES_API int gpures_muxer_destroy(gpures_muxer *muxer);

#ifdef __cplusplus
}
#endif

#endif /* GPURES_H */
