// A consumer process for tests/sync_test.ts: connects to the producer's
// listener, receives a CpuFence and then a frame, and attaches the fence as
// the frame's acquire fence, as a media server's consumer would.
//
//   deno run --allow-ffi --allow-env=GPURES_LIB sync_consumer.ts <path>
//
// Prints "peeked <first byte>" as soon as it has both (what a consumer that
// skipped the wait would read), then awaits the fence and prints
// {"first": <first byte>, "all": <whether every byte has it>}.

import { Channel, type CpuFence, type DmaBufHandle } from "../../mod.ts";

const channel = await Channel.connect(Deno.args[0], { wait: 5000 });
const fence = await channel.receive() as unknown as CpuFence;
using frame = await channel.receive() as DmaBufHandle;
frame.setFences({ acquire: fence });
fence.release();
const bytes = new Uint8Array(frame.map(0));
console.log(`peeked ${bytes[0]}`);
{
  using acquire = frame.fences.acquire!;
  await (acquire as CpuFence).waitAsync({ timeout: 10_000 });
}
frame.beginAccess(0); // reached: returns at once, and drops the acquire fence
console.log(JSON.stringify({ first: bytes[0], all: bytes.every((b) => b === bytes[0]) }));
frame.unmap(0);
channel.close();
