// The helper's per-test Vulkan context, which both Vulkan test files open: one definition of what it holds and what a clean end is.

import assert from "node:assert/strict";
import { liveHandles } from "../../mod.ts";
import { countOpenFds } from "./libc.ts";
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

/**
 * Runs `fn` in a new context from `make`, then checks that the helper's
 * objects, every gpures handle and every fd the test made are gone.
 */
export async function inContext<C extends HelperContext>(
  make: () => C,
  fn: (ctx: C) => void | Promise<void>,
  fdsWhat = "every fd was closed",
): Promise<void> {
  const handles = liveHandles();
  const fds = countOpenFds();
  const ctx = make();
  try {
    await fn(ctx);
    ctx.assertNothingLive();
  } finally {
    ctx.close();
  }
  assert.ok(liveHandles() <= handles, "every gpures handle was released");
  assert.ok(countOpenFds() <= fds, fdsWhat);
}
