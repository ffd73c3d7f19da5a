/* metal.c: MetalTextureHandle and MetalBufferHandle (macOS). */
#include "rows.h"

#define T gpures_metal_texture_handle_desc
static const gpures_field_info metal_texture_handle_fields[] = {
  GPURES__ROW(T, texture, "texture", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "id<MTLTexture>"),
  GPURES__REGISTRY_ID_ROW(T),
};
GPURES__VARIANT(metal_texture_handle, metal_texture_handle_fields, NULL);
#undef T

#define T gpures_metal_buffer_handle_desc
static const gpures_field_info metal_buffer_handle_fields[] = {
  GPURES__ROW(T, buffer, "buffer", GPURES_FIELD_PTR, GPURES_E_NULL_HANDLE, 0, "id<MTLBuffer>"),
  GPURES__ROW_PITCH_ROW(T),
  GPURES__REGISTRY_ID_ROW(T),
};
GPURES__VARIANT(metal_buffer_handle, metal_buffer_handle_fields, NULL);
#undef T
