// A BYOB read (ReadableStreamBYOBReader.read(view)) transfers the view's
// ArrayBuffer: the bytes land in the memory, and the buffer the view was over
// is detached. Reading a decoder's pipe straight into a pool slot through
// pool.planes() or channel.planes() must go on working frame after frame:
// planes() re-makes views whose buffer was detached and never hands out a
// detached or empty one.

import assert from "node:assert/strict";
import { Channel, DmaBufHandle, FramePool, liveHandles, type PlaneView } from "../../mod.ts";

const linux = Deno.build.os === "linux";
const FRAMES = 12;

/** Checks that planes() gave views that are usable: attached, each as long as its plane. */
function attached(views: PlaneView[], where: string): PlaneView[] {
  for (const [i, v] of views.entries()) {
    assert.equal(
      (v.data.buffer as ArrayBuffer).detached,
      false,
      `${where}: plane ${i}'s view is detached`,
    );
    const bytes = v.stride * v.data.BYTES_PER_ELEMENT * (v.height - 1) + v.bytesPerRow;
    assert.equal(
      v.data.byteLength,
      bytes,
      `${where}: plane ${i}'s view has ${v.data.byteLength} bytes`,
    );
  }
  return views;
}

/**
 * Reads the packed bytes of every plane of one frame into the frame's memory,
 * in place: each read moves the buffer it filled, so the views are fetched
 * again before the next (the way the JSDoc of planes() shows). `rows` packed:
 * the tests use widths whose rows need no padding.
 */
async function readFrame(
  reader: ReadableStreamBYOBReader,
  planes: () => PlaneView[],
  where: string,
): Promise<number> {
  let reads = 0;
  for (let i = 0; i < planes().length; i++) {
    for (let filled = 0;;) {
      const { data } = planes()[i]; // fetched again: the read before detached the last one
      if (filled === data.byteLength) break;
      const into = new Uint8Array(data.buffer, data.byteOffset + filled, data.byteLength - filled);
      const { value, done } = await reader.read(into);
      assert.ok(!done && value, `${where}: the stream ended mid-frame`);
      assert.equal(
        (data.buffer as ArrayBuffer).detached,
        true,
        "a BYOB read transfers the buffer it fills",
      );
      filled += value.byteLength;
      reads++;
    }
  }
  return reads;
}

/** A frame's packed planes, read back through views (rows without padding). */
function packed(views: PlaneView[]): Uint8Array {
  const parts = views.map((v) =>
    new Uint8Array(v.data.buffer, v.data.byteOffset, v.data.byteLength)
  );
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), at += p.length;
  return out;
}

/** The first `length` bytes of a file, read without a BYOB reader. */
async function prefix(path: string, length: number): Promise<Uint8Array> {
  using file = await Deno.open(path);
  const out = new Uint8Array(length);
  for (let at = 0; at < length;) {
    const n = await file.read(out.subarray(at));
    if (n === null) throw new Error(`${path} has fewer than ${length} bytes`);
    at += n;
  }
  return out;
}

/**
 * Raw NV12 frames from ffmpeg (a decoder's pipe) when it is here, else through
 * cat (GPURES_TEST_SOURCE=cat picks cat).
 */
async function source(width: number, height: number, frames: number) {
  const bytes = (width * height * 3) / 2;
  const ffmpeg = [
    "-hide_banner",
    "-loglevel",
    "error",
    "-f",
    "lavfi",
    "-i",
    `testsrc=size=${width}x${height}:rate=25`,
    "-frames:v",
    String(frames),
    "-f",
    "rawvideo",
    "-pix_fmt",
    "nv12",
    "-",
  ];
  try {
    if (Deno.env.get("GPURES_TEST_SOURCE") === "cat") throw new Error("cat asked for");
    const out = await new Deno.Command("ffmpeg", {
      args: ffmpeg,
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    })
      .output();
    if (out.success && out.stdout.length === bytes * frames) {
      return {
        what: "ffmpeg",
        expected: out.stdout,
        command: new Deno.Command("ffmpeg", {
          args: ffmpeg,
          stdin: "null",
          stdout: "piped",
          stderr: "null",
        }),
      };
    }
  } catch {
    // no ffmpeg here: cat a file of frames instead
  }
  const expected = new Uint8Array(bytes * frames).map((_, i) => (i * 7 + (i >> 11)) & 0xff);
  // cat copies what it is fed on stdin to the pipe the test reads.
  return {
    what: "cat",
    expected,
    command: new Deno.Command("cat", { stdin: "piped", stdout: "piped" }),
  };
}

Deno.test({
  name:
    "A decoder's pipe read (BYOB) into pool.planes() frame after frame; a consumer sees every byte",
  ignore: !linux,
  async fn() {
    const live = liveHandles();
    const width = 64, height = 32;
    const src = await source(width, height, FRAMES);
    const child = src.command.spawn();
    const feeding = src.what === "cat"
      ? (async () => {
        const w = child.stdin.getWriter();
        await w.write(src.expected);
        await w.close();
      })()
      : Promise.resolve();
    const reader = child.stdout.getReader({ mode: "byob" });
    using pool = FramePool.create({ format: "NV12", width, height, slots: 3 });
    const [producer, consumer] = Channel.pair();
    const frameBytes = pool.layout.size;
    let reads = 0;
    for (let k = 0; k < FRAMES; k++) {
      const frame = await pool.acquire();
      const where = `frame ${k} (${src.what})`;
      reads += await readFrame(
        reader,
        () => attached(pool.planes(frame), where),
        where,
      );
      frame.setMeta({ sequence: k });
      await producer.send(frame);
      frame.release();

      const got = await consumer.receive();
      assert.ok(got instanceof DmaBufHandle);
      const views = attached(consumer.planes(got), `${where}, consumer`);
      const want = src.expected.subarray(k * frameBytes, (k + 1) * frameBytes);
      assert.deepEqual(
        packed(views),
        want,
        `${where}: the consumer reads what was read into the slot`,
      );
      assert.deepEqual(packed(got.planes()), want, `${where}: and so does a mapping of its own`);
      got.release();
    }
    assert.ok(reads >= 2 * FRAMES, "every plane took a read of its own at least");
    const { done } = await reader.read(new Uint8Array(16));
    assert.ok(done, "the source had exactly the frames read");
    reader.releaseLock();
    assert.ok((await child.status).success);
    producer.close();
    consumer.close();
    await feeding;
    pool.close();
    assert.equal(liveHandles(), live);
  },
});

Deno.test({
  name: "A file read (BYOB) into channel.planes() of received frames lands in the sender's slot",
  ignore: !linux,
  async fn() {
    const live = liveHandles();
    const width = 64, height = 32;
    using pool = FramePool.create({ format: "P010LE", width, height, slots: 2 });
    const size = pool.layout.size;
    // A file of frames: the first bytes of the deno executable (readable with --allow-read).
    const expected = await prefix(Deno.execPath(), size * FRAMES);
    using input = await Deno.open(Deno.execPath());
    const reader = input.readable.getReader({ mode: "byob" });
    const [producer, consumer] = Channel.pair();
    for (let k = 0; k < FRAMES; k++) {
      const frame = await pool.acquire();
      await producer.send(frame);
      const got = await consumer.receive();
      assert.ok(got instanceof DmaBufHandle);
      const where = `frame ${k}`;
      await readFrame(reader, () => attached(consumer.planes(got), where), where);
      const views = attached(consumer.planes(got), where);
      assert.equal(views[0].data.constructor, Uint16Array);
      const want = expected.subarray(k * size, (k + 1) * size);
      // The sender's own mapping of the slot (a second mapping of the same memory) has the bytes.
      assert.deepEqual(new Uint8Array(frame.map()), want, `${where}: the slot holds what was read`);
      assert.deepEqual(packed(pool.planes(frame)), want);
      got.release();
      frame.release();
    }
    reader.releaseLock();
    producer.close();
    consumer.close();
    pool.close();
    assert.equal(liveHandles(), live);
  },
});

Deno.test({
  name:
    "planes() after a view was transferred away: new views, the moved buffer still the slot's memory",
  ignore: !linux,
  fn() {
    using pool = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 1 });
    using frame = pool.tryAcquire()!;
    const first = pool.planes(frame);
    assert.equal(pool.planes(frame), first, "nothing detached: the same views, no new ones");
    const moved = new Uint8Array((first[0].data.buffer as ArrayBuffer).transfer()); // as postMessage with transfer would
    assert.equal(first[0].data.length, 0);
    const again = pool.planes(frame);
    assert.notEqual(again, first);
    assert.equal(again[0].data.length, 64 * 32);
    assert.equal(again[1].data.length, 64 * 16);
    moved[5] = 77;
    again[1].data[0] = 88;
    assert.equal(again[0].data[5], 77, "the new views are over the same memory");
    assert.equal(moved[2048], 88);
    assert.equal(pool.planes(frame), again);
  },
});
