/* enums.c: named values of the enumerations descriptors store as uint32_t. */
#include <stdatomic.h>
#include <string.h>

#include "../internal.h"

/*
** The tables index by id - 1 (`values` below begins with the pixel formats,
** in id order) and the *_MAX enums count the rows: ids are 1 .. N in order.
*/
enum { GPURES_ENUM_SET_LIST(GPURES__POSITION) SET_ROWS };
GPURES_ENUM_SET_LIST(GPURES__IN_ORDER)
_Static_assert((int)SET_ROWS == (int)GPURES_ENUM_SET_MAX, "GPURES_ENUM_SET_MAX counts the sets");
enum { GPURES_PIXEL_FORMAT_LIST(GPURES__POSITION) PF_ROWS };
GPURES_PIXEL_FORMAT_LIST(GPURES__IN_ORDER)
_Static_assert((int)PF_ROWS == (int)GPURES_PF_MAX, "GPURES_PF_MAX counts the formats");

#define PIXEL_FORMAT(id, UPPER, Name) {GPURES_ENUM_PIXEL_FORMAT, id, #Name},
#define GL_TEXTURE_TARGET(value, name) {GPURES_ENUM_GL_TEXTURE_TARGET, value, name},
#define GL_BUFFER_TARGET(value, name) {GPURES_ENUM_GL_BUFFER_TARGET, value, name},
#define GL_INTERNAL_FORMAT(value, name) {GPURES_ENUM_GL_INTERNAL_FORMAT, value, name},
#define WGPU_FORMAT(value, name) {GPURES_ENUM_WGPU_TEXTURE_FORMAT, value, name},
/* WebGPU format families, at consecutive ids: WGPU_INTS(5, "r16") is r16uint, r16sint. */
#define WGPU_NORMS(value, prefix) WGPU_FORMAT(value, prefix "unorm") WGPU_FORMAT(value + 1, prefix "snorm")
#define WGPU_INTS(value, prefix) WGPU_FORMAT(value, prefix "uint") WGPU_FORMAT(value + 1, prefix "sint")
#define WGPU_INTS_FLOAT(value, prefix) WGPU_INTS(value, prefix) WGPU_FORMAT(value + 2, prefix "float")
#define WGPU_SRGB_PAIR(value, name) WGPU_FORMAT(value, name) WGPU_FORMAT(value + 1, name "-srgb")
#define WGPU_ASTC(value, size) WGPU_SRGB_PAIR(value, "astc-" #size "-unorm")
#define WGPU_DIMENSION(value, name) {GPURES_ENUM_WGPU_TEXTURE_DIMENSION, value, name},
#define PRIMARIES(value, name) {GPURES_ENUM_COLOR_PRIMARIES, value, name},
#define TRANSFER(value, name) {GPURES_ENUM_TRANSFER, value, name},
#define MATRIX(value, name) {GPURES_ENUM_MATRIX, value, name},

/* GL values are the real GL enums; WebGPU ones are gpures's own stable ids. */
static const gpures_enum_value values[] = {
  GPURES_PIXEL_FORMAT_LIST(PIXEL_FORMAT)

  GL_TEXTURE_TARGET(0x0DE1, "Texture2D")
  GL_TEXTURE_TARGET(0x8C1A, "Texture2DArray")
  GL_TEXTURE_TARGET(0x806F, "Texture3D")
  GL_TEXTURE_TARGET(0x8513, "CubeMap")
  GL_TEXTURE_TARGET(0x84F5, "Rectangle")
  GL_TEXTURE_TARGET(0x8D41, "Renderbuffer")

  GL_BUFFER_TARGET(0x8892, "ArrayBuffer")
  GL_BUFFER_TARGET(0x8893, "ElementArrayBuffer")
  GL_BUFFER_TARGET(0x88EC, "PixelUnpackBuffer")
  GL_BUFFER_TARGET(0x88EB, "PixelPackBuffer")
  GL_BUFFER_TARGET(0x90D2, "ShaderStorageBuffer")
  GL_BUFFER_TARGET(0x8A11, "UniformBuffer")
  GL_BUFFER_TARGET(0x8C8E, "TransformFeedbackBuffer")
  GL_BUFFER_TARGET(0x8F36, "CopyReadBuffer")
  GL_BUFFER_TARGET(0x8F37, "CopyWriteBuffer")

  GL_INTERNAL_FORMAT(0x0000, "Unspecified")
  GL_INTERNAL_FORMAT(0x8229, "R8")
  GL_INTERNAL_FORMAT(0x8F94, "R8Snorm")
  GL_INTERNAL_FORMAT(0x8232, "R8Ui")
  GL_INTERNAL_FORMAT(0x8231, "R8I")
  GL_INTERNAL_FORMAT(0x822A, "R16")
  GL_INTERNAL_FORMAT(0x822D, "R16F")
  GL_INTERNAL_FORMAT(0x8234, "R16Ui")
  GL_INTERNAL_FORMAT(0x8233, "R16I")
  GL_INTERNAL_FORMAT(0x822E, "R32F")
  GL_INTERNAL_FORMAT(0x822B, "Rg8")
  GL_INTERNAL_FORMAT(0x8F95, "Rg8Snorm")
  GL_INTERNAL_FORMAT(0x822C, "Rg16")
  GL_INTERNAL_FORMAT(0x822F, "Rg16F")
  GL_INTERNAL_FORMAT(0x8058, "Rgba8")
  GL_INTERNAL_FORMAT(0x8C43, "Srgb8Alpha8")
  GL_INTERNAL_FORMAT(0x8F97, "Rgba8Snorm")
  GL_INTERNAL_FORMAT(0x8059, "Rgb10A2")
  GL_INTERNAL_FORMAT(0x805B, "Rgba16")
  GL_INTERNAL_FORMAT(0x881A, "Rgba16F")
  GL_INTERNAL_FORMAT(0x8814, "Rgba32F")
  GL_INTERNAL_FORMAT(0x8C3A, "R11fG11fB10f")
  GL_INTERNAL_FORMAT(0x93A1, "Bgra8")
  GL_INTERNAL_FORMAT(0x81A5, "Depth16")
  GL_INTERNAL_FORMAT(0x88F0, "Depth24Stencil8")

  /* WebGPU formats in the spec's order: 8, 16 and 32 bits per texel, packed, 64 and 128 bits */
  WGPU_NORMS(1, "r8") WGPU_INTS(3, "r8")
  WGPU_INTS_FLOAT(5, "r16") WGPU_NORMS(8, "rg8") WGPU_INTS(10, "rg8")
  WGPU_INTS_FLOAT(12, "r32") WGPU_INTS_FLOAT(15, "rg16")
  WGPU_SRGB_PAIR(18, "rgba8unorm") WGPU_FORMAT(20, "rgba8snorm") WGPU_INTS(21, "rgba8")
  WGPU_SRGB_PAIR(23, "bgra8unorm")
  WGPU_FORMAT(25, "rgb9e5ufloat") WGPU_FORMAT(26, "rgb10a2uint") WGPU_FORMAT(27, "rgb10a2unorm")
  WGPU_FORMAT(28, "rg11b10ufloat")
  WGPU_INTS_FLOAT(29, "rg32") WGPU_INTS_FLOAT(32, "rgba16") WGPU_INTS_FLOAT(35, "rgba32")
  /* depth and stencil */
  WGPU_FORMAT(38, "stencil8") WGPU_FORMAT(39, "depth16unorm") WGPU_FORMAT(40, "depth24plus")
  WGPU_FORMAT(41, "depth24plus-stencil8") WGPU_FORMAT(42, "depth32float")
  WGPU_FORMAT(43, "depth32float-stencil8")
  /* BC, ETC2 and EAC, ASTC */
  WGPU_SRGB_PAIR(44, "bc1-rgba-unorm") WGPU_SRGB_PAIR(46, "bc2-rgba-unorm")
  WGPU_SRGB_PAIR(48, "bc3-rgba-unorm") WGPU_NORMS(50, "bc4-r-") WGPU_NORMS(52, "bc5-rg-")
  WGPU_FORMAT(54, "bc6h-rgb-ufloat") WGPU_FORMAT(55, "bc6h-rgb-float") WGPU_SRGB_PAIR(56, "bc7-rgba-unorm")
  WGPU_SRGB_PAIR(58, "etc2-rgb8unorm") WGPU_SRGB_PAIR(60, "etc2-rgb8a1unorm")
  WGPU_SRGB_PAIR(62, "etc2-rgba8unorm") WGPU_NORMS(64, "eac-r11") WGPU_NORMS(66, "eac-rg11")
  WGPU_ASTC(68, 4x4) WGPU_ASTC(70, 5x4) WGPU_ASTC(72, 5x5) WGPU_ASTC(74, 6x5) WGPU_ASTC(76, 6x6)
  WGPU_ASTC(78, 8x5) WGPU_ASTC(80, 8x6) WGPU_ASTC(82, 8x8) WGPU_ASTC(84, 10x5) WGPU_ASTC(86, 10x6)
  WGPU_ASTC(88, 10x8) WGPU_ASTC(90, 10x10) WGPU_ASTC(92, 12x10) WGPU_ASTC(94, 12x12)
  /* 16-bit normalized (texture-formats-tier1) */
  WGPU_FORMAT(96, "r16unorm") WGPU_FORMAT(97, "rg16unorm") WGPU_FORMAT(98, "rgba16unorm")
  WGPU_FORMAT(99, "r16snorm") WGPU_FORMAT(100, "rg16snorm") WGPU_FORMAT(101, "rgba16snorm")

  WGPU_DIMENSION(1, "1d")
  WGPU_DIMENSION(2, "2d")
  WGPU_DIMENSION(3, "3d")

  /* ITU-T H.273 code points, named as WebCodecs' VideoColorSpace names them where it does */
  PRIMARIES(1, "bt709") PRIMARIES(2, "unspecified") PRIMARIES(4, "bt470m")
  PRIMARIES(5, "bt470bg") PRIMARIES(6, "smpte170m") PRIMARIES(7, "smpte240m")
  PRIMARIES(8, "film") PRIMARIES(9, "bt2020") PRIMARIES(10, "smpte428")
  PRIMARIES(11, "smpte431") PRIMARIES(12, "smpte432") PRIMARIES(22, "ebu3213")

  TRANSFER(1, "bt709") TRANSFER(2, "unspecified") TRANSFER(4, "gamma22")
  TRANSFER(5, "gamma28") TRANSFER(6, "smpte170m") TRANSFER(7, "smpte240m")
  TRANSFER(8, "linear") TRANSFER(9, "log") TRANSFER(10, "log-sqrt")
  TRANSFER(11, "iec61966-2-4") TRANSFER(12, "bt1361") TRANSFER(13, "iec61966-2-1")
  TRANSFER(14, "bt2020-10") TRANSFER(15, "bt2020-12") TRANSFER(16, "pq")
  TRANSFER(17, "smpte428") TRANSFER(18, "hlg")

  MATRIX(0, "rgb") MATRIX(1, "bt709") MATRIX(2, "unspecified") MATRIX(4, "fcc")
  MATRIX(5, "bt470bg") MATRIX(6, "smpte170m") MATRIX(7, "smpte240m") MATRIX(8, "ycgco")
  MATRIX(9, "bt2020-ncl") MATRIX(10, "bt2020-cl") MATRIX(11, "smpte2085")
  MATRIX(12, "chroma-derived-ncl") MATRIX(13, "chroma-derived-cl") MATRIX(14, "ictcp")

  /* Vulkan's own values: VkSemaphoreType and VkExternalSemaphoreHandleTypeFlagBits. */
  {GPURES_ENUM_SEMAPHORE_TYPE, 0, "binary"}, {GPURES_ENUM_SEMAPHORE_TYPE, 1, "timeline"},
  {GPURES_ENUM_SEMAPHORE_HANDLE_TYPE, 1, "opaqueFd"},
  {GPURES_ENUM_SEMAPHORE_HANDLE_TYPE, 16, "syncFd"},

  /* gpures_device_id.kind: GPURES_DEVICE_*. */
  {GPURES_ENUM_DEVICE_ID_KIND, GPURES_DEVICE_NONE, "none"},
  {GPURES_ENUM_DEVICE_ID_KIND, GPURES_DEVICE_CPU, "cpu"},
  {GPURES_ENUM_DEVICE_ID_KIND, GPURES_DEVICE_VULKAN_UUID, "vulkanUuid"},
  {GPURES_ENUM_DEVICE_ID_KIND, GPURES_DEVICE_CUDA_UUID, "cudaUuid"},
  {GPURES_ENUM_DEVICE_ID_KIND, GPURES_DEVICE_DXGI_LUID, "dxgiLuid"},
  {GPURES_ENUM_DEVICE_ID_KIND, GPURES_DEVICE_METAL_REGISTRY_ID, "metalRegistryId"},
  {GPURES_ENUM_DEVICE_ID_KIND, GPURES_DEVICE_OPENCL, "openCl"},
};

static const char *const set_names[] = {
#define SET_NAME(id, UPPER, Name) [id] = #Name,
  GPURES_ENUM_SET_LIST(SET_NAME)
#undef SET_NAME
};

const gpures_enum_value *gpures_enum_table(uint32_t *out_count) {
  if (out_count) *out_count = (uint32_t)GPURES__LEN(values);
  return values;
}

const char *gpures_enum_set_name(uint32_t set) {
  return set < GPURES__LEN(set_names) && set_names[set] ? set_names[set] : "enumeration";
}

/*
** Where each set's rows begin and end in `values` (the rows of a set are
** contiguous), as begin << 16 | end; found on first use. Threads that race
** there store the same words, so atomics suffice.
*/
static _Atomic uint32_t set_rows[GPURES_ENUM_SET_MAX + 1];
static _Atomic int set_rows_ready;

static uint32_t rows_of(uint32_t set) {
  if (!atomic_load_explicit(&set_rows_ready, memory_order_acquire)) {
    for (uint32_t s = 1; s <= GPURES_ENUM_SET_MAX; s++) {
      uint32_t begin = 0, end = 0;
      for (uint32_t i = 0; i < (uint32_t)GPURES__LEN(values); i++) {
        if (values[i].set != s) continue;
        if (end == 0) begin = i;
        end = i + 1;
      }
      atomic_store_explicit(&set_rows[s], begin << 16 | end, memory_order_relaxed);
    }
    atomic_store_explicit(&set_rows_ready, 1, memory_order_release);
  }
  return atomic_load_explicit(&set_rows[set], memory_order_relaxed);
}

/* Create and describe validate enum fields on every call: no scan of the whole table. */
const char *gpures_enum_name(uint32_t set, uint32_t value) {
  if (set == GPURES_ENUM_PIXEL_FORMAT) /* ids are dense: index directly */
    return value >= 1 && value <= GPURES_PF_MAX ? values[value - 1].name : NULL;
  if (set == 0 || set > GPURES_ENUM_SET_MAX) return NULL;
  uint32_t rows = rows_of(set), begin = rows >> 16, end = rows & 0xffffu;
  /* Sets numbered 1, 2, ... (the WebGPU ones) hold value v at row begin + v - 1. */
  if (value >= 1 && value <= end - begin && values[begin + value - 1].value == value)
    return values[begin + value - 1].name;
  for (uint32_t i = begin; i < end; i++)
    if (values[i].value == value) return values[i].name;
  return NULL;
}

int gpures_enum_lookup(uint32_t set, const char *name, uint32_t *out_value) {
  gpures__op op = {"look up", 0};
  if (!name || !out_value)
    return gpures__fail(op, GPURES_E_NULL_POINTER, name ? "outValue" : "name", "%s is null",
                        name ? "outValue" : "name");
  for (size_t i = 0; i < GPURES__LEN(values); i++)
    if (values[i].set == set && strcmp(values[i].name, name) == 0) {
      *out_value = values[i].value;
      return GPURES_OK;
    }
  return gpures__fail(op, GPURES_E_INVALID_VALUE, "name", "\"%s\" is not a %s", name,
                      gpures_enum_set_name(set));
}
