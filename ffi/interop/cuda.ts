// VkOpaqueFd and CudaVmmFd frames into CUDA device memory, cached per
// buffer (gpures_cuda_importer_create, gpures_cuda_import), and what a CUDA
// device says about itself. libcuda.so.1 is opened by the C library on first
// use; without it every call here throws UnsupportedError naming it.

import { integerOption, optionsBag, own } from "../table/values.ts";
import { check, native } from "../load/native.ts";
import { InvalidHandleError } from "../errors.ts";
import { GpuResource } from "../kinds/gpu_resource.ts";
import type { DeviceInfo, FormatCap, PointerArg } from "./device.ts";
import {
  decodeDeviceInfo,
  deviceInfoBuffer,
  Importer,
  importerOut,
  pointerArg,
  queryCaps,
} from "./device.ts";
import type { CudaBufferHandle, CudaPtr2D, CudaVmmFd, VkOpaqueFd } from "../gen/variants.ts";
import "../gen/variants.ts"; // registers the classes GpuResource.fromRaw() makes

/** Options of {@link CudaImporter.create}. */
export interface CudaImporterOptions {
  /** The CUDA device ordinal (CUdevice), 0 by default. */
  device?: number;
  /**
   * A CUcontext on that device, kept alive by the caller until the importer
   * closes; by default the device's primary context, retained by the importer.
   */
  context?: Deno.PointerValue | bigint | number;
  /** Imports cached at most (the least recently used go first); 0 or absent: 64. */
  capacity?: number;
}

/** One frame in CUDA: valid while the caller holds the frame. */
export interface CudaImport {
  /** CUdeviceptr of the frame (its offset in the allocation applied). */
  ptr: bigint;
  /** Bytes from `ptr` to the end of the allocation. */
  size: bigint;
  /** The CUexternalMemory the importer owns (0n for a CudaVmmFd, which is mapped, not imported). */
  externalMemory: bigint;
  /**
   * A new handle over `ptr`, the caller's to release: a CudaPtr2D with the
   * frame's planes (rows packed at the format's row bytes), or a
   * CudaBufferHandle for a frame without a standard layout.
   */
  handle: CudaPtr2D | CudaBufferHandle;
  /** True when the import came from the cache. */
  cached: boolean;
}

/** One frame in CUDA as a pointer only ({@link CudaImporter.importPointer}). */
export type CudaPointerImport = Omit<CudaImport, "handle">;

/** Bytes of gpures_cuda_importer_desc and gpures_cuda_imported. */
const DESC_SIZE = 24;
const IMPORTED_SIZE = 40;
const IMPORTED_WITHOUT_HANDLE = 32;
const INT32_MAX = 0x7fffffff;

function uintOption(value: unknown, field: string, max: number): number {
  return integerOption("create a CudaImporter", field, value, max);
}

/**
 * Imports frames into CUDA: a VkOpaqueFd (exported Vulkan memory) by
 * `cuImportExternalMemory` of its opaque fd and
 * `cuExternalMemoryGetMappedBuffer` of the whole allocation, a CudaVmmFd (a
 * `CudaFramePool`'s slot) by `cuMemImportFromShareableHandle` and
 * `cuMemMap` of the whole allocation; made once per buffer and answered from
 * the cache for every later frame of it. A frame whose deviceUuid names
 * another GPU is refused with DeviceMismatchError.
 *
 * @example
 * ```ts ignore
 * using importer = CudaImporter.create({ device: 0 });
 * const { ptr, handle } = importer.import(frame); // frame: a VkOpaqueFd
 * launchMyKernel(ptr);
 * handle.release();
 * ```
 */
export class CudaImporter extends Importer {
  #out = new Uint8Array(IMPORTED_SIZE);
  #view = new DataView(this.#out.buffer);

  private constructor(pointer: Deno.PointerObject) {
    super(pointer);
  }

  /** A new importer on a CUDA device (its primary context, or `context`). */
  static create(options: CudaImporterOptions = {}): CudaImporter {
    optionsBag("create a CudaImporter", options);
    const device = uintOption(own(options, "device"), "device", INT32_MAX);
    const capacity = uintOption(own(options, "capacity"), "capacity", 0xffffffff);
    const context = pointerArg(own(options, "context") as PointerArg, "context");
    const desc = new Uint8Array(DESC_SIZE);
    const view = new DataView(desc.buffer);
    view.setUint32(0, DESC_SIZE, true);
    view.setInt32(8, device, true);
    view.setUint32(12, capacity, true);
    view.setBigUint64(16, BigInt(Deno.UnsafePointer.value(context)), true);
    const out = new BigUint64Array(1);
    return new CudaImporter(importerOut(native().gpures_cuda_importer_create(desc, out), out));
  }

  /** The frame in CUDA, from the cache when its buffer was imported before. */
  import(frame: VkOpaqueFd | CudaVmmFd): CudaImport {
    const imported = this.#import(frame, IMPORTED_SIZE);
    const raw = this.#view.getBigUint64(32, true);
    return { ...imported, handle: GpuResource.fromRaw(raw) as CudaPtr2D | CudaBufferHandle };
  }

  /**
   * The frame in CUDA as a pointer, without a handle to release: the per-frame
   * path of a consumer that launches its own kernels on `ptr`.
   */
  importPointer(frame: VkOpaqueFd | CudaVmmFd): CudaPointerImport {
    return this.#import(frame, IMPORTED_WITHOUT_HANDLE);
  }

  /** One gpures_cuda_import into the out struct, `size` bytes of it (short of `handle`: none). */
  #import(frame: VkOpaqueFd | CudaVmmFd, size: number): CudaPointerImport {
    const view = this.#view;
    view.setUint32(0, size, true);
    check(native().gpures_cuda_import(this.pointer, frame.unsafeHandle, this.#out));
    return {
      ptr: view.getBigUint64(8, true),
      size: view.getBigUint64(16, true),
      externalMemory: view.getBigUint64(24, true),
      cached: view.getUint32(4, true) !== 0,
    };
  }
}

/** What CUDA device `ordinal` imports: every format with a DRM fourcc, LINEAR, as opaque or CUDA VMM fds. */
export function cudaCaps(ordinal = 0): FormatCap[] {
  const device = checkOrdinal(ordinal);
  const s = native();
  return queryCaps((out, capacity, count) => s.gpures_caps_cuda(device, out, capacity, count));
}

/** CUDA device `ordinal`'s name and UUID (the deviceUuid its frames carry). */
export function cudaDeviceInfo(ordinal = 0): DeviceInfo {
  const out = deviceInfoBuffer();
  check(native().gpures_cuda_device_info(checkOrdinal(ordinal), out));
  return decodeDeviceInfo(out);
}

function checkOrdinal(ordinal: number): number {
  if (Number.isInteger(ordinal) && ordinal >= 0 && ordinal <= INT32_MAX) return ordinal;
  throw new InvalidHandleError(
    `Cannot read CUDA device: ordinal must be an integer from 0 to ${INT32_MAX}, not ${
      String(ordinal)
    }`,
    "INVALID_VALUE",
    "ordinal",
  );
}
