/* d3d.c: D3D11Texture, D3D12Resource and D3D12BufferHandle (Windows). */
#include "rows.h"

#define T gpures_d3d11_texture_desc
static const gpures_field_info d3d11_texture_fields[] = {
  GPURES__ROW(T, texture, "texture", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "ID3D11Texture2D*"),
  GPURES__LUID_ROWS(T),
  GPURES__ROW_PITCH_ROW(T),
};
GPURES__VARIANT(d3d11_texture, d3d11_texture_fields, NULL);
#undef T

#define T gpures_d3d12_resource_desc
static const gpures_field_info d3d12_resource_fields[] = {
  GPURES__ROW(T, resource, "resource", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "ID3D12Resource* of a 2D texture"),
  GPURES__LUID_ROWS(T),
  GPURES__ROW_PITCH_ROW(T),
};
GPURES__VARIANT(d3d12_resource, d3d12_resource_fields, NULL);
#undef T

#define T gpures_d3d12_buffer_handle_desc
static const gpures_field_info d3d12_buffer_handle_fields[] = {
  GPURES__ROW(T, resource, "resource", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "ID3D12Resource* of a buffer"),
  GPURES__LUID_ROWS(T),
  GPURES__SIZE_ROW(T),
};
GPURES__VARIANT(d3d12_buffer_handle, d3d12_buffer_handle_fields, NULL);
#undef T
