// The base class of every resource kind: ownership of one reference to a
// native handle, and everything every kind can do with it.

import type { WaitOptions } from "../events/sync_waits.ts";
import { bufferIdOf, getMeta, setMeta } from "./meta.ts";
import type { FrameMeta, FrameMetaInit } from "../gen/types.ts";
import { codecOf } from "../table/codec.ts";
import { type Aliases, classOf, detachedField, INTERNAL, type ResourceClass } from "./create.ts";
import { drain, liveRecords, report, startPolling } from "../events/keep_alive.ts";
import { KINDS } from "../gen/kinds.ts";
import { lib } from "../load/load.ts";
import { check, native, u32At, u32Out } from "../load/native.ts";
import { existsOn, knownKind, webGpuAvailable } from "../table/platform.ts";
import type { KindName } from "../gen/types.ts";
import { InvalidHandleError, ReleasedError, WrongKindError } from "../errors.ts";
import { countOption, timeoutNanos, timeoutOption } from "../table/values.ts";

const decoder = new TextDecoder();

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

  /**
   * Not for users: resources come from `create()`, `clone()` or {@link GpuResource.fromRaw}.
   *
   * @ignore
   */
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
    const row = knownKind(kind);
    return existsOn(row) && (row.name !== "WgpuTexture" || webGpuAvailable());
  }

  /**
   * Adopts a raw handle (from {@link GpuResource.intoRaw}, another isolate,
   * or native code): the new wrapper owns the reference the value carries.
   * Given a class (`GpuResource.fromRaw(raw, VkImage)`), or called on one
   * (`VkImage.fromRaw(raw)`), it refuses a handle of another kind with
   * WrongKindError and the reference stays the caller's.
   *
   * @example
   * ```ts
   * import { GpuResource, VkBufferHandle } from "@gpures/gpures";
   * const raw = VkBufferHandle.create({ buffer: 1n, size: 64n }).intoRaw(); // to native code and back
   * using buffer = GpuResource.fromRaw(raw, VkBufferHandle);
   * console.log(buffer.describe().size); // 64n
   * ```
   */
  static fromRaw(handle: bigint): GpuResource<unknown>;
  /** Adopts a raw handle that must be of `kind`'s kind (WrongKindError otherwise). */
  static fromRaw<R extends GpuResource<unknown>>(
    handle: bigint,
    kind: { readonly kindId: number; readonly prototype: R },
  ): R;
  static fromRaw(
    handle: bigint,
    kind?: { readonly kindId: number },
  ): GpuResource<unknown> {
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
    if (kind !== undefined && classOf(kind?.kindId) !== kind) {
      throw new InvalidHandleError(
        "Cannot adopt handle: kind must be a resource class such as VkImage",
        "INVALID_VALUE",
        "kind",
      );
    }
    const wanted = kind?.kindId ?? (this as unknown as ResourceClass).kindId;
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
    return new (classOf(u32Out[0])!)(INTERNAL, handle, liveRecords > 0) as GpuResource<unknown>;
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

  /**
   * The frame metadata the handle carries (sequence, timing, visible
   * rectangle, colour, HDR, user data), or null. Clones, Workers given the
   * handle and the receiver of a channel see the same.
   */
  get meta(): FrameMeta | null {
    return getMeta(this.#live("read metadata of"));
  }

  /**
   * Stores frame metadata in the handle, replacing what it had (null
   * removes it). Each group is optional; a bad value throws
   * InvalidHandleError naming the field (`visible.width`, `color.primaries`).
   *
   * @example
   * ```ts
   * import { CpuBytes } from "@gpures/gpures";
   * using frame = CpuBytes.create({
   *   data: new Uint8Array(16 * 16 * 4),
   *   rowPitch: 64,
   *   format: "RgbaU8",
   *   width: 16,
   *   height: 16,
   * });
   * frame.setMeta({
   *   sequence: 7,
   *   timing: { pts: 7000, duration: 1000, timebaseNum: 1, timebaseDen: 1_000_000 },
   *   color: { primaries: "bt709", transfer: "bt709", matrix: "bt709", fullRange: false },
   * });
   * console.log(frame.meta?.sequence, frame.meta?.color?.primaries); // 7 bt709
   * ```
   */
  setMeta(meta: FrameMetaInit | null): void {
    setMeta(this.#live("set metadata of"), meta);
  }

  /**
   * The identity of the memory behind the handle: the same for every frame
   * of one pool slot (or one buffer received through a channel), never
   * reused, null for a handle that has none. Cache imports by it.
   */
  get bufferId(): bigint | null {
    return bufferIdOf(this.#live("read buffer id of"));
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

  /**
   * Tells the producer (its keep-alive's markConsumed) that this consumer's
   * sync succeeded. False when nobody listens (the producer gave no keep-alive
   * with markConsumed): the call meant nothing, and a consumer may skip it.
   */
  markConsumed(): boolean {
    check(lib().gpures_mark_consumed_heard(this.#live("mark consumed"), u32Out));
    const heard = u32Out[0] !== 0;
    if (liveRecords) report(drain());
    return heard;
  }

  /**
   * The JS buffers the handle aliases (CpuBytes, CpuPlanes made from JS
   * memory), for the kinds that view them; clones share them, so they view
   * the same memory.
   *
   * @ignore
   */
  protected get aliases(): Aliases | undefined {
    return this.#aliases;
  }

  /**
   * Duplicates owned fd `index` (the kinds that own fds).
   *
   * @ignore
   */
  protected dupFdOf(index: number): number {
    const handle = this.#live("duplicate fd of");
    const i = countOption(`duplicate fd of ${this.kind}`, "index", index, 0, 0xffff_ffff);
    const out = new Int32Array(1);
    check(lib().gpures_dup_fd(handle, i, out));
    return out[0];
  }

  /**
   * Stores the slot release value into its gate (VkImage, VkOpaqueFd).
   *
   * @ignore
   */
  protected slotReleaseOf(): void {
    check(lib().gpures_slot_release(this.#live("release slot of")));
  }

  /**
   * The fences this handle carries (as new references the caller releases):
   * `acquire`, to wait on before touching the memory; `release`, to wait on
   * before reusing it. They travel with the handle to clones, Workers and
   * Channel peers (fd-backed ones as fds).
   */
  get fences(): { acquire?: Fence; release?: Fence } {
    const pair = new BigUint64Array(2);
    check(
      lib().gpures_fences_get(this.#live("read fences of"), pair.subarray(0, 1), pair.subarray(1)),
    );
    const result: { acquire?: Fence; release?: Fence } = {};
    if (pair[0]) result.acquire = GpuResource.fromRaw(pair[0]) as Fence;
    if (pair[1]) result.release = GpuResource.fromRaw(pair[1]) as Fence;
    return result;
  }

  /** Sets (replacing) the acquire and release fences; an absent one is cleared. The handle takes its own references. */
  setFences(
    fences: { acquire?: GpuResource<unknown> | null; release?: GpuResource<unknown> | null },
  ): void {
    check(
      lib().gpures_fences_set(
        this.#live("set fences of"),
        fences.acquire ? fences.acquire.unsafeHandle : 0n,
        fences.release ? fences.release.unsafeHandle : 0n,
      ),
    );
  }

  /**
   * Waits (blocking, up to `timeout` ms: 0 or more, Infinity or absent for
   * no limit, as a SyncPoint's `waitAsync` timeout) until the memory may be touched: the
   * acquire fence, then, on a real dma-buf, the kernel's implicit fences.
   * The acquire fence is dropped once reached. For the event loop, await
   * `fences.acquire?.waitAsync()` instead and then call this (it returns at once).
   */
  beginAccess(timeout?: number): void {
    const ms = timeoutOption("begin access", "timeout", timeout, Infinity);
    const ns = timeoutNanos(ms);
    check(lib().gpures_begin_access(this.#live("begin access to"), ns));
  }

  /** Ends access: `release` (a SyncPoint, or none) becomes the release fence the next user waits on. */
  endAccess(release?: GpuResource<unknown> | null): void {
    check(
      lib().gpures_end_access(this.#live("end access to"), release ? release.unsafeHandle : 0n),
    );
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
 * A fence a handle carries: a {@link SyncPoint} of some sync kind (`instanceof`
 * tells which). Named here so that a handle's file need not import the sync
 * classes, which extend it.
 */
export interface Fence extends GpuResource<unknown> {
  /** Whether the point was reached; never blocks. */
  readonly signaled: boolean;
  /** Blocks this thread until the point is reached (TimeoutError after `timeout` ms). */
  wait(timeout?: number): void;
  /** Resolves when the point is reached, holding no thread. */
  waitAsync(options?: WaitOptions): Promise<void>;
  /** Signals the point from the CPU (the kinds that allow it). */
  signal(): void;
  /** A new fd for the point (fd-backed kinds); the caller closes it. */
  dupFd(): number;
}
