// A consumer process for tests/sync_test.ts: connects to the producer's
// listener and receives a frame whose acquire fence (a CpuFence, an eventfd)
// travelled with it, as a media server's consumer would.
//
//   deno run --allow-ffi --allow-env=GPURES_LIB sync_consumer.ts <path>
//
// Prints "peeked <first byte>" as soon as the frame is here (what a consumer
// that skipped the wait would read), then awaits the fence and prints
// {"first": <first byte>, "all": <whether every byte has it>}.

import { Channel, type DmaBufHandle } from "../../mod.ts";

const channel = await Channel.connect(Deno.args[0], { wait: 5000 });
using frame = await channel.receive() as DmaBufHandle;
const bytes = new Uint8Array(frame.map(0));
console.log(`peeked ${bytes[0]}`);
{
  using acquire = frame.fences.acquire;
  if (!acquire) throw new Error("the frame came without its acquire fence");
  await acquire.waitAsync({ timeout: 10_000 });
}
frame.beginAccess(0); // reached: returns at once, and drops the acquire fence
console.log(JSON.stringify({ first: bytes[0], all: bytes.every((b) => b === bytes[0]) }));
frame.unmap(0);
channel.close();
