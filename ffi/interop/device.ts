// Which device a handle belongs to, what a consumer can import,
// the negotiation between a producer and a consumer, and the base of the
// importers (vulkan.ts, egl.ts, cuda.ts beside this file), whose
// imports the C library caches by buffer identity.

import { check, native } from "../load/native.ts";
import type { DeviceIdKindName, PixelFormatName } from "../gen/types.ts";
import { enumName, enumValue } from "../table/values.ts";
import { InvalidHandleError, ReleasedError } from "../errors.ts";
import { PixelFormat, type PlaneLayout } from "../map/pixel_format.ts";

/** What a {@link DeviceId}'s bytes are (the library's DeviceIdKind enumeration). */
export type DeviceIdKind = DeviceIdKindName;

const DEVICE_ID_KIND_SET = 12;

/**
 * The device a handle's memory or work lives on. Vulkan and CUDA name a GPU by
 * the same UUID, so a `vulkanUuid` and a `cudaUuid` compare by their bytes.
 */
export interface DeviceId {
  /** What the bytes are; "none" when the handle names no device (a dma-buf: any importer). */
  readonly kind: DeviceIdKind;
  /** 16 bytes: a UUID; a LUID or registry id in the first 8 (little-endian); OpenCL platform then device. */
  readonly bytes: Uint8Array;
}

/** What a consumer says about its device. */
export interface DeviceInfo {
  /** Its identity, as frames are matched against it. */
  id: DeviceId;
  /** "NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)". */
  name: string;
  /** PCI vendor id, or 0. */
  vendorId: number;
  /** PCI device id, or 0. */
  deviceId: number;
  /** The adapter's LUID (Windows), when the API gives one. */
  luid?: Uint8Array;
}

/** Any handle: a resource (a frame) or a SyncPoint. */
export interface Handle {
  /** The raw handle, as every resource and SyncPoint has it. */
  readonly unsafeHandle: bigint;
}

const DEVICE_ID_SIZE = 24;

function decodeDeviceId(view: DataView, at: number): DeviceId {
  const kind = (enumName(DEVICE_ID_KIND_SET, view.getUint32(at, true)) ?? "none") as DeviceIdKind;
  const bytes = new Uint8Array(
    view.buffer.slice(view.byteOffset + at + 8, view.byteOffset + at + 24),
  );
  return { kind, bytes };
}

/** A DeviceId as a gpures_device_id (24 bytes); InvalidHandleError naming `field` for a malformed one. */
export function encodeDeviceId(id: DeviceId, field = "deviceId"): Uint8Array {
  const out = new Uint8Array(DEVICE_ID_SIZE);
  const object = typeof id === "object" && id !== null;
  const kind = object ? enumValue(DEVICE_ID_KIND_SET, id.kind) : undefined;
  if (kind === undefined || !(id.bytes instanceof Uint8Array) || id.bytes.length !== 16) {
    throw new InvalidHandleError(
      `A DeviceId has a DeviceIdKind ("vulkanUuid", "cudaUuid", ...) and 16 bytes`,
      "INVALID_VALUE",
      field,
    );
  }
  new DataView(out.buffer).setUint32(0, kind, true);
  out.set(id.bytes, 8);
  return out;
}

/**
 * The device of a handle, from the fields its kind marks as its identity
 * (`deviceUuid`, `luid`, `registryId`, an OpenCL queue's device).
 *
 * @example
 * ```ts ignore
 * const id = deviceOf(frame);
 * if (compareDevices(id, importer.device.id) === "different") reroute(frame);
 * ```
 */
export function deviceOf(handle: Handle): DeviceId {
  const out = new Uint8Array(DEVICE_ID_SIZE);
  check(native().gpures_device_of(handle.unsafeHandle, out));
  return decodeDeviceId(new DataView(out.buffer), 0);
}

/**
 * Whether two ids name one device: "unknown" when either names none, or they
 * name devices in different terms (a LUID against a UUID).
 */
export function compareDevices(a: DeviceId, b: DeviceId): "same" | "different" | "unknown" {
  const answer = native().gpures_device_compare(encodeDeviceId(a), encodeDeviceId(b));
  return answer === 1 ? "same" : answer === 0 ? "different" : "unknown";
}

/** `kind:hex` (UUIDs in their 8-4-4-4-12 form), for logs and cache keys. */
export function deviceIdString(id: DeviceId): string {
  const hex = Array.from(id.bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  if (id.kind !== "vulkanUuid" && id.kind !== "cudaUuid") return `${id.kind}:${hex}`;
  const parts = [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20)];
  return `uuid:${parts.join("-")}-${hex.slice(20)}`;
}

/** Bytes of gpures_device_info. */
export const DEVICE_INFO_SIZE = 304;

/** A gpures_device_info struct to fill (its struct_size set). */
export function deviceInfoBuffer(): Uint8Array {
  const out = new Uint8Array(DEVICE_INFO_SIZE);
  new DataView(out.buffer).setUint32(0, DEVICE_INFO_SIZE, true);
  return out;
}

/** Reads a filled gpures_device_info. */
export function decodeDeviceInfo(buf: Uint8Array): DeviceInfo {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const name = buf.subarray(48, 304);
  const end = name.indexOf(0);
  const info: DeviceInfo = {
    id: decodeDeviceId(view, 16),
    name: new TextDecoder().decode(name.subarray(0, end < 0 ? name.length : end)),
    vendorId: view.getUint32(4, true),
    deviceId: view.getUint32(8, true),
  };
  if (view.getUint32(12, true)) info.luid = buf.slice(40, 48);
  return info;
}

// ------------------------------------------------------------ capabilities

/** The kinds of memory a frame can travel in. */
export type MemoryKind = "dmaBuf" | "opaqueFd" | "host" | "cudaVmmFd";

const MEMORY_BITS: Record<MemoryKind, number> = { dmaBuf: 1, opaqueFd: 2, host: 4, cudaVmmFd: 8 };

/** DRM_FORMAT_MOD_LINEAR. */
export const MODIFIER_LINEAR = 0n;
/** DRM_FORMAT_MOD_INVALID: the driver's implicit choice. */
export const MODIFIER_INVALID = 0x00ffffffffffffffn;

/** One format in one modifier that a producer makes or a consumer imports. */
export interface FormatCap {
  /** The pixel format. */
  format: PixelFormatName;
  /** DRM format modifier. */
  modifier: bigint;
  /** The memory it can come in. */
  memory: MemoryKind[];
  /** Largest width, 0 when not known. */
  maxWidth: number;
  /** Largest height, 0 when not known. */
  maxHeight: number;
  /** Row pitch and plane offset alignment it needs (a power of two; 1: any). */
  rowAlign: number;
  /** EGL: only as GL_TEXTURE_EXTERNAL_OES (sampled as RGB). */
  externalOnly: boolean;
}

/** Bytes of gpures_format_cap. */
export const FORMAT_CAP_SIZE = 32;

function memoryBits(memory: readonly MemoryKind[], field: string): number {
  let bits = 0;
  for (const m of memory) {
    const bit = MEMORY_BITS[m];
    if (!bit) {
      throw new InvalidHandleError(
        `${field} holds "${m}"; memory kinds are dmaBuf, opaqueFd, cudaVmmFd and host`,
        "INVALID_VALUE",
        field,
      );
    }
    bits |= bit;
  }
  return bits;
}

/** gpures_format_cap rows of `caps`. */
export function encodeCaps(caps: readonly FormatCap[], field: string): Uint8Array {
  const out = new Uint8Array(Math.max(1, caps.length) * FORMAT_CAP_SIZE);
  const view = new DataView(out.buffer);
  caps.forEach((cap, i) => {
    const at = i * FORMAT_CAP_SIZE;
    view.setUint32(at, PixelFormat.info(cap.format).id, true);
    view.setUint32(at + 4, memoryBits(cap.memory, `${field}[${i}].memory`), true);
    view.setBigUint64(at + 8, BigInt.asUintN(64, cap.modifier), true);
    view.setUint32(at + 16, cap.maxWidth >>> 0, true);
    view.setUint32(at + 20, cap.maxHeight >>> 0, true);
    view.setUint32(at + 24, cap.rowAlign >>> 0, true);
    view.setUint32(at + 28, cap.externalOnly ? 1 : 0, true);
  });
  return out;
}

/** Reads `count` gpures_format_cap rows. */
export function decodeCaps(buf: Uint8Array, count: number): FormatCap[] {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const caps: FormatCap[] = [];
  for (let i = 0; i < count; i++) {
    const at = i * FORMAT_CAP_SIZE;
    const bits = view.getUint32(at + 4, true);
    caps.push({
      format: PixelFormat.info(view.getUint32(at, true)).name,
      modifier: view.getBigUint64(at + 8, true),
      memory: (Object.keys(MEMORY_BITS) as MemoryKind[]).filter((m) => bits & MEMORY_BITS[m]),
      maxWidth: view.getUint32(at + 16, true),
      maxHeight: view.getUint32(at + 20, true),
      rowAlign: view.getUint32(at + 24, true),
      externalOnly: (view.getUint32(at + 28, true) & 1) !== 0,
    });
  }
  return caps;
}

/**
 * Runs a capability query of the C library's shape (rows, capacity, count),
 * growing the buffer once when the rows do not fit.
 */
export function queryCaps(
  query: (out: Uint8Array, capacity: number, count: Uint32Array) => number,
): FormatCap[] {
  const count = new Uint32Array(1);
  let capacity = 256;
  for (;;) {
    const out = new Uint8Array(capacity * FORMAT_CAP_SIZE);
    const status = query(out, capacity, count);
    if (status === 10 /* BUFFER_TOO_SMALL */ && count[0] > capacity) {
      capacity = count[0];
      continue;
    }
    check(status);
    return decodeCaps(out, count[0]);
  }
}

/** What a {@link FramePool} makes: every format with a DRM fourcc, LINEAR, in a dma-buf or mapped. */
export function framePoolCaps(): FormatCap[] {
  const s = native();
  return queryCaps((out, capacity, count) => s.gpures_caps_pool(out, capacity, count));
}

/** The result of {@link negotiate}. */
export interface Negotiated {
  /** The format both sides take. */
  format: PixelFormatName;
  /** Its modifier. */
  modifier: bigint;
  /** The memory that copies least of those both take. */
  memory: MemoryKind;
  /** The larger of the two sides' alignments. */
  rowAlign: number;
  /** The extent asked for. */
  width: number;
  /** The extent asked for. */
  height: number;
  /** LINEAR: the planes of one buffer; other modifiers: [] (the allocator lays them out). */
  planes: PlaneLayout[];
  /** LINEAR: bytes of one buffer; else 0. */
  size: number;
  /** The producer's row chosen. */
  producerIndex: number;
  /** The consumer's row chosen. */
  consumerIndex: number;
}

const NEGOTIATED_SIZE = 184;

/**
 * Picks the first of the producer's rows (its order of preference) that a
 * consumer row takes: the same format and modifier, a memory kind in common,
 * the extent within both sides' limits. Throws {@link UnsupportedError} saying
 * why for each format when none fits. A LINEAR result in `dmaBuf` or `host`
 * memory is what a {@link FramePool} allocates: `{format, width, height, rowAlign}`.
 *
 * @example
 * ```ts ignore
 * const pick = negotiate(framePoolCaps(), vulkanCaps(instance, physicalDevice), {
 *   width: 1920,
 *   height: 1080,
 * });
 * const pool = FramePool.create({ ...pick, slots: 4 });
 * ```
 */
export function negotiate(
  producer: readonly FormatCap[],
  consumer: readonly FormatCap[],
  extent: { width: number; height: number },
): Negotiated {
  return negotiated((out) =>
    native().gpures_negotiate(
      encodeCaps(producer, "producer"),
      producer.length,
      encodeCaps(consumer, "consumer"),
      consumer.length,
      extent.width >>> 0,
      extent.height >>> 0,
      out,
    )
  );
}

/** Runs a call that fills a gpures_negotiated (`out`), and reads what it chose. */
export function negotiated(call: (out: Uint8Array) => number): Negotiated {
  const out = new Uint8Array(NEGOTIATED_SIZE);
  const view = new DataView(out.buffer);
  view.setUint32(0, NEGOTIATED_SIZE, true);
  check(call(out));
  return decodeNegotiated(view);
}

/** A gpures_negotiated as {@link negotiate} returns it. */
function decodeNegotiated(view: DataView): Negotiated {
  const numPlanes = view.getUint32(40, true);
  const planes: PlaneLayout[] = [];
  for (let i = 0; i < numPlanes; i++) {
    const at = 48 + i * 32;
    planes.push({
      offset: Number(view.getBigUint64(at, true)),
      size: Number(view.getBigUint64(at + 8, true)),
      stride: view.getUint32(at + 16, true),
      width: view.getUint32(at + 20, true),
      height: view.getUint32(at + 24, true),
    });
  }
  const memory = view.getUint32(16, true);
  return {
    format: PixelFormat.info(view.getUint32(4, true)).name,
    modifier: view.getBigUint64(8, true),
    memory: (Object.keys(MEMORY_BITS) as MemoryKind[]).find((m) => memory === MEMORY_BITS[m])!,
    rowAlign: view.getUint32(20, true),
    width: view.getUint32(24, true),
    height: view.getUint32(28, true),
    planes,
    size: Number(view.getBigUint64(176, true)),
    producerIndex: view.getUint32(32, true),
    consumerIndex: view.getUint32(36, true),
  };
}

// --------------------------------------------------------------- importers

/** What an importer has done, as counts. */
export interface ImporterStats {
  /** Imports held now. */
  cached: number;
  /** Imports made (cache misses). */
  imports: number;
  /** Imports answered from the cache. */
  hits: number;
  /** Imports freed: `imports === freed + cached` always. */
  freed: number;
  /** Imports the API refused. */
  failed: number;
}

/** A native object from another library: a pointer, or its address as a bigint or number. */
export type PointerArg = Deno.PointerValue | bigint | number;

/**
 * A user's pointer (a Vulkan or EGL object): a `Deno.PointerValue`, or its
 * address as a bigint or number. `null` and 0 pass as null.
 */
export function pointerArg(
  value: PointerArg | undefined,
  field: string,
): Deno.PointerValue {
  if (value === null || value === undefined) return null;
  if (typeof value === "object") return value;
  const address = typeof value === "bigint"
    ? value
    : Number.isSafeInteger(value)
    ? BigInt(value)
    : -1n;
  if (address < 0n || address >= 1n << 64n) {
    throw new InvalidHandleError(
      `${field} must be a pointer, or its address as a bigint or a safe integer`,
      "INVALID_VALUE",
      field,
    );
  }
  return Deno.UnsafePointer.create(address);
}

/** Checks a create call's status and returns the new importer from its out-parameter. */
export function importerOut(status: number, out: BigUint64Array): Deno.PointerObject {
  check(status);
  return Deno.UnsafePointer.create(out[0])!;
}

/**
 * What every importer shares: its counts, its device, forgetting one frame's
 * import, and closing. Imports are cached by the frame's buffer identity (a
 * pool slot's, a session's buffer, else the fds' files) and freed when the
 * buffer goes away, at the importer's next call.
 */
export abstract class Importer {
  #pointer: Deno.PointerObject | null;
  /** The counts as they were at close(); the C importer is freed since. */
  #lastStats: ImporterStats | undefined;

  /** Takes ownership of a created importer. */
  protected constructor(pointer: Deno.PointerObject) {
    this.#pointer = pointer;
  }

  /** The C importer; throws ReleasedError (field "importer") once closed. */
  protected get pointer(): Deno.PointerObject {
    if (!this.#pointer) {
      throw new ReleasedError(`The ${this.constructor.name} was closed`, "STALE", "importer");
    }
    return this.#pointer;
  }

  /** Whether {@link Importer.close} was called. */
  get closed(): boolean {
    return this.#pointer === null;
  }

  /** Its counts now; after {@link Importer.close}, the last ones (see there). */
  get stats(): ImporterStats {
    return this.#lastStats ? { ...this.#lastStats } : this.#readStats();
  }

  #readStats(): ImporterStats {
    const out = new Uint8Array(40);
    const view = new DataView(out.buffer);
    view.setUint32(0, 40, true);
    check(native().gpures_importer_stats_get(this.pointer, out));
    return {
      cached: view.getUint32(4, true),
      imports: Number(view.getBigUint64(8, true)),
      hits: Number(view.getBigUint64(16, true)),
      freed: Number(view.getBigUint64(24, true)),
      failed: Number(view.getBigUint64(32, true)),
    };
  }

  /** The device frames are matched against. */
  get device(): DeviceInfo {
    const out = deviceInfoBuffer();
    check(native().gpures_importer_device(this.pointer, out));
    return decodeDeviceInfo(out);
  }

  /** Frees the frame's cached import now, if there is one. */
  forget(frame: Handle): void {
    check(native().gpures_importer_forget(this.pointer, frame.unsafeHandle));
  }

  /** Frees the imports whose buffer went away (every import does this first). */
  collect(): void {
    check(native().gpures_importer_collect(this.pointer));
  }

  /**
   * Frees every import and the importer. Idempotent. Afterwards `closed` is
   * true, `stats` keeps the last counts (the imports this close freed
   * counted in `freed`, none `cached`), and everything else throws
   * ReleasedError (field "importer").
   */
  close(): void {
    if (!this.#pointer) return;
    try {
      const last = this.#readStats();
      // The close frees every import still cached: count them as freed (imports === freed + cached).
      this.#lastStats = { ...last, cached: 0, freed: last.freed + last.cached };
    } catch {
      // counts that cannot be read do not keep the importer open; stats then throw
    }
    const pointer = this.#pointer;
    this.#pointer = null;
    check(native().gpures_importer_destroy(pointer));
  }

  /** `using importer = ...` closes it. */
  [Symbol.dispose](): void {
    this.close();
  }
}
