/*
** cuda.h: what the CUDA files share (cuda.c: importer, caps, device info;
** cuda_pool.c: pools of exported VMM memory). libcuda.so.1 is opened with
** dlopen on first use, never linked (a host without NVIDIA's driver must
** still load gpures), and no cuda.h is included (the library is
** cross-compiled without SDK headers): the few driver types used are
** declared here with cuda.h's layouts (CUDA 10.2 on, unchanged in 13).
** Entry points that CUDA versioned are resolved by their versioned names
** (cuDeviceGetUuid_v2, cuCtxPushCurrent_v2, ...): the unversioned symbols are
** the old ABI, and CUDA 13 drops some of them.
*/
#ifndef GPURES_INTEROP_CUDA_H
#define GPURES_INTEROP_CUDA_H

#include "interop.h"

typedef int cu_result;
typedef int cu_device;
typedef struct cu_context_st *cu_context;
typedef struct cu_ext_memory_st *cu_ext_memory;
typedef unsigned long long cu_deviceptr;   /* CUdeviceptr_v2 on 64-bit hosts */
typedef unsigned long long cu_mem_handle;  /* CUmemGenericAllocationHandle */

enum {
  CU_OK = 0,
  CU_INVALID_VALUE = 1,
  CU_OUT_OF_MEMORY = 2,
  CU_INVALID_CONTEXT = 201,
  CU_INVALID_HANDLE = 400,
  CU_NOT_SUPPORTED = 801,
  CU_STICKY_FIRST = 700, /* 700..799: the context is unusable from here on */
  CU_STICKY_LAST = 799
};
enum { CU_ATTR_TEXTURE2D_LINEAR_WIDTH = 70, CU_ATTR_TEXTURE2D_LINEAR_HEIGHT = 71 };
enum { CU_ATTR_VMM_SUPPORTED = 102, CU_ATTR_POSIX_FD_SUPPORTED = 103 };
enum { CU_EXT_MEMORY_OPAQUE_FD = 1, CU_EXT_MEMORY_DEDICATED = 1 };
enum {
  CU_MEM_PINNED = 1,            /* CU_MEM_ALLOCATION_TYPE_PINNED */
  CU_MEM_POSIX_FD = 1,          /* CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR */
  CU_MEM_ON_DEVICE = 1,         /* CU_MEM_LOCATION_TYPE_DEVICE */
  CU_MEM_READ_WRITE = 3,        /* CU_MEM_ACCESS_FLAGS_PROT_READWRITE */
  CU_MEM_GRANULARITY_MINIMUM = 0
};

/* CUDA_EXTERNAL_MEMORY_HANDLE_DESC: 104 bytes, the handle union at 8. */
typedef struct {
  int type;
  union {
    int fd;
    struct { void *handle; const void *name; } win32;
    const void *nv_sci_buf_object;
  } handle;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
} cu_ext_memory_desc;

/* CUDA_EXTERNAL_MEMORY_BUFFER_DESC: 88 bytes. */
typedef struct {
  unsigned long long offset;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
} cu_ext_buffer_desc;

/* CUmemLocation, CUmemAllocationProp (32 bytes), CUmemAccessDesc (12 bytes). */
typedef struct { int type; int id; } cu_mem_location;
typedef struct {
  int type;
  int requested_handle_types;
  cu_mem_location location;
  void *win32_metadata;
  struct {
    unsigned char compression_type;
    unsigned char gpu_direct_rdma_capable;
    unsigned short usage;
    unsigned char reserved[4];
  } alloc_flags;
} cu_mem_prop;
typedef struct { cu_mem_location location; int flags; } cu_mem_access;

_Static_assert(sizeof(cu_ext_memory_desc) == 104, "CUDA_EXTERNAL_MEMORY_HANDLE_DESC is 104 bytes");
_Static_assert(offsetof(cu_ext_memory_desc, size) == 24, "its size member is at 24");
_Static_assert(sizeof(cu_ext_buffer_desc) == 88, "CUDA_EXTERNAL_MEMORY_BUFFER_DESC is 88 bytes");
_Static_assert(sizeof(cu_mem_prop) == 32, "CUmemAllocationProp is 32 bytes");
_Static_assert(sizeof(cu_mem_access) == 12, "CUmemAccessDesc is 12 bytes");

/* symbol, member, result, parameters: the entry points gpures calls, all required. */
#define CU_FNS(X)                                                                          \
  X("cuInit", init, cu_result, (unsigned))                                                 \
  X("cuGetErrorName", error_name, cu_result, (cu_result, const char **))                   \
  X("cuDeviceGetCount", device_count, cu_result, (int *))                                  \
  X("cuDeviceGet", device_get, cu_result, (cu_device *, int))                              \
  X("cuDeviceGetName", device_name, cu_result, (char *, int, cu_device))                   \
  X("cuDeviceGetUuid_v2", device_uuid, cu_result, (uint8_t *, cu_device))                  \
  X("cuDeviceGetAttribute", device_attribute, cu_result, (int *, int, cu_device))          \
  X("cuDevicePrimaryCtxRetain", primary_retain, cu_result, (cu_context *, cu_device))      \
  X("cuDevicePrimaryCtxRelease_v2", primary_release, cu_result, (cu_device))               \
  X("cuCtxPushCurrent_v2", push, cu_result, (cu_context))                                  \
  X("cuCtxPopCurrent_v2", pop, cu_result, (cu_context *))                                  \
  X("cuCtxGetDevice", context_device, cu_result, (cu_device *))                            \
  X("cuImportExternalMemory", import_memory, cu_result,                                    \
    (cu_ext_memory *, const cu_ext_memory_desc *))                                         \
  X("cuExternalMemoryGetMappedBuffer", map_buffer, cu_result,                              \
    (cu_deviceptr *, cu_ext_memory, const cu_ext_buffer_desc *))                           \
  X("cuDestroyExternalMemory", destroy_memory, cu_result, (cu_ext_memory))                 \
  X("cuMemFree_v2", mem_free, cu_result, (cu_deviceptr))                                   \
  X("cuMemGetAllocationGranularity", granularity, cu_result,                               \
    (size_t *, const cu_mem_prop *, int))                                                  \
  X("cuMemCreate", mem_create, cu_result,                                                  \
    (cu_mem_handle *, size_t, const cu_mem_prop *, unsigned long long))                    \
  X("cuMemRelease", mem_release, cu_result, (cu_mem_handle))                               \
  X("cuMemExportToShareableHandle", mem_export, cu_result,                                 \
    (void *, cu_mem_handle, int, unsigned long long))                                      \
  X("cuMemImportFromShareableHandle", mem_import, cu_result, (cu_mem_handle *, void *, int)) \
  X("cuMemAddressReserve", address_reserve, cu_result,                                     \
    (cu_deviceptr *, size_t, size_t, cu_deviceptr, unsigned long long))                    \
  X("cuMemAddressFree", address_free, cu_result, (cu_deviceptr, size_t))                   \
  X("cuMemMap", mem_map, cu_result,                                                        \
    (cu_deviceptr, size_t, size_t, cu_mem_handle, unsigned long long))                     \
  X("cuMemUnmap", mem_unmap, cu_result, (cu_deviceptr, size_t))                            \
  X("cuMemSetAccess", mem_set_access, cu_result,                                           \
    (cu_deviceptr, size_t, const cu_mem_access *, size_t))

typedef struct {
#define CU_MEMBER(name, member, result, params) result(*member) params;
  CU_FNS(CU_MEMBER)
#undef CU_MEMBER
} cu_api;

/* The driver's entry points, valid once gpures__cu_ready() said OK. */
extern GPURES__HIDDEN cu_api gpures__cu;

/* The driver, opened and initialized once; UNSUPPORTED naming what is missing otherwise. */
int gpures__cu_ready(gpures__op op);
/*
** A failed CUDA call as a gpures status: OUT_OF_MEMORY, INVALID_VALUE naming
** `field` for a value, handle or context CUDA refused, DEVICE_LOST for the sticky
** errors, UNSUPPORTED for what the device cannot do, OS_ERROR for the rest; the
** message has CUDA's error name.
*/
int gpures__cu_fail(gpures__op op, const char *field, const char *call, cu_result r);
/* CUdevice of an ordinal; INVALID_VALUE naming `field` for one CUDA does not list. */
int gpures__cu_device_of(gpures__op op, const char *field, int32_t ordinal, cu_device *out);
/* The device as gpures_device_info (its CUDA UUID, name, vendor). */
int gpures__cu_describe(gpures__op op, cu_device dev, gpures_device_info *info);

/* A context gpures works in: the caller's, or the device's primary one, retained. */
typedef struct gpures__cu_context {
  cu_context context;
  cu_device device;
  bool retained;
} gpures__cu_context;

/* The caller's context (which must be on `dev`: INVALID_VALUE naming "context"), or the primary. */
int gpures__cu_context_open(gpures__op op, void *context, cu_device dev, gpures__cu_context *out);
/* Releases a retained primary context. */
void gpures__cu_context_close(gpures__cu_context *c);
/* Makes the context current on this thread (undone by gpures__cu_pop). */
int gpures__cu_push(gpures__op op, const gpures__cu_context *c);
void gpures__cu_pop(void);

/*
** VMM memory (cuda_pool.c, cuda.c): a reservation of `size` bytes with
** `handle` mapped over it, read-write for the context's device. Nothing is
** left on failure. Called with the context current.
*/
int gpures__cu_map_whole(gpures__op op, const char *field, cu_device dev, cu_mem_handle handle,
                         uint64_t size, cu_deviceptr *out);
/* Undoes gpures__cu_map_whole (the handle stays the caller's). */
void gpures__cu_unmap_whole(cu_deviceptr ptr, uint64_t size);

#endif
