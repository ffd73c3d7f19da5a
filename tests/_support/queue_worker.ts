// Takes pooled frames from a FrameQueue, blocking in Atomics.wait (the way a
// Worker that only handles frames would), checks each one's pattern through
// a PlaneCache, releases it, and says "done N intact M" when the queue closes.
/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
import { type DmaBufHandle, FrameQueue, PlaneCache } from "../../mod.ts";
import { verify } from "./frame_pattern.ts";

self.onmessage = (e: MessageEvent<SharedArrayBuffer>) => {
  const queue = FrameQueue.from(e.data);
  const cache = new PlaneCache();
  let n = 0, intact = 0;
  for (;;) {
    const frame = queue.popBlocking(10_000) as DmaBufHandle | null | undefined;
    if (!frame) break;
    if (verify(cache.of(frame), frame.meta) === null) intact++;
    n++;
    frame.release(); // the slot goes back to the producer's pool
  }
  self.postMessage(`done ${n} intact ${intact}`);
};
