/*
** interop.h: what the importers share. importer.c owns everything that is
** the same for every API (the cache keyed by buffer identity, the device
** check, the counts, freeing on buffer-gone); each API file (vulkan.c, egl.c,
** cuda.c) supplies a gpures__import_ops that makes and frees one import.
** Importers are Linux-only (fds); other systems get UNSUPPORTED_PLATFORM from
** every entry point.
*/
#ifndef GPURES_INTEROP_H
#define GPURES_INTEROP_H

#include "../internal.h"

/* A frame as an API file sees it: its kind and descriptor, fds borrowed for the call. */
typedef struct gpures__frame {
  gpures_handle handle;
  uint32_t kind; /* DmaBufHandle, or VkOpaqueFd-shaped: VkOpaqueFd, CudaVmmFd (read as `opaque`) */
  union {
    gpures_dma_buf_handle_desc dma_buf;
    gpures_vk_opaque_fd_desc opaque;
    gpures_cuda_vmm_fd_desc cuda_vmm;
  } desc;
} gpures__frame;

typedef struct gpures__import_ops {
  const char *api;        /* "Vulkan": names the API in errors */
  uint64_t kinds;         /* bit k set: frames of kind k can be imported */
  size_t payload_size;    /* bytes of one import's API objects, at most GPURES__PAYLOAD_MAX */
  /*
  ** Makes the import of `frame` into `payload` (zeroed). The fds in the
  ** descriptor stay the frame's: duplicate one before giving it to an API
  ** that takes ownership. On failure: gpures__fail() naming the field, and
  ** nothing left behind.
  */
  int (*make)(void *api, gpures__op op, const gpures__frame *frame, void *payload);
  /* Frees one import's API objects (on the importer's calling thread). */
  void (*free)(void *api, void *payload);
  /* Frees the API state, after every import is freed. */
  void (*destroy)(void *api);
} gpures__import_ops;

#define GPURES__PAYLOAD_MAX 128u

/*
** A new importer over `api` (which it owns from here: on failure ops->destroy
** frees it). device: what frames are checked against (its id's kind may be
** NONE: no check).
*/
int gpures__importer_new(gpures__op op, const gpures__import_ops *ops, void *api,
                         const gpures_device_info *device, uint32_t capacity,
                         gpures_importer **out);
/*
** The shared import: refuses an importer of other ops (INVALID_VALUE naming
** "importer"), frees what went away, checks the frame (kind, liveness,
** device), answers from the cache or calls ops->make and caches the result.
** Copies the payload to `payload` and sets *out_cached.
*/
int gpures__importer_import(gpures_importer *importer, const gpures__import_ops *ops,
                            const char *verb, gpures_handle frame, void *payload,
                            uint32_t *out_cached);
/*
** The prologue of every *_importer_create: *out NULL (refused when out is
** NULL), desc not NULL, copied into `own` (own_size bytes) as an older or
** newer struct is read.
*/
int gpures__importer_desc(gpures__op op, const void *desc, uint32_t own_size, void *own,
                          gpures_importer **out);

/* The API state of an importer made with `ops`, else NULL. */
void *gpures__importer_api(gpures_importer *importer, const gpures__import_ops *ops);

/* Copies a filled struct to a caller's out struct: min(out->struct_size, filled_size) bytes. */
int gpures__copy_out(gpures__op op, void *out, const void *filled, uint32_t filled_size);

/*
** Capability lists (caps.c), the shape every gpures_caps_* query shares:
** check the arguments, put rows (counting those past capacity), end with the
** count and BUFFER_TOO_SMALL when they did not all fit.
*/
int gpures__caps_args(gpures__op op, const gpures_format_cap *out, uint32_t capacity,
                      const uint32_t *out_count);
void gpures__caps_put(gpures_format_cap *out, uint32_t capacity, uint32_t *count,
                      const gpures_format_cap *cap);
/* `like` once for every PixelFormat with a DRM fourcc (its format set to each). */
void gpures__caps_every_format(const gpures_format_cap *like, gpures_format_cap *out,
                               uint32_t capacity, uint32_t *count);
int gpures__caps_end(gpures__op op, uint32_t capacity, uint32_t count, uint32_t *out_count);

#endif
