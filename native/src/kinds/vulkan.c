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

/* A given row pitch holds a row, and the frame's planes at that pitch fit after the offset. */
static int check_opaque_rows(gpures__op op, const T *d) {
  if (!d->row_pitch) return GPURES_OK;
  const char *name = gpures_enum_name(GPURES_ENUM_PIXEL_FORMAT, d->format);
  uint64_t row_bytes = 0, frame = 0;
  if (gpures_pixel_format_row_bytes(d->format, 0, d->width, &row_bytes) != GPURES_OK ||
      d->row_pitch < row_bytes)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "rowPitch",
                        "rowPitch %u is below the %llu bytes of a row of %u %s pixels",
                        d->row_pitch, (unsigned long long)row_bytes, d->width, name);
  if (gpures_pixel_format_frame_size(d->format, d->width, d->height, d->row_pitch, &frame) !=
          GPURES_OK ||
      frame > d->size - d->offset)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "rowPitch",
                        "a %ux%u %s frame with rowPitch %u takes %llu bytes; %llu follow offset "
                        "%llu",
                        d->width, d->height, name, d->row_pitch, (unsigned long long)frame,
                        (unsigned long long)(d->size - d->offset), (unsigned long long)d->offset);
  return GPURES_OK;
}

static int validate_vk_opaque_fd(gpures__op op, const void *desc) {
  const T *d = desc;
  if (d->offset >= d->size)
    return gpures__fail(op, GPURES_E_INVALID_VALUE, "offset", "offset %llu is not below size %llu",
                        (unsigned long long)d->offset, (unsigned long long)d->size);
  int status = check_opaque_rows(op, d);
  return status != GPURES_OK ? status : gpures__check_slot_release(op, d->flags, &d->slot_release);
}
GPURES__VARIANT(vk_opaque_fd, vk_opaque_fd_fields, validate_vk_opaque_fd);
#undef T
