/*
** rows.h: field rows that mean the same in every kind that has them, so that
** their paths, checks and documentation cannot drift apart between kinds.
** T is the descriptor type of the table they stand in.
*/
#ifndef GPURES_KINDS_ROWS_H
#define GPURES_KINDS_ROWS_H

#include "../internal.h"

#define GPURES__SIZE_ROW(T) \
  GPURES__ROW(T, size, "size", GPURES_FIELD_U64, GPURES_E_ZERO_SIZE, 0, "bytes")
#define GPURES__ROW_PITCH_ROW(T) \
  GPURES__ROW(T, row_pitch, "rowPitch", GPURES_FIELD_U32, 0, 0, "bytes per row")
#define GPURES__PIXEL_FORMAT_ROW(T) \
  GPURES__ENUM_ROW(T, format, "format", GPURES_ENUM_PIXEL_FORMAT, "pixel format")

/* The device identities: a Vulkan device's UUID, a DXGI adapter's LUID, a Metal device's id. */
#define GPURES__VULKAN_UUID_ROW(T)                                                         \
  GPURES__DEVICE_ROW(T, device_uuid, "deviceUuid", GPURES_FIELD_UUID, GPURES_HAS_DEVICE_UUID, \
                     GPURES_DEVICE_VULKAN_UUID, "VkPhysicalDeviceIDProperties.deviceUUID")
#define GPURES__LUID_ROWS(T)                                                              \
  GPURES__DEVICE_ROW(T, luid.high, "luid.high", GPURES_FIELD_I32, GPURES_HAS_LUID,          \
                     GPURES_DEVICE_DXGI_LUID, "adapter LUID, high part"),                   \
  GPURES__DEVICE_ROW(T, luid.low, "luid.low", GPURES_FIELD_U32, GPURES_HAS_LUID,            \
                     GPURES_DEVICE_DXGI_LUID, "adapter LUID, low part")
#define GPURES__CUDA_UUID_ROW(T, doc)                                                      \
  GPURES__DEVICE_ROW(T, device_uuid, "deviceUuid", GPURES_FIELD_UUID, GPURES_HAS_DEVICE_UUID, \
                     GPURES_DEVICE_CUDA_UUID, doc)
#define GPURES__REGISTRY_ID_ROW(T)                                                           \
  GPURES__DEVICE_ROW(T, registry_id, "registryId", GPURES_FIELD_U64, GPURES_HAS_REGISTRY_ID, \
                     GPURES_DEVICE_METAL_REGISTRY_ID, "MTLDevice.registryID")

/* The GL context a GL object lives in, optional in every GL kind; each kind's doc says more. */
#define GPURES__GL_CONTEXT_ROW(T, doc) \
  GPURES__ROW(T, context, "context", GPURES_FIELD_PTR, 0, GPURES_FIELD_OPTIONAL, doc)

/* The optional groups: a GL share group, the producer's slot-release gate. */
#define GPURES__SHARE_GROUP_ROW(T) \
  GPURES__GROUP_ROW(T, share_group, "shareGroup", GPURES_FIELD_U64, GPURES_HAS_SHARE_GROUP, "share group id")
#define GPURES__SLOT_RELEASE_ROWS(T)                                                       \
  GPURES__GROUP_ROW(T, slot_release.gate, "slotRelease.gate", GPURES_FIELD_PTR,             \
                    GPURES_HAS_SLOT_RELEASE, "address of the producer's 64-bit gate"),      \
  GPURES__GROUP_ROW(T, slot_release.value, "slotRelease.value", GPURES_FIELD_U64,           \
                    GPURES_HAS_SLOT_RELEASE, "value slotRelease() stores into the gate")

/* A Vulkan semaphore's type and the timeline point that means finished (none when binary). */
#define GPURES__SEMAPHORE_VALUE_ROWS(T)                                                    \
  GPURES__ENUM_ROW(T, semaphore_type, "semaphoreType", GPURES_ENUM_SEMAPHORE_TYPE,          \
                   "binary or timeline"),                                                  \
  GPURES__ROW(T, value, "value", GPURES_FIELD_U64, 0, 0, "timeline point that means finished")

#endif /* GPURES_KINDS_ROWS_H */
