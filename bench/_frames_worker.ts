// The Worker of bench/frames_bench.ts: adopts a pooled frame's raw handle,
// takes typed views of its planes (cached per buffer, as a pool or channel
// caches them), stamps when it held them and when it let go into shared
// memory, and releases the frame: the slot's return is the main thread's ack.
// It gets the handle by postMessage, or (mode "atomics") through a
// SharedArrayBuffer it waits on with Atomics.wait.
/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
import { type DmaBufHandle, GpuResource } from "../mod.ts";
import { PlaneCache } from "../ffi/plane_cache.ts";
import { clockUs } from "./_frames_clock.ts";

interface Start {
  mode: "message" | "atomics";
  /** [heldUs, releasedUs] */
  stamps: SharedArrayBuffer;
  /** atomics mode: Int32 [0] = frames posted; BigInt64 [1] = the raw handle. */
  mailbox: SharedArrayBuffer;
}

const views = new PlaneCache();
let stamps: Float64Array;

function take(raw: bigint): void {
  const frame = GpuResource.fromRaw(raw) as DmaBufHandle;
  const [y] = views.of(frame);
  stamps[0] = clockUs();
  if (y.data[0] === undefined) throw new Error("an empty plane");
  stamps[1] = clockUs();
  frame.release(); // the slot goes back to the main thread's pool
}

function mailboxLoop(mailbox: SharedArrayBuffer): never {
  const count = new Int32Array(mailbox, 0, 1);
  const raw = new BigInt64Array(mailbox, 8, 1);
  for (let seen = 0;; seen++) {
    while (Atomics.load(count, 0) === seen) Atomics.wait(count, 0, seen);
    take(BigInt.asUintN(64, Atomics.load(raw, 0)));
  }
}

self.onmessage = (e: MessageEvent<Start | bigint>) => {
  if (typeof e.data === "bigint") return take(e.data);
  stamps = new Float64Array(e.data.stamps);
  self.postMessage("ready");
  if (e.data.mode === "atomics") mailboxLoop(e.data.mailbox);
};
