// The Worker of bench/frames_bench.ts: adopts a pooled frame's raw handle,
// takes typed views of its planes (cached per buffer, as a pool or channel
// caches them), stamps when it held them and when it let go into shared
// memory, and releases the frame: the slot's return is the main thread's ack.
// It gets the handle by postMessage, or (mode "atomics") from a FrameQueue
// it waits on with Atomics.wait (popBlocking).
/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
import { type DmaBufHandle, FrameQueue, GpuResource, PlaneCache } from "../mod.ts";
import { clockUs } from "./_frames_clock.ts";

interface Start {
  mode: "message" | "atomics";
  /** [heldUs, releasedUs] */
  stamps: SharedArrayBuffer;
  /** atomics mode: the FrameQueue's buffer. */
  queue: SharedArrayBuffer;
}

const views = new PlaneCache();
let stamps: Float64Array;

function take(raw: bigint | DmaBufHandle): void {
  const frame = typeof raw === "bigint" ? GpuResource.fromRaw(raw) as DmaBufHandle : raw;
  const [y] = views.of(frame);
  stamps[0] = clockUs();
  if (y.data[0] === undefined) throw new Error("an empty plane");
  stamps[1] = clockUs();
  frame.release(); // the slot goes back to the main thread's pool
}

function queueLoop(buffer: SharedArrayBuffer): void {
  const queue = FrameQueue.from(buffer);
  for (let frame; (frame = queue.popBlocking()) !== null;) take(frame as DmaBufHandle);
}

self.onmessage = (e: MessageEvent<Start | bigint>) => {
  if (typeof e.data === "bigint") return take(e.data);
  stamps = new Float64Array(e.data.stamps);
  self.postMessage("ready");
  if (e.data.mode === "atomics") queueLoop(e.data.queue);
};
