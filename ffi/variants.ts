// One class per resource kind. Each is its kind's id plus what differs:
// extra inputs (JS buffers, a GPUTexture), fd access, slot release.
// Validation, description and lifetime are shared (gpu_resource.ts, C).

import type * as T from "./_types.ts";
import { addressOf } from "./_codec.ts";
import { GpuResourceError, InvalidHandleError } from "./errors.ts";
import {
  type CreateOptions,
  createResource,
  type FdCreateOptions,
  GpuResource,
  holdingsOf,
  registerKind,
  TOKEN,
} from "./gpu_resource.ts";

type Wire = Record<string, unknown>;
const wire = (desc: object): Wire => desc as Wire;

// ----------------------------------------------------------------- Direct3D

/** An `ID3D11Texture2D` (Windows). */
export class D3D11Texture extends GpuResource<T.D3D11TextureDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 1;
  static {
    registerKind(this);
  }
  /** Wraps a texture; a keep-alive holds it until the last release. */
  static create(desc: T.D3D11TextureDesc, options?: CreateOptions): D3D11Texture {
    return createResource(this, wire(desc), options);
  }
}

/** A 2D texture `ID3D12Resource` (Windows). */
export class D3D12Resource extends GpuResource<T.D3D12ResourceDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 2;
  static {
    registerKind(this);
  }
  /** Wraps a texture resource. */
  static create(desc: T.D3D12ResourceDesc, options?: CreateOptions): D3D12Resource {
    return createResource(this, wire(desc), options);
  }
}

/** A buffer `ID3D12Resource` (Windows). */
export class D3D12BufferHandle extends GpuResource<T.D3D12BufferHandleDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 3;
  static {
    registerKind(this);
  }
  /** Wraps a buffer resource of `size` bytes. */
  static create(desc: T.D3D12BufferHandleDesc, options?: CreateOptions): D3D12BufferHandle {
    return createResource(this, wire(desc), options);
  }
}

// ------------------------------------------------------------------- Vulkan

/** A `VkImage`; a null device means a trusted import. */
export class VkImage extends GpuResource<T.VkImageDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 4;
  static {
    registerKind(this);
  }
  /** Wraps an image. */
  static create(desc: T.VkImageDesc, options?: CreateOptions): VkImage {
    return createResource(this, wire(desc), options);
  }
  /** Tells a ring-pool producer its slot is free: stores `slotRelease.value` into the gate. */
  slotRelease(): void {
    this.slotReleaseOf();
  }
}

/** A `VkBuffer`. */
export class VkBufferHandle extends GpuResource<T.VkBufferHandleDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 5;
  static {
    registerKind(this);
  }
  /** Wraps a buffer of `size` bytes. */
  static create(desc: T.VkBufferHandleDesc, options?: CreateOptions): VkBufferHandle {
    return createResource(this, wire(desc), options);
  }
}

/** Vulkan memory exported as an opaque fd, which the handle owns (not on Windows). */
export class VkOpaqueFd extends GpuResource<T.VkOpaqueFdDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 6;
  static {
    registerKind(this);
  }
  /** Duplicates `desc.fd`, or adopts it with `takeOwnership: true`. */
  static create(desc: T.VkOpaqueFdDesc, options?: FdCreateOptions): VkOpaqueFd {
    return createResource(this, wire(desc), options);
  }
  /** A new close-on-exec duplicate of the memory's fd, for an importer to consume. */
  dupFd(index = 0): number {
    return this.dupFdOf(index);
  }
  /** Tells a ring-pool producer its slot is free. */
  slotRelease(): void {
    this.slotReleaseOf();
  }
}

// --------------------------------------------------------------------- CUDA

/** Pitched CUDA device memory: plane 0 at `ptr`, other planes at byte offsets. */
export class CudaPtr2D extends GpuResource<T.CudaPtr2DDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 7;
  static {
    registerKind(this);
  }
  /** Wraps a `CUdeviceptr` (as a bigint) and its pitch. */
  static create(desc: T.CudaPtr2DDesc, options?: CreateOptions): CudaPtr2D {
    return createResource(this, wire(desc), options);
  }
}

/** Linear CUDA device memory. */
export class CudaBufferHandle extends GpuResource<T.CudaBufferHandleDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 8;
  static {
    registerKind(this);
  }
  /** Wraps a `CUdeviceptr` of `size` bytes. */
  static create(desc: T.CudaBufferHandleDesc, options?: CreateOptions): CudaBufferHandle {
    return createResource(this, wire(desc), options);
  }
}

/** A CUDA surface object (`CUsurfObject`). */
export class CudaSurface extends GpuResource<T.CudaSurfaceDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 9;
  static {
    registerKind(this);
  }
  /** Wraps a surface; `format` is a WebGPU texture format name. */
  static create(desc: T.CudaSurfaceDesc, options?: CreateOptions): CudaSurface {
    return createResource(this, wire(desc), options);
  }
}

// ------------------------------------------------------------------- OpenCL

/** An OpenCL `cl_mem` and the command queue that orders access to it. */
export class OpenClMem extends GpuResource<T.OpenClMemDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 10;
  static {
    registerKind(this);
  }
  /** Wraps a memory object and its queue. */
  static create(desc: T.OpenClMemDesc, options?: CreateOptions): OpenClMem {
    return createResource(this, wire(desc), options);
  }
}

// -------------------------------------------------------------------- Metal

/** An `id<MTLTexture>` (macOS). */
export class MetalTextureHandle extends GpuResource<T.MetalTextureHandleDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 11;
  static {
    registerKind(this);
  }
  /** Wraps a texture. */
  static create(desc: T.MetalTextureHandleDesc, options?: CreateOptions): MetalTextureHandle {
    return createResource(this, wire(desc), options);
  }
}

/** An `id<MTLBuffer>` (macOS). */
export class MetalBufferHandle extends GpuResource<T.MetalBufferHandleDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 12;
  static {
    registerKind(this);
  }
  /** Wraps a buffer. */
  static create(desc: T.MetalBufferHandleDesc, options?: CreateOptions): MetalBufferHandle {
    return createResource(this, wire(desc), options);
  }
}

// ----------------------------------------------------------------------- GL

/** A GL texture name. */
export class GlTextureHandle extends GpuResource<T.GlTextureHandleDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 13;
  static {
    registerKind(this);
  }
  /** Wraps a texture name of a context (the current one when `context` is absent). */
  static create(desc: T.GlTextureHandleDesc, options?: CreateOptions): GlTextureHandle {
    return createResource(this, wire(desc), options);
  }
  /** A `Texture2D` of unspecified format in the current context, without keep-alive. */
  static simple(name: number): GlTextureHandle {
    return this.create({ name, target: "Texture2D", internalFormat: "Unspecified" });
  }
}

/** A GL buffer name. */
export class GlBufferHandle extends GpuResource<T.GlBufferHandleDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 14;
  static {
    registerKind(this);
  }
  /** Wraps a buffer name of a context. */
  static create(desc: T.GlBufferHandleDesc, options?: CreateOptions): GlBufferHandle {
    return createResource(this, wire(desc), options);
  }
  /** An `ArrayBuffer`-target buffer of `size` bytes in the current context. */
  static simple(name: number, size: number | bigint): GlBufferHandle {
    return this.create({ name, target: "ArrayBuffer", size });
  }
}

// ------------------------------------------------------------------- Linux

/** A DMA-BUF: 1 to 4 fds, which the handle owns, and a DRM plane layout (Linux, Android). */
export class DmaBufHandle extends GpuResource<T.DmaBufHandleDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 15;
  static {
    registerKind(this);
  }
  /**
   * Duplicates `desc.fds`, or adopts them with `takeOwnership: true`. When an
   * fd's size can be read, every plane must fit in its object.
   */
  static create(desc: T.DmaBufHandleDesc, options?: FdCreateOptions): DmaBufHandle {
    return createResource(this, wire(desc), options);
  }
  /** A new close-on-exec duplicate of fd `index`, for an importer to consume. */
  dupFd(index = 0): number {
    return this.dupFdOf(index);
  }
}

/** A VA-API surface on a display (Linux). */
export class VaapiSurface extends GpuResource<T.VaapiSurfaceDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 16;
  static {
    registerKind(this);
  }
  /** Wraps a `VASurfaceID` (0 is legal) on a `VADisplay`. */
  static create(desc: T.VaapiSurfaceDesc, options?: CreateOptions): VaapiSurface {
    return createResource(this, wire(desc), options);
  }
}

// --------------------------------------------------------------------- CPU

/** CPU memory: a JS buffer (aliased, never copied), or an address and a size. */
export type BufferLike = ArrayBuffer | ArrayBufferView;

/** {@link CpuBytes.create}'s descriptor: `data`, or `ptr` and `size`. */
export type CpuBytesCreateDesc =
  & Omit<T.CpuBytesDesc, "ptr" | "size">
  & ({ data: BufferLike; ptr?: undefined; size?: undefined } | {
    data?: undefined;
    ptr: T.PointerLike;
    size: bigint | number;
  });

/** One plane of {@link CpuPlanes.create}: `data`, or `ptr` and `size`. */
export type CpuPlaneInput =
  & { rowPitch: number }
  & ({ data: BufferLike; ptr?: undefined; size?: undefined } | {
    data?: undefined;
    ptr: T.PointerLike;
    size: bigint | number;
  });

/** {@link CpuPlanes.create}'s descriptor. */
export interface CpuPlanesCreateDesc {
  /** Pixel format; its plane count must equal `planes.length`. */
  format: T.PixelFormatName | number;
  /** One entry per plane. */
  planes: CpuPlaneInput[];
}

/** The address and size of a JS buffer, which the handle will alias. */
function alias(data: unknown, kind: string, field: string): { ptr: bigint; size: bigint } {
  const buffer = ArrayBuffer.isView(data) ? data.buffer : data;
  if (!(buffer instanceof ArrayBuffer) && !(buffer instanceof SharedArrayBuffer)) {
    throw new InvalidHandleError(
      `Cannot create ${kind}: ${field} must be an ArrayBuffer or a typed array`,
      "INVALID_VALUE",
      field,
    );
  }
  if ((buffer as ArrayBuffer).resizable || (buffer as SharedArrayBuffer).growable) {
    throw new InvalidHandleError(
      `Cannot create ${kind}: ${field} is resizable, so its memory can move`,
      "INVALID_VALUE",
      field,
    );
  }
  const size = ArrayBuffer.isView(data) ? data.byteLength : (buffer as ArrayBuffer).byteLength;
  if (size === 0) {
    throw new InvalidHandleError(`Cannot create ${kind}: ${field} is empty`, "ZERO_SIZE", field);
  }
  const ptr = Deno.UnsafePointer.of(data as BufferSource);
  return { ptr: addressOf(ptr) ?? 0n, size: BigInt(size) };
}

/**
 * One buffer of CPU memory holding a frame. Made from a JS buffer, it aliases
 * the buffer (no copy) and keeps it alive until the last release; do not
 * transfer or detach the buffer meanwhile.
 */
export class CpuBytes extends GpuResource<T.CpuBytesDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 17;
  static {
    registerKind(this);
  }
  /** Wraps `data` (aliased) or `ptr` + `size`; with width and height the frame must fit. */
  static create(desc: CpuBytesCreateDesc, options?: CreateOptions): CpuBytes {
    if (typeof desc !== "object" || desc?.data === undefined) {
      return createResource(this, wire(desc), options);
    }
    const { data, ...rest } = desc;
    return createResource(this, { ...rest, ...alias(data, "CpuBytes", "data") }, options, [data]);
  }
}

/** One CPU buffer per plane, each aliased when made from JS buffers. */
export class CpuPlanes extends GpuResource<T.CpuPlanesDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 18;
  static {
    registerKind(this);
  }
  /** Wraps one buffer per plane; the plane count must be the format's. */
  static create(desc: CpuPlanesCreateDesc, options?: CreateOptions): CpuPlanes {
    if (typeof desc !== "object" || desc === null) {
      return createResource(this, desc as unknown as Wire, options);
    }
    const holds: unknown[] = [];
    const planes = Array.isArray(desc?.planes)
      ? desc.planes.map((p, i) => {
        if (typeof p !== "object" || p === null) return p; // the codec names the field
        if (p.data === undefined) return { data: p.ptr, size: p.size, rowPitch: p.rowPitch };
        holds.push(p.data);
        const { ptr, size } = alias(p.data, "CpuPlanes", `planes[${i}].data`);
        return { data: ptr, size, rowPitch: p.rowPitch };
      })
      : desc?.planes;
    return createResource(this, { ...desc, planes }, options, holds);
  }
}

/** An opaque producer slot, read back through its producer. */
export class CpuSharedSlot extends GpuResource<T.CpuSharedSlotDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 19;
  static {
    registerKind(this);
  }
  /** Describes a slot of `size` bytes. */
  static create(desc: T.CpuSharedSlotDesc, options?: CreateOptions): CpuSharedSlot {
    return createResource(this, wire(desc), options);
  }
}

// ------------------------------------------------------------------- WebGPU

/** {@link WgpuTexture.create}'s descriptor. */
export interface WgpuTextureCreateDesc {
  /** A texture of Deno's WebGPU; held until the last release. */
  texture: GPUTexture;
}

/**
 * A texture of Deno's WebGPU. WebGPU exposes no native pointer, so the handle
 * records the texture's description and this isolate holds the texture.
 */
export class WgpuTexture extends GpuResource<T.WgpuTextureDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 20;
  static {
    registerKind(this);
  }
  /** Wraps a `GPUTexture`. */
  static create(desc: WgpuTextureCreateDesc, options?: CreateOptions): WgpuTexture {
    const texture = desc?.texture;
    const GPUTextureClass =
      (globalThis as { GPUTexture?: abstract new () => GPUTexture }).GPUTexture;
    if (GPUTextureClass && !(texture instanceof GPUTextureClass)) {
      throw new InvalidHandleError(
        "Cannot create WgpuTexture: texture must be a GPUTexture",
        "INVALID_VALUE",
        "texture",
      );
    }
    return createResource(
      this,
      {
        token: TOKEN,
        width: texture.width,
        height: texture.height,
        depthOrArrayLayers: texture.depthOrArrayLayers,
        mipLevelCount: texture.mipLevelCount,
        sampleCount: texture.sampleCount,
        dimension: texture.dimension,
        format: texture.format,
        usage: texture.usage,
      },
      options,
      [texture],
    );
  }

  /** The `GPUTexture`; only in the isolate that created the handle. */
  get texture(): GPUTexture {
    const holds = holdingsOf(this.describe().token);
    if (!holds) {
      throw new GpuResourceError(
        "Cannot read texture of WgpuTexture: the GPUTexture lives in the isolate that created the handle",
        "UNAVAILABLE",
        "texture",
      );
    }
    return holds[0] as GPUTexture;
  }
}
