/* cuda.c: CudaPtr2D, CudaBufferHandle, CudaSurface and CudaVmmFd. */
#include "rows.h"

#define UUID_ROW(T) GPURES__CUDA_UUID_ROW(T, "cuDeviceGetUuid of the owning device")

#define T gpures_cuda_ptr_2d_desc
static const gpures_field_info cuda_ptr_2d_fields[] = {
  GPURES__ROW(T, ptr, "ptr", GPURES_FIELD_U64, GPURES_E_NULL_HANDLE, 0, "CUdeviceptr of plane 0"),
  GPURES__ROW(T, row_pitch, "rowPitch", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "bytes per row"),
  UUID_ROW(T),
  GPURES__COUNT_ROW(T, num_plane_byte_offsets, "planeByteOffsets", 4, 0, "number of plane offsets"),
  GPURES__ARRAY_ROW(T, plane_byte_offsets, num_plane_byte_offsets, "planeByteOffsets[]", GPURES_FIELD_U64, 0, "byte offset of each plane from ptr"),
  GPURES__ROW(T, width, "width", GPURES_FIELD_U32, 0, GPURES_FIELD_OPTIONAL, "size hint: width in pixels"),
  GPURES__ROW(T, height, "height", GPURES_FIELD_U32, 0, GPURES_FIELD_OPTIONAL, "size hint: height in pixels"),
};

static int validate_cuda_ptr_2d(gpures__op op, const void *desc) {
  const T *d = desc;
  return gpures__check_extent(op, d->width, d->height);
}
GPURES__VARIANT(cuda_ptr_2d, cuda_ptr_2d_fields, validate_cuda_ptr_2d);
#undef T

#define T gpures_cuda_buffer_handle_desc
static const gpures_field_info cuda_buffer_handle_fields[] = {
  GPURES__ROW(T, ptr, "ptr", GPURES_FIELD_U64, GPURES_E_NULL_HANDLE, 0, "CUdeviceptr"),
  GPURES__SIZE_ROW(T),
  UUID_ROW(T),
};
GPURES__VARIANT(cuda_buffer_handle, cuda_buffer_handle_fields, NULL);
#undef T

#define T gpures_cuda_surface_desc
static const gpures_field_info cuda_surface_fields[] = {
  GPURES__ROW(T, surface, "surface", GPURES_FIELD_U64, GPURES_E_NULL_HANDLE, 0, "CUsurfObject"),
  GPURES__ENUM_ROW(T, format, "format", GPURES_ENUM_WGPU_TEXTURE_FORMAT, "texel format, as a WebGPU format name"),
  GPURES__ROW(T, width, "width", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "width in texels"),
  GPURES__ROW(T, height, "height", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "height in texels"),
  UUID_ROW(T),
};
GPURES__VARIANT(cuda_surface, cuda_surface_fields, NULL);
#undef T

#define T gpures_cuda_vmm_fd_desc
static const gpures_field_info cuda_vmm_fd_fields[] = {
  GPURES__ROW(T, fd, "fd", GPURES_FIELD_FD, 0, 0, "POSIX fd of the allocation, owned by the handle"),
  GPURES__ROW(T, size, "size", GPURES_FIELD_U64, GPURES_E_ZERO_SIZE, 0, "allocation size in bytes"),
  GPURES__ROW(T, offset, "offset", GPURES_FIELD_U64, 0, 0, "offset of the frame in the allocation"),
  GPURES__ROW(T, width, "width", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "width in pixels"),
  GPURES__ROW(T, height, "height", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "height in pixels"),
  GPURES__PIXEL_FORMAT_ROW(T),
  GPURES__ROW(T, device_uuid, "deviceUuid", GPURES_FIELD_UUID, 0, GPURES_FIELD_DEVICE(GPURES_DEVICE_CUDA_UUID), "cuDeviceGetUuid of the allocating device"),
  GPURES__SLOT_RELEASE_ROWS(T),
  GPURES__ROW(T, row_pitch, "rowPitch", GPURES_FIELD_U32, 0, GPURES_FIELD_OPTIONAL, "bytes per row of plane 0; absent: packed rows"),
};

/* Where frame code reads a VkOpaqueFd, a CudaVmmFd has the same member. */
#define SAME_PLACE(m) \
  _Static_assert(offsetof(T, m) == offsetof(gpures_vk_opaque_fd_desc, m), #m " is where VkOpaqueFd has it")
SAME_PLACE(fd);
SAME_PLACE(size);
SAME_PLACE(offset);
SAME_PLACE(width);
SAME_PLACE(height);
SAME_PLACE(format);
SAME_PLACE(device_uuid);
SAME_PLACE(slot_release);
SAME_PLACE(row_pitch);
_Static_assert(sizeof(T) == sizeof(gpures_vk_opaque_fd_desc), "CudaVmmFd is VkOpaqueFd's size");
#undef SAME_PLACE

static int validate_cuda_vmm_fd(gpures__op op, const void *desc) {
  const T *d = desc;
  if (d->reserved0 || d->reserved1 || d->reserved)
    return gpures__fail(op, GPURES_E_INVALID_VALUE,
                        d->reserved0 ? "reserved0" : d->reserved1 ? "reserved1" : "reserved",
                        "the reserved words of a CudaVmmFd are 0");
  return gpures__check_opaque_frame(op, desc);
}
GPURES__VARIANT(cuda_vmm_fd, cuda_vmm_fd_fields, validate_cuda_vmm_fd);
#undef T
