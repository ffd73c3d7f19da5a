// Codecs over FFmpeg: frames of a pool encoded in place and decoded into the
// decoder's own pool come back byte for byte (x264 lossless), in order, with
// their timing and visible rectangle, and nothing is copied on the way. The
// work runs off the isolate's thread. Skipped where FFmpeg (with libx264) is
// missing; CI installs it.

import assert from "node:assert/strict";
import {
  codecStats,
  type DmaBufHandle,
  type EncodedPacket,
  FrameDecoder,
  FrameEncoder,
  FramePool,
  type GpuResourceError,
  isCodecSupported,
  UnsupportedError,
} from "../mod.ts";

const linux = Deno.build.os === "linux";
const available = linux && isCodecSupported("libx264", "encoder") &&
  isCodecSupported("h264", "decoder");
const W = 200, H = 150;

function codecTest(name: string, fn: () => Promise<void>): void {
  Deno.test({ name, ignore: !available, fn });
}

const sample = (n: number, p: number, x: number, y: number) =>
  (x * 3 + y * 7 + n * 11 + p * 50 + ((x ^ y) & 8) * 4) & 0xff;

function paint(frame: DmaBufHandle, n: number): void {
  frame.planes().forEach((plane, p) => {
    for (let y = 0; y < plane.height; y++) {
      for (let x = 0; x < plane.width; x++) plane.data[y * plane.stride + x] = sample(n, p, x, y);
    }
  });
  frame.setMeta({
    timing: { pts: 1000 + n * 40, duration: 40, timebaseNum: 1, timebaseDen: 1000 },
  });
}

/** Whether the visible samples of a decoded frame are frame n's. */
function holds(frame: DmaBufHandle, n: number): boolean {
  const v = frame.meta!.visible!;
  return frame.planes().every((plane, p) => {
    const sub = p ? 2 : 1;
    for (let y = 0; y < (p ? H / 2 : H); y++) {
      for (let x = 0; x < (p ? W / 2 : W); x++) {
        const at = (v.y / sub + y) * plane.stride + v.x / sub + x;
        if (plane.data[at] !== sample(n, p, x, y)) return false;
      }
    }
    return true;
  });
}

async function encodeFrames(count: number): Promise<EncodedPacket[]> {
  using pool = FramePool.create({ format: "YUV420P", width: W, height: H, slots: 4 });
  const encoder = FrameEncoder.create({
    codec: "libx264",
    options: "preset=ultrafast:qp=0",
    format: "YUV420P",
    width: W,
    height: H,
    timebase: [1, 1000],
    framerate: [25, 1],
  });
  const packets: EncodedPacket[] = [];
  for (let n = 0; n < count; n++) {
    using frame = await pool.acquire({ timeout: 5000 });
    paint(frame, n);
    packets.push(...await encoder.encode(frame));
  }
  packets.push(...await encoder.flush());
  await encoder.close();
  return packets;
}

codecTest(
  "frames encoded in place decode into pool slots byte for byte, with no copy",
  async () => {
    const before = codecStats();
    const packets = await encodeFrames(10);
    assert.equal(packets.length, 10);
    assert.ok(packets[0].key);
    const decoder = FrameDecoder.create({ codec: "h264", timebase: [1, 1000] });
    const frames: DmaBufHandle[] = [];
    for (const p of packets) frames.push(...await decoder.decode(p));
    frames.push(...await decoder.flush());
    assert.equal(frames.length, 10);
    frames.forEach((f, n) => {
      assert.equal(f.kind, "DmaBufHandle");
      assert.equal(f.meta?.sequence, n);
      assert.equal(f.meta?.timing?.pts, 1000 + n * 40);
      assert.deepEqual(f.meta?.visible, { x: 0, y: 0, width: W, height: H });
      assert.ok(holds(f, n), `frame ${n} differs`);
      f.release();
    });
    const after = codecStats();
    assert.equal(after.decoded - before.decoded, 10n);
    assert.equal(after.encoded - before.encoded, 10n);
    assert.equal(after.copiedBytes, before.copiedBytes);
    await decoder.close();
  },
);

codecTest(
  "a decoder whose frames are all held stalls until their release, losing none",
  async () => {
    const packets = await encodeFrames(8);
    const decoder = FrameDecoder.create({ codec: "h264", slots: 3, timebase: [1, 1000] });
    const held: DmaBufHandle[] = [];
    for (const p of packets) held.push(...await decoder.decode(p)); // stalls once 3 are held
    assert.ok(decoder.stalled);
    assert.ok(held.length > 0 && held.length < 8);
    await assert.rejects(decoder.flush(), (e: GpuResourceError) => e.field === "slots");
    let next = 0;
    const take = (f: DmaBufHandle) => {
      assert.equal(f.meta?.sequence, next);
      assert.ok(holds(f, next), `frame ${next} differs`);
      f.release();
      next++;
    };
    held.forEach(take);
    for (let tries = 0; (next < 8 || decoder.stalled) && tries < 16; tries++) {
      (await decoder.flush()).forEach(take);
    }
    assert.equal(next, 8);
    assert.ok(!decoder.stalled);
    await decoder.close();
  },
);

codecTest("a decoded frame re-encodes from its visible rectangle, in place", async () => {
  const before = codecStats();
  const decoder = FrameDecoder.create({ codec: "h264", timebase: [1, 1000] });
  const encoder = FrameEncoder.create({
    codec: "libx264",
    options: "preset=ultrafast:qp=0",
    format: "YUV420P",
    width: W, // the visible size: the decoded frames are larger (aligned), cropped by metadata
    height: H,
    timebase: [1, 1000],
  });
  const again: EncodedPacket[] = [];
  const reencode = async (frames: DmaBufHandle[]) => {
    for (const f of frames) {
      assert.ok(f.describe().width > W || f.describe().height > H);
      again.push(...await encoder.encode(f));
      f.release(); // the encoder holds its own reference
    }
  };
  for (const p of await encodeFrames(6)) await reencode(await decoder.decode(p));
  await reencode(await decoder.flush());
  again.push(...await encoder.flush());
  await encoder.close();
  assert.equal(again.length, 6);
  const check = FrameDecoder.create({ codec: "h264", timebase: [1, 1000] });
  const frames: DmaBufHandle[] = [];
  for (const p of again) frames.push(...await check.decode(p));
  frames.push(...await check.flush());
  assert.equal(frames.length, 6);
  frames.forEach((f, n) => (assert.ok(holds(f, n), `frame ${n} differs`), f.release()));
  await check.close();
  await decoder.close();
  assert.equal(codecStats().copiedBytes, before.copiedBytes);
});

codecTest(
  "calls made while a run goes on wait their turn, and close() waits for them",
  async () => {
    const packets = await encodeFrames(6);
    const decoder = FrameDecoder.create({ codec: "h264", timebase: [1, 1000] });
    const pending = packets.map((p) => decoder.decode(p)); // none awaited: they queue behind each other
    const flushed = decoder.flush();
    const closed = decoder.close();
    const frames = [...(await Promise.all(pending)).flat(), ...await flushed];
    await closed;
    assert.equal(frames.length, 6);
    frames.forEach((
      f,
      n,
    ) => (assert.equal(f.meta?.sequence, n), assert.ok(holds(f, n)), f.release()));
  },
);

codecTest("bad codec options are refused by name", async () => {
  assert.throws(
    () => FrameDecoder.create({ codec: "no-such-codec" }),
    (e: GpuResourceError) => e instanceof UnsupportedError && e.field === "codec",
  );
  assert.throws(
    () => FrameDecoder.create({ codec: "h264", slots: 1 }),
    (e: GpuResourceError) => e.field === "slots",
  );
  assert.throws(
    () =>
      FrameEncoder.create({
        codec: "libx264",
        options: "no_such_option=1",
        format: "YUV420P",
        width: W,
        height: H,
      }),
    (e: GpuResourceError) => e.field === "options",
  );
  using pool = FramePool.create({ format: "NV12", width: W, height: H, slots: 1 });
  const encoder = FrameEncoder.create({ codec: "libx264", format: "YUV420P", width: W, height: H });
  using nv12 = pool.tryAcquire()!;
  await assert.rejects(encoder.encode(nv12), (e: GpuResourceError) => e.field === "frame.fourcc");
  await encoder.close();
});
