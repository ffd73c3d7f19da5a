// WebCodecs VideoDecoder and VideoEncoder against the W3C spec and the
// web-platform-tests (webcodecs/): the state machine and its synchronous
// throws, asynchronous NotSupportedError and EncodingError through the error
// callback, isConfigSupported's answers and echoed configs, the queue sizes and
// their dequeue events, flush/reset/close and the outputs they let through,
// decoderConfig metadata (avcC or Annex B for H.264), and full encode → decode
// cycles for H.264, VP8, VP9 and AV1 into DMA-BUF-backed frames. Streams are
// made here from buffer-built frames. Skipped off Linux or without libx264.

import assert from "node:assert/strict";
import {
  EncodedVideoChunk,
  type EncodedVideoChunkMetadata,
  FrameDecoder,
  type GpuResource,
  isCodecSupported,
  liveHandles,
  VideoDecoder,
  type VideoDecoderConfig,
  VideoEncoder,
  type VideoEncoderConfig,
  VideoFrame,
} from "../mod.ts";

const available = Deno.build.os === "linux" && isCodecSupported("libx264", "encoder");
/** Each codec, its FFmpeg encoder and decoders, and whether its bitstream signals its colour. */
const CODECS = [
  { codec: "avc1.42001e", encoder: "libx264", decoders: ["h264"], colourInStream: true },
  { codec: "vp8", encoder: "libvpx", decoders: ["vp8", "libvpx"], colourInStream: false },
  { codec: "vp09.00.10.08", encoder: "libvpx-vp9", decoders: ["vp9"], colourInStream: true },
  { codec: "av01.0.04M.08", encoder: "libaom-av1", decoders: ["libdav1d"], colourInStream: true },
];
type Codec = typeof CODECS[number];
const [H264, , , AV1] = CODECS;
const usable = (c: Codec) =>
  available && isCodecSupported(c.encoder, "encoder") &&
  c.decoders.some((d) => isCodecSupported(d, "decoder"));

/** A test that needs libx264, and the encoder and decoder of the codec its name starts with. */
function test(name: string, fn: () => Promise<void> | void): void {
  const codec = CODECS.find((c) => name.startsWith(`${c.codec}:`)) ?? H264;
  Deno.test({ name, ignore: !usable(codec), fn });
}

const W = 160, H = 120;
const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits (at most 2 s) for `done`. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; !done() && i < 400; i++) await tick(5);
  assert.ok(done(), "timed out");
}
/** How a promise settled: "resolved", or the rejection's class and name. */
const outcome = (p: Promise<unknown>) =>
  p.then(() => "resolved", (e: DOMException) => `${e.constructor.name} ${e.name}`);

type FrameOptions = { n?: number; duration?: number; rotation?: number; flip?: boolean };
/** An I420 frame: a gradient moving with `n`. */
function i420(w: number, h: number, timestamp: number, o: FrameOptions = {}): VideoFrame {
  const data = new Uint8Array(w * h * 3 / 2).fill(128);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) data[y * w + x] = 16 + ((x + y + (o.n ?? 0) * 4) & 127);
  }
  const init = { format: "I420" as const, codedWidth: w, codedHeight: h, timestamp };
  return new VideoFrame(data, { duration: 33_333, ...o, ...init });
}

/** Encodes `count` w x h frames, timestamps t0, t0+1, ...; each frame is closed right away. */
function feed(encoder: VideoEncoder, w: number, h: number, count: number, t0 = 0): void {
  for (let n = 0; n < count; n++) {
    const f = i420(w, h, t0 + n, { n });
    encoder.encode(f);
    f.close();
  }
}

interface Encoded {
  chunks: EncodedVideoChunk[];
  metas: EncodedVideoChunkMetadata[];
  config: VideoDecoderConfig;
}

/** `count` frames through a VideoEncoder (closed afterwards); no error may come. */
async function encode(
  config: VideoEncoderConfig,
  count: number,
  frame = (n: number) => i420(config.width, config.height, n * 33_333, { n }),
  keyEvery = 0,
): Promise<Encoded> {
  const out: Encoded = { chunks: [], metas: [], config: undefined as never };
  const errors: DOMException[] = [];
  const encoder = new VideoEncoder({
    output: (c, m) => (out.chunks.push(c), out.metas.push(m), out.config ??= m.decoderConfig!),
    error: (e) => errors.push(e),
  });
  encoder.configure(config);
  for (let n = 0; n < count; n++) {
    const f = frame(n);
    encoder.encode(f, { keyFrame: keyEvery > 0 && n % keyEvery === 0 });
    f.close();
  }
  await encoder.flush();
  encoder.close();
  assert.deepEqual(errors, []);
  return out;
}

const streams = new Map<string, Promise<Encoded>>();
/** A memoised stream of 8 frames at 160x120. */
const stream = (codec: string) => {
  if (!streams.has(codec)) streams.set(codec, encode({ codec, width: W, height: H }, 8));
  return streams.get(codec)!;
};

/** Decodes `chunks` with `config`: every frame, for the caller to close. */
async function decode(config: VideoDecoderConfig, chunks: EncodedVideoChunk[]) {
  const frames: VideoFrame[] = [];
  const errors: DOMException[] = [];
  const decoder = new VideoDecoder({ output: (f) => frames.push(f), error: (e) => errors.push(e) });
  decoder.configure(config);
  for (const c of chunks) decoder.decode(c);
  await decoder.flush();
  decoder.close();
  assert.deepEqual(errors, []);
  return frames;
}

type Init = { output(x: VideoFrame | EncodedVideoChunk): void; error(e: DOMException): void };
/** A codec whose callbacks log "output <timestamp>" (closing frames) and "<class> <name> <state>". */
function logging<T extends VideoDecoder | VideoEncoder>(make: (i: Init) => T, log: string[]): T {
  const codec: T = make({
    output: (x) => (log.push(`output ${x.timestamp}`), x instanceof VideoFrame && x.close()),
    error: (e) => log.push(`${e.constructor.name} ${e.name} ${codec.state}`),
  });
  return codec;
}
const newDecoder = (i: Init) => new VideoDecoder(i);
const newEncoder = (i: Init) => new VideoEncoder(i);

const bytesOf = (c: EncodedVideoChunk) => {
  const b = new Uint8Array(c.byteLength);
  c.copyTo(b);
  return b;
};
/** A copy of a chunk with other timing, or another type. */
const retime = (c: EncodedVideoChunk, timestamp: number, duration?: number, type = c.type) =>
  new EncodedVideoChunk({ type, timestamp, duration, data: bytesOf(c) });
/** A delta chunk with every `step`th byte set to 0xFF. */
function corrupt(c: EncodedVideoChunk, step: number) {
  const data = bytesOf(c);
  for (let i = 0; i < data.length; i += step) data[i] = 0xff;
  return new EncodedVideoChunk({ type: "delta", timestamp: c.timestamp, data });
}
/** The bytes of a description (an ArrayBuffer or a view): a copy. */
const descriptionOf = (c: VideoDecoderConfig) => new Uint8Array(c.description as ArrayBuffer);
/** What a log of {@link logging} holds after a fatal error and a flush rejected with it. */
const closedWith = (name: string) => [`DOMException ${name} closed`, `DOMException ${name}`];

const UNSUPPORTED = [
  ...'bogus|vorbis|vp9|Vp09.00.10.08|vP8|video/webm; codecs="vp8"|avc1.FF000b'.split("|"),
  ..."avc1.4D401D|hvc1.C99.6FFFFFF.L93|vp09.99.99.08|av01.9.99M.08|  vp09.00.10.08  ".split("|"),
  "7󠎢ﷺ۹.9",
];
const huge = { width: 20000, height: 20000, bitrate: 1, framerate: 240 };
const UNSUPPORTED_ENCODER: VideoEncoderConfig[] = [
  ...UNSUPPORTED.map((codec) => ({ codec, width: 640, height: 480 })),
  { codec: "vp8", width: 640, height: 480, scalabilityMode: "ABC" },
  { codec: "vp8", width: 1_000_000, height: 480 },
  { codec: "vp8", width: 640, height: 1_000_000 },
  { codec: "vp8", hardwareAcceleration: "prefer-hardware", ...huge },
  { codec: "avc1.42001E", width: 641, height: 480 },
];
const detached = new ArrayBuffer(8);
detached.transferToFixedLength();
const INVALID_DECODER = [
  {},
  { codec: "" },
  { codec: " \t\n" },
  { codec: "vp8", description: detached },
  { codec: "vp8", codedWidth: 0, codedHeight: 120 },
  { codec: "vp8", displayAspectWidth: 0, displayAspectHeight: 120 },
  { codec: "vp8", codedWidth: 160 },
  { codec: "vp8", displayAspectHeight: 120 },
] as VideoDecoderConfig[];
const INVALID_ENCODER = [
  { width: 640, height: 480 },
  { codec: "", width: 640, height: 480 },
  { codec: "vp8", width: 0, height: 480 },
  { codec: "vp8", width: 640, height: 0 },
  { codec: "vp8", width: 640, height: 480, displayWidth: 0, displayHeight: 480 },
  { codec: "vp8", width: 640, height: 480, displayWidth: 640, displayHeight: 0 },
  { codec: "vp8", height: 480 },
  { codec: "vp8", width: 640 },
] as VideoEncoderConfig[];

// ---------------------------------------------------------------- construction and configure

test("a codec needs output and error callbacks (TypeError); a new one is unconfigured, its queue empty even after configure", () => {
  for (const init of [{}, { output: () => {} }, { error: () => {} }, undefined]) {
    assert.throws(() => new VideoDecoder(init as never), TypeError);
    assert.throws(() => new VideoEncoder(init as never), TypeError);
  }
  const d = new VideoDecoder({ output: () => {}, error: () => {} });
  const e = new VideoEncoder({ output: () => {}, error: () => {} });
  const look = () => [d.state, d.decodeQueueSize, e.state, e.encodeQueueSize];
  assert.deepEqual(look(), ["unconfigured", 0, "unconfigured", 0]);
  d.configure({ codec: "vp8" });
  e.configure({ codec: "vp8", width: W, height: H });
  assert.deepEqual(look(), ["configured", 0, "configured", 0]);
  d.close();
  e.close();
});

test("an invalid config throws TypeError from configure synchronously, state unchanged, and isConfigSupported rejects it", async () => {
  const decoder = new VideoDecoder({ output: () => {}, error: () => assert.fail("error") });
  const encoder = new VideoEncoder({ output: () => {}, error: () => assert.fail("error") });
  for (const config of INVALID_DECODER) {
    assert.throws(() => decoder.configure(config), TypeError, JSON.stringify(config));
    assert.equal(decoder.state, "unconfigured");
  }
  for (const config of INVALID_ENCODER) {
    assert.throws(() => encoder.configure(config), TypeError, JSON.stringify(config));
    assert.equal(encoder.state, "unconfigured");
  }
  decoder.configure({ codec: "vp8" });
  assert.throws(() => decoder.configure({ codec: "" }), TypeError);
  assert.equal(decoder.state, "configured");
  decoder.close();
  encoder.close();
  assert.throws(() => decoder.configure({ codec: "vp8" }), { name: "InvalidStateError" });
  const vp8 = { codec: "vp8", width: W, height: H };
  assert.throws(() => encoder.configure(vp8), { name: "InvalidStateError" });
  const checks = [
    ...INVALID_DECODER.map((c) => VideoDecoder.isConfigSupported(c)),
    ...INVALID_ENCODER.map((c) => VideoEncoder.isConfigSupported(c)),
  ];
  await Promise.all(checks.map((check) => assert.rejects(check, TypeError)));
});

test("an unsupported config is not thrown: the error callback gets NotSupportedError in state closed, then a flush rejects with it (configured encoders too)", async () => {
  const expected = closedWith("NotSupportedError");
  for (const codec of UNSUPPORTED) {
    const log: string[] = [];
    const decoder = logging(newDecoder, log);
    const description = codec.startsWith("7") ? new DataView(new ArrayBuffer(12583)) : undefined;
    decoder.configure({ codec, description });
    assert.equal(decoder.state, "configured");
    log.push(await outcome(decoder.flush()));
    assert.deepEqual(log, expected, `decoder ${codec}`);
  }
  for (const config of UNSUPPORTED_ENCODER) {
    const log: string[] = [];
    const encoder = logging(newEncoder, log);
    encoder.configure(config);
    assert.equal(encoder.state, "configured");
    log.push(await outcome(encoder.flush()));
    assert.deepEqual(log, expected, `encoder ${JSON.stringify(config)}`);
  }
  const log: string[] = [];
  const encoder = logging(newEncoder, log);
  encoder.configure({ codec: "vp8", width: W, height: H });
  assert.throws(() => encoder.configure({ codec: "", width: W, height: H }), TypeError);
  assert.equal(encoder.state, "configured", "an empty codec leaves a configured encoder as it was");
  encoder.configure({ codec: "bogus", width: W, height: H });
  log.push(await outcome(encoder.flush()));
  assert.deepEqual(log, expected);
});

// ---------------------------------------------------------------- isConfigSupported

test("isConfigSupported answers {supported:false} for codec strings gpures does not take, echoing them", async () => {
  for (const codec of UNSUPPORTED) {
    const answer = await VideoDecoder.isConfigSupported({ codec });
    assert.deepEqual(answer, { supported: false, config: { codec } });
  }
  for (const config of UNSUPPORTED_ENCODER) {
    const { supported, config: echo } = await VideoEncoder.isConfigSupported(config);
    assert.equal(supported, false, JSON.stringify(config));
    for (const k of ["codec", "width", "height", "bitrate", "framerate"] as const) {
      assert.equal(echo[k], config[k], k);
    }
  }
});

test("isConfigSupported answers {supported:true} for the registry strings of the codecs here; avc1/avc3 with extra keys configure and flush", async () => {
  const decodes = ["avc1.42001E", "avc3.42001E", "avc1.64000b", "avc1.64001f"];
  const encodes = ["avc1.42001E", "avc1.42001f", "avc1.4d001e", "avc1.64001e", "avc1.640028"];
  for (const c of CODECS.slice(1).filter(usable)) decodes.push(c.codec), encodes.push(c.codec);
  for (const codec of decodes) {
    assert.equal((await VideoDecoder.isConfigSupported({ codec })).supported, true, codec);
  }
  for (const codec of encodes) {
    const s = await VideoEncoder.isConfigSupported({ codec, width: 640, height: 480 });
    assert.equal(s.supported, true, codec);
  }
  const crop = { codec: "avc1.64001f", codedWidth: 1920, codedHeight: 1088 };
  const aspect = { displayAspectWidth: 1920, displayAspectHeight: 1080 };
  assert.ok((await VideoDecoder.isConfigSupported({ ...crop, ...aspect })).supported, "1080p crop");
  for (const codec of ["avc1.42001E", "avc3.42001E"]) {
    const decoder = new VideoDecoder({ output: () => {}, error: () => assert.fail(codec) });
    decoder.configure({ codec, width: 1280, height: 720 } as VideoDecoderConfig); // extra keys
    await decoder.flush();
    assert.equal(decoder.state, "configured");
    decoder.close();
  }
});

test("isConfigSupported echoes a decoder config's recognised members: description copied, unknown dropped", async () => {
  const description = new Uint8Array([1, 0x42, 0, 0x1e, 0xff]);
  const aspect = { displayAspectWidth: 16, displayAspectHeight: 10, rotation: 90, flip: true };
  const known = { codec: "avc1.42001E", codedWidth: 320, codedHeight: 200, ...aspect };
  const extra = { colorSpace: { primaries: "bt709" }, description, futureConfigFeature: "foo" };
  const given = { ...known, ...extra } as VideoDecoderConfig;
  const { supported, config: echo } = await VideoDecoder.isConfigSupported(given);
  assert.equal(supported, true);
  assert.deepEqual({ ...echo, description: undefined }, {
    ...known,
    colorSpace: { primaries: "bt709", transfer: null, matrix: null, fullRange: null },
    description: undefined,
  });
  assert.ok(!Object.hasOwn(echo, "futureConfigFeature"));
  assert.notEqual(echo.description, description);
  assert.deepEqual([...descriptionOf(echo)], [...description]);
  description[0] = 9;
  assert.equal(descriptionOf(echo)[0], 1, "a copy, not a view of the input");
  const bare = await VideoDecoder.isConfigSupported({ codec: "vp8" });
  assert.ok(!Object.hasOwn(bare.config, "description"));
});

test("isConfigSupported echoes an encoder config's recognised members, even avc for vp8", async () => {
  const rates = { bitrate: 1_000_000, framerate: 30, bitrateMode: "constant", contentHint: "text" };
  const configs = [
    { codec: "avc1.42001E", width: 640, height: 480, avc: { format: "annexb" } },
    { codec: "vp8", width: 800, height: 600, scalabilityMode: "L1T2", avc: { format: "annexb" } },
    { codec: "vp09.00.10.08", width: 1280, height: 720, alpha: "discard" },
    { codec: "vp8", width: 1280, height: 720, ...rates, latencyMode: "realtime" },
    { codec: "av01.0.04M.08", width: 1280, height: 720, av1: { forceScreenContentTools: true } },
  ] as VideoEncoderConfig[];
  for (const config of configs) {
    const s = await VideoEncoder.isConfigSupported({ ...config, futureConfigFeature: 1 } as never);
    assert.deepEqual(s.config, config);
    assert.notEqual(s.config, config);
  }
  assert.ok((await VideoEncoder.isConfigSupported(configs[3])).supported, "vp8 contentHint text");
  if (usable(AV1)) assert.ok((await VideoEncoder.isConfigSupported(configs[4])).supported, "av1");
});

// ---------------------------------------------------------------- decode

test("decode throws InvalidStateError when unconfigured or closed, DataError for a first delta chunk, after flush too", async () => {
  const { chunks, config } = await stream(H264.codec);
  const decoder = new VideoDecoder({ output: (f) => f.close(), error: () => assert.fail() });
  assert.throws(() => decoder.decode(chunks[0]), { name: "InvalidStateError" });
  await assert.rejects(decoder.flush(), { name: "InvalidStateError" });
  decoder.configure(config);
  assert.throws(() => decoder.decode(chunks[1]), { name: "DataError" });
  const keyAsDelta = retime(chunks[0], 0, undefined, "delta");
  assert.throws(() => decoder.decode(keyAsDelta), { name: "DataError" }, "the type is the user's");
  assert.equal(decoder.decodeQueueSize, 0);
  decoder.decode(chunks[0]);
  decoder.decode(chunks[1]);
  await decoder.flush();
  assert.throws(() => decoder.decode(chunks[2]), { name: "DataError" }, "a key chunk again");
  decoder.decode(chunks[0]);
  await decoder.flush();
  decoder.close();
  assert.throws(() => decoder.decode(chunks[0]), { name: "InvalidStateError" });
  await assert.rejects(decoder.flush(), { name: "InvalidStateError" });
});

test("decodeQueueSize is > 0 after a burst, dequeue sizes strictly fall to 0 before flush resolves", async () => {
  const { chunks, config } = await encode({ codec: H264.codec, width: W, height: H }, 16);
  const frames: VideoFrame[] = [];
  const decoder = new VideoDecoder({ output: (f) => frames.push(f), error: () => assert.fail() });
  const sizes: number[] = [];
  decoder.ondequeue = () => sizes.push(decoder.decodeQueueSize);
  decoder.configure(config);
  chunks.forEach((c) => decoder.decode(c));
  assert.equal(decoder.decodeQueueSize, 16);
  assert.equal(frames.length, 0, "outputs are never synchronous");
  assert.equal(sizes.length, 0, "dequeue events are never synchronous");
  await decoder.flush();
  assert.equal(decoder.decodeQueueSize, 0);
  assert.equal(sizes.at(-1), 0, `sizes ${sizes}`);
  sizes.forEach((s, i) => assert.ok(i === 0 || s < sizes[i - 1], `sizes ${sizes}`));
  const seen = sizes.length;
  await tick(30);
  assert.equal(sizes.length, seen, "no event after the one that saw 0");
  assert.deepEqual(frames.map((f) => f.timestamp), chunks.map((c) => c.timestamp));
  frames.forEach((f) => f.close());
  decoder.close();
});

test("outputs carry their chunks' timestamps and durations in order: 111 then 222 at one timestamp, -42 kept", async () => {
  const { chunks, config } = await stream(H264.codec);
  const key = chunks[0];
  const input = [retime(key, 0, 111), retime(key, 0, 222), retime(key, -42, 1)];
  const deltas = chunks.slice(1).map((c, n) => retime(c, n, 5));
  const frames = await decode(config, [...input, ...deltas]);
  const want = [[0, 111], [0, 222], [-42, 1], ...deltas.map((_, n) => [n, 5])];
  assert.deepEqual(frames.map((f) => [f.timestamp, f.duration]), want);
  frames.forEach((f) => f.close());
});

test("reset() empties the queue synchronously and aborts a pending flush without an error callback; configure works again", async () => {
  const { chunks, config } = await stream(H264.codec);
  const log: string[] = [];
  const decoder = logging(newDecoder, log);
  decoder.reset(); // unconfigured: a no-op
  assert.equal(decoder.state, "unconfigured");
  decoder.configure(config);
  chunks.forEach((c) => decoder.decode(c));
  const flushed = outcome(decoder.flush());
  assert.ok(decoder.decodeQueueSize > 0);
  decoder.reset();
  assert.equal(decoder.decodeQueueSize, 0);
  assert.equal(decoder.state, "unconfigured");
  assert.equal(await flushed, "DOMException AbortError");
  await tick(50);
  assert.deepEqual(log, []);
  decoder.configure(config);
  decoder.reset(); // configure, reset, configure, decode must not stall
  decoder.configure(config);
  chunks.forEach((c) => decoder.decode(c));
  await decoder.flush();
  assert.deepEqual(log, chunks.map((c) => `output ${c.timestamp}`));
  decoder.close();
});

test("reset() inside the first output callback drops every earlier output; configure, decode, flush then work", async () => {
  const { chunks, config } = await stream(H264.codec);
  const timestamps: number[] = [];
  let again: Promise<string> | undefined;
  const decoder: VideoDecoder = new VideoDecoder({
    output: (f) => {
      timestamps.push(f.timestamp);
      f.close();
      if (again) return;
      decoder.reset();
      assert.equal(decoder.decodeQueueSize, 0);
      decoder.configure(config);
      for (let i = 0; i < 4; i++) decoder.decode(retime(chunks[0], 1));
      again = outcome(decoder.flush());
    },
    error: (e) => assert.fail(e.name),
  });
  decoder.configure(config);
  for (let i = 0; i < 16; i++) decoder.decode(retime(chunks[0], 0));
  assert.ok(decoder.decodeQueueSize > 0, "the pending configure blocks the queue");
  assert.equal(await outcome(decoder.flush()), "DOMException AbortError");
  await until(() => again !== undefined);
  assert.equal(await again, "resolved");
  assert.deepEqual(timestamps, [0, 1, 1, 1, 1]);
  decoder.close();
});

test("inside an output callback, reset, configure, key, corrupt delta and flush reject EncodingError", async () => {
  const { chunks, config } = await stream(H264.codec);
  const errors: string[] = [];
  let again: Promise<string> | undefined;
  const decoder: VideoDecoder = new VideoDecoder({
    output: (f) => {
      f.close();
      if (again) return;
      decoder.reset();
      decoder.configure(config);
      decoder.decode(chunks[0]);
      decoder.decode(corrupt(chunks[1], 4));
      again = outcome(decoder.flush());
    },
    error: (e) => errors.push(e.name),
  });
  decoder.configure(config);
  decoder.decode(chunks[0]);
  assert.equal(await outcome(decoder.flush()), "DOMException AbortError");
  await until(() => again !== undefined);
  assert.equal(await again, "DOMException EncodingError");
  assert.deepEqual(errors, ["EncodingError"]);
});

test("close() aborts a pending flush with no callbacks after it; close and reset on closed throw", async () => {
  const { chunks, config } = await stream(H264.codec);
  const log: string[] = [];
  const decoder = logging(newDecoder, log);
  decoder.configure(config);
  chunks.forEach((c) => decoder.decode(c));
  const flushed = outcome(decoder.flush());
  decoder.close();
  assert.deepEqual([decoder.state, decoder.decodeQueueSize], ["closed", 0]);
  assert.equal(await flushed, "DOMException AbortError");
  await tick(50);
  assert.deepEqual(log, []);
  assert.throws(() => decoder.close(), { name: "InvalidStateError" });
  assert.throws(() => decoder.reset(), { name: "InvalidStateError" });
});

/** A key chunk then `bad`, then a flush: EncodingError once, before the flush rejects with it. */
async function failsToDecode(
  codec: string,
  bad: (chunks: EncodedVideoChunk[]) => EncodedVideoChunk,
) {
  const { chunks, config } = await stream(codec);
  const log: string[] = [];
  const decoder = logging(newDecoder, log);
  decoder.configure(config);
  decoder.decode(chunks[0]);
  decoder.decode(bad(chunks));
  log.push(await outcome(decoder.flush()));
  assert.deepEqual(log.filter((l) => !l.startsWith("output")), closedWith("EncodingError"));
  assert.ok(log.length <= 3, "at most one output");
}

test("an empty key chunk closes the decoder with EncodingError, once, before flush rejects with it", async () => {
  const empty = new EncodedVideoChunk({ type: "key", timestamp: 1, data: new ArrayBuffer(0) });
  await failsToDecode(H264.codec, () => empty);
});

for (const c of CODECS) {
  test(`${c.codec}: a corrupt delta chunk closes the decoder with EncodingError, once, before flush rejects with it`, async () => {
    await failsToDecode(c.codec, (chunks) => corrupt(chunks[1], c === AV1 ? 2 : 4));
  });
}

test("a decoder whose frames are all held stalls with chunks queued, and goes on once they are closed", async () => {
  const { chunks, config } = await encode({ codec: H264.codec, width: 64, height: 48 }, 48);
  const held: VideoFrame[] = [];
  let hold = true;
  const timestamps: number[] = [];
  const decoder = new VideoDecoder({
    output: (f) => (timestamps.push(f.timestamp), hold ? held.push(f) : f.close()),
    error: (e) => assert.fail(e.name),
  });
  decoder.configure(config); // the default slots, fewer than 48
  chunks.forEach((c) => decoder.decode(c));
  for (let seen = -1; seen !== held.length;) (seen = held.length), await tick(60);
  assert.ok(held.length > 0 && held.length < 48, `${held.length} frames out`);
  const queued = decoder.decodeQueueSize;
  assert.ok(queued > 0, "chunks wait while every slot is held");
  await tick(60);
  assert.equal(decoder.decodeQueueSize, queued);
  hold = false;
  held.forEach((f) => f.close());
  await decoder.flush();
  assert.equal(decoder.decodeQueueSize, 0);
  assert.deepEqual(timestamps, chunks.map((c) => c.timestamp));
  decoder.close();
});

test("a stalled decoder looks again only when a slot comes home, however it is released", async () => {
  const { chunks, config } = await encode({ codec: H264.codec, width: 64, height: 48 }, 48);
  const kept: GpuResource<unknown>[] = [];
  let hold = true;
  const out: number[] = [];
  const decoder = new VideoDecoder({
    output: (f) => {
      out.push(f.timestamp);
      if (hold) kept.push(f.resource!.clone()); // held as another Worker or process would
      f.close();
    },
    error: (e) => assert.fail(e.name),
  });
  let looks = 0;
  const resume = FrameDecoder.prototype.resume;
  FrameDecoder.prototype.resume = function () {
    looks++;
    return resume.call(this);
  };
  try {
    decoder.configure(config);
    chunks.forEach((c) => decoder.decode(c));
    for (let seen = -1; seen !== out.length;) (seen = out.length), await tick(60);
    assert.ok(decoder.decodeQueueSize > 0, "stalled, every slot held");
    const before = looks;
    await tick(300);
    assert.equal(looks - before, 0, "no look while nothing came home (no polling)");
    hold = false;
    kept.splice(0).forEach((h) => h.release()); // not a VideoFrame's close: the pool says so
    await decoder.flush();
    assert.deepEqual(out, chunks.map((c) => c.timestamp));
  } finally {
    FrameDecoder.prototype.resume = resume;
    decoder.close();
  }
});

// ---------------------------------------------------------------- encode

test("vp8: encode throws TypeError for a closed frame before any state check, InvalidStateError unconfigured or closed; a frame closed right after encode() is encoded, its timing kept", async () => {
  const encoder = new VideoEncoder({ output: () => {}, error: () => assert.fail() });
  const closed = i420(W, H, 0);
  closed.close();
  const open = i420(W, H, 0);
  assert.throws(() => encoder.encode(closed), TypeError);
  assert.throws(() => encoder.encode(open), { name: "InvalidStateError" });
  await assert.rejects(encoder.flush(), { name: "InvalidStateError" });
  encoder.configure({ codec: "vp8", width: W, height: H });
  assert.throws(() => encoder.encode(closed), TypeError);
  assert.equal(encoder.encodeQueueSize, 0);
  encoder.close();
  assert.throws(() => encoder.encode(closed), TypeError);
  assert.throws(() => encoder.encode(open), { name: "InvalidStateError" });
  assert.throws(() => encoder.close(), { name: "InvalidStateError" });
  assert.throws(() => encoder.reset(), { name: "InvalidStateError" });
  open.close();
  const at = [-10_000, 23_333]; // a frame may be closed right after encode()
  const frame = (n: number) => i420(W, H, at[n], { n, duration: 33_333 });
  const { chunks, metas } = await encode({ codec: "vp8", width: W, height: H }, 2, frame);
  assert.deepEqual(chunks.map((c) => [c.timestamp, c.duration]), at.map((t) => [t, 33_333]));
  assert.ok(chunks.every((c) => c.byteLength > 0));
  assert.ok(metas.every((m) => typeof m === "object" && m !== null));
});

test("vp8: the first output carries decoderConfig (codec, size, display aspect, colour, orientation), later ones none; {keyFrame:true} gives key chunks", async () => {
  const config = { codec: "vp8", width: W, height: H, displayWidth: 200, displayHeight: 120 };
  const frame = (n: number) => i420(W, H, n * 100, { n, rotation: 90, flip: true });
  const { chunks, metas } = await encode(config, 12, frame, 4);
  assert.equal(chunks.length, 12);
  for (const n of [0, 4, 8]) assert.equal(chunks[n].type, "key", `{keyFrame:true} at ${n}`);
  assert.ok(chunks.some((c) => c.type === "delta"));
  const d = metas[0].decoderConfig!;
  assert.equal(d.codec, "vp8");
  assert.deepEqual([d.codedWidth, d.codedHeight], [W, H]);
  assert.deepEqual([d.displayAspectWidth, d.displayAspectHeight], [200, 120]);
  for (const k of ["primaries", "transfer", "matrix", "fullRange"] as const) {
    assert.ok(d.colorSpace?.[k] !== null && d.colorSpace?.[k] !== undefined, `colorSpace.${k}`);
  }
  assert.deepEqual([d.rotation, d.flip], [90, true]);
  assert.ok(metas.slice(1).every((m) => m.decoderConfig === undefined));
});

/** The NAL unit types of a length-prefixed access unit; undefined when the lengths do not add up. */
function lengthPrefixedTypes(b: Uint8Array): number[] | undefined {
  const types: number[] = [];
  for (let at = 0; at < b.length;) {
    const n = at + 4 <= b.length ? new DataView(b.buffer, b.byteOffset + at).getUint32(0) : 0;
    if (n === 0 || at + 4 + n > b.length) return undefined;
    types.push(b[at + 4] & 0x1f);
    at += 4 + n;
  }
  return types;
}

const PROFILES = [["avc1.42001e", 0x42], ["avc1.4d001e", 0x4d], ["avc1.64001f", 0x64]] as const;
for (const [codec, profile] of PROFILES) {
  test(`${codec} by default: an avcC description whose byte 1 is the profile 0x${profile.toString(16)}, length-prefixed chunks`, async () => {
    const { chunks, config } = await encode({ codec, width: W, height: H }, 4);
    const avcC = descriptionOf(config);
    assert.ok(avcC.length > 7);
    assert.deepEqual([avcC[0], avcC[1]], [1, profile]);
    assert.equal(chunks[0].type, "key");
    for (const c of chunks) {
      const types = lengthPrefixedTypes(bytesOf(c));
      assert.ok(types, `chunk ${c.timestamp} is not length-prefixed`);
      assert.equal(c.type === "key", types.includes(5), `key ⇔ IDR at ${c.timestamp}`);
    }
    const frames = await decode(config, chunks);
    assert.equal(frames.length, 4);
    frames.forEach((f) => f.close());
  });
}

/** The NAL unit types of an Annex B access unit; undefined when it does not start with a start code. */
function annexBTypes(b: Uint8Array): number[] | undefined {
  if (!(b[0] === 0 && b[1] === 0 && (b[2] === 1 || (b[2] === 0 && b[3] === 1)))) return undefined;
  const types: number[] = [];
  for (let i = 0; i + 3 < b.length; i++) {
    if (b[i] === 0 && b[i + 1] === 0 && b[i + 2] === 1) types.push(b[i + 3] & 0x1f), i += 2;
  }
  return types;
}

test("avc annexb: chunks start with start codes, no description, key chunks ⇔ IDR; keyFrame:true is honoured", async () => {
  const config = { codec: H264.codec, width: W, height: H, avc: { format: "annexb" as const } };
  const { chunks, config: d } = await encode(config, 16, undefined, 5);
  assert.ok(!("description" in d));
  assert.equal(chunks.length, 16);
  for (const c of chunks) {
    const types = annexBTypes(bytesOf(c));
    assert.ok(types, `chunk ${c.timestamp} has no start code`);
    assert.equal(c.type === "key", types.includes(5), `key ⇔ IDR at ${c.timestamp}`);
    if (c.type === "key") assert.ok(types.includes(7) && types.includes(8), "SPS and PPS in band");
  }
  for (const n of [0, 5, 10, 15]) assert.equal(chunks[n].type, "key", `frame ${n}`);
  const frames = await decode(d, chunks);
  assert.equal(frames.length, 16);
  frames.forEach((f) => f.close());
});

test("vp8: reconfiguring to another size emits a new decoderConfig with exactly the new size, and back", async () => {
  const configs: VideoDecoderConfig[] = [];
  let outputs = 0;
  const encoder = new VideoEncoder({
    output: (_c, m) => (outputs++, m.decoderConfig && configs.push(m.decoderConfig)),
    error: (e) => assert.fail(e.name),
  });
  for (const [w, h] of [[W, H], [320, 200], [W, H]]) {
    encoder.configure({ codec: "vp8", width: w, height: h });
    feed(encoder, w, h, 3, outputs * 1000);
    await encoder.flush();
  }
  encoder.close();
  assert.equal(outputs, 9);
  const sizes = configs.map((c) => `${c.codedWidth}x${c.codedHeight}`);
  assert.deepEqual(sizes, [`${W}x${H}`, "320x200", `${W}x${H}`]);
});

test("vp8: a frame whose rotation or flip differs from the first's throws DataError; the encoder goes on", async () => {
  const chunks: EncodedVideoChunk[] = [];
  const configs: VideoDecoderConfig[] = [];
  const encoder = new VideoEncoder({
    output: (c, m) => (chunks.push(c), m.decoderConfig && configs.push(m.decoderConfig)),
    error: (e) => assert.fail(e.name),
  });
  encoder.configure({ codec: "vp8", width: W, height: H });
  const frames = [[90, true], [0, true], [90, false], [90, true]].map(([rotation, flip], n) =>
    i420(W, H, n, { rotation: rotation as number, flip: flip as boolean })
  );
  encoder.encode(frames[0]);
  assert.throws(() => encoder.encode(frames[1]), { name: "DataError" });
  assert.throws(() => encoder.encode(frames[2]), { name: "DataError" });
  assert.equal(encoder.state, "configured");
  encoder.encode(frames[3]);
  await encoder.flush();
  encoder.configure({ codec: "vp8", width: W, height: H }); // clears the active orientation
  encoder.encode(frames[1]);
  frames.forEach((f) => f.close());
  await encoder.flush();
  encoder.close();
  assert.deepEqual(chunks.map((c) => c.timestamp), [0, 3, 1]);
  assert.deepEqual(configs.map((d) => [d.rotation, d.flip]), [[90, true], [0, true]]);
});

test("a frame whose visible size is not the config's is an EncodingError through the callback (gpures does not scale)", async () => {
  // A documented deviation: the spec says the encoder MUST scale such frames.
  const log: string[] = [];
  const encoder = logging(newEncoder, log);
  encoder.configure({ codec: H264.codec, width: W, height: H });
  feed(encoder, 320, 200, 1);
  log.push(await outcome(encoder.flush()));
  assert.deepEqual(log, closedWith("EncodingError"));
});

test("RGBA frames are converted to I420: decoded back they keep their colour", async () => {
  const rgba = new Uint8Array(W * H * 4);
  for (let i = 0; i < rgba.length; i += 4) rgba.set([50, 100, 150, 255], i);
  const init = { format: "RGBA" as const, codedWidth: W, codedHeight: H };
  const frame = (n: number) => new VideoFrame(rgba, { ...init, timestamp: n });
  const { chunks, config } = await encode({ codec: H264.codec, width: W, height: H }, 2, frame);
  const frames = await decode(config, chunks);
  assert.equal(frames.length, 2);
  const out = new Uint8Array(W * H * 4);
  await frames[0].copyTo(out, { format: "RGBA" });
  const mean = [0, 1, 2, 3].map((k) => out.filter((_, i) => i % 4 === k).reduce((a, b) => a + b));
  mean.forEach((_, k) => mean[k] /= W * H);
  [50, 100, 150, 255].forEach((v, k) => assert.ok(Math.abs(mean[k] - v) <= 25, `${mean}`));
  frames.forEach((f) => f.close());
});

// ---------------------------------------------------------------- full cycle

for (const c of CODECS) {
  test(`${c.codec}: 16 frames at 320x200 decode back as DMA-BUF frames of exactly that size, in order, in decoderConfig's colour`, async () => {
    const rate = { bitrate: 1_000_000, bitrateMode: "constant" as const, framerate: 30 };
    const size = { codec: c.codec, width: 320, height: 200 };
    const { chunks, config: d } = await encode({ ...size, ...rate }, 16);
    assert.equal(chunks.length, 16);
    assert.equal(chunks[0].type, "key");
    const sizeless = { ...d }; // a decoderConfig without sizes still decodes
    delete sizeless.codedWidth, delete sizeless.codedHeight;
    delete sizeless.displayAspectWidth, delete sizeless.displayAspectHeight;
    for (const config of [d, sizeless]) {
      const frames = await decode(config, chunks);
      assert.deepEqual(frames.map((f) => f.timestamp), chunks.map((k) => k.timestamp));
      for (const f of frames) {
        assert.deepEqual(f.visibleRect?.toJSON(), { x: 0, y: 0, width: 320, height: 200 });
        assert.deepEqual(f.colorSpace.toJSON(), d.colorSpace);
        assert.equal(f.resource?.kind, "DmaBufHandle");
        f.close();
      }
    }
  });
}

for (const c of CODECS.filter((c) => c.colourInStream)) {
  test(`${c.codec}: with decoderConfig.colorSpace stripped ({}), frames still report the encoder's colour`, async () => {
    const { chunks, config } = await stream(c.codec);
    const frames = await decode({ ...config, colorSpace: {} }, chunks);
    try {
      for (const f of frames) assert.deepEqual(f.colorSpace.toJSON(), config.colorSpace);
    } finally {
      frames.forEach((f) => f.close());
    }
  });
}

// ---------------------------------------------------------------- encoder queue, reset, close

test("encodeQueueSize is > 0 after a burst, dequeue sizes strictly fall to 0 before flush resolves", async () => {
  let outputs = 0;
  const encoder = new VideoEncoder({ output: () => outputs++, error: () => assert.fail() });
  const sizes: number[] = [];
  encoder.ondequeue = () => sizes.push(encoder.encodeQueueSize);
  encoder.configure({ codec: H264.codec, width: W, height: H });
  feed(encoder, W, H, 16);
  assert.deepEqual([encoder.encodeQueueSize, sizes.length, outputs], [16, 0, 0]);
  await encoder.flush();
  assert.deepEqual([encoder.encodeQueueSize, outputs], [0, 16]);
  assert.equal(sizes.at(-1), 0, `sizes ${sizes}`);
  sizes.forEach((s, i) => assert.ok(i === 0 || s < sizes[i - 1], `sizes ${sizes}`));
  encoder.close();
});

test("encoder reset() inside an output callback aborts the flush; reset, configure, encode, flush there gives 1 output", async () => {
  const timestamps: number[] = [];
  let again: Promise<string> | undefined;
  const encoder: VideoEncoder = new VideoEncoder({
    output: (c) => {
      timestamps.push(c.timestamp);
      if (again) return;
      encoder.reset();
      assert.equal(encoder.encodeQueueSize, 0);
      encoder.configure({ codec: H264.codec, width: W, height: H });
      feed(encoder, W, H, 1, 100);
      again = outcome(encoder.flush());
    },
    error: (e) => assert.fail(e.name),
  });
  encoder.configure({ codec: H264.codec, width: W, height: H });
  feed(encoder, W, H, 2);
  assert.equal(await outcome(encoder.flush()), "DOMException AbortError");
  await until(() => again !== undefined);
  assert.equal(await again, "resolved");
  assert.deepEqual(timestamps, [0, 100]);
  encoder.close();
});

test("encoder reset() and close() empty the queue and abort a pending flush without an error callback; after reset the next output has a new decoderConfig", async () => {
  const errors: string[] = [];
  const metas: [number, VideoDecoderConfig | undefined][] = [];
  const encoder: VideoEncoder = new VideoEncoder({
    output: (c, m) => {
      metas.push([c.timestamp, m.decoderConfig]);
      if (metas.length === 3) encoder.reset();
    },
    error: (e) => errors.push(e.name),
  });
  encoder.reset(); // unconfigured: a no-op
  assert.equal(encoder.state, "unconfigured");
  encoder.configure({ codec: H264.codec, width: W, height: H });
  feed(encoder, W, H, 8);
  assert.equal(await outcome(encoder.flush()), "DOMException AbortError");
  await tick(30);
  assert.equal(metas.length, 3, "nothing from before the reset after it");
  encoder.configure({ codec: H264.codec, width: 320, height: 200 });
  feed(encoder, 320, 200, 5, 1000);
  const pending = outcome(encoder.flush());
  assert.equal(encoder.encodeQueueSize, 5);
  encoder.reset();
  assert.equal(encoder.encodeQueueSize, 0);
  assert.equal(await pending, "DOMException AbortError");
  encoder.configure({ codec: H264.codec, width: W, height: H }); // as before the first reset
  feed(encoder, W, H, 5, 2000);
  await encoder.flush();
  const after = metas.slice(3);
  assert.deepEqual(after.map(([ts]) => ts), [2000, 2001, 2002, 2003, 2004]);
  assert.deepEqual(
    [after[0][1]?.codedWidth, after[0][1]?.codedHeight],
    [W, H],
    "a new decoderConfig",
  );
  assert.ok(after.slice(1).every(([, d]) => d === undefined));
  feed(encoder, W, H, 4, 3000);
  const flushed = outcome(encoder.flush());
  encoder.close(); // close() aborts a pending flush too, with no callback after it
  assert.deepEqual([encoder.state, encoder.encodeQueueSize], ["closed", 0]);
  assert.equal(await flushed, "DOMException AbortError");
  await tick(50);
  assert.equal(metas.length, 8);
  assert.deepEqual(errors, []);
});

// ----------------------------------------------------------- after review

test("reset() releases the frames still queued for encoding: their slots go home at once", () => {
  const before = liveHandles();
  const encoder = new VideoEncoder({ output: () => {}, error: () => {} });
  encoder.configure({ codec: H264.codec, width: W, height: H });
  feed(encoder, W, H, 5); // each frame closed by the caller; the encoder holds its clones
  assert.ok(liveHandles() > before);
  encoder.reset();
  assert.equal(liveHandles(), before);
  encoder.close();
});

test("a reconfigured encoder converts RGBA frames at its new size, in its new colour", async () => {
  const rgba = (w: number, h: number, t: number) =>
    new VideoFrame(new Uint8Array(w * h * 4).fill(200), {
      format: "RGBA",
      codedWidth: w,
      codedHeight: h,
      timestamp: t,
    });
  const errors: DOMException[] = [];
  const configs: VideoDecoderConfig[] = [];
  const encoder = new VideoEncoder({
    output: (_c, m) => m.decoderConfig && configs.push(m.decoderConfig),
    error: (e) => errors.push(e),
  });
  for (const [w, h] of [[160, 120], [320, 240]]) {
    encoder.configure({ codec: H264.codec, width: w, height: h });
    const f = rgba(w, h, 0);
    encoder.encode(f);
    f.close();
    await encoder.flush();
  }
  encoder.close();
  assert.deepEqual(errors, []);
  assert.deepEqual(configs.map((c) => [c.codedWidth, c.codedHeight]), [[160, 120], [320, 240]]);
});

test("a frame whose visibleRect differs from its handle's encodes the rectangle it shows", async () => {
  // Rows 0..15 dark, 16..135 bright: the frame shows rows 16..135 only.
  const data = new Uint8Array(160 * 136 * 3 / 2).fill(128);
  data.fill(40, 0, 160 * 16);
  data.fill(200, 160 * 16, 160 * 136);
  const base = new VideoFrame(data, {
    format: "I420",
    codedWidth: 160,
    codedHeight: 136,
    timestamp: 0,
    visibleRect: { x: 0, y: 0, width: 160, height: 120 },
  });
  const shown = new VideoFrame(base, { visibleRect: { x: 0, y: 16, width: 160, height: 120 } });
  base.close();
  const { chunks, config } = await encode(
    { codec: H264.codec, width: 160, height: 120 },
    1,
    () => shown,
  );
  const [frame] = await decode(config, chunks);
  const y = new Uint8Array(frame.allocationSize());
  await frame.copyTo(y);
  frame.close();
  const mean = y.subarray(0, 160 * 120).reduce((a, b) => a + b, 0) / (160 * 120);
  assert.ok(
    Math.abs(mean - 200) < 6,
    `mean luma ${mean}: the rows the frame shows, not the handle's`,
  );
});

test("an output callback that throws is reported, and decoding goes on", async () => {
  const { chunks, config } = await stream(H264.codec);
  const errors: DOMException[] = [];
  let outputs = 0;
  const reported: unknown[] = [];
  const onError = (e: ErrorEvent) => (e.preventDefault(), reported.push(e.error));
  globalThis.addEventListener("error", onError);
  try {
    const decoder = new VideoDecoder({
      output: (f) => {
        f.close();
        if (outputs++ === 0) throw new Error("a bug in the application");
      },
      error: (e) => errors.push(e),
    });
    decoder.configure(config);
    for (const c of chunks) decoder.decode(c);
    await decoder.flush();
    assert.equal(decoder.state, "configured");
    decoder.close();
  } finally {
    globalThis.removeEventListener("error", onError);
  }
  assert.equal(outputs, chunks.length);
  assert.deepEqual(errors, []);
  assert.equal((reported[0] as Error)?.message, "a bug in the application");
});

Deno.test({
  name:
    "H.265: the default framing gives an hvcC description that decodes the length-prefixed chunks",
  ignore: !available || !isCodecSupported("libx265", "encoder") ||
    !isCodecSupported("hevc", "decoder"),
  async fn() {
    for (const format of ["hevc", "annexb"] as const) {
      const { chunks, config } = await encode({
        codec: "hvc1.1.6.L93.B0",
        width: W,
        height: H,
        hevc: { format },
      }, 6);
      const first = new Uint8Array(chunks[0].byteLength);
      chunks[0].copyTo(first);
      if (format === "hevc") {
        const record = new Uint8Array(config.description as Uint8Array);
        assert.equal(record[0], 1, "configurationVersion");
        assert.equal(record[1] & 0x1f, 1, "general_profile_idc: Main");
        assert.equal(record[16] & 3, 1, "chromaFormat 4:2:0");
        assert.equal(record[22], 3, "three arrays: VPS, SPS, PPS");
        assert.notDeepEqual([...first.subarray(0, 4)], [0, 0, 0, 1], "a length, not a start code");
      } else {
        assert.equal(config.description, undefined);
        assert.deepEqual([...first.subarray(0, 4)], [0, 0, 0, 1]);
      }
      const frames = await decode(config, chunks);
      assert.equal(frames.length, 6);
      assert.deepEqual(frames.map((f) => f.timestamp), [0, 1, 2, 3, 4, 5].map((n) => n * 33_333));
      frames.forEach((f) => f.close());
    }
  },
});
