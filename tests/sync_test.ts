// SyncPoints: the contract every sync kind keeps (wait, waitAsync, signaled,
// signal), fences that travel with a frame (clones, Workers, another
// process), and bad input. The real GPU APIs are tests/sync_real_test.ts and
// tests/isolated/sync_opencl_test.ts.

import assert from "node:assert/strict";
import {
  CancelledError,
  Channel,
  CpuBytes,
  CpuFence,
  GlSemaphore,
  GpuResource,
  InvalidHandleError,
  NoopSync,
  pendingSyncWaits,
  ReleasedError,
  SyncFile,
  SyncPoint,
  TimeoutError,
  UnsupportedError,
  VkSemaphore,
  WgpuSubmission,
  WrongKindError,
} from "../mod.ts";
import { close, eventFdSignal, memfd, pipeReadEnd, writeAt } from "./_support/libc.ts";
import { rgbaFrame } from "./_support/fixtures.ts";
import { settledWaits } from "./_support/sync_checks.ts";
import { Peer } from "./hostile/_peer_wire.ts";

const linux = Deno.build.os === "linux";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function settled(): Promise<void> {
  assert.equal(await settledWaits(), 0, "the waiter thread let go of every wait");
}

Deno.test("a CpuFence is unreached until signalled, then stays reached", { ignore: !linux }, () => {
  using fence = CpuFence.create();
  assert.ok(fence instanceof SyncPoint);
  assert.equal(fence.signaled, false);
  assert.throws(() => fence.wait(1), TimeoutError);
  fence.signal();
  assert.equal(fence.signaled, true);
  fence.wait(0);
  fence.signal(); // again: nothing changes
  fence.wait();
  assert.equal(fence.describe().kind, "CpuFence");
});

Deno.test(
  "waitAsync resolves when the point is reached elsewhere (the waiter thread wakes this isolate), without blocking the loop",
  { ignore: !linux },
  async () => {
    using fence = CpuFence.create();
    const fd = fence.dupFd(); // what another process holds
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    setTimeout(() => eventFdSignal(fd), 30); // behind gpures's back: only the waiter thread sees it
    await fence.waitAsync({ timeout: 5000 });
    clearInterval(ticker);
    close(fd);
    assert.ok(ticks >= 5, `the event loop ran meanwhile (${ticks} ticks)`);
    await settled();
  },
);

Deno.test("signal() here resolves this isolate's waits on the point at once", {
  ignore: !linux,
}, async () => {
  using fence = CpuFence.create();
  const order: string[] = [];
  const wait = fence.waitAsync({ timeout: 5000 }).then(() => order.push("reached"));
  fence.signal();
  await Promise.resolve();
  order.push("next microtask");
  await wait;
  assert.deepEqual(order, ["reached", "next microtask"]);
  await settled();
});

Deno.test("waitAsync times out, cancels, and lets go of its wait either way", {
  ignore: !linux,
}, async () => {
  using fence = CpuFence.create();
  const t0 = performance.now();
  await assert.rejects(fence.waitAsync({ timeout: 20 }), TimeoutError);
  assert.ok(performance.now() - t0 >= 19);
  const abort = new AbortController();
  const wait = fence.waitAsync({ signal: abort.signal });
  abort.abort(new Error("stopped by the test"));
  await assert.rejects(wait, /stopped by the test/);
  const abortedBefore = AbortSignal.abort(new CancelledError("before", "CANCELLED"));
  await assert.rejects(fence.waitAsync({ signal: abortedBefore }), CancelledError);
  await settled();
});

Deno.test("a wait holds its own reference: the point may be released meanwhile", {
  ignore: !linux,
}, async () => {
  const fence = CpuFence.create();
  const fd = fence.dupFd();
  const wait = fence.waitAsync({ timeout: 5000 });
  fence.release();
  assert.throws(() => fence.signaled, ReleasedError);
  assert.throws(() => fence.wait(0), ReleasedError);
  await assert.rejects(fence.waitAsync(), ReleasedError);
  eventFdSignal(fd); // the eventfd the released handle owned is still the wait's
  await wait;
  close(fd);
  await settled();
});

Deno.test("many outstanding waits end in the order their points are reached", {
  ignore: !linux,
}, async () => {
  const fences = Array.from({ length: 200 }, () => CpuFence.create());
  const order: number[] = [];
  const waits = fences.map((f, i) => f.waitAsync({ timeout: 10_000 }).then(() => order.push(i)));
  assert.equal(pendingSyncWaits(), 200);
  for (const i of [150, 3, 99]) {
    fences[i].signal();
    await sleep(5);
  }
  assert.deepEqual(order, [150, 3, 99]);
  for (const f of fences) f.signal();
  await Promise.all(waits);
  for (const f of fences) f.release();
  await settled();
});

Deno.test("NoopSync is always reached", async () => {
  using point = NoopSync.create({});
  assert.equal(point.signaled, true);
  point.wait(0);
  await point.waitAsync();
  assert.equal(JSON.stringify(point), '{"kind":"NoopSync","kindId":34,"refcount":1}');
});

Deno.test("points the host cannot wait on say so, naming what is missing", async () => {
  using binary = VkSemaphore.create({ semaphore: 9n, semaphoreType: "binary", value: 0n });
  assert.throws(() => binary.wait(0), UnsupportedError);
  await assert.rejects(binary.waitAsync(), UnsupportedError); // a rejection, never a throw
  using deviceless = VkSemaphore.create({ semaphore: 9n, semaphoreType: "timeline", value: 1n });
  assert.throws(() => deviceless.signaled, (e: UnsupportedError) => e.field === "device");
  using gl = GlSemaphore.create({ name: 4 });
  assert.throws(() => gl.wait(0), UnsupportedError);
  assert.throws(() => gl.signal(), UnsupportedError);
  await settled();
});

Deno.test("a fence fd must be the fence its kind says", { ignore: !linux }, () => {
  using fence = CpuFence.create();
  const eventfd = fence.dupFd();
  const file = memfd(64);
  const pipe = pipeReadEnd();
  try {
    const namesFd = (e: InvalidHandleError) =>
      e.field === "fd" && /not a sync_file/.test(e.message);
    assert.throws(() => SyncFile.create({ fd: eventfd }), namesFd);
    assert.throws(() => SyncFile.create({ fd: file }), namesFd);
    assert.throws(() => SyncFile.create({ fd: pipe }), namesFd);
    assert.throws(
      () => CpuFence.create({ fd: file }),
      (e: InvalidHandleError) => e.field === "fd" && /not an eventfd/.test(e.message),
    );
    assert.throws(() => CpuFence.create({ fd: -1 }), InvalidHandleError);
    using adopted = CpuFence.create({ fd: eventfd }); // an eventfd is a CpuFence (duplicated)
    assert.equal(adopted.signaled, false);
  } finally {
    for (const fd of [eventfd, file, pipe]) close(fd);
  }
});

Deno.test(
  "fences travel with a handle: clones and raw handles see them",
  { ignore: !linux },
  () => {
    using frame = CpuBytes.create({ data: new Uint8Array(64), rowPitch: 64, format: "RgbaU8" });
    using acquire = CpuFence.create();
    using release = CpuFence.create();
    assert.deepEqual(frame.fences, {});
    frame.setFences({ acquire, release });
    using clone = frame.clone();
    const seen = clone.fences;
    assert.equal(seen.acquire!.kind, "CpuFence");
    assert.equal((seen.acquire as unknown as CpuFence).describe().fd, acquire.describe().fd);
    seen.acquire!.release();
    seen.release!.release();
    assert.equal(acquire.refcount, 2, "the frame holds one reference");
    frame.setFences({ release });
    assert.equal(acquire.refcount, 1, "a cleared fence is let go");
    const raw = GpuResource.fromRaw(clone.intoRaw());
    using again = raw.fences.release!;
    assert.equal(again.kind, "CpuFence");
    raw.release();
  },
);

Deno.test(
  "beginAccess waits on the acquire fence, then drops it; endAccess sets the release fence",
  {
    ignore: !linux,
  },
  () => {
    using frame = CpuBytes.create({ data: new Uint8Array(64), rowPitch: 64, format: "RgbaU8" });
    using acquire = CpuFence.create();
    frame.setFences({ acquire });
    assert.throws(() => frame.beginAccess(5), (e: TimeoutError) => e.field === "acquire");
    acquire.signal();
    frame.beginAccess(0);
    assert.equal(frame.fences.acquire, undefined);
    using done = CpuFence.create();
    frame.endAccess(done);
    using release = frame.fences.release!;
    assert.equal((release as unknown as CpuFence).describe().fd, done.describe().fd);
  },
);

Deno.test("a fence must be a SyncPoint, and a SyncPoint carries none", { ignore: !linux }, () => {
  using frame = CpuBytes.create({ data: new Uint8Array(64), rowPitch: 64, format: "RgbaU8" });
  using other = CpuBytes.create({ data: new Uint8Array(64), rowPitch: 64, format: "RgbaU8" });
  using fence = CpuFence.create();
  assert.throws(
    () => frame.setFences({ acquire: other }),
    (e: WrongKindError) => e instanceof WrongKindError && e.field === "acquire",
  );
  assert.throws(() => fence.setFences({ acquire: fence }), WrongKindError);
  const gone = CpuFence.create();
  const raw = gone.unsafeHandle;
  gone.release();
  assert.throws(
    () => frame.setFences({ release: { unsafeHandle: raw } as unknown as GpuResource<unknown> }),
    ReleasedError,
  );
  assert.deepEqual(frame.fences, {});
});

Deno.test(
  "a point signalled in a Worker wakes this isolate; one waited on there blocks only there",
  {
    ignore: !linux,
  },
  async () => {
    using fence = CpuFence.create();
    const worker = new Worker(
      `data:application/javascript,${
        encodeURIComponent(`
      const { GpuResource } = await import(${
          JSON.stringify(new URL("../mod.ts", import.meta.url).href)
        });
      self.onmessage = (e) => {
        const point = GpuResource.fromRaw(e.data);
        point.wait(5000);               // blocks this Worker only
        point.release();
        self.postMessage("reached");
      };`)
      }`,
      { type: "module" },
    );
    const reply = new Promise((r) => worker.onmessage = (e) => r(e.data));
    worker.postMessage(fence.clone().intoRaw());
    await sleep(20);
    fence.signal();
    assert.equal(await reply, "reached");
    worker.terminate();
  },
);

Deno.test(
  "WgpuSubmission is reached when its queue's work is done",
  { ignore: !linux },
  async (t) => {
    const adapter = await navigator.gpu?.requestAdapter();
    if (!adapter) {
      await t.step({ name: "no WebGPU adapter here", ignore: true, fn() {} });
      return;
    }
    const device = await adapter.requestDevice();
    const buffer = device.createBuffer({ size: 1 << 20, usage: GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(buffer, 0, new Uint8Array(1 << 20).fill(7));
    using point = WgpuSubmission.fromQueue(device.queue, 1);
    await point.waitAsync({ timeout: 10_000 });
    assert.equal(point.signaled, true);
    buffer.destroy();
    device.destroy();
  },
);

Deno.test(
  "a frame's acquire fence crosses to another process with it: the consumer waits and sees the final bytes",
  { ignore: !linux },
  async () => {
    const path = `@gpures-sync-${Deno.pid}`;
    using listener = Channel.listen(path);
    const peer = new Peer("../_support/sync_consumer.ts", [path], [
      "--allow-ffi",
      "--allow-env=GPURES_LIB",
    ]);
    try {
      const channel = await listener.accept();
      const fd = memfd(32 * 32 * 4);
      writeAt(fd, new Uint8Array(32 * 32 * 4).fill(1), 0); // what is there before the producer's work
      using frame = rgbaFrame(fd, { takeOwnership: true });
      using fence = CpuFence.create();
      frame.setFences({ acquire: fence });
      await channel.send(frame); // a FENCE message (its eventfd by SCM_RIGHTS), then the frame
      // Without the wait the consumer reads the old bytes: the work is not done yet.
      assert.equal(await peer.out.next(), "peeked 1");
      const writer = frame.dupFd();
      writeAt(writer, new Uint8Array(32 * 32 * 4).fill(200), 0);
      close(writer);
      fence.signal(); // the producer's work is done
      assert.deepEqual(JSON.parse((await peer.out.next())!), { first: 200, all: true });
      channel.close();
    } finally {
      const { status, stderr } = await peer.done();
      assert.equal(status.code, 0, stderr);
    }
  },
);

Deno.test(
  "a process-local acquire fence cannot cross: send refuses the frame rather than drop the fence",
  { ignore: !linux },
  async () => {
    const [a, b] = Channel.pair();
    try {
      using frame = rgbaFrame(memfd(32 * 32 * 4), { takeOwnership: true });
      using local = VkSemaphore.create({ semaphore: 5n, semaphoreType: "timeline", value: 1n });
      frame.setFences({ acquire: local });
      await assert.rejects(
        a.send(frame),
        (e: UnsupportedError) => e instanceof UnsupportedError && e.field === "acquire",
      );
      frame.setFences({});
      await a.send(frame);
      using got = await b.receive();
      assert.deepEqual(got!.fences, {}, "a frame sent without a fence arrives without one");
    } finally {
      a.close();
      b.close();
    }
  },
);
