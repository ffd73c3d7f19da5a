/*
** vulkan.c: the Vulkan importer. DmaBufHandle frames (a memfd counts where
** the driver takes one: Mesa's lavapipe does) and VkOpaqueFd frames become
** VkDeviceMemory with a VkImage and/or a VkBuffer bound over it; importer.c
** caches them per buffer. Also the device info and the capability rows of a
** VkPhysicalDevice.
**
** Vulkan is reached through the caller's vkGetInstanceProcAddr (or the system
** loader's, opened with dlopen), never linked, and only the ABI-stable C
** structs this file passes are declared (khronos/vulkan_min.h, shared with
** the GPU test helpers): the library builds with no Vulkan SDK. Importers are
** Linux-only; other_os.c answers elsewhere.
*/
#if defined(__linux__)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "interop.h"
#include "vulkan.h"

/* ---------------------------------------------------------------- the ABI */


/* What imported images and buffers are made for when the importer names no usage. */
#define IMAGE_USAGE_DEFAULT \
  (VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT)
#define BUFFER_USAGE_DEFAULT                                               \
  (VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | \
   VK_BUFFER_USAGE_STORAGE_BUFFER_BIT)

/* The caller's vkGetInstanceProcAddr, or the system loader's. */
static vk_proc_fn instance_proc_addr(gpures__op op, void *given, int *status) {
  if (given) return (vk_proc_fn)given;
  static vk_proc_fn loader;
  if (!loader) {
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib) loader = (vk_proc_fn)dlsym(lib, "vkGetInstanceProcAddr");
  }
  if (!loader)
    *status = gpures__fail(op, GPURES_E_UNSUPPORTED, "getInstanceProcAddr",
                           "libvulkan.so.1 cannot be opened (install the Vulkan loader, libvulkan1)");
  return loader;
}

/* An entry point by its core name, else its KHR name (a Vulkan 1.0 instance has only those). */
static PFN_vkVoidFunction proc(vk_proc_fn get, void *owner, const char *name) {
  PFN_vkVoidFunction fn = get(owner, name);
  if (!fn) {
    char khr[96];
    snprintf(khr, sizeof khr, "%sKHR", name);
    fn = get(owner, khr);
  }
  return fn;
}

#define LOAD(get, owner, slot, name)                                                           \
  do {                                                                                         \
    PFN_vkVoidFunction fn_ = proc(get, owner, name);                                           \
    if (!fn_) missing_name = missing_name ? missing_name : name;                               \
    memcpy(&(slot), &fn_, sizeof fn_);                                                         \
  } while (0)

int gpures__vk_load_instance(gpures__op op, void *instance, void *gipa, vk_instance_fns *fn) {
  int status = GPURES_OK;
  vk_proc_fn get = instance_proc_addr(op, gipa, &status);
  if (!get) return status;
  const char *missing_name = NULL;
  LOAD(get, instance, fn->device_proc, "vkGetDeviceProcAddr");
  LOAD(get, instance, fn->properties2, "vkGetPhysicalDeviceProperties2");
  LOAD(get, instance, fn->image_format_properties2, "vkGetPhysicalDeviceImageFormatProperties2");
  LOAD(get, instance, fn->format_properties2, "vkGetPhysicalDeviceFormatProperties2");
  LOAD(get, instance, fn->extensions, "vkEnumerateDeviceExtensionProperties");
  LOAD(get, instance, fn->create_device, "vkCreateDevice");

  if (missing_name)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "instance",
                        "the instance has no %s (Vulkan 1.1 or VK_KHR_get_physical_device_properties2)",
                        missing_name);
  /* Only pools use these (vulkan_pool.c checks them): an importer needs neither. */
  PFN_vkVoidFunction props = proc(get, instance, "vkGetPhysicalDeviceMemoryProperties");
  PFN_vkVoidFunction ext = proc(get, instance, "vkGetPhysicalDeviceExternalBufferProperties");
  memcpy(&fn->memory_properties, &props, sizeof props);
  memcpy(&fn->external_buffer_properties, &ext, sizeof ext);
  return GPURES_OK;
}

int gpures__vk_load_device(gpures__op op, const vk_instance_fns *in, void *device, vk_device_fns *fn) {
  const char *missing_name = NULL;
  LOAD(in->device_proc, device, fn->destroy_device, "vkDestroyDevice");
  LOAD(in->device_proc, device, fn->create_image, "vkCreateImage");
  LOAD(in->device_proc, device, fn->destroy_image, "vkDestroyImage");
  LOAD(in->device_proc, device, fn->image_requirements, "vkGetImageMemoryRequirements");
  LOAD(in->device_proc, device, fn->subresource_layout, "vkGetImageSubresourceLayout");
  LOAD(in->device_proc, device, fn->create_buffer, "vkCreateBuffer");
  LOAD(in->device_proc, device, fn->destroy_buffer, "vkDestroyBuffer");
  LOAD(in->device_proc, device, fn->buffer_requirements, "vkGetBufferMemoryRequirements");
  LOAD(in->device_proc, device, fn->allocate, "vkAllocateMemory");
  LOAD(in->device_proc, device, fn->free_memory, "vkFreeMemory");
  LOAD(in->device_proc, device, fn->bind_image, "vkBindImageMemory");
  LOAD(in->device_proc, device, fn->bind_buffer, "vkBindBufferMemory");
  if (missing_name)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "device", "the device has no %s", missing_name);
  /* Only a device that enabled the extension answers these (vkGetDeviceProcAddr gives NULL otherwise). */
  fn->modifier_properties = in->device_proc(device, "vkGetImageDrmFormatModifierPropertiesEXT");
  PFN_vkVoidFunction fd_props = in->device_proc(device, "vkGetMemoryFdPropertiesKHR");
  if (!fd_props)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "device",
                        "the device was not created with VK_KHR_external_memory_fd");
  memcpy(&fn->memory_fd_properties, &fd_props, sizeof fd_props);
  PFN_vkVoidFunction get_fd = in->device_proc(device, "vkGetMemoryFdKHR");
  memcpy(&fn->get_memory_fd, &get_fd, sizeof get_fd);
  return GPURES_OK;
}

/* ---------------------------------------------------------------- results */

int gpures__vk_fail(gpures__op op, const char *field, const char *what, VkResult r) {
  switch (r) {
  case VK_ERROR_OUT_OF_HOST_MEMORY:
  case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, field, "%s: VK_ERROR_OUT_OF_%s_MEMORY", what,
                        r == VK_ERROR_OUT_OF_HOST_MEMORY ? "HOST" : "DEVICE");
  case VK_ERROR_DEVICE_LOST:
    return gpures__fail(op, GPURES_E_DEVICE_LOST, "device", "%s: VK_ERROR_DEVICE_LOST", what);
  case VK_ERROR_INVALID_EXTERNAL_HANDLE:
    return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                        "%s: VK_ERROR_INVALID_EXTERNAL_HANDLE (the driver refuses this fd)", what);
  case VK_ERROR_FORMAT_NOT_SUPPORTED:
    return gpures__fail(op, GPURES_E_UNSUPPORTED, field, "%s: VK_ERROR_FORMAT_NOT_SUPPORTED", what);
  case VK_ERROR_INVALID_DRM_FORMAT_MODIFIER_PLANE_LAYOUT_EXT:
    return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                        "%s: VK_ERROR_INVALID_DRM_FORMAT_MODIFIER_PLANE_LAYOUT_EXT", what);
  default:
    return gpures__fail(op, GPURES_E_OS_ERROR, field, "%s failed: VkResult %d", what, (int)r);
  }
}

/* -------------------------------------------------------------- formats */

/*
** The VkFormat with a PixelFormat's memory layout, or 0. DRM fourccs name
** bytes in little-endian words, Vulkan's _PACKn formats too; the multi-planar
** formats put G (luma) first, then B (Cb/U), then R (Cr/V), as NV12 and I420 do.
*/
int32_t gpures__vk_format_of(uint32_t format) {
  switch (format) {
  case GPURES_PF_NV12: return 1000156003;        /* G8_B8R8_2PLANE_420_UNORM */
  case GPURES_PF_NV16: return 1000156005;        /* G8_B8R8_2PLANE_422_UNORM */
  case GPURES_PF_NV24: return 1000330000;        /* G8_B8R8_2PLANE_444_UNORM */
  case GPURES_PF_P010LE: return 1000156013;      /* G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16 */
  case GPURES_PF_P210LE: return 1000156015;      /* G10X6_B10X6R10X6_2PLANE_422_UNORM_3PACK16 */
  case GPURES_PF_P016LE: return 1000156030;      /* G16_B16R16_2PLANE_420_UNORM */
  case GPURES_PF_YUV420P: return 1000156002;     /* G8_B8_R8_3PLANE_420_UNORM */
  case GPURES_PF_YUV422P: return 1000156004;     /* G8_B8_R8_3PLANE_422_UNORM */
  case GPURES_PF_YUV444P: return 1000156006;     /* G8_B8_R8_3PLANE_444_UNORM */
  case GPURES_PF_YUYV422: return 1000156000;     /* G8B8G8R8_422_UNORM */
  case GPURES_PF_UYVY422: return 1000156001;     /* B8G8R8G8_422_UNORM */
  case GPURES_PF_Y210LE: return 1000156010;      /* G10X6B10X6G10X6R10X6_422_UNORM_4PACK16 */
  case GPURES_PF_RGBA_U8: return 37;             /* R8G8B8A8_UNORM */
  case GPURES_PF_RGBX_U8: return 37;
  case GPURES_PF_BGRA_U8: return 44;             /* B8G8R8A8_UNORM */
  case GPURES_PF_BGRX_U8: return 44;
  case GPURES_PF_RGBA_U16: return 91;            /* R16G16B16A16_UNORM */
  case GPURES_PF_RGBA_F16: return 97;            /* R16G16B16A16_SFLOAT */
  case GPURES_PF_RGB10A2: return 64;             /* A2B10G10R10_UNORM_PACK32 */
  case GPURES_PF_R16U: return 70;                /* R16_UNORM */
  default: return 0;                             /* NV21 (swapped chroma), BGRA16, ... */
  }
}

static const char *format_name(uint32_t format) {
  const char *name = gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, format);
  return name ? name : "?";
}

/* The aspect that names plane `plane` of an image of `num_planes` planes. */
static uint32_t plane_aspect(uint32_t num_planes, uint32_t plane) {
  return num_planes > 1 ? VK_IMAGE_ASPECT_PLANE_0_BIT << plane : VK_IMAGE_ASPECT_COLOR_BIT;
}

/* ------------------------------------------------------------ device info */

void gpures__vk_fill_device_info(void *phys, const vk_instance_fns *fn, gpures_device_info *info) {
  VkPhysicalDeviceIDProperties id = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES, NULL, {0}, {0},
                                     {0}, 0, 0};
  VkPhysicalDeviceProperties2 props;
  memset(&props, 0, sizeof props);
  props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props.pNext = &id;
  fn->properties2(phys, &props);
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  info->vendor_id = props.properties.vendorID;
  info->device_id = props.properties.deviceID;
  info->id.kind = GPURES_DEVICE_VULKAN_UUID;
  memcpy(info->id.bytes, id.deviceUUID, 16);
  if (id.deviceLUIDValid) {
    info->has_luid = 1;
    memcpy(info->luid, id.deviceLUID, 8);
  }
  memcpy(info->name, props.properties.deviceName, sizeof info->name - 1);
}

static int check_pointers(gpures__op op, void *instance, void *phys) {
  if (!instance) return gpures__fail(op, GPURES_E_NULL_POINTER, "instance", "instance is null");
  if (!phys)
    return gpures__fail(op, GPURES_E_NULL_POINTER, "physicalDevice", "physicalDevice is null");
  return GPURES_OK;
}

int gpures_vk_device_info(void *instance, void *physical_device, void *get_instance_proc_addr,
                          gpures_device_info *out) {
  gpures__op op = {"read the Vulkan device", 0};
  int status = check_pointers(op, instance, physical_device);
  if (status != GPURES_OK) return status;
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  vk_instance_fns fn;
  if ((status = gpures__vk_load_instance(op, instance, get_instance_proc_addr, &fn)) != GPURES_OK)
    return status;
  gpures_device_info info;
  gpures__vk_fill_device_info(physical_device, &fn, &info);
  return gpures__copy_out(op, out, &info, sizeof info);
}

/* ---------------------------------------------------------- capabilities */

typedef struct caps_probe {
  void *phys;
  const vk_instance_fns *fn;
  bool dma_buf;            /* the device has VK_EXT_external_memory_dma_buf */
  bool modifiers;          /* ... and VK_EXT_image_drm_format_modifier */
  VkDevice device;         /* a device of our own to measure linear layouts on, or NULL */
  vk_device_fns dev;
} caps_probe;

static bool has_extension(const char *name, const VkExtensionProperties *list, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (strncmp(list[i].extensionName, name, sizeof list[i].extensionName) == 0) return true;
  return false;
}

static int probe_extensions(gpures__op op, caps_probe *p) {
  uint32_t n = 0;
  VkResult r = p->fn->extensions(p->phys, NULL, &n, NULL);
  if (r != VK_SUCCESS)
    return gpures__vk_fail(op, "physicalDevice", "vkEnumerateDeviceExtensionProperties", r);
  VkExtensionProperties *list = gpures__alloc((n ? n : 1) * sizeof *list);
  if (!list) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for %u extensions", n);
  r = p->fn->extensions(p->phys, NULL, &n, list);
  if (r == VK_SUCCESS || r == VK_INCOMPLETE) {
    p->dma_buf = has_extension("VK_EXT_external_memory_dma_buf", list, n);
    p->modifiers = has_extension("VK_EXT_image_drm_format_modifier", list, n);
  }
  gpures__free(list);
  return r == VK_SUCCESS || r == VK_INCOMPLETE
             ? GPURES_OK
             : gpures__vk_fail(op, "physicalDevice", "vkEnumerateDeviceExtensionProperties", r);
}

/* Whether `handle_type` memory can be imported as a (format, tiling, modifier) image; its limits. */
static bool importable(const caps_probe *p, int32_t vk_format, int32_t tiling, uint64_t modifier,
                       int32_t handle_type, VkImageFormatProperties2 *limits) {
  VkPhysicalDeviceImageDrmFormatModifierInfoEXT mod = {
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_DRM_FORMAT_MODIFIER_INFO_EXT, NULL, modifier,
      VK_SHARING_MODE_EXCLUSIVE, 0, NULL};
  VkPhysicalDeviceExternalImageFormatInfo ext = {
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_IMAGE_FORMAT_INFO,
      tiling == VK_IMAGE_TILING_DRM_FORMAT_MODIFIER_EXT ? &mod : NULL, handle_type};
  VkPhysicalDeviceImageFormatInfo2 info = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_FORMAT_INFO_2,
                                           &ext, vk_format, VK_IMAGE_TYPE_2D, tiling,
                                           IMAGE_USAGE_DEFAULT, 0};
  VkExternalImageFormatProperties ext_out = {VK_STRUCTURE_TYPE_EXTERNAL_IMAGE_FORMAT_PROPERTIES,
                                             NULL, {0, 0, 0}};
  memset(limits, 0, sizeof *limits);
  limits->sType = VK_STRUCTURE_TYPE_IMAGE_FORMAT_PROPERTIES_2;
  limits->pNext = &ext_out;
  if (p->fn->image_format_properties2(p->phys, &info, limits) != VK_SUCCESS) return false;
  return (ext_out.externalMemoryProperties.externalMemoryFeatures &
          VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT) != 0;
}

static uint32_t power_of_two_at_least(uint64_t v) {
  uint32_t p = 1;
  while (p < v && p < 4096) p <<= 1;
  return p;
}

/*
** The row alignment a linear image of `format` gets on this device: the row
** pitch of a one-block-wide image (drivers pad each row to their pitch
** alignment, so that is the alignment itself) and the image's memory
** alignment, which plane offsets need. 0 when there is no device to ask.
*/
static uint32_t linear_row_align(caps_probe *p, uint32_t format, int32_t vk_format) {
  if (!p->device) return 0;
  const gpures_pixel_format_info *pf = gpures_pixel_format_info_of(format);
  uint32_t w = 2, h = 2; /* every subsampled format's smallest whole block */
  VkImageCreateInfo ci = {VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO, NULL, 0, VK_IMAGE_TYPE_2D,
                          vk_format, {w, h, 1}, 1, 1, VK_SAMPLE_COUNT_1_BIT,
                          VK_IMAGE_TILING_LINEAR, IMAGE_USAGE_DEFAULT, VK_SHARING_MODE_EXCLUSIVE,
                          0, NULL, 0};
  uint64_t image = 0;
  if (p->dev.create_image(p->device, &ci, NULL, &image) != VK_SUCCESS) return 0;
  VkMemoryRequirements reqs;
  p->dev.image_requirements(p->device, image, &reqs);
  uint64_t align = reqs.alignment;
  for (uint32_t i = 0; i < pf->num_planes; i++) {
    VkImageSubresource sub = {plane_aspect(pf->num_planes, i), 0, 0};
    VkSubresourceLayout layout;
    p->dev.subresource_layout(p->device, image, &sub, &layout);
    if (layout.rowPitch > align) align = layout.rowPitch;
  }
  p->dev.destroy_image(p->device, image, NULL);
  return power_of_two_at_least(align);
}

/* A device with no extensions, only to create (never bind) images on; NULL when none can be made. */
static void open_probe_device(caps_probe *p) {
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, 0, 1,
                                   &priority};
  VkDeviceCreateInfo info = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, NULL, 0, 1, &queue, 0, NULL, 0,
                             NULL, NULL};
  if (p->fn->create_device(p->phys, &info, NULL, &p->device) != VK_SUCCESS) {
    p->device = NULL;
    return;
  }
  const char *missing_name = NULL;
  LOAD(p->fn->device_proc, p->device, p->dev.destroy_device, "vkDestroyDevice");
  LOAD(p->fn->device_proc, p->device, p->dev.create_image, "vkCreateImage");
  LOAD(p->fn->device_proc, p->device, p->dev.destroy_image, "vkDestroyImage");
  LOAD(p->fn->device_proc, p->device, p->dev.image_requirements, "vkGetImageMemoryRequirements");
  LOAD(p->fn->device_proc, p->device, p->dev.subresource_layout, "vkGetImageSubresourceLayout");
  if (missing_name) {
    if (p->dev.destroy_device) p->dev.destroy_device(p->device, NULL);
    p->device = NULL;
  }
}

/* The rows of one format: each modifier the device lists, else LINEAR. */
static void format_rows(caps_probe *p, uint32_t format, gpures_format_cap *out,
                        uint32_t capacity, uint32_t *count) {
  int32_t vk_format = gpures__vk_format_of(format);
  VkDrmFormatModifierPropertiesEXT mods[64];
  VkDrmFormatModifierPropertiesListEXT list = {
      VK_STRUCTURE_TYPE_DRM_FORMAT_MODIFIER_PROPERTIES_LIST_EXT, NULL, 0, NULL};
  VkFormatProperties2 props = {VK_STRUCTURE_TYPE_FORMAT_PROPERTIES_2, p->modifiers ? &list : NULL,
                               {0, 0, 0}};
  uint32_t n = 1;
  mods[0].drmFormatModifier = GPURES_MODIFIER_LINEAR;
  if (p->modifiers) {
    p->fn->format_properties2(p->phys, vk_format, &props);
    if (list.drmFormatModifierCount > GPURES__LEN(mods))
      list.drmFormatModifierCount = (uint32_t)GPURES__LEN(mods);
    list.pDrmFormatModifierProperties = mods;
    p->fn->format_properties2(p->phys, vk_format, &props);
    n = list.drmFormatModifierCount;
  }
  for (uint32_t i = 0; i < n; i++) {
    uint64_t modifier = mods[i].drmFormatModifier;
    int32_t tiling =
        p->modifiers ? VK_IMAGE_TILING_DRM_FORMAT_MODIFIER_EXT : VK_IMAGE_TILING_LINEAR;
    VkImageFormatProperties2 limits, opaque_limits;
    uint32_t memory = 0;
    if (p->dma_buf && importable(p, vk_format, tiling, modifier,
                                 VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT, &limits))
      memory |= GPURES_MEMORY_DMA_BUF;
    /* An opaque fd carries no modifier: its images are linear here. */
    if (modifier == GPURES_MODIFIER_LINEAR &&
        importable(p, vk_format, VK_IMAGE_TILING_LINEAR, 0,
                   VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT, &opaque_limits)) {
      if (!memory) limits = opaque_limits;
      memory |= GPURES_MEMORY_OPAQUE_FD;
    }
    if (!memory) continue;
    VkExtent3D max = limits.imageFormatProperties.maxExtent;
    gpures_format_cap cap = {format, memory, modifier, max.width, max.height,
                             linear_row_align(p, format, vk_format), 0};
    gpures__caps_put(out, capacity, count, &cap);
  }
}

int gpures_caps_vulkan(void *instance, void *physical_device, void *get_instance_proc_addr,
                       gpures_format_cap *out, uint32_t capacity, uint32_t *out_count) {
  gpures__op op = {"list Vulkan capabilities", 0};
  int status = check_pointers(op, instance, physical_device);
  if (status == GPURES_OK) status = gpures__caps_args(op, out, capacity, out_count);
  if (status != GPURES_OK) return status;
  vk_instance_fns fn;
  if ((status = gpures__vk_load_instance(op, instance, get_instance_proc_addr, &fn)) != GPURES_OK)
    return status;
  caps_probe p = {physical_device, &fn, false, false, NULL, {0}};
  if ((status = probe_extensions(op, &p)) != GPURES_OK) return status;
  open_probe_device(&p);
  uint32_t count = 0;
  for (uint32_t format = 1; format <= GPURES_PF_MAX; format++) {
    const gpures_pixel_format_info *pf = gpures_pixel_format_info_of(format);
    if (pf->drm_fourcc && gpures__vk_format_of(format)) format_rows(&p, format, out, capacity, &count);
  }
  if (p.device) p.dev.destroy_device(p.device, NULL);
  return gpures__caps_end(op, capacity, count, out_count);
}

/* --------------------------------------------------------------- importer */

typedef struct vk_api {
  void *physical_device;
  void *device;
  uint32_t flags;
  uint32_t image_usage;
  uint32_t buffer_usage;
  vk_instance_fns in;
  vk_device_fns fn;
} vk_api;

/* One import: the public struct is the payload (struct_size and cached are set on the way out). */
typedef gpures_vk_imported vk_import;
_Static_assert(sizeof(vk_import) <= GPURES__PAYLOAD_MAX, "a Vulkan import must fit a payload");

static void free_import(void *state, void *payload) {
  vk_api *vk = state;
  vk_import *im = payload;
  /* Objects before the memory bound to them. */
  if (im->image) vk->fn.destroy_image(vk->device, im->image, NULL);
  if (im->buffer) vk->fn.destroy_buffer(vk->device, im->buffer, NULL);
  for (uint32_t i = 0; i < im->num_memories; i++)
    if (im->memories[i]) vk->fn.free_memory(vk->device, im->memories[i], NULL);
  memset(im, 0, sizeof *im);
}

static void destroy_api(void *state) { gpures__free(state); }

/* Refuses a format, tiling or modifier the device cannot import, and an extent past its limits. */
static int check_image_support(gpures__op op, vk_api *vk, const VkImageCreateInfo *ci,
                               uint64_t modifier, int32_t handle_type, uint32_t format) {
  VkPhysicalDeviceImageDrmFormatModifierInfoEXT mod = {
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_DRM_FORMAT_MODIFIER_INFO_EXT, NULL, modifier,
      VK_SHARING_MODE_EXCLUSIVE, 0, NULL};
  VkPhysicalDeviceExternalImageFormatInfo ext = {
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_IMAGE_FORMAT_INFO,
      ci->tiling == VK_IMAGE_TILING_DRM_FORMAT_MODIFIER_EXT ? &mod : NULL, handle_type};
  VkPhysicalDeviceImageFormatInfo2 info = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_FORMAT_INFO_2,
                                           &ext, ci->format, VK_IMAGE_TYPE_2D, ci->tiling,
                                           ci->usage, ci->flags};
  VkExternalImageFormatProperties ext_out = {VK_STRUCTURE_TYPE_EXTERNAL_IMAGE_FORMAT_PROPERTIES,
                                             NULL, {0, 0, 0}};
  VkImageFormatProperties2 props;
  memset(&props, 0, sizeof props);
  props.sType = VK_STRUCTURE_TYPE_IMAGE_FORMAT_PROPERTIES_2;
  props.pNext = &ext_out;
  VkResult r = vk->in.image_format_properties2(vk->physical_device, &info, &props);
  bool by_modifier = ci->tiling == VK_IMAGE_TILING_DRM_FORMAT_MODIFIER_EXT;
  bool importable_ = ext_out.externalMemoryProperties.externalMemoryFeatures &
                     VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT;
  if (r == VK_ERROR_FORMAT_NOT_SUPPORTED || (r == VK_SUCCESS && !importable_))
    return gpures__fail(op, GPURES_E_UNSUPPORTED, by_modifier ? "modifier" : "format",
                        "the device cannot import %s %s images (VkFormat %d) with usage 0x%x%s",
                        format_name(format), by_modifier ? "modifier-tiled" : "linear",
                        (int)ci->format, ci->usage,
                        by_modifier ? " and this modifier" : "");
  if (r != VK_SUCCESS) return gpures__vk_fail(op, "format", "vkGetPhysicalDeviceImageFormatProperties2", r);
  VkExtent3D max = props.imageFormatProperties.maxExtent;
  if (ci->extent.width > max.width || ci->extent.height > max.height)
    return gpures__fail(op, GPURES_E_INVALID_VALUE,
                        ci->extent.width > max.width ? "width" : "height",
                        "%ux%u is past the device's %ux%u for %s", ci->extent.width,
                        ci->extent.height, max.width, max.height, format_name(format));
  return GPURES_OK;
}

static int create_image(gpures__op op, vk_api *vk, VkImageCreateInfo *ci, uint64_t modifier,
                        int32_t handle_type, uint32_t format, uint64_t *out) {
  int status = check_image_support(op, vk, ci, modifier, handle_type, format);
  if (status != GPURES_OK) return status;
  VkResult r = vk->fn.create_image(vk->device, ci, NULL, out);
  if (r != VK_SUCCESS) return *out = 0, gpures__vk_fail(op, "planes", "vkCreateImage", r);
  return GPURES_OK;
}

/* Imports a dup of `fd` (Vulkan owns it on success; closed here on failure). */
static int import_memory(gpures__op op, vk_api *vk, const char *field, int fd, int32_t handle_type,
                         uint64_t size, uint32_t type,
                         const VkMemoryDedicatedAllocateInfo *dedicated, uint64_t *out) {
  int dup = gpures__fd_dup(fd);
  if (dup < 0) return gpures__os_fail(op, field, "dup", errno);
  VkImportMemoryFdInfoKHR import = {VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR, dedicated,
                                    handle_type, dup};
  VkMemoryAllocateInfo info = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, &import, size, type};
  VkResult r = vk->fn.allocate(vk->device, &info, NULL, out);
  if (r != VK_SUCCESS) {
    close(dup);
    *out = 0;
    return gpures__vk_fail(op, field, "vkAllocateMemory (import)", r);
  }
  return GPURES_OK;
}

static uint32_t lowest_bit(uint32_t bits) {
  for (uint32_t i = 0; i < 32; i++)
    if (bits & (1u << i)) return i;
  return 0;
}

static int create_buffer(gpures__op op, vk_api *vk, int32_t handle_type, uint64_t size,
                         uint64_t *out, VkMemoryRequirements *reqs) {
  VkExternalMemoryBufferCreateInfo ext = {VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                          NULL, (uint32_t)handle_type};
  VkBufferCreateInfo ci = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, &ext, 0, size, vk->buffer_usage,
                           VK_SHARING_MODE_EXCLUSIVE, 0, NULL};
  VkResult r = vk->fn.create_buffer(vk->device, &ci, NULL, out);
  if (r != VK_SUCCESS) return *out = 0, gpures__vk_fail(op, "size", "vkCreateBuffer", r);
  vk->fn.buffer_requirements(vk->device, *out, reqs);
  return GPURES_OK;
}

/* ---- DmaBufHandle */

/* The linear layout's checks: every plane's stride is the driver's; later planes where it puts them. */
static int check_linear_strides(gpures__op op, vk_api *vk, uint64_t image,
                                const gpures_dma_buf_handle_desc *d) {
  for (uint32_t i = 0; i < d->num_planes; i++) {
    VkImageSubresource sub = {plane_aspect(d->num_planes, i), 0, 0};
    VkSubresourceLayout layout;
    vk->fn.subresource_layout(vk->device, image, &sub, &layout);
    if (layout.rowPitch != d->planes[i].stride) {
      char field[32];
      snprintf(field, sizeof field, "planes[%u].stride", i);
      return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                          "the device lays out linear rows of this plane %llu bytes apart, not %u "
                          "(without VK_EXT_image_drm_format_modifier the layout must be the "
                          "driver's; negotiate the row alignment with vulkanCaps)",
                          (unsigned long long)layout.rowPitch, d->planes[i].stride);
    }
  }
  return GPURES_OK;
}

/* After binding at plane 0's offset: the driver's plane offsets must be the frame's. */
static int check_linear_offsets(gpures__op op, vk_api *vk, uint64_t image,
                                const gpures_dma_buf_handle_desc *d) {
  for (uint32_t i = 1; i < d->num_planes; i++) {
    VkImageSubresource sub = {plane_aspect(d->num_planes, i), 0, 0};
    VkSubresourceLayout layout;
    vk->fn.subresource_layout(vk->device, image, &sub, &layout);
    uint64_t want = (uint64_t)d->planes[i].offset - d->planes[0].offset;
    if (d->planes[i].offset < d->planes[0].offset || layout.offset != want) {
      char field[32];
      snprintf(field, sizeof field, "planes[%u].offset", i);
      return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                          "the device puts this plane %llu bytes after plane 0, not %lld",
                          (unsigned long long)layout.offset,
                          (long long)d->planes[i].offset - (long long)d->planes[0].offset);
    }
  }
  return GPURES_OK;
}

static int dma_buf_image(gpures__op op, vk_api *vk, const gpures_dma_buf_handle_desc *d,
                         vk_import *im, uint32_t format) {
  VkSubresourceLayout explicit_planes[4];
  memset(explicit_planes, 0, sizeof explicit_planes);
  for (uint32_t i = 0; i < d->num_planes; i++) {
    explicit_planes[i].offset = d->planes[i].offset;
    explicit_planes[i].rowPitch = d->planes[i].stride;
  }
  bool by_modifier = vk->fn.modifier_properties != NULL;
  VkImageDrmFormatModifierExplicitCreateInfoEXT modifier = {
      VK_STRUCTURE_TYPE_IMAGE_DRM_FORMAT_MODIFIER_EXPLICIT_CREATE_INFO_EXT, NULL, d->modifier,
      d->num_planes, explicit_planes};
  VkExternalMemoryImageCreateInfo ext = {VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO,
                                         by_modifier ? &modifier : NULL,
                                         VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT};
  int32_t tiling = by_modifier ? VK_IMAGE_TILING_DRM_FORMAT_MODIFIER_EXT : VK_IMAGE_TILING_LINEAR;
  VkImageCreateInfo ci = {VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO, &ext, 0, VK_IMAGE_TYPE_2D,
                          im->vk_format, {d->width, d->height, 1}, 1, 1, VK_SAMPLE_COUNT_1_BIT,
                          tiling, vk->image_usage, VK_SHARING_MODE_EXCLUSIVE, 0, NULL, 0};
  if (!by_modifier && d->modifier != GPURES_MODIFIER_LINEAR)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "modifier",
                        "modifier 0x%llx needs VK_EXT_image_drm_format_modifier, which the device "
                        "did not enable; it takes LINEAR only",
                        (unsigned long long)d->modifier);
  int status = create_image(op, vk, &ci, d->modifier, VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
                            format, &im->image);
  if (status == GPURES_OK && !by_modifier) status = check_linear_strides(op, vk, im->image, d);
  return status;
}

static int bind_dma_buf_image(gpures__op op, vk_api *vk, const gpures_dma_buf_handle_desc *d,
                              vk_import *im) {
  VkMemoryRequirements reqs;
  vk->fn.image_requirements(vk->device, im->image, &reqs);
  /* Explicit modifier layouts carry absolute plane offsets; a linear image starts at plane 0. */
  uint64_t at = vk->fn.modifier_properties ? 0 : d->planes[0].offset;
  if (reqs.alignment > 1 && at % reqs.alignment)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "planes[0].offset",
                        "the device binds images at multiples of %llu bytes; %llu is not one",
                        (unsigned long long)reqs.alignment, (unsigned long long)at);
  if (at > im->size || reqs.size > im->size - at)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "planes[0].offset",
                        "the image needs %llu bytes from offset %llu; the fd has %llu",
                        (unsigned long long)reqs.size, (unsigned long long)at,
                        (unsigned long long)im->size);
  VkResult r = vk->fn.bind_image(vk->device, im->image, im->memories[0], at);
  if (r != VK_SUCCESS) return gpures__vk_fail(op, "planes[0].offset", "vkBindImageMemory", r);
  return vk->fn.modifier_properties ? GPURES_OK : check_linear_offsets(op, vk, im->image, d);
}

/* Memory i of a DmaBufHandle: the whole of fds[i]; one memory type both it and the image take. */
static int dma_buf_memory(gpures__op op, vk_api *vk, const gpures_dma_buf_handle_desc *d,
                          uint32_t i, uint32_t image_bits, vk_import *im) {
  char field[16];
  snprintf(field, sizeof field, "fds[%u]", i);
  int64_t size = gpures__fd_size(d->fds[i]);
  if (size <= 0)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, field, "the fd's size cannot be read");
  VkMemoryFdPropertiesKHR props = {VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR, NULL, 0};
  VkResult r = vk->fn.memory_fd_properties(
      vk->device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT, d->fds[i], &props);
  if (r != VK_SUCCESS) return gpures__vk_fail(op, field, "vkGetMemoryFdPropertiesKHR", r);
  uint32_t bits = props.memoryTypeBits & image_bits;
  if (!bits)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, field,
                        "no memory type holds both this dma-buf (0x%x) and the image (0x%x)",
                        props.memoryTypeBits, image_bits);
  int status = import_memory(op, vk, field, d->fds[i], VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
                             (uint64_t)size, lowest_bit(bits), NULL, &im->memories[i]);
  if (status == GPURES_OK) im->num_memories = i + 1;
  if (i == 0) im->size = (uint64_t)size;
  return status;
}

static int make_dma_buf(gpures__op op, vk_api *vk, const gpures_dma_buf_handle_desc *d,
                        vk_import *im) {
  bool want_image = vk->flags & GPURES_VK_IMPORT_IMAGE;
  const gpures_pixel_format_info *pf = gpures_pixel_format_from_fourcc(d->fourcc);
  uint32_t format = pf ? pf->id : 0;
  int status = GPURES_OK;
  if (want_image) {
    im->vk_format = (uint32_t)gpures__vk_format_of(format);
    if (!im->vk_format)
      return gpures__fail(op, GPURES_E_UNSUPPORTED, "format",
                          "fourcc '%.4s' (%s) has no VkFormat Vulkan can import as an image",
                          (const char *)&d->fourcc, pf ? format_name(format) : "no PixelFormat");
    for (uint32_t i = 0; i < d->num_planes; i++)
      if (d->planes[i].object_index != 0)
        return gpures__fail(op, GPURES_E_UNSUPPORTED, "fds",
                            "planes in separate fds (disjoint images) are not imported yet");
    if (pf->num_planes != d->num_planes)
      return gpures__fail(op, GPURES_E_INVALID_VALUE, "numPlanes", "%s has %u planes, not %u",
                          format_name(format), pf->num_planes, d->num_planes);
    if ((status = dma_buf_image(op, vk, d, im, format)) != GPURES_OK) return status;
  }
  uint32_t image_bits = UINT32_MAX;
  if (im->image) {
    VkMemoryRequirements reqs;
    vk->fn.image_requirements(vk->device, im->image, &reqs);
    image_bits = reqs.memoryTypeBits;
  }
  for (uint32_t i = 0; i < d->num_fds && status == GPURES_OK; i++)
    status = dma_buf_memory(op, vk, d, i, i == 0 ? image_bits : UINT32_MAX, im);
  if (status == GPURES_OK && im->image) status = bind_dma_buf_image(op, vk, d, im);
  if (status == GPURES_OK && (vk->flags & GPURES_VK_IMPORT_BUFFER)) {
    VkMemoryRequirements reqs;
    status = create_buffer(op, vk, VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT, im->size,
                           &im->buffer, &reqs);
    if (status == GPURES_OK) {
      VkResult r = vk->fn.bind_buffer(vk->device, im->buffer, im->memories[0], 0);
      if (r != VK_SUCCESS) status = gpures__vk_fail(op, "fds[0]", "vkBindBufferMemory", r);
    }
  }
  im->offset = want_image ? d->planes[0].offset : 0;
  return status;
}

/* ---- VkOpaqueFd */

static int opaque_image(gpures__op op, vk_api *vk, const gpures_vk_opaque_fd_desc *d,
                        vk_import *im) {
  im->vk_format = (uint32_t)gpures__vk_format_of(d->format);
  if (!im->vk_format)
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "format", "%s has no VkFormat",
                        format_name(d->format));
  VkExternalMemoryImageCreateInfo ext = {VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO, NULL,
                                         VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
  /* An opaque fd carries no tiling: an image exported for sharing is linear (as the export was). */
  VkImageCreateInfo ci = {VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO, &ext, 0, VK_IMAGE_TYPE_2D,
                          im->vk_format, {d->width, d->height, 1}, 1, 1, VK_SAMPLE_COUNT_1_BIT,
                          VK_IMAGE_TILING_LINEAR, vk->image_usage, VK_SHARING_MODE_EXCLUSIVE, 0,
                          NULL, 0};
  return create_image(op, vk, &ci, 0, VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT, d->format,
                      &im->image);
}

static int check_fits(gpures__op op, const char *field, const VkMemoryRequirements *reqs,
                      uint64_t at, uint64_t size, uint32_t type) {
  if (!(reqs->memoryTypeBits & (1u << type)))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "memoryTypeIndex",
                        "memory type %u cannot hold it (types 0x%x can)", type,
                        reqs->memoryTypeBits);
  if (reqs->alignment > 1 && at % reqs->alignment)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                        "%llu is not a multiple of the %llu bytes the device aligns to",
                        (unsigned long long)at, (unsigned long long)reqs->alignment);
  if (at > size || reqs->size > size - at)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, field,
                        "it needs %llu bytes from %llu; the allocation has %llu",
                        (unsigned long long)reqs->size, (unsigned long long)at,
                        (unsigned long long)size);
  return GPURES_OK;
}

/* The exporter's row pitch, when the frame says it, must be how this device lays the image out. */
static int check_opaque_pitch(gpures__op op, vk_api *vk, uint64_t image,
                              const gpures_vk_opaque_fd_desc *d) {
  if (!d->row_pitch) return GPURES_OK;
  VkImageSubresource sub = {plane_aspect(gpures_pixel_format_info_of(d->format)->num_planes, 0),
                              0, 0};
  VkSubresourceLayout layout;
  vk->fn.subresource_layout(vk->device, image, &sub, &layout);
  if (layout.rowPitch == d->row_pitch) return GPURES_OK;
  return gpures__fail(op, GPURES_E_INVALID_VALUE, "rowPitch",
                      "the device lays out linear rows %llu bytes apart, not %u",
                      (unsigned long long)layout.rowPitch, d->row_pitch);
}

static int make_opaque(gpures__op op, vk_api *vk, const gpures_vk_opaque_fd_desc *d,
                       vk_import *im) {
  bool want_buffer = (vk->flags & GPURES_VK_IMPORT_BUFFER) && !d->dedicated;
  if (d->dedicated && !(vk->flags & GPURES_VK_IMPORT_IMAGE))
    return gpures__fail(op, GPURES_E_UNSUPPORTED, "dedicated",
                        "memory dedicated to an image imports only as that image: make the "
                        "importer with image: true");
  if (d->memory_type_index >= 32)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "memoryTypeIndex",
                        "%u is not a memory type index", d->memory_type_index);
  int status = GPURES_OK;
  VkMemoryRequirements image_reqs, buffer_reqs;
  if ((vk->flags & GPURES_VK_IMPORT_IMAGE) &&
      (status = opaque_image(op, vk, d, im)) == GPURES_OK) {
    vk->fn.image_requirements(vk->device, im->image, &image_reqs);
    status = check_fits(op, "offset", &image_reqs, d->offset, d->size, d->memory_type_index);
    if (status == GPURES_OK) status = check_opaque_pitch(op, vk, im->image, d);
  }
  if (status == GPURES_OK && want_buffer &&
      (status = create_buffer(op, vk, VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT, d->size,
                              &im->buffer, &buffer_reqs)) == GPURES_OK)
    status = check_fits(op, "size", &buffer_reqs, 0, d->size, d->memory_type_index);
  if (status != GPURES_OK) return status;
  VkMemoryDedicatedAllocateInfo dedicated = {VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
                                             NULL, im->image, 0};
  status = import_memory(op, vk, "fd", d->fd, VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT, d->size,
                         d->memory_type_index, d->dedicated ? &dedicated : NULL, &im->memories[0]);
  if (status != GPURES_OK) return status;
  im->num_memories = 1;
  im->size = d->size;
  im->offset = d->offset;
  VkResult r = VK_SUCCESS;
  if (im->image) r = vk->fn.bind_image(vk->device, im->image, im->memories[0], d->offset);
  if (r == VK_SUCCESS && im->buffer)
    r = vk->fn.bind_buffer(vk->device, im->buffer, im->memories[0], 0);
  return r == VK_SUCCESS ? GPURES_OK : gpures__vk_fail(op, "offset", "binding the imported memory", r);
}

static int make_import(void *state, gpures__op op, const gpures__frame *frame, void *payload) {
  vk_api *vk = state;
  vk_import *im = payload;
  int status = frame->kind == GPURES_KIND_DMA_BUF_HANDLE
                   ? make_dma_buf(op, vk, &frame->desc.dma_buf, im)
                   : make_opaque(op, vk, &frame->desc.opaque, im);
  if (status != GPURES_OK) free_import(vk, im);
  return status;
}

static const gpures__import_ops vk_ops = {
  "Vulkan",
  (1ull << GPURES_KIND_DMA_BUF_HANDLE) | (1ull << GPURES_KIND_VK_OPAQUE_FD),
  sizeof(vk_import),
  make_import,
  free_import,
  destroy_api,
};

static int check_desc(gpures__op op, const gpures_vk_importer_desc *d) {
  const uint32_t known = GPURES_VK_IMPORT_IMAGE | GPURES_VK_IMPORT_BUFFER;
  if (!(d->flags & known) || (d->flags & ~known))
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "flags",
                        "flags 0x%x: give IMAGE (1), BUFFER (2) or both, nothing else", d->flags);
  int status = check_pointers(op, d->instance, d->physical_device);
  if (status == GPURES_OK && !d->device)
    status = gpures__fail(op, GPURES_E_NULL_POINTER, "device", "device is null");
  return status;
}

int gpures_vk_importer_create(const gpures_vk_importer_desc *desc, gpures_importer **out_importer) {
  gpures__op op = {"create a Vulkan importer", 0};
  gpures_vk_importer_desc d;
  int status = gpures__importer_desc(op, desc, sizeof d, &d, out_importer);
  if (status == GPURES_OK) status = check_desc(op, &d);
  if (status != GPURES_OK) return status;
  vk_api *vk = gpures__alloc(sizeof *vk);
  if (!vk) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "no memory for the importer");
  memset(vk, 0, sizeof *vk);
  vk->physical_device = d.physical_device;
  vk->device = d.device;
  vk->flags = d.flags;
  vk->image_usage = d.usage ? d.usage : IMAGE_USAGE_DEFAULT;
  vk->buffer_usage = d.usage ? d.usage : BUFFER_USAGE_DEFAULT;
  status = gpures__vk_load_instance(op, d.instance, d.get_instance_proc_addr, &vk->in);
  if (status == GPURES_OK) status = gpures__vk_load_device(op, &vk->in, d.device, &vk->fn);
  if (status != GPURES_OK) return gpures__free(vk), status;
  gpures_device_info info;
  gpures__vk_fill_device_info(d.physical_device, &vk->in, &info);
  return gpures__importer_new(op, &vk_ops, vk, &info, d.capacity, out_importer);
}

int gpures_vk_import(gpures_importer *importer, gpures_handle frame, gpures_vk_imported *out) {
  gpures__op op = {"import", 0};
  if (!out) return gpures__fail(op, GPURES_E_NULL_POINTER, "out", "out is null");
  vk_import im;
  memset(&im, 0, sizeof im);
  uint32_t cached = 0;
  int status = gpures__importer_import(importer, &vk_ops, "import", frame, &im, &cached);
  if (status != GPURES_OK) return status;
  im.struct_size = sizeof im;
  im.cached = cached;
  return gpures__copy_out(op, out, &im, sizeof im);
}

#endif /* __linux__ */
