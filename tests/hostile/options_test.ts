// Options bags a careless or hostile caller can give: values past a native
// parameter's width, fractions, inherited properties. Every factory checks
// all of its options before it makes anything, refuses what it cannot make
// exactly, and reports what it made.

import assert from "node:assert/strict";
import {
  Channel,
  CpuFence,
  CudaImporter,
  EglImporter,
  FramePool,
  FrameQueue,
  GpuResourceError,
  InvalidHandleError,
  PixelFormat,
  VulkanImporter,
  WebGpuFrameUploader,
} from "../../mod.ts";
import { countOpenMemfds } from "../_support/libc.ts";
import {
  eglImporter,
  FAKE_GPU_DEVICE,
  vulkanImporter,
  webGpuUploader,
} from "../_support/no_device.ts";
import { refused } from "../_support/refusal.ts";

const linux = Deno.build.os === "linux";
const base = { format: "RgbaU8", width: 16, height: 16, slots: 3 } as const;

Deno.test({
  name: "FramePool.create() refuses options it cannot make exactly before it allocates a slot",
  ignore: !linux,
  fn() {
    const before = countOpenMemfds();
    const cases: [Record<string, unknown>, string][] = [
      [{ width: 2 ** 32 + 16 }, "width"],
      [{ height: 2 ** 32 + 16 }, "height"],
      [{ width: 16.5 }, "width"],
      [{ rowAlign: 0 }, "rowAlign"],
      [{ rowAlign: 2 ** 32 + 64 }, "rowAlign"],
      [{ rowAlign: 48 }, "rowAlign"],
      [{ slots: 1.5 }, "slots"],
      [{ slots: 2 ** 32 + 2 }, "slots"],
      [{ slots: 0 }, "slots"],
      [{ slots: 257 }, "slots"],
      [{ slots: "2" }, "slots"],
      [{ width: NaN }, "width"],
      [{ format: 1 }, "format"],
    ];
    for (const [change, field] of cases) {
      refused(() => FramePool.create({ ...base, ...change } as never), field);
    }
    assert.equal(countOpenMemfds(), before, "no slot's memfd outlives a refused create");
  },
});

Deno.test({
  name: "a FramePool's options are what it made: own properties only, nothing else copied",
  ignore: !linux,
  fn() {
    // An inherited rowAlign is not the caller's option: the default applies.
    const inherited = Object.assign(Object.create({ rowAlign: 256, extra: 1 }), base);
    using pool = FramePool.create(inherited);
    assert.deepEqual(pool.options, { ...base, rowAlign: 64 });
    assert.equal(pool.stats.slots, pool.options.slots);
    assert.ok(Object.isFrozen(pool.options));

    // A getter runs once, and what it gave is what the pool holds.
    let reads = 0;
    const options = {
      ...base,
      get slots() {
        return ++reads === 1 ? 2 : 100;
      },
      unknown: "not copied",
    };
    using counted = FramePool.create(options);
    assert.equal(reads, 1, "each option is read once");
    assert.deepEqual(counted.options, { ...base, slots: 2, rowAlign: 64 });
    assert.equal(counted.stats.slots, 2);

    // Required options that are only inherited are missing.
    refused(() => FramePool.create(Object.create(base)), "format", /missing|PixelFormat/);
    refused(() => FramePool.create(null as never), "options");
  },
});

Deno.test({
  name: "FramePool.fromNegotiated() checks slots as create() does",
  ignore: !linux,
  fn() {
    const pick = {
      format: "RgbaU8",
      width: 16,
      height: 16,
      rowAlign: 64,
      modifier: 0n,
      memory: "host",
    } as never;
    refused(() => FramePool.fromNegotiated(pick, 1.5), "slots");
    using pool = FramePool.fromNegotiated(pick, 2);
    assert.equal(pool.options.slots, 2);
  },
});

Deno.test({
  name: "acquire() and waitAsync() read only their options' own properties",
  ignore: !linux,
  async fn() {
    using pool = FramePool.create({ ...base, slots: 1 });
    const held = await pool.acquire();
    // An inherited 1 ms timeout is not the caller's: this acquire waits until the release.
    const waiting = pool.acquire(Object.create({ timeout: 1 }));
    setTimeout(() => held.release(), 30);
    (await waiting).release();
    assert.throws(() => pool.tryAcquire(null as never), InvalidHandleError);

    using fence = CpuFence.create();
    const waited = fence.waitAsync(Object.create({ timeout: 1 }));
    setTimeout(() => fence.signal(), 30);
    await waited;
    await assert.rejects(fence.waitAsync("1000" as never), InvalidHandleError);
  },
});

Deno.test({
  name: "receive() refuses an allowUnsealed that is not a boolean instead of reading it as false",
  ignore: !linux,
  async fn() {
    const [a, b] = Channel.pair();
    const bound = setTimeout(() => a.close(), 500); // a receive that read "yes" as false waits; end it
    try {
      await assert.rejects(
        b.receive({ allowUnsealed: "yes" } as never),
        (e: InvalidHandleError) => e instanceof InvalidHandleError && e.field === "allowUnsealed",
      );
    } finally {
      clearTimeout(bound);
      a.close();
      b.close();
    }
  },
});

Deno.test("the other factories check their options, own properties only, before any native call", () => {
  const polluted = Object.create({ capacity: 1.5, usage: -1, maxShapes: 0, rowAlign: 3 });
  // Inherited values are not options: nothing below blames them.
  const notBlamed = (f: () => unknown, field: string) => {
    try {
      f();
    } catch (e) {
      assert.ok(e instanceof GpuResourceError, `a typed error, not ${e}`);
      assert.notEqual(e.field, field, e.message);
    }
  };
  notBlamed(() => VulkanImporter.create(polluted).close(), "capacity");
  notBlamed(() => EglImporter.create(polluted).close(), "capacity");
  notBlamed(() => CudaImporter.create(polluted).close(), "capacity");
  notBlamed(() => new WebGpuFrameUploader(FAKE_GPU_DEVICE, polluted), "maxShapes");
  assert.equal(PixelFormat.layout("RgbaU8", 16, 16, polluted).planes[0].stride, 64);

  refused(() => vulkanImporter({ capacity: 1.5 }), "capacity");
  refused(() => vulkanImporter({ usage: 2 ** 32 }), "usage");
  refused(() => vulkanImporter({ image: "yes" as never }), "image");
  refused(() => eglImporter({ capacity: NaN }), "capacity");
  refused(() => CudaImporter.create({ device: 0.5 }), "device");
  refused(() => CudaImporter.create("all" as never), "options");
  refused(() => webGpuUploader({ maxShapes: 1.5 }), "maxShapes");
  refused(() => new FrameQueue(2.5), "capacity");
  refused(() => PixelFormat.layout("RgbaU8", 16, 16, { rowAlign: 2 ** 32 + 64 }), "rowAlign");
});
