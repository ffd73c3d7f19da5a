/*
** vulkan.h: what the Vulkan files share (vulkan.c: importer, caps, device
** info; vulkan_pool.c: pools of exported memory). Entry points come from the
** caller's vkGetInstanceProcAddr or the system loader's; nothing is linked.
*/
#ifndef GPURES_INTEROP_VULKAN_H
#define GPURES_INTEROP_VULKAN_H

#include "interop.h"
#include "khronos/vulkan_min.h"

/* vkGetInstanceProcAddr and vkGetDeviceProcAddr alike: each owner is a dispatchable handle. */
typedef PFN_vkVoidFunction (*vk_proc_fn)(void *owner, const char *name);

/* ---------------------------------------------------------- entry points */

typedef struct vk_instance_fns {
  vk_proc_fn device_proc;
  PFN_vkGetPhysicalDeviceProperties2 properties2;
  PFN_vkGetPhysicalDeviceImageFormatProperties2 image_format_properties2;
  PFN_vkGetPhysicalDeviceFormatProperties2 format_properties2;
  PFN_vkEnumerateDeviceExtensionProperties extensions;
  PFN_vkCreateDevice create_device;
  PFN_vkGetPhysicalDeviceMemoryProperties memory_properties;
  PFN_vkGetPhysicalDeviceExternalBufferProperties external_buffer_properties;
} vk_instance_fns;

typedef struct vk_device_fns {
  PFN_vkDestroyDevice destroy_device;
  PFN_vkCreateImage create_image;
  PFN_vkDestroyImage destroy_image;
  PFN_vkGetImageMemoryRequirements image_requirements;
  PFN_vkGetImageSubresourceLayout subresource_layout;
  PFN_vkCreateBuffer create_buffer;
  PFN_vkDestroyBuffer destroy_buffer;
  PFN_vkGetBufferMemoryRequirements buffer_requirements;
  PFN_vkAllocateMemory allocate;
  PFN_vkFreeMemory free_memory;
  PFN_vkBindImageMemory bind_image;
  PFN_vkBindBufferMemory bind_buffer;
  PFN_vkGetMemoryFdPropertiesKHR memory_fd_properties;
  PFN_vkGetMemoryFdKHR get_memory_fd; /* exports (the pool's memory) */
  /* set when the device enabled VK_EXT_image_drm_format_modifier */
  PFN_vkVoidFunction modifier_properties;
} vk_device_fns;

/* The instance's entry points gpures uses; UNSUPPORTED naming "instance" when one is missing. */
int gpures__vk_load_instance(gpures__op op, void *instance, void *gipa, vk_instance_fns *fn);
/* The device's; UNSUPPORTED naming "device" without VK_KHR_external_memory_fd. */
int gpures__vk_load_device(gpures__op op, const vk_instance_fns *in, void *device,
                           vk_device_fns *fn);
/* A VkResult as a gpures status naming `field`: "<what>: VK_ERROR_...". */
int gpures__vk_fail(gpures__op op, const char *field, const char *what, VkResult r);
/* The VkFormat with a PixelFormat's memory layout, or 0. */
int32_t gpures__vk_format_of(uint32_t format);
/* The physical device's ids and name. */
void gpures__vk_fill_device_info(void *phys, const vk_instance_fns *fn, gpures_device_info *info);

#endif
