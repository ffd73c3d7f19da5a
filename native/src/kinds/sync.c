/*
** sync.c: the sync kinds (SyncPoints). What each holds and what create
** refuses; the waits are sync/'s. An fd-backed point must be the fence its
** kind says: a pipe or a file would read as signalled at once.
*/
#include <string.h>

#include "rows.h"

/* An fd the kernel names as another kind of fence (or none) is refused; UNKNOWN passes. */
static int check_fence_fd(gpures__op op, int fd, int want) {
  int type = gpures__fence_fd_type(fd);
  if (type == GPURES__FENCE_FD_UNKNOWN || type == want) return GPURES_OK;
  return gpures__fail(op, GPURES_E_INVALID_VALUE, "fd", "fd %d is %s, not %s", fd,
                      gpures__fence_fd_name(type), gpures__fence_fd_name(want));
}

#define SEMAPHORE_BINARY 0u
#define SEMAPHORE_TIMELINE 1u
#define HANDLE_SYNC_FD 16u

static int check_binary_value(gpures__op op, uint32_t semaphore_type, uint64_t value) {
  if (semaphore_type == SEMAPHORE_BINARY && value != 0)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "value",
                        "value %llu is given for a binary semaphore, which has none",
                        (unsigned long long)value);
  return GPURES_OK;
}

#define T gpures_vk_semaphore_desc
static const gpures_field_info vk_semaphore_fields[] = {
  GPURES__ROW(T, semaphore, "semaphore", GPURES_FIELD_U64, GPURES_E_NULL_HANDLE, 0, "VkSemaphore handle"),
  GPURES__ROW(T, device, "device", GPURES_FIELD_PTR, 0, GPURES_FIELD_OPTIONAL, "VkDevice that owns it; needed for host waits"),
  GPURES__SEMAPHORE_VALUE_ROWS(T),
  GPURES__VULKAN_UUID_ROW(T),
};

static int validate_vk_semaphore(gpures__op op, const void *desc) {
  const T *d = desc;
  return check_binary_value(op, d->semaphore_type, d->value);
}
GPURES__VARIANT(vk_semaphore, vk_semaphore_fields, validate_vk_semaphore);
#undef T

#define T gpures_vk_semaphore_fd_desc
static const gpures_field_info vk_semaphore_fd_fields[] = {
  GPURES__ROW(T, fd, "fd", GPURES_FIELD_FD, 0, 0, "exported semaphore, owned by the handle"),
  GPURES__ENUM_ROW(T, handle_type, "handleType", GPURES_ENUM_SEMAPHORE_HANDLE_TYPE, "opaqueFd or syncFd"),
  GPURES__SEMAPHORE_VALUE_ROWS(T),
  GPURES__DEVICE_ROW(T, device_uuid, "deviceUuid", GPURES_FIELD_UUID, GPURES_HAS_DEVICE_UUID, GPURES_DEVICE_VULKAN_UUID, "UUID of the exporting device"),
};

static int validate_vk_semaphore_fd(gpures__op op, const void *desc) {
  const T *d = desc;
  int status = check_binary_value(op, d->semaphore_type, d->value);
  if (status != GPURES_OK || d->handle_type != HANDLE_SYNC_FD) return status;
  if (d->semaphore_type != SEMAPHORE_BINARY)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "semaphoreType",
                        "a syncFd semaphore is binary (Vulkan exports no timeline as a sync fd)");
  return check_fence_fd(op, d->fd, GPURES__FENCE_FD_SYNC_FILE);
}
GPURES__VARIANT(vk_semaphore_fd, vk_semaphore_fd_fields, validate_vk_semaphore_fd);
#undef T

#define T gpures_d3d12_fence_desc
static const gpures_field_info d3d12_fence_fields[] = {
  GPURES__ROW(T, fence, "fence", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "ID3D12Fence*"),
  GPURES__ROW(T, value, "value", GPURES_FIELD_U64, 0, 0, "fence value that means finished"),
  GPURES__LUID_ROWS(T),
};
GPURES__VARIANT(d3d12_fence, d3d12_fence_fields, NULL);
#undef T

#define T gpures_d3d11_keyed_mutex_desc
static const gpures_field_info d3d11_keyed_mutex_fields[] = {
  GPURES__ROW(T, mutex, "mutex", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "IDXGIKeyedMutex*"),
  GPURES__ROW(T, key, "key", GPURES_FIELD_U64, 0, 0, "key to acquire with"),
};
GPURES__VARIANT(d3d11_keyed_mutex, d3d11_keyed_mutex_fields, NULL);
#undef T

#define T gpures_cuda_event_desc
static const gpures_field_info cuda_event_fields[] = {
  GPURES__ROW(T, event, "event", GPURES_FIELD_U64, GPURES_E_NULL_HANDLE, 0, "CUevent"),
  GPURES__GROUP_ROW(T, value, "value", GPURES_FIELD_U64, GPURES_HAS_VALUE, "the producer's sequence number of the recording"),
  GPURES__CUDA_UUID_ROW(T, "CUuuid of the device"),
};
GPURES__VARIANT(cuda_event, cuda_event_fields, NULL);
#undef T

#define T gpures_cuda_context_event_desc
static const gpures_field_info cuda_context_event_fields[] = {
  GPURES__ROW(T, event, "event", GPURES_FIELD_U64, GPURES_E_NULL_HANDLE, 0, "CUevent"),
  GPURES__ROW(T, context, "context", GPURES_FIELD_U64, GPURES_E_NULL_HANDLE, 0, "CUcontext made current to wait"),
  GPURES__ROW(T, device, "device", GPURES_FIELD_I32, 0, 0, "CUdevice ordinal"),
  GPURES__CUDA_UUID_ROW(T, "CUuuid of the device"),
};

static int validate_cuda_context_event(gpures__op op, const void *desc) {
  const T *d = desc;
  if (d->device < 0)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "device", "device %d is not an ordinal",
                        (int)d->device);
  return GPURES_OK;
}
GPURES__VARIANT(cuda_context_event, cuda_context_event_fields, validate_cuda_context_event);
#undef T

#define T gpures_open_cl_event_desc
static const gpures_field_info open_cl_event_fields[] = {
  GPURES__ROW(T, event, "event", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "cl_event"),
};
GPURES__VARIANT(open_cl_event, open_cl_event_fields, NULL);
#undef T

#define T gpures_metal_event_desc
static const gpures_field_info metal_event_fields[] = {
  GPURES__ROW(T, event, "event", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "id<MTLSharedEvent>"),
  GPURES__ROW(T, value, "value", GPURES_FIELD_U64, 0, 0, "signaled value that means finished"),
  GPURES__DEVICE_ROW(T, registry_id, "registryId", GPURES_FIELD_U64, GPURES_HAS_REGISTRY_ID, GPURES_DEVICE_METAL_REGISTRY_ID, "MTLDevice registryID"),
};
GPURES__VARIANT(metal_event, metal_event_fields, NULL);
#undef T

#define GL_CONTEXT_ROW(T) GPURES__GL_CONTEXT_ROW(T, "the context it lives in")

#define T gpures_gl_semaphore_desc
static const gpures_field_info gl_semaphore_fields[] = {
  GPURES__ROW(T, name, "name", GPURES_FIELD_U32, GPURES_E_NULL_HANDLE, 0, "GL_EXT_semaphore object"),
  GL_CONTEXT_ROW(T),
};
GPURES__VARIANT(gl_semaphore, gl_semaphore_fields, NULL);
#undef T

#define T gpures_gl_sync_desc
static const gpures_field_info gl_sync_fields[] = {
  GPURES__ROW(T, sync, "sync", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "GLsync from glFenceSync"),
  GL_CONTEXT_ROW(T),
};
GPURES__VARIANT(gl_sync, gl_sync_fields, NULL);
#undef T

static int validate_eventfd(gpures__op op, const void *desc) {
  int32_t fd;
  memcpy(&fd, (const char *)desc + 8, sizeof fd); /* every eventfd kind has fd first */
  return check_fence_fd(op, fd, GPURES__FENCE_FD_EVENTFD);
}

#define T gpures_wgpu_submission_desc
_Static_assert(offsetof(T, fd) == 8, "validate_eventfd reads fd at 8");
static const gpures_field_info wgpu_submission_fields[] = {
  GPURES__ROW(T, fd, "fd", GPURES_FIELD_FD, 0, 0, "eventfd the host signals, owned by the handle"),
  GPURES__ROW(T, submission, "submission", GPURES_FIELD_U64, 0, 0, "the host's count of submissions"),
};
GPURES__VARIANT(wgpu_submission, wgpu_submission_fields, validate_eventfd);
#undef T

#define T gpures_wgpu_deferred_desc
_Static_assert(offsetof(T, fd) == 8, "validate_eventfd reads fd at 8");
static const gpures_field_info wgpu_deferred_fields[] = {
  GPURES__ROW(T, fd, "fd", GPURES_FIELD_FD, 0, 0, "eventfd the host signals, owned by the handle"),
  GPURES__ROW(T, slot, "slot", GPURES_FIELD_U64, GPURES_E_NULL_HANDLE, 0, "the host's slot"),
};
GPURES__VARIANT(wgpu_deferred, wgpu_deferred_fields, validate_eventfd);
#undef T

#define T gpures_cpu_fence_desc
_Static_assert(offsetof(T, fd) == 8, "validate_eventfd reads fd at 8");
static const gpures_field_info cpu_fence_fields[] = {
  GPURES__ROW(T, fd, "fd", GPURES_FIELD_FD, 0, GPURES_FIELD_DEVICE(GPURES_DEVICE_CPU), "eventfd, owned by the handle"),
};
GPURES__VARIANT(cpu_fence, cpu_fence_fields, validate_eventfd);
#undef T

/* No fields: C has no empty arrays, so the variant is spelled out. */
const gpures__variant gpures__variant_noop_sync = {
    NULL, 0, (uint32_t)sizeof(gpures_noop_sync_desc), NULL, GPURES__OWNS_FDS_noop_sync};

#define T gpures_sync_file_desc
static const gpures_field_info sync_file_fields[] = {
  GPURES__ROW(T, fd, "fd", GPURES_FIELD_FD, 0, 0, "sync_file, owned by the handle"),
};

static int validate_sync_file(gpures__op op, const void *desc) {
  return check_fence_fd(op, ((const T *)desc)->fd, GPURES__FENCE_FD_SYNC_FILE);
}
GPURES__VARIANT(sync_file, sync_file_fields, validate_sync_file);
#undef T

#define T gpures_drm_syncobj_desc
static const gpures_field_info drm_syncobj_fields[] = {
  GPURES__ROW(T, fd, "fd", GPURES_FIELD_FD, 0, 0, "syncobj fd, owned by the handle"),
  GPURES__ROW(T, point, "point", GPURES_FIELD_U64, 0, 0, "timeline point; 0 for a binary syncobj"),
};

static int validate_drm_syncobj(gpures__op op, const void *desc) {
  return check_fence_fd(op, ((const T *)desc)->fd, GPURES__FENCE_FD_SYNCOBJ);
}
GPURES__VARIANT(drm_syncobj, drm_syncobj_fields, validate_drm_syncobj);
#undef T
