/*
** vulkan_min.h: the part of the Vulkan ABI gpures and its GPU test helpers use.
**
** gpures reaches Vulkan through function pointers it resolves at run time and
** builds where no Vulkan SDK is installed; the GPU machine has the loader
** (libvulkan.so.1) but no development headers. So this one header declares
** what they all pass: names, values and layouts are the Khronos headers'
** (Vulkan 1.3.239), spelled as there, so code reads as it would with
** <vulkan/vulkan_core.h>. Non-dispatchable handles are uint64_t (the headers'
** 32-bit spelling; the same 8 bytes on LP64).
**
** Every entry point has its PFN_<name> type. Define VK_MIN_PROTOTYPES before
** including it to also declare the core functions, for code that links the
** loader (the test helpers); gpures itself never does.
*/
#ifndef GPURES_KHRONOS_VULKAN_MIN_H
#define GPURES_KHRONOS_VULKAN_MIN_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ base types */

#define VKAPI_PTR

typedef uint32_t VkFlags;
typedef uint32_t VkBool32;
typedef uint64_t VkDeviceSize;
/* C enums: int-sized, as the Khronos headers make them. */
typedef int32_t VkResult;
typedef int32_t VkStructureType;
typedef int32_t VkFormat;
typedef int32_t VkImageType;
typedef int32_t VkImageTiling;
typedef int32_t VkImageLayout;
typedef int32_t VkSharingMode;
typedef int32_t VkCommandBufferLevel;
typedef int32_t VkSemaphoreType;
typedef int32_t VkSampleCountFlagBits;
typedef int32_t VkExternalMemoryHandleTypeFlagBits;
typedef int32_t VkExternalSemaphoreHandleTypeFlagBits;
typedef VkFlags VkAccessFlags;
typedef VkFlags VkPipelineStageFlags;
typedef VkFlags VkDependencyFlags;
typedef VkFlags VkImageAspectFlags;
typedef VkFlags VkImageUsageFlags;
typedef VkFlags VkImageCreateFlags;
typedef VkFlags VkBufferUsageFlags;
typedef VkFlags VkBufferCreateFlags;
typedef VkFlags VkMemoryPropertyFlags;
typedef VkFlags VkMemoryMapFlags;
typedef VkFlags VkFormatFeatureFlags;
typedef VkFlags VkSampleCountFlags;
typedef VkFlags VkQueueFlags;
typedef VkFlags VkExternalMemoryHandleTypeFlags;
typedef VkFlags VkExternalMemoryFeatureFlags;
typedef VkFlags VkExternalSemaphoreHandleTypeFlags;
typedef VkFlags VkExternalSemaphoreFeatureFlags;
typedef VkFlags VkCommandPoolCreateFlags;
typedef VkFlags VkCommandBufferUsageFlags;
typedef VkFlags VkCommandBufferResetFlags;
typedef VkFlags VkFenceCreateFlags;
typedef VkFlags VkSemaphoreCreateFlags;
typedef VkFlags VkSemaphoreWaitFlags;

typedef struct VkInstance_T *VkInstance;
typedef struct VkPhysicalDevice_T *VkPhysicalDevice;
typedef struct VkDevice_T *VkDevice;
typedef struct VkQueue_T *VkQueue;
typedef struct VkCommandBuffer_T *VkCommandBuffer;
typedef uint64_t VkBuffer;
typedef uint64_t VkImage;
typedef uint64_t VkDeviceMemory;
typedef uint64_t VkCommandPool;
typedef uint64_t VkFence;
typedef uint64_t VkSemaphore;
/* Only ever passed as NULL here. */
typedef struct VkAllocationCallbacks VkAllocationCallbacks;
typedef void(VKAPI_PTR *PFN_vkVoidFunction)(void);

#define VK_NULL_HANDLE 0
#define VK_TRUE 1u
#define VK_FALSE 0u
#define VK_WHOLE_SIZE (~0ULL)
#define VK_QUEUE_FAMILY_IGNORED (~0U)
#define VK_QUEUE_FAMILY_EXTERNAL (~1U)
#define VK_MAKE_API_VERSION(variant, major, minor, patch)                                          \
  ((((uint32_t)(variant)) << 29) | (((uint32_t)(major)) << 22) | (((uint32_t)(minor)) << 12) |   \
   ((uint32_t)(patch)))
#define VK_API_VERSION_1_1 VK_MAKE_API_VERSION(0, 1, 1, 0)
#define VK_API_VERSION_1_2 VK_MAKE_API_VERSION(0, 1, 2, 0)
#define VK_MAX_PHYSICAL_DEVICE_NAME_SIZE 256
#define VK_MAX_EXTENSION_NAME_SIZE 256
#define VK_UUID_SIZE 16
#define VK_LUID_SIZE 8
#define VK_MAX_MEMORY_TYPES 32
#define VK_MAX_MEMORY_HEAPS 16

#define VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME "VK_KHR_external_memory_fd"
#define VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME "VK_KHR_external_semaphore_fd"
#define VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME "VK_EXT_external_memory_dma_buf"
#define VK_EXT_IMAGE_DRM_FORMAT_MODIFIER_EXTENSION_NAME "VK_EXT_image_drm_format_modifier"

/* ---------------------------------------------------------------- results */

#define VK_SUCCESS 0
#define VK_NOT_READY 1
#define VK_TIMEOUT 2
#define VK_INCOMPLETE 5
#define VK_ERROR_OUT_OF_HOST_MEMORY (-1)
#define VK_ERROR_OUT_OF_DEVICE_MEMORY (-2)
#define VK_ERROR_INITIALIZATION_FAILED (-3)
#define VK_ERROR_DEVICE_LOST (-4)
#define VK_ERROR_MEMORY_MAP_FAILED (-5)
#define VK_ERROR_EXTENSION_NOT_PRESENT (-7)
#define VK_ERROR_FEATURE_NOT_PRESENT (-8)
#define VK_ERROR_INCOMPATIBLE_DRIVER (-9)
#define VK_ERROR_FORMAT_NOT_SUPPORTED (-11)
#define VK_ERROR_INVALID_EXTERNAL_HANDLE (-1000072003)
#define VK_ERROR_INVALID_DRM_FORMAT_MODIFIER_PLANE_LAYOUT_EXT (-1000158000)

/* ------------------------------------------------------- structure types */

#define VK_STRUCTURE_TYPE_APPLICATION_INFO 0
#define VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO 1
#define VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO 2
#define VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO 3
#define VK_STRUCTURE_TYPE_SUBMIT_INFO 4
#define VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO 5
#define VK_STRUCTURE_TYPE_FENCE_CREATE_INFO 8
#define VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO 9
#define VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO 12
#define VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO 14
#define VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO 39
#define VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO 40
#define VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO 42
#define VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER 44
#define VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER 45
#define VK_STRUCTURE_TYPE_MEMORY_BARRIER 46
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2 1000059000
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2 1000059001
#define VK_STRUCTURE_TYPE_FORMAT_PROPERTIES_2 1000059002
#define VK_STRUCTURE_TYPE_IMAGE_FORMAT_PROPERTIES_2 1000059003
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_FORMAT_INFO_2 1000059004
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_IMAGE_FORMAT_INFO 1000071000
#define VK_STRUCTURE_TYPE_EXTERNAL_IMAGE_FORMAT_PROPERTIES 1000071001
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO 1000071002
#define VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES 1000071003
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES 1000071004
#define VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO 1000072000
#define VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO 1000072001
#define VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO 1000072002
#define VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR 1000074000
#define VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR 1000074001
#define VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR 1000074002
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO 1000076000
#define VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES 1000076001
#define VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO 1000077000
#define VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR 1000079001
#define VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO 1000127001
#define VK_STRUCTURE_TYPE_DRM_FORMAT_MODIFIER_PROPERTIES_LIST_EXT 1000158000
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_DRM_FORMAT_MODIFIER_INFO_EXT 1000158002
#define VK_STRUCTURE_TYPE_IMAGE_DRM_FORMAT_MODIFIER_EXPLICIT_CREATE_INFO_EXT 1000158004
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES 1000207000
#define VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO 1000207002
#define VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO 1000207003
#define VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO 1000207004
#define VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO 1000207005

/* ------------------------------------------------------ enums and flags */

#define VK_FORMAT_R8G8B8A8_UNORM 37
#define VK_IMAGE_TYPE_2D 1
#define VK_IMAGE_TILING_OPTIMAL 0
#define VK_IMAGE_TILING_LINEAR 1
#define VK_IMAGE_TILING_DRM_FORMAT_MODIFIER_EXT 1000158000
#define VK_IMAGE_LAYOUT_UNDEFINED 0
#define VK_IMAGE_LAYOUT_GENERAL 1
#define VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL 6
#define VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL 7
#define VK_IMAGE_LAYOUT_PREINITIALIZED 8
#define VK_SAMPLE_COUNT_1_BIT 0x1
#define VK_SHARING_MODE_EXCLUSIVE 0
#define VK_COMMAND_BUFFER_LEVEL_PRIMARY 0
#define VK_SEMAPHORE_TYPE_BINARY 0
#define VK_SEMAPHORE_TYPE_TIMELINE 1

#define VK_BUFFER_USAGE_TRANSFER_SRC_BIT 0x1u
#define VK_BUFFER_USAGE_TRANSFER_DST_BIT 0x2u
#define VK_BUFFER_USAGE_STORAGE_BUFFER_BIT 0x20u
#define VK_IMAGE_USAGE_TRANSFER_SRC_BIT 0x1u
#define VK_IMAGE_USAGE_TRANSFER_DST_BIT 0x2u
#define VK_IMAGE_USAGE_SAMPLED_BIT 0x4u
#define VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT 0x1u
#define VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT 0x2u
#define VK_MEMORY_PROPERTY_HOST_COHERENT_BIT 0x4u
#define VK_QUEUE_GRAPHICS_BIT 0x1u
#define VK_QUEUE_COMPUTE_BIT 0x2u
#define VK_QUEUE_TRANSFER_BIT 0x4u
#define VK_IMAGE_ASPECT_COLOR_BIT 0x1u
#define VK_IMAGE_ASPECT_PLANE_0_BIT 0x10u
#define VK_IMAGE_ASPECT_MEMORY_PLANE_0_BIT_EXT 0x80u
#define VK_COMMAND_POOL_CREATE_TRANSIENT_BIT 0x1u
#define VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT 0x2u
#define VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT 0x1u
#define VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT 0x1u
#define VK_PIPELINE_STAGE_TRANSFER_BIT 0x1000u
#define VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT 0x2000u
#define VK_PIPELINE_STAGE_HOST_BIT 0x4000u
#define VK_PIPELINE_STAGE_ALL_COMMANDS_BIT 0x10000u
#define VK_ACCESS_TRANSFER_READ_BIT 0x0800u
#define VK_ACCESS_TRANSFER_WRITE_BIT 0x1000u
#define VK_ACCESS_HOST_READ_BIT 0x2000u
#define VK_ACCESS_HOST_WRITE_BIT 0x4000u
#define VK_ACCESS_MEMORY_READ_BIT 0x8000u
#define VK_ACCESS_MEMORY_WRITE_BIT 0x10000u

#define VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT 0x1
#define VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT 0x200
#define VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT 0x1u
#define VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT 0x2u
#define VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT 0x4u
#define VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT 0x1
#define VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT 0x10
#define VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT 0x1u
#define VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT 0x2u

/* ------------------------------------------------------------- structs */

typedef struct VkExtent3D {
  uint32_t width, height, depth;
} VkExtent3D;

typedef struct VkOffset3D {
  int32_t x, y, z;
} VkOffset3D;

typedef struct VkApplicationInfo {
  VkStructureType sType;
  const void *pNext;
  const char *pApplicationName;
  uint32_t applicationVersion;
  const char *pEngineName;
  uint32_t engineVersion;
  uint32_t apiVersion;
} VkApplicationInfo;

typedef struct VkInstanceCreateInfo {
  VkStructureType sType;
  const void *pNext;
  VkFlags flags;
  const VkApplicationInfo *pApplicationInfo;
  uint32_t enabledLayerCount;
  const char *const *ppEnabledLayerNames;
  uint32_t enabledExtensionCount;
  const char *const *ppEnabledExtensionNames;
} VkInstanceCreateInfo;

/*
** Only the head is named: VkPhysicalDeviceLimits and the sparse properties
** that follow are kept as bytes (824 bytes in all on LP64, 8-byte aligned).
*/
typedef struct VkPhysicalDeviceProperties {
  uint32_t apiVersion;
  uint32_t driverVersion;
  uint32_t vendorID;
  uint32_t deviceID;
  int32_t deviceType;
  char deviceName[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
  uint8_t pipelineCacheUUID[VK_UUID_SIZE];
  uint64_t limits_and_sparse[66];
} VkPhysicalDeviceProperties;

typedef struct VkPhysicalDeviceProperties2 {
  VkStructureType sType;
  void *pNext;
  VkPhysicalDeviceProperties properties;
} VkPhysicalDeviceProperties2;

typedef struct VkPhysicalDeviceIDProperties {
  VkStructureType sType;
  void *pNext;
  uint8_t deviceUUID[VK_UUID_SIZE];
  uint8_t driverUUID[VK_UUID_SIZE];
  uint8_t deviceLUID[VK_LUID_SIZE];
  uint32_t deviceNodeMask;
  VkBool32 deviceLUIDValid;
} VkPhysicalDeviceIDProperties;

/* VkPhysicalDeviceFeatures2: the 55 VkBool32 of VkPhysicalDeviceFeatures follow the chain. */
typedef struct VkPhysicalDeviceFeatures2 {
  VkStructureType sType;
  void *pNext;
  VkBool32 features[55];
} VkPhysicalDeviceFeatures2;

typedef struct VkPhysicalDeviceTimelineSemaphoreFeatures {
  VkStructureType sType;
  void *pNext;
  VkBool32 timelineSemaphore;
} VkPhysicalDeviceTimelineSemaphoreFeatures;

typedef struct VkMemoryType {
  VkMemoryPropertyFlags propertyFlags;
  uint32_t heapIndex;
} VkMemoryType;

typedef struct VkMemoryHeap {
  VkDeviceSize size;
  VkFlags flags;
} VkMemoryHeap;

typedef struct VkPhysicalDeviceMemoryProperties {
  uint32_t memoryTypeCount;
  VkMemoryType memoryTypes[VK_MAX_MEMORY_TYPES];
  uint32_t memoryHeapCount;
  VkMemoryHeap memoryHeaps[VK_MAX_MEMORY_HEAPS];
} VkPhysicalDeviceMemoryProperties;

typedef struct VkQueueFamilyProperties {
  VkQueueFlags queueFlags;
  uint32_t queueCount;
  uint32_t timestampValidBits;
  VkExtent3D minImageTransferGranularity;
} VkQueueFamilyProperties;

typedef struct VkExtensionProperties {
  char extensionName[VK_MAX_EXTENSION_NAME_SIZE];
  uint32_t specVersion;
} VkExtensionProperties;

typedef struct VkDeviceQueueCreateInfo {
  VkStructureType sType;
  const void *pNext;
  VkFlags flags;
  uint32_t queueFamilyIndex;
  uint32_t queueCount;
  const float *pQueuePriorities;
} VkDeviceQueueCreateInfo;

typedef struct VkDeviceCreateInfo {
  VkStructureType sType;
  const void *pNext;
  VkFlags flags;
  uint32_t queueCreateInfoCount;
  const VkDeviceQueueCreateInfo *pQueueCreateInfos;
  uint32_t enabledLayerCount;
  const char *const *ppEnabledLayerNames;
  uint32_t enabledExtensionCount;
  const char *const *ppEnabledExtensionNames;
  const void *pEnabledFeatures;
} VkDeviceCreateInfo;

/* Formats: what a format, tiling and modifier support. */

typedef struct VkFormatProperties {
  VkFormatFeatureFlags linearTilingFeatures;
  VkFormatFeatureFlags optimalTilingFeatures;
  VkFormatFeatureFlags bufferFeatures;
} VkFormatProperties;

typedef struct VkFormatProperties2 {
  VkStructureType sType;
  void *pNext;
  VkFormatProperties formatProperties;
} VkFormatProperties2;

typedef struct VkDrmFormatModifierPropertiesEXT {
  uint64_t drmFormatModifier;
  uint32_t drmFormatModifierPlaneCount;
  VkFormatFeatureFlags drmFormatModifierTilingFeatures;
} VkDrmFormatModifierPropertiesEXT;

typedef struct VkDrmFormatModifierPropertiesListEXT {
  VkStructureType sType;
  void *pNext;
  uint32_t drmFormatModifierCount;
  VkDrmFormatModifierPropertiesEXT *pDrmFormatModifierProperties;
} VkDrmFormatModifierPropertiesListEXT;

typedef struct VkPhysicalDeviceImageFormatInfo2 {
  VkStructureType sType;
  const void *pNext;
  VkFormat format;
  VkImageType type;
  VkImageTiling tiling;
  VkImageUsageFlags usage;
  VkImageCreateFlags flags;
} VkPhysicalDeviceImageFormatInfo2;

typedef struct VkPhysicalDeviceExternalImageFormatInfo {
  VkStructureType sType;
  const void *pNext;
  VkExternalMemoryHandleTypeFlagBits handleType;
} VkPhysicalDeviceExternalImageFormatInfo;

typedef struct VkPhysicalDeviceImageDrmFormatModifierInfoEXT {
  VkStructureType sType;
  const void *pNext;
  uint64_t drmFormatModifier;
  VkSharingMode sharingMode;
  uint32_t queueFamilyIndexCount;
  const uint32_t *pQueueFamilyIndices;
} VkPhysicalDeviceImageDrmFormatModifierInfoEXT;

typedef struct VkImageFormatProperties {
  VkExtent3D maxExtent;
  uint32_t maxMipLevels;
  uint32_t maxArrayLayers;
  VkSampleCountFlags sampleCounts;
  VkDeviceSize maxResourceSize;
} VkImageFormatProperties;

typedef struct VkImageFormatProperties2 {
  VkStructureType sType;
  void *pNext;
  VkImageFormatProperties imageFormatProperties;
} VkImageFormatProperties2;

typedef struct VkExternalMemoryProperties {
  VkExternalMemoryFeatureFlags externalMemoryFeatures;
  VkExternalMemoryHandleTypeFlags exportFromImportedHandleTypes;
  VkExternalMemoryHandleTypeFlags compatibleHandleTypes;
} VkExternalMemoryProperties;

typedef struct VkExternalImageFormatProperties {
  VkStructureType sType;
  void *pNext;
  VkExternalMemoryProperties externalMemoryProperties;
} VkExternalImageFormatProperties;

typedef struct VkPhysicalDeviceExternalBufferInfo {
  VkStructureType sType;
  const void *pNext;
  VkBufferCreateFlags flags;
  VkBufferUsageFlags usage;
  VkExternalMemoryHandleTypeFlagBits handleType;
} VkPhysicalDeviceExternalBufferInfo;

typedef struct VkExternalBufferProperties {
  VkStructureType sType;
  void *pNext;
  VkExternalMemoryProperties externalMemoryProperties;
} VkExternalBufferProperties;

/* Buffers, images and their memory. */

typedef struct VkBufferCreateInfo {
  VkStructureType sType;
  const void *pNext;
  VkBufferCreateFlags flags;
  VkDeviceSize size;
  VkBufferUsageFlags usage;
  VkSharingMode sharingMode;
  uint32_t queueFamilyIndexCount;
  const uint32_t *pQueueFamilyIndices;
} VkBufferCreateInfo;

typedef struct VkImageCreateInfo {
  VkStructureType sType;
  const void *pNext;
  VkImageCreateFlags flags;
  VkImageType imageType;
  VkFormat format;
  VkExtent3D extent;
  uint32_t mipLevels;
  uint32_t arrayLayers;
  VkSampleCountFlagBits samples;
  VkImageTiling tiling;
  VkImageUsageFlags usage;
  VkSharingMode sharingMode;
  uint32_t queueFamilyIndexCount;
  const uint32_t *pQueueFamilyIndices;
  VkImageLayout initialLayout;
} VkImageCreateInfo;

typedef struct VkSubresourceLayout {
  VkDeviceSize offset;
  VkDeviceSize size;
  VkDeviceSize rowPitch;
  VkDeviceSize arrayPitch;
  VkDeviceSize depthPitch;
} VkSubresourceLayout;

typedef struct VkImageDrmFormatModifierExplicitCreateInfoEXT {
  VkStructureType sType;
  const void *pNext;
  uint64_t drmFormatModifier;
  uint32_t drmFormatModifierPlaneCount;
  const VkSubresourceLayout *pPlaneLayouts;
} VkImageDrmFormatModifierExplicitCreateInfoEXT;

typedef struct VkExternalMemoryBufferCreateInfo {
  VkStructureType sType;
  const void *pNext;
  VkExternalMemoryHandleTypeFlags handleTypes;
} VkExternalMemoryBufferCreateInfo;

typedef struct VkExternalMemoryImageCreateInfo {
  VkStructureType sType;
  const void *pNext;
  VkExternalMemoryHandleTypeFlags handleTypes;
} VkExternalMemoryImageCreateInfo;

typedef struct VkExportMemoryAllocateInfo {
  VkStructureType sType;
  const void *pNext;
  VkExternalMemoryHandleTypeFlags handleTypes;
} VkExportMemoryAllocateInfo;

typedef struct VkImportMemoryFdInfoKHR {
  VkStructureType sType;
  const void *pNext;
  VkExternalMemoryHandleTypeFlagBits handleType;
  int fd;
} VkImportMemoryFdInfoKHR;

typedef struct VkMemoryFdPropertiesKHR {
  VkStructureType sType;
  void *pNext;
  uint32_t memoryTypeBits;
} VkMemoryFdPropertiesKHR;

typedef struct VkMemoryGetFdInfoKHR {
  VkStructureType sType;
  const void *pNext;
  VkDeviceMemory memory;
  VkExternalMemoryHandleTypeFlagBits handleType;
} VkMemoryGetFdInfoKHR;

typedef struct VkMemoryDedicatedAllocateInfo {
  VkStructureType sType;
  const void *pNext;
  VkImage image;
  VkBuffer buffer;
} VkMemoryDedicatedAllocateInfo;

typedef struct VkMemoryAllocateInfo {
  VkStructureType sType;
  const void *pNext;
  VkDeviceSize allocationSize;
  uint32_t memoryTypeIndex;
} VkMemoryAllocateInfo;

typedef struct VkMemoryRequirements {
  VkDeviceSize size;
  VkDeviceSize alignment;
  uint32_t memoryTypeBits;
} VkMemoryRequirements;

typedef struct VkImageSubresource {
  VkImageAspectFlags aspectMask;
  uint32_t mipLevel;
  uint32_t arrayLayer;
} VkImageSubresource;

typedef struct VkImageSubresourceRange {
  VkImageAspectFlags aspectMask;
  uint32_t baseMipLevel;
  uint32_t levelCount;
  uint32_t baseArrayLayer;
  uint32_t layerCount;
} VkImageSubresourceRange;

typedef struct VkImageSubresourceLayers {
  VkImageAspectFlags aspectMask;
  uint32_t mipLevel;
  uint32_t baseArrayLayer;
  uint32_t layerCount;
} VkImageSubresourceLayers;

/* Commands and their submission. */

typedef struct VkCommandPoolCreateInfo {
  VkStructureType sType;
  const void *pNext;
  VkCommandPoolCreateFlags flags;
  uint32_t queueFamilyIndex;
} VkCommandPoolCreateInfo;

typedef struct VkCommandBufferAllocateInfo {
  VkStructureType sType;
  const void *pNext;
  VkCommandPool commandPool;
  VkCommandBufferLevel level;
  uint32_t commandBufferCount;
} VkCommandBufferAllocateInfo;

typedef struct VkCommandBufferBeginInfo {
  VkStructureType sType;
  const void *pNext;
  VkCommandBufferUsageFlags flags;
  const void *pInheritanceInfo;
} VkCommandBufferBeginInfo;

typedef struct VkBufferCopy {
  VkDeviceSize srcOffset;
  VkDeviceSize dstOffset;
  VkDeviceSize size;
} VkBufferCopy;

typedef struct VkBufferImageCopy {
  VkDeviceSize bufferOffset;
  uint32_t bufferRowLength;
  uint32_t bufferImageHeight;
  VkImageSubresourceLayers imageSubresource;
  VkOffset3D imageOffset;
  VkExtent3D imageExtent;
} VkBufferImageCopy;

typedef struct VkMemoryBarrier {
  VkStructureType sType;
  const void *pNext;
  VkAccessFlags srcAccessMask;
  VkAccessFlags dstAccessMask;
} VkMemoryBarrier;

typedef struct VkBufferMemoryBarrier {
  VkStructureType sType;
  const void *pNext;
  VkAccessFlags srcAccessMask;
  VkAccessFlags dstAccessMask;
  uint32_t srcQueueFamilyIndex;
  uint32_t dstQueueFamilyIndex;
  VkBuffer buffer;
  VkDeviceSize offset;
  VkDeviceSize size;
} VkBufferMemoryBarrier;

typedef struct VkImageMemoryBarrier {
  VkStructureType sType;
  const void *pNext;
  VkAccessFlags srcAccessMask;
  VkAccessFlags dstAccessMask;
  VkImageLayout oldLayout;
  VkImageLayout newLayout;
  uint32_t srcQueueFamilyIndex;
  uint32_t dstQueueFamilyIndex;
  VkImage image;
  VkImageSubresourceRange subresourceRange;
} VkImageMemoryBarrier;

typedef struct VkSubmitInfo {
  VkStructureType sType;
  const void *pNext;
  uint32_t waitSemaphoreCount;
  const VkSemaphore *pWaitSemaphores;
  const VkPipelineStageFlags *pWaitDstStageMask;
  uint32_t commandBufferCount;
  const VkCommandBuffer *pCommandBuffers;
  uint32_t signalSemaphoreCount;
  const VkSemaphore *pSignalSemaphores;
} VkSubmitInfo;

typedef struct VkFenceCreateInfo {
  VkStructureType sType;
  const void *pNext;
  VkFenceCreateFlags flags;
} VkFenceCreateInfo;

/* Timeline and external semaphores (Vulkan 1.1/1.2 core, VK_KHR_external_semaphore_fd). */

typedef struct VkSemaphoreCreateInfo {
  VkStructureType sType;
  const void *pNext;
  VkSemaphoreCreateFlags flags;
} VkSemaphoreCreateInfo;

typedef struct VkSemaphoreTypeCreateInfo {
  VkStructureType sType;
  const void *pNext;
  VkSemaphoreType semaphoreType;
  uint64_t initialValue;
} VkSemaphoreTypeCreateInfo;

typedef struct VkExportSemaphoreCreateInfo {
  VkStructureType sType;
  const void *pNext;
  VkExternalSemaphoreHandleTypeFlags handleTypes;
} VkExportSemaphoreCreateInfo;

typedef struct VkSemaphoreGetFdInfoKHR {
  VkStructureType sType;
  const void *pNext;
  VkSemaphore semaphore;
  VkExternalSemaphoreHandleTypeFlagBits handleType;
} VkSemaphoreGetFdInfoKHR;

typedef struct VkTimelineSemaphoreSubmitInfo {
  VkStructureType sType;
  const void *pNext;
  uint32_t waitSemaphoreValueCount;
  const uint64_t *pWaitSemaphoreValues;
  uint32_t signalSemaphoreValueCount;
  const uint64_t *pSignalSemaphoreValues;
} VkTimelineSemaphoreSubmitInfo;

typedef struct VkSemaphoreWaitInfo {
  VkStructureType sType;
  const void *pNext;
  VkSemaphoreWaitFlags flags;
  uint32_t semaphoreCount;
  const VkSemaphore *pSemaphores;
  const uint64_t *pValues;
} VkSemaphoreWaitInfo;

typedef struct VkSemaphoreSignalInfo {
  VkStructureType sType;
  const void *pNext;
  VkSemaphore semaphore;
  uint64_t value;
} VkSemaphoreSignalInfo;

typedef struct VkPhysicalDeviceExternalSemaphoreInfo {
  VkStructureType sType;
  const void *pNext;
  VkExternalSemaphoreHandleTypeFlagBits handleType;
} VkPhysicalDeviceExternalSemaphoreInfo;

typedef struct VkExternalSemaphoreProperties {
  VkStructureType sType;
  void *pNext;
  VkExternalSemaphoreHandleTypeFlags exportFromImportedHandleTypes;
  VkExternalSemaphoreHandleTypeFlags compatibleHandleTypes;
  VkExternalSemaphoreFeatureFlags externalSemaphoreFeatures;
} VkExternalSemaphoreProperties;

/* ------------------------------------------------------------ functions */

/*
** X(return type, name, parameters) for each entry point: the core ones (the
** loader exports them), then the extensions' (only through GetProcAddr).
*/
#define VK_MIN_CORE_FUNCTIONS(X)                                                                   \
  X(PFN_vkVoidFunction, vkGetInstanceProcAddr, (VkInstance, const char *))                         \
  X(PFN_vkVoidFunction, vkGetDeviceProcAddr, (VkDevice, const char *))                             \
  X(VkResult, vkEnumerateInstanceVersion, (uint32_t *))                                            \
  X(VkResult, vkCreateInstance,                                                                    \
    (const VkInstanceCreateInfo *, const VkAllocationCallbacks *, VkInstance *))                   \
  X(void, vkDestroyInstance, (VkInstance, const VkAllocationCallbacks *))                          \
  X(VkResult, vkEnumeratePhysicalDevices, (VkInstance, uint32_t *, VkPhysicalDevice *))            \
  X(void, vkGetPhysicalDeviceProperties, (VkPhysicalDevice, VkPhysicalDeviceProperties *))         \
  X(void, vkGetPhysicalDeviceProperties2, (VkPhysicalDevice, VkPhysicalDeviceProperties2 *))       \
  X(void, vkGetPhysicalDeviceFeatures2, (VkPhysicalDevice, VkPhysicalDeviceFeatures2 *))           \
  X(void, vkGetPhysicalDeviceMemoryProperties,                                                     \
    (VkPhysicalDevice, VkPhysicalDeviceMemoryProperties *))                                        \
  X(void, vkGetPhysicalDeviceQueueFamilyProperties,                                                \
    (VkPhysicalDevice, uint32_t *, VkQueueFamilyProperties *))                                     \
  X(void, vkGetPhysicalDeviceFormatProperties2, (VkPhysicalDevice, VkFormat, VkFormatProperties2 *)) \
  X(VkResult, vkGetPhysicalDeviceImageFormatProperties2,                                           \
    (VkPhysicalDevice, const VkPhysicalDeviceImageFormatInfo2 *, VkImageFormatProperties2 *))      \
  X(void, vkGetPhysicalDeviceExternalBufferProperties,                                             \
    (VkPhysicalDevice, const VkPhysicalDeviceExternalBufferInfo *, VkExternalBufferProperties *))  \
  X(void, vkGetPhysicalDeviceExternalSemaphoreProperties,                                          \
    (VkPhysicalDevice, const VkPhysicalDeviceExternalSemaphoreInfo *,                              \
     VkExternalSemaphoreProperties *))                                                             \
  X(VkResult, vkEnumerateDeviceExtensionProperties,                                                \
    (VkPhysicalDevice, const char *, uint32_t *, VkExtensionProperties *))                         \
  X(VkResult, vkCreateDevice,                                                                      \
    (VkPhysicalDevice, const VkDeviceCreateInfo *, const VkAllocationCallbacks *, VkDevice *))     \
  X(void, vkDestroyDevice, (VkDevice, const VkAllocationCallbacks *))                              \
  X(VkResult, vkDeviceWaitIdle, (VkDevice))                                                        \
  X(void, vkGetDeviceQueue, (VkDevice, uint32_t, uint32_t, VkQueue *))                             \
  X(VkResult, vkCreateBuffer,                                                                      \
    (VkDevice, const VkBufferCreateInfo *, const VkAllocationCallbacks *, VkBuffer *))             \
  X(void, vkDestroyBuffer, (VkDevice, VkBuffer, const VkAllocationCallbacks *))                    \
  X(void, vkGetBufferMemoryRequirements, (VkDevice, VkBuffer, VkMemoryRequirements *))             \
  X(VkResult, vkCreateImage,                                                                       \
    (VkDevice, const VkImageCreateInfo *, const VkAllocationCallbacks *, VkImage *))               \
  X(void, vkDestroyImage, (VkDevice, VkImage, const VkAllocationCallbacks *))                      \
  X(void, vkGetImageMemoryRequirements, (VkDevice, VkImage, VkMemoryRequirements *))               \
  X(void, vkGetImageSubresourceLayout,                                                             \
    (VkDevice, VkImage, const VkImageSubresource *, VkSubresourceLayout *))                        \
  X(VkResult, vkAllocateMemory,                                                                    \
    (VkDevice, const VkMemoryAllocateInfo *, const VkAllocationCallbacks *, VkDeviceMemory *))     \
  X(void, vkFreeMemory, (VkDevice, VkDeviceMemory, const VkAllocationCallbacks *))                 \
  X(VkResult, vkBindBufferMemory, (VkDevice, VkBuffer, VkDeviceMemory, VkDeviceSize))              \
  X(VkResult, vkBindImageMemory, (VkDevice, VkImage, VkDeviceMemory, VkDeviceSize))                \
  X(VkResult, vkMapMemory,                                                                         \
    (VkDevice, VkDeviceMemory, VkDeviceSize, VkDeviceSize, VkMemoryMapFlags, void **))             \
  X(void, vkUnmapMemory, (VkDevice, VkDeviceMemory))                                               \
  X(VkResult, vkCreateCommandPool,                                                                 \
    (VkDevice, const VkCommandPoolCreateInfo *, const VkAllocationCallbacks *, VkCommandPool *))   \
  X(void, vkDestroyCommandPool, (VkDevice, VkCommandPool, const VkAllocationCallbacks *))          \
  X(VkResult, vkAllocateCommandBuffers,                                                            \
    (VkDevice, const VkCommandBufferAllocateInfo *, VkCommandBuffer *))                            \
  X(void, vkFreeCommandBuffers, (VkDevice, VkCommandPool, uint32_t, const VkCommandBuffer *))      \
  X(VkResult, vkBeginCommandBuffer, (VkCommandBuffer, const VkCommandBufferBeginInfo *))           \
  X(VkResult, vkEndCommandBuffer, (VkCommandBuffer))                                               \
  X(VkResult, vkResetCommandBuffer, (VkCommandBuffer, VkCommandBufferResetFlags))                  \
  X(void, vkCmdCopyBuffer, (VkCommandBuffer, VkBuffer, VkBuffer, uint32_t, const VkBufferCopy *))  \
  X(void, vkCmdCopyBufferToImage,                                                                  \
    (VkCommandBuffer, VkBuffer, VkImage, VkImageLayout, uint32_t, const VkBufferImageCopy *))      \
  X(void, vkCmdCopyImageToBuffer,                                                                  \
    (VkCommandBuffer, VkImage, VkImageLayout, VkBuffer, uint32_t, const VkBufferImageCopy *))      \
  X(void, vkCmdFillBuffer, (VkCommandBuffer, VkBuffer, VkDeviceSize, VkDeviceSize, uint32_t))      \
  X(void, vkCmdPipelineBarrier,                                                                    \
    (VkCommandBuffer, VkPipelineStageFlags, VkPipelineStageFlags, VkDependencyFlags, uint32_t,     \
     const VkMemoryBarrier *, uint32_t, const VkBufferMemoryBarrier *, uint32_t,                   \
     const VkImageMemoryBarrier *))                                                                \
  X(VkResult, vkQueueSubmit, (VkQueue, uint32_t, const VkSubmitInfo *, VkFence))                   \
  X(VkResult, vkQueueWaitIdle, (VkQueue))                                                          \
  X(VkResult, vkCreateFence,                                                                       \
    (VkDevice, const VkFenceCreateInfo *, const VkAllocationCallbacks *, VkFence *))               \
  X(void, vkDestroyFence, (VkDevice, VkFence, const VkAllocationCallbacks *))                      \
  X(VkResult, vkWaitForFences, (VkDevice, uint32_t, const VkFence *, VkBool32, uint64_t))          \
  X(VkResult, vkCreateSemaphore,                                                                   \
    (VkDevice, const VkSemaphoreCreateInfo *, const VkAllocationCallbacks *, VkSemaphore *))       \
  X(void, vkDestroySemaphore, (VkDevice, VkSemaphore, const VkAllocationCallbacks *))              \
  X(VkResult, vkGetSemaphoreCounterValue, (VkDevice, VkSemaphore, uint64_t *))                     \
  X(VkResult, vkWaitSemaphores, (VkDevice, const VkSemaphoreWaitInfo *, uint64_t))                 \
  X(VkResult, vkSignalSemaphore, (VkDevice, const VkSemaphoreSignalInfo *))

#define VK_MIN_EXTENSION_FUNCTIONS(X)                                                              \
  X(VkResult, vkGetMemoryFdKHR, (VkDevice, const VkMemoryGetFdInfoKHR *, int *))                   \
  X(VkResult, vkGetMemoryFdPropertiesKHR,                                                          \
    (VkDevice, VkExternalMemoryHandleTypeFlagBits, int, VkMemoryFdPropertiesKHR *))                \
  X(VkResult, vkGetSemaphoreFdKHR, (VkDevice, const VkSemaphoreGetFdInfoKHR *, int *))             \
  X(VkResult, vkGetImageDrmFormatModifierPropertiesEXT, (VkDevice, VkImage, void *))

#define VK_MIN_PFN(ret, name, params) typedef ret(VKAPI_PTR *PFN_##name) params;
VK_MIN_CORE_FUNCTIONS(VK_MIN_PFN)
VK_MIN_EXTENSION_FUNCTIONS(VK_MIN_PFN)
#undef VK_MIN_PFN

#ifdef VK_MIN_PROTOTYPES
#define VK_MIN_PROTOTYPE(ret, name, params) ret name params;
VK_MIN_CORE_FUNCTIONS(VK_MIN_PROTOTYPE)
#undef VK_MIN_PROTOTYPE
#endif

#endif /* GPURES_KHRONOS_VULKAN_MIN_H */
