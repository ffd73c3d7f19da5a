// CPU memory kinds: JS buffers aliased (never copied) and held until the
// last release, or an address and a size from native code.

import type * as T from "../gen/types.ts";
import { addressOf, own, ownValue } from "../table/values.ts";
import { type Aliases, type CreateOptions, createResource, registerKind } from "./create.ts";
import { InvalidHandleError } from "../errors.ts";
import { GpuResource } from "./gpu_resource.ts";
import { PixelFormat } from "../map/pixel_format.ts";
import { type PlaneMemory, type PlaneView, viewsOf } from "../map/planes.ts";

type Wire = Record<string, unknown>;
const wire = (desc: object): Wire => desc as Wire;

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
  /** Width in pixels, with height: every plane must then hold its rows. */
  width?: number;
  /** Height in pixels, with width. */
  height?: number;
}

/** The address and size of a JS buffer, which the handle will alias. */
function alias(
  data: unknown,
  kind: string,
  field: string,
): { ptr: bigint; size: bigint; buffer: ArrayBufferLike } {
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
  const ptr = base && offset ? base + BigInt(offset) : base;
  return { ptr, size: BigInt(size), buffer: buffer as ArrayBufferLike };
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

const DATA = ["data"] as const;

/**
 * Where the plane at `address` lies in the JS buffers a handle aliases, or
 * undefined when it is native memory. The field names which buffer ("data",
 * "planes[1].data"): a handle aliases one per field.
 */
function memoryOf(
  aliases: Aliases | undefined,
  field: string,
  address: bigint,
  size: bigint,
): PlaneMemory | undefined {
  const k = aliases ? aliases.fields.indexOf(field) : -1;
  if (k < 0) return undefined;
  const buffer = aliases!.buffers[k] as ArrayBuffer;
  const base = bases.get(buffer) ?? baseAddress(buffer);
  return { buffer, byteOffset: Number(address - base), byteLength: Number(size) };
}

function notJsMemory(kind: string, field: string): InvalidHandleError {
  return new InvalidHandleError(
    `Cannot view planes of ${kind}: ${field} is native memory (an address), not a JS buffer this wrapper holds`,
    "INVALID_VALUE",
    field,
  );
}

function noExtent(kind: string): InvalidHandleError {
  return new InvalidHandleError(
    `Cannot view planes of ${kind}: it was made without width and height`,
    "INVALID_VALUE",
    "width",
  );
}

/**
 * The pitch of plane `i` when plane 0 has `rowPitch`: the contiguous layout
 * CpuBytes checks (gpures_pixel_format_plane_pitch in C).
 */
function contiguousPitch(format: T.PixelFormatName, i: number, rowPitch: number): number {
  const [p0, p] = [0, i].map((k) => PixelFormat.info(format).planes[k]);
  return Math.ceil((rowPitch * p.bytesPerSample * p0.hsub) / (p0.bytesPerSample * p.hsub));
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
    const data = typeof desc === "object" && desc !== null
      ? ownValue(desc.data, desc, "data")
      : undefined;
    if (data === undefined) return createResource(this, wire(desc), options);
    const { ptr, size, buffer } = alias(data, "CpuBytes", "data");
    // The wire descriptor field by field: rest/spread copies cost more than the create.
    const rowPitch = ownValue(desc.rowPitch, desc, "rowPitch");
    const format = ownValue(desc.format, desc, "format");
    const width = ownValue(desc.width, desc, "width"),
      height = ownValue(desc.height, desc, "height");
    const built = { ptr, size, rowPitch, format, width, height };
    return createResource(this, built, options, [data], { buffers: [buffer], fields: DATA }, true);
  }

  /**
   * Typed views of each plane over the JS buffer the handle aliases: plane 0
   * at its start with `rowPitch`, the others following it (the layout create
   * checked against width and height).
   *
   * @example
   * ```ts
   * import { CpuBytes } from "@gpures/gpures";
   * const data = new Uint8Array(64 * 32 * 3 / 2);
   * using frame = CpuBytes.create({ data, rowPitch: 64, format: "NV12", width: 64, height: 32 });
   * const [y, uv] = frame.planes();
   * y.data.fill(16);
   * console.log(uv.width, uv.height, data[0]); // 32 16 16
   * ```
   */
  planes(): PlaneView[] {
    const d = this.describe();
    const memory = memoryOf(this.aliases, "data", d.ptr, d.size);
    if (!memory) throw notJsMemory(this.kind, "data");
    if (!d.width || !d.height) throw noExtent(this.kind);
    const { width, height, rowPitch, format } = d;
    const placed = PixelFormat.info(format).planes.map(() => ({ offset: 0, stride: 0 }));
    for (let i = 0, offset = 0; i < placed.length; i++) {
      const stride = contiguousPitch(format, i, rowPitch);
      placed[i] = { offset, stride };
      offset += stride * PixelFormat.planeExtent(format, i, width, height).height;
    }
    return viewsOf(placed.map(() => memory), format, placed, width, height);
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
    const holds: unknown[] = [], buffers: ArrayBufferLike[] = [], fields: string[] = [];
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
        const field = `planes[${i}].data`;
        const { ptr, size, buffer } = alias(data, "CpuPlanes", field);
        holds.push(data);
        buffers.push(buffer);
        fields.push(field);
        return { data: ptr, size, rowPitch };
      })
      : given;
    return createResource(
      this,
      {
        format: own(desc, "format"),
        planes,
        width: own(desc, "width"),
        height: own(desc, "height"),
      },
      options,
      holds,
      fields.length ? { buffers, fields } : undefined,
      true,
    );
  }

  /**
   * Typed views of each plane over the JS buffer it aliases (every plane
   * must be one, and the handle must have width and height).
   *
   * @example
   * ```ts
   * import { CpuPlanes } from "@gpures/gpures";
   * using frame = CpuPlanes.create({
   *   format: "P010LE",
   *   width: 16,
   *   height: 8,
   *   planes: [{ data: new Uint16Array(16 * 8), rowPitch: 32 }, {
   *     data: new Uint16Array(16 * 4),
   *     rowPitch: 32,
   *   }],
   * });
   * const [y, uv] = frame.planes();
   * console.log(y.data.constructor.name, y.stride, uv.channels); // Uint16Array 16 2
   * ```
   */
  planes(): PlaneView[] {
    const d = this.describe();
    const memories: PlaneMemory[] = [];
    for (const [i, p] of d.planes.entries()) {
      const memory = memoryOf(this.aliases, `planes[${i}].data`, p.data, p.size);
      if (!memory) throw notJsMemory(this.kind, `planes[${i}].data`);
      memories.push(memory);
    }
    if (!d.width || !d.height) throw noExtent(this.kind);
    const placed = d.planes.map((p) => ({ offset: 0, stride: p.rowPitch }));
    return viewsOf(memories, d.format, placed, d.width, d.height);
  }
}
