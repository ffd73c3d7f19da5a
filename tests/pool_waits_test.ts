// Waiting acquires hold no thread. A pool tells this isolate's event queue
// when a slot comes free (gpures_pool_notify), so any number of acquires may
// wait at once: none takes one of Deno's blocking threads (about 32 here,
// shared with every other nonblocking FFI call), none delays a receive on an
// unrelated channel, and close() rejects them all.

import assert from "node:assert/strict";
import { Channel, type DmaBufHandle, FramePool, ReleasedError, TimeoutError } from "../mod.ts";
import { threadCount } from "./_support/libc.ts";
import { within } from "./_support/within.ts";

const linux = Deno.build.os === "linux";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pool(): FramePool {
  return FramePool.create({ format: "NV12", width: 64, height: 64, slots: 1 });
}

Deno.test({
  name: "2,000 acquires waiting on 200 pools add no thread and do not delay a receive",
  ignore: !linux,
  async fn() {
    const pools = Array.from({ length: 200 }, pool);
    const held = await Promise.all(pools.map((p) => p.acquire()));
    const before = threadCount();
    const waiting: Promise<DmaBufHandle>[] = [];
    for (const p of pools) for (let i = 0; i < 10; i++) waiting.push(p.acquire());
    await sleep(200); // room for any thread a wait would start
    assert.ok(threadCount() - before <= 4, `threads grew by ${threadCount() - before}`);

    // An unrelated channel: its receive waits, the frame arrives, the receive resolves.
    const [a, b] = Channel.pair();
    const receiving = b.receive();
    const spare = pool();
    const frame = await spare.acquire();
    await a.send(frame);
    const got = await within(2000, "a receive while 2,000 acquires wait", receiving);
    assert.ok(got, "the frame arrived");
    got.release();
    frame.release();

    // Each slot that comes free serves one of its pool's waiters, and only one.
    held[0].release();
    const first = await within(2000, "an acquire after its slot came free", waiting[0]);
    await sleep(50);
    assert.equal(pools[0].stats.inUse, 1, "one waiter took the slot");
    first.release();
    const second = await within(2000, "the next waiter", waiting[1]);
    second.release();

    // close() rejects every acquire still waiting, however many: 1,998 of them here.
    for (const p of pools) p.close();
    const settled = await Promise.allSettled(waiting.slice(2));
    assert.equal(settled.length, 1998);
    for (const s of settled) {
      assert.equal(s.status, "rejected");
      assert.ok((s as PromiseRejectedResult).reason instanceof ReleasedError);
    }
    for (const h of held.slice(1)) h.release();
    a.close();
    b.close();
    spare.close();
  },
});

Deno.test({
  name: "a waiting acquire that times out or aborts withdraws its notice and takes no slot",
  ignore: !linux,
  async fn() {
    using p = pool();
    const held = await p.acquire();
    await assert.rejects(p.acquire({ timeout: 20 }), TimeoutError);
    const abort = new AbortController();
    const aborted = p.acquire({ signal: abort.signal });
    abort.abort(new Error("stop"));
    await assert.rejects(aborted, /stop/);
    for (let i = 0; i < 1000; i++) { // a loop of short timeouts leaves nothing behind
      await assert.rejects(p.acquire({ timeout: 0 }), TimeoutError);
    }
    assert.equal(p.stats.timeouts, 1001);
    held.release();
    const next = await within(1000, "the acquire after the release", p.acquire());
    assert.equal(p.stats.inUse, 1);
    next.release();
  },
});
