// The factories that take a device, made with none (null Vulkan and EGL handles, a stand-in
// GPUDevice), for tests of what they make of their options: each checks all of its options
// before it touches the device.

import {
  EglImporter,
  type EglImporterOptions,
  VulkanImporter,
  type VulkanImporterOptions,
  WebGpuFrameUploader,
  type WebGpuFrameUploaderOptions,
} from "../../mod.ts";

/** A GPUDevice as far as WebGpuFrameUploader's options check reads one: its limits. */
export const FAKE_GPU_DEVICE = { limits: { maxTextureDimension2D: 8192 } } as unknown as GPUDevice;

/** VulkanImporter.create with null instance, physical device and device, and `options`. */
export function vulkanImporter(options: Partial<VulkanImporterOptions>): VulkanImporter {
  return VulkanImporter.create({ instance: null, physicalDevice: null, device: null, ...options });
}

/** EglImporter.create with a null display and `options`. */
export function eglImporter(options: Partial<EglImporterOptions>): EglImporter {
  return EglImporter.create({ display: null, ...options });
}

/** A WebGpuFrameUploader of FAKE_GPU_DEVICE with `options`. */
export function webGpuUploader(options: WebGpuFrameUploaderOptions): WebGpuFrameUploader {
  return new WebGpuFrameUploader(FAKE_GPU_DEVICE, options);
}
