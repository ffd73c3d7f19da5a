// One stream, many consumers: this process publishes frames once through a
// FrameFanout to consumer processes (this same file, run with --consume),
// each joined under its own policy: a "recorder" that must get every frame
// (block), an "inference" process that may skip (dropOldest) and a "preview"
// that only wants the newest (latest). The preview is slow on purpose; the
// recorder still gets every frame and the producer never waits for a slot.
//
//   deno run -A examples/fan_out.ts [--frames N] [--size WxH] [--json]
//
// Every frame carries its sequence in its metadata and in its first luma
// bytes; each consumer checks both. The exit code is 1 when a frame is wrong
// or the recorder missed one. Linux only (memfd-backed pools).

import { Channel, type DeliveryPolicy, type DmaBufHandle, FrameFanout, FramePool } from "../mod.ts";

const arg = (name: string, fallback: string) => {
  const at = Deno.args.indexOf(name);
  return at >= 0 ? Deno.args[at + 1] : fallback;
};

/** Frame `seq`'s mark: its first 8 luma bytes. */
function mark(y: Uint8Array, seq: number): void {
  new DataView(y.buffer, y.byteOffset, 8).setFloat64(0, seq, true);
}
const markOf = (y: Uint8Array) => new DataView(y.buffer, y.byteOffset, 8).getFloat64(0, true);

async function consume(path: string, policy: DeliveryPolicy, holdMs: number): Promise<void> {
  using channel = await Channel.connect(path, { wait: 10_000 });
  await channel.subscribe({ policy, depth: policy === "latest" ? 1 : 4, window: 2 });
  let frames = 0, wrong = 0, last = -1, skipped = 0;
  for await (const received of channel) {
    const frame = received as DmaBufHandle;
    const seq = frame.meta?.sequence ?? -1;
    const [y] = channel.planes(frame);
    if (markOf(y.data as Uint8Array) !== seq || seq <= last) wrong++;
    if (last >= 0 && seq > last + 1) skipped += seq - last - 1;
    last = seq;
    frames++;
    if (holdMs) await new Promise((r) => setTimeout(r, holdMs));
    frame.release();
  }
  console.log(JSON.stringify({ policy, frames, wrong, skipped, last }));
}

async function serve(): Promise<void> {
  const frames = Number(arg("--frames", "300"));
  const [width, height] = arg("--size", "1280x720").split("x").map(Number);
  const path = `@gpures-fan-out-${Deno.pid}`;
  const roles: [string, DeliveryPolicy, number][] = [
    ["recorder", "block", 0],
    ["inference", "dropOldest", 3],
    ["preview", "latest", 20],
  ];
  // What the consumers may hold: reserve 1 + deepest queue 4 + three windows of 2.
  using pool = FramePool.create({ format: "NV12", width, height, slots: 11 });
  using fanout = FrameFanout.create({ pool });
  using listener = Channel.listen(path);
  const self = new URL(import.meta.url).pathname;
  const children = roles.map(([, policy, hold]) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", self, "--consume", path, policy, String(hold)],
      stdout: "piped",
    }).spawn()
  );
  for (let i = 0; i < roles.length; i++) await fanout.join(await listener.accept());
  const start = performance.now();
  for (let seq = 0; seq < frames; seq++) {
    using frame = pool.tryAcquire() ?? await pool.acquire(); // never waits: the pool covers the bound
    mark(pool.planes(frame)[0].data as Uint8Array, seq);
    frame.setMeta({ sequence: seq });
    await fanout.publish(frame); // waits only for the recorder, when its queue is full
  }
  const publishMs = performance.now() - start;
  await fanout.flush(); // the recorder's queued frames go before the end
  const consumers = fanout.consumers();
  fanout.close(); // every consumer's stream ends
  const reports = await Promise.all(
    children.map(async (c) => JSON.parse(new TextDecoder().decode((await c.output()).stdout))),
  );
  const report = {
    frames,
    size: `${width}x${height}`,
    publishMs: Math.round(publishMs),
    slotWaits: pool.stats.waits,
    consumers: roles.map(([role, policy], i) => ({
      role,
      ...reports[i],
      dropped: consumers.find((c) => c.policy === policy)?.dropped ?? 0, // joined in any order
    })),
  };
  const ok = reports.every((r) => r.wrong === 0) && reports[0].frames === frames;
  if (Deno.args.includes("--json")) console.log(JSON.stringify(report));
  else console.log(report);
  if (!ok) Deno.exit(1);
}

if (Deno.args[0] === "--consume") {
  await consume(Deno.args[1], Deno.args[2] as DeliveryPolicy, Number(Deno.args[3]));
} else await serve();
