/* cuda.c: CudaPtr2D, CudaBufferHandle and CudaSurface. */
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
