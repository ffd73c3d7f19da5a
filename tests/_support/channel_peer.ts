// The other process of tests/channel_test.ts, started with Deno.Command:
//
//   produce <path> <frames>  connects, sends <frames> memfd-backed 32x32 RGBA
//                            frames whose pixels are frame index + byte offset,
//                            and exits (its own handles released).
//   mark <path>              connects, receives frames until the end, checks
//                            each one's pixels (index + offset) and writes
//                            0xC0 + index into its last byte through map(),
//                            then prints "checked <n>".
//   hold <path>              connects, receives one frame and exits without
//                            releasing it or closing the channel.

import { Channel, DmaBufHandle } from "../../mod.ts";
import { patternedFrame as frame, RGBA_FRAME_BYTES as SIZE } from "./fixtures.ts";

const [mode, path, count] = Deno.args;

using channel = await Channel.connect(path);
if (mode === "produce") {
  for (let i = 0; i < Number(count); i++) {
    using f = frame(i);
    await channel.send(f);
  }
} else if (mode === "mark") {
  let n = 0;
  for await (const f of channel) {
    if (!(f instanceof DmaBufHandle)) throw new Error(`a ${f.kind}, not a DmaBufHandle`);
    const pixels = new Uint8Array(f.map());
    for (let i = 0; i < SIZE; i++) {
      if (pixels[i] !== ((n + i) & 0xff)) throw new Error(`frame ${n}: byte ${i} is wrong`);
    }
    pixels[SIZE - 1] = 0xc0 + n;
    f.release();
    n++;
  }
  console.log(`checked ${n}`);
} else if (mode === "hold") {
  await channel.receive();
  Deno.exit(0);
} else {
  throw new Error(`unknown mode ${mode}`);
}
