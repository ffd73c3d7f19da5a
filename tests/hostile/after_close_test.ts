// Every object that holds native memory or a native pointer, used after its
// close(): each accessor either gives its last values (stats as they were at
// close, closed true) or throws ReleasedError naming the object, and nothing
// reads memory the library freed. close() while an operation is pending
// (receive, accept, acquire, pop, send) ends that operation; nothing is freed
// under it. The rule is docs/reliability.md's "After close".
//
// Run with --v8-flags=--expose-gc: the freed memory is churned (gc(), new
// sessions and pools of the same sizes) before each closed object is read, so
// a read of freed memory reads someone else's (or crashes) instead of stale
// bytes that look right.

import assert from "node:assert/strict";
import {
  Channel,
  type ChannelStats,
  CpuFence,
  DmaBufHandle,
  FramePool,
  type FramePoolStats,
  FrameQueue,
  liveHandles,
  liveMappings,
  ReleasedError,
  VulkanImporter,
  WebGpuFrameUploader,
} from "../../mod.ts";
import { lacking, probe } from "../_support/vulkan_helper.ts";
import { patternedFrame, RGBA_FRAME_BYTES } from "../_support/fixtures.ts";

const linux = Deno.build.os === "linux";
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

/** Asserts a ReleasedError whose message names `what` (the object) and whose field is `field`. */
function released(what: RegExp, field: string) {
  return (e: unknown) => {
    assert.ok(e instanceof ReleasedError, `expected ReleasedError, got ${String(e)}`);
    assert.match(e.message, what);
    assert.equal(e.code, "STALE");
    assert.equal(e.field, field);
    return true;
  };
}

/** Frees and reuses native memory: sessions, pools and frames made and dropped, then gc(). */
async function churn(rounds = 6): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    gc();
    const pools: FramePool[] = [];
    const channels: Channel[] = [];
    for (let i = 0; i < 4; i++) {
      const pool = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 2 });
      const [tx, rx] = Channel.pair();
      const frame = pool.tryAcquire()!;
      frame.setMeta({ sequence: 1000 + i });
      await tx.send(frame);
      frame.release();
      const got = await rx.receive();
      got?.release();
      pools.push(pool);
      channels.push(tx, rx);
    }
    // Read while they live: their memory is what the closed objects' old pointers now name.
    for (const c of channels) void c.stats;
    for (const p of pools) void p.stats;
    for (const c of channels) c.close();
    for (const p of pools) p.close();
  }
  gc();
}

/** Polls until `done()` (the service thread delivers releases on its own time). */
async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(done(), `timed out waiting for ${what}`);
}

Deno.test({
  name: "Channel after close(): stats as they were, closed true, every other use ReleasedError",
  ignore: !linux,
  async fn() {
    const live = liveHandles();
    const pool = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 3 });
    const [tx, rx] = Channel.pair();
    for (let i = 0; i < 5; i++) {
      const frame = await pool.acquire();
      frame.setMeta({ sequence: i });
      await tx.send(frame);
      frame.release();
      const got = await rx.receive();
      assert.ok(got instanceof DmaBufHandle);
      rx.planes(got)[0].data[0] = i;
      got.release();
    }
    await until(() => tx.stats.inFlight === 0, "the receiver's releases");
    const held = await pool.acquire(); // a frame of the sender's, held across the close
    const before: [ChannelStats, ChannelStats] = [{ ...tx.stats }, { ...rx.stats }];
    assert.equal(before[0].frames, 5);
    assert.equal(before[1].frames, 5);
    assert.ok(before[0].announced >= 1);

    tx.close();
    rx.close();
    await churn();

    for (const [i, c] of [tx, rx].entries()) {
      assert.equal(c.closed, true);
      // The session is freed: stats are the last values, never read from freed memory.
      assert.deepEqual(c.stats, before[i]);
      gc();
      assert.deepEqual(c.stats, before[i]);
      assert.throws(() => c.fd, released(/channel is closed/, "channel"));
      assert.throws(() => c.planes(held), released(/channel is closed/, "channel"));
      await assert.rejects(c.send(held), released(/channel is closed/, "channel"));
      await assert.rejects(c.receive(), released(/channel is closed/, "channel"));
      await assert.rejects(
        c[Symbol.asyncIterator]().next(),
        released(/channel is closed/, "channel"),
      );
      c.close(); // idempotent
      c[Symbol.dispose]();
      assert.deepEqual(c.stats, before[i]);
    }
    // The frame held across the close is still the sender's to use.
    assert.equal(held.planes()[0].data.length > 0, true);
    held.release();
    pool.close();
    assert.equal(liveHandles(), live);
  },
});

Deno.test({
  name:
    "Channel: close() under a pending receive or send ends it; the session is not freed under it",
  ignore: !linux,
  async fn() {
    const live = liveHandles();
    // A receive that waits (the receiving session is open: a pooled frame came first).
    const pool = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 2 });
    const [tx, rx] = Channel.pair();
    const frame = pool.tryAcquire()!;
    await tx.send(frame);
    frame.release();
    (await rx.receive())!.release();
    const before = { ...rx.stats };
    const pending = rx.receive();
    const iteration = rx[Symbol.asyncIterator]().next();
    // Checked below; handled now so that a failed check before cannot end the run with them.
    pending.catch(() => {}), iteration.catch(() => {});
    await new Promise((r) => setTimeout(r, 10));
    rx.close();
    gc();
    assert.deepEqual(rx.stats, before);
    await assert.rejects(pending, released(/channel is closed/, "channel"));
    await assert.rejects(iteration, released(/channel is closed/, "channel"));
    await churn(2);
    assert.deepEqual(rx.stats, before);
    tx.close();
    pool.close();

    // Sends that wait for room (nobody receives), closed under them.
    const [a, b] = Channel.pair();
    const f = patternedFrame(7);
    const sends: Promise<unknown>[] = [];
    for (let i = 0; i < 400; i++) sends.push(a.send(f).then(() => "sent", (e) => e));
    f.release();
    await new Promise((r) => setTimeout(r, 10));
    a.close();
    gc();
    const results = await Promise.all(sends);
    const refused = results.filter((e) => e !== "sent");
    assert.ok(refused.length > 0, "some sends were waiting for room");
    for (const e of refused) released(/channel is closed/, "channel")(e);
    assert.deepEqual(a.stats, { ...a.stats });
    b.close();
    await churn(1);
    assert.equal(liveHandles(), live);
  },
});

Deno.test({
  name: "ChannelListener after close(): path kept, closed true, accept and fd ReleasedError",
  ignore: !linux,
  async fn() {
    const path = `@gpures-after-close-${Deno.pid}-${crypto.randomUUID()}`;
    const listener = Channel.listen(path);
    const pending = listener.accept();
    const iteration = (async () => {
      const got: Channel[] = [];
      for await (const c of listener) got.push(c);
      return got;
    })();
    const client = await Channel.connect(path);
    await new Promise((r) => setTimeout(r, 10));
    listener.close(); // a pending accept (and the iterator's) is woken; the fd goes after them
    gc();
    const accepted = await pending.then((c) => c, (e) => e);
    if (accepted instanceof Channel) accepted.close();
    else released(/listener is closed/, "listener")(accepted);
    for (const c of await iteration) c.close();
    await churn(1);
    assert.equal(listener.closed, true);
    assert.equal(listener.path, path);
    assert.throws(() => listener.fd, released(/listener is closed/, "listener"));
    await assert.rejects(listener.accept(), released(/listener is closed/, "listener"));
    assert.deepEqual(await listener[Symbol.asyncIterator]().next(), {
      done: true,
      value: undefined,
    });
    listener.close();
    listener[Symbol.dispose]();
    client.close();
    await assert.rejects(Channel.connect(path), Error, "nobody listens there any more");
  },
});

Deno.test({
  name:
    "FramePool after close(): stats as they were, held frames valid, every other use ReleasedError",
  ignore: !linux,
  async fn() {
    const live = liveHandles();
    const pool = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 2 });
    const options = pool.options, layout = pool.layout;
    const held = await pool.acquire();
    const views = pool.planes(held);
    views[0].data.fill(9);
    const second = pool.tryAcquire()!;
    second.release();
    const before: FramePoolStats = { ...pool.stats };
    assert.equal(before.acquired, 2);
    assert.equal(before.inUse, 1);

    pool.close();
    await churn();

    assert.deepEqual(pool.stats, before);
    gc();
    assert.deepEqual(pool.stats, before);
    assert.equal(pool.options, options);
    assert.equal(pool.layout, layout);
    assert.throws(() => pool.tryAcquire(), released(/pool is closed/, "pool"));
    await assert.rejects(pool.acquire(), released(/pool is closed/, "pool"));
    await assert.rejects(pool.acquire({ timeout: 0 }), released(/pool is closed/, "pool"));
    assert.throws(() => pool.planes(held), released(/pool is closed/, "pool"));
    FramePool.prototype.close.call(pool); // idempotent
    pool[Symbol.dispose]();
    // A frame held across the close stays valid: its own mapping, and the views made before.
    assert.equal(views[0].data[0], 9);
    assert.equal(held.planes()[0].data[1], 9);
    assert.ok(held.meta === null || typeof held.meta === "object");
    held.release();
    gc();
    assert.deepEqual(pool.stats, before);
    assert.equal(liveHandles(), live);
  },
});

Deno.test({
  name: "FramePool: close() under pending acquires rejects them; the pool is freed after the last",
  ignore: !linux,
  async fn() {
    const live = liveHandles();
    const pool = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 1 });
    const held = pool.tryAcquire()!;
    const signal = new AbortController();
    const waits = [
      pool.acquire(),
      pool.acquire({ timeout: 10_000 }),
      pool.acquire({ signal: signal.signal }),
    ];
    for (const w of waits) w.catch(() => {}); // checked below
    await new Promise((r) => setTimeout(r, 10));
    const before = { ...pool.stats };
    pool.close();
    gc();
    assert.deepEqual(pool.stats, before);
    for (const w of waits) await assert.rejects(w, released(/pool was closed/, "pool"));
    signal.abort(); // after the pool went: touches nothing
    await churn(2);
    assert.deepEqual(pool.stats, before);
    held.release();
    assert.equal(liveHandles(), live);
  },
});

Deno.test({
  name: "FrameQueue after close(): frames in it still pop, push ReleasedError, a pending pop ends",
  ignore: !linux,
  async fn() {
    const live = liveHandles();
    // A pop waits with Atomics.waitAsync, which alone does not hold the event loop open (the
    // producer is a Worker in real use); a timer does here.
    const loop = setInterval(() => {}, 1000);
    const queue = new FrameQueue(4);
    const there = FrameQueue.from(queue.buffer);
    const pending = there.pop();
    queue.push(patternedFrame(1));
    (await pending)!.release();
    const waiting = there.pop(); // nothing queued: waits
    queue.push(patternedFrame(2));
    queue.push(patternedFrame(3));
    (await waiting)!.release();
    const empty = new FrameQueue(2), emptyThere = FrameQueue.from(empty.buffer);
    const blocked = emptyThere.pop();
    await new Promise((r) => setTimeout(r, 5));
    empty.close();
    assert.equal(await blocked, null, "a pop pending at close ends with null");
    queue.close();
    gc();
    const refused = patternedFrame(4);
    for (const q of [queue, there]) {
      assert.equal(q.closed, true);
      assert.equal(q.capacity, 4);
      assert.ok(q.buffer instanceof SharedArrayBuffer);
      assert.throws(() => q.push(refused), released(/queue is closed/, "queue"));
    }
    assert.equal(refused.released, false, "a frame refused by a closed queue stays its owner's");
    refused.release();
    assert.equal(there.length, 1);
    const last = there.popBlocking(0);
    assert.ok(last instanceof DmaBufHandle, "a frame queued before the close still pops");
    assert.equal(new Uint8Array(last.map())[0], 3);
    last.release();
    assert.equal(await there.pop(), null);
    assert.equal(there.popBlocking(0), null);
    queue.close();
    clearInterval(loop);
    assert.equal(liveHandles(), live);
  },
});

Deno.test({
  name: "DmaBufHandle mappings after release(): buffers detached, views empty, map() ReleasedError",
  ignore: !linux,
  fn() {
    const mappings = liveMappings();
    const frame = patternedFrame(5);
    const buffer = frame.map();
    const [view] = frame.planes();
    assert.equal(buffer.byteLength, RGBA_FRAME_BYTES);
    frame.release();
    gc();
    assert.equal(
      buffer.byteLength,
      0,
      "the mapping's buffer is detached, not left over freed pages",
    );
    assert.equal(view.data.length, 0);
    assert.equal(liveMappings(), mappings);
    assert.throws(() => frame.map(), released(/DmaBufHandle: handle was released/, "handle"));
    assert.throws(() => frame.planes(), released(/handle was released/, "handle"));
    assert.throws(() => frame.dupFd(), released(/handle was released/, "handle"));
    frame.unmap(); // nothing left to unmap
    frame.release();
  },
});

Deno.test({
  name:
    "SyncPoint after release(): every use ReleasedError; a pending waitAsync holds its own reference",
  ignore: !linux,
  async fn() {
    const live = liveHandles();
    const fence = CpuFence.create();
    const other = fence.clone();
    const pending = fence.waitAsync({ timeout: 10_000 });
    fence.release();
    gc();
    assert.throws(() => fence.signaled, released(/CpuFence: handle was released/, "handle"));
    assert.throws(() => fence.wait(0), released(/handle was released/, "handle"));
    assert.throws(() => fence.signal(), released(/handle was released/, "handle"));
    assert.throws(() => fence.dupFd(), released(/handle was released/, "handle"));
    await assert.rejects(fence.waitAsync(), released(/handle was released/, "handle"));
    other.signal();
    await pending; // the wait outlived the wrapper's reference
    other.release();
    // The last reference gone under a wait of the waiter thread: it ends, then the point goes.
    const lone = CpuFence.create();
    const timed = lone.waitAsync({ timeout: 30 });
    lone.release();
    gc();
    await assert.rejects(timed, /not reached in time/);
    assert.equal(liveHandles(), live);
  },
});

const vulkan = linux ? probe("build the Vulkan test helper (cmake --build build)") : undefined;

Deno.test({
  name:
    "VulkanImporter (the Importer base of all three) after close(): stats as they were, else ReleasedError",
  ignore: !linux || lacking(vulkan!, 1) !== undefined,
  async fn() {
    const vk = vulkan!.helper!;
    const ctx = vk.gvk_open();
    try {
      const importer = VulkanImporter.create({
        instance: vk.gvk_instance(ctx),
        physicalDevice: vk.gvk_physical_device(ctx),
        device: vk.gvk_device(ctx, 0),
        image: false,
        buffer: true,
      });
      const frame = patternedFrame(1);
      let imported = true;
      try {
        importer.import(frame);
      } catch {
        imported = false; // a driver that imports no memfd: the counts still say so
      }
      const before = { ...importer.stats };
      const device = importer.device;
      assert.equal(importer.closed, false);
      importer.close();
      assert.equal(importer.closed, true);
      await churn(1);
      // The last counts: the close freed what was cached.
      const last = { ...before, cached: 0, freed: before.freed + before.cached };
      assert.deepEqual(importer.stats, last);
      gc();
      assert.deepEqual(importer.stats, last);
      const closed = released(/VulkanImporter (is|was) closed/, "importer");
      assert.throws(() => importer.device, closed);
      assert.throws(() => importer.import(frame), closed);
      assert.throws(() => importer.forget(frame), closed);
      assert.throws(() => importer.collect(), closed);
      importer.close();
      importer[Symbol.dispose]();
      assert.ok(device.name.length > 0);
      assert.equal(before.cached, imported ? 1 : 0);
      frame.release();
    } finally {
      vk.gvk_close(ctx);
    }
  },
});

Deno.test({
  name: "WebGpuFrameUploader after destroy(): device kept, upload and convert ReleasedError",
  ignore: !("gpu" in navigator),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) return; // no adapter here: nothing to destroy
    const device = await adapter.requestDevice();
    const uploader = new WebGpuFrameUploader(device);
    const data = new Uint8Array(16 * 8 * 4).fill(1);
    const uploaded = uploader.upload([{
      data,
      width: 16,
      height: 8,
      stride: 64,
      channels: 4,
      bytesPerRow: 64,
    }], {
      format: "RgbaU8",
      width: 16,
      height: 8,
    });
    assert.equal(uploader.destroyed, false);
    uploader.destroy();
    gc();
    assert.equal(uploader.destroyed, true);
    assert.equal(uploader.device, device);
    const gone = released(/uploader (is|was) destroyed/, "uploader");
    assert.throws(
      () =>
        uploader.upload(
          [{ data, width: 16, height: 8, stride: 64, channels: 4, bytesPerRow: 64 }],
          {
            format: "RgbaU8",
            width: 16,
            height: 8,
          },
        ),
      gone,
    );
    assert.throws(() => uploader.convertToRgba(uploaded), gone);
    uploader.destroy();
    uploader[Symbol.dispose]();
    device.destroy();
  },
});
