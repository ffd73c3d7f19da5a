// Frame hand-off: what it costs to give a pooled frame to another process or
// a Worker and to get its slot back, against today's per-frame fd + mmap
// path and against copying the bytes through a Unix socket, all measured in
// one run next to the floors they stand on (an empty FFI call, a Worker
// message round trip).
//
//   deno bench --allow-all bench/frames_bench.ts
//
// deno bench times each iteration's round trip. The one-way figures the
// targets are about come from stamps on one clock (CLOCK_MONOTONIC, through
// bench/_frames_clock.ts) taken by the producer and by the consumer; they are
// printed as a table when the run ends:
//   hand-off: from the start of send() (or postMessage, or the mailbox
//             write) to the consumer holding typed views of the planes (for
//             the bytes: holding all of them), counted from when the
//             consumer was already waiting;
//   return:   from the consumer's release to the producer's acquire()
//             resolving with the slot (a 1-slot pool, so every acquire waits).
// Frames are NV12 in the pool's layout. Linux only.

import {
  Channel,
  type ChannelListener,
  DmaBufHandle,
  type FrameLayout,
  FramePool,
  FrameQueue,
  liveHandles,
  PixelFormat,
} from "../mod.ts";
import { lib } from "../ffi/load/load.ts";
import { benchFfiFloor } from "./_ffi_floor.ts";
import { clockUs, decodeStamps, STAMP_BYTES, type Stamps } from "./_frames_clock.ts";
import { closeFd, memfd } from "./_memfd.ts";
import { measureWakeFloor } from "./_wake_floor.ts";

const s = lib();
const WARMUP = 50;
/** The C floor, measured before the benches and again after them: each ratio uses the lower. */
const floorBefore = await measureWakeFloor();
const SIZES = [["720p", 1280, 720], ["4K", 3840, 2160]] as const;

// ------------------------------------------------------------------ samples

/** One-way times of one bench, in µs. */
class Samples {
  readonly handoff: number[] = [];
  readonly back: number[] = [];
  #seen = 0;

  constructor(readonly name: string) {}

  /** Records a frame's times; the first WARMUP frames (deno bench's warm-up too) are not kept. */
  add(handoff: number, back?: number): void {
    if (this.#seen++ < WARMUP) return;
    this.handoff.push(handoff);
    if (back !== undefined) this.back.push(back);
  }
}

const all: Samples[] = [];
function samples(name: string): Samples {
  const made = new Samples(name);
  all.push(made);
  return made;
}

function percentile(values: number[], p: number): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// ------------------------------------------------------ a consumer process

/** Reads the consumer's stamps off its stdout: 24 bytes after each frame's release. */
class StampReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #stamps = new Float64Array(3);
  readonly #bytes = new Uint8Array(this.#stamps.buffer);
  #pending: Uint8Array = new Uint8Array(0);

  constructor(stdout: ReadableStream<Uint8Array>) {
    this.#reader = stdout.getReader();
  }

  async next(): Promise<Stamps> {
    for (let at = 0; at < STAMP_BYTES;) {
      if (!this.#pending.length) {
        const { value, done } = await this.#reader.read();
        if (done) throw new Error("the consumer ended");
        this.#pending = value;
      }
      const n = Math.min(STAMP_BYTES - at, this.#pending.length);
      this.#bytes.set(this.#pending.subarray(0, n), at);
      this.#pending = this.#pending.subarray(n);
      at += n;
    }
    return decodeStamps(this.#stamps);
  }
}

function spawnConsumer(mode: string, path: string, bytes: number): Deno.ChildProcess {
  const script = new URL("./_frames_consumer.ts", import.meta.url).pathname;
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", script, mode, path, String(bytes)],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
}

/** A consumer process on a channel: pooled frames or a fresh handle per frame. */
async function channelConsumer(mode: "pool" | "fd", label: string) {
  const path = `/tmp/gpures-frames-bench-${Deno.pid}-${mode}-${label}.sock`;
  const listener: ChannelListener = Channel.listen(path);
  const child = spawnConsumer(mode, path, 0);
  const channel = await listener.accept();
  listener.close();
  return { child, channel, stamps: new StampReader(child.stdout) };
}

/** A consumer process that reads the bytes from a Unix stream socket. */
async function bytesConsumer(label: string, bytes: number) {
  const path = `/tmp/gpures-frames-bench-${Deno.pid}-bytes-${label}.sock`;
  const listener = Deno.listen({ transport: "unix", path });
  const child = spawnConsumer("bytes", path, bytes);
  const conn = await listener.accept();
  listener.close(); // removes the socket file
  return { child, conn, stamps: new StampReader(child.stdout) };
}

const children: Deno.ChildProcess[] = [];
const closers: (() => void)[] = [];

// ---------------------------------------------------------------------- floor

benchFfiFloor("floor");

Deno.bench({
  name: "clockUs(): the stamps' clock, CLOCK_MONOTONIC through FFI [x1000]",
  group: "floor",
  fn() {
    let acc = 0;
    for (let i = 0; i < 1000; i++) acc += clockUs();
    if (acc === 0) throw new Error("unreachable");
  },
});

// Every wait in the library (receive, send, acquire, waitAsync) ends in the
// isolate's one wait on its event queue, a nonblocking FFI call that runs on
// a thread of Deno's blocking pool and resolves on the event loop: two thread
// switches even when the answer is already there. This is that floor.
const [hopEnd, hopPeer] = Channel.pair();
closers.push(() => (hopEnd.close(), hopPeer.close()));
Deno.bench({
  name: "await gpures_channel_wait(fd, WRITABLE) that returns at once (the blocking-pool hop)",
  group: "floor",
  n: 5000,
  warmup: WARMUP,
  async fn() {
    if (await s.gpures_channel_wait(hopEnd.fd, 2, 1000, null) !== 0) {
      throw new Error("wait failed");
    }
  },
});

// ------------------------------------------------------- cross-process

/** Pooled frames through a session; the producer's acquire waits for the slot's return. */
async function benchPool(label: string, width: number, height: number): Promise<void> {
  const pool = FramePool.create({ format: "NV12", width, height, slots: 1 });
  const { child, channel, stamps } = await channelConsumer("pool", label);
  children.push(child);
  closers.push(() => (channel.close(), pool.close()));
  const times = samples(`pooled frame through a session, ${label}`);
  let next = await pool.acquire();
  closers.push(() => next.release());
  pool.planes(next)[0].data.fill(16); // maps the slot once, as a producer that writes does
  let sequence = 0;
  Deno.bench({
    name: `pooled ${label} NV12: send(), views in the consumer process, slot back [round trip]`,
    group: `process ${label}`,
    baseline: true,
    n: 2000,
    warmup: WARMUP,
    async fn() {
      const frame = next;
      frame.setMeta({ sequence: sequence++ });
      const sentUs = clockUs();
      await channel.send(frame);
      frame.release();
      next = await pool.acquire();
      const acquiredUs = clockUs();
      const t = await stamps.next();
      times.add(t.heldUs - Math.max(sentUs, t.readyUs), acquiredUs - t.releasedUs);
    },
  });
}

/** Today's path: a fresh DmaBufHandle (a dup of a memfd) per frame over a plain channel, mapped there. */
async function benchPerFrameFd(label: string, layout: FrameLayout, w: number, h: number) {
  const fds = [memfd(layout.size), memfd(layout.size)];
  const { child, channel, stamps } = await channelConsumer("fd", label);
  children.push(child);
  closers.push(() => (channel.close(), fds.forEach(closeFd)));
  const planes = layout.planes.map((p) => ({ objectIndex: 0, offset: p.offset, stride: p.stride }));
  const times = samples(`fresh DmaBufHandle + map() per frame, ${label}`);
  let n = 0;
  Deno.bench({
    name: `fresh DmaBufHandle per ${label} frame, plain channel, map() there [round trip]`,
    group: `process ${label}`,
    n: 1000,
    warmup: WARMUP,
    async fn() {
      const sentUs = clockUs();
      const desc = {
        fds: [fds[n++ % 2]],
        format: "NV12",
        modifier: 0n,
        width: w,
        height: h,
        planes,
      };
      const frame = DmaBufHandle.create(desc as Parameters<typeof DmaBufHandle.create>[0]);
      await channel.send(frame);
      frame.release();
      const t = await stamps.next();
      times.add(t.heldUs - Math.max(sentUs, t.readyUs));
    },
  });
}

/** The bytes themselves through a Unix stream socket (Deno.connect). */
async function benchBytes(label: string, layout: FrameLayout) {
  const { child, conn, stamps } = await bytesConsumer(label, layout.size);
  children.push(child);
  closers.push(() => conn.close());
  const frame = new Uint8Array(layout.size).fill(16);
  const times = samples(`the frame's bytes over a Unix socket, ${label}`);
  Deno.bench({
    name: `the ${label} frame's bytes over a Unix socket [round trip]`,
    group: `process ${label}`,
    n: label === "4K" ? 200 : 500,
    warmup: WARMUP,
    async fn() {
      const sentUs = clockUs();
      for (let at = 0; at < frame.length;) at += await conn.write(frame.subarray(at));
      const t = await stamps.next();
      times.add(t.heldUs - Math.max(sentUs, t.readyUs));
    },
  });
}

for (const [label, width, height] of SIZES) {
  const layout = PixelFormat.layout("NV12", width, height);
  await benchPool(label, width, height);
  await benchPerFrameFd(label, layout, width, height);
  await benchBytes(label, layout);
}

// ------------------------------------------------------------ Worker

type WorkerMode = "message" | "atomics";

/** A Worker that adopts pooled frames; stamps come back through shared memory. */
async function startWorker(mode: WorkerMode) {
  const worker = new Worker(new URL("./_frames_worker.ts", import.meta.url), { type: "module" });
  const stamps = new Float64Array(new SharedArrayBuffer(16));
  const queue = new FrameQueue(1);
  const ready = new Promise((resolve) => (worker.onmessage = resolve));
  worker.postMessage({ mode, stamps: stamps.buffer, queue: queue.buffer });
  await ready;
  closers.push(() => worker.terminate());
  return { worker, stamps, queue };
}

async function benchWorker(mode: WorkerMode): Promise<void> {
  const pool = FramePool.create({ format: "NV12", width: 1280, height: 720, slots: 1 });
  const { worker, stamps, queue } = await startWorker(mode);
  closers.push(() => pool.close()); // after the frame's release: closers run in order
  const how = mode === "message" ? "postMessage(raw)" : "a FrameQueue (shared memory)";
  const times = samples(`pooled frame to a Worker by ${how}, 720p`);
  let next = await pool.acquire();
  closers.push(() => next.release());
  Deno.bench({
    name: `pooled 720p frame to a Worker by ${how}; fromRaw + views there; slot back [round trip]`,
    group: "Worker",
    baseline: mode === "message",
    n: 2000,
    warmup: WARMUP,
    async fn() {
      const sentUs = clockUs();
      if (mode === "message") worker.postMessage(next.intoRaw());
      else queue.push(next);
      next = await pool.acquire();
      times.add(stamps[0] - sentUs, clockUs() - stamps[1]);
    },
  });
}

await benchWorker("message");
await benchWorker("atomics");

// The messaging floor: what any postMessage hand-off pays.
const echo = new Worker(new URL("./_handoff_worker.ts", import.meta.url), { type: "module" });
closers.push(() => echo.terminate());
Deno.bench({
  name: "post a number; the Worker echoes it [round trip] (the messaging floor)",
  group: "Worker",
  n: 2000,
  warmup: WARMUP,
  async fn() {
    const answer = new Promise((resolve) => (echo.onmessage = (e) => resolve(e.data)));
    echo.postMessage(7);
    if (await answer !== 7) throw new Error("echo failed");
  },
});

// ------------------------------------------------------------ the table

// Targets as multiples of the C floor (a one-way SOCK_SEQPACKET wake between
// two processes): [which, hand-off p50, hand-off p99 (of the floor's p99), return p50].
const TARGETS: [RegExp, number, number | null, number | null][] = [
  [/^pooled frame through a session/, 2, 5, 2],
  [/^pooled frame to a Worker/, 1, null, null],
];

function verdict(ratio: number, limit: number | null | undefined): string {
  if (limit === null || limit === undefined) return "";
  return ratio <= limit ? ` (≤ ${limit}x: met)` : ` (> ${limit}x: NOT met)`;
}

function row(t: Samples, floor: { p50: number; p99: number } | null): string {
  const target = TARGETS.find(([which]) => which.test(t.name));
  const p50 = percentile(t.handoff, 50), p99 = percentile(t.handoff, 99);
  const back = t.back.length ? percentile(t.back, 50) : undefined;
  const ratio = (value: number, of: number | undefined, limit: number | null | undefined) =>
    of === undefined ? "" : ` = ${(value / of).toFixed(2)}x${verdict(value / of, limit)}`;
  const cells = [
    t.name,
    `${p50.toFixed(1)}${ratio(p50, floor?.p50, target?.[1])}`,
    `${p99.toFixed(1)}${ratio(p99, floor?.p99, target?.[2])}`,
    back === undefined ? "–" : `${back.toFixed(1)}${ratio(back, floor?.p50, target?.[3])}`,
    back === undefined ? "–" : percentile(t.back, 99).toFixed(1),
    String(t.handoff.length),
  ];
  return `| ${cells.join(" | ")} |`;
}

/** The C floor measured after the benches; with the one before, the lower of each. */
let floorAfter: Awaited<ReturnType<typeof measureWakeFloor>> = null;
Deno.bench({
  name: "C floor: one-way SOCK_SEQPACKET wake between two processes (measured once more)",
  group: "zz floor again",
  n: 1,
  warmup: 0,
  async fn() {
    floorAfter = await measureWakeFloor();
  },
});

globalThis.addEventListener("unload", () => {
  const floors = [floorBefore, floorAfter].filter((f) => f !== null);
  const floor = floors.length
    ? { p50: Math.min(...floors.map((f) => f.p50)), p99: Math.min(...floors.map((f) => f.p99)) }
    : null;
  console.log("\nOne-way times (µs, CLOCK_MONOTONIC stamps in both ends):\n");
  if (floor) {
    console.log(
      `C floor, a one-way SOCK_SEQPACKET wake between two processes: p50 ${
        floor.p50.toFixed(1)
      } µs, p99 ${floor.p99.toFixed(1)} µs (the lower of a run before and after the benches); ` +
        "ratios are to its p50 (p99 column: to its p99).\n",
    );
  }
  console.log("| path | hand-off p50 | hand-off p99 | return p50 | return p99 | frames |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const t of all) if (t.handoff.length) console.log(row(t, floor));
  for (const close of closers) close();
  for (const child of children) child.kill(); // they end on their own once the channels close; this is for the rest
  if (liveHandles() !== 0) console.error(`frames bench: ${liveHandles()} handles leaked`);
});
