// A consumer process of bench/frames_soak.ts: connects to the producer's
// listener, receives pooled frames through its own Channel (a receiving
// session), checks each one's pattern and checksum word for word
// (tests/_support/frame_pattern.ts) and that sequences only go up, releases
// it, and once a second prints one JSON line of what it saw so far and of
// its liveMappings() and V8 heap size, which only this process can read. A last line with
// "final": true follows the producer's close.
//
//   _frames_soak_consumer.ts PATH [POLICY]
//
// With a POLICY it joins the producer's fan-out under it first.

import {
  Channel,
  type DeliveryPolicy,
  type DmaBufHandle,
  liveHandles,
  liveMappings,
} from "../mod.ts";
import { verify } from "../tests/_support/frame_pattern.ts";

const [path, policy] = Deno.args;
const channel = await Channel.connect(path, { wait: 10_000 });
if (policy) {
  await channel.subscribe({
    policy: policy as DeliveryPolicy,
    depth: policy === "latest" ? 1 : 4,
    window: 2,
  });
}
const seen = { frames: 0, intact: 0, corrupt: 0, outOfOrder: 0, first: null as string | null };
let last = -1;

function report(final: boolean): void {
  const heapKiB = Math.round(Deno.memoryUsage().heapTotal / 1024); // V8's share of the RSS
  (globalThis as { gc?: () => void }).gc?.();
  const liveKiB = Math.round(Deno.memoryUsage().heapUsed / 1024); // what a leak would grow
  const line = {
    ...seen,
    mappings: liveMappings(),
    handles: liveHandles(),
    heapKiB,
    liveKiB,
    final,
  };
  console.log(JSON.stringify(line));
}

function check(frame: DmaBufHandle): void {
  const seq = frame.meta?.sequence ?? -1;
  // A slot handed out again under this reader shows up as another frame's words.
  const wrong = verify(channel.planes(frame), frame.meta);
  if (seq <= last) seen.outOfOrder++, seen.first ??= `frame ${seq} came after ${last}`;
  last = Math.max(last, seq);
  if (wrong) seen.corrupt++, seen.first ??= wrong;
  else seen.intact++;
  seen.frames++;
}

const ticker = setInterval(() => report(false), 1000);
for (;;) {
  const frame = await channel.receive() as DmaBufHandle | null;
  if (frame === null) break;
  check(frame);
  frame.release();
}
clearInterval(ticker);
channel.close();
report(true);
