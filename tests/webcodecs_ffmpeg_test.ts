// WebCodecs against the ffmpeg CLI on the same streams: what VideoDecoder
// outputs is byte for byte what `ffmpeg -f rawvideo` writes (FFmpeg against
// FFmpeg, so exact), and what VideoEncoder makes, decoded back by the CLI,
// is within 30 dB PSNR of its input. Skipped where the ffmpeg CLI or the
// codecs are missing; CI installs them.

import assert from "node:assert/strict";
import {
  EncodedVideoChunk,
  h264AccessUnits,
  isCodecSupported,
  VideoDecoder,
  type VideoDecoderConfig,
  VideoEncoder,
  type VideoEncoderConfig,
  VideoFrame,
} from "../mod.ts";

const W = 320, H = 240, FRAMES = 12;
const FRAME_BYTES = W * H * 3 / 2;

function hasFfmpeg(): boolean {
  try {
    return new Deno.Command("ffmpeg", { args: ["-version"], stdout: "null", stderr: "null" })
      .outputSync()
      .success;
  } catch {
    return false;
  }
}
const available = Deno.build.os === "linux" && hasFfmpeg() &&
  isCodecSupported("libx264", "encoder") &&
  isCodecSupported("h264", "decoder");

/** The CLI with `input` on its stdin: its stdout, and its log. */
async function ffmpeg(
  args: string[],
  input?: Uint8Array,
): Promise<{ out: Uint8Array; log: string }> {
  const child = new Deno.Command("ffmpeg", {
    args: ["-hide_banner", "-nostdin", ...args],
    stdin: input ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (input) {
    const writer = child.stdin.getWriter();
    await writer.write(input);
    await writer.close();
  }
  const result = await child.output();
  const log = new TextDecoder().decode(result.stderr);
  assert.ok(result.success, `ffmpeg ${args.join(" ")} failed:\n${log.slice(-2000)}`);
  return { out: result.stdout, log };
}

const SOURCE = ["-f", "lavfi", "-i", `testsrc2=size=${W}x${H}:rate=25`, "-frames:v", `${FRAMES}`];
const RAW_OUT = ["-f", "rawvideo", "-pix_fmt", "yuv420p", "pipe:1"];

/** The frames of an IVF file (VP8, VP9, AV1): a 32-byte header, then 12 bytes before each frame. */
function ivfFrames(file: Uint8Array): Uint8Array[] {
  const view = new DataView(file.buffer, file.byteOffset);
  const frames: Uint8Array[] = [];
  for (let at = view.getUint16(6, true); at + 12 <= file.length;) {
    const size = view.getUint32(at, true);
    frames.push(file.subarray(at + 12, at + 12 + size));
    at += 12 + size;
  }
  return frames;
}

/** An IVF file of `frames` (what the CLI reads back). */
function ivfFile(fourcc: string, frames: Uint8Array[]): Uint8Array {
  const size = 32 + frames.reduce((n, f) => n + 12 + f.length, 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  out.set(new TextEncoder().encode("DKIF"));
  view.setUint16(6, 32, true);
  out.set(new TextEncoder().encode(fourcc), 8);
  view.setUint16(12, W, true);
  view.setUint16(14, H, true);
  view.setUint32(16, 25, true);
  view.setUint32(20, 1, true);
  view.setUint32(24, frames.length, true);
  let at = 32;
  frames.forEach((f, n) => {
    view.setUint32(at, f.length, true);
    view.setBigUint64(at + 4, BigInt(n), true);
    out.set(f, at + 12);
    at += 12 + f.length;
  });
  return out;
}

/** Every frame of `chunks` through VideoDecoder, as packed I420 bytes. */
async function decodeAll(config: VideoDecoderConfig, chunks: Uint8Array[]): Promise<Uint8Array[]> {
  const frames: Uint8Array[] = [];
  const errors: DOMException[] = [];
  const decoder = new VideoDecoder({
    output: async (frame) => {
      assert.equal(frame.resource?.kind, "DmaBufHandle");
      const bytes = new Uint8Array(frame.allocationSize());
      frames.push(bytes);
      await frame.copyTo(bytes);
      frame.close();
    },
    error: (e) => errors.push(e),
  });
  decoder.configure(config);
  chunks.forEach((data, n) =>
    decoder.decode(
      new EncodedVideoChunk({ type: n === 0 ? "key" : "delta", timestamp: n * 40_000, data }),
    )
  );
  await decoder.flush();
  decoder.close();
  assert.deepEqual(errors, []);
  return frames;
}

/** The CLI's own decode of `stream`, frame by frame. */
async function cliFrames(format: string, stream: Uint8Array): Promise<Uint8Array[]> {
  const { out } = await ffmpeg(["-f", format, "-i", "pipe:0", ...RAW_OUT], stream);
  return Array.from(
    { length: out.length / FRAME_BYTES },
    (_, n) => out.subarray(n * FRAME_BYTES, (n + 1) * FRAME_BYTES),
  );
}

function sameFrames(ours: Uint8Array[], theirs: Uint8Array[]): void {
  assert.equal(ours.length, theirs.length);
  ours.forEach((f, n) =>
    assert.ok(f.length === theirs[n].length && f.every((b, i) => b === theirs[n][i]), `frame ${n}`)
  );
}

function codecTest(name: string, ready: boolean, fn: () => Promise<void>): void {
  Deno.test({ name, ignore: !available || !ready, fn });
}

codecTest("H.264 with B-frames decodes to the bytes the ffmpeg CLI decodes", true, async () => {
  const { out: stream } = await ffmpeg([
    ...SOURCE,
    ...["-c:v", "libx264", "-bf", "2", "-f", "h264", "pipe:1"],
  ]);
  const chunks = h264AccessUnits(stream);
  assert.equal(chunks.length, FRAMES);
  sameFrames(await decodeAll({ codec: "avc1.64001e" }, chunks), await cliFrames("h264", stream));
});

codecTest(
  "VP9 and VP8 decode to the bytes the ffmpeg CLI decodes",
  isCodecSupported("libvpx-vp9", "encoder") && isCodecSupported("libvpx", "encoder"),
  async () => {
    for (const [lib, codec] of [["libvpx-vp9", "vp09.00.10.08"], ["libvpx", "vp8"]]) {
      const { out: file } = await ffmpeg([
        ...SOURCE,
        ...["-c:v", lib, "-deadline", "realtime", "-cpu-used", "8", "-f", "ivf", "pipe:1"],
      ]);
      sameFrames(await decodeAll({ codec }, ivfFrames(file)), await cliFrames("ivf", file));
    }
  },
);

/** The CLI's PSNR of `stream` against the test frames it was made from (made again: they are deterministic). */
async function psnr(format: string, stream: Uint8Array): Promise<number> {
  const { log } = await ffmpeg([
    ...["-f", format, "-i", "pipe:0", ...SOURCE],
    "-lavfi", // paired frame by frame: a raw stream's timing is the encoder's microsecond timebase
    "[0:v]setpts=N/25/TB[a];[1:v]setpts=N/25/TB[b];[a][b]psnr",
    ...["-f", "null", "-"],
  ], stream);
  const m = /PSNR .* average:([\d.]+|inf)/.exec(log);
  assert.ok(m, `no PSNR in:\n${log.slice(-1000)}`);
  return m[1] === "inf" ? Infinity : Number(m[1]);
}

/** The CLI's test frames, encoded by VideoEncoder with `config`. */
async function encodeAll(config: VideoEncoderConfig): Promise<Uint8Array[]> {
  const { out: raw } = await ffmpeg([...SOURCE, ...RAW_OUT]);
  const chunks: Uint8Array[] = [];
  const errors: DOMException[] = [];
  const encoder = new VideoEncoder({
    output: (chunk) => {
      const data = new Uint8Array(chunk.byteLength);
      chunk.copyTo(data);
      chunks.push(data);
    },
    error: (e) => errors.push(e),
  });
  encoder.configure(config);
  for (let n = 0; n < FRAMES; n++) {
    const frame = new VideoFrame(raw.subarray(n * FRAME_BYTES, (n + 1) * FRAME_BYTES), {
      format: "I420",
      codedWidth: W,
      codedHeight: H,
      timestamp: n * 40_000,
      duration: 40_000,
    });
    encoder.encode(frame);
    frame.close();
  }
  await encoder.flush();
  encoder.close();
  assert.deepEqual(errors, []);
  assert.equal(chunks.length, FRAMES);
  return chunks;
}

codecTest(
  "H.264 from VideoEncoder decodes in the ffmpeg CLI at 30 dB PSNR or more",
  true,
  async () => {
    const chunks = await encodeAll({
      codec: "avc1.42001e",
      width: W,
      height: H,
      bitrate: 1_000_000,
      framerate: 25,
      avc: { format: "annexb" },
    });
    const stream = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
    chunks.reduce((at, c) => (stream.set(c, at), at + c.length), 0);
    const db = await psnr("h264", stream);
    assert.ok(db >= 30, `PSNR ${db} dB`);
  },
);

codecTest(
  "VP8 from VideoEncoder decodes in the ffmpeg CLI at 30 dB PSNR or more",
  isCodecSupported("libvpx", "encoder"),
  async () => {
    const chunks = await encodeAll({
      codec: "vp8",
      width: W,
      height: H,
      bitrate: 1_000_000,
      framerate: 25,
    });
    const db = await psnr("ivf", ivfFile("VP80", chunks));
    assert.ok(db >= 30, `PSNR ${db} dB`);
  },
);
