/*
** gpures_lists.h: the lists every table in gpures is generated from.
**
** Each list is an X-macro: a macro that takes a macro X and applies it to every
** row. A row is written once here; the enums in gpures.h, the name tables, the
** create/clone/describe/release entry points and the C contract tests all
** expand from it. Ids are ABI: never renumber or reuse one.
*/
#ifndef GPURES_LISTS_H
#define GPURES_LISTS_H

/*
** Operating systems, as bits. The names follow Deno.build.os so that the
** TypeScript side and the C side share one vocabulary.
**   X(bit, UPPER, deno_name)
*/
#define GPURES_OS_LIST(X)  \
  X(0, LINUX, linux)       \
  X(1, WINDOWS, windows)   \
  X(2, DARWIN, darwin)     \
  X(3, ANDROID, android)   \
  X(4, FREEBSD, freebsd)   \
  X(5, NETBSD, netbsd)     \
  X(6, OPENBSD, openbsd)   \
  X(7, AIX, aix)           \
  X(8, SOLARIS, solaris)   \
  X(9, ILLUMOS, illumos)

/*
** Status codes returned by every gpures function that can fail.
**   X(code, UPPER, message)
*/
#define GPURES_STATUS_LIST(X)                                             \
  X(0, OK, "success")                                                     \
  X(1, NULL_HANDLE, "a native handle is null")                            \
  X(2, NULL_POINTER, "a pointer is null")                                 \
  X(3, ZERO_SIZE, "a size or extent is zero")                             \
  X(4, INVALID_VALUE, "a value is out of range")                          \
  X(5, WRONG_KIND, "the handle is of another kind")                       \
  X(6, STALE, "handle was released")                                      \
  X(7, UNSUPPORTED_PLATFORM, "the kind does not exist on this platform")  \
  X(8, OUT_OF_MEMORY, "out of memory")                                    \
  X(9, OS_ERROR, "an operating system call failed")                       \
  X(10, BUFFER_TOO_SMALL, "the output buffer is too small")               \
  X(11, ABI_MISMATCH, "the structure does not match this library")       \
  X(12, TIMED_OUT, "the wait timed out")                                  \
  X(13, CANCELLED, "the wait was cancelled")                              \
  X(14, DEVICE_LOST, "the device was lost")                               \
  X(15, UNSUPPORTED, "the operation is not supported for this object")   \
  X(16, DEVICE_MISMATCH, "the object belongs to another device")

/*
** The resource kinds (CudaVmmFd, added later, has the next free id).
**   X(id, UPPER, snake, Name, ownership, platforms)
** ownership: BORROWED (gpures never frees the native object; a keep-alive
** holds it) or OWNED (gpures owns file descriptors and closes them).
** platforms: an expression over GPURES_OS_* bits.
*/
#define GPURES_KIND_LIST(X)                                                                          \
  X(1, D3D11_TEXTURE, d3d11_texture, D3D11Texture, BORROWED, GPURES_OS_WINDOWS)                       \
  X(2, D3D12_RESOURCE, d3d12_resource, D3D12Resource, BORROWED, GPURES_OS_WINDOWS)                    \
  X(3, D3D12_BUFFER_HANDLE, d3d12_buffer_handle, D3D12BufferHandle, BORROWED, GPURES_OS_WINDOWS)      \
  X(4, VK_IMAGE, vk_image, VkImage, BORROWED, GPURES_OS_ALL)                                          \
  X(5, VK_BUFFER_HANDLE, vk_buffer_handle, VkBufferHandle, BORROWED, GPURES_OS_ALL)                   \
  X(6, VK_OPAQUE_FD, vk_opaque_fd, VkOpaqueFd, OWNED, GPURES_OS_ALL & ~GPURES_OS_WINDOWS)             \
  X(7, CUDA_PTR_2D, cuda_ptr_2d, CudaPtr2D, BORROWED, GPURES_OS_LINUX | GPURES_OS_WINDOWS)            \
  X(8, CUDA_BUFFER_HANDLE, cuda_buffer_handle, CudaBufferHandle, BORROWED,                            \
    GPURES_OS_LINUX | GPURES_OS_WINDOWS)                                                              \
  X(9, CUDA_SURFACE, cuda_surface, CudaSurface, BORROWED, GPURES_OS_LINUX | GPURES_OS_WINDOWS)        \
  X(10, OPEN_CL_MEM, open_cl_mem, OpenClMem, BORROWED, GPURES_OS_ALL)                                 \
  X(11, METAL_TEXTURE_HANDLE, metal_texture_handle, MetalTextureHandle, BORROWED, GPURES_OS_DARWIN)   \
  X(12, METAL_BUFFER_HANDLE, metal_buffer_handle, MetalBufferHandle, BORROWED, GPURES_OS_DARWIN)      \
  X(13, GL_TEXTURE_HANDLE, gl_texture_handle, GlTextureHandle, BORROWED, GPURES_OS_ALL)               \
  X(14, GL_BUFFER_HANDLE, gl_buffer_handle, GlBufferHandle, BORROWED, GPURES_OS_ALL)                  \
  X(15, DMA_BUF_HANDLE, dma_buf_handle, DmaBufHandle, OWNED, GPURES_OS_LINUX | GPURES_OS_ANDROID)     \
  X(16, VAAPI_SURFACE, vaapi_surface, VaapiSurface, BORROWED, GPURES_OS_LINUX)                        \
  X(17, CPU_BYTES, cpu_bytes, CpuBytes, BORROWED, GPURES_OS_ALL)                                      \
  X(18, CPU_PLANES, cpu_planes, CpuPlanes, BORROWED, GPURES_OS_ALL)                                   \
  X(19, CPU_SHARED_SLOT, cpu_shared_slot, CpuSharedSlot, BORROWED, GPURES_OS_ALL)                     \
  X(20, WGPU_TEXTURE, wgpu_texture, WgpuTexture, BORROWED, GPURES_OS_ALL)                             \
  X(37, CUDA_VMM_FD, cuda_vmm_fd, CudaVmmFd, OWNED, GPURES_OS_LINUX)

/*
** The sync kinds: SyncPoints, "this work is finished" in one API's terms. They
** are kinds of the same table (create, clone, describe, release, JSON,
** gating), with ids after the resource kinds, and wait with gpures_sync_*.
** "fd" kinds own their fd (closed at the last release) like DmaBufHandle.
**   X(id, UPPER, snake, Name, ownership, platforms)
*/
#define GPURES_SYNC_KIND_LIST(X)                                                                     \
  X(21, VK_SEMAPHORE, vk_semaphore, VkSemaphore, BORROWED, GPURES_OS_ALL)                             \
  X(22, VK_SEMAPHORE_FD, vk_semaphore_fd, VkSemaphoreFd, OWNED, GPURES_OS_ALL & ~GPURES_OS_WINDOWS)   \
  X(23, D3D12_FENCE, d3d12_fence, D3D12Fence, BORROWED, GPURES_OS_WINDOWS)                            \
  X(24, D3D11_KEYED_MUTEX, d3d11_keyed_mutex, D3D11KeyedMutex, BORROWED, GPURES_OS_WINDOWS)           \
  X(25, CUDA_EVENT, cuda_event, CudaEvent, BORROWED, GPURES_OS_LINUX | GPURES_OS_WINDOWS)             \
  X(26, CUDA_CONTEXT_EVENT, cuda_context_event, CudaContextEvent, BORROWED,                           \
    GPURES_OS_LINUX | GPURES_OS_WINDOWS)                                                              \
  X(27, OPEN_CL_EVENT, open_cl_event, OpenClEvent, BORROWED, GPURES_OS_ALL)                           \
  X(28, METAL_EVENT, metal_event, MetalEvent, BORROWED, GPURES_OS_DARWIN)                             \
  X(29, GL_SEMAPHORE, gl_semaphore, GlSemaphore, BORROWED, GPURES_OS_ALL)                             \
  X(30, GL_SYNC, gl_sync, GlSync, BORROWED, GPURES_OS_ALL)                                            \
  X(31, WGPU_SUBMISSION, wgpu_submission, WgpuSubmission, OWNED, GPURES_OS_LINUX | GPURES_OS_ANDROID) \
  X(32, WGPU_DEFERRED, wgpu_deferred, WgpuDeferred, OWNED, GPURES_OS_LINUX | GPURES_OS_ANDROID)       \
  X(33, CPU_FENCE, cpu_fence, CpuFence, OWNED, GPURES_OS_LINUX | GPURES_OS_ANDROID)                   \
  X(34, NOOP_SYNC, noop_sync, NoopSync, BORROWED, GPURES_OS_ALL)                                      \
  X(35, SYNC_FILE, sync_file, SyncFile, OWNED, GPURES_OS_LINUX | GPURES_OS_ANDROID)                   \
  X(36, DRM_SYNCOBJ, drm_syncobj, DrmSyncobj, OWNED, GPURES_OS_LINUX)

/* Every kind: the resource kinds, then the sync kinds. */
#define GPURES_EVERY_KIND_LIST(X) GPURES_KIND_LIST(X) GPURES_SYNC_KIND_LIST(X)

/*
** Enumerations whose values cross the ABI as uint32_t and are shown by name
** (in JSON and in TypeScript).
**   X(id, UPPER, Name)
*/
#define GPURES_ENUM_SET_LIST(X)                      \
  X(1, PIXEL_FORMAT, PixelFormat)                    \
  X(2, GL_TEXTURE_TARGET, GlTextureTarget)           \
  X(3, GL_BUFFER_TARGET, GlBufferTarget)             \
  X(4, GL_INTERNAL_FORMAT, GlInternalFormat)         \
  X(5, WGPU_TEXTURE_FORMAT, WgpuTextureFormat)       \
  X(6, WGPU_TEXTURE_DIMENSION, WgpuTextureDimension) \
  X(7, COLOR_PRIMARIES, ColorPrimaries)              \
  X(8, TRANSFER, TransferCharacteristics)            \
  X(9, MATRIX, MatrixCoefficients)                   \
  X(10, SEMAPHORE_TYPE, SemaphoreType)               \
  X(11, SEMAPHORE_HANDLE_TYPE, SemaphoreHandleType) \
  X(12, DEVICE_ID_KIND, DeviceIdKind)

/*
** Pixel formats: ids and names. Their memory layout (planes, subsampling,
** bytes per sample) is the table in pixel_format.c.
**   X(id, UPPER, Name)
*/
#define GPURES_PIXEL_FORMAT_LIST(X)                                         \
  X(1, NV12, NV12) X(2, NV21, NV21) X(3, P010LE, P010LE) X(4, P016LE, P016LE) \
  X(5, NV16, NV16) X(6, P210LE, P210LE) X(7, P216LE, P216LE)                \
  X(8, P410LE, P410LE) X(9, P416LE, P416LE) X(10, NV24, NV24)               \
  X(11, NV12A, NV12A) X(12, YUV420P, YUV420P) X(13, YUV422P, YUV422P)       \
  X(14, YUV444P, YUV444P) X(15, YUV420P10LE, YUV420P10LE)                   \
  X(16, YUV420P12LE, YUV420P12LE) X(17, YUV420P14LE, YUV420P14LE)           \
  X(18, YUV420P16LE, YUV420P16LE) X(19, YUV422P10LE, YUV422P10LE)           \
  X(20, YUV422P12LE, YUV422P12LE) X(21, YUV422P14LE, YUV422P14LE)           \
  X(22, YUV422P16LE, YUV422P16LE) X(23, YUV444P10LE, YUV444P10LE)           \
  X(24, YUV444P12LE, YUV444P12LE) X(25, YUV444P14LE, YUV444P14LE)           \
  X(26, YUV444P16LE, YUV444P16LE) X(27, YUVA444P10LE, YUVA444P10LE)         \
  X(28, YUVA444P12LE, YUVA444P12LE) X(29, UYVY422, UYVY422)                 \
  X(30, YUYV422, YUYV422) X(31, AYUV64LE, AYUV64LE) X(32, V216, V216)       \
  X(33, Y210LE, Y210LE) X(34, RGBA_U8, RgbaU8) X(35, BGRA_U8, BgraU8)       \
  X(36, RGBX_U8, RgbxU8) X(37, BGRX_U8, BgrxU8) X(38, RGBA_U16, RgbaU16)     \
  X(39, BGRA_U16, BgraU16) X(40, RGBA_F16, RgbaF16) X(41, BGRA_F16, BgraF16) \
  X(42, RGBA_F32, RgbaF32) X(43, BGRA_F32, BgraF32) X(44, RGB10A2, Rgb10A2) \
  X(45, RGB_U16, RgbU16) X(46, R16U, R16U) X(47, R32F, R32F)                \
  X(48, RGBA16U, Rgba16U)

#endif /* GPURES_LISTS_H */
