// FrameQueue: frames to a Worker through shared memory, one atomic store and
// a notify each, the frame's reference moving with it.

import assert from "node:assert/strict";
import {
  CpuBytes,
  type DmaBufHandle,
  FramePool,
  FrameQueue,
  InvalidHandleError,
  liveHandles,
  PlaneCache,
  ReleasedError,
  WrongKindError,
} from "../mod.ts";
import { paint, patternMeta } from "./_support/frame_pattern.ts";

const linux = Deno.build.os === "linux";
const bytes = () =>
  CpuBytes.create({ data: new Uint8Array(64), rowPitch: 64, format: "R16U", width: 32, height: 1 });

Deno.test("a FrameQueue hands frames over in order, their references with them", async () => {
  const base = liveHandles();
  const queue = new FrameQueue(2);
  const there = FrameQueue.from(queue.buffer);
  const a = bytes(), b = bytes();
  const [ha, hb] = [a.unsafeHandle, b.unsafeHandle];
  assert.ok(queue.push(a) && queue.push(b));
  assert.ok(a.released && b.released, "the queue holds the references now");
  assert.equal(there.length, 2);
  using first = await there.pop(), second = there.popBlocking(0);
  assert.equal(first?.unsafeHandle, ha);
  assert.equal(second?.unsafeHandle, hb);
  assert.equal(there.popBlocking(0), undefined, "nothing waits");
  first?.release(), second?.release();
  assert.equal(liveHandles(), base);
});

Deno.test("a full FrameQueue refuses a frame and leaves it the caller's", () => {
  const queue = new FrameQueue(1);
  using kept = bytes();
  assert.ok(queue.push(bytes()));
  assert.equal(queue.push(kept), false);
  assert.equal(kept.released, false);
  FrameQueue.from(queue.buffer).popBlocking(0)?.release();
});

Deno.test("a closed FrameQueue refuses pushes, and gives what it held, then null", async () => {
  const queue = new FrameQueue(4);
  assert.ok(queue.push(bytes()));
  const there = FrameQueue.from(queue.buffer);
  const waiting = FrameQueue.from(queue.buffer);
  there.close();
  assert.throws(() => queue.push(bytes()), ReleasedError);
  const held = await waiting.pop();
  assert.equal(held?.kind, "CpuBytes", "what was in it still comes out");
  held?.release();
  assert.equal(await waiting.pop(), null);
  assert.equal(waiting.popBlocking(0), null);
});

Deno.test("a popped frame goes straight to a PlaneCache, which refuses a kind without planes", async () => {
  const queue = new FrameQueue(1);
  queue.push(bytes());
  using popped = await FrameQueue.from(queue.buffer).pop();
  const cache = new PlaneCache();
  assert.throws(
    () => cache.of(popped!),
    (e: unknown) =>
      e instanceof WrongKindError && e.field === "frame" &&
      e.message === "Cannot view planes: the frame is a CpuBytes, not a DmaBufHandle",
  );
  assert.throws(() => cache.of({} as never), WrongKindError);
});

Deno.test("a FrameQueue refuses a buffer that is not one, and a bad capacity", () => {
  for (const bad of [new SharedArrayBuffer(8), new SharedArrayBuffer(64), new ArrayBuffer(24)]) {
    assert.throws(
      () => FrameQueue.from(bad as SharedArrayBuffer),
      (e: InvalidHandleError) => e.field === "buffer",
    );
  }
  for (const bad of [0, -1, 1.5, 5000, NaN]) {
    assert.throws(() => new FrameQueue(bad), (e: InvalidHandleError) => e.field === "capacity");
  }
});

Deno.test("a forged value in a FrameQueue's memory is refused, not used", async () => {
  const queue = new FrameQueue(2);
  const words = new Int32Array(queue.buffer, 0, 4);
  new BigInt64Array(queue.buffer, 16, 2)[0] = 0x1234_5678_9abc_def0n; // no live handle
  Atomics.store(words, 1, 1); // as if pushed
  await assert.rejects(FrameQueue.from(queue.buffer).pop(), ReleasedError);
  new BigInt64Array(queue.buffer, 16, 2)[1] = 0n;
  Atomics.store(words, 1, 2);
  assert.throws(() => FrameQueue.from(queue.buffer).popBlocking(0), InvalidHandleError);
});

Deno.test({
  name: "pooled frames reach a Worker through a FrameQueue intact, and their slots come back",
  ignore: !linux,
  async fn() {
    using pool = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 3 });
    const queue = new FrameQueue(pool.options.slots);
    const worker = new Worker(new URL("./_support/queue_worker.ts", import.meta.url), {
      type: "module",
    });
    const done = new Promise<string>((resolve) => worker.onmessage = (e) => resolve(e.data));
    worker.postMessage(queue.buffer);
    for (let seq = 0; seq < 60; seq++) {
      // The first slots come back only once the Worker has started (and been type-checked).
      const frame: DmaBufHandle = await pool.acquire({ timeout: 30_000 });
      frame.setMeta(patternMeta(seq, paint(pool.planes(frame), seq)));
      assert.ok(queue.push(frame), "the queue holds as many frames as the pool has slots");
    }
    queue.close();
    assert.equal(await done, "done 60 intact 60");
    worker.terminate();
    assert.equal(pool.stats.inUse, 0, "every slot came back from the Worker");
    assert.ok(pool.stats.waits > 0, "the producer waited for the Worker's releases");
  },
});
