/*
** gpures_test_vulkan: real Vulkan producers and consumers for the Deno tests.
**
** Test-only. A context holds one Vulkan instance, one physical device (any;
** lavapipe on CI) and two logical devices on it: A (the producer's) and B (a
** second importer). Producers make real objects on A: a linear RGBA8 VkImage,
** a VkBuffer, exportable memory behind a VkImage. Consumers are given only a
** gpures handle (a uint64_t) and read the bytes back through gpures's C API:
** gpures_<kind>_describe for the fields, gpures_dup_fd for an fd to import.
**
** The FFI surface is flat: pointers, u32, u64 and byte buffers; results come
** back through a u64 array. Every function returns 0 on success or a negative
** number on failure, with the reason in gvk_last_error().
**
** Images are 4 bytes per texel (VK_FORMAT_R8G8B8A8_UNORM). Producers hand
** them over in VK_IMAGE_LAYOUT_GENERAL, the layout consumers copy from; an
** image over exported or imported memory belongs to VK_QUEUE_FAMILY_EXTERNAL
** between GPU uses (see record()).
**
** Every VkDeviceMemory is counted (gvk_live_memory) and every object listed
** (gvk_live_objects), so a test can prove it freed everything before
** gvk_close destroys the devices.
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VK_MIN_PROTOTYPES /* this helper links the loader */
#include "khronos/vulkan_min.h"

#define HELPER_ERROR_THREAD_LOCAL /* each calling thread keeps its own last error */
#include "../helper.h"

#define GVK_API API

/* gvk_caps() bits. */
enum {
  GVK_CAP_EXTERNAL_MEMORY_FD = 1u << 0,      /* VK_KHR_external_memory_fd */
  GVK_CAP_DMA_BUF_IMPORT = 1u << 1,          /* VK_EXT_external_memory_dma_buf, importable */
  GVK_CAP_OPAQUE_FD_IMAGE = 1u << 2,         /* linear RGBA8 images export and import OPAQUE_FD */
  GVK_CAP_OPAQUE_FD_DEDICATED_ONLY = 1u << 3 /* ... but only as dedicated allocations */
};

/* gvk_object_read() and friends: how a consumer reads. */
enum {
  GVK_READ_MAP = 0, /* vkMapMemory of the memory and a CPU copy at the described layout */
  GVK_READ_GPU = 1  /* a transfer command on the device's queue into a staging buffer */
};

enum { OBJ_IMAGE = 1, OBJ_BUFFER, OBJ_EXPORT, OBJ_IMPORT_OPAQUE, OBJ_IMPORT_DMA_BUF };

#define RGBA8 VK_FORMAT_R8G8B8A8_UNORM
#define IMAGE_USAGE (VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT)
#define BUFFER_USAGE (VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT)
#define HOST_MEMORY (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)

typedef struct gvk_dev {
  VkDevice device;
  VkQueue queue;
  VkCommandPool pool;
  uint32_t family;
  PFN_vkGetMemoryFdKHR get_memory_fd;
  PFN_vkGetMemoryFdPropertiesKHR get_memory_fd_properties;
} gvk_dev;

typedef struct gvk_plane {
  uint32_t object, offset, stride, row_bytes, rows;
} gvk_plane;

typedef struct gvk_object {
  struct gvk_object *next;
  uint64_t id;
  uint32_t type;     /* OBJ_* */
  uint32_t dev;      /* 0 = device A, 1 = device B */
  int external;      /* its image's memory is shared with another device */
  VkImage image;     /* images, exports, opaque imports */
  uint32_t width, height, row_pitch;
  VkDeviceSize pixel_offset; /* first texel, from the start of memory[0] */
  uint32_t num_memories;
  VkDeviceMemory memory[4];
  VkDeviceSize memory_size[4];
  VkBuffer buffer[4]; /* OBJ_BUFFER: the buffer; DMA-BUF import: one per object, for GPU reads */
  VkDeviceSize buffer_size[4];
  uint32_t num_planes;
  gvk_plane planes[4];
} gvk_object;

typedef struct gvk_context {
  struct gvk_context *next;
  VkInstance instance;
  VkPhysicalDevice physical;
  VkPhysicalDeviceMemoryProperties memory_properties;
  uint8_t uuid[16];
  char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
  uint32_t caps;
  gvk_dev dev[2];
  gvk_object *objects;
  uint64_t next_id;
  uint32_t live_memory; /* VkDeviceMemory allocations not yet freed */
} gvk_context;

/* Every open context, so consumers given only a handle can find what a producer made. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static gvk_context *g_contexts;

/* ------------------------------------------------------------------ errors */

static const char *vk_result_name(VkResult r) {
  switch (r) {
  case VK_SUCCESS: return "VK_SUCCESS";
  case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
  case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
  case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
  case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
  case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
  case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
  case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
  case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
  case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
  case VK_ERROR_INVALID_EXTERNAL_HANDLE: return "VK_ERROR_INVALID_EXTERNAL_HANDLE";
  default: return "VkResult";
  }
}

static int vk_fail(VkResult r, const char *what) {
  return fail("%s failed: %s (%d)", what, vk_result_name(r), (int)r);
}

static int gpures_fail(int status, const char *what) {
  return fail("%s failed: %s: %s", what, gpures_status_name(status), gpures_last_error());
}

/* The reason the last call failed, on this thread. */
GVK_API const char *gvk_last_error(void) { return helper_error; }

/* ------------------------------------------------------------------ memory */

static int memory_type(const gvk_context *c, uint32_t bits, VkMemoryPropertyFlags want,
                       uint32_t *out) {
  for (uint32_t i = 0; i < c->memory_properties.memoryTypeCount; i++) {
    if ((bits & (1u << i)) &&
        (c->memory_properties.memoryTypes[i].propertyFlags & want) == want) {
      *out = i;
      return 0;
    }
  }
  return fail("no memory type in bits 0x%x is host-visible and coherent", bits);
}

static int allocate(gvk_context *c, uint32_t d, const VkMemoryAllocateInfo *info,
                    VkDeviceMemory *out) {
  VkResult r = vkAllocateMemory(c->dev[d].device, info, NULL, out);
  if (r != VK_SUCCESS) return vk_fail(r, "vkAllocateMemory");
  c->live_memory++;
  return 0;
}

static void free_memory(gvk_context *c, uint32_t d, VkDeviceMemory *memory) {
  if (*memory == VK_NULL_HANDLE) return;
  vkFreeMemory(c->dev[d].device, *memory, NULL);
  *memory = VK_NULL_HANDLE;
  c->live_memory--;
}

/* Host-visible, coherent memory for `reqs`, optionally with a pNext chain. */
static int allocate_for(gvk_context *c, uint32_t d, const VkMemoryRequirements *reqs,
                        VkDeviceSize size, const void *next, VkDeviceMemory *out,
                        uint32_t *out_type) {
  uint32_t type = 0;
  if (memory_type(c, reqs->memoryTypeBits, HOST_MEMORY, &type) != 0) return -1;
  VkMemoryAllocateInfo info = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .pNext = next,
                               .allocationSize = size,
                               .memoryTypeIndex = type};
  if (out_type) *out_type = type;
  return allocate(c, d, &info, out);
}

/* --------------------------------------------------------------- commands */

typedef struct gvk_job {
  VkImage image;          /* set up, or copy from */
  uint32_t width, height;
  int setup;              /* only put the new image in VK_IMAGE_LAYOUT_GENERAL */
  int external;           /* the image's memory is shared with another device */
  uint32_t family;        /* the queue family of the device that runs the job */
  VkBuffer src;           /* buffer copy from */
  const VkBufferCopy *regions;
  uint32_t num_regions;
  VkBuffer staging;       /* copy into */
} gvk_job;

static void image_barrier(VkCommandBuffer cb, VkImage image, VkImageLayout old_layout,
                          uint32_t src_family, uint32_t dst_family, VkAccessFlags src_access,
                          VkAccessFlags dst_access, VkPipelineStageFlags src_stage,
                          VkPipelineStageFlags dst_stage) {
  VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
                            .srcAccessMask = src_access,
                            .dstAccessMask = dst_access,
                            .oldLayout = old_layout,
                            .newLayout = VK_IMAGE_LAYOUT_GENERAL,
                            .srcQueueFamilyIndex = src_family,
                            .dstQueueFamilyIndex = dst_family,
                            .image = image,
                            .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
  vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 0, NULL, 0, NULL, 1, &b);
}

/*
** Layouts and ownership. A producer's own image starts PREINITIALIZED (its
** host writes survive the move to GENERAL). An image over external memory
** starts UNDEFINED, as Vulkan requires; the exporter moves it to GENERAL and
** releases it to VK_QUEUE_FAMILY_EXTERNAL, and every GPU use on either device
** acquires it from there and releases it back, the layout staying GENERAL.
*/
static void record(VkCommandBuffer cb, const void *job) {
  const gvk_job *j = job;
  const uint32_t ext = VK_QUEUE_FAMILY_EXTERNAL, none = VK_QUEUE_FAMILY_IGNORED;
  if (j->setup) {
    if (j->external)
      image_barrier(cb, j->image, VK_IMAGE_LAYOUT_UNDEFINED, j->family, ext, 0, 0,
                    VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
    else
      image_barrier(cb, j->image, VK_IMAGE_LAYOUT_PREINITIALIZED, none, none,
                    VK_ACCESS_HOST_WRITE_BIT,
                    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT |
                        VK_ACCESS_HOST_WRITE_BIT,
                    VK_PIPELINE_STAGE_HOST_BIT,
                    VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT);
    return;
  }
  if (j->image != VK_NULL_HANDLE) {
    if (j->external)
      image_barrier(cb, j->image, VK_IMAGE_LAYOUT_GENERAL, ext, j->family, 0,
                    VK_ACCESS_TRANSFER_READ_BIT, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                    VK_PIPELINE_STAGE_TRANSFER_BIT);
    VkBufferImageCopy region = {.bufferOffset = 0,
                                .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                                .imageExtent = {j->width, j->height, 1}};
    vkCmdCopyImageToBuffer(cb, j->image, VK_IMAGE_LAYOUT_GENERAL, j->staging, 1, &region);
    if (j->external)
      image_barrier(cb, j->image, VK_IMAGE_LAYOUT_GENERAL, j->family, ext, 0, 0,
                    VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
  } else {
    vkCmdCopyBuffer(cb, j->src, j->staging, j->num_regions, j->regions);
  }
  VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                       .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                       .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &b,
                       0, NULL, 0, NULL);
}

/* Records a gvk_job (record) or a gvk_copy (record_copy) into a command buffer. */
typedef void (*gvk_recorder)(VkCommandBuffer cb, const void *job);

/* Records `job` with `rec` into a one-time command buffer of `g`, submits it and waits. */
static int submit_once(gvk_dev *g, gvk_recorder rec, const void *job) {
  VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                    .commandPool = g->pool,
                                    .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                    .commandBufferCount = 1};
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkResult r = vkAllocateCommandBuffers(g->device, &ai, &cb);
  if (r != VK_SUCCESS) return vk_fail(r, "vkAllocateCommandBuffers");
  int status = -1;
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                 .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  if ((r = vkBeginCommandBuffer(cb, &bi)) != VK_SUCCESS) {
    vk_fail(r, "vkBeginCommandBuffer");
    goto out;
  }
  rec(cb, job);
  if ((r = vkEndCommandBuffer(cb)) != VK_SUCCESS) {
    vk_fail(r, "vkEndCommandBuffer");
    goto out;
  }
  VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if ((r = vkCreateFence(g->device, &fi, NULL, &fence)) != VK_SUCCESS) {
    vk_fail(r, "vkCreateFence");
    goto out;
  }
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                     .commandBufferCount = 1,
                     .pCommandBuffers = &cb};
  if ((r = vkQueueSubmit(g->queue, 1, &si, fence)) != VK_SUCCESS) {
    vk_fail(r, "vkQueueSubmit");
    goto out;
  }
  if ((r = vkWaitForFences(g->device, 1, &fence, VK_TRUE, UINT64_MAX)) != VK_SUCCESS) {
    vk_fail(r, "vkWaitForFences");
    goto out;
  }
  status = 0;
out:
  if (fence != VK_NULL_HANDLE) vkDestroyFence(g->device, fence, NULL);
  vkFreeCommandBuffers(g->device, g->pool, 1, &cb);
  return status;
}

/* Runs `job` on device `d`'s queue and waits for it. */
static int submit(gvk_context *c, uint32_t d, const gvk_job *job) {
  gvk_job j = *job;
  j.family = c->dev[d].family;
  return submit_once(&c->dev[d], record, &j);
}

/* Runs a copy `job` into a new staging buffer of `size` bytes and copies that to `out`. */
static int gpu_read(gvk_context *c, uint32_t d, gvk_job *job, VkDeviceSize size, uint8_t *out) {
  VkDevice dev = c->dev[d].device;
  VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                            .size = size,
                            .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                            .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  VkBuffer staging = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkResult r = vkCreateBuffer(dev, &bci, NULL, &staging);
  if (r != VK_SUCCESS) return vk_fail(r, "vkCreateBuffer (staging)");
  int status = -1;
  VkMemoryRequirements reqs;
  vkGetBufferMemoryRequirements(dev, staging, &reqs);
  if (allocate_for(c, d, &reqs, reqs.size, NULL, &memory, NULL) != 0) goto out;
  if ((r = vkBindBufferMemory(dev, staging, memory, 0)) != VK_SUCCESS) {
    vk_fail(r, "vkBindBufferMemory (staging)");
    goto out;
  }
  job->staging = staging;
  if (submit(c, d, job) != 0) goto out;
  void *map = NULL;
  if ((r = vkMapMemory(dev, memory, 0, VK_WHOLE_SIZE, 0, &map)) != VK_SUCCESS) {
    vk_fail(r, "vkMapMemory (staging)");
    goto out;
  }
  memcpy(out, map, (size_t)size);
  vkUnmapMemory(dev, memory);
  status = 0;
out:
  free_memory(c, d, &memory);
  vkDestroyBuffer(dev, staging, NULL);
  return status;
}

/* ------------------------------------------------------------------ context */

static int has_extension(VkPhysicalDevice phys, const char *name) {
  uint32_t n = 0;
  if (vkEnumerateDeviceExtensionProperties(phys, NULL, &n, NULL) != VK_SUCCESS) return 0;
  VkExtensionProperties *ext = calloc(n ? n : 1, sizeof *ext);
  if (!ext) return 0;
  int found = 0;
  if (vkEnumerateDeviceExtensionProperties(phys, NULL, &n, ext) == VK_SUCCESS) {
    for (uint32_t i = 0; i < n && !found; i++) found = strcmp(ext[i].extensionName, name) == 0;
  }
  free(ext);
  return found;
}

static uint32_t probe_caps(VkPhysicalDevice phys) {
  uint32_t caps = 0;
  if (!has_extension(phys, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME)) return 0;
  caps |= GVK_CAP_EXTERNAL_MEMORY_FD;

  VkPhysicalDeviceExternalImageFormatInfo ext_info = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_IMAGE_FORMAT_INFO,
      .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
  VkPhysicalDeviceImageFormatInfo2 info = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_FORMAT_INFO_2,
      .pNext = &ext_info,
      .format = RGBA8,
      .type = VK_IMAGE_TYPE_2D,
      .tiling = VK_IMAGE_TILING_LINEAR,
      .usage = IMAGE_USAGE};
  VkExternalImageFormatProperties ext_props = {
      .sType = VK_STRUCTURE_TYPE_EXTERNAL_IMAGE_FORMAT_PROPERTIES};
  VkImageFormatProperties2 props = {.sType = VK_STRUCTURE_TYPE_IMAGE_FORMAT_PROPERTIES_2,
                                    .pNext = &ext_props};
  if (vkGetPhysicalDeviceImageFormatProperties2(phys, &info, &props) == VK_SUCCESS) {
    VkExternalMemoryFeatureFlags f = ext_props.externalMemoryProperties.externalMemoryFeatures;
    VkExternalMemoryFeatureFlags both =
        VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT | VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT;
    if ((f & both) == both) caps |= GVK_CAP_OPAQUE_FD_IMAGE;
    if (f & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT) caps |= GVK_CAP_OPAQUE_FD_DEDICATED_ONLY;
  }

  if (has_extension(phys, VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME)) {
    VkPhysicalDeviceExternalBufferInfo binfo = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO,
        .usage = BUFFER_USAGE,
        .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT};
    VkExternalBufferProperties bprops = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
    vkGetPhysicalDeviceExternalBufferProperties(phys, &binfo, &bprops);
    if (bprops.externalMemoryProperties.externalMemoryFeatures &
        VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT)
      caps |= GVK_CAP_DMA_BUF_IMPORT;
  }
  return caps;
}

static void destroy_object(gvk_context *c, gvk_object *o) {
  VkDevice dev = c->dev[o->dev].device;
  for (uint32_t i = 0; i < 4; i++) {
    if (o->buffer[i] != VK_NULL_HANDLE) vkDestroyBuffer(dev, o->buffer[i], NULL);
  }
  if (o->image != VK_NULL_HANDLE) vkDestroyImage(dev, o->image, NULL);
  for (uint32_t i = 0; i < 4; i++) free_memory(c, o->dev, &o->memory[i]);
  free(o);
}

static void destroy_context(gvk_context *c) {
  while (c->objects) {
    gvk_object *o = c->objects;
    c->objects = o->next;
    destroy_object(c, o);
  }
  for (int d = 0; d < 2; d++) {
    if (c->dev[d].device == VK_NULL_HANDLE) continue;
    vkDeviceWaitIdle(c->dev[d].device);
    if (c->dev[d].pool != VK_NULL_HANDLE)
      vkDestroyCommandPool(c->dev[d].device, c->dev[d].pool, NULL);
    vkDestroyDevice(c->dev[d].device, NULL);
  }
  if (c->instance != VK_NULL_HANDLE) vkDestroyInstance(c->instance, NULL);
  free(c);
}

static int create_device(gvk_context *c, uint32_t d, uint32_t family) {
  const char *ext[2];
  uint32_t n = 0;
  if (c->caps & GVK_CAP_EXTERNAL_MEMORY_FD) ext[n++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
  if (c->caps & GVK_CAP_DMA_BUF_IMPORT) ext[n++] = VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                .queueFamilyIndex = family,
                                .queueCount = 1,
                                .pQueuePriorities = &priority};
  VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                           .queueCreateInfoCount = 1,
                           .pQueueCreateInfos = &qi,
                           .enabledExtensionCount = n,
                           .ppEnabledExtensionNames = ext};
  gvk_dev *g = &c->dev[d];
  VkResult r = vkCreateDevice(c->physical, &di, NULL, &g->device);
  if (r != VK_SUCCESS) return vk_fail(r, "vkCreateDevice");
  g->family = family;
  vkGetDeviceQueue(g->device, family, 0, &g->queue);
  VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                .queueFamilyIndex = family};
  if ((r = vkCreateCommandPool(g->device, &pi, NULL, &g->pool)) != VK_SUCCESS)
    return vk_fail(r, "vkCreateCommandPool");
  if (c->caps & GVK_CAP_EXTERNAL_MEMORY_FD) {
    g->get_memory_fd = (PFN_vkGetMemoryFdKHR)vkGetDeviceProcAddr(g->device, "vkGetMemoryFdKHR");
    g->get_memory_fd_properties = (PFN_vkGetMemoryFdPropertiesKHR)vkGetDeviceProcAddr(
        g->device, "vkGetMemoryFdPropertiesKHR");
  }
  return 0;
}

/*
** Opens a context: an instance, the first Vulkan 1.1 physical device (one
** with VK_KHR_external_memory_fd preferred) and devices A and B on it. NULL
** when Vulkan has no usable device; gvk_last_error() says why.
*/
GVK_API void *gvk_open(void) {
  gvk_context *c = calloc(1, sizeof *c);
  if (!c) {
    fail("out of memory");
    return NULL;
  }
  c->next_id = 1;
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                           .pApplicationName = "gpures-test",
                           .apiVersion = VK_API_VERSION_1_1};
  VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                              .pApplicationInfo = &app};
  VkResult r = vkCreateInstance(&ici, NULL, &c->instance);
  if (r != VK_SUCCESS) {
    fail("vkCreateInstance failed: %s (%d); is a Vulkan driver (mesa-vulkan-drivers) installed?",
         vk_result_name(r), (int)r);
    c->instance = VK_NULL_HANDLE;
    goto fail;
  }
  uint32_t n = 0;
  r = vkEnumeratePhysicalDevices(c->instance, &n, NULL);
  if (r != VK_SUCCESS || n == 0) {
    fail("Vulkan has no physical device");
    goto fail;
  }
  VkPhysicalDevice *phys = calloc(n, sizeof *phys);
  if (!phys || vkEnumeratePhysicalDevices(c->instance, &n, phys) < 0) {
    free(phys);
    fail("vkEnumeratePhysicalDevices failed");
    goto fail;
  }
  for (uint32_t i = 0; i < n; i++) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(phys[i], &p);
    if (p.apiVersion < VK_API_VERSION_1_1) continue;
    if (c->physical == VK_NULL_HANDLE || (!(c->caps & GVK_CAP_EXTERNAL_MEMORY_FD) &&
                                          (probe_caps(phys[i]) & GVK_CAP_EXTERNAL_MEMORY_FD))) {
      c->physical = phys[i];
      c->caps = probe_caps(phys[i]);
    }
  }
  free(phys);
  if (c->physical == VK_NULL_HANDLE) {
    fail("no Vulkan physical device supports Vulkan 1.1");
    goto fail;
  }
  VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                       .pNext = &id};
  vkGetPhysicalDeviceProperties2(c->physical, &props);
  memcpy(c->uuid, id.deviceUUID, 16);
  memcpy(c->name, props.properties.deviceName, sizeof c->name);
  c->name[sizeof c->name - 1] = '\0';
  vkGetPhysicalDeviceMemoryProperties(c->physical, &c->memory_properties);

  uint32_t nf = 0, family = UINT32_MAX;
  vkGetPhysicalDeviceQueueFamilyProperties(c->physical, &nf, NULL);
  VkQueueFamilyProperties *fam = calloc(nf ? nf : 1, sizeof *fam);
  if (!fam) {
    fail("out of memory");
    goto fail;
  }
  vkGetPhysicalDeviceQueueFamilyProperties(c->physical, &nf, fam);
  for (uint32_t i = 0; i < nf && family == UINT32_MAX; i++) {
    /* Graphics and compute queues support transfers too. */
    if (fam[i].queueCount > 0 &&
        (fam[i].queueFlags &
         (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT | VK_QUEUE_TRANSFER_BIT)))
      family = i;
  }
  free(fam);
  if (family == UINT32_MAX) {
    fail("the Vulkan device has no queue that can transfer");
    goto fail;
  }
  if (create_device(c, 0, family) != 0 || create_device(c, 1, family) != 0) goto fail;

  pthread_mutex_lock(&g_lock);
  c->next = g_contexts;
  g_contexts = c;
  pthread_mutex_unlock(&g_lock);
  return c;
fail:
  destroy_context(c);
  return NULL;
}

/*
** Frees every object still alive, destroys both devices and the instance.
** Returns how many objects it had to free (0 when the caller freed them all).
*/
GVK_API uint32_t gvk_close(void *ctx) {
  gvk_context *c = ctx;
  if (!c) return 0;
  pthread_mutex_lock(&g_lock);
  for (gvk_context **p = &g_contexts; *p; p = &(*p)->next) {
    if (*p == c) {
      *p = c->next;
      break;
    }
  }
  pthread_mutex_unlock(&g_lock);
  uint32_t left = 0;
  for (gvk_object *o = c->objects; o; o = o->next) left++;
  destroy_context(c);
  return left;
}

/* GVK_CAP_* bits of the context's physical device. */
GVK_API uint32_t gvk_caps(void *ctx) { return ctx ? ((gvk_context *)ctx)->caps : 0; }

/* VkPhysicalDeviceIDProperties.deviceUUID, into 16 bytes. */
GVK_API void gvk_device_uuid(void *ctx, uint8_t *out) {
  if (ctx && out) memcpy(out, ((gvk_context *)ctx)->uuid, 16);
}

/* VkPhysicalDeviceProperties.deviceName. */
GVK_API const char *gvk_device_name(void *ctx) {
  return ctx ? ((gvk_context *)ctx)->name : "";
}

GVK_API void *gvk_instance(void *ctx) {
  return ctx ? (void *)((gvk_context *)ctx)->instance : NULL;
}

GVK_API void *gvk_physical_device(void *ctx) {
  return ctx ? (void *)((gvk_context *)ctx)->physical : NULL;
}

/* The VkDevice of device A (which = 0) or B (which = 1). */
GVK_API void *gvk_device(void *ctx, uint32_t which) {
  return ctx && which < 2 ? (void *)((gvk_context *)ctx)->dev[which].device : NULL;
}

/* Objects (producers' and consumers') not yet destroyed. */
GVK_API uint32_t gvk_live_objects(void *ctx) {
  uint32_t n = 0;
  if (!ctx) return 0;
  pthread_mutex_lock(&g_lock);
  for (gvk_object *o = ((gvk_context *)ctx)->objects; o; o = o->next) n++;
  pthread_mutex_unlock(&g_lock);
  return n;
}

/* VkDeviceMemory allocations of the context not yet freed. */
GVK_API uint32_t gvk_live_memory(void *ctx) {
  return ctx ? ((gvk_context *)ctx)->live_memory : 0;
}

/* ------------------------------------------------------------------ objects */

static gvk_object *new_object(uint32_t type, uint32_t dev) {
  gvk_object *o = calloc(1, sizeof *o);
  if (!o) {
    fail("out of memory");
    return NULL;
  }
  o->type = type;
  o->dev = dev;
  return o;
}

static void add_object(gvk_context *c, gvk_object *o) {
  pthread_mutex_lock(&g_lock);
  o->id = c->next_id++;
  o->next = c->objects;
  c->objects = o;
  pthread_mutex_unlock(&g_lock);
}

static gvk_object *find_object(gvk_context *c, uint64_t id) {
  if (!c) {
    fail("context is null");
    return NULL;
  }
  for (gvk_object *o = c->objects; o; o = o->next)
    if (o->id == id) return o;
  fail("no object %llu in this context", (unsigned long long)id);
  return NULL;
}

/* A linear RGBA8 image on device d, for transfers, with external handle types `ext`. */
static int create_image(gvk_context *c, gvk_object *o, uint32_t width, uint32_t height,
                        VkExternalMemoryHandleTypeFlags ext) {
  VkExternalMemoryImageCreateInfo emi = {
      .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO, .handleTypes = ext};
  VkImageCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                           .pNext = ext ? &emi : NULL,
                           .imageType = VK_IMAGE_TYPE_2D,
                           .format = RGBA8,
                           .extent = {width, height, 1},
                           .mipLevels = 1,
                           .arrayLayers = 1,
                           .samples = VK_SAMPLE_COUNT_1_BIT,
                           .tiling = VK_IMAGE_TILING_LINEAR,
                           .usage = IMAGE_USAGE,
                           .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
                           /* External images must start UNDEFINED. */
                           .initialLayout = ext ? VK_IMAGE_LAYOUT_UNDEFINED
                                                : VK_IMAGE_LAYOUT_PREINITIALIZED};
  VkResult r = vkCreateImage(c->dev[o->dev].device, &ici, NULL, &o->image);
  if (r != VK_SUCCESS) {
    o->image = VK_NULL_HANDLE;
    return vk_fail(r, "vkCreateImage");
  }
  o->width = width;
  o->height = height;
  o->external = ext != 0;
  return 0;
}

/*
** After binding: the row pitch and first-texel offset; then, with `setup`,
** the move to GENERAL (see record()). An importer skips it: the image is in
** the layout its exporter left it in.
*/
static int finish_image(gvk_context *c, gvk_object *o, VkDeviceSize bind_offset, int setup) {
  VkImageSubresource sub = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0};
  VkSubresourceLayout layout;
  vkGetImageSubresourceLayout(c->dev[o->dev].device, o->image, &sub, &layout);
  if (layout.rowPitch > UINT32_MAX) return fail("row pitch %llu does not fit in 32 bits",
                                                (unsigned long long)layout.rowPitch);
  o->row_pitch = (uint32_t)layout.rowPitch;
  o->pixel_offset = bind_offset + layout.offset;
  gvk_job job = {.image = o->image, .setup = 1, .external = o->external};
  return setup ? submit(c, o->dev, &job) : 0;
}

static int check_size(uint64_t got, uint64_t want, const char *what) {
  if (got != want)
    return fail("%s holds %llu bytes, not the %llu expected", what, (unsigned long long)got,
                (unsigned long long)want);
  return 0;
}

/* Copies tightly packed RGBA8 rows to (write) or from (!write) an image's memory. */
static int map_pixels(VkDevice dev, VkDeviceMemory memory, VkDeviceSize first, uint32_t row_pitch,
                      uint32_t width, uint32_t height, uint8_t *pixels, int write) {
  uint8_t *map = NULL;
  VkResult r = vkMapMemory(dev, memory, 0, VK_WHOLE_SIZE, 0, (void **)&map);
  if (r != VK_SUCCESS) return vk_fail(r, "vkMapMemory");
  size_t row = (size_t)width * 4;
  for (uint32_t y = 0; y < height; y++) {
    uint8_t *texels = map + first + (size_t)y * row_pitch;
    if (write)
      memcpy(texels, pixels + y * row, row);
    else
      memcpy(pixels + y * row, texels, row);
  }
  vkUnmapMemory(dev, memory);
  return 0;
}

static int map_bytes(VkDevice dev, VkDeviceMemory memory, VkDeviceSize offset, uint8_t *bytes,
                     uint64_t size, int write) {
  uint8_t *map = NULL;
  VkResult r = vkMapMemory(dev, memory, offset, size, 0, (void **)&map);
  if (r != VK_SUCCESS) return vk_fail(r, "vkMapMemory");
  if (write)
    memcpy(map, bytes, (size_t)size);
  else
    memcpy(bytes, map, (size_t)size);
  vkUnmapMemory(dev, memory);
  return 0;
}

/*
** Producer: a width x height linear RGBA8 VkImage on device A in host-visible
** memory, filled with `pixels` (tightly packed, width * height * 4 bytes).
** out[0] object id, [1] VkImage, [2] row pitch, [3] memory size, [4] VkFormat.
*/
GVK_API int gvk_image_create(void *ctx, uint32_t width, uint32_t height, const uint8_t *pixels,
                             uint64_t size, uint64_t *out) {
  gvk_context *c = ctx;
  if (!c || !out || !pixels) return fail("null argument");
  if (width == 0 || height == 0) return fail("width and height must not be 0");
  if (check_size(size, (uint64_t)width * height * 4, "pixels") != 0) return -1;
  gvk_object *o = new_object(OBJ_IMAGE, 0);
  if (!o) return -1;
  VkDevice dev = c->dev[0].device;
  if (create_image(c, o, width, height, 0) != 0) goto fail;
  VkMemoryRequirements reqs;
  vkGetImageMemoryRequirements(dev, o->image, &reqs);
  if (allocate_for(c, 0, &reqs, reqs.size, NULL, &o->memory[0], NULL) != 0) goto fail;
  o->num_memories = 1;
  o->memory_size[0] = reqs.size;
  VkResult r = vkBindImageMemory(dev, o->image, o->memory[0], 0);
  if (r != VK_SUCCESS) {
    vk_fail(r, "vkBindImageMemory");
    goto fail;
  }
  VkImageSubresource sub = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0};
  VkSubresourceLayout layout;
  vkGetImageSubresourceLayout(dev, o->image, &sub, &layout);
  /* Host writes to a PREINITIALIZED linear image are kept by the transition. */
  if (map_pixels(dev, o->memory[0], layout.offset, (uint32_t)layout.rowPitch, width, height,
                 (uint8_t *)pixels, 1) != 0)
    goto fail;
  if (finish_image(c, o, 0, 1) != 0) goto fail;
  add_object(c, o);
  out[0] = o->id;
  out[1] = (uint64_t)o->image;
  out[2] = o->row_pitch;
  out[3] = reqs.size;
  out[4] = RGBA8;
  return 0;
fail:
  destroy_object(c, o);
  return -1;
}

/*
** Producer: a VkBuffer of `size` bytes on device A in host-visible memory,
** filled with `bytes`. out[0] object id, [1] VkBuffer, [2] size.
*/
GVK_API int gvk_buffer_create(void *ctx, const uint8_t *bytes, uint64_t size, uint64_t *out) {
  gvk_context *c = ctx;
  if (!c || !out || !bytes) return fail("null argument");
  if (size == 0) return fail("size must not be 0");
  gvk_object *o = new_object(OBJ_BUFFER, 0);
  if (!o) return -1;
  VkDevice dev = c->dev[0].device;
  VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                            .size = size,
                            .usage = BUFFER_USAGE,
                            .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  VkResult r = vkCreateBuffer(dev, &bci, NULL, &o->buffer[0]);
  if (r != VK_SUCCESS) {
    o->buffer[0] = VK_NULL_HANDLE;
    vk_fail(r, "vkCreateBuffer");
    goto fail;
  }
  o->buffer_size[0] = size;
  VkMemoryRequirements reqs;
  vkGetBufferMemoryRequirements(dev, o->buffer[0], &reqs);
  if (allocate_for(c, 0, &reqs, reqs.size, NULL, &o->memory[0], NULL) != 0) goto fail;
  o->num_memories = 1;
  o->memory_size[0] = reqs.size;
  if ((r = vkBindBufferMemory(dev, o->buffer[0], o->memory[0], 0)) != VK_SUCCESS) {
    vk_fail(r, "vkBindBufferMemory");
    goto fail;
  }
  if (map_bytes(dev, o->memory[0], 0, (uint8_t *)bytes, size, 1) != 0) goto fail;
  add_object(c, o);
  out[0] = o->id;
  out[1] = (uint64_t)o->buffer[0];
  out[2] = size;
  return 0;
fail:
  destroy_object(c, o);
  return -1;
}

/*
** Producer: exportable memory (VkExportMemoryAllocateInfo, OPAQUE_FD) on
** device A behind a width x height linear RGBA8 VkImage, exported with
** vkGetMemoryFdKHR. Dedicated (VkMemoryDedicatedAllocateInfo) when asked or
** when the driver allows nothing else; otherwise the image is bound at a
** nonzero offset. The fd is the caller's. out[0] object id, [1] fd,
** [2] allocation size, [3] memory type index, [4] dedicated, [5] VkImage,
** [6] row pitch, [7] offset of the image in the allocation.
*/
GVK_API int gvk_export_create(void *ctx, uint32_t width, uint32_t height, uint32_t dedicated,
                              uint64_t *out) {
  gvk_context *c = ctx;
  if (!c || !out) return fail("null argument");
  if (!(c->caps & GVK_CAP_OPAQUE_FD_IMAGE))
    return fail("%s cannot export OPAQUE_FD memory for a linear RGBA8 image", c->name);
  if (width == 0 || height == 0) return fail("width and height must not be 0");
  if (c->caps & GVK_CAP_OPAQUE_FD_DEDICATED_ONLY) dedicated = 1;
  gvk_object *o = new_object(OBJ_EXPORT, 0);
  if (!o) return -1;
  VkDevice dev = c->dev[0].device;
  if (create_image(c, o, width, height, VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT) != 0)
    goto fail;
  VkMemoryRequirements reqs;
  vkGetImageMemoryRequirements(dev, o->image, &reqs);
  VkDeviceSize offset = 0, size = reqs.size;
  if (!dedicated) {
    /* Leave room in front, so the importer must honour `offset`. */
    VkDeviceSize align = reqs.alignment ? reqs.alignment : 1;
    offset = (4096 + align - 1) / align * align;
    size = offset + reqs.size;
  }
  VkMemoryDedicatedAllocateInfo ded = {.sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
                                       .image = o->image};
  VkExportMemoryAllocateInfo exp = {.sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
                                    .pNext = dedicated ? &ded : NULL,
                                    .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
  uint32_t type = 0;
  if (allocate_for(c, 0, &reqs, size, &exp, &o->memory[0], &type) != 0) goto fail;
  o->num_memories = 1;
  o->memory_size[0] = size;
  VkResult r = vkBindImageMemory(dev, o->image, o->memory[0], offset);
  if (r != VK_SUCCESS) {
    vk_fail(r, "vkBindImageMemory");
    goto fail;
  }
  if (finish_image(c, o, offset, 1) != 0) goto fail;
  VkMemoryGetFdInfoKHR gi = {.sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
                             .memory = o->memory[0],
                             .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT};
  int fd = -1;
  if ((r = c->dev[0].get_memory_fd(dev, &gi, &fd)) != VK_SUCCESS) {
    vk_fail(r, "vkGetMemoryFdKHR");
    goto fail;
  }
  add_object(c, o);
  out[0] = o->id;
  out[1] = (uint64_t)fd;
  out[2] = size;
  out[3] = type;
  out[4] = dedicated ? 1 : 0;
  out[5] = (uint64_t)o->image;
  out[6] = o->row_pitch;
  out[7] = offset;
  return 0;
fail:
  destroy_object(c, o);
  return -1;
}

/*
** Reads an object's contents into `out`: the pixels (tightly packed RGBA8)
** of an image, export or opaque-fd import; the bytes of a buffer. `mode`:
** GVK_READ_MAP or GVK_READ_GPU.
*/
GVK_API int gvk_object_read(void *ctx, uint64_t id, uint32_t mode, uint8_t *out, uint64_t size) {
  gvk_context *c = ctx;
  gvk_object *o = find_object(c, id);
  if (!o) return -1;
  if (!out) return fail("out is null");
  VkDevice dev = c->dev[o->dev].device;
  if (o->type == OBJ_BUFFER) {
    if (check_size(size, o->buffer_size[0], "out") != 0) return -1;
    if (mode == GVK_READ_MAP) return map_bytes(dev, o->memory[0], 0, out, size, 0);
    VkBufferCopy region = {0, 0, size};
    gvk_job job = {.src = o->buffer[0], .regions = &region, .num_regions = 1};
    return gpu_read(c, o->dev, &job, size, out);
  }
  if (o->image == VK_NULL_HANDLE) return fail("object %llu is not an image or a buffer",
                                              (unsigned long long)id);
  if (check_size(size, (uint64_t)o->width * o->height * 4, "out") != 0) return -1;
  if (mode == GVK_READ_MAP)
    return map_pixels(dev, o->memory[0], o->pixel_offset, o->row_pitch, o->width, o->height, out,
                      0);
  gvk_job job = {
      .image = o->image, .width = o->width, .height = o->height, .external = o->external};
  return gpu_read(c, o->dev, &job, size, out);
}

/* Writes an object's contents from `bytes` (as gvk_object_read reads them) through a mapping. */
GVK_API int gvk_object_write(void *ctx, uint64_t id, const uint8_t *bytes, uint64_t size) {
  gvk_context *c = ctx;
  gvk_object *o = find_object(c, id);
  if (!o) return -1;
  if (!bytes) return fail("bytes is null");
  VkDevice dev = c->dev[o->dev].device;
  if (o->type == OBJ_BUFFER) {
    if (check_size(size, o->buffer_size[0], "bytes") != 0) return -1;
    return map_bytes(dev, o->memory[0], 0, (uint8_t *)bytes, size, 1);
  }
  if (o->image == VK_NULL_HANDLE) return fail("object %llu is not an image or a buffer",
                                              (unsigned long long)id);
  if (check_size(size, (uint64_t)o->width * o->height * 4, "bytes") != 0) return -1;
  return map_pixels(dev, o->memory[0], o->pixel_offset, o->row_pitch, o->width, o->height,
                    (uint8_t *)bytes, 1);
}

/* Destroys an object: its image or buffers, and frees its memory. */
GVK_API int gvk_object_destroy(void *ctx, uint64_t id) {
  gvk_context *c = ctx;
  if (!c) return fail("context is null");
  pthread_mutex_lock(&g_lock);
  gvk_object **p = &c->objects;
  while (*p && (*p)->id != id) p = &(*p)->next;
  gvk_object *o = *p;
  if (o) *p = o->next;
  pthread_mutex_unlock(&g_lock);
  if (!o) return fail("no object %llu in this context", (unsigned long long)id);
  vkDeviceWaitIdle(c->dev[o->dev].device);
  destroy_object(c, o);
  return 0;
}

/*
** The kind of a handle as the gpures this helper links sees it, or 0. A host
** that loaded another copy of libgpures would get 0 for its handles here.
*/
GVK_API uint32_t gvk_handle_kind(uint64_t handle) {
  uint32_t kind = 0;
  return gpures_kind(handle, &kind) == GPURES_OK ? kind : 0;
}

/* --------------------------------------------- consumers of borrowed handles */

/*
** The producer object behind a VkImage or VkBuffer handle value: the private
** map from the native handle to the memory bound to it. `device` (from the
** handle's description) must be the object's device when it is not null.
*/
static gvk_object *find_native(uint64_t native, int image, void *device, gvk_context **out_c) {
  for (gvk_context *c = g_contexts; c; c = c->next) {
    for (gvk_object *o = c->objects; o; o = o->next) {
      uint64_t value = image ? (uint64_t)o->image : (uint64_t)o->buffer[0];
      if (o->type != (image ? OBJ_IMAGE : OBJ_BUFFER) || value != native) continue;
      if (device && device != (void *)c->dev[o->dev].device) continue;
      *out_c = c;
      return o;
    }
  }
  fail("no %s 0x%llx on %s is known to this helper", image ? "VkImage" : "VkBuffer",
       (unsigned long long)native, device ? "that VkDevice" : "any VkDevice");
  return NULL;
}

/* The VkDevice a handle names, or the producer's when it names none (a trusted import). */
static VkDevice device_of(void *described, gvk_context *c, gvk_object *o) {
  return described ? (VkDevice)described : c->dev[o->dev].device;
}

static int image_handle_access(uint64_t handle, uint32_t mode, uint8_t *pixels, uint64_t size,
                               int write) {
  gpures_vk_image_desc desc = {.struct_size = sizeof desc};
  int status = gpures_vk_image_describe(handle, &desc);
  if (status != GPURES_OK) return gpures_fail(status, "gpures_vk_image_describe");
  if (!pixels) return fail("pixels is null");
  if (desc.width == 0 || desc.height == 0)
    return fail("the VkImage handle has no width and height to read");
  if (desc.vk_format != 0 && desc.vk_format != RGBA8)
    return fail("the VkImage handle's format %u is not VK_FORMAT_R8G8B8A8_UNORM", desc.vk_format);
  if (desc.row_pitch < desc.width * 4u)
    return fail("the VkImage handle's row pitch %u is below width * 4", desc.row_pitch);
  if (check_size(size, (uint64_t)desc.width * desc.height * 4, "pixels") != 0) return -1;
  pthread_mutex_lock(&g_lock);
  gvk_context *c = NULL;
  gvk_object *o = find_native(desc.image, 1, desc.device, &c);
  if (!o) {
    pthread_mutex_unlock(&g_lock);
    return -1;
  }
  int rc;
  if (write || mode == GVK_READ_MAP) {
    /* The memory bound to the image, at the layout the handle describes. */
    rc = map_pixels(device_of(desc.device, c, o), o->memory[0], o->pixel_offset, desc.row_pitch,
                    desc.width, desc.height, pixels, write);
  } else {
    /* A transfer from the VkImage the handle names, on its device's queue. */
    gvk_job job = {.image = (VkImage)desc.image, .width = desc.width, .height = desc.height};
    rc = gpu_read(c, o->dev, &job, size, pixels);
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

/*
** Consumer: reads a VkImage handle's pixels (tightly packed RGBA8) given only
** the handle. GVK_READ_MAP maps the memory bound to the image and reads rows
** at the handle's row pitch; GVK_READ_GPU copies the image on its device.
*/
GVK_API int gvk_vk_image_read(uint64_t handle, uint32_t mode, uint8_t *out, uint64_t size) {
  return image_handle_access(handle, mode, out, size, 0);
}

/* Consumer, reverse direction: writes pixels into the image a VkImage handle names. */
GVK_API int gvk_vk_image_write(uint64_t handle, const uint8_t *pixels, uint64_t size) {
  return image_handle_access(handle, GVK_READ_MAP, (uint8_t *)pixels, size, 1);
}

static int buffer_handle_access(uint64_t handle, uint32_t mode, uint8_t *bytes, uint64_t size,
                                int write) {
  gpures_vk_buffer_handle_desc desc = {.struct_size = sizeof desc};
  int status = gpures_vk_buffer_handle_describe(handle, &desc);
  if (status != GPURES_OK) return gpures_fail(status, "gpures_vk_buffer_handle_describe");
  if (!bytes) return fail("bytes is null");
  if (check_size(size, desc.size, "bytes") != 0) return -1;
  pthread_mutex_lock(&g_lock);
  gvk_context *c = NULL;
  gvk_object *o = find_native(desc.buffer, 0, desc.device, &c);
  int rc = -1;
  if (o && desc.size > o->buffer_size[0]) {
    fail("the handle's size %llu exceeds the VkBuffer's %llu", (unsigned long long)desc.size,
         (unsigned long long)o->buffer_size[0]);
  } else if (o && (write || mode == GVK_READ_MAP)) {
    rc = map_bytes(device_of(desc.device, c, o), o->memory[0], 0, bytes, size, write);
  } else if (o) {
    VkBufferCopy region = {0, 0, size};
    gvk_job job = {.src = (VkBuffer)desc.buffer, .regions = &region, .num_regions = 1};
    rc = gpu_read(c, o->dev, &job, size, bytes);
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

/* Consumer: reads the `size` bytes of a VkBufferHandle given only the handle. */
GVK_API int gvk_vk_buffer_read(uint64_t handle, uint32_t mode, uint8_t *out, uint64_t size) {
  return buffer_handle_access(handle, mode, out, size, 0);
}

/* Consumer, reverse direction: writes the bytes of the buffer a VkBufferHandle names. */
GVK_API int gvk_vk_buffer_write(uint64_t handle, const uint8_t *bytes, uint64_t size) {
  return buffer_handle_access(handle, GVK_READ_MAP, (uint8_t *)bytes, size, 1);
}

/* ------------------------------------------------ consumers of fd handles */

/*
** Consumer: imports a VkOpaqueFd handle into device B. It duplicates the
** handle's fd (gpures_dup_fd), creates a linear RGBA8 image of the described
** extent on B, imports the memory with VkImportMemoryFdInfoKHR (allocation
** size and memory type from the description, dedicated to the image when the
** export was), and binds the image at the described offset. Vulkan owns the
** fd on success. The import is an object of this context: read and write it
** with gvk_object_read/gvk_object_write, free it with gvk_object_destroy.
** out[0] object id, [1] row pitch on B, [2] allocation size.
*/
GVK_API int gvk_import_opaque_fd(void *ctx, uint64_t handle, uint64_t *out) {
  gvk_context *c = ctx;
  if (!c || !out) return fail("null argument");
  gpures_vk_opaque_fd_desc desc = {.struct_size = sizeof desc};
  int status = gpures_vk_opaque_fd_describe(handle, &desc);
  if (status != GPURES_OK) return gpures_fail(status, "gpures_vk_opaque_fd_describe");
  if (!(c->caps & GVK_CAP_OPAQUE_FD_IMAGE))
    return fail("%s cannot import OPAQUE_FD memory for a linear RGBA8 image", c->name);
  if (memcmp(desc.device_uuid, c->uuid, 16) != 0)
    return fail("the memory was exported by another device (deviceUuid differs from %s's)",
                c->name);
  if (desc.format != GPURES_PF_RGBA_U8) return fail("format %u is not RgbaU8", desc.format);
  if (desc.memory_type_index >= c->memory_properties.memoryTypeCount)
    return fail("memoryTypeIndex %u is not a memory type of %s", desc.memory_type_index, c->name);
  gvk_object *o = new_object(OBJ_IMPORT_OPAQUE, 1);
  if (!o) return -1;
  VkDevice dev = c->dev[1].device;
  int fd = -1;
  if (create_image(c, o, desc.width, desc.height, VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT))
    goto fail;
  VkMemoryRequirements reqs;
  vkGetImageMemoryRequirements(dev, o->image, &reqs);
  if (!(reqs.memoryTypeBits & (1u << desc.memory_type_index))) {
    fail("memoryTypeIndex %u cannot back the image (bits 0x%x)", desc.memory_type_index,
         reqs.memoryTypeBits);
    goto fail;
  }
  if (desc.offset + reqs.size > desc.size) {
    fail("the image (%llu bytes at offset %llu) does not fit in the %llu-byte allocation",
         (unsigned long long)reqs.size, (unsigned long long)desc.offset,
         (unsigned long long)desc.size);
    goto fail;
  }
  status = gpures_dup_fd(handle, 0, &fd);
  if (status != GPURES_OK) {
    gpures_fail(status, "gpures_dup_fd");
    fd = -1;
    goto fail;
  }
  VkMemoryDedicatedAllocateInfo ded = {.sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
                                       .image = o->image};
  VkImportMemoryFdInfoKHR imp = {.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
                                 .pNext = desc.dedicated ? &ded : NULL,
                                 .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
                                 .fd = fd};
  VkMemoryAllocateInfo info = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .pNext = &imp,
                               .allocationSize = desc.size,
                               .memoryTypeIndex = desc.memory_type_index};
  if (allocate(c, 1, &info, &o->memory[0]) != 0) goto fail;
  fd = -1; /* Vulkan owns it now */
  o->num_memories = 1;
  o->memory_size[0] = desc.size;
  VkResult r = vkBindImageMemory(dev, o->image, o->memory[0], desc.offset);
  if (r != VK_SUCCESS) {
    vk_fail(r, "vkBindImageMemory (imported)");
    goto fail;
  }
  if (finish_image(c, o, desc.offset, 0) != 0) goto fail;
  add_object(c, o);
  out[0] = o->id;
  out[1] = o->row_pitch;
  out[2] = desc.size;
  return 0;
fail:
  if (fd >= 0) close(fd);
  destroy_object(c, o);
  return -1;
}

#define FOURCC(a, b, c, d) \
  ((uint32_t)(a) | ((uint32_t)(b) << 8) | ((uint32_t)(c) << 16) | ((uint32_t)(d) << 24))

/* Row bytes and rows of each plane of the DRM formats this consumer reads. */
static int drm_planes(uint32_t fourcc, uint32_t w, uint32_t h, gvk_plane *planes, uint32_t *n) {
  switch (fourcc) {
  case FOURCC('A', 'B', '2', '4'): /* ABGR8888: R, G, B, A bytes */
  case FOURCC('X', 'B', '2', '4'):
  case FOURCC('A', 'R', '2', '4'):
  case FOURCC('X', 'R', '2', '4'):
    *n = 1;
    planes[0].row_bytes = w * 4;
    planes[0].rows = h;
    return 0;
  case FOURCC('R', '8', ' ', ' '):
    *n = 1;
    planes[0].row_bytes = w;
    planes[0].rows = h;
    return 0;
  case FOURCC('N', 'V', '1', '2'): /* Y plane, then interleaved CbCr at half resolution */
  case FOURCC('N', 'V', '2', '1'):
    *n = 2;
    planes[0].row_bytes = w;
    planes[0].rows = h;
    planes[1].row_bytes = (w + 1) / 2 * 2;
    planes[1].rows = (h + 1) / 2;
    return 0;
  default:
    return fail("DRM fourcc 0x%08x (%c%c%c%c) is not one this consumer reads", fourcc,
                fourcc & 0xff, (fourcc >> 8) & 0xff, (fourcc >> 16) & 0xff, fourcc >> 24);
  }
}

/*
** Consumer: imports a DmaBufHandle into device B. For each of the handle's
** objects it duplicates the fd (gpures_dup_fd), asks vkGetMemoryFdPropertiesKHR
** which memory types can hold it, and imports it as
** VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT (Vulkan owns the fd on
** success), with a VkBuffer bound over it for GPU reads. Planes are then read
** with gvk_dma_buf_read_plane at the offsets and strides the handle describes.
** out[0] object id, [1] objects imported, [2] planes, [3] memory type bits of object 0.
*/
GVK_API int gvk_import_dma_buf(void *ctx, uint64_t handle, uint64_t *out) {
  gvk_context *c = ctx;
  if (!c || !out) return fail("null argument");
  gpures_dma_buf_handle_desc desc = {.struct_size = sizeof desc};
  int status = gpures_dma_buf_handle_describe(handle, &desc);
  if (status != GPURES_OK) return gpures_fail(status, "gpures_dma_buf_handle_describe");
  if (!(c->caps & GVK_CAP_DMA_BUF_IMPORT))
    return fail("%s cannot import DMA-BUF memory (VK_EXT_external_memory_dma_buf)", c->name);
  if (desc.modifier != 0)
    return fail("modifier 0x%llx is not DRM_FORMAT_MOD_LINEAR", (unsigned long long)desc.modifier);
  if (desc.num_fds == 0 || desc.num_fds > 4) return fail("%u fds", desc.num_fds);
  gvk_object *o = new_object(OBJ_IMPORT_DMA_BUF, 1);
  if (!o) return -1;
  VkDevice dev = c->dev[1].device;
  gvk_dev *g = &c->dev[1];
  uint32_t n = 0, first_bits = 0;
  int fd = -1;
  if (drm_planes(desc.fourcc, desc.width, desc.height, o->planes, &n) != 0) goto fail;
  if (n != desc.num_planes) {
    fail("the handle has %u planes; fourcc %.4s has %u", desc.num_planes, (char *)&desc.fourcc, n);
    goto fail;
  }
  o->num_planes = n;
  for (uint32_t i = 0; i < desc.num_fds; i++) {
    status = gpures_dup_fd(handle, i, &fd);
    if (status != GPURES_OK) {
      fd = -1;
      gpures_fail(status, "gpures_dup_fd");
      goto fail;
    }
    off_t end = lseek(fd, 0, SEEK_END);
    if (end <= 0) {
      fail("object %u has no size (lseek gives %lld)", i, (long long)end);
      goto fail;
    }
    VkDeviceSize size = (VkDeviceSize)end;
    VkMemoryFdPropertiesKHR fdp = {.sType = VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR};
    VkResult r =
        g->get_memory_fd_properties(dev, VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT, fd, &fdp);
    if (r != VK_SUCCESS) {
      vk_fail(r, "vkGetMemoryFdPropertiesKHR");
      goto fail;
    }
    if (i == 0) first_bits = fdp.memoryTypeBits;
    VkExternalMemoryBufferCreateInfo ebi = {
        .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
        .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .pNext = &ebi,
                              .size = size,
                              .usage = BUFFER_USAGE,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    if ((r = vkCreateBuffer(dev, &bci, NULL, &o->buffer[i])) != VK_SUCCESS) {
      o->buffer[i] = VK_NULL_HANDLE;
      vk_fail(r, "vkCreateBuffer (over the DMA-BUF)");
      goto fail;
    }
    o->buffer_size[i] = size;
    VkMemoryRequirements reqs;
    vkGetBufferMemoryRequirements(dev, o->buffer[i], &reqs);
    uint32_t type = 0;
    if (memory_type(c, fdp.memoryTypeBits & reqs.memoryTypeBits, HOST_MEMORY, &type) != 0)
      goto fail;
    VkImportMemoryFdInfoKHR imp = {.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
                                   .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
                                   .fd = fd};
    VkMemoryAllocateInfo info = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                 .pNext = &imp,
                                 .allocationSize = size,
                                 .memoryTypeIndex = type};
    if (allocate(c, 1, &info, &o->memory[i]) != 0) goto fail;
    fd = -1; /* Vulkan owns it now */
    o->memory_size[i] = size;
    o->num_memories = i + 1;
    if (reqs.size > size) {
      /* No buffer fits over it: this object can be mapped but not copied on the GPU. */
      vkDestroyBuffer(dev, o->buffer[i], NULL);
      o->buffer[i] = VK_NULL_HANDLE;
    } else if ((r = vkBindBufferMemory(dev, o->buffer[i], o->memory[i], 0)) != VK_SUCCESS) {
      vk_fail(r, "vkBindBufferMemory (DMA-BUF)");
      goto fail;
    }
  }
  for (uint32_t p = 0; p < n; p++) {
    gvk_plane *pl = &o->planes[p];
    pl->object = desc.planes[p].object_index;
    pl->offset = desc.planes[p].offset;
    pl->stride = desc.planes[p].stride;
    if (pl->object >= desc.num_fds) {
      fail("planes[%u] names object %u of %u", p, pl->object, desc.num_fds);
      goto fail;
    }
    if (pl->stride < pl->row_bytes) {
      fail("planes[%u].stride %u is below its %u row bytes", p, pl->stride, pl->row_bytes);
      goto fail;
    }
    uint64_t end = (uint64_t)pl->offset + (uint64_t)pl->stride * (pl->rows - 1) + pl->row_bytes;
    if (end > o->memory_size[pl->object]) {
      fail("planes[%u] ends at byte %llu of object %u's %llu", p, (unsigned long long)end,
           pl->object, (unsigned long long)o->memory_size[pl->object]);
      goto fail;
    }
  }
  add_object(c, o);
  out[0] = o->id;
  out[1] = desc.num_fds;
  out[2] = n;
  out[3] = first_bits;
  return 0;
fail:
  if (fd >= 0) close(fd);
  destroy_object(c, o);
  return -1;
}

static gvk_plane *dma_buf_plane(gvk_context *c, uint64_t id, uint32_t plane, uint64_t size,
                                gvk_object **out) {
  gvk_object *o = find_object(c, id);
  if (!o) return NULL;
  if (o->type != OBJ_IMPORT_DMA_BUF) {
    fail("object %llu is not a DMA-BUF import", (unsigned long long)id);
    return NULL;
  }
  if (plane >= o->num_planes) {
    fail("plane %u of %u", plane, o->num_planes);
    return NULL;
  }
  gvk_plane *p = &o->planes[plane];
  if (check_size(size, (uint64_t)p->row_bytes * p->rows, "the plane buffer") != 0) return NULL;
  *out = o;
  return p;
}

static int map_plane(VkDevice dev, VkDeviceMemory memory, const gvk_plane *p, uint8_t *bytes,
                     int write) {
  uint8_t *map = NULL;
  VkResult r = vkMapMemory(dev, memory, 0, VK_WHOLE_SIZE, 0, (void **)&map);
  if (r != VK_SUCCESS) return vk_fail(r, "vkMapMemory (DMA-BUF)");
  for (uint32_t y = 0; y < p->rows; y++) {
    uint8_t *row = map + p->offset + (size_t)y * p->stride;
    if (write)
      memcpy(row, bytes + (size_t)y * p->row_bytes, p->row_bytes);
    else
      memcpy(bytes + (size_t)y * p->row_bytes, row, p->row_bytes);
  }
  vkUnmapMemory(dev, memory);
  return 0;
}

/*
** Reads plane `plane` of a DMA-BUF import (rows of the plane's row bytes,
** tightly packed) at the offset and stride the handle described. GVK_READ_MAP
** maps the imported memory; GVK_READ_GPU copies each row on device B.
*/
GVK_API int gvk_dma_buf_read_plane(void *ctx, uint64_t id, uint32_t plane, uint32_t mode,
                                   uint8_t *out, uint64_t size) {
  gvk_context *c = ctx;
  gvk_object *o = NULL;
  gvk_plane *p = dma_buf_plane(c, id, plane, size, &o);
  if (!p) return -1;
  if (!out) return fail("out is null");
  if (mode == GVK_READ_MAP) return map_plane(c->dev[1].device, o->memory[p->object], p, out, 0);
  if (o->buffer[p->object] == VK_NULL_HANDLE)
    return fail("object %u has no VkBuffer over it for a GPU copy", p->object);
  VkBufferCopy *regions = calloc(p->rows, sizeof *regions);
  if (!regions) return fail("out of memory");
  for (uint32_t y = 0; y < p->rows; y++) {
    regions[y].srcOffset = p->offset + (VkDeviceSize)y * p->stride;
    regions[y].dstOffset = (VkDeviceSize)y * p->row_bytes;
    regions[y].size = p->row_bytes;
  }
  gvk_job job = {.src = o->buffer[p->object], .regions = regions, .num_regions = p->rows};
  int rc = gpu_read(c, 1, &job, size, out);
  free(regions);
  return rc;
}

/* Writes plane `plane` of a DMA-BUF import through its mapping (the reverse direction). */
GVK_API int gvk_dma_buf_write_plane(void *ctx, uint64_t id, uint32_t plane, const uint8_t *bytes,
                                    uint64_t size) {
  gvk_context *c = ctx;
  gvk_object *o = NULL;
  gvk_plane *p = dma_buf_plane(c, id, plane, size, &o);
  if (!p) return -1;
  if (!bytes) return fail("bytes is null");
  return map_plane(c->dev[1].device, o->memory[p->object], p, (uint8_t *)bytes, 1);
}

/* ------------------------------------------- objects another library made */
/*
** For tests/interop_vulkan_test.ts: copies between a host-visible staging
** buffer and an image or buffer this helper did not make (an importer's), on
** device `dev`'s queue. The image is taken as external memory in
** VK_IMAGE_LAYOUT_GENERAL: acquired from VK_QUEUE_FAMILY_EXTERNAL for the copy
** and released back, as record() does for opaque imports. Each plane travels
** tightly packed, one after the other.
*/

typedef struct gvk_copy {
  VkImage image;
  VkBuffer buffer;            /* or this, at buffer_offset */
  VkDeviceSize buffer_offset;
  VkBuffer staging;
  VkDeviceSize size;
  uint32_t num_planes;
  const uint32_t *planes;     /* per plane: width, height, bytes per texel */
  int write;                  /* staging -> object, else object -> staging */
  uint32_t family;
} gvk_copy;

static VkImageAspectFlags copy_aspect(const gvk_copy *j, uint32_t plane) {
  return j->num_planes > 1 ? (VkImageAspectFlags)(VK_IMAGE_ASPECT_PLANE_0_BIT << plane)
                           : VK_IMAGE_ASPECT_COLOR_BIT;
}

static void copy_image_barrier(VkCommandBuffer cb, const gvk_copy *j, int acquire) {
  VkAccessFlags access = j->write ? VK_ACCESS_TRANSFER_WRITE_BIT : VK_ACCESS_TRANSFER_READ_BIT;
  VkImageMemoryBarrier b = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
      .srcAccessMask = acquire ? 0 : access,
      .dstAccessMask = acquire ? access : 0,
      .oldLayout = VK_IMAGE_LAYOUT_GENERAL,
      .newLayout = VK_IMAGE_LAYOUT_GENERAL,
      .srcQueueFamilyIndex = acquire ? VK_QUEUE_FAMILY_EXTERNAL : j->family,
      .dstQueueFamilyIndex = acquire ? j->family : VK_QUEUE_FAMILY_EXTERNAL,
      .image = j->image,
      .subresourceRange = {0, 0, 1, 0, 1}};
  for (uint32_t p = 0; p < j->num_planes; p++) b.subresourceRange.aspectMask |= copy_aspect(j, p);
  vkCmdPipelineBarrier(cb, acquire ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT : VK_PIPELINE_STAGE_TRANSFER_BIT,
                       acquire ? VK_PIPELINE_STAGE_TRANSFER_BIT : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                       0, 0, NULL, 0, NULL, 1, &b);
}

static void record_copy(VkCommandBuffer cb, const void *job) {
  const gvk_copy *j = job;
  if (j->image != VK_NULL_HANDLE) {
    copy_image_barrier(cb, j, 1);
    VkDeviceSize at = 0;
    for (uint32_t p = 0; p < j->num_planes; p++) {
      const uint32_t *pl = &j->planes[3 * p];
      VkBufferImageCopy region = {.bufferOffset = at,
                                  .imageSubresource = {copy_aspect(j, p), 0, 0, 1},
                                  .imageExtent = {pl[0], pl[1], 1}};
      if (j->write)
        vkCmdCopyBufferToImage(cb, j->staging, j->image, VK_IMAGE_LAYOUT_GENERAL, 1, &region);
      else
        vkCmdCopyImageToBuffer(cb, j->image, VK_IMAGE_LAYOUT_GENERAL, j->staging, 1, &region);
      at += (VkDeviceSize)pl[0] * pl[1] * pl[2];
    }
    copy_image_barrier(cb, j, 0);
  } else {
    VkBufferCopy region = {.srcOffset = j->write ? 0 : j->buffer_offset,
                           .dstOffset = j->write ? j->buffer_offset : 0,
                           .size = j->size};
    vkCmdCopyBuffer(cb, j->write ? j->staging : j->buffer, j->write ? j->buffer : j->staging, 1,
                    &region);
  }
  /* The copy's writes are visible to the host (a read) or to whoever maps the memory next. */
  VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                       .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                       .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &b,
                       0, NULL, 0, NULL);
}

/* Runs the copy `j` on device `d`'s queue and waits for it. */
static int submit_copy(gvk_context *c, uint32_t d, gvk_copy *j) {
  j->family = c->dev[d].family;
  return submit_once(&c->dev[d], record_copy, j);
}

/* Runs `j` through a staging buffer of j->size bytes: filled from `bytes` first, or read into them after. */
static int staged_copy(gvk_context *c, uint32_t d, gvk_copy *j, uint8_t *bytes) {
  if (!c || d > 1) return fail("no such context or device");
  VkDevice dev = c->dev[d].device;
  VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                            .size = j->size,
                            .usage = BUFFER_USAGE,
                            .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkResult r = vkCreateBuffer(dev, &bci, NULL, &j->staging);
  if (r != VK_SUCCESS) return vk_fail(r, "vkCreateBuffer (staging)");
  int status = -1;
  void *map = NULL;
  VkMemoryRequirements reqs;
  vkGetBufferMemoryRequirements(dev, j->staging, &reqs);
  if (allocate_for(c, d, &reqs, reqs.size, NULL, &memory, NULL) != 0) goto out;
  if ((r = vkBindBufferMemory(dev, j->staging, memory, 0)) != VK_SUCCESS ||
      (r = vkMapMemory(dev, memory, 0, VK_WHOLE_SIZE, 0, &map)) != VK_SUCCESS) {
    vk_fail(r, "binding or mapping the staging buffer");
    goto out;
  }
  if (j->write) memcpy(map, bytes, (size_t)j->size);
  if (submit_copy(c, d, j) == 0) {
    if (!j->write) memcpy(bytes, map, (size_t)j->size);
    status = 0;
  }
  vkUnmapMemory(dev, memory);
out:
  free_memory(c, d, &memory);
  vkDestroyBuffer(dev, j->staging, NULL);
  return status;
}

/*
** Copies the planes of `image` (a VkImage of device `dev`) to or from
** `bytes`, each plane tightly packed: planes[3 * p ..] = width, height and
** bytes per texel of plane p. `size` must be their sum.
*/
GVK_API int gvk_image_copy(void *ctx, uint32_t dev, uint64_t image, uint32_t num_planes,
                           const uint32_t *planes, uint8_t *bytes, uint64_t size, uint32_t write) {
  uint64_t want = 0;
  if (num_planes < 1 || num_planes > 3) return fail("num_planes %u is not 1..3", num_planes);
  for (uint32_t p = 0; p < num_planes; p++)
    want += (uint64_t)planes[3 * p] * planes[3 * p + 1] * planes[3 * p + 2];
  if (check_size(size, want, "image copy") != 0) return -1;
  gvk_copy j = {.image = (VkImage)image, .size = size, .num_planes = num_planes,
                .planes = planes, .write = write != 0};
  return staged_copy(ctx, dev, &j, bytes);
}

/* Copies `size` bytes of `buffer` (a VkBuffer of device `dev`) at `offset` to or from `bytes`. */
GVK_API int gvk_buffer_copy(void *ctx, uint32_t dev, uint64_t buffer, uint64_t offset,
                            uint8_t *bytes, uint64_t size, uint32_t write) {
  if (size == 0) return fail("size is 0");
  gvk_copy j = {.buffer = (VkBuffer)buffer, .buffer_offset = offset, .size = size,
                .write = write != 0};
  return staged_copy(ctx, dev, &j, bytes);
}

/* ------------------------------------------------------------- sync points */
/*
** For tests/sync_real_test.ts: a context of its own (a Vulkan 1.2 device with
** the timelineSemaphore feature, which devices A and B above do not enable), a
** host-visible coherent buffer kept mapped, a timeline semaphore (starting at
** 0) and a binary one. gvk_sync_submit_fill() submits a vkCmdFillBuffer that
** waits on the timeline reaching `wait_value` and signals `signal_value`, so
** the test decides when the GPU may write; the bytes are read through the
** mapping (gvk_sync_map) with nothing between them and the GPU's writes.
*/
typedef struct gvk_sync {
  VkInstance instance;
  VkDevice device;
  VkQueue queue;
  VkCommandPool pool;
  VkCommandBuffer cb;
  VkBuffer buffer;
  VkDeviceMemory memory;
  void *map;
  VkDeviceSize size;
  VkSemaphore timeline, binary;
  uint64_t highest_wait; /* the largest value a submission waits on */
  char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
} gvk_sync;

GVK_API void gvk_sync_close(void *ctx);

/* Opens a sync context whose buffer holds `size` bytes of `old_byte`; NULL and gvk_last_error() if it cannot. */
GVK_API void *gvk_sync_open(uint64_t size, uint32_t old_byte) {
  gvk_sync *s = calloc(1, sizeof *s);
  if (!s) return fail("out of memory"), NULL;
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                           .pApplicationName = "gpures-sync-test",
                           .apiVersion = VK_API_VERSION_1_2};
  VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                              .pApplicationInfo = &app};
  VkResult r = vkCreateInstance(&ici, NULL, &s->instance);
  if (r != VK_SUCCESS) {
    s->instance = VK_NULL_HANDLE;
    vk_fail(r, "vkCreateInstance (is mesa-vulkan-drivers installed?)");
    goto fail;
  }
  VkPhysicalDevice phys[16], chosen = VK_NULL_HANDLE;
  uint32_t n = 16;
  if (vkEnumeratePhysicalDevices(s->instance, &n, phys) < 0) n = 0;
  for (uint32_t i = 0; i < n && chosen == VK_NULL_HANDLE; i++) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(phys[i], &p);
    if (p.apiVersion < VK_API_VERSION_1_2) continue;
    VkPhysicalDeviceTimelineSemaphoreFeatures tf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &tf};
    vkGetPhysicalDeviceFeatures2(phys[i], &f2);
    if (!tf.timelineSemaphore) continue;
    chosen = phys[i];
    memcpy(s->name, p.deviceName, sizeof s->name);
    s->name[sizeof s->name - 1] = '\0';
  }
  if (chosen == VK_NULL_HANDLE) {
    fail("no Vulkan 1.2 device with timeline semaphores among %u devices", n);
    goto fail;
  }
  uint32_t nf = 0, family = UINT32_MAX;
  VkQueueFamilyProperties fam[16];
  vkGetPhysicalDeviceQueueFamilyProperties(chosen, &nf, NULL);
  if (nf > 16) nf = 16;
  vkGetPhysicalDeviceQueueFamilyProperties(chosen, &nf, fam);
  for (uint32_t i = 0; i < nf && family == UINT32_MAX; i++)
    if (fam[i].queueCount && (fam[i].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT |
                                                   VK_QUEUE_TRANSFER_BIT)))
      family = i;
  if (family == UINT32_MAX) {
    fail("the Vulkan device has no queue that can transfer");
    goto fail;
  }
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                .queueFamilyIndex = family,
                                .queueCount = 1,
                                .pQueuePriorities = &priority};
  VkPhysicalDeviceTimelineSemaphoreFeatures tf = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
      .timelineSemaphore = VK_TRUE};
  VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                           .pNext = &tf,
                           .queueCreateInfoCount = 1,
                           .pQueueCreateInfos = &qi};
  if ((r = vkCreateDevice(chosen, &di, NULL, &s->device)) != VK_SUCCESS) {
    s->device = VK_NULL_HANDLE;
    vk_fail(r, "vkCreateDevice (timelineSemaphore)");
    goto fail;
  }
  vkGetDeviceQueue(s->device, family, 0, &s->queue);
  VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                .queueFamilyIndex = family};
  if ((r = vkCreateCommandPool(s->device, &pi, NULL, &s->pool)) != VK_SUCCESS) {
    vk_fail(r, "vkCreateCommandPool");
    goto fail;
  }
  VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                    .commandPool = s->pool,
                                    .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                    .commandBufferCount = 1};
  if ((r = vkAllocateCommandBuffers(s->device, &ai, &s->cb)) != VK_SUCCESS) {
    vk_fail(r, "vkAllocateCommandBuffers");
    goto fail;
  }
  VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                            .size = size,
                            .usage = BUFFER_USAGE,
                            .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  if ((r = vkCreateBuffer(s->device, &bci, NULL, &s->buffer)) != VK_SUCCESS) {
    vk_fail(r, "vkCreateBuffer");
    goto fail;
  }
  VkMemoryRequirements reqs;
  vkGetBufferMemoryRequirements(s->device, s->buffer, &reqs);
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(chosen, &mp);
  uint32_t type = UINT32_MAX;
  for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++)
    if ((reqs.memoryTypeBits & (1u << i)) &&
        (mp.memoryTypes[i].propertyFlags & HOST_MEMORY) == HOST_MEMORY)
      type = i;
  if (type == UINT32_MAX) {
    fail("no host-visible coherent memory for the buffer");
    goto fail;
  }
  VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                              .allocationSize = reqs.size,
                              .memoryTypeIndex = type};
  if ((r = vkAllocateMemory(s->device, &mai, NULL, &s->memory)) != VK_SUCCESS) {
    vk_fail(r, "vkAllocateMemory");
    goto fail;
  }
  if ((r = vkBindBufferMemory(s->device, s->buffer, s->memory, 0)) != VK_SUCCESS ||
      (r = vkMapMemory(s->device, s->memory, 0, VK_WHOLE_SIZE, 0, &s->map)) != VK_SUCCESS) {
    vk_fail(r, "binding or mapping the buffer");
    goto fail;
  }
  s->size = size;
  memset(s->map, (int)(old_byte & 0xff), (size_t)size);
  VkSemaphoreTypeCreateInfo sti = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                   .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
                                   .initialValue = 0};
  VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &sti};
  if ((r = vkCreateSemaphore(s->device, &sci, NULL, &s->timeline)) != VK_SUCCESS) {
    vk_fail(r, "vkCreateSemaphore (timeline)");
    goto fail;
  }
  sci.pNext = NULL;
  if ((r = vkCreateSemaphore(s->device, &sci, NULL, &s->binary)) != VK_SUCCESS) {
    vk_fail(r, "vkCreateSemaphore (binary)");
    goto fail;
  }
  return s;
fail:
  gvk_sync_close(s);
  return NULL;
}

GVK_API const char *gvk_sync_device_name(void *ctx) { return ctx ? ((gvk_sync *)ctx)->name : ""; }
GVK_API void *gvk_sync_device(void *ctx) { return ctx ? (void *)((gvk_sync *)ctx)->device : NULL; }
GVK_API void *gvk_sync_map(void *ctx) { return ctx ? ((gvk_sync *)ctx)->map : NULL; }
GVK_API uint64_t gvk_sync_timeline(void *ctx) {
  return ctx ? (uint64_t)(uintptr_t)((gvk_sync *)ctx)->timeline : 0;
}
GVK_API uint64_t gvk_sync_binary(void *ctx) {
  return ctx ? (uint64_t)(uintptr_t)((gvk_sync *)ctx)->binary : 0;
}

/* The timeline's counter (vkGetSemaphoreCounterValue), or UINT64_MAX on failure. */
GVK_API uint64_t gvk_sync_counter(void *ctx) {
  gvk_sync *s = ctx;
  uint64_t value = 0;
  VkResult r = vkGetSemaphoreCounterValue(s->device, s->timeline, &value);
  if (r != VK_SUCCESS) return vk_fail(r, "vkGetSemaphoreCounterValue"), UINT64_MAX;
  return value;
}

/* Signals the timeline to `value` from the host (vkSignalSemaphore). */
GVK_API int gvk_sync_signal(void *ctx, uint64_t value) {
  gvk_sync *s = ctx;
  VkSemaphoreSignalInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
                              .semaphore = s->timeline,
                              .value = value};
  VkResult r = vkSignalSemaphore(s->device, &si);
  return r == VK_SUCCESS ? 0 : vk_fail(r, "vkSignalSemaphore");
}

/*
** Submits, without waiting for it: wait for the timeline to reach wait_value,
** vkCmdFillBuffer(the whole buffer, fill), a transfer-to-host barrier, then
** signal the timeline to signal_value. The bytes change only once the host
** (or another queue) has signalled wait_value.
*/
GVK_API int gvk_sync_submit_fill(void *ctx, uint64_t wait_value, uint32_t fill,
                                 uint64_t signal_value) {
  gvk_sync *s = ctx;
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                 .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  VkResult r = vkBeginCommandBuffer(s->cb, &bi);
  if (r != VK_SUCCESS) return vk_fail(r, "vkBeginCommandBuffer");
  vkCmdFillBuffer(s->cb, s->buffer, 0, VK_WHOLE_SIZE, fill);
  VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                       .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                       .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
  vkCmdPipelineBarrier(s->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                       &b, 0, NULL, 0, NULL);
  if ((r = vkEndCommandBuffer(s->cb)) != VK_SUCCESS) return vk_fail(r, "vkEndCommandBuffer");
  VkTimelineSemaphoreSubmitInfo ti = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                      .waitSemaphoreValueCount = 1,
                                      .pWaitSemaphoreValues = &wait_value,
                                      .signalSemaphoreValueCount = 1,
                                      .pSignalSemaphoreValues = &signal_value};
  VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                     .pNext = &ti,
                     .waitSemaphoreCount = 1,
                     .pWaitSemaphores = &s->timeline,
                     .pWaitDstStageMask = &stage,
                     .commandBufferCount = 1,
                     .pCommandBuffers = &s->cb,
                     .signalSemaphoreCount = 1,
                     .pSignalSemaphores = &s->timeline};
  if ((r = vkQueueSubmit(s->queue, 1, &si, VK_NULL_HANDLE)) != VK_SUCCESS)
    return vk_fail(r, "vkQueueSubmit");
  if (wait_value > s->highest_wait) s->highest_wait = wait_value;
  return 0;
}

/* Releases the submission's wait if the test never did, waits for the queue, destroys everything. */
GVK_API void gvk_sync_close(void *ctx) {
  gvk_sync *s = ctx;
  if (!s) return;
  if (s->device != VK_NULL_HANDLE) {
    if (s->timeline != VK_NULL_HANDLE) {
      uint64_t value = 0;
      if (vkGetSemaphoreCounterValue(s->device, s->timeline, &value) == VK_SUCCESS &&
          value < s->highest_wait)
        gvk_sync_signal(s, s->highest_wait);
    }
    vkDeviceWaitIdle(s->device);
    if (s->timeline != VK_NULL_HANDLE) vkDestroySemaphore(s->device, s->timeline, NULL);
    if (s->binary != VK_NULL_HANDLE) vkDestroySemaphore(s->device, s->binary, NULL);
    if (s->buffer != VK_NULL_HANDLE) vkDestroyBuffer(s->device, s->buffer, NULL);
    if (s->memory != VK_NULL_HANDLE) vkFreeMemory(s->device, s->memory, NULL);
    if (s->pool != VK_NULL_HANDLE) vkDestroyCommandPool(s->device, s->pool, NULL);
    vkDestroyDevice(s->device, NULL);
  }
  if (s->instance != VK_NULL_HANDLE) vkDestroyInstance(s->instance, NULL);
  free(s);
}
