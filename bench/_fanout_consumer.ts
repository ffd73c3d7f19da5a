// A consumer process of bench/fanout_bench.ts: connects to the producer's
// listener and, with a policy, joins its fan-out; then receives frames until
// the end, holding each one `holdMs` (0: releases it at once). Each frame's
// userData carries the producer's clockUs() stamp at its publish; the age of
// each frame as it arrives (now minus that stamp, µs) is kept, and printed at
// the end as one JSON line {"frames","ages"}.
//
//   _fanout_consumer.ts PATH [POLICY [HOLD_MS]]

import { Channel, clockUs, type DeliveryPolicy } from "../mod.ts";

const [path, policy, holdText] = Deno.args;
const holdMs = Number(holdText ?? 0);
const channel = await Channel.connect(path, { wait: 10_000 });
if (policy) {
  await channel.subscribe({
    policy: policy as DeliveryPolicy,
    depth: policy === "latest" ? 1 : 4,
    window: policy === "latest" ? 1 : 4,
  });
}
const ages: number[] = [];
let frames = 0;
for await (const frame of channel) {
  const stamp = frame.meta?.userData;
  if (stamp) {
    ages.push(clockUs() - new DataView(stamp.buffer, stamp.byteOffset).getFloat64(0, true));
  }
  frames++;
  if (holdMs) await new Promise((r) => setTimeout(r, holdMs));
  frame.release();
}
console.log(JSON.stringify({ frames, ages }));
