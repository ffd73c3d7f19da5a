// A media server's frame loop across two processes: this process decodes
// into a FramePool and sends each frame over a Channel; a consumer process
// (examples/_frame_consumer.ts, spawned here) renders it with WebGPU (or
// checks it on the CPU) and releases it, which returns the slot to the pool.
// No pixel crosses the socket: the first frame of each slot carries its fd,
// later ones only the slot's id and the frame's metadata.
//
// Every frame is checked end to end: the producer seals it (an FNV-1a of its
// visible bytes, the sum of plane 0's samples and the send time) into the
// metadata's 16 bytes of userData; the consumer recomputes both (the sum on
// the GPU where there is one) and counts the frame intact only if they match.
//
//   deno run -A --v8-flags=--expose-gc examples/frame_server.ts [options]
//     --frames N            frames to send (120)
//     --size WxH            frame size (1280x720)
//     --format F            NV12 | RGBA | P010 (NV12)
//     --slots N             pool slots (4)
//     --slow-consumer-ms N  the consumer holds each frame N ms longer (0)
//     --ffmpeg              decode ffmpeg's testsrc2 into the pool; the consumer
//                           encodes what it checked with a second ffmpeg
//     --json                the last line of stdout is a JSON report
//
// Timings use CLOCK_MONOTONIC, one clock for both processes. Hand-off: from
// the start of send() (the metadata stamped just before it) to the consumer
// holding typed views of the planes. Return: from the consumer's release to
// this process's acquire() resolving with that slot, measured on acquires
// that had to wait (a slot that came back while nobody waited has no latency
// to measure). The exit code is 1 when any frame is not intact or missing.
// Linux only (memfd-backed pools).

import {
  Channel,
  clockUs,
  FramePool,
  liveHandles,
  liveMappings,
  type PixelFormatName,
} from "../mod.ts";
import type { PlaneView } from "../mod.ts";

/** The formats on the command line, by the pool's names. */
export const FORMATS: Record<string, PixelFormatName> = {
  NV12: "NV12",
  RGBA: "RgbaU8",
  P010: "P010LE",
};

/** ffmpeg's names for the same layouts (plane for plane, row for row). */
export const FFMPEG_PIX_FMT: Partial<Record<PixelFormatName, string>> = {
  NV12: "nv12",
  RgbaU8: "rgba",
  P010LE: "p010le",
};

export interface ServerOptions {
  frames: number;
  width: number;
  height: number;
  format: PixelFormatName;
  slots: number;
  slowConsumerMs: number;
  ffmpeg: boolean;
  json: boolean;
}

// ------------------------------------------------------------ shared helpers

/** The stamps' clock: the same in every process (performance.now() is not). */
export { clockUs };

/** Bytes of each row that hold samples, row by row, plane by plane: what a frame shows. */
function* visibleRows(planes: PlaneView[]): Generator<Uint8Array> {
  for (const p of planes) {
    const bytes = new Uint8Array(p.data.buffer, p.data.byteOffset, p.data.byteLength);
    const strideBytes = p.stride * p.data.BYTES_PER_ELEMENT;
    for (let y = 0; y < p.height; y++) {
      yield bytes.subarray(y * strideBytes, y * strideBytes + p.bytesPerRow);
    }
  }
}

/** FNV-1a (32-bit) of the visible bytes: row padding is not the frame's. */
export function fnv1a(planes: PlaneView[]): number {
  let h = 0x811c9dc5;
  for (const row of visibleRows(planes)) {
    for (let i = 0; i < row.length; i++) h = Math.imul(h ^ row[i], 0x01000193);
  }
  return h >>> 0;
}

/** The sum of every channel of every visible sample of one plane, mod 2^32 (as a GPU's u32 atomics). */
export function planeSum(p: PlaneView): number {
  const rowElements = p.width * p.channels;
  let total = 0;
  for (let y = 0; y < p.height; y++) {
    let row = 0;
    for (let i = y * p.stride, end = i + rowElements; i < end; i++) row += p.data[i];
    total = (total + row) % 2 ** 32;
  }
  return total;
}

/** What the producer seals into userData: the checks and the send time. */
export interface Seal {
  fnv: number;
  sum: number;
  sentUs: number;
}

export function encodeSeal(seal: Seal): Uint8Array {
  const bytes = new Uint8Array(16);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, seal.fnv, true);
  view.setUint32(4, seal.sum, true);
  view.setFloat64(8, seal.sentUs, true);
  return bytes;
}

export function decodeSeal(bytes: Uint8Array): Seal {
  const view = new DataView(bytes.buffer, bytes.byteOffset, 16);
  return {
    fnv: view.getUint32(0, true),
    sum: view.getUint32(4, true),
    sentUs: view.getFloat64(8, true),
  };
}

/** The p-th percentile (0..100) of `values`, null when there are none. */
export function percentile(values: number[], p: number): number | null {
  if (!values.length) return null;
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** What the consumer reports on the last line of its stdout. */
export interface ConsumerReport {
  renderer: string;
  received: number;
  intact: number;
  notIntact: number[];
  missing: number;
  /** From the later of send() and the consumer asking for the frame, to its plane views. */
  handoffUs: number[];
  /** From send() to the plane views, time queued behind a busy consumer included. */
  latencyUs: number[];
  /** When the consumer released each frame, by sequence (CLOCK_MONOTONIC µs). */
  releasedUs: Record<number, number>;
  encoded: string | null;
  mappingsAfter: number;
  handlesAfter: number;
}

// ------------------------------------------------------------------ options

function parseOptions(args: string[]): ServerOptions {
  const value = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const count = (name: string, fallback: number): number => {
    const n = Number(value(name) ?? fallback);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number`);
    return n;
  };
  const [width, height] = (value("--size") ?? "1280x720").split("x").map(Number);
  if (!(width > 0 && height > 0 && width % 2 === 0 && height % 2 === 0)) {
    throw new Error("--size must be WxH, both even");
  }
  const format = FORMATS[(value("--format") ?? "NV12").toUpperCase()];
  if (!format) throw new Error(`--format must be one of ${Object.keys(FORMATS).join(", ")}`);
  return {
    frames: count("--frames", 120),
    width,
    height,
    format,
    slots: count("--slots", 4),
    slowConsumerMs: count("--slow-consumer-ms", 0),
    ffmpeg: args.includes("--ffmpeg"),
    json: args.includes("--json"),
  };
}

// ------------------------------------------------------------------ sources

/** Fills an acquired frame's planes with picture `n`. */
interface Source {
  readonly name: string;
  fill(planes: PlaneView[], n: number): Promise<void>;
  close(): Promise<void>;
}

/** A moving pattern, different in every frame and every row. */
class PatternSource implements Source {
  readonly name = "a generated pattern";

  fill(planes: PlaneView[], n: number): Promise<void> {
    planes.forEach((p, i) => {
      const rowElements = p.width * p.channels;
      for (let y = 0; y < p.height; y++) {
        const row = p.data.subarray(y * p.stride, y * p.stride + rowElements);
        for (let x = 0; x < row.length; x++) row[x] = (x + y * 3 + n * 7 + i * 50) * 41;
      }
    });
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** A real decoder: ffmpeg's testsrc2, as raw frames on its stdout, copied row by row into the planes. */
class FfmpegSource implements Source {
  readonly name: string;
  readonly #child: Deno.ChildProcess;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  #pending: Uint8Array = new Uint8Array(0);

  constructor({ width, height, format, frames }: ServerOptions) {
    const size = `${width}x${height}`;
    this.name = `ffmpeg (lavfi testsrc2=${size}, ${FFMPEG_PIX_FMT[format]})`;
    this.#child = new Deno.Command("ffmpeg", {
      args: [
        ...["-hide_banner", "-loglevel", "error", "-f", "lavfi"],
        ...["-i", `testsrc2=size=${size}:rate=30`, "-frames:v", String(frames)],
        ...["-pix_fmt", FFMPEG_PIX_FMT[format]!, "-f", "rawvideo", "-"],
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#reader = this.#child.stdout.getReader();
  }

  async fill(planes: PlaneView[]): Promise<void> {
    for (const row of visibleRows(planes)) await this.#readInto(row);
  }

  /** Fills `target` from the stream; most rows come out of a chunk already read. */
  async #readInto(target: Uint8Array): Promise<void> {
    for (let at = 0; at < target.length;) {
      if (!this.#pending.length) {
        const { value, done } = await this.#reader.read();
        if (done) throw new Error("ffmpeg ended before the last frame");
        this.#pending = value;
      }
      const n = Math.min(target.length - at, this.#pending.length);
      target.set(this.#pending.subarray(0, n), at);
      this.#pending = this.#pending.subarray(n);
      at += n;
    }
  }

  async close(): Promise<void> {
    await this.#reader.cancel();
    await this.#child.status;
  }
}

// ----------------------------------------------------------------- producer

/** This process's open fds and what each one is (needs --allow-read of /proc/self/fd). */
function openFds(): Map<string, string> {
  const fds = new Map<string, string>();
  for (const { name } of Deno.readDirSync("/proc/self/fd")) {
    try {
      fds.set(name, Deno.readLinkSync(`/proc/self/fd/${name}`));
    } catch {
      // the directory's own fd, closed by now
    }
  }
  return fds;
}

/** Fds open now that were not open `before` (fd and target both new). */
function newFds(before: Map<string, string>, now: Map<string, string>): string[] {
  return [...now].filter(([fd, target]) => before.get(fd) !== target).map(([fd, t]) =>
    `${fd}: ${t}`
  );
}

function spawnConsumer(path: string, o: ServerOptions): Deno.ChildProcess {
  const consumer = new URL("./_frame_consumer.ts", import.meta.url).pathname;
  const permissions = ["--allow-ffi", "--allow-env", "--allow-read"];
  if (o.ffmpeg) permissions.push("--allow-run=ffmpeg");
  return new Deno.Command(Deno.execPath(), {
    args: [
      ...["run", ...permissions, "--v8-flags=--expose-gc", consumer, path],
      ...[o.format, String(o.width), String(o.height), String(o.slowConsumerMs)],
      o.ffmpeg ? "ffmpeg" : "no-ffmpeg",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
}

/** The consumer's report: the last line of its stdout; throws when it failed. */
async function consumerReport(child: Deno.ChildProcess): Promise<ConsumerReport> {
  const [status, stdout] = await Promise.all([child.status, new Response(child.stdout).text()]);
  if (!status.success) throw new Error(`the consumer failed (exit code ${status.code})`);
  return JSON.parse(stdout.trimEnd().split("\n").at(-1)!);
}

/** A frame whose acquire had to wait: the slot it got back and when. */
interface Wait {
  previous: number;
  acquiredUs: number;
}

interface ProducerRun {
  waits: Wait[];
  source: string;
  seconds: number;
}

/** Acquires, fills, seals and sends every frame; stops when `signal` aborts (the consumer died). */
async function produce(
  pool: FramePool,
  channel: Channel,
  source: Source,
  o: ServerOptions,
  signal: AbortSignal,
): Promise<ProducerRun> {
  const lastSequenceOfSlot = new Map<bigint, number>();
  const waits: Wait[] = [];
  const started = performance.now();
  for (let n = 0; n < o.frames; n++) {
    const waitsBefore = pool.stats.waits;
    const frame = await pool.acquire({ signal });
    const acquiredUs = clockUs();
    try {
      const slot = frame.bufferId!;
      if (pool.stats.waits > waitsBefore && lastSequenceOfSlot.has(slot)) {
        waits.push({ previous: lastSequenceOfSlot.get(slot)!, acquiredUs });
      }
      lastSequenceOfSlot.set(slot, n);
      const planes = pool.planes(frame);
      await source.fill(planes, n);
      const check = { fnv: fnv1a(planes), sum: planeSum(planes[0]) };
      frame.setMeta({ sequence: n, userData: encodeSeal({ ...check, sentUs: clockUs() }) });
      await channel.send(frame);
    } finally {
      frame.release(); // the slot stays out until the consumer releases its copy too
    }
  }
  return { waits, source: source.name, seconds: (performance.now() - started) / 1000 };
}

/** Return latencies: each waiting acquire against the consumer's release of the slot's last frame. */
function returnLatencies(waits: Wait[], releasedUs: Record<number, number>): number[] {
  return waits
    .filter((w) => releasedUs[w.previous] !== undefined)
    .map((w) => w.acquiredUs - releasedUs[w.previous])
    .filter((us) => us >= 0);
}

/** Collects dropped plane views, whose mappings end only then (needs --expose-gc). */
export async function collectGarbage(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; gc && i < 2; i++) {
    await new Promise((resolve) => setTimeout(resolve, 0)); // off the stack that last held them
    gc();
  }
  await new Promise((resolve) => setTimeout(resolve, 0)); // the unmapping finalizers run now
}

async function serve(o: ServerOptions): Promise<Record<string, unknown>> {
  const fdsBefore = openFds();
  const path = `/tmp/gpures-frame-server-${Deno.pid}.sock`;
  const pool = FramePool.create({
    format: o.format,
    width: o.width,
    height: o.height,
    slots: o.slots,
  });
  const listener = Channel.listen(path);
  const child = spawnConsumer(path, o);
  const report = consumerReport(child);
  const died = new AbortController();
  report.catch((e) => died.abort(e));
  const source: Source = o.ffmpeg ? new FfmpegSource(o) : new PatternSource();
  let run: ProducerRun;
  try {
    const channel = await Promise.race([listener.accept(), report.then(() => null)]);
    if (!channel) throw new Error("the consumer ended before it connected");
    try {
      run = await produce(pool, channel, source, o, died.signal);
    } finally {
      channel.close(); // the consumer sees the end once it received everything
    }
  } catch (e) {
    // A consumer that died shows here as a closed session: say why it died instead.
    throw await report.then(() => e, (consumerFailure) => consumerFailure);
  } finally {
    listener.close();
    await source.close();
  }
  const consumer = await report;
  const poolStats = pool.stats;
  pool.close();
  await collectGarbage();
  const fdsAfter = openFds();
  const returns = returnLatencies(run.waits, consumer.releasedUs);
  const round = (v: number | null) => v === null ? null : Math.round(v * 10) / 10;
  return {
    frames: o.frames,
    format: o.format,
    size: `${o.width}x${o.height}`,
    slots: o.slots,
    slowConsumerMs: o.slowConsumerMs,
    source: run.source,
    renderer: consumer.renderer,
    encoded: consumer.encoded,
    received: consumer.received,
    intact: consumer.intact,
    notIntact: consumer.notIntact,
    dropped: o.frames - consumer.received + consumer.missing,
    fps: round(o.frames / run.seconds),
    poolWaits: poolStats.waits,
    poolHighWater: poolStats.highWater,
    handoffP50Us: round(percentile(consumer.handoffUs, 50)),
    handoffP99Us: round(percentile(consumer.handoffUs, 99)),
    handoffMaxUs: round(percentile(consumer.handoffUs, 100)),
    latencyP50Us: round(percentile(consumer.latencyUs, 50)),
    latencyP99Us: round(percentile(consumer.latencyUs, 99)),
    returnSamples: returns.length,
    returnP50Us: round(percentile(returns, 50)),
    returnP99Us: round(percentile(returns, 99)),
    fdsBefore: fdsBefore.size,
    fdsAfter: fdsAfter.size,
    fdsNew: newFds(fdsBefore, fdsAfter),
    mappingsAfter: liveMappings(),
    handlesAfter: liveHandles(),
    consumerMappingsAfter: consumer.mappingsAfter,
    consumerHandlesAfter: consumer.handlesAfter,
  };
}

function summary(r: Record<string, unknown>): string {
  return [
    `frame server: ${r.frames} frames ${r.size} ${r.format}, ${r.slots} slots, from ${r.source}`,
    `  consumer: ${r.renderer}${r.encoded ? `, encoded to ${r.encoded}` : ""}${
      r.slowConsumerMs ? `, holding each frame ${r.slowConsumerMs} ms longer` : ""
    }`,
    `  intact ${r.intact} of ${r.frames}, dropped ${r.dropped}; ${r.fps} frames/s; the producer waited for a slot ${r.poolWaits} times`,
    `  hand-off (send(), or the consumer asking if later, to its typed views): p50 ${r.handoffP50Us} µs, p99 ${r.handoffP99Us} µs`,
    `  latency (send() to typed views, queued behind a busy consumer included): p50 ${r.latencyP50Us} µs, p99 ${r.latencyP99Us} µs`,
    `  return (consumer's release to acquire() resolving): p50 ${r.returnP50Us} µs, p99 ${r.returnP99Us} µs (${r.returnSamples} waiting acquires)`,
    `  fds ${r.fdsBefore} before, ${r.fdsAfter} after (new: ${
      (r.fdsNew as string[]).join(", ") || "none"
    })`,
    `  mappings after: ${r.mappingsAfter} here, ${r.consumerMappingsAfter} in the consumer`,
  ].join("\n");
}

if (import.meta.main) {
  const options = parseOptions(Deno.args);
  try {
    const result = await serve(options);
    console.log(options.json ? JSON.stringify(result) : summary(result));
    const whole = result.intact === options.frames && result.dropped === 0;
    Deno.exitCode = whole ? 0 : 1;
  } catch (e) {
    console.error("frame server:", e);
    Deno.exitCode = 1;
  }
}
