// Frames to a Worker without postMessage: a ring of raw handle values in a
// SharedArrayBuffer that both isolates see. Handing a frame over is two
// atomic stores and a notify; a consumer that blocks in Atomics.wait wakes
// on the futex itself, with no event-loop task between.

import { GpuResource } from "../kinds/gpu_resource.ts";
import { InvalidHandleError, ReleasedError } from "../errors.ts";
import { countOption, timeoutOption } from "../table/values.ts";
import "../gen/variants.ts"; // registers the classes GpuResource.fromRaw() makes

// Int32 words at the buffer's start; the slots (one 64-bit handle each) follow.
const HEAD = 0; // frames taken, wrapping (int32)
const TAIL = 1; // frames put, wrapping (int32)
const CLOSED = 2;
const CAPACITY = 3;
const HEADER_BYTES = 16;
const MAX_CAPACITY = 4096;
/** The buffer FrameQueue.from() hands its constructor. */
let opening: SharedArrayBuffer | undefined;

/**
 * A one-way queue of frames from one isolate to another (a Worker), in
 * shared memory. The producer's {@link FrameQueue.push} gives each frame's
 * reference to the queue; the consumer's {@link FrameQueue.pop} (awaited) or
 * {@link FrameQueue.popBlocking} (a Worker that only handles frames) adopts
 * it. Make it on one side and send its `buffer` to the other once, with
 * `postMessage`; then no message is posted per frame. One producer and one
 * consumer. Values read from the buffer are checked as any raw handle is: a
 * forged one is refused, never used.
 *
 * @example
 * ```ts
 * import { CpuBytes, FrameQueue } from "@gpures/gpures";
 * const queue = new FrameQueue(4);
 * const there = FrameQueue.from(queue.buffer); // in a Worker, from its message
 * queue.push(CpuBytes.create({ data: new Uint8Array(64), rowPitch: 64, format: "R16U", width: 32, height: 1 }));
 * using frame = await there.pop();
 * console.log(frame?.kind); // CpuBytes
 * ```
 */
export class FrameQueue {
  /** The shared memory: send it to the other isolate, which calls {@link FrameQueue.from}. */
  readonly buffer: SharedArrayBuffer;
  /** Frames the queue holds at most. */
  readonly capacity: number;
  readonly #words: Int32Array;
  readonly #slots: BigInt64Array;

  /** A queue of `capacity` frames (an integer from 1 to 4096; at least the producer's pool slots). */
  constructor(capacity = 16) {
    capacity = countOption("make a FrameQueue", "capacity", capacity, 1, MAX_CAPACITY);
    this.buffer = opening ?? new SharedArrayBuffer(HEADER_BYTES + 8 * capacity);
    opening = undefined;
    this.#words = new Int32Array(this.buffer, 0, 4);
    this.#words[CAPACITY] = capacity;
    this.#slots = new BigInt64Array(this.buffer, HEADER_BYTES, capacity);
    this.capacity = capacity;
  }

  /** The other end of the queue whose `buffer` this is. */
  static from(buffer: SharedArrayBuffer): FrameQueue {
    const capacity = buffer instanceof SharedArrayBuffer && buffer.byteLength >= HEADER_BYTES
      ? new Int32Array(buffer, 0, 4)[CAPACITY]
      : 0;
    if (
      capacity < 1 || capacity > MAX_CAPACITY || buffer.byteLength !== HEADER_BYTES + 8 * capacity
    ) {
      throw new InvalidHandleError(
        "Cannot open a FrameQueue: buffer is not a FrameQueue's buffer",
        "INVALID_VALUE",
        "buffer",
      );
    }
    opening = buffer;
    return new FrameQueue(capacity);
  }

  /** Frames waiting. */
  get length(): number {
    return (Atomics.load(this.#words, TAIL) - Atomics.load(this.#words, HEAD)) | 0;
  }

  /** Whether either side closed the queue. */
  get closed(): boolean {
    return Atomics.load(this.#words, CLOSED) !== 0;
  }

  /**
   * Gives the frame's reference to the queue (the wrapper is released, as by
   * `intoRaw()`); false, leaving the frame yours, when the queue is full.
   * Throws ReleasedError once the queue is closed.
   */
  push(frame: GpuResource<unknown>): boolean {
    if (this.closed) throw new ReleasedError("Cannot push: the queue is closed", "STALE", "queue");
    const tail = Atomics.load(this.#words, TAIL);
    if (((tail - Atomics.load(this.#words, HEAD)) | 0) >= this.capacity) return false;
    Atomics.store(this.#slots, (tail >>> 0) % this.capacity, BigInt.asIntN(64, frame.intoRaw()));
    Atomics.store(this.#words, TAIL, (tail + 1) | 0);
    Atomics.notify(this.#words, TAIL);
    return true;
  }

  /** The next frame if one waits; undefined when none does, null once closed and empty. */
  #take(): GpuResource<unknown> | null | undefined {
    const head = Atomics.load(this.#words, HEAD);
    if (head === Atomics.load(this.#words, TAIL)) return this.closed ? null : undefined;
    const raw = BigInt.asUintN(64, Atomics.load(this.#slots, (head >>> 0) % this.capacity));
    Atomics.store(this.#words, HEAD, (head + 1) | 0);
    return GpuResource.fromRaw(raw);
  }

  /**
   * The next frame, adopted (release it), waiting without blocking the event
   * loop; null once the queue is closed and empty.
   */
  async pop(): Promise<GpuResource<unknown> | null> {
    for (;;) {
      const tail = Atomics.load(this.#words, TAIL);
      const frame = this.#take();
      if (frame !== undefined) return frame;
      const wait = Atomics.waitAsync(this.#words, TAIL, tail);
      if (wait.async) await wait.value;
    }
  }

  /**
   * The next frame, blocking this thread until one comes (for a Worker that
   * only handles frames: the fastest hand-off); null once closed and empty,
   * undefined when `timeoutMs` passes first: milliseconds, 0 or more
   * (fractions count), Infinity (the default) for no limit. NaN, negatives
   * and non-numbers are refused (InvalidHandleError, field "timeoutMs"): a
   * NaN would otherwise block this thread for good.
   */
  popBlocking(timeoutMs = Infinity): GpuResource<unknown> | null | undefined {
    const until = performance.now() + timeoutOption("pop", "timeoutMs", timeoutMs, Infinity);
    for (;;) {
      const tail = Atomics.load(this.#words, TAIL);
      const frame = this.#take();
      if (frame !== undefined) return frame;
      const left = until - performance.now();
      if (left <= 0) return undefined;
      Atomics.wait(this.#words, TAIL, tail, left);
    }
  }

  /**
   * Closes the queue for both sides: pushes throw, pops return null once
   * empty. Frames still in it stay there for pop() to take (and release).
   */
  close(): void {
    Atomics.store(this.#words, CLOSED, 1);
    Atomics.notify(this.#words, TAIL);
  }
}
