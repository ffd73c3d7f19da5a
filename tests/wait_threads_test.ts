// Waits hold no thread. Pending acquires, receives, sends, accepts and
// SyncPoint waits all end up in one place: the isolate's wait on its event
// queue, whose thread also polls the channel fds waited on. However many
// pend, the process has the same few threads, none delays another, and
// closing cancels every one.

import assert from "node:assert/strict";
import { Channel, CpuFence, type DmaBufHandle, FramePool, ReleasedError } from "../mod.ts";
import { threadCount } from "./_support/libc.ts";
import { within } from "./_support/within.ts";
import { patternedFrame } from "./_support/fixtures.ts";
import { pendingFdWaits } from "../ffi/events/fd_waits.ts";

const linux = Deno.build.os === "linux";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const peer = new URL("./_support/channel_peer.ts", import.meta.url).pathname;

Deno.test({
  name: "10,000 acquires, 1,000 receives and 10,000 SyncPoint waits add at most 4 threads",
  ignore: !linux,
  sanitizeResources: false, // the producer process's pipes
  async fn() {
    const pools = Array.from(
      { length: 1000 },
      () => FramePool.create({ format: "NV12", width: 64, height: 64, slots: 1 }),
    );
    const held = await Promise.all(pools.map((p) => p.acquire()));
    const pairs = Array.from({ length: 1000 }, () => Channel.pair());
    const fences = Array.from({ length: 100 }, () => CpuFence.create());
    const before = threadCount();

    const acquires: Promise<DmaBufHandle>[] = [];
    for (const p of pools) for (let i = 0; i < 10; i++) acquires.push(p.acquire());
    const receives = pairs.map(([, b]) => b.receive());
    const signals: Promise<void>[] = [];
    for (const f of fences) for (let i = 0; i < 100; i++) signals.push(f.waitAsync());
    await sleep(300); // room for any thread a wait would start
    const grown = threadCount() - before;
    assert.ok(grown <= 4, `threads grew by ${grown} for 21,000 pending waits`);
    assert.equal(pendingFdWaits(), 1000);

    // A frame from another process, on an unrelated channel, still arrives at once.
    const path = `@gpures-wait-threads-${Deno.pid}`;
    using listener = Channel.listen(path);
    const producer = new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-ffi", "--allow-env", peer, "produce", path, "1"],
      stdout: "null",
    }).spawn();
    const channel = await within(10_000, "an accept while 21,000 waits pend", listener.accept());
    assert.ok(channel);
    const frame = await within(2000, "a receive while 21,000 waits pend", channel!.receive());
    assert.ok(frame, "the frame arrived");
    frame.release();
    assert.equal((await producer.status).code, 0);
    channel.close();

    // One of the 1,000 receives is told, and only that one.
    const [a, b] = pairs[617];
    using spare = FramePool.create({ format: "NV12", width: 64, height: 64, slots: 1 });
    const sent = await spare.acquire();
    await a.send(sent);
    const got = await within(2000, "the receive whose peer sent", receives[617]);
    assert.ok(got);
    got.release();
    sent.release();
    b.close();
    a.close();

    // A signalled fence resolves its hundred waits; a returned slot serves its pool.
    fences[0].signal();
    await within(2000, "waits on a signalled fence", Promise.all(signals.slice(0, 100)));
    held[0].release();
    (await within(2000, "an acquire after its slot came free", acquires[0])).release();

    // Closing cancels every wait still pending, however many.
    for (const [x, y] of pairs) x.close(), y.close();
    const ended = await Promise.allSettled(receives);
    for (const [i, r] of ended.entries()) {
      if (i === 617) continue;
      assert.equal(r.status, "rejected", `receive ${i}`);
      assert.ok((r as PromiseRejectedResult).reason instanceof ReleasedError);
    }
    assert.equal(pendingFdWaits(), 0);
    for (const p of pools) p.close();
    const rejected = await Promise.allSettled(acquires.slice(1));
    assert.ok(rejected.every((r) => r.status === "rejected"), "every waiting acquire rejected");
    for (const f of fences.slice(1)) f.signal();
    await Promise.all(signals);
    for (const f of fences) f.release();
    for (const h of held.slice(1)) h.release();
  },
});

Deno.test({
  name: "sends waiting for room hold no thread and go, in order, once the peer reads",
  ignore: !linux,
  async fn() {
    const [a, b] = Channel.pair();
    const frames = Array.from({ length: 8 }, (_, i) => patternedFrame(i));
    const before = threadCount();
    const sends: Promise<void>[] = [];
    for (let i = 0; i < 2000; i++) sends.push(a.send(frames[i % 8]));
    await sleep(100);
    assert.equal(
      pendingFdWaits(),
      1,
      "the socket filled: one send waits for room, the rest behind it",
    );
    assert.ok(threadCount() - before <= 2, `threads grew by ${threadCount() - before}`);
    for (let i = 0; i < 2000; i++) {
      const got = await within(5000, `frame ${i}`, b.receive());
      assert.ok(got);
      const first = new Uint8Array(got.map())[0];
      assert.equal(first, i % 8, `frame ${i} came in order`);
      got.release();
    }
    await Promise.all(sends);
    assert.equal(pendingFdWaits(), 0);
    for (const f of frames) f.release();
    a.close();
    b.close();
  },
});

Deno.test({
  name: "an accept waiting on a listener ends with ReleasedError when the listener closes",
  ignore: !linux,
  async fn() {
    const listener = Channel.listen(`@gpures-wait-accept-${Deno.pid}`);
    const accepts = Array.from({ length: 50 }, () => listener.accept());
    await sleep(20);
    assert.equal(pendingFdWaits(), 50);
    listener.close();
    for (const r of await Promise.allSettled(accepts)) {
      assert.equal(r.status, "rejected");
      assert.ok((r as PromiseRejectedResult).reason instanceof ReleasedError);
    }
    assert.equal(pendingFdWaits(), 0);
  },
});
