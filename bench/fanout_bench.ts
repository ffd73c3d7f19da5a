// Fan-out: what publishing a frame once to N consumer processes costs the
// producer, against sending it over N sessions (a Channel per consumer, each
// frame sent N times), for N = 1, 2, 4 and 8; and how old a `latest`
// consumer's frame is when it gets it. Ratios to figures of the same run: what
// one more consumer costs over sessions (one hand-off's worth: the slope of
// the N-sessions cost from 1 to 8 consumers) and the C process-to-process
// wake floor.
//
//   deno run --allow-all bench/fanout_bench.ts [--frames 2000] [--fps 1000]
//
// Producer cost: the wall time inside publish() (or inside the N sends),
// summed over the frames and divided by them, and the producer process's CPU
// time per frame (process.cpuUsage(): its JavaScript thread and the library's
// service thread, which reads the releases and sends queued frames on, with
// the pacing timers, the same in both modes); consumers release each frame at
// once, so every frame is sent, none queued (block, window 4). Staleness: a
// `latest` consumer holds each frame 10 ms (a slow preview) and asks again at
// once; the age is the time from the frame's publish to its arrival. 720p
// NV12, paced to --fps. Linux only.

import process from "node:process";
import { Channel, clockUs, FrameFanout, FramePool } from "../mod.ts";
import { measureWakeFloor } from "./_wake_floor.ts";

const arg = (name: string, fallback: number) => {
  const at = Deno.args.indexOf(name);
  return at >= 0 ? Number(Deno.args[at + 1]) : fallback;
};
const FRAMES = arg("--frames", 2000);
const FPS = arg("--fps", 1000);
const WARMUP = 100;
const script = new URL("./_fanout_consumer.ts", import.meta.url).pathname;

interface Run {
  usPerFrame: number;
  cpuUsPerFrame: number;
  reports: { frames: number; ages: number[] }[];
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

/** Starts `n` consumers (joined to `fanout` under `policy` when given) and their channels. */
async function consumers(n: number, fanout: FrameFanout | null, policy: string, hold = 0) {
  const path = `@gpures-fanout-bench-${Deno.pid}-${Math.random()}`;
  using listener = Channel.listen(path);
  const children: Deno.ChildProcess[] = [];
  const channels: Channel[] = [];
  for (let i = 0; i < n; i++) {
    children.push(
      new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", script, path, ...(fanout ? [policy, String(hold)] : [])],
        stdout: "piped",
      }).spawn(),
    );
    const channel = await listener.accept();
    if (fanout) await fanout.join(channel);
    else channels.push(channel);
  }
  return { children, channels };
}

async function produce(
  pool: FramePool,
  send: (f: ReturnType<FramePool["tryAcquire"]> & object) => Promise<void>,
): Promise<{ inside: number; cpu: number }> {
  let inside = 0;
  let cpuFrom = process.cpuUsage();
  const start = performance.now();
  const stamp = new Uint8Array(16);
  for (let seq = 0; seq < FRAMES; seq++) {
    const wait = start + (seq * 1000) / FPS - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const frame = await pool.acquire({ timeout: 10_000 });
    new DataView(stamp.buffer).setFloat64(0, clockUs(), true);
    frame.setMeta({ sequence: seq, userData: stamp });
    const t0 = performance.now();
    await send(frame);
    if (seq >= WARMUP) inside += performance.now() - t0;
    else if (seq === WARMUP - 1) cpuFrom = process.cpuUsage();
    frame.release();
  }
  const cpu = process.cpuUsage(cpuFrom);
  return {
    inside: (inside * 1000) / (FRAMES - WARMUP),
    cpu: (cpu.user + cpu.system) / (FRAMES - WARMUP),
  };
}

async function run(n: number, mode: "fanout" | "sessions"): Promise<Run> {
  using pool = FramePool.create({
    format: "NV12",
    width: 1280,
    height: 720,
    slots: 1 + 4 + 4 * n + 2,
  });
  const fanout = mode === "fanout" ? FrameFanout.create({ pool }) : null;
  const { children, channels } = await consumers(n, fanout, "block");
  const { inside: usPerFrame, cpu: cpuUsPerFrame } = await produce(pool, async (frame) => {
    if (fanout) await fanout.publish(frame);
    else for (const c of channels) await c.send(frame);
  });
  await fanout?.flush();
  fanout?.close();
  for (const c of channels) c.close();
  const reports = await Promise.all(
    children.map(async (c) => JSON.parse(new TextDecoder().decode((await c.output()).stdout))),
  );
  return { usPerFrame, cpuUsPerFrame, reports };
}

async function staleness(): Promise<number[]> {
  using pool = FramePool.create({ format: "NV12", width: 1280, height: 720, slots: 8 });
  using fanout = FrameFanout.create({ pool });
  const { children } = await consumers(1, fanout, "latest", 10);
  await produce(pool, (frame) => fanout.publish(frame));
  fanout.close();
  const [report] = await Promise.all(
    children.map(async (c) => JSON.parse(new TextDecoder().decode((await c.output()).stdout))),
  );
  return report.ages.slice(5);
}

const floor = await measureWakeFloor();
const rows: Record<string, number>[] = [];

for (const n of [1, 2, 4, 8]) {
  const sessions = await run(n, "sessions");
  const fanned = await run(n, "fanout");
  rows.push({
    consumers: n,
    sessionsUs: Math.round(sessions.usPerFrame * 10) / 10,
    fanoutUs: Math.round(fanned.usPerFrame * 10) / 10,
    sessionsCpuUs: Math.round(sessions.cpuUsPerFrame * 10) / 10,
    fanoutCpuUs: Math.round(fanned.cpuUsPerFrame * 10) / 10,
    delivered: Math.min(...fanned.reports.map((r) => r.frames)),
  });
}
// What one more consumer costs: the slope from 1 to 8 consumers. A session's is one hand-off's worth.
const [one, eight] = [rows[0], rows[rows.length - 1]];
const slope = (key: string) => Math.round(((eight[key] - one[key]) / 7) * 10) / 10;
const perConsumer = {
  sessionsUs: slope("sessionsUs"),
  fanoutUs: slope("fanoutUs"),
  sessionsCpuUs: slope("sessionsCpuUs"),
  fanoutCpuUs: slope("fanoutCpuUs"),
  fanoutInHandOffs: Math.round((slope("fanoutUs") / slope("sessionsUs")) * 100) / 100,
  fanoutCpuInHandOffs: Math.round((slope("fanoutCpuUs") / slope("sessionsCpuUs")) * 100) / 100,
};
const ages = await staleness();
const report = {
  frames: FRAMES,
  fps: FPS,
  floorP50Us: floor?.p50,
  rows,
  perConsumer,
  latest: {
    holdMs: 10,
    ageP50Us: Math.round(quantile(ages, 0.5)),
    ageP90Us: Math.round(quantile(ages, 0.9)),
    ageP99Us: Math.round(quantile(ages, 0.99)),
    ageP50InFloors: floor ? Math.round((quantile(ages, 0.5) / floor.p50) * 10) / 10 : null,
    frameIntervalUs: 1e6 / FPS,
    samples: ages.length,
  },
};
console.log(JSON.stringify(report, null, 2));
