/*
** gfx_min.h: the few Vulkan, EGL and GL declarations the GPU probe uses.
**
** The GPU machine has the loaders (libvulkan.so.1, libEGL.so.1) but no
** development headers, so the probe declares what it calls itself and opens
** every library with dlopen. Values and layouts are the Khronos headers'
** (Vulkan 1.3.239, EGL 1.5, GL 4.6); the probe only calls functions through
** pointers it resolved at run time.
*/
#ifndef GPURES_GFX_MIN_H
#define GPURES_GFX_MIN_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ Vulkan */

#define VKAPI_PTR

typedef uint32_t VkFlags;
typedef uint32_t VkBool32;
typedef uint64_t VkDeviceSize;
typedef int32_t VkResult;
typedef int32_t VkStructureType;
/* The two members every extensible Vulkan struct starts with. */
#define VK_CHAIN \
  VkStructureType sType; \
  const void *pNext
/* The layer and extension names VkInstanceCreateInfo and VkDeviceCreateInfo enable. */
#define VK_LAYERS_AND_EXTENSIONS \
  uint32_t enabledLayerCount; \
  const char *const *ppEnabledLayerNames; \
  uint32_t enabledExtensionCount; \
  const char *const *ppEnabledExtensionNames

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
typedef void (*PFN_vkVoidFunction)(void);

#define VK_SUCCESS 0
#define VK_INCOMPLETE 5
#define VK_MAKE_API_VERSION(variant, major, minor, patch)                                          \
  ((((uint32_t)(variant)) << 29) | (((uint32_t)(major)) << 22) | (((uint32_t)(minor)) << 12) |   \
   ((uint32_t)(patch)))
#define VK_API_VERSION_1_1 VK_MAKE_API_VERSION(0, 1, 1, 0)
#define VK_API_VERSION_1_2 VK_MAKE_API_VERSION(0, 1, 2, 0)
#define VK_WHOLE_SIZE (~0ULL)

#define VK_STRUCTURE_TYPE_APPLICATION_INFO 0
#define VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO 1
#define VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO 2
#define VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO 3
#define VK_STRUCTURE_TYPE_SUBMIT_INFO 4
#define VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO 5
#define VK_STRUCTURE_TYPE_FENCE_CREATE_INFO 8
#define VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO 12
#define VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO 14
#define VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO 39
#define VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO 40
#define VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO 42
#define VK_STRUCTURE_TYPE_MEMORY_BARRIER 46
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2 1000059001
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES 1000071004
#define VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO 1000072000
#define VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO 1000072001
#define VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO 1000072002
#define VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR 1000074002
#define VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO 1000127001
#define VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO 9
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2 1000059000
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO 1000076000
#define VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES 1000076001
#define VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO 1000077000
#define VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR 1000079001
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES 1000207000
#define VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO 1000207002
#define VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO 1000207003
#define VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO 1000207004
#define VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO 1000207005

#define VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT 0x00000001u
#define VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT 0x00000010u
#define VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT 0x00000001u
#define VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT 0x00000002u
#define VK_SEMAPHORE_TYPE_BINARY 0
#define VK_SEMAPHORE_TYPE_TIMELINE 1
#define VK_TIMEOUT 2
#define VK_NOT_READY 1
#define VK_TRUE 1u

#define VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT 0x00000001u
#define VK_FORMAT_R8G8B8A8_UNORM 37
#define VK_IMAGE_TYPE_2D 1
#define VK_IMAGE_TILING_OPTIMAL 0
#define VK_IMAGE_TILING_LINEAR 1
#define VK_IMAGE_LAYOUT_UNDEFINED 0
#define VK_SAMPLE_COUNT_1_BIT 0x1u
#define VK_SHARING_MODE_EXCLUSIVE 0
#define VK_BUFFER_USAGE_TRANSFER_SRC_BIT 0x1u
#define VK_BUFFER_USAGE_TRANSFER_DST_BIT 0x2u
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
#define VK_COMMAND_BUFFER_LEVEL_PRIMARY 0
#define VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT 0x1u
#define VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT 0x2u
#define VK_PIPELINE_STAGE_TRANSFER_BIT 0x1000u
#define VK_PIPELINE_STAGE_HOST_BIT 0x4000u
#define VK_PIPELINE_STAGE_ALL_COMMANDS_BIT 0x10000u
#define VK_ACCESS_TRANSFER_READ_BIT 0x0800u
#define VK_ACCESS_TRANSFER_WRITE_BIT 0x1000u
#define VK_ACCESS_HOST_READ_BIT 0x2000u
#define VK_ACCESS_HOST_WRITE_BIT 0x4000u
#define VK_ACCESS_MEMORY_READ_BIT 0x8000u
#define VK_ACCESS_MEMORY_WRITE_BIT 0x10000u
#define VK_MAX_PHYSICAL_DEVICE_NAME_SIZE 256
#define VK_MAX_EXTENSION_NAME_SIZE 256
#define VK_UUID_SIZE 16
#define VK_LUID_SIZE 8
#define VK_MAX_MEMORY_TYPES 32
#define VK_MAX_MEMORY_HEAPS 16

typedef struct VkExtent3D {
  uint32_t width, height, depth;
} VkExtent3D;

typedef struct VkApplicationInfo {
  VK_CHAIN;
  const char *pApplicationName;
  uint32_t applicationVersion;
  const char *pEngineName;
  uint32_t engineVersion;
  uint32_t apiVersion;
} VkApplicationInfo;

typedef struct VkInstanceCreateInfo {
  VK_CHAIN;
  VkFlags flags;
  const VkApplicationInfo *pApplicationInfo;
  VK_LAYERS_AND_EXTENSIONS;
} VkInstanceCreateInfo;

/*
** VkPhysicalDeviceProperties: the probe reads only its head; the limits and
** sparse properties that follow are kept as bytes (824 bytes in all on
** x86-64, 8-byte aligned).
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

typedef struct VkMemoryType {
  VkFlags propertyFlags;
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
  VkFlags queueFlags;
  uint32_t queueCount;
  uint32_t timestampValidBits;
  VkExtent3D minImageTransferGranularity;
} VkQueueFamilyProperties;

typedef struct VkExtensionProperties {
  char extensionName[VK_MAX_EXTENSION_NAME_SIZE];
  uint32_t specVersion;
} VkExtensionProperties;

typedef struct VkDeviceQueueCreateInfo {
  VK_CHAIN;
  VkFlags flags;
  uint32_t queueFamilyIndex;
  uint32_t queueCount;
  const float *pQueuePriorities;
} VkDeviceQueueCreateInfo;

typedef struct VkDeviceCreateInfo {
  VK_CHAIN;
  VkFlags flags;
  uint32_t queueCreateInfoCount;
  const VkDeviceQueueCreateInfo *pQueueCreateInfos;
  VK_LAYERS_AND_EXTENSIONS;
  const void *pEnabledFeatures;
} VkDeviceCreateInfo;

typedef struct VkBufferCreateInfo {
  VK_CHAIN;
  VkFlags flags;
  VkDeviceSize size;
  VkFlags usage;
  int32_t sharingMode;
  uint32_t queueFamilyIndexCount;
  const uint32_t *pQueueFamilyIndices;
} VkBufferCreateInfo;

typedef struct VkImageCreateInfo {
  VK_CHAIN;
  VkFlags flags;
  int32_t imageType;
  int32_t format;
  VkExtent3D extent;
  uint32_t mipLevels;
  uint32_t arrayLayers;
  VkFlags samples;
  int32_t tiling;
  VkFlags usage;
  int32_t sharingMode;
  uint32_t queueFamilyIndexCount;
  const uint32_t *pQueueFamilyIndices;
  int32_t initialLayout;
} VkImageCreateInfo;

typedef struct VkExternalMemoryCreateInfo { /* ...Buffer/Image CreateInfo, ExportMemoryAllocateInfo */
  VK_CHAIN;
  VkFlags handleTypes;
} VkExternalMemoryCreateInfo;

typedef struct VkMemoryDedicatedAllocateInfo {
  VK_CHAIN;
  VkImage image;
  VkBuffer buffer;
} VkMemoryDedicatedAllocateInfo;

typedef struct VkMemoryAllocateInfo {
  VK_CHAIN;
  VkDeviceSize allocationSize;
  uint32_t memoryTypeIndex;
} VkMemoryAllocateInfo;

typedef struct VkMemoryRequirements {
  VkDeviceSize size;
  VkDeviceSize alignment;
  uint32_t memoryTypeBits;
} VkMemoryRequirements;

typedef struct VkMemoryGetFdInfoKHR {
  VK_CHAIN;
  VkDeviceMemory memory;
  VkFlags handleType;
} VkMemoryGetFdInfoKHR;

typedef struct VkImageSubresource {
  VkFlags aspectMask;
  uint32_t mipLevel;
  uint32_t arrayLayer;
} VkImageSubresource;

typedef struct VkSubresourceLayout {
  VkDeviceSize offset;
  VkDeviceSize size;
  VkDeviceSize rowPitch;
  VkDeviceSize arrayPitch;
  VkDeviceSize depthPitch;
} VkSubresourceLayout;

typedef struct VkCommandPoolCreateInfo {
  VK_CHAIN;
  VkFlags flags;
  uint32_t queueFamilyIndex;
} VkCommandPoolCreateInfo;

typedef struct VkCommandBufferAllocateInfo {
  VK_CHAIN;
  VkCommandPool commandPool;
  int32_t level;
  uint32_t commandBufferCount;
} VkCommandBufferAllocateInfo;

typedef struct VkCommandBufferBeginInfo {
  VK_CHAIN;
  VkFlags flags;
  const void *pInheritanceInfo;
} VkCommandBufferBeginInfo;

typedef struct VkBufferCopy {
  VkDeviceSize srcOffset;
  VkDeviceSize dstOffset;
  VkDeviceSize size;
} VkBufferCopy;

typedef struct VkMemoryBarrier {
  VK_CHAIN;
  VkFlags srcAccessMask;
  VkFlags dstAccessMask;
} VkMemoryBarrier;

typedef struct VkSubmitInfo {
  VK_CHAIN;
  uint32_t waitSemaphoreCount;
  const VkSemaphore *pWaitSemaphores;
  const VkFlags *pWaitDstStageMask;
  uint32_t commandBufferCount;
  const VkCommandBuffer *pCommandBuffers;
  uint32_t signalSemaphoreCount;
  const VkSemaphore *pSignalSemaphores;
} VkSubmitInfo;

/* Timeline and external semaphores (Vulkan 1.1/1.2 core, VK_KHR_external_semaphore_fd). */
typedef struct VkSemaphoreCreateInfo {
  VK_CHAIN;
  VkFlags flags;
} VkSemaphoreCreateInfo;

typedef struct VkSemaphoreTypeCreateInfo {
  VK_CHAIN;
  int32_t semaphoreType;
  uint64_t initialValue;
} VkSemaphoreTypeCreateInfo;

typedef struct VkExportSemaphoreCreateInfo {
  VK_CHAIN;
  VkFlags handleTypes;
} VkExportSemaphoreCreateInfo;

typedef struct VkSemaphoreGetFdInfoKHR {
  VK_CHAIN;
  VkSemaphore semaphore;
  VkFlags handleType;
} VkSemaphoreGetFdInfoKHR;

typedef struct VkTimelineSemaphoreSubmitInfo {
  VK_CHAIN;
  uint32_t waitSemaphoreValueCount;
  const uint64_t *pWaitSemaphoreValues;
  uint32_t signalSemaphoreValueCount;
  const uint64_t *pSignalSemaphoreValues;
} VkTimelineSemaphoreSubmitInfo;

typedef struct VkSemaphoreWaitInfo {
  VK_CHAIN;
  VkFlags flags;
  uint32_t semaphoreCount;
  const VkSemaphore *pSemaphores;
  const uint64_t *pValues;
} VkSemaphoreWaitInfo;

typedef struct VkSemaphoreSignalInfo {
  VK_CHAIN;
  VkSemaphore semaphore;
  uint64_t value;
} VkSemaphoreSignalInfo;

typedef struct VkPhysicalDeviceExternalSemaphoreInfo {
  VK_CHAIN;
  VkFlags handleType;
} VkPhysicalDeviceExternalSemaphoreInfo;

typedef struct VkExternalSemaphoreProperties {
  VkStructureType sType;
  void *pNext;
  VkFlags exportFromImportedHandleTypes;
  VkFlags compatibleHandleTypes;
  VkFlags externalSemaphoreFeatures;
} VkExternalSemaphoreProperties;

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

typedef PFN_vkVoidFunction (*PFN_vkGetInstanceProcAddr)(VkInstance, const char *);
typedef PFN_vkVoidFunction (*PFN_vkGetDeviceProcAddr)(VkDevice, const char *);
typedef VkResult (*PFN_vkCreateInstance)(const VkInstanceCreateInfo *, const void *, VkInstance *);
typedef void (*PFN_vkDestroyInstance)(VkInstance, const void *);
typedef VkResult (*PFN_vkEnumeratePhysicalDevices)(VkInstance, uint32_t *, VkPhysicalDevice *);
typedef void (*PFN_vkGetPhysicalDeviceProperties2)(VkPhysicalDevice, VkPhysicalDeviceProperties2 *);
typedef void (*PFN_vkGetPhysicalDeviceMemoryProperties)(VkPhysicalDevice,
                                                        VkPhysicalDeviceMemoryProperties *);
typedef void (*PFN_vkGetPhysicalDeviceQueueFamilyProperties)(VkPhysicalDevice, uint32_t *,
                                                             VkQueueFamilyProperties *);
typedef VkResult (*PFN_vkEnumerateDeviceExtensionProperties)(VkPhysicalDevice, const char *,
                                                             uint32_t *, VkExtensionProperties *);
typedef VkResult (*PFN_vkCreateDevice)(VkPhysicalDevice, const VkDeviceCreateInfo *, const void *,
                                       VkDevice *);
typedef void (*PFN_vkDestroyDevice)(VkDevice, const void *);
typedef void (*PFN_vkGetDeviceQueue)(VkDevice, uint32_t, uint32_t, VkQueue *);
typedef VkResult (*PFN_vkCreateBuffer)(VkDevice, const VkBufferCreateInfo *, const void *,
                                       VkBuffer *);
typedef void (*PFN_vkDestroyBuffer)(VkDevice, VkBuffer, const void *);
typedef void (*PFN_vkGetBufferMemoryRequirements)(VkDevice, VkBuffer, VkMemoryRequirements *);
typedef VkResult (*PFN_vkCreateImage)(VkDevice, const VkImageCreateInfo *, const void *,
                                      VkImage *);
typedef void (*PFN_vkDestroyImage)(VkDevice, VkImage, const void *);
typedef void (*PFN_vkGetImageMemoryRequirements)(VkDevice, VkImage, VkMemoryRequirements *);
typedef void (*PFN_vkGetImageSubresourceLayout)(VkDevice, VkImage, const VkImageSubresource *,
                                                VkSubresourceLayout *);
typedef VkResult (*PFN_vkAllocateMemory)(VkDevice, const VkMemoryAllocateInfo *, const void *,
                                         VkDeviceMemory *);
typedef void (*PFN_vkFreeMemory)(VkDevice, VkDeviceMemory, const void *);
typedef VkResult (*PFN_vkBindBufferMemory)(VkDevice, VkBuffer, VkDeviceMemory, VkDeviceSize);
typedef VkResult (*PFN_vkBindImageMemory)(VkDevice, VkImage, VkDeviceMemory, VkDeviceSize);
typedef VkResult (*PFN_vkMapMemory)(VkDevice, VkDeviceMemory, VkDeviceSize, VkDeviceSize, VkFlags,
                                    void **);
typedef void (*PFN_vkUnmapMemory)(VkDevice, VkDeviceMemory);
typedef VkResult (*PFN_vkGetMemoryFdKHR)(VkDevice, const VkMemoryGetFdInfoKHR *, int *);
typedef VkResult (*PFN_vkCreateCommandPool)(VkDevice, const VkCommandPoolCreateInfo *,
                                            const void *, VkCommandPool *);
typedef void (*PFN_vkDestroyCommandPool)(VkDevice, VkCommandPool, const void *);
typedef VkResult (*PFN_vkAllocateCommandBuffers)(VkDevice, const VkCommandBufferAllocateInfo *,
                                                 VkCommandBuffer *);
typedef VkResult (*PFN_vkBeginCommandBuffer)(VkCommandBuffer, const VkCommandBufferBeginInfo *);
typedef VkResult (*PFN_vkEndCommandBuffer)(VkCommandBuffer);
typedef VkResult (*PFN_vkResetCommandBuffer)(VkCommandBuffer, VkFlags);
typedef void (*PFN_vkCmdCopyBuffer)(VkCommandBuffer, VkBuffer, VkBuffer, uint32_t,
                                    const VkBufferCopy *);
typedef void (*PFN_vkCmdPipelineBarrier)(VkCommandBuffer, VkFlags, VkFlags, VkFlags, uint32_t,
                                         const VkMemoryBarrier *, uint32_t, const void *,
                                         uint32_t, const void *);
typedef VkResult (*PFN_vkQueueSubmit)(VkQueue, uint32_t, const VkSubmitInfo *, VkFence);
typedef VkResult (*PFN_vkQueueWaitIdle)(VkQueue);
typedef VkResult (*PFN_vkEnumerateInstanceVersion)(uint32_t *);
typedef void (*PFN_vkGetPhysicalDeviceFeatures2)(VkPhysicalDevice, VkPhysicalDeviceFeatures2 *);
typedef void (*PFN_vkGetPhysicalDeviceExternalSemaphoreProperties)(
    VkPhysicalDevice, const VkPhysicalDeviceExternalSemaphoreInfo *, VkExternalSemaphoreProperties *);
typedef VkResult (*PFN_vkCreateSemaphore)(VkDevice, const VkSemaphoreCreateInfo *, const void *,
                                          VkSemaphore *);
typedef void (*PFN_vkDestroySemaphore)(VkDevice, VkSemaphore, const void *);
typedef VkResult (*PFN_vkGetSemaphoreFdKHR)(VkDevice, const VkSemaphoreGetFdInfoKHR *, int *);
typedef VkResult (*PFN_vkGetSemaphoreCounterValue)(VkDevice, VkSemaphore, uint64_t *);
typedef VkResult (*PFN_vkWaitSemaphores)(VkDevice, const VkSemaphoreWaitInfo *, uint64_t);
typedef VkResult (*PFN_vkSignalSemaphore)(VkDevice, const VkSemaphoreSignalInfo *);

/* --------------------------------------------------------------------- EGL */

typedef void *EGLDisplay;
typedef void *EGLContext;
typedef void *EGLSurface;
typedef void *EGLConfig;
typedef void *EGLDeviceEXT;
typedef int32_t EGLint;
typedef uint32_t EGLBoolean;
typedef uint32_t EGLenum;
typedef intptr_t EGLAttrib;

#define EGL_NO_CONTEXT ((EGLContext)0)
#define EGL_NO_SURFACE ((EGLSurface)0)
#define EGL_NO_DISPLAY ((EGLDisplay)0)
#define EGL_NONE 0x3038
#define EGL_SUCCESS 0x3000
#define EGL_VENDOR 0x3053
#define EGL_VERSION 0x3054
#define EGL_EXTENSIONS 0x3055
#define EGL_SURFACE_TYPE 0x3033
#define EGL_PBUFFER_BIT 0x0001
#define EGL_RENDERABLE_TYPE 0x3040
#define EGL_OPENGL_BIT 0x0008
#define EGL_RED_SIZE 0x3024
#define EGL_GREEN_SIZE 0x3023
#define EGL_BLUE_SIZE 0x3022
#define EGL_ALPHA_SIZE 0x3021
#define EGL_WIDTH 0x3057
#define EGL_HEIGHT 0x3056
#define EGL_OPENGL_API 0x30A2
#define EGL_CONTEXT_MAJOR_VERSION 0x3098
#define EGL_CONTEXT_MINOR_VERSION 0x30FB
#define EGL_PLATFORM_DEVICE_EXT 0x313F
#define EGL_CUDA_DEVICE_NV 0x323A
#define EGL_DRM_DEVICE_FILE_EXT 0x3233

typedef void *(*PFN_eglGetProcAddress)(const char *);
typedef EGLBoolean (*PFN_eglQueryDevicesEXT)(EGLint, EGLDeviceEXT *, EGLint *);
typedef EGLBoolean (*PFN_eglQueryDeviceAttribEXT)(EGLDeviceEXT, EGLint, EGLAttrib *);
typedef const char *(*PFN_eglQueryDeviceStringEXT)(EGLDeviceEXT, EGLint);
typedef EGLDisplay (*PFN_eglGetPlatformDisplayEXT)(EGLenum, void *, const EGLint *);
typedef EGLBoolean (*PFN_eglInitialize)(EGLDisplay, EGLint *, EGLint *);
typedef EGLBoolean (*PFN_eglTerminate)(EGLDisplay);
typedef const char *(*PFN_eglQueryString)(EGLDisplay, EGLint);
typedef EGLBoolean (*PFN_eglBindAPI)(EGLenum);
typedef EGLBoolean (*PFN_eglChooseConfig)(EGLDisplay, const EGLint *, EGLConfig *, EGLint,
                                          EGLint *);
typedef EGLContext (*PFN_eglCreateContext)(EGLDisplay, EGLConfig, EGLContext, const EGLint *);
typedef EGLBoolean (*PFN_eglDestroyContext)(EGLDisplay, EGLContext);
typedef EGLSurface (*PFN_eglCreatePbufferSurface)(EGLDisplay, EGLConfig, const EGLint *);
typedef EGLBoolean (*PFN_eglDestroySurface)(EGLDisplay, EGLSurface);
typedef EGLBoolean (*PFN_eglMakeCurrent)(EGLDisplay, EGLSurface, EGLSurface, EGLContext);
typedef EGLint (*PFN_eglGetError)(void);

/* ---------------------------------------------------------------------- GL */

typedef uint32_t GLenum;
typedef uint32_t GLuint;
typedef int32_t GLint;
typedef int32_t GLsizei;

#define GL_NO_ERROR 0
#define GL_TEXTURE_2D 0x0DE1
#define GL_RGBA 0x1908
#define GL_RGBA8 0x8058
#define GL_UNSIGNED_BYTE 0x1401
#define GL_VENDOR 0x1F00
#define GL_RENDERER 0x1F01
#define GL_VERSION 0x1F02
#define GL_TEXTURE_MIN_FILTER 0x2801
#define GL_TEXTURE_MAG_FILTER 0x2800
#define GL_NEAREST 0x2600
#define GL_PACK_ALIGNMENT 0x0D05
#define GL_UNPACK_ALIGNMENT 0x0CF5
#define GL_TEXTURE_WIDTH 0x1000
#define GL_TEXTURE_HEIGHT 0x1001
#define GL_TEXTURE_INTERNAL_FORMAT 0x1003

typedef const uint8_t *(*PFN_glGetString)(GLenum);
typedef GLenum (*PFN_glGetError)(void);
typedef void (*PFN_glGenTextures)(GLsizei, GLuint *);
typedef void (*PFN_glDeleteTextures)(GLsizei, const GLuint *);
typedef void (*PFN_glBindTexture)(GLenum, GLuint);
typedef void (*PFN_glTexParameteri)(GLenum, GLenum, GLint);
typedef void (*PFN_glTexImage2D)(GLenum, GLint, GLint, GLsizei, GLsizei, GLint, GLenum, GLenum,
                                 const void *);
typedef void (*PFN_glTexSubImage2D)(GLenum, GLint, GLint, GLint, GLsizei, GLsizei, GLenum, GLenum,
                                    const void *);
typedef void (*PFN_glGetTexImage)(GLenum, GLint, GLenum, GLenum, void *);
typedef void (*PFN_glGetTexLevelParameteriv)(GLenum, GLint, GLenum, GLint *);
typedef void (*PFN_glPixelStorei)(GLenum, GLint);
typedef void (*PFN_glFinish)(void);

#endif /* GPURES_GFX_MIN_H */
