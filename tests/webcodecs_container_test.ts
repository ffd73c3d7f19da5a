// Demuxer and Muxer against the ffmpeg CLI: a file the CLI made lists its
// tracks with a VideoDecoderConfig that VideoDecoder takes, and its chunks
// decode to the bytes the CLI decodes (FFmpeg against FFmpeg: exact); what
// Muxer writes, the CLI reads back frame for frame; and what an attacker
// controls (the url, a playlist inside the file, its bytes) is refused by
// name or read without harm. Skipped where the ffmpeg CLI or libx264 is
// missing; CI installs them.

import assert from "node:assert/strict";
import { hasFfmpeg } from "./_support/ffmpeg_cli.ts";
import {
  Demuxer,
  EncodedVideoChunk,
  GpuResourceError,
  isCodecSupported,
  Muxer,
  VideoDecoder,
  type VideoDecoderConfig,
  VideoEncoder,
  VideoFrame,
} from "../mod.ts";

const W = 320, H = 240, FRAMES = 12;
const FRAME_BYTES = W * H * 3 / 2;

const available = Deno.build.os === "linux" && hasFfmpeg() &&
  isCodecSupported("libx264", "encoder") && isCodecSupported("h264", "decoder");
const ignore = !available;

/** The CLI's stdout; it must succeed. */
async function ffmpeg(args: string[]): Promise<Uint8Array> {
  const out = await new Deno.Command("ffmpeg", {
    args: ["-hide_banner", "-nostdin", "-loglevel", "error", "-y", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, `ffmpeg ${args.join(" ")}:\n${new TextDecoder().decode(out.stderr)}`);
  return out.stdout;
}

const dir = available ? Deno.makeTempDirSync({ prefix: "gpures-container-" }) : "";
const at = (name: string) => `${dir}/${name}`;
const SOURCE = ["-f", "lavfi", "-i", `testsrc2=size=${W}x${H}:rate=25`, "-frames:v", `${FRAMES}`];
const RAW = ["-f", "rawvideo", "-pix_fmt", "yuv420p", "pipe:1"];

/** A file of FRAMES frames of testsrc2, encoded by the CLI (B-frames and all, as a user's file has). */
async function sourceFile(name: string, codec: string[]): Promise<string> {
  await ffmpeg([...SOURCE, ...codec, "-pix_fmt", "yuv420p", at(name)]);
  return at(name);
}

/** Every frame VideoDecoder makes of a track's chunks, as one yuv420p byte string. */
async function decodeAll(
  config: VideoDecoderConfig,
  chunks: EncodedVideoChunk[],
): Promise<Uint8Array> {
  const frames: Uint8Array[] = [];
  let failure: unknown;
  const decoder = new VideoDecoder({
    output: async (frame: VideoFrame) => {
      const bytes = new Uint8Array(frame.allocationSize());
      const n = frames.push(bytes);
      await frame.copyTo(bytes);
      frame.close();
      return n;
    },
    error: (e) => failure = e,
  });
  decoder.configure(config);
  for (const c of chunks) decoder.decode(c);
  await decoder.flush();
  decoder.close();
  await new Promise((r) => setTimeout(r, 10)); // copyTo() of the last frames
  if (failure) throw failure;
  const all = new Uint8Array(frames.length * FRAME_BYTES);
  frames.forEach((f, i) => all.set(f, i * FRAME_BYTES));
  return all;
}

async function readChunks(input: Demuxer, track?: number): Promise<EncodedVideoChunk[]> {
  const chunks: EncodedVideoChunk[] = [];
  for await (const c of input.chunks(track)) chunks.push(c);
  return chunks;
}

const CASES: {
  name: string;
  codec: string[];
  family: RegExp;
  decoder?: string;
  encoder?: string;
}[] = [
  { name: "h264.mp4", codec: ["-c:v", "libx264"], family: /^avc1\.64/ },
  { name: "h264.mkv", codec: ["-c:v", "libx264", "-profile:v", "main"], family: /^avc1\.4d/ },
  { name: "h264.ts", codec: ["-c:v", "libx264", "-profile:v", "baseline"], family: /^avc1\.42/ },
  {
    name: "vp9.webm",
    codec: ["-c:v", "libvpx-vp9", "-deadline", "realtime"],
    family: /^vp09\./,
    decoder: "vp9",
  },
  {
    name: "hevc.mp4",
    codec: ["-c:v", "libx265", "-x265-params", "log-level=none"],
    family: /^hvc1\./,
    decoder: "hevc",
    encoder: "libx265",
  },
  {
    name: "av1.mkv",
    codec: ["-c:v", "libaom-av1", "-cpu-used", "8"],
    family: /^av01\.0\.\d\dM\.08/,
    decoder: "libdav1d",
    encoder: "libaom-av1",
  },
];

for (const c of CASES) {
  Deno.test({
    name:
      `a ${c.name} the CLI made decodes through Demuxer and VideoDecoder to the CLI's own bytes`,
    ignore: ignore || (c.decoder !== undefined && !isCodecSupported(c.decoder, "decoder")) ||
      (c.encoder !== undefined && !isCodecSupported(c.encoder, "encoder")),
    async fn() {
      const file = await sourceFile(c.name, c.codec);
      await using input = await Demuxer.open(file);
      assert.equal(input.tracks.length, 1);
      const [track] = input.tracks;
      assert.equal(track.media, "video");
      assert.match(track.config!.codec, c.family);
      assert.equal(track.config!.codedWidth, W);
      assert.equal(track.config!.codedHeight, H);
      assert.equal(track.framerate, 25);
      assert.equal((await VideoDecoder.isConfigSupported(track.config!)).supported, true);
      // mp4 and Matroska carry a configuration record (avcC, hvcC, av1C); MPEG-TS and WebM's VP9 none.
      assert.equal(track.config!.description !== undefined, /\.(mp4|mkv)$/.test(c.name));
      const chunks = await readChunks(input);
      assert.equal(chunks.length, FRAMES);
      assert.equal(chunks[0].type, "key");
      const decoded = await decodeAll(track.config!, chunks);
      const expected = await ffmpeg(["-i", file, ...RAW]);
      assert.equal(decoded.length, expected.length);
      assert.ok(decoded.every((b, i) => b === expected[i]), "the CLI's bytes");
    },
  });
}

Deno.test({
  name: "a file remuxed through Demuxer and Muxer holds the same frames in the same order",
  ignore,
  async fn() {
    const file = await sourceFile("remux.mp4", ["-c:v", "libx264", "-bf", "2"]);
    for (const to of ["remux.mkv", "remux.ts", "remux2.mp4"]) {
      await using input = await Demuxer.open(file);
      await using output = Muxer.create(at(to));
      const track = output.addTrack(input.tracks[0].config!, { framerate: 25 });
      // B-frames: chunks come in decode order, and the muxer needs their decode times.
      for (let next = await input.read(); next; next = await input.read()) {
        await output.addChunk(track, next.chunk, { decodeTimestamp: next.decodeTimestamp });
      }
      await output.finish();
      const frames = (path: string) =>
        ffmpeg(["-i", path, "-f", "framemd5", "-"]).then((b) =>
          new TextDecoder().decode(b).split("\n").filter((l) => /^\d/.test(l)).map((l) =>
            l.split(",").at(-1)!.trim()
          )
        );
      assert.deepEqual(await frames(at(to)), await frames(file), to);
    }
  },
});

Deno.test({
  name: "VideoEncoder's chunks and decoderConfig make an mp4 the CLI plays",
  ignore,
  async fn() {
    await using output = Muxer.create(at("encoded.mp4"), { options: "movflags=+faststart" });
    let track = -1;
    const writes: Promise<void>[] = [];
    const encoder = new VideoEncoder({
      output: (chunk, meta) => {
        if (track < 0) track = output.addTrack(meta!.decoderConfig!, { framerate: 25 });
        writes.push(output.addChunk(track, chunk));
      },
      error: (e) => assert.fail(String(e)),
    });
    encoder.configure({ codec: "avc1.42001f", width: W, height: H, framerate: 25 });
    const raw = await ffmpeg([...SOURCE, ...RAW]);
    for (let i = 0; i < FRAMES; i++) {
      const frame = new VideoFrame(raw.subarray(i * FRAME_BYTES, (i + 1) * FRAME_BYTES), {
        format: "I420",
        codedWidth: W,
        codedHeight: H,
        timestamp: i * 40_000,
      });
      encoder.encode(frame, { keyFrame: i === 0 });
      frame.close();
    }
    await encoder.flush();
    encoder.close();
    await Promise.all(writes);
    await output.finish();
    const probe = new TextDecoder().decode(
      await new Deno.Command("ffprobe", {
        args: [
          "-v",
          "error",
          "-count_frames",
          "-show_entries",
          "stream=codec_name,width,height,nb_read_frames",
          "-of",
          "csv=p=0",
          at("encoded.mp4"),
        ],
        stdout: "piped",
      }).output().then((o) => o.stdout),
    ).trim();
    assert.equal(probe, `h264,${W},${H},${FRAMES}`);
    // And Demuxer reads its own Muxer's file back with the same config.
    await using input = await Demuxer.open(at("encoded.mp4"));
    assert.match(input.tracks[0].config!.codec, /^avc1\.42/);
    assert.equal((await readChunks(input)).length, FRAMES);
  },
});

/** The error a promise rejects with. */
async function failure(p: Promise<unknown>): Promise<GpuResourceError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof GpuResourceError, `a GpuResourceError, not ${e}`);
    return e;
  }
  throw new Error("it did not fail");
}

Deno.test({
  name:
    "a playlist, a concat list or a protocol not allowed is refused, and nothing it names opened",
  ignore,
  async fn() {
    const inner = await sourceFile("inner.ts", ["-c:v", "libx264"]);
    Deno.writeTextFileSync(
      at("list.m3u8"),
      `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.0,\n${inner}\n#EXT-X-ENDLIST\n`,
    );
    Deno.writeTextFileSync(at("list.txt"), `ffconcat version 1.0\nfile '${inner}'\n`);
    for (const list of ["list.m3u8", "list.txt"]) {
      const e = await failure(Demuxer.open(at(list)));
      assert.equal(e.code, "UNSUPPORTED");
      assert.equal(e.field, "formats");
    }
    // Allowed by name, a playlist is followed as far as its protocols allow.
    await using hls = await Demuxer.open(at("list.m3u8"), { formats: ["hls", "mpegts"] });
    assert.equal((await readChunks(hls)).length, FRAMES);
    const e = await failure(Demuxer.open("http://127.0.0.1:9/x.mp4", { protocols: ["file"] }));
    assert.equal(e.field, "protocols");
    const nested = await failure(Demuxer.open(`subfile,,start,0,end,0,,:${inner}`));
    assert.equal(nested.code, "UNSUPPORTED");
    assert.equal(nested.field, "protocols", nested.message); // subfile: only when named
  },
});

Deno.test({
  name:
    "a missing file, a file that is not a container and a truncated one are refused or read without harm",
  ignore,
  async fn() {
    const missing = await failure(Demuxer.open(at("missing.mp4")));
    assert.equal(missing.code, "OS_ERROR");
    assert.equal(missing.field, "url");
    assert.match(missing.message, /ENOENT/);
    Deno.writeTextFileSync(
      at("garbage.mp4"),
      "not a container at all, whatever its name\n".repeat(20),
    );
    const garbage = await failure(Demuxer.open(at("garbage.mp4")));
    assert.ok(["url", "formats"].includes(garbage.field), garbage.message);
    const whole = Deno.readFileSync(await sourceFile("cut.mkv", ["-c:v", "libx264"]));
    for (let cut = 0; cut < whole.length; cut += Math.ceil(whole.length / 9)) {
      Deno.writeFileSync(at("cut.mkv"), whole.subarray(0, cut));
      let input: Demuxer;
      try {
        input = await Demuxer.open(at("cut.mkv"));
      } catch (e) {
        assert.ok(e instanceof GpuResourceError);
        continue;
      }
      for (let i = 0; i < 4 * FRAMES; i++) {
        const next = await input.read().catch((e) => assert.ok(e instanceof GpuResourceError));
        if (next === null) break;
      }
      await input.close();
    }
  },
});

Deno.test({
  name: "bad options, tracks and chunks are refused by name; a closed Demuxer or Muxer says so",
  ignore,
  async fn() {
    const file = await sourceFile("opts.mp4", ["-c:v", "libx264"]);
    const named = async (field: string, p: () => unknown) => {
      try {
        await p();
      } catch (e) {
        assert.ok(e instanceof GpuResourceError, String(e));
        assert.equal(e.field, field, e.message);
        return;
      }
      assert.fail(`${field} was not refused`);
    };
    await named("protocols", () => Demuxer.open(file, { protocols: ["file;rm"] }));
    await named("formats", () => Demuxer.open(file, { formats: [] }));
    await named("format", () => Demuxer.open(file, { format: "no_such_demuxer" }));
    await named("timeoutMs", () => Demuxer.open(file, { timeoutMs: 0 }));
    await named("url", () => Demuxer.open(""));
    const input = await Demuxer.open(file);
    await named("tracks[0]", () => input.select([5]));
    await named("track", () => input.chunks(3).next());
    await input.close();
    await named("demuxer", () => input.read());
    await named("format", () => Muxer.create(at("x.nosuchcontainer")));
    const output = Muxer.create(at("x.mkv"));
    await named("config.codec", () => output.addTrack({ codec: "avc1" }));
    await named("config.codedWidth", () => output.addTrack({ codec: "vp8" }));
    await named(
      "track",
      () =>
        output.addChunk(
          0,
          new EncodedVideoChunk({ type: "key", timestamp: 0, data: new Uint8Array(4) }),
        ),
    );
    const track = output.addTrack({ codec: "vp8", codedWidth: W, codedHeight: H });
    await named("chunk", () => output.addChunk(track, {} as EncodedVideoChunk));
    await output.close();
    await named("muxer", () => output.finish());
  },
});

Deno.test({
  name:
    "closing a Demuxer while it reads interrupts the read, which settles: a chunk or CancelledError",
  ignore,
  async fn() {
    const input = await Demuxer.open(await sourceFile("close.mkv", ["-c:v", "libx264"]));
    const reading = input.read();
    const closing = input.close();
    const settled = await reading.then((next) => next, (e) => e);
    if (settled instanceof GpuResourceError) assert.equal(settled.code, "CANCELLED");
    else assert.ok(settled && settled.chunk.byteLength > 0);
    await closing;
    assert.throws(
      () => input.read(),
      (e: unknown) => e instanceof GpuResourceError && e.code === "STALE",
    );
  },
});

Deno.test({
  name:
    "a Muxer refuses a chunk whose decode time it would have to guess, and a lost chunk fails finish()",
  ignore,
  async fn() {
    const output = Muxer.create(at("lost.mkv"));
    const track = output.addTrack({ codec: "vp8", codedWidth: W, codedHeight: H });
    const chunk = (timestamp: number, type: "key" | "delta" = "delta") =>
      new EncodedVideoChunk({ type, timestamp, data: new Uint8Array(16) });
    const first = output.addChunk(track, chunk(40_000, "key"));
    // A timestamp going back in decode order is a B-frame's: its decode time is the caller's to say.
    assert.throws(
      () => output.addChunk(track, chunk(0)),
      (e: unknown) => e instanceof GpuResourceError && e.field === "decodeTimestamp",
    );
    // Given one that goes back, the container refuses it; nothing after it is written, finish() says so.
    const refused = output.addChunk(track, chunk(0), { decodeTimestamp: 0 });
    const after = output.addChunk(track, chunk(80_000));
    const finished = output.finish();
    await first;
    const e = await failure(refused);
    assert.equal(e.field, "packet", e.message);
    assert.equal(await failure(after), e);
    assert.equal(await failure(finished), e);
    assert.throws(
      () => output.addTrack({ codec: "vp8", codedWidth: W, codedHeight: H }),
      GpuResourceError,
    );
    await output.close();
  },
});

Deno.test({
  name: "Matroska refuses an H.264 track without its avcC, naming extradata",
  ignore,
  async fn() {
    await using output = Muxer.create(at("annexb.mkv"));
    assert.throws(
      () => output.addTrack({ codec: "avc1.42001f", codedWidth: W, codedHeight: H }),
      (e: unknown) => e instanceof GpuResourceError && e.field === "extradata",
    );
  },
});

Deno.test({
  name: "the pre-roll of a file cut without re-encoding comes as chunks marked discard",
  ignore,
  async fn() {
    const whole = await sourceFile("whole.mp4", ["-c:v", "libx264", "-g", `${FRAMES}`]);
    await ffmpeg(["-ss", "0.2", "-i", whole, "-c", "copy", at("cut.mp4")]);
    await using input = await Demuxer.open(at("cut.mp4"));
    const marked: boolean[] = [];
    for (let next = await input.read(); next; next = await input.read()) {
      marked.push(!!next.discard);
    }
    assert.equal(marked[0], true, "the key frame before the cut is pre-roll");
    assert.ok(marked.includes(false), "the frames after it are shown");
    assert.deepEqual(marked, [...marked].sort().reverse(), "pre-roll first, then the shown frames");
  },
});

if (available) {
  globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
}
