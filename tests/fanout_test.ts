// One stream, many consumers in one process (Channel.pair()): each consumer
// gets every frame published after it joined, under its own policy; a slot
// comes home when the last consumer that got it released it; joins out of
// range are refused with the reason; a format change fires "formatchange"
// before the first frame of the new format and refuses consumers whose caps do
// not take it; a waiting publish holds no thread and settles on close.

import assert from "node:assert/strict";
import {
  Channel,
  DeviceMismatchError,
  type DmaBufHandle,
  FormatChangeEvent,
  FrameFanout,
  FramePool,
  InvalidHandleError,
  ReleasedError,
  TimeoutError,
  UnsupportedError,
} from "../mod.ts";
import { eventually, paint, patternMeta, verify } from "./_support/frame_pattern.ts";
import type { SubscribeOptions } from "../mod.ts";

const linux = Deno.build.os === "linux";

async function consumer(fanout: FrameFanout, options: SubscribeOptions): Promise<Channel> {
  const [mine, theirs] = Channel.pair();
  const granted = theirs.subscribe(options);
  await fanout.join(mine);
  await granted;
  return theirs;
}

async function receiveFrame(channel: Channel): Promise<DmaBufHandle> {
  const frame = await channel.receive();
  assert.ok(frame !== null, "the channel ended");
  return frame as DmaBufHandle;
}

Deno.test({
  name:
    "three consumers, three policies: each gets the frame intact, the slot comes home after the last release",
  ignore: !linux,
  async fn() {
    using pool = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 8 });
    using fanout = FrameFanout.create({ pool });
    const policies = ["block", "dropOldest", "latest"] as const;
    const channels = [];
    for (const policy of policies) {
      channels.push(await consumer(fanout, { policy, window: 1, depth: 1 }));
    }
    const painted = await pool.acquire();
    painted.setMeta(patternMeta(6, paint(pool.planes(painted), 6)));
    await fanout.publish(painted);
    painted.release();
    const got = [];
    for (const channel of channels) {
      const f = await receiveFrame(channel);
      assert.equal(verify(channel.planes(f), f.meta), null);
      got.push(f);
    }
    assert.equal(pool.stats.inUse, 1);
    got[0].release();
    got[1].release();
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(pool.stats.inUse, 1, "the third consumer still holds the slot");
    got[2].release();
    await eventually(() => pool.stats.inUse === 0, "the slot came home");
    const stats = fanout.consumers();
    assert.deepEqual(stats.map((c) => c.policy), [...policies]);
    assert.ok(stats.every((c) => c.delivered === 1 && c.returned === 1 && c.inFlight === 0));
    assert.equal(fanout.stats.bound, 1 + 1 + 3);
    for (const c of channels) c.close();
  },
});

Deno.test({
  name:
    "a stalled dropOldest consumer drops its oldest frames; a block consumer gets all, and no acquire waits",
  ignore: !linux,
  async fn() {
    using pool = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 7 });
    using fanout = FrameFanout.create({ pool });
    const stalled = await consumer(fanout, { policy: "dropOldest", depth: 2, window: 2 });
    const steady = await consumer(fanout, { policy: "block", depth: 2, window: 2 });
    for (let seq = 0; seq < 20; seq++) {
      const frame = pool.tryAcquire();
      assert.ok(frame, `frame ${seq}: the pool covers the bound, so a slot is free`);
      frame.setMeta(patternMeta(seq, paint(pool.planes(frame), seq)));
      await fanout.publish(frame);
      frame.release();
      const got = await receiveFrame(steady);
      assert.equal(got.meta?.sequence, seq);
      assert.equal(verify(steady.planes(got), got.meta), null);
      got.release();
    }
    const [s] = fanout.consumers();
    assert.deepEqual([s.delivered, s.queued, s.dropped], [2, 2, 16]);
    const seqs = [];
    for (let i = 0; i < 4; i++) {
      const f = await receiveFrame(stalled);
      seqs.push(f.meta?.sequence);
      assert.equal(
        verify(stalled.planes(f), f.meta),
        null,
        "a dropped frame's slot was never reused under it",
      );
      f.release();
    }
    assert.deepEqual(seqs, [0, 1, 18, 19]);
    await eventually(() => pool.stats.inUse === 0, "every slot came home");
    assert.equal(pool.stats.waits, 0);
    stalled.close();
    steady.close();
  },
});

Deno.test({
  name:
    "publish() waits, holding no thread, for a full block consumer; tryPublish() says false; close() rejects the wait",
  ignore: !linux,
  async fn() {
    using pool = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 4 });
    const fanout = FrameFanout.create({ pool });
    const c = await consumer(fanout, { policy: "block", depth: 1, window: 1 });
    for (let i = 0; i < 2; i++) {
      using f = await pool.acquire();
      await fanout.publish(f);
    }
    using third = await pool.acquire();
    assert.equal(fanout.tryPublish(third), false);
    await assert.rejects(fanout.publish(third, { timeout: 30 }), TimeoutError);
    const waiting = fanout.publish(third);
    (await receiveFrame(c)).release(); // its window opens: the queued frame goes, the wait goes in
    await waiting;
    assert.equal(fanout.consumers()[0].delivered, 2);
    using fourth = await pool.acquire();
    const stuck = fanout.publish(fourth);
    await new Promise((r) => setTimeout(r, 20)); // the wait is registered with the fan-out
    fanout.close();
    await assert.rejects(
      stuck,
      (e) => e instanceof ReleasedError && /the fan-out was closed/.test(e.message),
    );
    assert.throws(() => fanout.tryPublish(fourth), ReleasedError);
    assert.equal(fanout.stats.left, 1);
    c.close();
  },
});

Deno.test({
  name:
    "joins out of range, past the pool or past maxConsumers are refused with the reason on both sides",
  ignore: !linux,
  async fn() {
    using fanout = FrameFanout.create({ slots: 6, maxConsumers: 1 });
    const refusals: [SubscribeOptions, string][] = [
      [{ policy: "latest", depth: 3 }, "depth"],
      [{ policy: "block", depth: 8, window: 8 }, "window"],
    ];
    for (const [options, field] of refusals) {
      const [mine, theirs] = Channel.pair();
      const answer = theirs.subscribe(options);
      await assert.rejects(
        fanout.join(mine),
        (e) => e instanceof Error && (e as UnsupportedError).field === field,
      );
      await assert.rejects(
        answer,
        (e) =>
          e instanceof UnsupportedError && e.field === field &&
          /the producer refused/.test(e.message),
      );
      assert.equal(mine.closed, true);
      assert.equal(await theirs.receive(), null);
      theirs.close();
    }
    const one = await consumer(fanout, { policy: "latest" });
    const [mine, theirs] = Channel.pair();
    const answer = theirs.subscribe({ policy: "latest" });
    await assert.rejects(fanout.join(mine), (e) => (e as UnsupportedError).field === "consumers");
    await assert.rejects(answer, UnsupportedError);
    theirs.close();
    assert.equal(fanout.stats.refused, 3);
    await assert.rejects(theirs.subscribe({ policy: "sometimes" as "block" }), InvalidHandleError);
    const [a, b] = Channel.pair();
    await assert.rejects(
      a.subscribe({ policy: "block", window: 65 }),
      (e) => (e as InvalidHandleError).field === "window",
    );
    await assert.rejects(fanout.join(b, { timeout: 20 }), TimeoutError);
    assert.equal(b.closed, false, "a join that timed out leaves the channel to its caller");
    a.close();
    b.close();
    one.close();
  },
});

Deno.test({
  name:
    "a resolution switch: formatchange before the first frame of the new size, none of the old after it, " +
    "and a consumer whose caps stop at the old size is refused with the reason",
  ignore: !linux,
  async fn() {
    const small = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 8 });
    const large = FramePool.create({ format: "NV12", width: 128, height: 64, slots: 8 });
    using fanout = FrameFanout.create({ slots: 8 });
    const row = {
      format: "NV12" as const,
      modifier: 0n,
      memory: ["dmaBuf" as const],
      maxWidth: 64,
      maxHeight: 32,
      rowAlign: 1,
      externalOnly: false,
    };
    const narrow = await consumer(fanout, { policy: "block", depth: 2, window: 1, caps: [row] });
    const any = await consumer(fanout, { policy: "block", depth: 2, window: 1 });
    const events: string[] = [];
    any.addEventListener("formatchange", (e) => {
      assert.ok(e instanceof FormatChangeEvent);
      const f = e;
      events.push(`${f.format} ${f.width}x${f.height}`);
    });
    const order: string[] = [];
    for (const [seq, pool] of [[0, small], [1, large], [2, small]] as const) {
      using f = await pool.acquire();
      f.setMeta(patternMeta(seq, paint(pool.planes(f), seq)));
      await fanout.publish(f);
      using got = await receiveFrame(any);
      order.push(`${events.length}:${got.describe().width}`);
      assert.equal(verify(any.planes(got), got.meta), null);
    }
    assert.deepEqual(events, ["NV12 64x32", "NV12 128x64", "NV12 64x32"]);
    assert.deepEqual(order, ["1:64", "2:128", "3:64"], "each event before its first frame");
    for (const want of [0]) { // every frame of the old format (one: it was published once), then the refusal
      const got = await receiveFrame(narrow);
      assert.equal(got.meta?.sequence, want);
      got.release();
    }
    await assert.rejects(
      narrow.receive(),
      (e) => e instanceof UnsupportedError && e.field === "caps" && /128x64/.test(e.message),
    );
    assert.equal(await narrow.receive(), null);
    assert.equal(fanout.stats.consumers, 1);
    narrow.close();
    any.close();
    small.close();
    large.close();
  },
});

Deno.test({
  name: "negotiate() picks the first producer row every consumer takes",
  ignore: !linux,
  async fn() {
    using fanout = FrameFanout.create({ slots: 16 });
    const row = (format: "NV12" | "RgbaU8", maxWidth = 0, maxHeight = 0) => ({
      format,
      modifier: 0n,
      memory: ["dmaBuf" as const],
      maxWidth,
      maxHeight,
      rowAlign: 1,
      externalOnly: false,
    });
    const a = await consumer(fanout, { policy: "latest", caps: [row("RgbaU8"), row("NV12")] });
    const b = await consumer(fanout, { policy: "latest", caps: [row("NV12", 1920, 1080)] });
    const pick = fanout.negotiate([row("RgbaU8"), row("NV12")], { width: 1280, height: 720 });
    assert.equal(pick.format, "NV12");
    assert.equal(pick.producerIndex, 1);
    assert.throws(
      () => fanout.negotiate([row("RgbaU8"), row("NV12")], { width: 3840, height: 2160 }),
      UnsupportedError,
    );
    a.close();
    b.close();
  },
});

Deno.test({
  name: "a consumer on another device than the frames' is refused at join (DeviceMismatchError, " +
    "field device) on both sides; one on the same device or naming none joins",
  ignore: !linux,
  async fn() {
    const gpu = (b: number) => ({ kind: "vulkanUuid" as const, bytes: new Uint8Array(16).fill(b) });
    using fanout = FrameFanout.create({ slots: 8, device: gpu(1) });
    const [mine, theirs] = Channel.pair();
    const asked = theirs.subscribe({ device: { kind: "cudaUuid", bytes: gpu(2).bytes } });
    const isMismatch = (e: unknown) =>
      e instanceof DeviceMismatchError && e.field === "device" && /another device/.test(e.message);
    await assert.rejects(fanout.join(mine), isMismatch);
    await assert.rejects(asked, isMismatch);
    theirs.close();
    assert.equal(fanout.stats.refused, 1);
    // A CUDA UUID and a Vulkan UUID with the same bytes are one GPU; a consumer naming none takes any.
    const same = await consumer(fanout, { device: { kind: "cudaUuid", bytes: gpu(1).bytes } });
    const any = await consumer(fanout, {});
    assert.equal(fanout.stats.consumers, 2);
    same.close();
    any.close();
    assert.throws(
      () =>
        FrameFanout.create({
          slots: 8,
          device: { kind: "gpu", bytes: new Uint8Array(16) } as never,
        }),
      (e) => e instanceof InvalidHandleError && e.field === "device",
    );
    const [a, b] = Channel.pair();
    await assert.rejects(
      b.subscribe({ device: { kind: "vulkanUuid", bytes: new Uint8Array(4) } }),
      (e) => e instanceof InvalidHandleError && e.field === "device",
    );
    a.close();
    b.close();
  },
});
