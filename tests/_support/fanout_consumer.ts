// A consumer process for tests/fanout_process_test.ts: connects to the
// producer's listener, joins its fan-out with a policy and receives until the
// producer ends the stream, checking every frame.
//
//   deno run --allow-ffi --allow-env=GPURES_LIB fanout_consumer.ts <path> <policy> [holdMs]
//
// Prints "joined <id>" once admitted, then at the end one JSON line:
// {"frames","intact","corrupt","first","sequences","gaps","backwards","formats","sizeMismatch"}:
// each frame's pattern and checksum (tests/_support/frame_pattern.ts), its
// sequence (never going back, gaps counted), and its size against the last
// "formatchange" event (every format change announced before its first frame).

import { Channel, type DeliveryPolicy, type DmaBufHandle, FormatChangeEvent } from "../../mod.ts";
import { verify } from "./frame_pattern.ts";

const [path, policy, holdText] = Deno.args;
const holdMs = Number(holdText ?? 0);
const channel = await Channel.connect(path, { wait: 10_000 });
const joined = await channel.subscribe({
  policy: policy as DeliveryPolicy,
  depth: policy === "latest" ? 1 : 4,
  window: 2,
});
console.log(`joined ${joined.consumer}`);

let frames = 0, intact = 0, corrupt = 0, gaps = 0, backwards = 0, sizeMismatch = 0;
let first: string | null = null;
let last = -1;
let size = "";
const formats: string[] = [];
channel.addEventListener("formatchange", (e) => {
  if (!(e instanceof FormatChangeEvent)) return;
  size = `${e.width}x${e.height}`;
  formats.push(size);
});
for await (const resource of channel) {
  const frame = resource as DmaBufHandle;
  frames++;
  const seq = frame.meta?.sequence ?? -1;
  if (seq <= last) backwards++;
  else if (last >= 0 && seq !== last + 1) gaps++;
  last = seq;
  const d = frame.describe();
  if (`${d.width}x${d.height}` !== size) sizeMismatch++;
  const wrong = verify(channel.planes(frame), frame.meta);
  if (wrong) corrupt++, first ??= wrong;
  else intact++;
  if (holdMs) await new Promise((r) => setTimeout(r, holdMs));
  frame.release();
}
console.log(
  JSON.stringify({ frames, intact, corrupt, first, last, gaps, backwards, formats, sizeMismatch }),
);
channel.close();
