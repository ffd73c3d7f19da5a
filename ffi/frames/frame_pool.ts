// Frame pools: a producer's frames, allocated once and handed out again as
// each comes back. The pool lives in C (native/src/frames/pool.c); a slot is
// free again when the last reference to its frame, in this process or in
// any other a session sent it to, is released.

import { lib } from "../load/load.ts";
import { check, lastError, native } from "../load/native.ts";
import {
  addRecord,
  drain,
  dropToken,
  eventQueue,
  type KeepAliveRecord,
  releaseEarly,
  report,
  takeToken,
} from "../events/keep_alive.ts";
import { whenSlotFree } from "../events/pool_waits.ts";
import { consumedFlag } from "../kinds/create.ts";
import { bufferIdOf } from "../kinds/meta.ts";
import {
  countOption,
  enumValue,
  optionalCount,
  optionsBag,
  own,
  refuse,
  show,
  suggestName,
  timeoutOption,
} from "../table/values.ts";
import type { PixelFormatName } from "../gen/types.ts";
import { GpuResource } from "../kinds/gpu_resource.ts";
import {
  GpuResourceError,
  InvalidHandleError,
  ReleasedError,
  TimeoutError,
  UnsupportedError,
} from "../errors.ts";
import type { DeviceId, Negotiated } from "../interop/device.ts";
import { type FrameLayout, PixelFormat } from "../map/pixel_format.ts";
import type { PlaneView } from "../map/planes.ts";
import { PlaneCache } from "./plane_cache.ts";
import type { DmaBufHandle } from "../kinds/dma_buf.ts";
import "../gen/variants.ts"; // registers the classes GpuResource.fromRaw() makes

const STALE = 6;
const U32_MAX = 0xffff_ffff;
const MAX_SLOTS = 256;
const MAX_ROW_ALIGN = 4096;
/** The longest slice of a wait the library's i32 milliseconds take; longer waits go on in slices. */
const MAX_WAIT_SLICE_MS = 0x7fff_ffff;

/** A required count option. */
function required(what: string, field: string, v: unknown, max: number): number {
  if (v === undefined) refuse(what, field, "is missing");
  return countOption(what, field, v, 1, max);
}
const TIMED_OUT = 12;
const CANCELLED = 13;

/** What {@link FramePool.create} takes. */
export interface FramePoolOptions {
  /** A pixel format with a DRM fourcc: NV12, P010LE, YUV420P, RgbaU8, ... */
  format: PixelFormatName;
  /** Frame width in pixels, an integer from 1 (the frame's bytes must stay below 2^32). */
  width: number;
  /** Frame height in pixels, an integer from 1. */
  height: number;
  /** Frames the pool holds, an integer from 1 to 256. */
  slots: number;
  /** Row and plane alignment in bytes, a power of two up to 4096 (default 64). */
  rowAlign?: number;
}

/**
 * The options every pool's create shares (format, width, height, slots,
 * rowAlign with its default), checked by name, own properties only: what
 * to make, and the format's id.
 */
export function poolShape(
  what: string,
  options: unknown,
  defaultRowAlign: number,
): { made: Required<FramePoolOptions>; format: number } {
  if (optionsBag(what, options) === undefined) refuse(what, "options", "is missing");
  const name = own(options, "format");
  const format = typeof name === "string" ? enumValue(1, name) : undefined;
  if (format === undefined) {
    const why = name === undefined ? "is missing" : `${show(name)} is not a PixelFormat name`;
    refuse(what, "format", `${why}: ${suggestName(name, PixelFormat.names())}`);
  }
  const made: Required<FramePoolOptions> = {
    format: name as PixelFormatName,
    width: required(what, "width", own(options, "width"), U32_MAX),
    height: required(what, "height", own(options, "height"), U32_MAX),
    slots: required(what, "slots", own(options, "slots"), MAX_SLOTS),
    rowAlign: optionalCount(
      what,
      "rowAlign",
      own(options, "rowAlign"),
      1,
      MAX_ROW_ALIGN,
      defaultRowAlign,
    ),
  };
  return { made, format: format! };
}

/** What {@link FramePool.tryAcquire} takes. */
export interface TryAcquireOptions {
  /**
   * Held until the frame's last reference anywhere (here, a Worker, another
   * process) is released, that is until its slot is free again; then its
   * `release()` runs, in this isolate, woken by that release, and always
   * before this pool hands the same buffer out again (after any
   * `markConsumed()` the consumer made first).
   */
  keepAlive?: { release?(): void };
}

/** What {@link FramePool.acquire} takes. */
export interface AcquireOptions extends TryAcquireOptions {
  /**
   * Milliseconds to wait for a free slot, then TimeoutError: 0 or more
   * (fractions count); Infinity or absent: no limit. NaN, negatives and
   * non-numbers are refused (InvalidHandleError, field "timeout").
   */
  timeout?: number;
  /** Ends the wait; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** What a pool has done: {@link FramePool.stats}. */
export interface FramePoolStats {
  /** Slots in the pool. */
  slots: number;
  /** Slots whose frame someone (here or elsewhere) still holds. */
  inUse: number;
  /** The most slots in use at once. */
  highWater: number;
  /** Frames handed out. */
  acquired: number;
  /** Acquires that found every slot held and waited. */
  waits: number;
  /** Acquires that gave up (timeout). */
  timeouts: number;
  /** Bytes of one slot's buffer. */
  bufferSize: number;
}

/** A keep-alive given with a frame, by the frame's buffer (its slot). */
type SlotKeepAlives = Map<bigint, { token: number; record: KeepAliveRecord }>;

/**
 * The create options that tie a keep-alive to a frame (gpures_create_options:
 * this isolate's event queue and a token), and what to do once the acquire
 * ended: adopt the frame with its record, or give the token back.
 */
function keepAliveOptions<Frame extends GpuResource<object>>(
  keepAlive: unknown,
  bySlot: SlotKeepAlives,
) {
  const token = keepAlive === undefined ? 0 : takeToken();
  let bytes: Uint8Array | null = null;
  if (token) {
    const queue = eventQueue(native());
    const v = new DataView(new ArrayBuffer(48));
    v.setUint32(0, 48, true);
    v.setUint32(4, consumedFlag(keepAlive), true);
    v.setUint32(32, queue, true);
    v.setUint32(40, token, true);
    v.setUint32(44, queue, true); // the token's high half: this isolate's queue
    bytes = new Uint8Array(v.buffer);
  }
  return {
    bytes,
    drop: () => token && dropToken(token),
    adopt(handle: bigint): Frame {
      // The slot's last frame was released everywhere, maybe on another thread whose
      // RELEASED event this isolate has not delivered yet: its keep-alive runs first, after
      // what was queued before it (a consumer's markConsumed()).
      if (token || bySlot.size) {
        const slot = bufferIdOf(handle)!;
        const previous = bySlot.get(slot);
        if (previous) {
          report(drain());
          report(releaseEarly(previous.token, previous.record));
        }
        if (token) {
          const record = addRecord(token, keepAlive, []);
          const entry = { token, record };
          bySlot.set(slot, entry);
          // Delivered, early or not: forget it (a retired slot's buffer id is never seen again).
          record.ended = () => bySlot.get(slot) === entry && bySlot.delete(slot);
        }
      }
      return GpuResource.fromRaw(handle) as Frame;
    },
  };
}

const unclosed = new FinalizationRegistry<Deno.PointerValue>((p) => lib().gpures_pool_close(p));

/**
 * What every frame pool does, whatever memory its slots are: acquire (waiting
 * without a thread while every slot is held), tryAcquire, stats and close. A
 * slot is free again when the last reference to its frame, here or in any
 * process a session sent it to, is released. {@link FramePool} (memfds,
 * DmaBufHandle frames) and {@link VulkanFramePool} (exported Vulkan memory,
 * VkOpaqueFd frames) are the two kinds.
 */
export class SlotPool<Frame extends GpuResource<object>> {
  #pool: Deno.PointerValue;
  #closed = false;
  /** The stats as they were at close(); the native pool may be freed since. */
  #lastStats: FramePoolStats | undefined;
  /** The waiting acquires, each as its way to fail. */
  readonly #waiting = new Set<(error: unknown) => void>();
  /** The keep-alive of each slot's last frame, until that slot is handed out again. */
  readonly #keepAlives: SlotKeepAlives = new Map();
  /** The layout of every frame. */
  readonly layout: FrameLayout;
  /** The options the pool was made with. */
  readonly options: Readonly<Required<FramePoolOptions>>;
  /** The device its frames' memory is on: a GPU pool's; kind "none" for memfds (any importer). */
  readonly device: DeviceId;

  /** A pool over a native gpures_pool (a subclass's create makes it). */
  protected constructor(
    pool: Deno.PointerValue,
    options: Required<FramePoolOptions>,
    layout: FrameLayout,
    closeWhenCollected = true,
    device: DeviceId = { kind: "none", bytes: new Uint8Array(16) },
  ) {
    this.#pool = pool;
    this.options = Object.freeze(options);
    this.layout = layout;
    this.device = Object.freeze({ kind: device.kind, bytes: device.bytes.slice() });
    if (closeWhenCollected) unclosed.register(this, pool, this);
  }

  /** The native pool, for a subclass's own calls; ReleasedError once closed. */
  protected native(verb: string): Deno.PointerValue {
    return this.#live(verb);
  }

  #live(verb: string): Deno.PointerValue {
    if (this.#closed || this.#pool === null) {
      throw new ReleasedError(`Cannot ${verb}: the pool is closed`, "STALE", "pool");
    }
    return this.#pool;
  }

  /** A free frame now, or null when every slot is held (a producer that drops frames). */
  tryAcquire(options: TryAcquireOptions = {}): Frame | null {
    optionsBag("acquire", options);
    const out = new BigUint64Array(1);
    const keep = keepAliveOptions<Frame>(own(options, "keepAlive"), this.#keepAlives);
    const status = lib().gpures_pool_acquire(this.#live("acquire"), 0, 0, keep.bytes, out);
    if (status === TIMED_OUT) return keep.drop(), null;
    if (status !== 0) throw keep.drop(), lastError(status);
    return keep.adopt(out[0]);
  }

  /**
   * The next free frame, yours to fill, send and release; waits (on a thread
   * of Deno's, never blocking the event loop) while every slot is held.
   * Rejects with TimeoutError after `timeout` ms, with the signal's reason
   * when it aborts, and with ReleasedError once the pool is closed.
   */
  async acquire(options: AcquireOptions = {}): Promise<Frame> {
    optionsBag("acquire", options);
    const keepAlive = own(options, "keepAlive") as TryAcquireOptions["keepAlive"];
    const timeout = timeoutOption("acquire", "timeout", own(options, "timeout"), Infinity);
    const signal = own(options, "signal") as AbortSignal | undefined;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new InvalidHandleError(
        "Cannot acquire: signal must be an AbortSignal",
        "INVALID_VALUE",
        "signal",
      );
    }
    signal?.throwIfAborted(); // as fetch() does: an aborted signal wins over a free slot
    const now = this.tryAcquire({ keepAlive });
    if (now) return now;
    const pool = this.#live("acquire");
    const { promise, resolve, reject } = Promise.withResolvers<Frame>();
    let withdraw: (why: number) => void = () => {};
    let timer: ReturnType<typeof setTimeout> | undefined;
    const settle = (error: unknown, frame?: Frame) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      this.#waiting.delete(fail);
      if (frame) resolve(frame);
      else reject(error);
    };
    const fail = (error: unknown, why = CANCELLED) => {
      withdraw(why);
      settle(error);
    };
    const onAbort = () => fail(signal!.reason);
    // The pool tells this isolate when a slot comes free; no thread waits. The slot is
    // taken here, and another acquire may be faster: then this one asks again.
    const ask = () => {
      withdraw = whenSlotFree(pool, (status) => {
        if (status !== 0) return settle(this.#waitError(status, timeout));
        try {
          const frame = this.tryAcquire({ keepAlive });
          if (frame) settle(undefined, frame);
          else ask();
        } catch (e) {
          settle(e);
        }
      });
    };
    ask();
    this.#waiting.add(fail);
    signal?.addEventListener("abort", onAbort, { once: true });
    if (timeout !== Infinity) {
      // Timers count in i32 milliseconds: a longer timeout waits in slices.
      const until = performance.now() + timeout;
      const arm = () => {
        const left = Math.ceil(until - performance.now());
        if (left > 0) timer = setTimeout(arm, Math.min(MAX_WAIT_SLICE_MS, left));
        else fail(this.#waitError(TIMED_OUT, timeout), TIMED_OUT);
      };
      arm();
    }
    return await promise;
  }

  /**
   * Why a wait ended without a slot. Made here, not read from the library's
   * last error: the wait failed on another thread, whose message this one
   * cannot see.
   */
  #waitError(status: number, timeout: number): Error {
    if (status === TIMED_OUT) {
      return new TimeoutError(
        `Cannot acquire: no slot came free within ${timeout} ms: all ${this.options.slots} are held`,
        "TIMED_OUT",
        "timeout",
      );
    }
    if (this.#closed || status === CANCELLED || status === STALE) {
      return new ReleasedError("Cannot acquire: the pool was closed", "STALE", "pool");
    }
    return new GpuResourceError(`Cannot acquire: the wait failed (status ${status})`, "OS_ERROR");
  }

  /** Counts since the pool was made; after {@link FramePool.close}, as they were at the close. */
  get stats(): FramePoolStats {
    return this.#lastStats ? { ...this.#lastStats } : this.#readStats();
  }

  #readStats(): FramePoolStats {
    const out = new DataView(new ArrayBuffer(48));
    out.setUint32(0, 48, true);
    check(lib().gpures_pool_stats_get(this.#live("read stats of"), out.buffer));
    const n = (at: number) => Number(out.getBigUint64(at, true));
    return {
      slots: out.getUint32(4, true),
      inUse: out.getUint32(8, true),
      highWater: out.getUint32(12, true),
      acquired: n(16),
      waits: n(24),
      timeouts: n(32),
      bufferSize: n(40),
    };
  }

  /**
   * Closes the pool: acquires reject with ReleasedError from now on, waiting
   * ones too. Frames still held stay valid; each slot's memory goes when its
   * frame comes back. Afterwards `stats` keeps the counts of the close, and
   * `acquire()`, `tryAcquire()` and `planes()` throw ReleasedError (field
   * "pool"). Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    try {
      this.#lastStats = this.#readStats();
    } catch {
      // a pool whose counts cannot be read still closes; its stats then throw ReleasedError
    }
    this.#closed = true;
    unclosed.unregister(this);
    this.closed();
    this.#keepAlives.clear(); // their frames' RELEASED events still deliver them
    // Every waiting acquire rejects now, however many, while its notice can still be withdrawn.
    const closed = new ReleasedError("Cannot acquire: the pool was closed", "STALE", "pool");
    for (const fail of [...this.#waiting]) fail(closed);
    this.#closeNative();
  }

  /** What a subclass lets go at close, before the native pool closes. */
  protected closed(): void {}

  /** The native close: no wait of this pool is left. */
  #closeNative(): void {
    if (this.#pool === null) return;
    lib().gpures_pool_close(this.#pool);
    this.#pool = null;
  }

  /** Closes at the end of a `using` block. */
  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * A pool of frames in shareable memory: each slot a sealed memfd holding one
 * frame in the standard layout ({@link PixelFormat.layout}), handed out as a
 * DmaBufHandle. A slot is never handed out while anyone still holds its
 * previous frame: {@link FramePool.acquire} waits instead (back-pressure),
 * without blocking the event loop. Linux only.
 *
 * @example
 * ```ts
 * import { FramePool } from "@gpures/gpures";
 * using pool = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 2 });
 * using frame = await pool.acquire();
 * const [y] = pool.planes(frame); // typed views, mapped once per slot
 * y.data.fill(235);
 * frame.setMeta({ sequence: 0 });
 * console.log(pool.stats.inUse, frame.bufferId !== null); // 1 true
 * ```
 */
export class FramePool extends SlotPool<DmaBufHandle> {
  readonly #views: PlaneCache;

  private constructor(
    pool: Deno.PointerValue,
    options: Required<FramePoolOptions>,
    layout: FrameLayout,
  ) {
    super(pool, options, layout);
    this.#views = new PlaneCache(options.slots);
  }

  /**
   * Allocates every slot now. Every option is checked first, own properties
   * only, and nothing is made for a bad one: InvalidHandleError naming it.
   * `options` then holds exactly what was made.
   */
  static create(options: FramePoolOptions): FramePool {
    const what = "create a FramePool";
    const { made, format } = poolShape(what, options, 64);
    // The layout checks the extent and alignment (a power of two, a buffer below 2^32)
    // before the native pool exists, so no refusal can come after its slots were made.
    const layout = PixelFormat.layout(made.format, made.width, made.height, {
      rowAlign: made.rowAlign,
    });
    const desc = new Uint32Array([
      32,
      0,
      format,
      made.width,
      made.height,
      made.slots,
      made.rowAlign,
      0,
    ]);
    const out = new BigUint64Array(1);
    check(lib().gpures_pool_create(desc, out));
    return new FramePool(Deno.UnsafePointer.create(out[0]), made, layout);
  }

  /**
   * A pool of what {@link negotiate} picked: its format, extent and the larger
   * of the two sides' row alignments. Only a LINEAR result in dma-buf or host
   * memory is a pool's to make; anything else is the consumer API's to
   * allocate (UnsupportedError naming `modifier` or `memory`).
   */
  static fromNegotiated(pick: Negotiated, slots: number): FramePool {
    if (pick.modifier !== 0n) {
      throw new UnsupportedError(
        `Cannot create a FramePool: modifier 0x${
          pick.modifier.toString(16)
        } is not LINEAR; the consumer's API allocates tiled frames`,
        "UNSUPPORTED",
        "modifier",
      );
    }
    if (pick.memory !== "dmaBuf" && pick.memory !== "host") {
      throw new UnsupportedError(
        `Cannot create a FramePool: the sides agreed on ${pick.memory} memory, which only the producing API can export`,
        "UNSUPPORTED",
        "memory",
      );
    }
    const [format, width, height, rowAlign] = [
      own(pick, "format"),
      own(pick, "width"),
      own(pick, "height"),
      own(pick, "rowAlign"),
    ] as [PixelFormatName, number, number, number];
    return FramePool.create({ format, width, height, slots, rowAlign });
  }

  /**
   * Typed views of a frame's planes. Each slot is mapped once, the first time
   * one of its frames is viewed, and the views are the same arrays for every
   * later frame of that slot: no mmap per frame.
   *
   * A view whose buffer is moved away (a BYOB read into it, `transfer()`,
   * `postMessage` with transfer) is made again, over the same memory, by the
   * next call: `planes()` never returns a detached or empty view. So a
   * decoder's pipe is read straight into a slot, in place, by fetching the
   * views again after every read (each read moves the buffer it filled):
   *
   * ```ts ignore
   * // decoder: ffmpeg ... -f rawvideo -pix_fmt nv12 - (rows packed: stride === bytesPerRow)
   * const reader = decoder.stdout.getReader({ mode: "byob" });
   * const frame = await pool.acquire();
   * for (let i = 0; i < pool.layout.planes.length; i++) {
   *   for (let filled = 0;;) {
   *     const { data } = pool.planes(frame)[i]; // again: the last read moved the buffer
   *     if (filled === data.byteLength) break;
   *     const into = new Uint8Array(data.buffer, data.byteOffset + filled, data.byteLength - filled);
   *     const { value, done } = await reader.read(into); // the bytes land in the slot
   *     if (done) throw new Error("the decoder ended mid-frame");
   *     filled += value.byteLength;
   *   }
   * }
   * await channel.send(frame);
   * ```
   *
   * Throws ReleasedError (field "pool") once the pool is closed; frames still
   * held keep their own `frame.planes()`.
   */
  planes(frame: DmaBufHandle): PlaneView[] {
    this.native("view planes");
    return this.#views.of(frame);
  }

  /** The views go with the pool. */
  protected override closed(): void {
    this.#views.clear();
  }
}
