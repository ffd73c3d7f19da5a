// A consumer that reads in bursts, for session_backpressure_test.ts: it
// connects to the producer's listener, receives `burst` messages as fast as
// they come, sleeps `pause` ms (the producer's socket fills meanwhile), and
// so on until the producer closes. Every message carries its index as its
// metadata's sequence; pooled frames also carry an acquire fence when their
// index is a multiple of 4. It checks the order and each frame's fence,
// releases everything at once, and prints one JSON line at the end.
//
//   deno run --allow-ffi --allow-env=GPURES_LIB _peer_burst_consumer.ts <path> <burst> <pause>

import { Channel } from "../../mod.ts";

const [path, burstText, pauseText] = Deno.args;
const burst = Number(burstText), pause = Number(pauseText);
const channel = await Channel.connect(path, { wait: 5000 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let messages = 0, frames = 0, handles = 0, pauses = 0;
const wrong: string[] = [];
for (;;) {
  const got = await channel.receive();
  if (got === null) break;
  const seq = got.meta?.sequence;
  if (seq !== messages && wrong.length < 5) wrong.push(`message ${messages} came as ${seq}`);
  const fenced = got.fences.acquire;
  if (got.bufferId !== null) {
    frames++;
    if ((fenced !== undefined) !== (messages % 4 === 0) && wrong.length < 5) {
      wrong.push(`frame ${messages} came ${fenced ? "with" : "without"} a fence`);
    }
  } else {
    handles++;
    if (fenced && wrong.length < 5) wrong.push(`handle ${messages} came with a fence`);
  }
  fenced?.release();
  got.release();
  if (++messages % burst === 0) {
    pauses++;
    await sleep(pause);
  }
}
console.log(JSON.stringify({ messages, frames, handles, pauses, wrong }));
channel.close();
