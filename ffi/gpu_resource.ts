// The base class of every resource kind: ownership of one reference to a
// native handle, and everything every kind can do with it.

import { codecOf } from "./_codec.ts";
import { KINDS } from "./_kinds.ts";
import { lib } from "./_load.ts";
import { currentOs, existsOn, kindRow, platformsOf, webGpuAvailable } from "./_platform.ts";
import type { Symbols } from "./_symbols.ts";
import type { KindName } from "./_types.ts";
import {
  errorFor,
  type GpuResourceError,
  InvalidHandleError,
  ReleasedError,
  UnsupportedPlatformError,
  WrongKindError,
} from "./errors.ts";

/** Options every `create` takes. */
export interface CreateOptions {
  /**
   * Held until the handle's last release, wherever it happens (another clone,
   * native code, a Worker). Its `release()` then runs exactly once; its
   * `markConsumed()` runs each time a consumer calls
   * {@link GpuResource.markConsumed}.
   */
  keepAlive?: unknown;
}

/** Options of the kinds that own file descriptors. */
export interface FdCreateOptions extends CreateOptions {
  /**
   * true: the handle adopts the fds and closes them on its last release.
   * false (the default): the handle duplicates them and the caller keeps its own.
   * On failure the fds stay the caller's either way.
   */
  takeOwnership?: boolean;
}

const INTERNAL = Symbol("gpures.internal");
/** Stands for the keep-alive token in a wire descriptor; createResource fills it in. */
export const TOKEN: unique symbol = Symbol("gpures.token");
const decoder = new TextDecoder();

/** Reads a C string the library returned. */
export function cString(ptr: Deno.PointerValue): string {
  return ptr === null ? "" : Deno.UnsafePointerView.getCString(ptr);
}

/** The error of a failed call, from the library's thread-local last error. */
export function lastError(status: number): GpuResourceError {
  const s = lib();
  return errorFor(
    cString(s.gpures_status_name(status)) || `STATUS_${status}`,
    cString(s.gpures_last_error()),
    cString(s.gpures_last_error_field()),
  );
}

function check(status: number): void {
  if (status !== 0) throw lastError(status);
}

// ---------------------------------------------------------------- keep-alives

interface KeepAliveRecord {
  keepAlive: unknown;
  /** What the handle aliases (buffers, a GPUTexture): held, never called. */
  holds: unknown[];
}

const records = new Map<bigint, KeepAliveRecord>();
let nextToken = 1n;
let queue = 0;
let timer: ReturnType<typeof setInterval> | undefined;
const eventBytes = new Uint8Array(16 * 64);
const eventView = new DataView(eventBytes.buffer);
const u32Out = new Uint32Array(1);
const u64Out = new BigUint64Array(1);
const optionBytes = new Uint8Array(48);
const optionView = new DataView(optionBytes.buffer);
const EVENT_RELEASED = 1;

function eventQueue(s: Symbols): number {
  if (!queue) {
    check(s.gpures_event_queue_open(u32Out));
    queue = u32Out[0];
  }
  return queue;
}

function call(target: unknown, method: "release" | "markConsumed", errors: unknown[]): void {
  const fn = (target as Record<string, unknown> | null)?.[method];
  if (typeof fn !== "function") return;
  try {
    fn.call(target);
  } catch (e) {
    errors.push(e);
  }
}

/**
 * Delivers the events the library queued for this isolate: last releases and
 * consumer marks, made on any thread. Returns what the callbacks threw.
 */
function drain(): unknown[] {
  const errors: unknown[] = [];
  if (!queue) return errors;
  const s = lib();
  while (s.gpures_event_queue_pending(queue) > 0) {
    check(s.gpures_event_queue_poll(queue, eventBytes, 64, u32Out));
    for (let i = 0; i < u32Out[0]; i++) {
      const token = eventView.getBigUint64(i * 16, true);
      const record = records.get(token);
      if (!record) continue;
      if (eventView.getUint32(i * 16 + 8, true) === EVENT_RELEASED) {
        records.delete(token);
        call(record.keepAlive, "release", errors);
      } else {
        call(record.keepAlive, "markConsumed", errors);
      }
    }
  }
  if (records.size === 0 && timer !== undefined) {
    clearInterval(timer);
    timer = undefined;
  }
  return errors;
}

function throwAll(errors: unknown[]): void {
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, "keep-alive callbacks threw");
}

/**
 * Releases made elsewhere (a Worker, native code) reach this isolate through
 * a poll. It runs only while a keep-alive waits on a reference this isolate
 * gave away or no longer holds; releases made here are delivered at once.
 */
function startPolling(): void {
  if (timer !== undefined || records.size === 0) return;
  const id = setInterval(() => {
    for (const e of drain()) reportError(e);
  }, 20);
  Deno.unrefTimer(id);
  timer = id;
}

/** The token under which this isolate holds a handle's keep-alive, if any. */
export function holdingsOf(token: bigint): unknown[] | undefined {
  return records.get(token)?.holds;
}

// ---------------------------------------------------------------- finalization

const registry = new FinalizationRegistry<bigint>((handle) => {
  // A wrapper was collected without release(): drop its reference now.
  lib().gpures_release(handle);
  for (const e of drain()) reportError(e);
  startPolling();
});

// --------------------------------------------------------------------- classes

type ResourceClass<R extends GpuResource<unknown> = GpuResource<unknown>> = {
  new (key: symbol, handle: bigint): R;
  readonly kindId: number;
};
const classes = new Map<number, ResourceClass>();

/** Called once by each kind's class so fromRaw() can find it. */
export function registerKind(cls: ResourceClass): void {
  classes.set(cls.kindId, cls);
}

function unsupported(name: string, detail: string): UnsupportedPlatformError {
  return new UnsupportedPlatformError(
    `Cannot create ${name}: ${detail}`,
    "UNSUPPORTED_PLATFORM",
  );
}

/** Refuses a kind that cannot exist here, before any native call. */
export function assertSupported(kindId: number): void {
  const kind = KINDS[kindId - 1];
  if (!existsOn(kind)) {
    throw unsupported(
      kind.name,
      `${kind.name} does not exist on "${currentOs()}"; it exists on ${
        platformsOf(kind).map((os) => `"${os}"`).join(", ")
      }`,
    );
  }
  if (kind.name === "WgpuTexture" && !webGpuAvailable()) {
    throw unsupported(kind.name, "WebGPU is not available (navigator.gpu is missing)");
  }
}

/**
 * Creates a handle of `cls`'s kind from a wire descriptor (field names as
 * the C table has them). `holds` are objects the handle aliases; they stay
 * referenced until the last release.
 */
export function createResource<R extends GpuResource<unknown>>(
  cls: ResourceClass<R>,
  desc: Record<string, unknown>,
  options: FdCreateOptions | undefined,
  holds: unknown[] = [],
): R {
  assertSupported(cls.kindId);
  if (typeof desc !== "object" || desc === null || Array.isArray(desc)) {
    throw new InvalidHandleError(
      `Cannot create ${KINDS[cls.kindId - 1].name}: the descriptor must be an object, not ${
        desc === null ? "null" : Array.isArray(desc) ? "an array" : typeof desc
      }`,
      "INVALID_VALUE",
      "desc",
    );
  }
  const keepAlive = options?.keepAlive;
  const token = keepAlive !== undefined || holds.length ? nextToken++ : 0n;
  // A kind whose descriptor names its host object (WgpuTexture) stores the token itself.
  if ("token" in desc && desc.token === TOKEN) desc = { ...desc, token };
  const bytes = codecOf(cls.kindId).encode(desc);
  const s = lib();
  optionBytes.fill(0);
  optionView.setUint32(0, optionBytes.length, true);
  optionView.setUint32(4, options?.takeOwnership ? 1 : 0, true);
  if (token) {
    optionView.setUint32(32, eventQueue(s), true);
    optionView.setBigUint64(40, token, true);
  }
  check(s.gpures_create(cls.kindId, bytes, optionBytes, u64Out));
  if (token) records.set(token, { keepAlive, holds });
  return new cls(INTERNAL, u64Out[0]);
}

/**
 * One reference to a native resource handle. Every kind's class extends it.
 * Release it with {@link GpuResource.release} or `using`; a wrapper that is
 * garbage-collected unreleased is released then.
 *
 * @example
 * ```ts
 * import { CpuBytes } from "@gpures/gpures";
 * using frame = CpuBytes.create({ data: new Uint8Array(64 * 64 * 4), rowPitch: 256, format: "RgbaU8" });
 * console.log(frame.describe().size); // 16384n
 * ```
 */
export abstract class GpuResource<Description = Record<string, unknown>> {
  /** The kind's stable id; each subclass sets it. */
  static readonly kindId: number = 0;
  #handle: bigint;
  readonly #kindId: number;

  /** Not for users: resources come from `create()`, `clone()` or {@link GpuResource.fromRaw}. */
  constructor(key: symbol, handle: bigint) {
    if (key !== INTERNAL) {
      throw new TypeError("Use the create() of a resource class, or GpuResource.fromRaw()");
    }
    this.#handle = handle;
    this.#kindId = (new.target as unknown as ResourceClass).kindId;
    registry.register(this, handle, this);
  }

  /** Whether {@link GpuResource.isSupported} answers yes for `kind` (a name or id) here. */
  static isSupported(kind: KindName | number): boolean {
    const row = kindRow(kind);
    if (!row) {
      throw new InvalidHandleError(
        `Unknown kind ${typeof kind === "string" ? JSON.stringify(kind) : String(kind)}`,
        "INVALID_VALUE",
        "kind",
      );
    }
    return existsOn(row) && (row.name !== "WgpuTexture" || webGpuAvailable());
  }

  /**
   * Adopts a raw handle (from {@link GpuResource.intoRaw}, another isolate,
   * or native code): the new wrapper owns the reference the value carries.
   */
  static fromRaw(handle: bigint): GpuResource<unknown> {
    if (typeof handle !== "bigint") {
      throw new InvalidHandleError(
        `Cannot adopt handle: it must be a bigint, not ${typeof handle}`,
        "INVALID_VALUE",
        "handle",
      );
    }
    if (handle <= 0n || handle >= 1n << 64n) {
      throw new InvalidHandleError(
        `Cannot adopt handle: ${handle} is not a 64-bit handle value`,
        handle === 0n ? "NULL_HANDLE" : "INVALID_VALUE",
        "handle",
      );
    }
    check(lib().gpures_kind(handle, u32Out));
    const wanted = (this as unknown as ResourceClass).kindId;
    if (wanted && wanted !== u32Out[0]) {
      // Called on a subclass: the reference stays with the caller.
      throw new WrongKindError(
        `Cannot adopt handle: it is a ${KINDS[u32Out[0] - 1].name}, not a ${
          KINDS[wanted - 1].name
        }`,
        "WRONG_KIND",
        "handle",
      );
    }
    return new (classes.get(u32Out[0])!)(INTERNAL, handle);
  }

  /** The kind's name. */
  get kind(): KindName {
    return KINDS[this.#kindId - 1].name as KindName;
  }

  /** The kind's stable id. */
  get kindId(): number {
    return this.#kindId;
  }

  /** Whether this wrapper's reference was released (or given away by intoRaw). */
  get released(): boolean {
    return this.#handle === 0n;
  }

  /** The raw 64-bit handle, still owned by this wrapper; for passing to native code. */
  get unsafeHandle(): bigint {
    return this.#live("read");
  }

  /** References held on the handle, by every owner. */
  get refcount(): number {
    check(lib().gpures_refcount(this.#live("count references of"), u32Out));
    return u32Out[0];
  }

  #live(verb: string): bigint {
    if (this.#handle === 0n) {
      throw new ReleasedError(
        `Cannot ${verb} ${this.kind}: handle was released`,
        "STALE",
        "handle",
      );
    }
    return this.#handle;
  }

  /** Another reference to the same handle, released independently. */
  clone(): this {
    const handle = this.#live("clone");
    check(lib().gpures_clone(handle));
    const cls = this.constructor as unknown as new (key: symbol, handle: bigint) => this;
    return new cls(INTERNAL, handle);
  }

  /** Every field of the handle's descriptor, with kind, kindId and refcount. */
  describe(): Description {
    const handle = this.#live("describe");
    const codec = codecOf(this.#kindId);
    const s = lib();
    check(s.gpures_describe(handle, codec.bytes, codec.bytes.length));
    const fields = codec.decode();
    check(s.gpures_refcount(handle, u32Out));
    return { kind: this.kind, kindId: this.#kindId, refcount: u32Out[0], ...fields } as Description;
  }

  /** The library's JSON description (64-bit values as strings), as an object. */
  toJSON(): Record<string, unknown> {
    return JSON.parse(describeJson(this.#live("describe")));
  }

  /** Drops this wrapper's reference; idempotent. The last release frees the handle. */
  release(): void {
    const handle = this.#handle;
    if (handle === 0n) return;
    this.#handle = 0n;
    registry.unregister(this);
    const status = lib().gpures_release(handle);
    const errors = records.size ? drain() : [];
    startPolling(); // another owner may make the last release
    check(status);
    throwAll(errors);
  }

  /** Releases at the end of a `using` block. */
  [Symbol.dispose](): void {
    this.release();
  }

  /** Gives the reference away as a raw handle; this wrapper becomes released. */
  intoRaw(): bigint {
    const handle = this.#live("give away");
    this.#handle = 0n;
    registry.unregister(this);
    startPolling();
    return handle;
  }

  /** Tells the producer (its keep-alive's markConsumed) that this consumer's sync succeeded. */
  markConsumed(): void {
    check(lib().gpures_mark_consumed(this.#live("mark consumed")));
    throwAll(records.size ? drain() : []);
  }

  /** @internal Duplicates owned fd `index` (fd-owning kinds). */
  protected dupFdOf(index: number): number {
    const handle = this.#live("duplicate fd of");
    if (!Number.isInteger(index) || index < 0 || index > 0xffff_ffff) {
      throw new InvalidHandleError(
        `Cannot duplicate fd of ${this.kind}: index must be a non-negative integer, not ${index}`,
        "INVALID_VALUE",
        "index",
      );
    }
    const out = new Int32Array(1);
    check(lib().gpures_dup_fd(handle, index, out));
    return out[0];
  }

  /** @internal Stores the slot release value into its gate (VkImage, VkOpaqueFd). */
  protected slotReleaseOf(): void {
    check(lib().gpures_slot_release(this.#live("release slot of")));
  }

  /** Shows the kind and every field, or that the handle was released. */
  [Symbol.for("Deno.customInspect")](
    inspect: (value: unknown, options: unknown) => string,
    options: unknown,
  ): string {
    if (this.#handle === 0n) return `${this.kind} { released }`;
    return `${this.kind} ${inspect(this.describe(), options)}`;
  }
}

let jsonBytes = new Uint8Array(4096);
const lengthOut = new BigUint64Array(1);

function describeJson(handle: bigint): string {
  const s = lib();
  let status = s.gpures_describe_json(handle, jsonBytes, BigInt(jsonBytes.length), lengthOut);
  if (status === 10) { // BUFFER_TOO_SMALL: grow once to the size the library asked for
    jsonBytes = new Uint8Array(Number(lengthOut[0]) + 1);
    status = s.gpures_describe_json(handle, jsonBytes, BigInt(jsonBytes.length), lengthOut);
  }
  check(status);
  return decoder.decode(jsonBytes.subarray(0, Number(lengthOut[0])));
}

/**
 * Live handles in the process (every isolate and native code), of one kind or
 * of all; for proving nothing leaked.
 *
 * @example
 * ```ts
 * import { liveHandles } from "@gpures/gpures";
 * console.log(liveHandles()); // 0
 * ```
 */
export function liveHandles(kind?: KindName | number): number {
  let id = 0;
  if (kind !== undefined) {
    const row = kindRow(kind);
    if (!row) {
      throw new InvalidHandleError(
        `Unknown kind ${typeof kind === "string" ? JSON.stringify(kind) : String(kind)}`,
        "INVALID_VALUE",
        "kind",
      );
    }
    id = row.id;
  }
  return Number(lib().gpures_live_handles(id));
}
