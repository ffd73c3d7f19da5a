// The helper's per-test Vulkan context, which both Vulkan test files open: one definition of what it holds and what a clean end is.

import assert from "node:assert/strict";
import { cString, type Helper } from "./vulkan_helper.ts";

/** Throws the helper's last error, naming `what`, when `status` is not 0. */
export function helperCheck(vk: Helper, status: number, what: string): void {
  if (status !== 0) throw new Error(`${what}: ${cString(vk.gvk_last_error())}`);
}

/** One helper context: an instance, a physical device, devices A (0) and B (1) on it. */
export class HelperContext {
  readonly ptr: Deno.PointerValue;
  readonly uuid = new Uint8Array(16);

  constructor(readonly vk: Helper) {
    this.ptr = vk.gvk_open();
    if (this.ptr === null) throw new Error(`gvk_open: ${cString(vk.gvk_last_error())}`);
    vk.gvk_device_uuid(this.ptr, this.uuid);
  }

  get instance(): Deno.PointerValue {
    return this.vk.gvk_instance(this.ptr);
  }

  get physicalDevice(): Deno.PointerValue {
    return this.vk.gvk_physical_device(this.ptr);
  }

  device(which: 0 | 1): Deno.PointerValue {
    return this.vk.gvk_device(this.ptr, which);
  }

  /** Asserts the helper destroyed every object it made and freed every VkDeviceMemory. */
  assertNothingLive(): void {
    assert.equal(this.vk.gvk_live_objects(this.ptr), 0, "every Vulkan object was destroyed");
    assert.equal(this.vk.gvk_live_memory(this.ptr), 0, "every VkDeviceMemory was freed");
  }

  close(): void {
    this.vk.gvk_close(this.ptr);
  }
}
