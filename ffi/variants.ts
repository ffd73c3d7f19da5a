// One class per resource kind. Each is its kind's id plus what differs:
// extra inputs (JS buffers, a GPUTexture), fd access, slot release.
// Validation, description and lifetime are shared (gpu_resource.ts, C).

import type * as T from "./_types.ts";
import { addressOf, own } from "./_codec.ts";
import { GpuResourceError, InvalidHandleError } from "./errors.ts";
import { mapHandle, type MapOptions, type Mapping, unmapMapping } from "./_mapping.ts";
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

  #mappings?: Map<number, Mapping>;

  /**
   * CPU access to the memory of fd `index`: an ArrayBuffer over the whole
   * object, `mmap()`ed shared, no copy. Writes through it are the object's;
   * on a real dma-buf the mapping is one `DMA_BUF_IOCTL_SYNC` access window
   * (START here, END at unmap). Mapping the same index again returns the same
   * buffer while this wrapper still holds it.
   *
   * Only memory that cannot shrink under the mapping is mapped: a dma-buf, or
   * a memfd sealed against shrinking (one that allows sealing is sealed
   * here). Anything else is refused unless `options.allowUnsealed` vouches
   * for its producer. So no access through the buffer can raise SIGBUS.
   *
   * The mapping lives exactly as long as the last buffer over it.
   * {@link DmaBufHandle.unmap} and this wrapper's release (or `intoRaw()`)
   * detach the buffer and unmap at once. A buffer moved away first
   * (`transfer()`, `postMessage` with transfer, a BYOB read) takes the
   * mapping along: it ends when that buffer is collected, and `map()` here
   * makes a new one.
   *
   * @example
   * ```ts ignore
   * const pixels = new Uint8Array(frame.map());
   * pixels[0] = 255; // seen by every process that maps the same fd
   * frame.release(); // unmaps: pixels.length is now 0
   * ```
   */
  map(index = 0, options?: MapOptions): ArrayBuffer {
    const existing = this.#mappings?.get(index);
    if (existing && !existing.buffer.detached) return existing.buffer;
    const mapping = mapHandle(this.unsafeHandle, index, this.kind, options);
    (this.#mappings ??= new Map()).set(index, mapping);
    return mapping.buffer;
  }

  /** Ends what {@link DmaBufHandle.map} gave for `index`, or for every index. */
  unmap(index?: number): void {
    if (!this.#mappings) return;
    const errors: unknown[] = [];
    for (const [i, mapping] of [...this.#mappings]) {
      if (index !== undefined && i !== index) continue;
      this.#mappings.delete(i);
      try {
        unmapMapping(mapping);
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length) throw errors[0];
  }

  /** Unmaps what this wrapper mapped, then drops its reference. */
  override release(): void {
    try {
      this.unmap();
    } finally {
      super.release();
    }
  }

  /** Unmaps what this wrapper mapped, then gives the reference away. */
  override intoRaw(): bigint {
    const handle = super.intoRaw();
    this.unmap();
    return handle;
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
  const isView = ArrayBuffer.isView(data);
  const buffer = isView ? data.buffer : data;
  if ((buffer as ArrayBuffer | undefined)?.detached) {
    throw new InvalidHandleError(
      `Cannot create ${kind}: ${field} is detached (its memory was transferred away)`,
      "INVALID_VALUE",
      field,
    );
  }
  // A buffer met before passed the checks below: what it is and whether it can resize never change.
  let base = bases.get(buffer as ArrayBuffer); // undefined for anything never cached, primitives too
  if (base === undefined) {
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
  }
  const size = isView ? data.byteLength : (buffer as ArrayBuffer).byteLength;
  if (size === 0) {
    throw new InvalidHandleError(`Cannot create ${kind}: ${field} is empty`, "ZERO_SIZE", field);
  }
  base ??= baseAddress(buffer as ArrayBuffer);
  const offset = isView ? data.byteOffset : 0;
  return { ptr: base && offset ? base + BigInt(offset) : base, size: BigInt(size) };
}

/**
 * The address of a buffer's first byte, looked up once per buffer:
 * `Deno.UnsafePointer.of` costs hundreds of ns. The memory of a fixed-length
 * buffer never moves; a detached one has no bytes, so alias() refuses it first.
 */
const bases = new WeakMap<ArrayBuffer | SharedArrayBuffer, bigint>();
function baseAddress(buffer: ArrayBuffer | SharedArrayBuffer): bigint {
  const base = addressOf(Deno.UnsafePointer.of(buffer as ArrayBuffer)) ?? 0n;
  if (base !== 0n) bases.set(buffer, base);
  return base;
}

const DATA = ["data"];

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
    if (typeof desc !== "object" || desc === null || own(desc, "data") === undefined) {
      return createResource(this, wire(desc), options);
    }
    const data = own(desc, "data");
    const { ptr, size } = alias(data, "CpuBytes", "data");
    // The wire descriptor field by field: rest/spread copies cost more than the create.
    const rowPitch = own(desc, "rowPitch"), format = own(desc, "format");
    const width = own(desc, "width"), height = own(desc, "height");
    const built = { ptr, size, rowPitch, format, width, height };
    return createResource(this, built, options, [data], DATA, true);
  }
}

const MAX_PLANES = 4;

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
    const holds: unknown[] = [], fields: string[] = [];
    const given = own(desc, "planes");
    if (Array.isArray(given) && given.length > MAX_PLANES) {
      throw new InvalidHandleError(
        `Cannot create CpuPlanes: planes has ${given.length} entries; at most ${MAX_PLANES} are allowed`,
        "INVALID_VALUE",
        "planes",
      );
    }
    const planes = Array.isArray(given)
      ? Array.from(given, (p: CpuPlaneInput, i) => {
        if (typeof p !== "object" || p === null) return p; // the codec names the field
        const data = own(p, "data"), rowPitch = own(p, "rowPitch");
        if (data === undefined) return { data: own(p, "ptr"), size: own(p, "size"), rowPitch };
        holds.push(data);
        fields.push(`planes[${i}].data`);
        const { ptr, size } = alias(data, "CpuPlanes", `planes[${i}].data`);
        return { data: ptr, size, rowPitch };
      })
      : given;
    return createResource(
      this,
      { format: own(desc, "format"), planes },
      options,
      holds,
      fields,
      true,
    );
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

type TextureShape = Pick<
  GPUTexture,
  | "width"
  | "height"
  | "depthOrArrayLayers"
  | "mipLevelCount"
  | "sampleCount"
  | "dimension"
  | "format"
  | "usage"
>;

function readShape(t: GPUTexture): TextureShape {
  return {
    width: t.width,
    height: t.height,
    depthOrArrayLayers: t.depthOrArrayLayers,
    mipLevelCount: t.mipLevelCount,
    sampleCount: t.sampleCount,
    dimension: t.dimension,
    format: t.format,
    usage: t.usage,
  };
}

/**
 * A GPUTexture's attributes, read once per texture: they never change, and
 * each read crosses into the runtime (eight of them cost more than a create).
 */
const shapes = new WeakMap<GPUTexture, TextureShape>();
function shapeOf(texture: GPUTexture): TextureShape {
  let shape = shapes.get(texture);
  if (!shape) shapes.set(texture, shape = readShape(texture));
  return shape;
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
    const texture =
      (desc !== null && typeof desc === "object" ? own(desc, "texture") : undefined) as GPUTexture;
    const GPUTextureClass =
      (globalThis as { GPUTexture?: abstract new () => GPUTexture }).GPUTexture;
    if (GPUTextureClass && !(texture instanceof GPUTextureClass)) {
      throw new InvalidHandleError(
        "Cannot create WgpuTexture: texture must be a GPUTexture",
        "INVALID_VALUE",
        "texture",
      );
    }
    const shape = GPUTextureClass ? shapeOf(texture) : readShape(texture);
    return createResource(
      this,
      {
        token: TOKEN,
        width: shape.width,
        height: shape.height,
        depthOrArrayLayers: shape.depthOrArrayLayers,
        mipLevelCount: shape.mipLevelCount,
        sampleCount: shape.sampleCount,
        dimension: shape.dimension,
        format: shape.format,
        usage: shape.usage,
      },
      options,
      [texture],
      undefined,
      true,
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
