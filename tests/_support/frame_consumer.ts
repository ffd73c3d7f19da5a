// A consumer process for tests/frames_process_test.ts: connects to the
// producer's listener (which may not be up yet) and receives pooled frames.
//
//   deno run --allow-ffi --allow-env=GPURES_LIB frame_consumer.ts <mode> <path> [count]
//
//   verify         receives <count> frames, checks each one's pattern and
//                  checksum (tests/_support/frame_pattern.ts), releases it,
//                  and prints {"frames","intact","corrupt","buffers",
//                  "announced","first"} as one JSON line
//   hold           receives <count> frames, prints "holding <count>" and
//                  keeps them until it is killed
//   close-holding  receives <count> frames, closes its channel still holding
//                  them and prints "closed"; on each "check" line from stdin
//                  checks them again and prints {"intact","corrupt","first"};
//                  releases them and exits at the end of stdin

import { Channel, type DmaBufHandle, type PlaneView } from "../../mod.ts";
import { verify } from "./frame_pattern.ts";

const [mode, path, countText] = Deno.args;
const count = Number(countText ?? 3);
const channel = await Channel.connect(path, { wait: 5000 });
const say = (line: unknown) => console.log(typeof line === "string" ? line : JSON.stringify(line));

async function next(): Promise<DmaBufHandle> {
  const frame = await channel.receive();
  if (frame === null) throw new Error("the producer closed the channel early");
  return frame as DmaBufHandle;
}

if (mode === "verify") {
  let intact = 0, corrupt = 0;
  let first: string | null = null;
  const buffers = new Set<bigint>();
  for (let i = 0; i < count; i++) {
    const frame = await next();
    buffers.add(frame.bufferId!);
    const wrong = frame.meta?.sequence === i
      ? verify(channel.planes(frame), frame.meta)
      : `frame ${i} came as ${frame.meta?.sequence}`;
    if (wrong) corrupt++, first ??= wrong;
    else intact++;
    frame.release();
  }
  say({
    frames: count,
    intact,
    corrupt,
    buffers: buffers.size,
    announced: channel.stats.announced,
    first,
  });
  channel.close();
} else if (mode === "hold") {
  const held = [];
  for (let i = 0; i < count; i++) held.push(await next());
  say(`holding ${held.length}`);
  setInterval(() => {}, 1000); // until killed
} else if (mode === "close-holding") {
  const held: { frame: DmaBufHandle; views: PlaneView[] }[] = [];
  for (let i = 0; i < count; i++) {
    const frame = await next();
    held.push({ frame, views: channel.planes(frame) });
  }
  channel.close();
  say("closed");
  const lines = Deno.stdin.readable.pipeThrough(new TextDecoderStream());
  for await (const chunk of lines) {
    for (const _ of chunk.split("\n").filter((l) => l === "check")) {
      let intact = 0, corrupt = 0;
      let first: string | null = null;
      for (const { frame, views } of held) {
        const wrong = verify(views, frame.meta);
        if (wrong) corrupt++, first ??= wrong;
        else intact++;
      }
      say({ intact, corrupt, first });
    }
  }
  for (const { frame } of held) frame.release();
} else {
  throw new Error(`unknown mode ${mode}`);
}
