// SyncPoints from TypeScript, each next to its floor measured in the same run:
//   (a) signal -> async wake-up: a CpuFence signalled while this isolate
//       awaits waitAsync(), until the promise resolves (the waiter thread's
//       poll() wakes, SYNC_DONE reaches this isolate's event queue), against
//       an empty setTimeout(0) round trip;
//   (b) a blocking wait(0) / `signaled` on a reached point (one FFI call and a
//       poll() of the fd), against an empty FFI call;
//   (c) 1000 outstanding waitAsync() on CpuFences that are never signalled:
//       the process's CPU time over 1 s of idling, as a ratio to 1 s of
//       idling with no waits (and the waiter thread's own CPU time). Printed
//       before the benchmarks, not a Deno.bench: it is one measurement of an
//       idle second, not a per-call cost.
//
//   deno bench --allow-ffi --allow-read --allow-env bench/sync_bench.ts
//
// A name ending in "[xN]" runs the operation N times per iteration; divide by N.

import process from "node:process";
import { CpuFence } from "../mod.ts";
import { lib } from "../ffi/load/load.ts";
import { benchFfiFloor } from "./_ffi_floor.ts";
import { measureWakeFloor } from "./_wake_floor.ts";
import { libc } from "../tests/_support/libc.ts";

const s = lib();
const perms = { ffi: true, read: true, env: true } as const;
const one = new BigUint64Array([1n]);

/**
 * Signals `fence` the way another process or thread does: a write to (a copy
 * of) its eventfd, which this isolate does not see. The wake-up then comes
 * through the waiter thread and the event queue; signal() made here instead
 * resolves this isolate's waits a microtask later.
 */
function signalElsewhere(fd: number): void {
  if (libc.write(fd, one, 8n) !== 8n) throw new Error("write(eventfd) failed");
}

// -------------------------------------------------- (c) idle waits, printed

/** utime + stime of the thread named `name` in this process (Linux), in ms; undefined if none. */
function threadCpuMs(name: string): number | undefined {
  try {
    for (const t of Deno.readDirSync("/proc/self/task")) {
      const dir = `/proc/self/task/${t.name}`;
      if (Deno.readTextFileSync(`${dir}/comm`).trim() !== name) continue;
      const stat = Deno.readTextFileSync(`${dir}/stat`);
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return (Number(f[11]) + Number(f[12])) * 10; // fields 14, 15 at USER_HZ = 100
    }
  } catch { /* not Linux */ }
  return undefined;
}

/** The process's CPU time (all threads, getrusage) over `ms` of idling, in ms. */
async function idleCpuMs(ms: number): Promise<number> {
  const before = process.cpuUsage();
  await new Promise((r) => setTimeout(r, ms));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

async function idleWaits(count: number, rounds: number): Promise<void> {
  const none: number[] = [];
  const waiting: number[] = [];
  let waiter = 0;
  for (let round = 0; round < rounds; round++) {
    none.push(await idleCpuMs(1000));
    const fences = Array.from({ length: count }, () => CpuFence.create());
    const abort = new AbortController();
    const waits = fences.map((f) => f.waitAsync({ signal: abort.signal }).catch(() => {}));
    await new Promise((r) => setTimeout(r, 50)); // every wait handed over
    const thread0 = threadCpuMs("gpures-sync");
    waiting.push(await idleCpuMs(1000));
    const thread1 = threadCpuMs("gpures-sync");
    if (thread0 !== undefined && thread1 !== undefined) waiter += thread1 - thread0;
    for (const f of fences) f.signal();
    await Promise.all(waits);
    abort.abort();
    for (const f of fences) f.release();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const a = median(none), b = median(waiting);
  console.log(
    `idle 1 s, process CPU (median of ${rounds}): no waits ${a.toFixed(2)} ms, ` +
      `${count} outstanding waitAsync() ${b.toFixed(2)} ms, ratio ${
        (b / Math.max(a, 0.001)).toFixed(2)
      }; ` +
      `waiter thread "gpures-sync": ${
        (waiter / rounds).toFixed(1)
      } ms per idle second (10 ms ticks)`,
  );
}

/** Median and p90 of `n` samples of (a), each against a setTimeout(0) round trip taken next to it. */
async function wakeUps(n: number, elsewhere: boolean): Promise<void> {
  const wake: number[] = [];
  const timer: number[] = [];
  for (let i = 0; i < n; i++) {
    const fence = CpuFence.create();
    const fd = fence.dupFd();
    const waiting = fence.waitAsync({ timeout: 5000 });
    let t = performance.now();
    await new Promise((r) => setTimeout(r, 0)); // also lets the waiter thread park on the fence
    timer.push(performance.now() - t);
    t = performance.now();
    if (elsewhere) signalElsewhere(fd);
    else fence.signal();
    await waiting;
    wake.push(performance.now() - t);
    libc.close(fd);
    fence.release();
  }
  const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * p)];
  const us = (ms: number) => `${(ms * 1000).toFixed(1)} us`;
  const floor = elsewhere ? await measureWakeFloor() : null;
  console.log(
    `${
      elsewhere ? "signalled elsewhere" : "signal() here"
    } -> waitAsync() resolved (${n} samples): median ${us(q(wake, 0.5))}, p90 ${
      us(q(wake, 0.9))
    }; ` +
      `setTimeout(0) round trip: median ${us(q(timer, 0.5))}, p90 ${us(q(timer, 0.9))}; ` +
      `median ratio ${(q(wake, 0.5) / q(timer, 0.5)).toFixed(3)}` +
      (floor
        ? `; C floor (one-way SOCK_SEQPACKET wake between processes) p50 ${
          floor.p50.toFixed(1)
        } us: median ${(q(wake, 0.5) * 1000 / floor.p50).toFixed(2)}x the floor (target ≤ 2x)`
        : ""),
  );
}

if (!Deno.args.includes("--no-idle")) {
  await idleWaits(1000, 3);
  await wakeUps(300, false);
  await wakeUps(300, true);
}

// ------------------------------------------------- (a) signal -> wake-up

Deno.bench({
  name: "empty setTimeout(0) round trip",
  group: "wake-up",
  baseline: true,
  permissions: perms,
  async fn() {
    await new Promise((r) => setTimeout(r, 0));
  },
});

Deno.bench({
  name: "CpuFence signalled elsewhere (its eventfd written) -> await waitAsync() resolves",
  group: "wake-up",
  permissions: perms,
  async fn(b) {
    const fence = CpuFence.create();
    const fd = fence.dupFd();
    const waiting = fence.waitAsync({ timeout: 5000 });
    await new Promise((r) => setTimeout(r, 0)); // the waiter thread parks on it
    b.start();
    signalElsewhere(fd);
    await waiting;
    b.end();
    libc.close(fd);
    fence.release();
  },
});

Deno.bench({
  name: "CpuFence: signal() here -> await waitAsync() resolves",
  group: "wake-up",
  permissions: perms,
  async fn(b) {
    const fence = CpuFence.create();
    const waiting = fence.waitAsync({ timeout: 5000 });
    await new Promise((r) => setTimeout(r, 0)); // the waiter thread parks on it
    b.start();
    fence.signal();
    await waiting;
    b.end();
    fence.release();
  },
});

// ------------------------------------------- (b) reached point, blocking

const reached = CpuFence.create();
reached.signal();
const handle = reached.unsafeHandle;
const out = new Uint32Array(1);
const outAt = Deno.UnsafePointer.of(out);

benchFfiFloor("reached", perms);

Deno.bench({
  name: "raw FFI: gpures_sync_wait(reached, 0) [x1000]",
  group: "reached",
  permissions: perms,
  fn() {
    for (let i = 0; i < 1000; i++) {
      if (s.gpures_sync_wait(handle, 0n) !== 0) throw new Error("wait");
    }
  },
});

Deno.bench({
  name: "raw FFI: gpures_sync_poll(reached) [x1000]",
  group: "reached",
  permissions: perms,
  fn() {
    for (let i = 0; i < 1000; i++) {
      if (s.gpures_sync_poll(handle, outAt) !== 0 || out[0] !== 1) throw new Error("poll");
    }
  },
});

Deno.bench({
  name: "CpuFence.wait(0) on a reached point [x1000]",
  group: "reached",
  permissions: perms,
  fn() {
    for (let i = 0; i < 1000; i++) reached.wait(0);
  },
});

Deno.bench({
  name: "CpuFence.signaled on a reached point [x1000]",
  group: "reached",
  permissions: perms,
  fn() {
    for (let i = 0; i < 1000; i++) if (!reached.signaled) throw new Error("not reached");
  },
});
