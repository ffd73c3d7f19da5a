// DmaBufHandle and VkOpaqueFd frames as Vulkan objects
// (native/src/interop/vulkan.c). An import is VkDeviceMemory with a VkImage
// and/or a VkBuffer bound over it, cached by the frame's buffer: every frame
// of a pool slot gives the same objects, made once.

import { booleanOption, integerOption, optionsBag, own, refuse } from "../table/values.ts";
import { check, native } from "../load/native.ts";
import { InvalidHandleError } from "../errors.ts";
import type { DeviceInfo, FormatCap, Handle, PointerArg } from "./device.ts";
import {
  decodeDeviceInfo,
  deviceInfoBuffer,
  Importer,
  importerOut,
  pointerArg,
  queryCaps,
} from "./device.ts";

/** What {@link VulkanImporter.create} takes. */
export interface VulkanImporterOptions {
  /** The VkInstance. */
  instance: PointerArg;
  /** The VkPhysicalDevice of `device`. */
  physicalDevice: PointerArg;
  /** A VkDevice with VK_KHR_external_memory_fd (and VK_EXT_external_memory_dma_buf for DmaBufHandle). */
  device: PointerArg;
  /** PFN_vkGetInstanceProcAddr; by default the system loader's (libvulkan.so.1). */
  getInstanceProcAddr?: PointerArg;
  /** Imports cached at most (default 64). */
  capacity?: number;
  /** Make a VkImage of the frame's format and layout (default true). */
  image?: boolean;
  /** Make a VkBuffer over the whole of the frame's memory (default false). */
  buffer?: boolean;
  /** VkImageUsageFlags (and the buffer's VkBufferUsageFlags); default sampled + transfer src/dst. */
  usage?: number;
}

/** One frame's Vulkan objects. They are the importer's: use them while you hold the frame. */
export interface VulkanImport {
  /** VkDeviceMemory, one per fd of the frame. */
  memories: bigint[];
  /** The VkImage, or 0n. */
  image: bigint;
  /** The VkBuffer over memories[0], or 0n. */
  buffer: bigint;
  /** Bytes of memories[0]. */
  size: bigint;
  /** Where the image starts in memories[0] (plane 0 of a DmaBufHandle, a VkOpaqueFd's offset). */
  offset: bigint;
  /** The image's VkFormat (0 without an image). */
  vkFormat: number;
  /** Whether it came from the cache. */
  cached: boolean;
}

const DESC_SIZE = 48;
/** The pointer options, by their offset in gpures_vk_importer_desc. */
const POINTERS = [
  [8, "instance"],
  [16, "physicalDevice"],
  [24, "device"],
  [32, "getInstanceProcAddr"],
] as const;
const IMPORTED_SIZE = 80;
const IMPORT_IMAGE = 1;
const IMPORT_BUFFER = 2;

const WHAT = "create a VulkanImporter";

function flag(
  options: VulkanImporterOptions,
  name: "image" | "buffer",
  fallback: boolean,
): boolean {
  return booleanOption(WHAT, name, own(options, name), fallback);
}

function u32Option(value: unknown, field: string): number {
  return integerOption("create a VulkanImporter", field, value, 0xffff_ffff);
}

function address(value: unknown, field: string): bigint {
  const pointer = pointerArg(value as PointerArg | undefined, field);
  return pointer === null ? 0n : BigInt(Deno.UnsafePointer.value(pointer));
}

/**
 * Imports DmaBufHandle frames (a FramePool's memfds where the driver takes
 * them, real dma-bufs) and VkOpaqueFd frames into one VkDevice.
 *
 * ```ts ignore
 * using importer = VulkanImporter.create({ instance, physicalDevice, device });
 * const { image, offset } = importer.import(frame); // the same image for every frame of a slot
 * ```
 */
export class VulkanImporter extends Importer {
  readonly #out = new Uint8Array(IMPORTED_SIZE);
  readonly #view = new DataView(this.#out.buffer);

  private constructor(pointer: Deno.PointerObject) {
    super(pointer);
    this.#view.setUint32(0, IMPORTED_SIZE, true);
  }

  /** Throws InvalidHandleError naming a bad option, UnsupportedError when the device lacks what it needs. */
  static create(options: VulkanImporterOptions): VulkanImporter {
    if (optionsBag(WHAT, options) === undefined) refuse(WHAT, "options", "is missing");
    const image = flag(options, "image", true);
    const buffer = flag(options, "buffer", false);
    const desc = new DataView(new ArrayBuffer(DESC_SIZE));
    desc.setUint32(0, DESC_SIZE, true);
    desc.setUint32(4, (image ? IMPORT_IMAGE : 0) | (buffer ? IMPORT_BUFFER : 0), true);
    for (const [at, name] of POINTERS) {
      desc.setBigUint64(at, address(own(options, name), name), true);
    }
    desc.setUint32(40, u32Option(own(options, "capacity"), "capacity"), true);
    desc.setUint32(44, u32Option(own(options, "usage"), "usage"), true);
    const out = new BigUint64Array(1);
    const status = native().gpures_vk_importer_create(new Uint8Array(desc.buffer), out);
    return new VulkanImporter(importerOut(status, out));
  }

  /**
   * The frame's Vulkan objects: from the cache when its buffer was imported
   * before. Throws WrongKindError for a frame of another kind, ReleasedError
   * for a released one, DeviceMismatchError for a VkOpaqueFd of another
   * device, UnsupportedError for a format or modifier the device refuses,
   * InvalidHandleError naming the plane for a layout it refuses.
   */
  import(frame: Handle): VulkanImport {
    if (typeof frame !== "object" || frame === null || !("unsafeHandle" in frame)) {
      throw new InvalidHandleError("frame must be a gpures resource", "INVALID_VALUE", "frame");
    }
    const view = this.#view;
    check(native().gpures_vk_import(this.pointer, frame.unsafeHandle, this.#out));
    const count = view.getUint32(8, true);
    const memories: bigint[] = [];
    for (let i = 0; i < count; i++) memories.push(view.getBigUint64(16 + 8 * i, true));
    return {
      memories,
      image: view.getBigUint64(48, true),
      buffer: view.getBigUint64(56, true),
      size: view.getBigUint64(64, true),
      offset: view.getBigUint64(72, true),
      vkFormat: view.getUint32(12, true),
      cached: view.getUint32(4, true) === 1,
    };
  }
}

/**
 * What a VkPhysicalDevice can import: a row per (format, modifier) with the
 * memory kinds ("dmaBuf", "opaqueFd"), the largest extent and the row
 * alignment its linear images have (so that a FramePool made with it lays
 * rows out as the driver does).
 */
export function vulkanCaps(
  instance: PointerArg,
  physicalDevice: PointerArg,
  getInstanceProcAddr?: PointerArg,
): FormatCap[] {
  const args = [
    pointerArg(instance, "instance"),
    pointerArg(physicalDevice, "physicalDevice"),
    pointerArg(getInstanceProcAddr, "getInstanceProcAddr"),
  ] as const;
  const s = native();
  return queryCaps((out, capacity, count) => s.gpures_caps_vulkan(...args, out, capacity, count));
}

/** A VkPhysicalDevice's identity (deviceUUID), name and PCI ids. */
export function vulkanDeviceInfo(
  instance: PointerArg,
  physicalDevice: PointerArg,
  getInstanceProcAddr?: PointerArg,
): DeviceInfo {
  const out = deviceInfoBuffer();
  check(
    native().gpures_vk_device_info(
      pointerArg(instance, "instance"),
      pointerArg(physicalDevice, "physicalDevice"),
      pointerArg(getInstanceProcAddr, "getInstanceProcAddr"),
      out,
    ),
  );
  return decodeDeviceInfo(out);
}
