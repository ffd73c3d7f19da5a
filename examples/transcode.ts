// Decode in one process, encode in another, and copy nothing on the way.
// This process reads a file with Demuxer (any container libavformat reads;
// by default a testsrc2 mp4 that the ffmpeg CLI makes), decodes its video
// track with VideoDecoder into the decoder's pool, and sends each frame's
// handle over a Channel. The encoder process (this file again, spawned with
// --encode) wraps each received handle in a VideoFrame, encodes it with
// VideoEncoder where it lies, and writes the chunks with Muxer. Both print
// what codecStats() counted: every frame decoded and encoded, and 0 bytes
// copied. Each slot goes home when the encoder let go of it.
//
//   deno run -A examples/transcode.ts [--in file] [--frames N] [--size WxH] [--codec C] [--out file] [--json]
//     --in file    the input (else --frames N of testsrc2 at --size WxH, 60 at 640x360, made by the CLI)
//     --codec C    the encoder's codec string (avc1.42001f; vp8, vp09.00.10.08, av01.0.04M.08)
//     --out file   write the encoded stream there, in the container its extension names (.mp4, .mkv, .webm, .ts)
//     --json       the last line of stdout is a JSON report
// Linux only (pools are memfds); needs FFmpeg's libraries (and the ffmpeg CLI without --in).

import {
  Channel,
  codecStats,
  Demuxer,
  DmaBufHandle,
  liveHandles,
  Muxer,
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

/** The input: --in, or a testsrc2 mp4 the CLI makes. */
async function sourceFile(): Promise<string> {
  const given = option("--in", "");
  if (given) return given;
  const path = await Deno.makeTempFile({ suffix: ".mp4" });
  const out = await new Deno.Command("ffmpeg", {
    args: [
      ...["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi"],
      ...["-i", `testsrc2=size=${option("--size", "640x360")}:rate=30`],
      ...["-frames:v", option("--frames", "60"), "-c:v", "libx264", "-pix_fmt", "yuv420p", path],
    ],
  }).output();
  if (!out.success) throw new Error("the ffmpeg CLI could not make the source file");
  return path;
}

/** This process: decode, and send every frame's handle to the encoder process. */
async function decodeAndSend(): Promise<void> {
  const file = await sourceFile();
  await using input = await Demuxer.open(file);
  if (file !== option("--in", "")) await Deno.remove(file); // open: the file can go
  const track = input.tracks.find((t) => t.config);
  if (!track) throw new Error("the input has no video track this FFmpeg and WebCodecs decode");
  const { codedWidth, codedHeight } = track.config!;
  const path = `/tmp/gpures-transcode-${Deno.pid}.sock`;
  using listener = Channel.listen(path);
  const encoderProcess = new Deno.Command(Deno.execPath(), {
    args: [
      ...["run", "-A", import.meta.filename!, "--encode", path],
      ...["--size", `${codedWidth}x${codedHeight}`, "--rate", `${track.framerate ?? 30}`, ...args],
    ],
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
  decoder.configure(track.config!);
  let chunks = 0;
  const dequeued = () => new Promise((r) => decoder.addEventListener("dequeue", r, { once: true }));
  for await (const chunk of input.chunks(track.index)) {
    while (decoder.decodeQueueSize >= 8) await dequeued(); // read no further ahead than decoding
    decoder.decode(chunk);
    chunks++;
  }
  await decoder.flush();
  await Promise.all(sends);
  decoder.close();
  channel.close(); // the end of the stream for the encoder
  const report = new TextDecoder().decode((await encoderProcess.output()).stdout).trim();
  const decoded = codecStats();
  const encoded = JSON.parse(report.slice(report.lastIndexOf("\n") + 1));
  const result = {
    frames: chunks,
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

/** The encoder process: every received frame encoded where it lies, and its chunks muxed. */
async function receiveAndEncode(path: string): Promise<void> {
  const [width, height] = option("--size", "640x360").split("x").map(Number);
  const framerate = Number(option("--rate", "30"));
  const out = option("--out", "");
  await using output = out ? Muxer.create(out) : undefined;
  let track = -1, bytes = 0;
  const writes: Promise<void>[] = [];
  const encoder = new VideoEncoder({
    output: (chunk, metadata) => {
      bytes += chunk.byteLength;
      if (!output) return;
      if (track < 0) track = output.addTrack(metadata!.decoderConfig!, { framerate });
      writes.push(output.addChunk(track, chunk)); // no B-frames: decode order is presentation order
    },
    error: (e) => console.error("encoder:", e.name, e.message),
  });
  encoder.configure({
    codec: option("--codec", "avc1.42001f"),
    width,
    height,
    bitrate: 2_000_000,
    framerate,
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
  await Promise.all(writes);
  await output?.finish();
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
