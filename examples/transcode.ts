// Decode in one process, encode in another, and copy nothing on the way.
// This process decodes an H.264 stream (ffmpeg's testsrc2, made by the
// ffmpeg CLI, split by h264AccessUnits()) with VideoDecoder into the
// decoder's pool, and sends each frame's handle over a Channel. The encoder
// process (this file again, spawned with --encode) wraps each received
// handle in a VideoFrame and encodes it with VideoEncoder where it lies.
// Both print what codecStats() counted: every frame decoded and encoded,
// and 0 bytes copied. Each slot goes home when the encoder let go of it.
//
//   deno run -A examples/transcode.ts [--frames N] [--size WxH] [--codec C] [--out file] [--json]
//     --frames N   frames of testsrc2 (60)
//     --size WxH   their size (640x360)
//     --codec C    the encoder's codec string (avc1.42001f; vp8, vp09.00.10.08, av01.0.04M.08)
//     --out file   write the encoded stream there (Annex B for H.264, chunks one after another else)
//     --json       the last line of stdout is a JSON report
// Linux only (pools are memfds); needs the ffmpeg CLI for the source stream.

import {
  Channel,
  codecStats,
  DmaBufHandle,
  EncodedVideoChunk,
  h264AccessUnits,
  liveHandles,
  VideoDecoder,
  VideoEncoder,
  VideoFrame,
} from "../mod.ts";

const args = Deno.args;
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const json = args.includes("--json");
const log = (...parts: unknown[]) => json || console.log(...parts);

async function sourceStream(frames: number, size: string): Promise<Uint8Array> {
  const out = await new Deno.Command("ffmpeg", {
    args: [
      ...[
        "-hide_banner",
        "-loglevel",
        "error",
        "-f",
        "lavfi",
        "-i",
        `testsrc2=size=${size}:rate=30`,
      ],
      ...["-frames:v", `${frames}`, "-c:v", "libx264", "-bf", "0"],
      ...["-f", "h264", "pipe:1"],
    ],
    stdout: "piped",
  }).output();
  if (!out.success) throw new Error("the ffmpeg CLI could not make the source stream");
  return out.stdout;
}

/** This process: decode, and send every frame's handle to the encoder process. */
async function decodeAndSend(): Promise<void> {
  const frames = Number(option("--frames", "60"));
  const size = option("--size", "640x360");
  const chunks = h264AccessUnits(await sourceStream(frames, size));
  const path = `/tmp/gpures-transcode-${Deno.pid}.sock`;
  using listener = Channel.listen(path);
  const encoderProcess = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", import.meta.filename!, "--encode", path, ...args],
    stdout: "piped",
  }).spawn();
  using channel = await listener.accept();
  const sends: Promise<void>[] = [];
  const decoder = new VideoDecoder({
    output: (frame) => {
      sends.push(channel.send(frame.resource!).finally(() => frame.close())); // the slot, by reference
    },
    error: (e) => console.error("decoder:", e.name, e.message),
  });
  decoder.configure({ codec: "avc1.64001f" });
  // No B-frames: decode order is presentation order, so a chunk's index gives its timestamp.
  chunks.forEach((data, n) =>
    decoder.decode(
      new EncodedVideoChunk({
        type: n ? "delta" : "key",
        timestamp: n * 33_333,
        data,
        duration: 33_333,
      }),
    )
  );
  await decoder.flush();
  await Promise.all(sends);
  decoder.close();
  channel.close(); // the end of the stream for the encoder
  const report = new TextDecoder().decode((await encoderProcess.output()).stdout).trim();
  const decoded = codecStats();
  const encoded = JSON.parse(report.slice(report.lastIndexOf("\n") + 1));
  const result = {
    frames: chunks.length,
    decoded: Number(decoded.decoded),
    decoderCopiedBytes: Number(decoded.copiedBytes),
    ...encoded,
    handlesAfter: liveHandles(),
  };
  if (json) console.log(JSON.stringify(result));
  else {
    console.log(
      `decoded ${result.decoded} frames, sent each as a handle; copied ${result.decoderCopiedBytes} bytes`,
    );
    console.log(
      `the encoder process encoded ${result.encoded} frames into ${result.bytes} bytes; copied ${result.encoderCopiedBytes} bytes`,
    );
  }
}

/** The encoder process: every received frame encoded where it lies. */
async function receiveAndEncode(path: string): Promise<void> {
  const [width, height] = option("--size", "640x360").split("x").map(Number);
  const codec = option("--codec", "avc1.42001f");
  const out = option("--out", "");
  const parts: Uint8Array[] = [];
  const encoder = new VideoEncoder({
    output: (chunk) => {
      const data = new Uint8Array(chunk.byteLength);
      chunk.copyTo(data);
      parts.push(data);
    },
    error: (e) => console.error("encoder:", e.name, e.message),
  });
  encoder.configure({
    codec,
    width,
    height,
    bitrate: 2_000_000,
    framerate: 30,
    avc: { format: "annexb" },
  });
  using channel = await Channel.connect(path);
  let received = 0;
  for await (const handle of channel) {
    if (!(handle instanceof DmaBufHandle)) throw new Error(`a ${handle.kind} arrived`);
    const frame = new VideoFrame(handle); // its timestamp and visible rectangle travelled as metadata
    handle.release(); // the frame holds its own reference
    encoder.encode(frame, { keyFrame: received === 0 });
    frame.close(); // the encoder holds its own until libavcodec lets go
    received++;
  }
  channel.close(); // and with it the buffers it announced
  await encoder.flush();
  encoder.close();
  const bytes = parts.reduce((n, p) => n + p.length, 0);
  if (out) {
    const file = new Uint8Array(bytes);
    parts.reduce((at, p) => (file.set(p, at), at + p.length), 0);
    await Deno.writeFile(out, file);
  }
  const stats = codecStats();
  console.log(JSON.stringify({
    received,
    encoded: Number(stats.encoded),
    bytes,
    encoderCopiedBytes: Number(stats.copiedBytes),
    encoderHandlesAfter: liveHandles(),
  }));
}

if (Deno.build.os !== "linux") throw new Error("this example needs Linux (memfd pools)");
if (args.includes("--encode")) await receiveAndEncode(option("--encode", ""));
else {
  await decodeAndSend();
  log("done");
}
