/*
** wgpu.c: WgpuTexture. A WebGPU texture exposes no native pointer, so the
** handle stores its description and the host's token for the texture object.
*/
#include "../internal.h"

#define T gpures_wgpu_texture_desc
static const gpures_field_info wgpu_texture_fields[] = {
  GPURES__ROW(T, token, "token", GPURES_FIELD_U64, GPURES_E_NULL_HANDLE, 0, "the host's token for the GPUTexture"),
  GPURES__ROW(T, width, "width", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "width in texels"),
  GPURES__ROW(T, height, "height", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "height in texels"),
  GPURES__ROW(T, depth_or_array_layers, "depthOrArrayLayers", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "depth or array layers"),
  GPURES__ROW(T, mip_level_count, "mipLevelCount", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "mip levels"),
  GPURES__ROW(T, sample_count, "sampleCount", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "samples per texel"),
  GPURES__ENUM_ROW(T, dimension, "dimension", GPURES_ENUM_WGPU_TEXTURE_DIMENSION, "1d, 2d or 3d"),
  GPURES__ENUM_ROW(T, format, "format", GPURES_ENUM_WGPU_TEXTURE_FORMAT, "GPUTextureFormat"),
  GPURES__ROW(T, usage, "usage", GPURES_FIELD_U32, 0, 0, "GPUTextureUsage bits"),
};
GPURES__VARIANT(wgpu_texture, wgpu_texture_fields, NULL);
#undef T
