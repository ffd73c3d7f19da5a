// Two processes, one frame memory: a producer process sends memfd-backed
// DmaBufHandles over a Channel (a Unix socket, fds attached with SCM_RIGHTS);
// this process, the consumer, maps each one and reads its pixels in place.
// No pixel crosses the socket: a message is the frame's descriptor (~100
// bytes) and its fd. The consumer trusts nothing the producer sends: each
// memfd is sealed against shrinking as it arrives (so the producer cannot
// truncate it under the consumer's mapping), and an fd that cannot back a
// frame, or memory that could still shrink, is refused at receive().
//
//   deno run --allow-ffi --allow-run examples/two_process.ts [--frames 60]
//
// --bench compares the per-frame cost with sending the pixels themselves
// over a Unix stream socket (Deno.listen/Deno.connect), at three frame sizes:
//
//   deno run --allow-ffi --allow-run --allow-read --allow-write --allow-net examples/two_process.ts --bench
//
// Linux only (memfds stand in for a decoder's dma-bufs; DmaBufHandle exists
// on Linux and Android).

import { Channel, DmaBufHandle, liveHandles, liveMappings } from "../mod.ts";
import { AB24, memfd } from "./_memfd.ts";

const args = Deno.args;
const option = (name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
if (Deno.build.os !== "linux") throw new Error("this example needs Linux (memfds)");

/** A memfd-backed RGBA frame whose every pixel is `value`; the handle owns the fd. */
function makeFrame(width: number, height: number, value: number): DmaBufHandle {
  const frame = DmaBufHandle.create({
    fds: [memfd(width * height * 4)],
    fourcc: AB24,
    modifier: 0n,
    width,
    height,
    planes: [{ objectIndex: 0, offset: 0, stride: width * 4 }],
  }, { takeOwnership: true });
  new Uint32Array(frame.map()).fill(value);
  frame.unmap();
  return frame;
}

/** Reads every 64th byte (one per cache line), as a consumer that looks at every pixel would. */
function touch(pixels: Uint32Array): number {
  let sum = 0;
  for (let i = 0; i < pixels.length; i += 16) sum = (sum + pixels[i]) | 0;
  return sum;
}

function spawnSelf(...rest: string[]): Deno.ChildProcess {
  const flags = ["--allow-ffi", "--allow-env=GPURES_LIB"];
  if (rest.includes("bytes")) {
    flags.push("--allow-net", `--allow-read=${rest[1]}`, `--allow-write=${rest[1]}`);
  }
  return new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, import.meta.filename!, ...rest],
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
}

// ------------------------------------------------------------------ producer

async function produce(path: string, mode: string, frames: number, w: number, h: number) {
  if (mode === "bytes") {
    // The baseline: the pixels themselves cross the socket.
    const pool = Array.from({ length: 4 }, (_, i) => new Uint8Array(w * h * 4).fill(i + 1));
    using conn = await Deno.connect({ transport: "unix", path });
    for (let n = 0; n < frames; n++) {
      const bytes = pool[n % pool.length];
      for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
    }
    return;
  }
  using channel = await Channel.connect(path);
  if (mode === "handles") {
    // Benchmark: a ring of frames made up front, each sent many times.
    const pool = Array.from({ length: 4 }, (_, i) => makeFrame(w, h, 0xff000000 + i));
    for (let n = 0; n < frames; n++) await channel.send(pool[n % pool.length]);
    pool.forEach((f) => f.release());
    return;
  }
  // The example: a new frame per picture, released here once sent (the
  // consumer's fd keeps its memory).
  for (let n = 0; n < frames; n++) {
    using frame = makeFrame(w, h, 0xff000000 | n << 8 | 0x40);
    await channel.send(frame);
  }
}

// ------------------------------------------------------------------ consumer

interface Run {
  frames: number;
  ms: number;
}

/** Receives `frames` frames from a producer process; times from the first frame to the last. */
async function consumeHandles(
  frames: number,
  w: number,
  h: number,
  mode: "example" | "handles",
  read: boolean,
): Promise<Run> {
  const path = `/tmp/gpures-two-process-${Deno.pid}.sock`;
  using listener = Channel.listen(path);
  const producer = spawnSelf("--producer", path, mode, String(frames), String(w), String(h));
  using channel = await listener.accept();
  let got = 0, start = 0, checksum = 0;
  for await (const frame of channel) {
    if (got === 0) start = performance.now();
    if (!(frame instanceof DmaBufHandle)) throw new Error(`unexpected ${frame.kind}`);
    if (read || mode === "example") {
      const pixels = new Uint32Array(frame.map()); // the producer's pages, mapped here
      if (mode === "example") {
        const want = 0xff000000 | got << 8 | 0x40;
        if (pixels[0] >>> 0 !== want >>> 0 || pixels[pixels.length - 1] >>> 0 !== want >>> 0) {
          throw new Error(`frame ${got}: pixel 0x${(pixels[0] >>> 0).toString(16)}`);
        }
      }
      checksum += touch(pixels);
    }
    frame.release(); // unmaps, closes the received fd
    got++;
  }
  const ms = performance.now() - start;
  if (!(await producer.status).success) throw new Error("the producer failed");
  if (got !== frames) throw new Error(`received ${got} of ${frames} frames`);
  void checksum;
  return { frames: got, ms };
}

async function consumeBytes(frames: number, w: number, h: number): Promise<Run> {
  const path = `/tmp/gpures-two-process-bytes-${Deno.pid}.sock`;
  try {
    Deno.removeSync(path);
  } catch { /* not there */ }
  using listener = Deno.listen({ transport: "unix", path });
  const producer = spawnSelf("--producer", path, "bytes", String(frames), String(w), String(h));
  using conn = await listener.accept();
  const frame = new Uint8Array(w * h * 4);
  const pixels = new Uint32Array(frame.buffer);
  let start = 0, checksum = 0;
  for (let n = 0; n < frames; n++) {
    for (let at = 0; at < frame.length;) {
      const r = await conn.read(frame.subarray(at));
      if (r === null) throw new Error("the producer closed early");
      if (n === 0 && at === 0) start = performance.now();
      at += r;
    }
    checksum += touch(pixels);
  }
  const ms = performance.now() - start;
  void checksum;
  if (!(await producer.status).success) throw new Error("the producer failed");
  Deno.removeSync(path);
  return { frames, ms };
}

// ---------------------------------------------------------------------- main

if (args[0] === "--producer") {
  const [, path, mode, frames, w, h] = args;
  await produce(path, mode, Number(frames), Number(w), Number(h));
} else if (args.includes("--bench")) {
  console.log("per-frame cost at the consumer, producer and consumer in two processes");
  console.log("(frames sent back to back; time from the first frame's arrival to the last)\n");
  const rows: string[][] = [[
    "frame",
    "handle: receive+release",
    "handle: +map+read",
    "bytes over a Unix socket (+read)",
    "bytes / handle",
  ]];
  for (const [w, h] of [[640, 360], [1920, 1080], [3840, 2160]]) {
    const size = w * h * 4;
    const n = (budget: number) => Math.max(30, Math.min(1000, Math.floor(budget / size)));
    await consumeHandles(50, w, h, "handles", false); // warm up
    const bare = await consumeHandles(2000, w, h, "handles", false);
    const mapped = await consumeHandles(n(1e9), w, h, "handles", true);
    const bytes = await consumeBytes(n(4e9), w, h);
    const us = (r: Run) => (r.ms * 1000) / r.frames;
    rows.push([
      `${w}x${h} RGBA (${(size / 1048576).toFixed(1)} MiB)`,
      `${us(bare).toFixed(1)} µs`,
      `${us(mapped).toFixed(1)} µs`,
      `${us(bytes).toFixed(1)} µs (${((size / (us(bytes) / 1e6)) / 1e9).toFixed(2)} GB/s)`,
      `${(us(bytes) / us(bare)).toFixed(0)}x`,
    ]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  for (const r of rows) console.log(r.map((cell, c) => cell.padEnd(widths[c])).join("  "));
  console.log(
    "\nhandle: receive+release is what moving a frame costs (a GPU importer takes it from there);" +
      "\n+map+read maps every frame anew and reads each cache line: that adds the page faults of a" +
      "\nfresh mapping, which depend on the machine (a VM's nested paging makes them slow). The" +
      "\nbytes column copies every frame through the kernel into one reused, already-mapped buffer.",
  );
  console.log(`\nlive handles: ${liveHandles()}, live mappings: ${liveMappings()}`);
} else {
  const frames = Number(option("--frames", "60"));
  const [w, h] = [1280, 720];
  const run = await consumeHandles(frames, w, h, "example", true);
  console.log(
    `received ${run.frames} frames of ${w}x${h} RGBA from another process and checked their ` +
      `pixels in place, at the producer's pace (a new memfd per frame): ` +
      `${(run.ms / run.frames).toFixed(1)} ms per frame`,
  );
  console.log(`live handles: ${liveHandles()}, live mappings: ${liveMappings()}`);
  if (liveHandles() !== 0 || liveMappings() !== 0) Deno.exit(1);
}
