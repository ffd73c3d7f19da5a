// Back-pressure on a frame session: a consumer process that reads in bursts
// (tests/hostile/_peer_burst_consumer.ts) lets the producer's socket fill
// again and again. Channel.send() then waits for room and delivers; it never
// resolves for a message that did not go. The producer's pool has one slot,
// so a frame counted as sent but never sent would keep that slot out for
// good: the next acquire would time out.

import assert from "node:assert/strict";
import { Channel, CpuFence, DmaBufHandle, FramePool, ReleasedError } from "../../mod.ts";
import { linux, memfd, Peer, socketPath } from "./_peer_wire.ts";
import { eventually } from "../_support/frame_pattern.ts";

const libc = linux ? (await import("../_support/libc.ts")).libc : undefined;

/** Shrinks the socket's send buffer to the kernel's minimum: a few datagrams fill it. */
function smallSendBuffer(fd: number): void {
  const SOL_SOCKET = 1, SO_SNDBUF = 7;
  assert.equal(libc!.setsockopt(fd, SOL_SOCKET, SO_SNDBUF, new Int32Array([1]), 4), 0);
}

/** A plain DmaBufHandle (no buffer identity): RGBA 32x32 over a sealable memfd. */
function plainHandle(): DmaBufHandle {
  const fd = memfd(4096);
  return DmaBufHandle.create({
    fds: [fd],
    fourcc: 0x34324241, // AB24
    modifier: 0n,
    width: 32,
    height: 32,
    planes: [{ objectIndex: 0, offset: 0, stride: 128 }],
  }, { takeOwnership: true });
}

interface Report {
  messages: number;
  frames: number;
  handles: number;
  pauses: number;
  wrong: string[];
}

/** A listener, the burst consumer connected to it, and the accepted channel (small send buffer). */
async function withBurstConsumer(
  burst: number,
  pause: number,
  fn: (channel: Channel) => Promise<void>,
): Promise<Report> {
  const path = socketPath("backpressure");
  using listener = Channel.listen(path);
  const peer = new Peer("./_peer_burst_consumer.ts", [path, String(burst), String(pause)], [
    "--allow-ffi",
    "--allow-env=GPURES_LIB",
  ]);
  try {
    const channel = await listener.accept();
    smallSendBuffer(channel.fd);
    try {
      await fn(channel);
    } finally {
      channel.close(); // the consumer reads everything sent, then the end
    }
    const line = await peer.out.next();
    const { status, stderr } = await peer.done();
    assert.equal(status.code, 0, stderr);
    return JSON.parse(line ?? "null");
  } finally {
    peer.kill();
  }
}

Deno.test({
  name: "10,000 frames of a 1-slot pool reach a consumer that reads in bursts, in order, with " +
    "their fences; each send settles only once its message went, and the slot always comes home",
  ignore: !linux,
  async fn() {
    const FRAMES = 10_000, HANDLES_PER_FRAME = 6;
    using pool = FramePool.create({ format: "RgbaU8", width: 32, height: 32, slots: 1 });
    using plain = plainHandle();
    let sent = 0;
    const report = await withBurstConsumer(500, 5, async (channel) => {
      for (let i = 0; i < FRAMES; i++) {
        using frame = await pool.acquire({ timeout: 5000 }); // the one slot, home again
        frame.setMeta({ sequence: sent });
        using fence = sent % 4 === 0 ? CpuFence.create() : undefined;
        if (fence) {
          fence.signal();
          frame.setFences({ acquire: fence });
        }
        sent++;
        await channel.send(frame); // opens the session: the handles after it go through it too
        // Handles without a buffer identity pile up in the socket while the consumer sleeps.
        for (let k = 0; k < HANDLES_PER_FRAME; k++) {
          plain.setMeta({ sequence: sent++ });
          await channel.send(plain);
        }
        assert.equal(channel.stats.frames, sent, "stats.frames counts what went");
        assert.ok(channel.stats.inFlight <= 1, "only the one slot's frame can be in flight");
      }
      await eventually(() => pool.stats.inUse === 0, "the slot came home after the last frame");
      assert.equal(channel.stats.inFlight, 0);
      assert.equal(channel.stats.returned, FRAMES);
    });
    assert.deepEqual(report.wrong, []);
    assert.equal(report.messages, sent);
    assert.equal(report.frames, FRAMES);
    assert.equal(report.handles, FRAMES * HANDLES_PER_FRAME);
    assert.ok(report.pauses > 100, `the consumer paused ${report.pauses} times`);
  },
});

Deno.test({
  name: "sends made while one waits for room keep their order; a send still waiting when the " +
    "channel closes rejects with ReleasedError",
  ignore: !linux,
  async fn() {
    const [a, b] = Channel.pair();
    smallSendBuffer(a.fd);
    using pool = FramePool.create({ format: "RgbaU8", width: 32, height: 32, slots: 1 });
    const pending: Promise<void>[] = [];
    const handles: DmaBufHandle[] = [];
    {
      using frame = pool.tryAcquire()!;
      frame.setMeta({ sequence: 0 });
      pending.push(a.send(frame)); // a pooled frame first: it opens the session
    }
    // Nobody reads b: queue sends without awaiting them until some wait for room. Each is
    // released at once: a waiting send holds its own reference. (A send reads the metadata
    // when it goes, so each has a handle of its own.)
    for (let i = 1; i < 64; i++) {
      const h = plainHandle();
      h.setMeta({ sequence: i });
      pending.push(a.send(h));
      handles.push(h);
    }
    handles.forEach((h) => h.release());
    const went = a.stats.frames;
    assert.ok(went > 0 && went < 64, `${went} of 64 went at once; the rest wait`);
    const read: number[] = [];
    for (let i = 0; i < 10; i++) {
      using got = (await b.receive())!;
      read.push(got.meta!.sequence!);
    }
    // Those that waited go as room comes, in the order they were made.
    await Promise.all(pending.slice(0, went + 5));
    const outcomes = pending.map((p) => p.then(() => "sent", (e) => e));
    a.close();
    const settled = await Promise.all(outcomes);
    const rejected = settled.filter((o) => o !== "sent");
    assert.ok(rejected.length > 0, "some sends still waited at the close");
    for (const e of rejected) {
      assert.ok(e instanceof ReleasedError, String(e));
      assert.equal((e as ReleasedError).field, "channel");
    }
    const delivered = settled.length - rejected.length;
    assert.deepEqual(settled.slice(0, delivered), Array(delivered).fill("sent"), "a prefix went");
    for (;;) {
      const got = await b.receive();
      if (got === null) break;
      read.push(got.meta!.sequence!);
      got.release();
    }
    assert.deepEqual(read, [...Array(delivered).keys()], "what went arrived, in order");
    b.close();
  },
});
