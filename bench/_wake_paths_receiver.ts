// The receiving side of bench/wake_paths.ts: one candidate path from a kernel
// event (a stamped datagram from gpures_wake_paths in another process) to
// JavaScript, named by the first argument. Prints the one-way times as JSON.
//
//   eventLoop           node:net over the socket: Deno's event loop polls the
//                       fd itself (one wake-up: the kernel wakes the loop)
//   nonblockingCall     await a `nonblocking: true` recv(): a thread of
//                       Deno's blocking pool sleeps in it, then wakes the loop
//   threadSafeCallback  the library's own thread sleeps in recv() and calls a
//                       Deno.UnsafeCallback.threadSafe, which wakes the loop
//   doorbell            the library's own thread sleeps in recv() and writes
//                       the stamp to a stream socket the loop polls (node:net)

import net from "node:net";
import { libc } from "../tests/_support/libc.ts";

const [path, roundsArg, pollerPath] = Deno.args;
const fd = Number(Deno.env.get("GPURES_WAKE_FD"));
const rounds = Number(roundsArg);
const answer = new Uint8Array(1);
const times: number[] = [];
const now = new BigInt64Array(2);

/** CLOCK_MONOTONIC in µs with its fraction, as the sender stamps it. */
function nowUs(): number {
  libc.clock_gettime(1, now);
  return Number(now[0]) * 1e6 + Number(now[1]) / 1e3;
}

function arrived(sentUs: number): boolean {
  times.push(nowUs() - sentUs);
  if (libc.send(fd, answer, 1n, 0) !== 1n) throw new Error("the sender went away");
  return times.length === rounds;
}

function report(): never {
  const warm = Math.floor(times.length / 10); // the first rounds find caches cold
  const sorted = times.slice(warm).sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  console.log(
    JSON.stringify({ path, rounds: sorted.length, p50: at(0.5), p90: at(0.9), p99: at(0.99) }),
  );
  Deno.exit(0);
}

/** Reads stamps from a stream socket on the event loop (they may come together, or split). */
function readOnEventLoop(socket: number): void {
  let held = new Uint8Array(0);
  new net.Socket({ fd: socket, readable: true, writable: false }).on("data", (d: Uint8Array) => {
    const bytes = new Uint8Array(held.length + d.length);
    bytes.set(held);
    bytes.set(d, held.length);
    const whole = bytes.length - (bytes.length % 8);
    for (const s of new Float64Array(bytes.buffer, 0, whole / 8)) if (arrived(s)) report();
    held = bytes.slice(whole);
  });
}

const poller = () =>
  Deno.dlopen(pollerPath, {
    wake_poller_call: { parameters: ["i32", "function"], result: "i32" },
    wake_poller_ring: { parameters: ["i32", "i32"], result: "i32" },
  }).symbols;

const paths: Record<string, () => void | Promise<void>> = {
  eventLoop() {
    readOnEventLoop(fd);
  },
  async nonblockingCall() {
    const stamp = new Float64Array(1);
    const bytes = new Uint8Array(stamp.buffer);
    for (;;) {
      if (await libc.recvNonblocking(fd, bytes, 8n, 0) !== 8n) throw new Error("recv failed");
      if (arrived(stamp[0])) report();
    }
  },
  threadSafeCallback() {
    const callback = Deno.UnsafeCallback.threadSafe(
      { parameters: ["f64"], result: "void" },
      (sentUs: number) => {
        if (arrived(sentUs)) report();
      },
    );
    if (poller().wake_poller_call(fd, callback.pointer) !== 0) throw new Error("no poller thread");
  },
  doorbell() {
    const pair = new Int32Array(2);
    if (libc.socketpair(1, /* AF_UNIX */ 1, /* SOCK_STREAM */ 0, pair) !== 0) {
      throw new Error("socketpair failed");
    }
    readOnEventLoop(pair[0]);
    if (poller().wake_poller_ring(fd, pair[1]) !== 0) throw new Error("no poller thread");
  },
};

if (!(path in paths)) throw new TypeError(`unknown path ${path}: ${Object.keys(paths).join(", ")}`);
if (libc.send(fd, answer, 1n, 0) !== 1n) throw new Error("no sender"); // ready
await paths[path]();
