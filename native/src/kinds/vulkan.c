/* vulkan.c: VkImage, VkBufferHandle and VkOpaqueFd. */
#include "rows.h"

#define T gpures_vk_image_desc
static const gpures_field_info vk_image_fields[] = {
  GPURES__ROW(T, image, "image", GPURES_FIELD_U64, GPURES_E_NULL_HANDLE, 0, "VkImage handle"),
  GPURES__ROW(T, device, "device", GPURES_FIELD_PTR, 0, GPURES_FIELD_OPTIONAL, "VkDevice; absent for a trusted import"),
  GPURES__ROW(T, instance, "instance", GPURES_FIELD_PTR, 0, GPURES_FIELD_OPTIONAL, "VkInstance"),
  GPURES__ROW(T, physical_device, "physicalDevice", GPURES_FIELD_PTR, 0, GPURES_FIELD_OPTIONAL, "VkPhysicalDevice"),
  GPURES__VULKAN_UUID_ROW(T),
  GPURES__ROW_PITCH_ROW(T),
  GPURES__ROW(T, vk_format, "vkFormat", GPURES_FIELD_U32, 0, GPURES_FIELD_OPTIONAL, "VkFormat"),
  GPURES__ROW(T, width, "width", GPURES_FIELD_U32, 0, GPURES_FIELD_OPTIONAL, "width in pixels"),
  GPURES__ROW(T, height, "height", GPURES_FIELD_U32, 0, GPURES_FIELD_OPTIONAL, "height in pixels"),
  GPURES__SLOT_RELEASE_ROWS(T),
};

static int validate_vk_image(gpures__op op, const void *desc) {
  const T *d = desc;
  int status = gpures__check_extent(op, d->width, d->height);
  return status != GPURES_OK ? status : gpures__check_slot_release(op, d->flags, &d->slot_release);
}
GPURES__VARIANT(vk_image, vk_image_fields, validate_vk_image);
#undef T

#define T gpures_vk_buffer_handle_desc
static const gpures_field_info vk_buffer_handle_fields[] = {
  GPURES__ROW(T, buffer, "buffer", GPURES_FIELD_U64, GPURES_E_NULL_HANDLE, 0, "VkBuffer handle"),
  GPURES__ROW(T, device, "device", GPURES_FIELD_PTR, 0, GPURES_FIELD_OPTIONAL, "VkDevice"),
  GPURES__VULKAN_UUID_ROW(T),
  GPURES__SIZE_ROW(T),
};
GPURES__VARIANT(vk_buffer_handle, vk_buffer_handle_fields, NULL);
#undef T

#define T gpures_vk_opaque_fd_desc
static const gpures_field_info vk_opaque_fd_fields[] = {
  GPURES__ROW(T, fd, "fd", GPURES_FIELD_FD, 0, 0, "opaque fd of the memory, owned by the handle"),
  GPURES__ROW(T, size, "size", GPURES_FIELD_U64, GPURES_E_ZERO_SIZE, 0, "allocation size in bytes"),
  GPURES__ROW(T, memory_type_index, "memoryTypeIndex", GPURES_FIELD_U32, 0, 0, "Vulkan memory type index"),
  GPURES__ROW(T, offset, "offset", GPURES_FIELD_U64, 0, 0, "offset of the resource in the allocation"),
  GPURES__ROW(T, dedicated, "dedicated", GPURES_FIELD_BOOL, 0, 0, "a dedicated allocation"),
  GPURES__ROW(T, width, "width", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "width in pixels"),
  GPURES__ROW(T, height, "height", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "height in pixels"),
  GPURES__PIXEL_FORMAT_ROW(T),
  GPURES__ROW(T, device_uuid, "deviceUuid", GPURES_FIELD_UUID, 0, GPURES_FIELD_DEVICE(GPURES_DEVICE_VULKAN_UUID), "UUID of the exporting device"),
  GPURES__SLOT_RELEASE_ROWS(T),
  GPURES__ROW(T, row_pitch, "rowPitch", GPURES_FIELD_U32, 0, GPURES_FIELD_OPTIONAL, "bytes per row of plane 0; absent: packed rows"),
};

static int validate_vk_opaque_fd(gpures__op op, const void *desc) {
  return gpures__check_opaque_frame(op, desc);
}
GPURES__VARIANT(vk_opaque_fd, vk_opaque_fd_fields, validate_vk_opaque_fd);
#undef T
