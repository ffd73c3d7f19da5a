/* d3d.c: D3D11Texture, D3D12Resource and D3D12BufferHandle (Windows). */
#include "../internal.h"

#define LUID_ROWS(T)                                                                             \
  GPURES__DEVICE_ROW(T, luid.high, "luid.high", GPURES_FIELD_I32, GPURES_HAS_LUID, GPURES_DEVICE_DXGI_LUID, "adapter LUID, high part"), \
  GPURES__DEVICE_ROW(T, luid.low, "luid.low", GPURES_FIELD_U32, GPURES_HAS_LUID, GPURES_DEVICE_DXGI_LUID, "adapter LUID, low part")

#define T gpures_d3d11_texture_desc
static const gpures_field_info d3d11_texture_fields[] = {
  GPURES__ROW(T, texture, "texture", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "ID3D11Texture2D*"),
  LUID_ROWS(T),
  GPURES__ROW(T, row_pitch, "rowPitch", GPURES_FIELD_U32, 0, 0, "bytes per row"),
};
GPURES__VARIANT(d3d11_texture, d3d11_texture_fields, NULL);
#undef T

#define T gpures_d3d12_resource_desc
static const gpures_field_info d3d12_resource_fields[] = {
  GPURES__ROW(T, resource, "resource", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "ID3D12Resource* of a 2D texture"),
  LUID_ROWS(T),
  GPURES__ROW(T, row_pitch, "rowPitch", GPURES_FIELD_U32, 0, 0, "bytes per row"),
};
GPURES__VARIANT(d3d12_resource, d3d12_resource_fields, NULL);
#undef T

#define T gpures_d3d12_buffer_handle_desc
static const gpures_field_info d3d12_buffer_handle_fields[] = {
  GPURES__ROW(T, resource, "resource", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "ID3D12Resource* of a buffer"),
  LUID_ROWS(T),
  GPURES__ROW(T, size, "size", GPURES_FIELD_U64, GPURES_E_ZERO_SIZE, 0, "bytes"),
};
GPURES__VARIANT(d3d12_buffer_handle, d3d12_buffer_handle_fields, NULL);
#undef T
