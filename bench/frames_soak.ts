// The frame soak: one producer, a FramePool, and consumer processes that each
// receive every frame through a Channel of their own, for a long while. It
// proves that a steady stream leaks nothing anywhere: no fd, no mapping, no
// growing memory, in the producer or in a consumer, and that no frame is
// overwritten while a consumer reads it (each frame's words say which frame
// they are; consumers check all of them).
//
//   deno run --allow-all bench/frames_soak.ts [--seconds 60] [--fps 1000]
//       [--consumers 4] [--width 160] [--height 120] [--slots 16] [--fanout 1]
//
// With --fanout 1 the producer publishes each frame once through a
// FrameFanout instead of sending it on each channel, and the consumers join it
// under the policies block, dropOldest and latest in turn (window 2, depth 4):
// block consumers must get every frame, the others every frame they get intact
// and in order.
//
// Every second it samples each process: open fds (/proc/PID/fd), RSS
// (VmRSS), V8's heap (its size, and what it holds after a full collection:
// run with --v8-flags=--expose-gc), liveMappings() (the consumers report
// theirs), and the pool's stats. At the end it prints one JSON line: first/
// last/max of each, the frame counts, and "ok". It exits non-zero when, after
// the first 5 s (warm-up: V8, the blocking pool's threads, one mapping per
// slot), the fds or mappings of any process grew, what its V8 heap holds or
// its RSS outside V8's heap grew by more than 10%, or when any frame was
// missing, out of order or not intact. .ci/reliability.sh runs
// it in the full mode only (GPURES_RELIABILITY_FULL=1). Linux only.

import {
  Channel,
  type DeliveryPolicy,
  type DmaBufHandle,
  FrameFanout,
  FramePool,
  liveMappings,
} from "../mod.ts";
import { paint, patternMeta } from "../tests/_support/frame_pattern.ts";

const WARMUP_S = 5;
const RSS_GROWTH = 0.10;

function flags(): Record<string, number> {
  const out: Record<string, number> = {
    seconds: 60,
    fps: 1000,
    consumers: 4,
    width: 160,
    height: 120,
    slots: 16,
    fanout: 0,
  };
  for (let i = 0; i < Deno.args.length; i += 2) {
    const name = Deno.args[i].replace(/^--/, "");
    const value = Number(Deno.args[i + 1]);
    if (!(name in out) || !Number.isFinite(value) || value <= 0) {
      throw new TypeError(`unknown flag or bad value: ${Deno.args[i]} ${Deno.args[i + 1]}`);
    }
    out[name] = value;
  }
  return out;
}

// ------------------------------------------------------------------ samples

/** first (after the warm-up), last and max of one figure of one process. */
class Series {
  first = -1;
  last = -1;
  max = -1;

  add(value: number, warm: boolean): void {
    if (!warm) return;
    if (this.first < 0) this.first = value;
    this.last = value;
    this.max = Math.max(this.max, value);
  }

  toJSON() {
    return { first: this.first, last: this.last, max: this.max };
  }
}

interface ProcessFigures {
  pid: number;
  fds: Series;
  mappings: Series;
  rssKiB: Series;
  heapKiB: Series; // V8's heap (heapTotal): tells a growing RSS that is V8's from a leak
  liveKiB: Series; // what the V8 heap holds after a full collection: a JS leak grows this
}

const figures = (pid: number): ProcessFigures => ({
  pid,
  fds: new Series(),
  mappings: new Series(),
  rssKiB: new Series(),
  heapKiB: new Series(),
  liveKiB: new Series(),
});

/** V8's heap after a full collection (the soak runs with --expose-gc). */
export function liveHeapKiB(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return Math.round(Deno.memoryUsage().heapUsed / 1024);
}

function openFds(pid: number): number {
  let n = 0;
  for (const _ of Deno.readDirSync(`/proc/${pid}/fd`)) n++;
  return n;
}

function rssKiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? -1);
}

// ----------------------------------------------------------------- consumers

const POLICIES: DeliveryPolicy[] = ["block", "dropOldest", "latest"];

interface Consumer {
  child: Deno.ChildProcess;
  channel: Channel;
  policy?: DeliveryPolicy;
  report: Record<string, unknown> & {
    mappings?: number;
    heapKiB?: number;
    liveKiB?: number;
    frames?: number;
    final?: boolean;
  };
  done: Promise<void>;
  figures: ProcessFigures;
}

/** Keeps the consumer's latest JSON line. */
async function readReports(c: Consumer): Promise<void> {
  const lines = c.child.stdout.pipeThrough(new TextDecoderStream());
  let pending = "";
  for await (const chunk of lines) {
    pending += chunk;
    for (let nl; (nl = pending.indexOf("\n")) >= 0; pending = pending.slice(nl + 1)) {
      c.report = JSON.parse(pending.slice(0, nl));
    }
  }
}

async function startConsumers(n: number, fanout?: FrameFanout): Promise<Consumer[]> {
  const path = `/tmp/gpures-frames-soak-${Deno.pid}.sock`;
  const listener = Channel.listen(path);
  const script = new URL("./_frames_soak_consumer.ts", import.meta.url).pathname;
  const consumers: Consumer[] = [];
  for (let i = 0; i < n; i++) {
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        "--v8-flags=--expose-gc",
        script,
        path,
        ...(fanout ? [POLICIES[i % 3]] : []),
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const channel = await listener.accept();
    if (fanout) await fanout.join(channel); // the fan-out's from now on
    const c: Consumer = {
      child,
      channel,
      policy: fanout ? POLICIES[i % 3] : undefined,
      report: {},
      done: Promise.resolve(),
      figures: figures(child.pid),
    };
    c.done = readReports(c);
    consumers.push(c);
  }
  listener.close();
  return consumers;
}

// ------------------------------------------------------------------ producer

/** Sends frame after frame to every consumer, paced to `fps`, until `until` (ms, performance.now). */
async function produce(
  pool: FramePool,
  consumers: Consumer[],
  fps: number,
  until: number,
  fanout?: FrameFanout,
) {
  const start = performance.now();
  let sent = 0;
  while (performance.now() < until) {
    const due = Math.floor(((performance.now() - start) * fps) / 1000);
    if (sent >= due) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      continue;
    }
    const frame: DmaBufHandle = await pool.acquire({ timeout: 10_000 });
    frame.setMeta(patternMeta(sent, paint(pool.planes(frame), sent)));
    if (fanout) await fanout.publish(frame);
    else for (const c of consumers) await c.channel.send(frame);
    frame.release(); // the slot comes home after every consumer's release
    sent++;
  }
  return sent;
}

function sample(pool: FramePool, me: ProcessFigures, consumers: Consumer[], warm: boolean) {
  me.fds.add(openFds(Deno.pid), warm);
  me.mappings.add(liveMappings(), warm);
  me.rssKiB.add(rssKiB(Deno.pid), warm);
  me.heapKiB.add(Math.round(Deno.memoryUsage().heapTotal / 1024), warm);
  me.liveKiB.add(liveHeapKiB(), warm);
  for (const c of consumers) {
    c.figures.fds.add(openFds(c.child.pid), warm);
    c.figures.rssKiB.add(rssKiB(c.child.pid), warm);
    if (c.report.mappings !== undefined) c.figures.mappings.add(c.report.mappings, warm);
    if (c.report.heapKiB !== undefined) c.figures.heapKiB.add(c.report.heapKiB, warm);
    if (c.report.liveKiB !== undefined) c.figures.liveKiB.add(c.report.liveKiB, warm);
  }
  return pool.stats;
}

/** Why the run failed, or nothing: growth after the warm-up, frames lost or not intact. */
function failures(
  all: ProcessFigures[],
  consumers: Consumer[],
  sent: number,
  highWater: number,
): string[] {
  const why: string[] = [];
  // One fd and one mapping per slot, made the first time the slot is used: slots first used after
  // the warm-up (the pool hands out the lowest free slot, so highWater says how many were) may add
  // one each, and nothing else may.
  const late = Math.max(0, highWater - all[0].mappings.first);
  for (const p of all) {
    if (p.fds.last > p.fds.first + late) {
      why.push(`pid ${p.pid}: fds ${p.fds.first} -> ${p.fds.last}`);
    }
    if (p.mappings.last > p.mappings.first + late) {
      why.push(`pid ${p.pid}: mappings ${p.mappings.first} -> ${p.mappings.last}`);
    }
    // V8 sizes its heap to the allocation rate for minutes; what it holds after a full
    // collection, and the RSS outside its heap, are what a leak grows.
    if (p.liveKiB.last > p.liveKiB.first * (1 + RSS_GROWTH) + 512) {
      why.push(`pid ${p.pid}: live V8 heap ${p.liveKiB.first} -> ${p.liveKiB.last} KiB`);
    }
    const outside = (s: "first" | "last") => p.rssKiB[s] - p.heapKiB[s];
    if (outside("last") > outside("first") * (1 + RSS_GROWTH) + 1024) {
      why.push(`pid ${p.pid}: RSS outside V8's heap ${outside("first")} -> ${outside("last")} KiB`);
    }
  }
  for (const c of consumers) {
    const r = c.report;
    if (!r.final) why.push(`consumer ${c.child.pid} sent no final report`);
    const all = c.policy === undefined || c.policy === "block";
    if (
      (all && r.frames !== sent) || r.intact !== r.frames || !r.frames || r.corrupt || r.outOfOrder
    ) {
      why.push(`consumer ${c.child.pid}: ${JSON.stringify(r)} of ${sent} frames`);
    }
  }
  return why;
}

async function main(): Promise<number> {
  const f = flags();
  const pool = FramePool.create({
    format: "NV12",
    width: f.width,
    height: f.height,
    slots: f.slots,
  });
  const fanout = f.fanout ? FrameFanout.create({ pool }) : undefined;
  const consumers = await startConsumers(f.consumers, fanout);
  const me = figures(Deno.pid);
  const started = performance.now();
  let stats = pool.stats;
  const ticker = setInterval(() => {
    stats = sample(pool, me, consumers, performance.now() - started >= WARMUP_S * 1000);
  }, 1000);
  const sent = await produce(pool, consumers, f.fps, started + f.seconds * 1000, fanout);
  await fanout?.flush(); // the block consumers' queued frames go before the end
  const seconds = (performance.now() - started) / 1000;
  // One last sample with every frame back, before anything closes.
  while (pool.stats.inUse) await new Promise((resolve) => setTimeout(resolve, 5));
  clearInterval(ticker);
  stats = sample(pool, me, consumers, true);
  const fanned = fanout?.consumers();
  fanout?.close();
  for (const c of consumers) c.channel.close();
  await Promise.all(consumers.map(async (c) => (await c.done, await c.child.status)));
  pool.close();
  const all = [me, ...consumers.map((c) => c.figures)];
  const why = failures(all, consumers, sent, stats.highWater);
  console.log(JSON.stringify({
    seconds: Math.round(seconds * 10) / 10,
    fps: f.fps,
    achievedFps: Math.round(sent / seconds),
    frame: { format: "NV12", width: f.width, height: f.height, bytes: stats.bufferSize },
    frames: { sent, delivered: consumers.map((c) => c.report.intact ?? 0) },
    producer: me,
    consumers: consumers.map((c) => c.figures),
    pool: stats,
    fanout: fanned?.map(({ consumer, ...c }) => ({ consumer: Number(consumer), ...c })),
    ok: why.length === 0,
    failures: why,
  }));
  return why.length ? 1 : 0;
}

Deno.exit(await main());
