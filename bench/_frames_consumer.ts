// The consumer process of bench/frames_bench.ts: takes frames one way
// (MODE: "pool", "fd" or "bytes") and, after its release of each, writes
// its stamps (bench/_frames_clock.ts) to stdout, which is the producer's ack.
//
//   _frames_consumer.ts MODE PATH FRAME_BYTES

import { Channel, type DmaBufHandle } from "../mod.ts";
import { clockUs, encodeStamps } from "./_frames_clock.ts";

const [mode, path, frameBytes] = Deno.args;
const stamps = new Float64Array(3);
const ack = new Uint8Array(stamps.buffer);

function report(readyUs: number, heldUs: number, releasedUs: number): void {
  encodeStamps({ readyUs, heldUs, releasedUs }, stamps);
  for (let at = 0; at < ack.length;) at += Deno.stdout.writeSync(ack.subarray(at));
}

/** Pooled frames through a receiving session: views cached per buffer. */
async function pooled(channel: Channel): Promise<void> {
  for (;;) {
    const readyUs = clockUs();
    const frame = await channel.receive() as DmaBufHandle | null;
    if (frame === null) return;
    const [y] = channel.planes(frame);
    const heldUs = clockUs();
    if (y.data[0] === undefined) throw new Error("an empty plane");
    const releasedUs = clockUs();
    frame.release();
    report(readyUs, heldUs, releasedUs);
  }
}

/** Today's path: a fresh handle per frame, mapped (and unmapped at release) every time. */
async function perFrameFd(channel: Channel): Promise<void> {
  for (;;) {
    const readyUs = clockUs();
    const frame = await channel.receive() as DmaBufHandle | null;
    if (frame === null) return;
    const [y] = frame.planes(); // map()
    const heldUs = clockUs();
    if (y.data[0] === undefined) throw new Error("an empty plane");
    const releasedUs = clockUs();
    frame.release();
    report(readyUs, heldUs, releasedUs);
  }
}

/** The bytes themselves over a Unix stream socket, into one reused buffer. */
async function bytes(): Promise<void> {
  using conn = await Deno.connect({ transport: "unix", path });
  const frame = new Uint8Array(Number(frameBytes));
  for (;;) {
    const readyUs = clockUs();
    for (let at = 0; at < frame.length;) {
      const n = await conn.read(frame.subarray(at));
      if (n === null) return;
      at += n;
    }
    const heldUs = clockUs();
    report(readyUs, heldUs, heldUs);
  }
}

if (mode === "bytes") {
  await bytes();
} else {
  using channel = await Channel.connect(path, { wait: 10_000 });
  await (mode === "pool" ? pooled(channel) : perFrameFd(channel));
}
