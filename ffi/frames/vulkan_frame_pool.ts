// Frame pools in exported Vulkan memory (native/src/interop/vulkan_pool.c):
// the pool semantics of FramePool (acquire, slots home at the last release
// anywhere, sessions, fan-out), each slot a VkBuffer over memory exported as
// an opaque fd, each frame a VkOpaqueFd over that fd. A receiving process
// imports a slot once with its VulkanImporter or CudaImporter.

import { check, native } from "../load/native.ts";
import { booleanOption, optionalCount, own, refuse } from "../table/values.ts";
import type { PixelFormatName } from "../gen/types.ts";
import type { VkOpaqueFd } from "../gen/variants.ts";
import { type PointerArg, pointerArg } from "../interop/device.ts";
import { vulkanDeviceInfo } from "../interop/vulkan.ts";
import { poolShape, SlotPool } from "./frame_pool.ts";
import { opaqueLayout } from "./opaque_layout.ts";

const WHAT = "create a VulkanFramePool";
const DESC_SIZE = 64;
const SLOT_SIZE = 40;
const HOST_VISIBLE = 1;
const U32_MAX = 0xffff_ffff;
const DEFAULT_ROW_ALIGN = 256;

/** What {@link VulkanFramePool.create} takes. */
export interface VulkanFramePoolOptions {
  /** The VkInstance. */
  instance: PointerArg;
  /** The VkPhysicalDevice of `device`. */
  physicalDevice: PointerArg;
  /** A VkDevice with VK_KHR_external_memory_fd; it must outlive the pool's `close()`, not its frames. */
  device: PointerArg;
  /** PFN_vkGetInstanceProcAddr; by default the system loader's (libvulkan.so.1). */
  getInstanceProcAddr?: PointerArg;
  /** Any pixel format: a slot holds its planes one after another, rows `rowPitch` apart. */
  format: PixelFormatName;
  /** Frame width in pixels, from 1. */
  width: number;
  /** Frame height in pixels, from 1. */
  height: number;
  /** Frames the pool holds, 1 to 256. */
  slots: number;
  /** Rows of plane 0 padded to it: a power of two up to 4096 (default 256). */
  rowAlign?: number;
  /** Memory the host can map (vkMapMemory) instead of device-local memory (default false). */
  hostVisible?: boolean;
  /** The buffers' VkBufferUsageFlags (default TRANSFER_SRC | TRANSFER_DST | STORAGE). */
  usage?: number;
}

/** A slot's own Vulkan objects, the producer's to write through: the pool's, never to be freed. */
export interface VulkanSlot {
  /** VkDeviceMemory of the slot. */
  memory: bigint;
  /** VkBuffer bound over all of `memory`. */
  buffer: bigint;
  /** Bytes of `memory`. */
  size: bigint;
  /** Its memory type. */
  memoryTypeIndex: number;
  /** Bytes between rows of plane 0. */
  rowPitch: number;
}

function address(value: unknown, field: string): bigint {
  const pointer = pointerArg(value as PointerArg | undefined, field);
  if (pointer === null) refuse(WHAT, field, "is missing");
  return BigInt(Deno.UnsafePointer.value(pointer));
}

/**
 * A pool of frames in exported Vulkan memory: each slot a VkBuffer over
 * memory allocated exportable as an opaque fd, handed out as a
 * {@link VkOpaqueFd}. Everything a frame pool does, it does: acquire
 * waits while every slot is held, a slot comes home at its frame's last
 * release anywhere, a session sends each slot's fd once and the receiver's
 * `VulkanImporter` (or `CudaImporter`) imports it once. Close it before the
 * VkDevice goes (a pool the collector finds unclosed is leaked, never freed
 * against a device that may be gone). The producer writes
 * a slot through {@link VulkanFramePool.slot}'s objects and orders its GPU
 * writes for the consumer with the frame's fences. Linux only.
 *
 * ```ts ignore
 * using pool = VulkanFramePool.create({ instance, physicalDevice, device, format: "RgbaU8", width: 3840, height: 2160, slots: 4 });
 * using frame = await pool.acquire();
 * const { buffer } = pool.slot(frame); // record a copy or a compute dispatch into it
 * await channel.send(frame);           // the fd goes once per slot
 * ```
 */
export class VulkanFramePool extends SlotPool<VkOpaqueFd> {
  readonly #out = new Uint8Array(SLOT_SIZE);
  readonly #view = new DataView(this.#out.buffer);

  /** Bytes between rows of plane 0. */
  get rowPitch(): number {
    return this.layout.planes[0].stride;
  }

  /**
   * Allocates every slot now. Throws InvalidHandleError naming a bad option,
   * UnsupportedError when the device cannot export such memory.
   */
  static create(options: VulkanFramePoolOptions): VulkanFramePool {
    const { made, format } = poolShape(WHAT, options, DEFAULT_ROW_ALIGN);
    const host = booleanOption(WHAT, "hostVisible", own(options, "hostVisible"), false);
    const usage = optionalCount(WHAT, "usage", own(options, "usage"), 0, U32_MAX, 0);
    const desc = new DataView(new ArrayBuffer(DESC_SIZE));
    [
      DESC_SIZE,
      host ? HOST_VISIBLE : 0,
      format!,
      made.width,
      made.height,
      made.slots,
      made.rowAlign,
      usage,
    ]
      .forEach((v, i) => desc.setUint32(4 * i, v, true));
    desc.setBigUint64(32, address(own(options, "instance"), "instance"), true);
    desc.setBigUint64(40, address(own(options, "physicalDevice"), "physicalDevice"), true);
    desc.setBigUint64(48, address(own(options, "device"), "device"), true);
    const gipa = pointerArg(
      own(options, "getInstanceProcAddr") as PointerArg | undefined,
      "getInstanceProcAddr",
    );
    desc.setBigUint64(56, gipa === null ? 0n : BigInt(Deno.UnsafePointer.value(gipa)), true);
    // Laid out before the native pool exists, so no refusal comes after its memory was made.
    const layout = opaqueLayout(made.format, made.width, made.height, made.rowAlign);
    const { id } = vulkanDeviceInfo(
      own(options, "instance") as PointerArg,
      own(options, "physicalDevice") as PointerArg,
      gipa ?? undefined,
    );
    const out = new BigUint64Array(1);
    check(native().gpures_vk_pool_create(new Uint8Array(desc.buffer), out));
    // Never closed by the collector: its close frees Vulkan objects of a device that may be gone.
    return new VulkanFramePool(Deno.UnsafePointer.create(out[0]), made, layout, false, id);
  }

  /**
   * The Vulkan objects of the slot `frame` is of, while it is held. Throws
   * InvalidHandleError (field "frame") for a frame not of this pool and
   * ReleasedError once the pool is closed.
   */
  slot(frame: VkOpaqueFd): VulkanSlot {
    const view = this.#view;
    view.setUint32(0, SLOT_SIZE, true);
    check(
      native().gpures_vk_pool_objects(
        this.native("find the slot of"),
        frame.unsafeHandle,
        this.#out,
      ),
    );
    return {
      memoryTypeIndex: view.getUint32(4, true),
      memory: view.getBigUint64(8, true),
      buffer: view.getBigUint64(16, true),
      size: view.getBigUint64(24, true),
      rowPitch: view.getUint32(32, true),
    };
  }
}
