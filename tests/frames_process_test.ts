// Pooled frames to a real second process (tests/_support/frame_consumer.ts,
// a Deno child that connects with Channel.connect(path, { wait })): every
// frame arrives intact, and the producer's slots come back when the consumer
// releases, dies, or closes its channel.

import assert from "node:assert/strict";
import { Channel, type DmaBufHandle, FramePool } from "../mod.ts";
import { acquirePainted, eventually, paint, patternMeta } from "./_support/frame_pattern.ts";
import { Peer } from "./hostile/_peer_wire.ts";

const linux = Deno.build.os === "linux";
const CONSUMER = "../_support/frame_consumer.ts"; // relative to _peer_wire.ts
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let serial = 0;
const abstractPath = () => `@gpures-frames-process-${Deno.pid}-${serial++}`;

function consumer(mode: string, path: string, count: number): Peer {
  return new Peer(CONSUMER, [mode, path, String(count)], ["--allow-ffi", "--allow-env=GPURES_LIB"]);
}

/**
 * A listener at a new abstract path, a consumer told `mode` started against
 * it (before the listener exists: it waits), and the accepted channel, for
 * `fn`; the consumer is stopped at the end.
 */
async function withConsumer(
  mode: string,
  count: number,
  fn: (channel: Channel, peer: Peer) => Promise<void>,
): Promise<void> {
  const path = abstractPath();
  const peer = consumer(mode, path, count);
  try {
    await sleep(50); // the consumer starts connecting before anyone listens
    using listener = Channel.listen(path);
    const ended = peer.child.status.then((s) => {
      throw new Error(`the consumer ended (${s.code}) before connecting`);
    });
    using channel = await Promise.race([listener.accept(), ended]);
    await fn(channel, peer);
  } finally {
    peer.kill();
    await peer.done();
  }
}

/** Acquires frame `seq` (waiting up to 5 s), paints it and sends it; the session keeps it. */
async function sendFrame(pool: FramePool, channel: Channel, seq: number): Promise<bigint> {
  using frame = await pool.acquire({ timeout: 5000 });
  frame.setMeta(patternMeta(seq, paint(pool.planes(frame), seq)));
  await channel.send(frame);
  return frame.bufferId!;
}

Deno.test({
  name: "200 NV12 640x360 frames reach another process intact, over the pool's few buffers",
  ignore: !linux,
  async fn() {
    const FRAMES = 200, SLOTS = 4;
    using pool = FramePool.create({ format: "NV12", width: 640, height: 360, slots: SLOTS });
    await withConsumer("verify", FRAMES, async (channel, peer) => {
      for (let seq = 0; seq < FRAMES; seq++) await sendFrame(pool, channel, seq);
      const report = JSON.parse((await peer.out.next())!);
      assert.deepEqual(report, { ...report, frames: FRAMES, intact: FRAMES, corrupt: 0 });
      assert.equal(report.first, null);
      assert.ok(report.buffers >= 1 && report.buffers <= SLOTS, `${report.buffers} buffers`);
      assert.equal(report.announced, report.buffers, "each buffer announced once");
      const { status, stderr } = await peer.done();
      assert.ok(status.success, stderr);
      await eventually(() => channel.stats.inFlight === 0, "every frame came back");
      assert.equal(channel.stats.frames, FRAMES);
      assert.equal(channel.stats.returned, FRAMES);
      assert.equal(channel.stats.announced, report.announced);
      assert.equal(channel.stats.refused, 0);
      assert.equal(pool.stats.inUse, 0);
    });
  },
});

Deno.test({
  name: "a consumer killed (SIGKILL) while holding 3 frames gives every slot back to the pool",
  ignore: !linux,
  async fn() {
    using pool = FramePool.create({ format: "NV12", width: 640, height: 360, slots: 3 });
    await withConsumer("hold", 3, async (channel, peer) => {
      for (let seq = 0; seq < 3; seq++) await sendFrame(pool, channel, seq);
      await peer.out.expect("holding 3");
      assert.equal(pool.tryAcquire(), null, "the consumer holds every slot");
      assert.equal(pool.stats.inUse, 3);
      const t0 = performance.now();
      const waiting = pool.acquire({ timeout: 2000 });
      peer.kill();
      const frame = await waiting;
      assert.ok(performance.now() - t0 < 2000);
      frame.release();
      await eventually(() => pool.stats.inUse === 0, "every slot back");
      assert.equal(channel.stats.inFlight, 0);
      const again = [pool.tryAcquire(), pool.tryAcquire(), pool.tryAcquire()];
      assert.ok(again.every((f) => f !== null), "all 3 slots can be acquired");
      for (const f of again) f!.release();
    });
  },
});

Deno.test({
  name: "a consumer that closes its channel still holding frames keeps their memory: what it " +
    "holds is never overwritten by the producer's next frames",
  ignore: !linux,
  async fn() {
    using pool = FramePool.create({ format: "NV12", width: 640, height: 360, slots: 3 });
    await withConsumer("close-holding", 3, async (channel, peer) => {
      const sent = new Set<bigint>();
      for (let seq = 0; seq < 3; seq++) sent.add(await sendFrame(pool, channel, seq));
      await peer.out.expect("closed");
      // The design: the closing receiver sends KEEP for each buffer it still reads; the
      // producer retires those buffers and gives each slot fresh memory (a new bufferId).
      // FAILS today: Channel.close() shuts the socket down before gpures_session_close()
      // sends the KEEPs, so they never leave; the producer sees only the end of the
      // channel and gets its slots back with the memory the consumer still reads.
      let next: DmaBufHandle[] = [];
      try {
        next = await acquirePainted(pool, [100, 101, 102]);
        await peer.say("check");
        const report = JSON.parse((await peer.out.next())!);
        assert.deepEqual(report, { intact: 3, corrupt: 0, first: null }, "the held frames' bytes");
        for (const f of next) {
          assert.ok(!sent.has(f.bufferId!), "a held buffer is handed out again");
        }
      } finally {
        for (const f of next) f.release();
      }
      assert.equal(channel.stats.inFlight, 0);
    });
  },
});
