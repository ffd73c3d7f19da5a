// The Vulkan test helper (tests/gpu_helpers/vulkan/gpures_test_vulkan.c) as the
// Deno tests load it: a real Vulkan device (lavapipe here) that makes, exports,
// imports and reads back the objects the tests hand to gpures.

import { helperLib } from "./helper_lib.ts";

export const HELPER: URL = helperLib("libgpures_test_vulkan.so");

export const SYMBOLS = {
  gvk_last_error: { parameters: [], result: "pointer" },
  gvk_open: { parameters: [], result: "pointer" },
  gvk_close: { parameters: ["pointer"], result: "u32" },
  gvk_caps: { parameters: ["pointer"], result: "u32" },
  gvk_device_uuid: { parameters: ["pointer", "buffer"], result: "void" },
  gvk_device_name: { parameters: ["pointer"], result: "pointer" },
  gvk_instance: { parameters: ["pointer"], result: "pointer" },
  gvk_physical_device: { parameters: ["pointer"], result: "pointer" },
  gvk_device: { parameters: ["pointer", "u32"], result: "pointer" },
  gvk_live_objects: { parameters: ["pointer"], result: "u32" },
  gvk_live_memory: { parameters: ["pointer"], result: "u32" },
  gvk_handle_kind: { parameters: ["u64"], result: "u32" },
  gvk_image_create: {
    parameters: ["pointer", "u32", "u32", "buffer", "u64", "buffer"],
    result: "i32",
  },
  gvk_buffer_create: { parameters: ["pointer", "buffer", "u64", "buffer"], result: "i32" },
  gvk_export_create: { parameters: ["pointer", "u32", "u32", "u32", "buffer"], result: "i32" },
  gvk_object_read: { parameters: ["pointer", "u64", "u32", "buffer", "u64"], result: "i32" },
  gvk_object_write: { parameters: ["pointer", "u64", "buffer", "u64"], result: "i32" },
  gvk_object_destroy: { parameters: ["pointer", "u64"], result: "i32" },
  gvk_vk_image_read: { parameters: ["u64", "u32", "buffer", "u64"], result: "i32" },
  gvk_vk_image_write: { parameters: ["u64", "buffer", "u64"], result: "i32" },
  gvk_vk_buffer_read: { parameters: ["u64", "u32", "buffer", "u64"], result: "i32" },
  gvk_vk_buffer_write: { parameters: ["u64", "buffer", "u64"], result: "i32" },
  gvk_import_opaque_fd: { parameters: ["pointer", "u64", "buffer"], result: "i32" },
  gvk_import_dma_buf: { parameters: ["pointer", "u64", "buffer"], result: "i32" },
  gvk_dma_buf_read_plane: {
    parameters: ["pointer", "u64", "u32", "u32", "buffer", "u64"],
    result: "i32",
  },
  gvk_dma_buf_write_plane: {
    parameters: ["pointer", "u64", "u32", "buffer", "u64"],
    result: "i32",
  },
  gvk_image_copy: {
    parameters: ["pointer", "u32", "u64", "u32", "buffer", "buffer", "u64", "u32"],
    result: "i32",
  },
  gvk_buffer_copy: {
    parameters: ["pointer", "u32", "u64", "u64", "buffer", "u64", "u32"],
    result: "i32",
  },
} as const;

export type Helper = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

// gvk_caps() bits.
export const CAP_EXTERNAL_MEMORY_FD = 1;
export const CAP_DMA_BUF_IMPORT = 2;
export const CAP_OPAQUE_FD_IMAGE = 4;

/** Reads a C string the helper returned. */
export function cString(ptr: Deno.PointerValue): string {
  return ptr === null ? "" : Deno.UnsafePointerView.getCString(ptr);
}

/** What the helper found: its symbols and device's caps, or why it cannot run. */
export interface Probe {
  helper?: Helper;
  caps: number;
  /** Why the helper or Vulkan is unusable; undefined when usable. */
  reason?: string;
  device?: string;
}

/** Loads the helper and asks its first device what it can do; `install` says how to get it. */
export function probe(install: string): Probe {
  let helper: Helper;
  try {
    helper = Deno.dlopen(HELPER, SYMBOLS).symbols;
  } catch (e) {
    const why = (e as Error).message.split("\n")[0];
    return { caps: 0, reason: `${HELPER.pathname} cannot be loaded (${why}); ${install}` };
  }
  const ctx = helper.gvk_open();
  if (ctx === null) {
    return { caps: 0, reason: `Vulkan has no usable device: ${cString(helper.gvk_last_error())}` };
  }
  const probed = {
    helper,
    caps: helper.gvk_caps(ctx),
    device: cString(helper.gvk_device_name(ctx)),
  };
  helper.gvk_close(ctx);
  return probed;
}

/** Why a test needing the helper's `caps` bits cannot run here, or undefined when it can. */
export function lacking(probed: Probe, caps: number): string | undefined {
  if (probed.reason) return probed.reason;
  const lacks = (bit: number) => (caps & bit) && !(probed.caps & bit);
  const device = probed.device;
  if (lacks(CAP_EXTERNAL_MEMORY_FD)) return `${device} lacks VK_KHR_external_memory_fd`;
  if (lacks(CAP_OPAQUE_FD_IMAGE)) {
    return `${device} cannot export and import OPAQUE_FD memory for a linear RGBA8 image`;
  }
  if (lacks(CAP_DMA_BUF_IMPORT)) {
    return `${device} cannot import DMA-BUF memory (VK_EXT_external_memory_dma_buf is ` +
      "missing or import-incapable; Mesa 25 lavapipe from bookworm-backports has it)";
  }
  if ((caps & CAP_DMA_BUF_IMPORT) && Deno.build.os !== "linux") {
    return `DMA-BUF import from a memfd needs Linux, not ${Deno.build.os}`;
  }
  return undefined;
}
