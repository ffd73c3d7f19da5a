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

// The records by token: token t is slot t - 1 of `records`, a slot reused
// once its record is gone (an array and a free list cost a fraction of a Map).
// Reuse is safe: a handle's RELEASED event is the last event with its token
// (each MARK_CONSUMED is posted while the handle is pinned, so before it) and
// the queue is first in, first out.
const records: (KeepAliveRecord | undefined)[] = [];
const freeRecords: number[] = [];
let liveRecords = 0;

/** A token for a new record; give it back with dropToken if the record is never added. */
function takeToken(): number {
  return (freeRecords.length ? freeRecords.pop()! : records.push(undefined) - 1) + 1;
}

function dropToken(token: number): void {
  records[token - 1] = undefined;
  freeRecords.push(token - 1);
}

function removeRecord(token: number): KeepAliveRecord | undefined {
  const record = token >= 1 ? records[token - 1] : undefined;
  if (record) {
    dropToken(token);
    liveRecords--;
  }
  return record;
}
let queue = 0;
let timer: ReturnType<typeof setInterval> | undefined;
const EVENT_RELEASED = 1;
const NO_ERRORS: unknown[] = [];

// Out-parameters, create options and polled events live in one scratch
// buffer whose address is computed once: the hot calls take them as pointers
// (a pointer argument crosses several times faster than a buffer).
const scratch = new ArrayBuffer(16 + 48 + 16 * 64);
const u64Out = new BigUint64Array(scratch, 0, 1); // a created handle
const u32Out = new Uint32Array(scratch, 8, 1); // a kind, refcount, queue or event count
const optionView = new DataView(scratch, 16, 48); // gpures_create_options
const eventView = new DataView(scratch, 64, 16 * 64); // gpures_event[64]
optionView.setUint32(0, 48, true); // struct_size; keep_alive stays zero
let scratchAt: Deno.PointerObject | undefined;
let u32At: Deno.PointerValue = null;
let optionsAt: Deno.PointerValue = null;
let eventsAt: Deno.PointerValue = null;
/** The loaded library's symbols, once native() ran (a library stays loaded for good). */
let loadedSymbols: Symbols | undefined;

/** The library, with the scratch pointers computed (once, after it loaded). */
function native(): Symbols {
  if (loadedSymbols) return loadedSymbols;
  const s = lib();
  scratchAt = Deno.UnsafePointer.of(scratch)!;
  u32At = Deno.UnsafePointer.offset(scratchAt, 8);
  optionsAt = Deno.UnsafePointer.offset(scratchAt, 16);
  eventsAt = Deno.UnsafePointer.offset(scratchAt, 64);
  return loadedSymbols = s;
}

/**
 * This isolate's event queue, opened on first use. It closes itself when the
 * isolate's thread ends (a Worker that finishes or is terminated), so Worker
 * lifetimes never exhaust the library's table of queues.
 */
function eventQueue(s: Symbols): number {
  if (!queue) {
    check(s.gpures_event_queue_open(u32Out));
    const opened = u32Out[0];
    const status = s.gpures_event_queue_close_on_thread_exit(opened);
    if (status !== 0) {
      const error = lastError(status);
      s.gpures_event_queue_close(opened);
      throw error;
    }
    queue = opened;
  }
  return queue;
}

/** Calls a keep-alive's method; what its getter or body throws is collected, never thrown. */
function call(target: unknown, method: "release" | "markConsumed", errors: unknown[]): void {
  try {
    const fn = (target as Record<string, unknown> | null)?.[method];
    if (typeof fn === "function") fn.call(target);
  } catch (e) {
    errors.push(e);
  }
}

/**
 * Delivers the events the library queued for this isolate: last releases and
 * consumer marks, made on any thread. Returns what the callbacks threw.
 */
let draining = false;

function drain(): unknown[] {
  // A callback that releases another handle lands here again: the outer loop
  // polls until the queue is empty, so the nested call leaves its events to it
  // rather than overwriting the batch being delivered.
  if (!queue || draining) return NO_ERRORS;
  draining = true;
  try {
    return deliver();
  } finally {
    draining = false;
  }
}

function deliver(): unknown[] {
  const errors: unknown[] = [];
  const s = native();
  for (let n = 1; n > 0;) { // until empty: callbacks may have released more
    check(s.gpures_event_queue_poll_at(queue, eventsAt, 64, u32At));
    n = u32Out[0];
    for (let i = 0; i < n; i++) {
      // Tokens are (queue << 32) | slot: only this isolate's queue receives them.
      const token = eventView.getUint32(i * 16, true);
      if (eventView.getUint32(i * 16 + 4, true) !== queue) continue;
      if (eventView.getUint32(i * 16 + 8, true) === EVENT_RELEASED) {
        const record = removeRecord(token);
        if (record) call(record.keepAlive, "release", errors);
      } else {
        const record = token >= 1 ? records[token - 1] : undefined;
        if (record) call(record.keepAlive, "markConsumed", errors);
      }
    }
  }
  if (liveRecords === 0 && timer !== undefined) {
    clearInterval(timer);
    timer = undefined;
  }
  return errors;
}

/**
 * Reports what keep-alive callbacks threw the way the runtime reports an
 * uncaught error (an "error" event on globalThis, then exit unless it is
 * handled). It happens after the whole batch ran and the current call
 * returned: a callback's failure is the producer's, not the caller's.
 */
function report(errors: unknown[]): void {
  for (const e of errors) queueMicrotask(() => reportError(e));
}

/**
 * Releases made elsewhere (a Worker, native code) reach this isolate through
 * a poll. It runs only while a keep-alive waits on a reference this isolate
 * gave away or no longer holds; releases made here are delivered at once.
 */
function startPolling(): void {
  if (timer !== undefined || liveRecords === 0) return;
  const id = setInterval(() => {
    report(drain());
  }, 20);
  Deno.unrefTimer(id);
  timer = id;
}

/** The token under which this isolate holds a handle's keep-alive, if any. */
export function holdingsOf(token: bigint): unknown[] | undefined {
  if (!queue || token >> 32n !== BigInt(queue)) return undefined; // another isolate's token
  const slot = token & 0xffff_ffffn;
  return slot >= 1n && slot <= BigInt(records.length)
    ? records[Number(slot) - 1]?.holds
    : undefined;
}

// ---------------------------------------------------------------- finalization
//
// The registry releases every wrapper that is collected unreleased. Registering
// one (with an unregister token) and unregistering it cost several clones, so a
// wrapper is registered lazily: at the next microtask checkpoint, or once
// PENDING_MAX wrappers wait. One released before then never touches the
// registry. Until it is registered `pending` holds it, so it cannot be collected
// unregistered.

const registry = new FinalizationRegistry<bigint>((handle) => {
  // A wrapper was collected without release(): drop its reference now.
  lib().gpures_release(handle);
  report(drain());
  startPolling();
});
const PENDING_MAX = 1024;
const pending: GpuResource<unknown>[] = [];
let flushQueued = false;
/** Registers the pending wrappers still holding a handle; set by GpuResource (private fields). */
let registerPending: () => void;

function track(resource: GpuResource<unknown>): void {
  if (pending.push(resource) >= PENDING_MAX) {
    registerPending();
  } else if (!flushQueued) {
    flushQueued = true;
    queueMicrotask(registerPending);
  }
}

// --------------------------------------------------------------------- classes

/** JS buffers a handle aliases, with the descriptor field each came from. */
interface Aliases {
  buffers: readonly unknown[];
  fields: readonly string[];
}

type ResourceClass<R extends GpuResource<unknown> = GpuResource<unknown>> = {
  new (key: symbol, handle: bigint, posts?: boolean, aliases?: Aliases): R;
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

/** The OS each kind was last found to exist on, so the table is read once per OS. */
const existsOnCache: (string | undefined)[] = [];

/** Refuses a kind that cannot exist here, before any native call. */
export function assertSupported(kindId: number): void {
  const kind = KINDS[kindId - 1];
  const os = currentOs();
  if (existsOnCache[kindId] !== os && !existsOn(kind, os)) {
    throw unsupported(
      kind.name,
      `${kind.name} does not exist on "${currentOs()}"; it exists on ${
        platformsOf(kind).map((os) => `"${os}"`).join(", ")
      }`,
    );
  }
  existsOnCache[kindId] = os;
  if (kind.name === "WgpuTexture" && !webGpuAvailable()) {
    throw unsupported(kind.name, "WebGPU is not available (navigator.gpu is missing)");
  }
}

const NO_HOLDS: unknown[] = [];

/** An option the caller set on the options object itself; inherited ones do not count. */
function ownOption(options: FdCreateOptions | undefined, name: keyof FdCreateOptions): unknown {
  return options != null && Object.hasOwn(options, name) ? options[name] : undefined;
}

/**
 * Creates a handle of `cls`'s kind from a wire descriptor (field names as
 * the C table has them). `holds` are objects the handle aliases; they stay
 * referenced until the last release. `aliased` names the descriptor field of
 * each JS buffer among them, so that a buffer detached later is caught.
 * `built`: the class made `desc` itself from the caller's own properties.
 */
export function createResource<R extends GpuResource<unknown>>(
  cls: ResourceClass<R>,
  desc: Record<string, unknown>,
  options: FdCreateOptions | undefined,
  holds: unknown[] = NO_HOLDS,
  aliased?: readonly string[],
  built = false,
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
  const keepAlive = ownOption(options, "keepAlive");
  const token = keepAlive !== undefined || holds.length ? takeToken() : 0;
  const codec = codecOf(cls.kindId);
  const bytes = codec.begin();
  try {
    // A kind whose descriptor names its host object (WgpuTexture) stores the token itself.
    // Only this module's own descriptor objects carry TOKEN, so it is filled in place.
    // Its high half is this isolate's queue, so no other isolate mistakes it for one of its own.
    const s = native();
    if ("token" in desc && desc.token === TOKEN) {
      desc.token = (BigInt(eventQueue(s)) << 32n) | BigInt(token);
    }
    codec.encode(desc, bytes, built);
    const own = ownOption(options, "takeOwnership");
    if (own !== undefined && typeof own !== "boolean") {
      throw new InvalidHandleError(
        `Cannot create ${
          KINDS[cls.kindId - 1].name
        }: options.takeOwnership must be a boolean, not ${typeof own}`,
        "INVALID_VALUE",
        "options.takeOwnership",
      );
    }
    const takeOwnership = own ? 1 : 0;
    let optionsPointer: Deno.PointerValue = null; // none: no keep-alive, fds duplicated
    if (token || takeOwnership) {
      optionView.setUint32(4, takeOwnership, true);
      optionView.setUint32(32, token ? eventQueue(s) : 0, true);
      optionView.setUint32(40, token, true);
      optionView.setUint32(44, token ? queue : 0, true); // the isolate's mark, as in the token above
      optionsPointer = optionsAt;
    }
    check(s.gpures_create_at(cls.kindId, codec.pointerOf(bytes), optionsPointer, scratchAt!));
  } catch (e) {
    if (token) dropToken(token);
    throw e;
  } finally {
    codec.end(bytes);
  }
  if (token) {
    records[token - 1] = { keepAlive, holds };
    liveRecords++;
  }
  const aliases = aliased?.length ? { buffers: holds, fields: aliased } : undefined;
  return new cls(INTERNAL, u64Out[0], token !== 0, aliases);
}

/** The field of the first aliased buffer that was detached since create, or undefined. */
function detachedField(aliases: Aliases): string | undefined {
  for (let i = 0; i < aliases.fields.length; i++) {
    const b = aliases.buffers[i];
    if (((ArrayBuffer.isView(b) ? b.buffer : b) as ArrayBuffer).detached) return aliases.fields[i];
  }
  return undefined;
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
  /** The handle this wrapper holds a reference to; undefined once released or given away. */
  #handle: bigint | undefined;
  readonly #kindId: number;
  /** Whether the finalization registry holds this wrapper (see `track`). */
  #registered = false;
  /**
   * Whether the handle may carry a keep-alive token of this isolate, so that
   * releasing it here can queue an event for this isolate to deliver at once.
   * Events caused elsewhere reach the isolate through the poll (startPolling).
   */
  readonly #posts: boolean;
  /** The JS buffers the handle aliases (CpuBytes, CpuPlanes made from JS memory). */
  readonly #aliases: Aliases | undefined;

  static {
    registerPending = () => {
      flushQueued = false;
      for (const r of pending) {
        if (r.#handle !== undefined && !r.#registered) {
          registry.register(r, r.#handle, r);
          r.#registered = true;
        }
      }
      pending.length = 0;
    };
  }

  /** Not for users: resources come from `create()`, `clone()` or {@link GpuResource.fromRaw}. */
  constructor(key: symbol, handle: bigint, posts = true, aliases?: Aliases) {
    if (key !== INTERNAL) {
      throw new TypeError("Use the create() of a resource class, or GpuResource.fromRaw()");
    }
    this.#handle = handle;
    this.#kindId = (new.target as unknown as ResourceClass).kindId;
    this.#posts = posts;
    this.#aliases = aliases;
    track(this);
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
    check(native().gpures_kind_at(handle, u32At));
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
    // While no record lives here the handle cannot carry one of this isolate's tokens.
    return new (classes.get(u32Out[0])!)(INTERNAL, handle, liveRecords > 0);
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
    return this.#handle === undefined;
  }

  /** The raw 64-bit handle, still owned by this wrapper; for passing to native code. */
  get unsafeHandle(): bigint {
    return this.#live("read");
  }

  /** References held on the handle, by every owner. */
  get refcount(): number {
    check(native().gpures_refcount_at(this.#live("count references of"), u32At));
    return u32Out[0];
  }

  #live(verb: string): bigint {
    if (this.#handle === undefined) {
      throw new ReleasedError(
        `Cannot ${verb} ${this.kind}: handle was released`,
        "STALE",
        "handle",
      );
    }
    const field = this.#aliases && detachedField(this.#aliases);
    if (field) {
      // The memory went with the buffer: never hand out its address again.
      throw new InvalidHandleError(
        `Cannot ${verb} ${this.kind}: ${field} was detached (transferred away) after create, so the memory the handle names is gone; release the handle`,
        "INVALID_VALUE",
        field,
      );
    }
    return this.#handle;
  }

  /** Takes this wrapper, whose reference is gone, out of the finalization bookkeeping. */
  #forget(): void {
    if (this.#registered) {
      registry.unregister(this);
    } else if (pending[pending.length - 1] === this) {
      pending.pop(); // the newest wrapper, released at once: the common case, kept cheap
    }
  }

  /** Another reference to the same handle, released independently. */
  clone(): this {
    const handle = this.#live("clone");
    check(native().gpures_clone(handle));
    const cls = this.constructor as unknown as new (
      key: symbol,
      handle: bigint,
      posts: boolean,
      aliases?: Aliases,
    ) => this;
    return new cls(INTERNAL, handle, this.#posts, this.#aliases);
  }

  /** Every field of the handle's descriptor, with kind, kindId and refcount. */
  describe(): Description {
    const handle = this.#live("describe");
    const codec = codecOf(this.#kindId);
    const s = native();
    check(s.gpures_describe_at(handle, codec.outPointer, codec.out.length));
    check(s.gpures_refcount_at(handle, u32At));
    return codec.describe(this.kind, this.#kindId, u32Out[0]) as Description;
  }

  /** The library's JSON description (64-bit values as strings), as an object. */
  toJSON(): Record<string, unknown> {
    return JSON.parse(describeJson(this.#live("describe")));
  }

  /** Drops this wrapper's reference; idempotent. The last release frees the handle. */
  release(): void {
    const handle = this.#handle;
    if (handle === undefined) return;
    this.#handle = undefined;
    this.#forget();
    const status = native().gpures_release(handle);
    if (!this.#posts || liveRecords === 0) return check(status); // nothing to deliver here
    report(drain());
    startPolling(); // another owner may make the last release
    check(status);
  }

  /** Releases at the end of a `using` block. */
  [Symbol.dispose](): void {
    this.release();
  }

  /** Gives the reference away as a raw handle; this wrapper becomes released. */
  intoRaw(): bigint {
    const handle = this.#live("give away");
    this.#handle = undefined;
    this.#forget();
    startPolling();
    return handle;
  }

  /** Tells the producer (its keep-alive's markConsumed) that this consumer's sync succeeded. */
  markConsumed(): void {
    check(lib().gpures_mark_consumed(this.#live("mark consumed")));
    if (liveRecords) report(drain());
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
    if (this.#handle === undefined) return `${this.kind} { released }`;
    const field = this.#aliases && detachedField(this.#aliases);
    if (field) return `${this.kind} { ${field} detached }`;
    return `${this.kind} ${inspect(this.describe(), options)}`;
  }
}

let jsonBytes = new Uint8Array(4096);
let jsonCapacity = 4096n; // jsonBytes.length, as the bigint the call takes
const lengthOut = new BigUint64Array(1);

function describeJson(handle: bigint): string {
  const s = lib();
  let status = s.gpures_describe_json(handle, jsonBytes, jsonCapacity, lengthOut);
  if (status === 10) { // BUFFER_TOO_SMALL: grow once to the size the library asked for
    jsonBytes = new Uint8Array(Number(lengthOut[0]) + 1);
    jsonCapacity = BigInt(jsonBytes.length);
    status = s.gpures_describe_json(handle, jsonBytes, jsonCapacity, lengthOut);
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
