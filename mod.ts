/**
 * Zero-copy GPU resource handles for Deno.
 *
 * A handle names one native resource (a Vulkan image, a DMA-BUF, a CUDA
 * pointer, a GL texture, CPU memory, ...), says what it looks like and
 * carries its ownership rules, so pipelines pass frames between native
 * libraries without copying a byte. Run with `--allow-ffi`.
 *
 * @example
 * ```ts
 * import { CpuBytes } from "@gpures/gpures";
 *
 * const pixels = new Uint8Array(1920 * 1080 * 4);
 * using frame = CpuBytes.create({
 *   data: pixels, // aliased, not copied
 *   rowPitch: 1920 * 4,
 *   format: "RgbaU8",
 *   width: 1920,
 *   height: 1080,
 * });
 * using copy = frame.clone();
 * console.log(copy.describe().refcount); // 2
 * ```
 *
 * @module
 */

export { load, type LoadedLibrary, type LoadOptions } from "./ffi/load/load.ts";
export { type CreateOptions, type FdCreateOptions } from "./ffi/kinds/create.ts";
export { type Fence, GpuResource } from "./ffi/kinds/gpu_resource.ts";
export { FdResource } from "./ffi/kinds/fd_resource.ts";
export { SyncPoint, type WaitOptions } from "./ffi/sync/sync_point.ts";
export { pendingSyncWaits } from "./ffi/events/sync_waits.ts";
export * from "./ffi/gen/variants.ts";
export {
  BufferGoneEvent,
  Channel,
  ChannelListener,
  type ChannelResource,
  type ChannelStats,
  type ConnectOptions,
  type DeliveryPolicy,
  FormatChangeEvent,
  type FrameFormat,
  type ReceiveOptions,
  type SubscribeOptions,
  type Subscription,
} from "./ffi/channel/channel.ts";
export {
  type ConsumerStats,
  FrameFanout,
  type FrameFanoutOptions,
  type FrameFanoutStats,
  type JoinOptions,
  type PublishOptions,
} from "./ffi/fanout/frame_fanout.ts";
export {
  type AcquireOptions,
  FramePool,
  type FramePoolOptions,
  type FramePoolStats,
  SlotPool,
  type TryAcquireOptions,
} from "./ffi/frames/frame_pool.ts";
export {
  CudaFramePool,
  type CudaFramePoolOptions,
  type CudaSlot,
} from "./ffi/frames/cuda_frame_pool.ts";
export {
  VulkanFramePool,
  type VulkanFramePoolOptions,
  type VulkanSlot,
} from "./ffi/frames/vulkan_frame_pool.ts";
export { PlaneCache } from "./ffi/frames/plane_cache.ts";
export { FrameQueue } from "./ffi/frames/frame_queue.ts";
export {
  type CodecStats,
  codecStats,
  type EncodedPacket,
  type EncodeOptions,
  FrameDecoder,
  type FrameDecoderOptions,
  FrameEncoder,
  type FrameEncoderOptions,
  isCodecSupported,
} from "./ffi/codec/codec.ts";
export type { FrameMeta, FrameMetaInit } from "./ffi/gen/types.ts";
export { type MapOptions } from "./ffi/map/mapping.ts";
export { liveHandles, liveMappings } from "./ffi/kinds/counts.ts";
export { clockUs } from "./ffi/frames/clock.ts";
export {
  type FrameLayout,
  type LayoutOptions,
  PixelFormat,
  type PixelFormatInfo,
  type PixelFormatTable,
  type PlaneInfo,
  type PlaneLayout,
} from "./ffi/map/pixel_format.ts";
export { type PlanePlacement, type PlaneView, planeViews } from "./ffi/map/planes.ts";
export {
  compareDevices,
  type DeviceId,
  type DeviceIdKind,
  deviceIdString,
  type DeviceInfo,
  deviceOf,
  type FormatCap,
  framePoolCaps,
  type Handle,
  Importer,
  type ImporterStats,
  type MemoryKind,
  MODIFIER_INVALID,
  MODIFIER_LINEAR,
  negotiate,
  type Negotiated,
  type PointerArg,
} from "./ffi/interop/device.ts";
export {
  cudaCaps,
  cudaDeviceInfo,
  type CudaImport,
  CudaImporter,
  type CudaImporterOptions,
  type CudaPointerImport,
} from "./ffi/interop/cuda.ts";
export {
  eglCaps,
  type EglImport,
  EglImporter,
  type EglImporterOptions,
} from "./ffi/interop/egl.ts";
export {
  vulkanCaps,
  vulkanDeviceInfo,
  type VulkanImport,
  VulkanImporter,
  type VulkanImporterOptions,
} from "./ffi/interop/vulkan.ts";
export {
  type ColorMeta,
  FRAME_TO_RGBA_WGSL,
  type FrameColor,
  type FrameSource,
  readRgbaTexture,
  type UploadedFrame,
  type UploadOptions,
  WEBGPU_FRAME_FORMATS,
  webGpuCaps,
  type WebGpuFrameFormat,
  WebGpuFrameUploader,
  type WebGpuFrameUploaderOptions,
  type YuvMatrix,
  yuvToRgbCoefficients,
} from "./ffi/interop/webgpu.ts";
export {
  CancelledError,
  DeviceLostError,
  DeviceMismatchError,
  GpuResourceError,
  InvalidHandleError,
  LibraryLoadError,
  ReleasedError,
  TimeoutError,
  UnsupportedError,
  UnsupportedPlatformError,
  WrongKindError,
} from "./ffi/errors.ts";
export type * from "./ffi/gen/types.ts";
export { CodecMachine, type CodecMessage, type CodecState } from "./ffi/webcodecs/codec_machine.ts";
export { h264AccessUnits } from "./ffi/webcodecs/avc.ts";
export {
  type VideoColorPrimaries,
  VideoColorSpace,
  type VideoColorSpaceInit,
  type VideoMatrixCoefficients,
  type VideoTransferCharacteristics,
} from "./ffi/webcodecs/color_space.ts";
export {
  type DemuxedChunk,
  type DemuxedTrack,
  Demuxer,
  type DemuxerOptions,
} from "./ffi/webcodecs/demuxer.ts";
export {
  EncodedVideoChunk,
  type EncodedVideoChunkInit,
  type EncodedVideoChunkType,
} from "./ffi/webcodecs/encoded_chunk.ts";
export {
  Muxer,
  type MuxerChunkOptions,
  type MuxerOptions,
  type MuxerTrackOptions,
} from "./ffi/webcodecs/muxer.ts";
export {
  type PlaneLayout as VideoFramePlaneLayout,
  VideoFrame,
  type VideoFrameBufferInit,
  type VideoFrameCopyToOptions,
  type VideoFrameInit,
  type VideoFrameRect,
  type VideoPixelFormat,
} from "./ffi/webcodecs/video_frame.ts";
export {
  VideoDecoder,
  type VideoDecoderConfig,
  type VideoDecoderInit,
  type VideoDecoderSupport,
} from "./ffi/webcodecs/video_decoder.ts";
export {
  type EncodedVideoChunkMetadata,
  VideoEncoder,
  type VideoEncoderConfig,
  type VideoEncoderEncodeOptions,
  type VideoEncoderInit,
  type VideoEncoderSupport,
} from "./ffi/webcodecs/video_encoder.ts";
