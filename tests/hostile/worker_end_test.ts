// An isolate's end ends its waits (issue 24, class 6). A Worker terminated
// while a wait of its own is pending must not leave the wait behind: not a
// SyncPoint wait on the waiter thread (its reference, the point's fd), not a
// pool acquire on one of Deno's threads (a thread parked for good, and a
// pool that cannot be freed), not a channel wait. 20 lifetimes of each, then
// the counts are back where they started.

import assert from "node:assert/strict";
import {
  CpuFence,
  GpuResource,
  liveHandles,
  load,
  pendingSyncWaits,
  PixelFormat,
} from "../../mod.ts";
import { countOpenFds, threadCount } from "../_support/libc.ts";

const linux = Deno.build.os === "linux";
const LIFETIMES = 20;
const WORKER = new URL("./_wait_worker.ts", import.meta.url);

const fds = countOpenFds;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `ok` every 20 ms until it holds or `ms` pass; returns what it last saw. */
async function within<T>(ms: number, read: () => T, ok: (v: T) => boolean): Promise<T> {
  const until = performance.now() + ms;
  let v = read();
  while (!ok(v) && performance.now() < until) {
    await sleep(20);
    v = read();
  }
  return v;
}

/** Starts a Worker, hands it `message`, and gives back the Worker and its first reply. */
async function start(
  message: unknown,
): Promise<{ worker: Worker; reply: Record<string, unknown> }> {
  const worker = new Worker(WORKER, { type: "module" });
  const reply = new Promise<Record<string, unknown>>((resolve) => {
    worker.onmessage = (e) => resolve(e.data);
  });
  worker.postMessage(message);
  const got = await reply;
  assert.equal(got.error, undefined, String(got.error));
  return { worker, reply: got };
}

/** Once per process: the main isolate's own queue and watcher, before any baseline is read. */
async function warm(): Promise<void> {
  const { worker, reply } = await start({ mode: "keepalive" });
  GpuResource.fromRaw(reply.raw as bigint).release();
  worker.terminate();
  using fence = CpuFence.create(); // the waiter thread's wake pipe, made once
  const reached = fence.waitAsync();
  fence.signal();
  await reached;
  await sleep(100);
}

Deno.test({
  name: "a terminated Worker's SyncPoint waits end: no wait, reference or fd outlives it",
  ignore: !linux,
  async fn() {
    await warm();
    const waits = pendingSyncWaits();
    const handles = liveHandles();
    const openFds = fds();
    for (let i = 0; i < LIFETIMES; i++) {
      const before = pendingSyncWaits();
      const { worker } = await start({ mode: "sync" });
      assert.equal(pendingSyncWaits(), before + 1, `lifetime ${i + 1}: its wait is pending`);
      worker.terminate();
      // The Worker's thread ends a moment after terminate(): its waits end with it.
      await within(1000, pendingSyncWaits, (n) => n === waits);
    }
    assert.equal(
      await within(2000, pendingSyncWaits, (n) => n === waits),
      waits,
      "pending SyncPoint waits",
    );
    assert.equal(liveHandles(), handles, "live handles");
    assert.equal(await within(2000, fds, (n) => n <= openFds), openFds, "open fds");
  },
});

Deno.test({
  name: "a terminated Worker's pool acquire ends: its thread returns, the pool closes and frees",
  ignore: !linux,
  async fn() {
    await warm();
    const lib = Deno.dlopen(load().path, {
      gpures_pool_create: { parameters: ["buffer", "buffer"], result: "i32" },
      gpures_pool_acquire: {
        parameters: ["pointer", "i32", "u32", "buffer", "buffer"],
        result: "i32",
      },
      gpures_pool_stats_get: { parameters: ["pointer", "buffer"], result: "i32" },
      gpures_pool_close: { parameters: ["pointer"], result: "i32" },
    }).symbols;
    const openFds = fds();
    const openThreads = threadCount();
    const handles = liveHandles();
    const options = { format: "NV12", width: 64, height: 32, slots: 1, rowAlign: 64 };
    const desc = new Uint32Array([32, 0, PixelFormat.info("NV12").id, 64, 32, 1, 64, 0]);
    const out = new BigUint64Array(1);
    assert.equal(lib.gpures_pool_create(desc, out), 0);
    const pool = Deno.UnsafePointer.create(out[0]);
    assert.equal(lib.gpures_pool_acquire(pool, 0, 0, null, out), 0); // the only slot, held here
    const held = GpuResource.fromRaw(out[0]);
    const stats = () => {
      const v = new DataView(new ArrayBuffer(48));
      v.setUint32(0, 48, true);
      assert.equal(lib.gpures_pool_stats_get(pool, v.buffer), 0);
      return { inUse: v.getUint32(8, true), waits: Number(v.getBigUint64(24, true)) };
    };
    try {
      for (let i = 0; i < LIFETIMES; i++) {
        const { worker } = await start({
          mode: "pool",
          pool: Deno.UnsafePointer.value(pool),
          options,
        });
        // Its wait runs on one of Deno's threads: terminate once it waits there.
        assert.equal(await within(2000, () => stats().waits, (n) => n === i + 1), i + 1);
        worker.terminate();
      }
      // Each wait returns when its isolate ends; a parked one keeps its thread for good.
      const left = await within(3000, threadCount, (n) => n <= openThreads + 2);
      assert.ok(left <= openThreads + 2, `threads: ${left}, ${openThreads} before the lifetimes`);
      assert.equal(stats().inUse, 1, "only the held frame is out");
    } finally {
      lib.gpures_pool_close(pool);
      held.release(); // the last frame back: the closed pool frees its memory
    }
    assert.equal(liveHandles(), handles, "live handles");
    assert.equal(await within(2000, fds, (n) => n <= openFds), openFds, "open fds");
  },
});

Deno.test({
  name:
    "a terminated Worker's channel waits end with it, holding no thread; keep-alives released later still run",
  ignore: !linux,
  async fn() {
    await warm();
    const openThreads = threadCount();
    const handles = liveHandles();
    for (let i = 0; i < LIFETIMES; i++) {
      const { worker } = await start({ mode: "channel" });
      await sleep(20); // its receive is a watch on its queue now
      worker.terminate();
    }
    // A channel wait is a watch on the isolate's queue, dropped with the queue (the Worker's
    // channel ends, like anything else its isolate held, stay open: nobody closed them).
    const left = await within(4000, threadCount, (n) => n <= openThreads + 2);
    assert.ok(left <= openThreads + 2, `threads: ${left}, ${openThreads} before the lifetimes`);
    // A handle whose keep-alive was the dead isolate's: its last release still frees it here.
    const raws: bigint[] = [];
    for (let i = 0; i < LIFETIMES; i++) {
      const { worker, reply } = await start({ mode: "keepalive" });
      raws.push(reply.raw as bigint);
      worker.terminate();
    }
    await sleep(100);
    assert.equal(liveHandles(), handles + LIFETIMES, "the Workers' handles outlive them");
    for (const raw of raws) GpuResource.fromRaw(raw).release();
    assert.equal(liveHandles(), handles, "live handles");
  },
});
