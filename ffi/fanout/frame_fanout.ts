// One stream, many consumers: a FrameFanout publishes each frame once to every
// consumer that joined it, each over its own session, each at the pace of the
// policy it asked for. The fan-out lives in C (native/src/fanout/): releases
// coming back reach it on the library's service thread, which sends each
// consumer's queued frames on without JavaScript running. A publish that waits
// for a BLOCK consumer holds no thread (ffi/events/room_waits.ts).

import { lib } from "../load/load.ts";
import { check, lastError } from "../load/native.ts";
import { optionsBag, own, timeoutOption } from "../table/values.ts";
import { GpuResource } from "../kinds/gpu_resource.ts";
import { errorFor, InvalidHandleError, ReleasedError } from "../errors.ts";
import { type Channel, type DeliveryPolicy, handOver } from "../channel/channel.ts";
import {
  type DeviceId,
  encodeCaps,
  encodeDeviceId,
  type FormatCap,
  type Negotiated,
  negotiated,
} from "../interop/device.ts";
import type { SlotPool } from "../frames/frame_pool.ts";
import { whenRoom } from "../events/room_waits.ts";
import { Turns } from "../events/turns.ts";

const TIMED_OUT = 12;
const DESC_SIZE = 40; // gpures_fanout_desc: its device at 16
const POLICY_NAMES: DeliveryPolicy[] = ["block", "block", "dropOldest", "latest"];

// A fan-out collected unclosed ends its consumers' sessions and frees itself.
const unclosed = new FinalizationRegistry<Deno.PointerValue>((f) => lib().gpures_fanout_close(f));

/** What {@link FrameFanout.create} accepts. */
export interface FrameFanoutOptions {
  /** The pool the frames come from: its slots bound what consumers may hold. */
  pool?: SlotPool<GpuResource<object>>;
  /** Or the slot count itself (frames from several pools: the largest). */
  slots?: number;
  /** Frames the producer holds itself (filling one, encoding another); default 1. */
  reserve?: number;
  /** Consumers at once, 1 to 256 (default 64). */
  maxConsumers?: number;
  /**
   * The device the frames are on: a consumer that names another in its
   * `subscribe({ device })` is refused at join with DeviceMismatchError.
   * Default: `pool.device`; without either, the last published frame's.
   */
  device?: DeviceId;
}

/** What {@link FrameFanout.join} accepts. */
export interface JoinOptions {
  /** Milliseconds to wait for the consumer's JOIN (default 10000; Infinity: no limit). */
  timeout?: number;
}

/** What {@link FrameFanout.publish} accepts. */
export interface PublishOptions {
  /** Milliseconds to wait for BLOCK consumers' room (default Infinity). */
  timeout?: number;
}

/** One consumer's counts: {@link FrameFanout.consumers}. */
export interface ConsumerStats {
  /** Its id (what its {@link Channel.subscribe} resolved with). */
  consumer: bigint;
  /** The policy it joined with. */
  policy: DeliveryPolicy;
  /** Its queue's depth. */
  depth: number;
  /** Its window. */
  window: number;
  /** Frames waiting for it here. */
  queued: number;
  /** Frames it holds: sent, not released. */
  inFlight: number;
  /** Frames sent to it. */
  delivered: number;
  /** Frames its policy dropped for it. */
  dropped: number;
  /** Frames it released. */
  returned: number;
  /** Mean microseconds from publish to its release, over the frames it returned (0: none yet). */
  latencyMeanUs: number;
  /** The longest of those. */
  latencyMaxUs: number;
  /** Messages of its refused (a release of a frame it never got, a second JOIN). */
  refused: number;
}

/** The fan-out's counts: {@link FrameFanout.stats}. */
export interface FrameFanoutStats {
  /** Consumers joined now. */
  consumers: number;
  /** Frames published. */
  published: number;
  /** Consumers admitted, ever. */
  joined: number;
  /** Of which left (closed, died, taken off, refused a new format). */
  left: number;
  /** Joins refused. */
  refused: number;
  /** The pool's slots. */
  slots: number;
  /** What the consumers joined now may hold at most: reserve + deepest queue + every window. */
  bound: number;
}

const ZERO_STATS: FrameFanoutStats = {
  consumers: 0,
  published: 0,
  joined: 0,
  left: 0,
  refused: 0,
  slots: 0,
  bound: 0,
};

function count(what: string, name: string, value: unknown, low: number, high: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < low || value > high) {
    throw new InvalidHandleError(
      `Cannot ${what}: ${name} is ${String(value)}; it is an integer from ${low} to ${high}`,
      "INVALID_VALUE",
      name,
    );
  }
  return value;
}

/**
 * A stream of frames to many consumers: a preview, a recorder, an inference
 * process, each over its own channel, each at its own pace. Each frame is
 * published once; each consumer gets it without a copy (its buffer announced
 * once per consumer), and its slot comes home when every consumer that got it
 * released it.
 *
 * A consumer asks for a policy when it joins ({@link Channel.subscribe}):
 * `block` (every frame; a full queue makes `publish()` wait for it),
 * `dropOldest` (a bounded queue; its oldest undelivered frame is dropped for
 * it) or `latest` (a mailbox of the newest frame). It holds at most `window`
 * frames at once; the rest wait here, where they can still be dropped. So a
 * stalled or dead consumer never holds more than its window and its queue,
 * and what every consumer may hold together is at most
 * `reserve + max(depth) + sum(window)` slots (queued frames are the newest,
 * shared between queues). A join that would take that past the pool's slots
 * is refused with that reason: with the bound within the pool, a consumer
 * under a drop policy never makes the producer wait for a slot.
 *
 * When the frames' format changes (a new pool of another size or format),
 * each consumer's channel fires "formatchange" before the first frame of the
 * new format, every frame of the old one first; a consumer whose `caps` do
 * not take the new format gets the old frames queued for it, then the
 * refusal with the reason, and leaves.
 *
 * @example
 * ```ts
 * import { Channel, FrameFanout, FramePool } from "@gpures/gpures";
 *
 * using pool = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 8 });
 * using fanout = FrameFanout.create({ pool });
 * // Each consumer's channel: Channel.listen(path).accept() in a real server.
 * const [mine, theirs] = Channel.pair();
 * const joined = theirs.subscribe({ policy: "latest" });
 * await fanout.join(mine);
 * console.log((await joined).policy); // "latest"
 *
 * using frame = await pool.acquire();
 * await fanout.publish(frame);
 * using got = await theirs.receive();
 * console.log(got?.bufferId !== null); // true: the pool's slot, not a copy
 * theirs.close();
 * ```
 */
export class FrameFanout {
  #fanout: Deno.PointerValue;
  #lastStats: FrameFanoutStats | undefined;
  /** Publishes waiting for room, in order. */
  readonly #publishes = new Turns();
  /** Waiting publishes, each as its way to fail. */
  readonly #pending = new Set<(error: unknown) => void>();

  private constructor(fanout: Deno.PointerValue) {
    this.#fanout = fanout;
    unclosed.register(this, fanout, this);
  }

  /** A fan-out for frames of `pool` (or of a pool of `slots` slots). */
  static create(options: FrameFanoutOptions): FrameFanout {
    const what = "create a FrameFanout";
    optionsBag(what, options);
    const pool = own(options, "pool") as SlotPool<GpuResource<object>> | undefined;
    const slots = pool !== undefined
      ? pool.options.slots
      : count(what, "slots", own(options, "slots"), 1, 256);
    const reserve = count(what, "reserve", own(options, "reserve") ?? 1, 1, 255);
    const maxConsumers = count(what, "maxConsumers", own(options, "maxConsumers") ?? 64, 1, 256);
    const device = (own(options, "device") ?? pool?.device) as DeviceId | undefined;
    const desc = new Uint8Array(DESC_SIZE);
    new Uint32Array(desc.buffer, 0, 4).set([DESC_SIZE, slots, reserve, maxConsumers]);
    if (device !== undefined) desc.set(encodeDeviceId(device, "device"), 16);
    const out = new BigUint64Array(1);
    check(lib().gpures_fanout_create(desc, out));
    return new FrameFanout(Deno.UnsafePointer.create(out[0]));
  }

  #live(verb: string): Deno.PointerValue {
    if (this.#fanout === null) {
      throw new ReleasedError(`Cannot ${verb}: the fan-out is closed`, "STALE", "fanout");
    }
    return this.#fanout;
  }

  /**
   * Admits the consumer at the other end of `channel` once its JOIN comes
   * (it called {@link Channel.subscribe}); resolves with its id. The channel
   * is the fan-out's once the JOIN came (closed here, whatever the verdict);
   * a timeout, or a close of the channel or of the fan-out meanwhile, leaves
   * it as it was. A consumer that cannot be served (the fan-out full, a pool too
   * small for its terms, terms out of range, caps that do not take the
   * frames' format, a device other than the frames', a first message that is
   * no JOIN) hears the reason, and this rejects with it: UnsupportedError,
   * DeviceMismatchError or InvalidHandleError naming the field. TimeoutError when no JOIN came within `timeout`: the channel is
   * still yours.
   */
  async join(channel: Channel, options: JoinOptions = {}): Promise<bigint> {
    optionsBag("join", options);
    const timeout = timeoutOption("join", "timeout", own(options, "timeout"), 10_000);
    const taken = handOver(channel, "join");
    const out = new BigUint64Array(1);
    const until = performance.now() + timeout;
    for (;;) {
      // Looked at again each time: a channel closed meanwhile may have had its fd number reused.
      const status = lib().gpures_fanout_join(this.#live("join"), taken.live(), 0, out);
      if (status === 0) return taken.detach(), out[0];
      const error = lastError(status);
      if (status !== TIMED_OUT) {
        if (!(error.code === "INVALID_VALUE" && error.field === "fd")) taken.detach();
        throw error;
      }
      const left = until - performance.now();
      if (left <= 0 || !(await taken.waitReadable(left))) {
        throw errorFor("TIMED_OUT", `Cannot join: no JOIN came within ${timeout} ms`, "timeout");
      }
    }
  }

  /**
   * Offers `frame` to every consumer now: true when it went (each got it or
   * queued it under its policy), false when a BLOCK consumer's queue is full
   * (no consumer got it). The frame stays yours.
   */
  tryPublish(frame: GpuResource<unknown>): boolean {
    if (!(frame instanceof GpuResource) || frame.released) {
      throw new InvalidHandleError(
        "Cannot publish: frame must be a live GpuResource (a pooled or received frame)",
        "INVALID_VALUE",
        "frame",
      );
    }
    const status = lib().gpures_fanout_publish(this.#live("publish"), frame.unsafeHandle, 0);
    if (status === TIMED_OUT) return false;
    check(status);
    return true;
  }

  /**
   * Offers `frame` to every consumer, waiting (holding no thread) while a
   * BLOCK consumer's queue is full. Publishes keep their order among
   * themselves (a `tryPublish()` made while one waits goes first). Rejects with
   * TimeoutError after `timeout` ms (no consumer got the frame) and with
   * ReleasedError when the fan-out closes meanwhile.
   */
  async publish(frame: GpuResource<unknown>, options: PublishOptions = {}): Promise<void> {
    optionsBag("publish", options);
    const timeout = timeoutOption("publish", "timeout", own(options, "timeout"), Infinity);
    if (!this.#publishes.waiting && this.tryPublish(frame)) return;
    await this.#publishes.take(frame, (held) => this.#publishWhenRoom(held, timeout));
  }

  #publishWhenRoom(frame: GpuResource<unknown>, timeout: number): Promise<void> {
    if (this.tryPublish(frame)) return Promise.resolve();
    const fanout = this.#live("publish");
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    let withdraw = () => {};
    let timer: ReturnType<typeof setTimeout> | undefined;
    const settle = (error?: unknown) => {
      clearTimeout(timer);
      withdraw();
      this.#pending.delete(settle);
      if (error === undefined) resolve();
      else reject(error);
    };
    const ask = () => {
      withdraw = whenRoom(fanout, (status) => {
        if (status !== 0) return settle(closedError());
        try {
          if (this.tryPublish(frame)) settle();
          else ask(); // another consumer filled up meanwhile
        } catch (e) {
          settle(e);
        }
      });
    };
    ask();
    this.#pending.add(settle);
    if (timeout !== Infinity) {
      timer = setTimeout(() => {
        settle(
          errorFor(
            "TIMED_OUT",
            `Cannot publish: a BLOCK consumer had no room within ${timeout} ms`,
            "timeout",
          ),
        );
      }, Math.min(timeout, 2 ** 31 - 1));
    }
    return promise;
  }

  /**
   * Resolves once no `block` consumer has frames queued here (each was sent
   * on), so that a {@link FrameFanout.close} after it loses none of theirs;
   * frames the drop policies still queue are theirs to drop. Rejects with
   * TimeoutError after `timeout` ms (default Infinity).
   */
  async flush(options: PublishOptions = {}): Promise<void> {
    optionsBag("flush", options);
    const timeout = timeoutOption("flush", "timeout", own(options, "timeout"), Infinity);
    const until = performance.now() + timeout;
    // Queues drain on the service thread as releases come back: look again every 2 ms.
    while (this.consumers().some((c) => c.policy === "block" && c.queued > 0)) {
      if (performance.now() >= until) {
        throw errorFor(
          "TIMED_OUT",
          `Cannot flush: block consumers still queue frames after ${timeout} ms`,
          "timeout",
        );
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  /** Takes a consumer off: what it holds comes back (retired), its queue is let go. */
  leave(consumer: bigint): void {
    check(lib().gpures_fanout_leave(this.#live("take a consumer off"), consumer));
  }

  /** Every consumer joined now, with its counts. */
  consumers(): ConsumerStats[] {
    const s = lib();
    const fanout = this.#live("list consumers of");
    const ids = new BigUint64Array(256);
    const n = new Uint32Array(1);
    check(s.gpures_fanout_consumers(fanout, ids, ids.length, n));
    const out: ConsumerStats[] = [];
    const view = new DataView(new ArrayBuffer(96));
    for (const id of ids.subarray(0, n[0])) {
      view.setUint32(0, 96, true);
      if (s.gpures_fanout_consumer_stats(fanout, id, view.buffer) !== 0) continue; // it left meanwhile
      const u64 = (at: number) => Number(view.getBigUint64(at, true));
      const returned = u64(48);
      out.push({
        consumer: id,
        policy: POLICY_NAMES[view.getUint32(4, true)] ?? "block",
        depth: view.getUint32(8, true),
        window: view.getUint32(12, true),
        queued: view.getUint32(16, true),
        inFlight: view.getUint32(20, true),
        delivered: u64(32),
        dropped: u64(40),
        returned,
        latencyMeanUs: returned ? u64(56) / returned : 0,
        latencyMaxUs: u64(64),
        refused: u64(72),
      });
    }
    return out;
  }

  /** The fan-out's counts; after {@link FrameFanout.close}, as they were at the close. */
  get stats(): FrameFanoutStats {
    if (this.#lastStats) return { ...this.#lastStats };
    const view = new DataView(new ArrayBuffer(56));
    view.setUint32(0, 56, true);
    check(lib().gpures_fanout_stats_get(this.#live("read the stats of"), view.buffer));
    const u64 = (at: number) => Number(view.getBigUint64(at, true));
    return {
      consumers: view.getUint32(4, true),
      published: u64(8),
      joined: u64(16),
      left: u64(24),
      refused: u64(32),
      slots: view.getUint32(40, true),
      bound: view.getUint32(44, true),
    };
  }

  /**
   * {@link negotiate} for every consumer joined: the first of the producer's
   * rows that each consumer with caps takes. UnsupportedError naming the
   * consumer that takes none.
   */
  negotiate(producer: readonly FormatCap[], extent: { width: number; height: number }): Negotiated {
    const fanout = this.#live("negotiate for");
    return negotiated((out) =>
      lib().gpures_fanout_negotiate(
        fanout,
        encodeCaps(producer, "producer"),
        producer.length,
        extent.width >>> 0,
        extent.height >>> 0,
        out,
      )
    );
  }

  /** Whether {@link FrameFanout.close} was called. */
  get closed(): boolean {
    return this.#fanout === null;
  }

  /**
   * Ends every consumer's session (what they hold comes back retired, as with
   * any session's close), rejects waiting publishes with ReleasedError and
   * frees the fan-out. Frames still queued here are let go, not sent: call
   * {@link FrameFanout.flush} first to end a stream with every frame of the
   * `block` consumers delivered. Idempotent.
   */
  close(): void {
    if (this.#fanout === null) return;
    try {
      const last = this.stats; // the close ends every consumer: they count as left
      this.#lastStats = { ...last, consumers: 0, left: last.left + last.consumers };
    } finally {
      this.#lastStats ??= { ...ZERO_STATS };
    }
    for (const fail of [...this.#pending]) fail(closedError());
    unclosed.unregister(this);
    lib().gpures_fanout_close(this.#fanout);
    this.#fanout = null;
  }

  /** Closes at the end of a `using` block. */
  [Symbol.dispose](): void {
    this.close();
  }
}

function closedError(): ReleasedError {
  return new ReleasedError("Cannot publish: the fan-out was closed", "STALE", "fanout");
}
