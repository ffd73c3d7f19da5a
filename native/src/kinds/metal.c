/* metal.c: MetalTextureHandle and MetalBufferHandle (macOS). */
#include "../internal.h"

#define T gpures_metal_texture_handle_desc
static const gpures_field_info metal_texture_handle_fields[] = {
  GPURES__ROW(T, texture, "texture", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "id<MTLTexture>"),
  GPURES__DEVICE_ROW(T, registry_id, "registryId", GPURES_FIELD_U64, GPURES_HAS_REGISTRY_ID, GPURES_DEVICE_METAL_REGISTRY_ID, "MTLDevice.registryID"),
};
GPURES__VARIANT(metal_texture_handle, metal_texture_handle_fields, NULL);
#undef T

#define T gpures_metal_buffer_handle_desc
static const gpures_field_info metal_buffer_handle_fields[] = {
  GPURES__ROW(T, buffer, "buffer", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "id<MTLBuffer>"),
  GPURES__ROW(T, row_pitch, "rowPitch", GPURES_FIELD_U32, 0, 0, "bytes per row"),
  GPURES__DEVICE_ROW(T, registry_id, "registryId", GPURES_FIELD_U64, GPURES_HAS_REGISTRY_ID, GPURES_DEVICE_METAL_REGISTRY_ID, "MTLDevice.registryID"),
};
GPURES__VARIANT(metal_buffer_handle, metal_buffer_handle_fields, NULL);
#undef T
