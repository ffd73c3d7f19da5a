// Frame pools in CUDA memory (native/src/interop/cuda_pool.c): the pool
// semantics of FramePool (acquire, slots home at the last release anywhere,
// sessions, fan-out), each slot a VMM allocation (cuMemCreate) exported as a
// POSIX fd, each frame a CudaVmmFd over that fd. A receiving process maps a
// slot once with its CudaImporter.

import { check, native } from "../load/native.ts";
import { integerOption, own } from "../table/values.ts";
import type { PixelFormatName } from "../gen/types.ts";
import type { CudaVmmFd } from "../gen/variants.ts";
import { type PointerArg, pointerArg } from "../interop/device.ts";
import { cudaDeviceInfo } from "../interop/cuda.ts";
import { poolShape, SlotPool } from "./frame_pool.ts";
import { opaqueLayout } from "./opaque_layout.ts";

const WHAT = "create a CudaFramePool";
const DESC_SIZE = 40;
const SLOT_SIZE = 32;
const INT32_MAX = 0x7fffffff;
const DEFAULT_ROW_ALIGN = 256;

/** What {@link CudaFramePool.create} takes. */
export interface CudaFramePoolOptions {
  /** The CUDA device ordinal (CUdevice), 0 by default. */
  device?: number;
  /**
   * A CUcontext on that device, which must outlive the pool's `close()` (not
   * its frames); by default the device's primary context, retained by the pool.
   */
  context?: PointerArg;
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
}

/** A slot's own CUDA memory, the producer's to write: the pool's, never to be unmapped or freed. */
export interface CudaSlot {
  /** CUdeviceptr of the slot's allocation (plane 0 at offset 0), mapped in the pool's context. */
  ptr: bigint;
  /** Bytes of the allocation (a multiple of the device's granularity). */
  size: bigint;
  /** Its CUmemGenericAllocationHandle. */
  allocation: bigint;
  /** Bytes between rows of plane 0. */
  rowPitch: number;
}

/**
 * A pool of frames in CUDA memory: each slot a VMM allocation pinned on the
 * device and exported as a POSIX fd, handed out as a {@link CudaVmmFd}.
 * Everything a frame pool does, it does: acquire waits while every slot is
 * held, a slot comes home at its frame's last release anywhere, a session
 * sends each slot's fd once and the receiver's `CudaImporter` maps it once.
 * The producer writes a slot through {@link CudaFramePool.slot}'s pointer and
 * orders its GPU writes for the consumer with the frame's acquire fence (or
 * finishes them before the send). A pool on the primary context is closed by
 * the collector if forgotten; one on a caller's context is leaked instead,
 * since that context may be gone. Linux only; needs libcuda.so.1.
 *
 * ```ts ignore
 * using pool = CudaFramePool.create({ format: "NV12", width: 3840, height: 2160, slots: 4 });
 * using frame = await pool.acquire();
 * const { ptr, rowPitch } = pool.slot(frame); // a kernel writes the slot
 * await channel.send(frame);                  // the fd goes once per slot
 * ```
 */
export class CudaFramePool extends SlotPool<CudaVmmFd> {
  readonly #out = new Uint8Array(SLOT_SIZE);
  readonly #view = new DataView(this.#out.buffer);

  /** Bytes between rows of plane 0. */
  get rowPitch(): number {
    return this.layout.planes[0].stride;
  }

  /**
   * Allocates every slot now. Throws InvalidHandleError naming a bad option,
   * UnsupportedError without libcuda or when the device cannot export VMM memory.
   */
  static create(options: CudaFramePoolOptions): CudaFramePool {
    const { made, format } = poolShape(WHAT, options, DEFAULT_ROW_ALIGN);
    const device = integerOption(WHAT, "device", own(options, "device"), INT32_MAX);
    const context = pointerArg(own(options, "context") as PointerArg | undefined, "context");
    const desc = new DataView(new ArrayBuffer(DESC_SIZE));
    [DESC_SIZE, 0, format!, made.width, made.height, made.slots, made.rowAlign]
      .forEach((v, i) => desc.setUint32(4 * i, v, true));
    desc.setInt32(28, device, true);
    desc.setBigUint64(32, context === null ? 0n : BigInt(Deno.UnsafePointer.value(context)), true);
    // Laid out before the native pool exists, so no refusal comes after its memory was made.
    const layout = opaqueLayout(made.format, made.width, made.height, made.rowAlign);
    const out = new BigUint64Array(1);
    check(native().gpures_cuda_pool_create(new Uint8Array(desc.buffer), out));
    // The device the pool just allocated on answers: its id cannot fail where its memory did not.
    const { id } = cudaDeviceInfo(device);
    return new CudaFramePool(Deno.UnsafePointer.create(out[0]), made, layout, context === null, id);
  }

  /**
   * The CUDA memory of the slot `frame` is of, while it is held. Throws
   * InvalidHandleError (field "frame") for a frame not of this pool and
   * ReleasedError once the pool is closed.
   */
  slot(frame: CudaVmmFd): CudaSlot {
    const view = this.#view;
    view.setUint32(0, SLOT_SIZE, true);
    check(
      native().gpures_cuda_pool_objects(
        this.native("find the slot of"),
        frame.unsafeHandle,
        this.#out,
      ),
    );
    return {
      rowPitch: view.getUint32(4, true),
      ptr: view.getBigUint64(8, true),
      size: view.getBigUint64(16, true),
      allocation: view.getBigUint64(24, true),
    };
  }
}
