// Decoding H.264 into frames, against the ffmpeg CLI on the same stream in the
// same run (its floor: libavcodec with nothing around it), one decoding
// thread each:
//   (a) `ffmpeg -threads 1 -i in.h264 -f null -`: the CLI's own decode;
//   (b) FrameDecoder: packets in, pooled DmaBufHandles out, each released;
//   (c) VideoDecoder: the same through WebCodecs (chunks, VideoFrames);
//   (d) the pipe path of before: `ffmpeg -f rawvideo pipe:1` read into slots
//       of a FramePool, a copy per frame.
// Each as frames per second and as a ratio to (a), whose time is the CLI's
// own (`-benchmark`'s rtime: no process start, the stream read from a file).
// Encoding: (e) the CLI encoding raw frames from a file with libx264
// ultrafast, against (f) FrameEncoder reading pool slots in place.
// Files: (g) `ffmpeg -threads 1 -i in.mp4 -f null -` (demux and decode),
// against (h) Demuxer's chunks into VideoDecoder, the same mp4.
//
//   deno run -A bench/codec_bench.ts [--size 1920x1080] [--frames 120]

import {
  codecStats,
  Demuxer,
  EncodedVideoChunk,
  FrameDecoder,
  FrameEncoder,
  FramePool,
  h264AccessUnits,
  VideoDecoder,
} from "../mod.ts";

const args = Deno.args;
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const size = option("--size", "1920x1080");
const frames = Number(option("--frames", "120"));
const [W, H] = size.split("x").map(Number);

async function cli(argv: string[], input?: Uint8Array): Promise<{ out: Uint8Array; ms: number }> {
  const start = performance.now();
  const child = new Deno.Command("ffmpeg", {
    args: ["-hide_banner", "-loglevel", "error", "-nostdin", ...argv],
    stdin: input ? "piped" : "null",
    stdout: "piped",
  }).spawn();
  if (input) {
    const w = child.stdin.getWriter();
    await w.write(input);
    await w.close();
  }
  const r = await child.output();
  if (!r.success) throw new Error(`ffmpeg ${argv.join(" ")} failed`);
  return { out: r.stdout, ms: performance.now() - start };
}

const source = ["-f", "lavfi", "-i", `testsrc2=size=${size}:rate=30`, "-frames:v", `${frames}`];
const { out: stream } = await cli([
  ...source,
  "-c:v",
  "libx264",
  "-preset",
  "veryfast",
  "-f",
  "h264",
  "pipe:1",
]);
const units = h264AccessUnits(stream);

async function frameDecoder(): Promise<number> {
  const start = performance.now();
  const d = FrameDecoder.create({ codec: "h264", threads: 1 });
  let n = 0;
  for (const [i, data] of units.entries()) {
    for (const f of await d.decode({ data, timestamp: BigInt(i) })) f.release(), n++;
  }
  for (const f of await d.flush()) f.release(), n++;
  await d.close();
  if (n !== frames) throw new Error(`FrameDecoder gave ${n} frames`);
  return performance.now() - start;
}

async function videoDecoder(): Promise<number> {
  const start = performance.now();
  let n = 0;
  const d = new VideoDecoder({ output: (f) => (f.close(), n++), error: (e) => console.error(e) });
  d.configure({ codec: "avc1.640028" });
  units.forEach((data, i) =>
    d.decode(new EncodedVideoChunk({ type: i ? "delta" : "key", timestamp: i, data }))
  );
  await d.flush();
  d.close();
  if (n !== frames) throw new Error(`VideoDecoder gave ${n} frames`);
  return performance.now() - start;
}

async function demuxAndDecode(path: string): Promise<number> {
  const start = performance.now();
  await using input = await Demuxer.open(path);
  const track = input.tracks.find((t) => t.config)!;
  let n = 0;
  const d = new VideoDecoder({ output: (f) => (f.close(), n++), error: (e) => console.error(e) });
  d.configure(track.config!);
  for await (const chunk of input.chunks(track.index)) d.decode(chunk);
  await d.flush();
  d.close();
  if (n !== frames) throw new Error(`Demuxer and VideoDecoder gave ${n} frames`);
  return performance.now() - start;
}

async function pipePath(): Promise<number> {
  const start = performance.now();
  using pool = FramePool.create({ format: "YUV420P", width: W, height: H, slots: 4 });
  const child = new Deno.Command("ffmpeg", {
    args: [
      "-hide_banner",
      "-loglevel",
      "error",
      "-threads",
      "1",
      "-f",
      "h264",
      "-i",
      "pipe:0",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "yuv420p",
      "pipe:1",
    ],
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  void w.write(stream).then(() => w.close());
  const reader = child.stdout.getReader({ mode: "byob" });
  let n = 0;
  for (;;) {
    using frame = pool.tryAcquire()!;
    let bytes = new Uint8Array(pool.layout.size);
    let got = 0;
    while (got < bytes.length) { // a BYOB read moves the buffer: carry on in the one it gives back
      const { value, done } = await reader.read(
        new Uint8Array(bytes.buffer, got, bytes.length - got),
      );
      if (done || !value) break;
      bytes = new Uint8Array(value.buffer);
      got += value.byteLength;
    }
    if (got < pool.layout.size) break; // the end of the stream
    const [y, u, v] = pool.planes(frame);
    y.data.set(bytes.subarray(0, W * H)); // the copy this path pays (rows packed: 64-aligned widths)
    u.data.set(bytes.subarray(W * H, W * H * 5 / 4));
    v.data.set(bytes.subarray(W * H * 5 / 4));
    n++;
  }
  await child.status;
  if (n !== frames) throw new Error(`the pipe gave ${n} frames`);
  return performance.now() - start;
}

async function frameEncoder(raw: Uint8Array): Promise<number> {
  using pool = FramePool.create({ format: "YUV420P", width: W, height: H, slots: 64 });
  const frameBytes = W * H * 3 / 2;
  const slots = Array.from({ length: Math.min(frames, 64) }, () => pool.tryAcquire()!);
  slots.forEach((f, n) => { // filled before the clock starts; the CLI's rtime includes reading its file (a page-cache copy)
    const [y, u, v] = pool.planes(f);
    const at = n * frameBytes;
    y.data.set(raw.subarray(at, at + W * H));
    u.data.set(raw.subarray(at + W * H, at + W * H * 5 / 4));
    v.data.set(raw.subarray(at + W * H * 5 / 4, at + frameBytes));
  });
  const start = performance.now();
  const e = FrameEncoder.create({
    codec: "libx264",
    options: "preset=ultrafast",
    format: "YUV420P",
    width: W,
    height: H,
    framerate: [30, 1],
    threads: 1,
  });
  for (let n = 0; n < frames; n++) {
    await e.encode(slots[n % slots.length], { timestamp: BigInt(n) });
  }
  await e.flush();
  await e.close();
  const ms = performance.now() - start;
  slots.forEach((f) => f.release());
  return ms;
}

/**
 * The CLI's own time for its work (`-benchmark`'s rtime: from its first
 * frame to its last, no process start, no probing), reading `file`.
 */
async function cliWork(argv: string[]): Promise<number> {
  const r = await new Deno.Command("ffmpeg", {
    args: ["-hide_banner", "-nostdin", "-benchmark", ...argv],
    stdout: "null",
    stderr: "piped",
  }).output();
  const m = /rtime=([\d.]+)s/.exec(new TextDecoder().decode(r.stderr));
  if (!r.success || !m) throw new Error(`ffmpeg ${argv.join(" ")} failed`);
  return Number(m[1]) * 1000;
}

const best = async (f: () => Promise<number>) => Math.min(await f(), await f(), await f());
const fps = (ms: number) => (frames * 1000 / ms).toFixed(1);
const ratio = (floor: number, ms: number) => (floor / ms).toFixed(2);

const dir = await Deno.makeTempDir();
await Deno.writeFile(`${dir}/in.h264`, stream);
const cliMs = await best(() =>
  cliWork(["-threads", "1", "-i", `${dir}/in.h264`, "-f", "null", "-"])
);
const before = codecStats();
const fdMs = await best(frameDecoder);
const vdMs = await best(videoDecoder);
const copied = codecStats().copiedBytes - before.copiedBytes;
const pipeMs = await best(pipePath);
const { out: raw } = await cli([...source, "-f", "rawvideo", "-pix_fmt", "yuv420p", "pipe:1"]);
await Deno.writeFile(`${dir}/in.yuv`, raw);
const encCliMs = await best(() =>
  cliWork([
    ...["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", size, "-r", "30", "-i", `${dir}/in.yuv`],
    ...["-threads", "1", "-c:v", "libx264", "-preset", "ultrafast", "-f", "null", "-"],
  ])
);
const encMs = await best(() => frameEncoder(raw));
await cli(["-f", "h264", "-i", `${dir}/in.h264`, "-c", "copy", `${dir}/in.mp4`]);
const fileCliMs = await best(() =>
  cliWork(["-threads", "1", "-i", `${dir}/in.mp4`, "-f", "null", "-"])
);
const fileMs = await best(() => demuxAndDecode(`${dir}/in.mp4`));
await Deno.remove(dir, { recursive: true });

console.log(`H.264 ${size}, ${frames} frames, one decoding thread each, best of 3:`);
console.log(`  (a) ffmpeg CLI decode      ${fps(cliMs)} fps  (floor)`);
console.log(`  (b) FrameDecoder           ${fps(fdMs)} fps  ${ratio(cliMs, fdMs)}x the CLI`);
console.log(`  (c) VideoDecoder           ${fps(vdMs)} fps  ${ratio(cliMs, vdMs)}x the CLI`);
console.log(
  `  (d) CLI pipe into slots    ${fps(pipeMs)} fps  ${ratio(cliMs, pipeMs)}x; (b) is ${
    ratio(pipeMs, fdMs)
  }x it`,
);
console.log(`  bytes copied by (b) and (c): ${copied}`);
console.log(
  `  (e) ffmpeg CLI encode (libx264 ultrafast, raw frames from a file) ${
    fps(encCliMs)
  } fps  (floor)`,
);
console.log(
  `  (f) FrameEncoder, slots read in place                           ${fps(encMs)} fps  ${
    ratio(encCliMs, encMs)
  }x the CLI`,
);
console.log(`  (g) ffmpeg CLI, mp4 demux + decode  ${fps(fileCliMs)} fps  (floor)`);
console.log(
  `  (h) Demuxer + VideoDecoder, the mp4  ${fps(fileMs)} fps  ${ratio(fileCliMs, fileMs)}x the CLI`,
);
