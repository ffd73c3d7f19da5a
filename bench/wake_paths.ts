// How few thread wake-ups can carry a kernel event to JavaScript? Each
// candidate path receives the same stamped datagrams from another process
// (native/bench/wake_paths.c) and is measured against the C floor
// (native/bench/wake_floor.c) in the same run, alternating, so a noisy VM
// moves both. The evidence behind the wake path of docs/architecture.md.
//
//   cmake --build build --target gpures_wake_floor gpures_wake_paths gpures_wake_poller
//   deno run -A bench/wake_paths.ts [--runs=N] [--rounds=N]

import { measureWakeFloor } from "./_wake_floor.ts";

interface Figures {
  p50: number;
  p90: number;
  p99: number;
}

const option = (name: string, fallback: number) => {
  const arg = Deno.args.find((a) => a.startsWith(`--${name}=`));
  const n = arg ? Number(arg.split("=")[1]) : fallback;
  if (!Number.isInteger(n) || n < 1) throw new TypeError(`--${name} must be a positive integer`);
  return n;
};
const runs = option("runs", 3);
const rounds = option("rounds", 2000);

const root = new URL("../", import.meta.url);
const bin = new URL(`${Deno.env.get("GPURES_BUILD_DIR") ?? "build"}/native/bench/`, root).pathname;
const receiver = new URL("./_wake_paths_receiver.ts", import.meta.url).pathname;

/** Each path and the socket it needs (node:net takes stream sockets, not SOCK_SEQPACKET). */
const PATHS = [
  ["eventLoop", "stream"],
  ["nonblockingCall", "seqpacket"],
  ["threadSafeCallback", "seqpacket"],
  ["doorbell", "seqpacket"],
] as const;

async function measurePath(path: string, socket: string): Promise<Figures> {
  const args = [String(rounds), socket, "--", Deno.execPath(), "run", "-A", receiver, path];
  args.push(String(rounds), `${bin}libgpures_wake_poller.so`);
  const out = await new Deno.Command(`${bin}gpures_wake_paths`, { args, stderr: "inherit" })
    .output();
  if (!out.success) throw new Error(`${path}: the receiver failed (exit ${out.code})`);
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const results = new Map<string, { figures: Figures[]; floors: Figures[] }>();
for (let run = 0; run < runs; run++) {
  for (const [path, socket] of PATHS) {
    const floor = await measureWakeFloor(rounds);
    if (!floor) Deno.exit(1);
    const figures = await measurePath(path, socket);
    const entry = results.get(path) ?? { figures: [], floors: [] };
    entry.figures.push(figures);
    entry.floors.push(floor);
    results.set(path, entry);
  }
}

const us = (x: number) => x.toFixed(1).padStart(6);
console.log(
  `one-way µs, median of ${runs} runs of ${rounds} rounds; ratios to the C floor of the same run`,
);
console.log("path                 p50      p99  | floor p50  p99 | p50/floor  p99/floor p99");
for (const [path, { figures, floors }] of results) {
  const p50 = median(figures.map((f) => f.p50)), p99 = median(figures.map((f) => f.p99));
  const f50 = median(floors.map((f) => f.p50)), f99 = median(floors.map((f) => f.p99));
  const r50 = median(figures.map((f, i) => f.p50 / floors[i].p50));
  const r99 = median(figures.map((f, i) => f.p99 / floors[i].p99));
  console.log(
    `${path.padEnd(19)} ${us(p50)}   ${us(p99)} | ${us(f50)} ${us(f99)} | ${
      r50.toFixed(2).padStart(8)
    }x ${r99.toFixed(2).padStart(10)}x`,
  );
}
