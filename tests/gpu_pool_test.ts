// Frame pools in exported Vulkan memory (VulkanFramePool,
// native/src/interop/vulkan_pool.c) on a real device: lavapipe here. The
// producer writes each slot with a Vulkan copy into the slot's own VkBuffer;
// the consumer (device B of the helper's context, or another process)
// imports the VkOpaqueFd with a VulkanImporter and copies it out through
// Vulkan: the bytes cross as GPU memory, never through a gpures mapping.
// Without the helper library or a device that exports opaque fds, each test
// is skipped and says why.

import assert from "node:assert/strict";
import { Channel, FramePool, VkOpaqueFd, VulkanFramePool } from "../mod.ts";
import { InvalidHandleError, ReleasedError, WrongKindError } from "../ffi/errors.ts";
import { VulkanImporter } from "../ffi/interop/vulkan.ts";
import { close, countOpenFds, eventFd, memfd, pipeReadEnd } from "./_support/libc.ts";
import { eventually } from "./_support/frame_pattern.ts";
import { fillGpuPattern, gpuPattern } from "./_support/gpu_pattern.ts";
import { helperCheck, HelperContext, inContext } from "./_support/vulkan_context.ts";
import {
  CAP_EXTERNAL_MEMORY_FD,
  CAP_OPAQUE_FD_IMAGE,
  lacking,
  probe,
} from "./_support/vulkan_helper.ts";
import { Peer } from "./hostile/_peer_wire.ts";

const INSTALL = "install Mesa's lavapipe (mesa-vulkan-drivers) and libvulkan-dev, then build: " +
  "cmake -S . -B build && cmake --build build";
const probed = probe(INSTALL);
const vk = probed.helper!;
const CONSUMER = "../_support/gpu_pool_consumer.ts"; // relative to _peer_wire.ts
// GPURES_GPU_POOL_SIZE (e.g. 3840x2160) and GPURES_GPU_POOL_FRAMES size the cross-process run on
// the GPU host (docs/gpu-validation.md); CI runs the small default.
const [W, H] = (Deno.env.get("GPURES_GPU_POOL_SIZE") ?? "256x64").split("x").map(Number);
const BYTES = W * H * 4;
const CROSS_FRAMES = Number(Deno.env.get("GPURES_GPU_POOL_FRAMES") ?? 200);

function missing(): string | undefined {
  if (Deno.build.os !== "linux") return `Vulkan pools export fds: Linux only, not ${Deno.build.os}`;
  return lacking(probed, CAP_EXTERNAL_MEMORY_FD | CAP_OPAQUE_FD_IMAGE);
}

class Context extends HelperContext {
  constructor() {
    super(vk);
  }

  pool(options: Partial<Parameters<typeof VulkanFramePool.create>[0]> = {}): VulkanFramePool {
    return VulkanFramePool.create({
      instance: this.instance,
      physicalDevice: this.physicalDevice,
      device: this.device(0),
      format: "RgbaU8",
      width: W,
      height: H,
      slots: 3,
      ...options,
    });
  }

  /** An importer into device B that makes a VkBuffer over each frame (the consumer's side). */
  bufferImporter(): VulkanImporter {
    return VulkanImporter.create({
      instance: this.instance,
      physicalDevice: this.physicalDevice,
      device: this.device(1),
      image: false,
      buffer: true,
    });
  }

  /** A Vulkan copy of `bytes` into (or, without them, out of) a buffer of device `which`. */
  copy(which: 0 | 1, buffer: bigint, size: number, bytes?: Uint8Array): Uint8Array {
    const data = bytes ?? new Uint8Array(size);
    helperCheck(
      vk,
      vk.gvk_buffer_copy(this.ptr, which, buffer, 0n, data, BigInt(size), bytes ? 1 : 0),
      "copy",
    );
    return data;
  }
}

function gpuPoolTest(name: string, fn: (ctx: Context) => void | Promise<void>): void {
  const reason = missing();
  if (reason) console.log(`skipping "${name}": ${reason}`);
  Deno.test({
    name,
    ignore: reason !== undefined,
    fn: () => inContext(() => new Context(), fn, "every fd was closed (each slot's export too)"),
  });
}

gpuPoolTest(
  "a Vulkan pool's frames are VkOpaqueFds over exported memory that another device reads",
  async (ctx) => {
    using pool = ctx.pool();
    using importer = ctx.bufferImporter();
    assert.equal(pool.rowPitch, W * 4);
    const held: VkOpaqueFd[] = [];
    for (let seq = 0; seq < 9; seq++) {
      if (held.length === 3) held.shift()!.release(); // every slot in turn
      const frame = await pool.acquire({ timeout: 2000 });
      held.push(frame);
      assert.ok(frame instanceof VkOpaqueFd);
      const slot = pool.slot(frame);
      assert.ok(slot.buffer !== 0n && slot.memory !== 0n);
      assert.ok(slot.size >= BigInt(BYTES));
      const d = frame.describe();
      assert.equal(d.rowPitch, W * 4);
      assert.equal(d.size, slot.size);
      assert.equal(d.memoryTypeIndex, slot.memoryTypeIndex);
      assert.deepEqual(d.deviceUuid, ctx.uuid, "the frame names the pool's device");
      ctx.copy(0, slot.buffer, BYTES, fillGpuPattern(new Uint8Array(BYTES), seq));
      const { buffer } = importer.import(frame);
      assert.equal(gpuPattern(ctx.copy(1, buffer, BYTES), seq), null);
    }
    for (const frame of held) frame.release();
    assert.equal(
      importer.stats.imports,
      3,
      "one import per slot, every later frame from the cache",
    );
    assert.equal(importer.stats.hits, 6);
    assert.equal(pool.stats.acquired, 9);
    assert.equal(pool.stats.inUse, 0);
  },
);

gpuPoolTest(
  "frames of a Vulkan pool reach another process's Vulkan device intact, each slot announced once",
  async (ctx) => {
    const FRAMES = CROSS_FRAMES;
    using pool = ctx.pool({ slots: 4 });
    const t0 = performance.now();
    const path = `@gpures-gpu-pool-${Deno.pid}`;
    const peer = new Peer(CONSUMER, [path, String(FRAMES), String(BYTES)], [
      "--allow-ffi",
      "--allow-read",
      "--allow-env",
    ]);
    try {
      using listener = Channel.listen(path);
      using channel = await listener.accept();
      const bytes = new Uint8Array(BYTES);
      for (let seq = 0; seq < FRAMES; seq++) {
        using frame = await pool.acquire({ timeout: 5000 });
        ctx.copy(0, pool.slot(frame).buffer, BYTES, fillGpuPattern(bytes, seq));
        frame.setMeta({ sequence: seq });
        await channel.send(frame);
      }
      const report = JSON.parse((await peer.out.next())!);
      assert.deepEqual(report, {
        ...report,
        frames: FRAMES,
        intact: FRAMES,
        corrupt: 0,
        first: null,
      });
      assert.ok(report.imports >= 1 && report.imports <= 4, `${report.imports} imports`);
      assert.equal(report.imports + report.hits, FRAMES);
      assert.equal(report.announced, report.imports, "each slot's fd crossed once");
      const { status, stderr } = await peer.done();
      assert.ok(status.success, stderr);
      await eventually(() => pool.stats.inUse === 0, "every slot came home");
      assert.equal(channel.stats.returned, FRAMES);
      console.log(
        `gpu pool: ${FRAMES} ${W}x${H} frames across processes in ${
          (performance.now() - t0).toFixed(0)
        } ms (each written and read back through Vulkan copies), ${report.imports} imports`,
      );
      assert.equal(pool.stats.acquired, FRAMES);
      assert.ok(pool.stats.highWater <= 4);
    } finally {
      peer.kill();
      await peer.done();
    }
  },
);

gpuPoolTest(
  "a frame held past the pool's close stays readable through its fd",
  async (ctx) => {
    const pool = ctx.pool({ slots: 2 });
    const frame = await pool.acquire();
    const { buffer } = pool.slot(frame);
    ctx.copy(0, buffer, BYTES, fillGpuPattern(new Uint8Array(BYTES), 5));
    pool.close();
    assert.throws(() => pool.slot(frame), ReleasedError);
    using importer = ctx.bufferImporter();
    const imported = importer.import(frame);
    assert.equal(
      gpuPattern(ctx.copy(1, imported.buffer, BYTES), 5),
      null,
      "the fd kept the memory",
    );
    frame.release();
  },
);

gpuPoolTest("bad options name their field; nothing is made for them", (ctx) => {
  const fds = countOpenFds();
  const refused = (options: Record<string, unknown>, field: string) =>
    assert.throws(() => ctx.pool(options as never), (e: InvalidHandleError) => {
      assert.ok(e instanceof InvalidHandleError, String(e));
      assert.equal(e.field, field, e.message);
      return true;
    });
  refused({ device: null }, "device");
  refused({ format: "Rgba" }, "format");
  refused({ slots: 0 }, "slots");
  refused({ slots: 257 }, "slots");
  refused({ width: 0 }, "width");
  refused({ rowAlign: 3 }, "rowAlign");
  refused({ hostVisible: "yes" }, "hostVisible");
  assert.equal(countOpenFds(), fds);
});

gpuPoolTest("slot() refuses a frame that is not one of the pool's, held now", async (ctx) => {
  using a = ctx.pool({ slots: 1 });
  using b = ctx.pool({ slots: 1 });
  using memfds = FramePool.create({ format: "RgbaU8", width: W, height: H, slots: 1 });
  const frame = await a.acquire();
  const field = (fn: () => unknown, name: string) =>
    assert.throws(fn, (e: InvalidHandleError) => {
      assert.equal(e.field, name, e.message);
      return true;
    });
  field(() => b.slot(frame), "frame");
  using cpu = memfds.tryAcquire()!;
  field(() => a.slot(cpu as unknown as VkOpaqueFd), "frame");
  const id = frame.bufferId;
  frame.release();
  assert.throws(
    () => a.slot(frame),
    (e: Error) => e instanceof ReleasedError || e instanceof WrongKindError,
  );
  using again = a.tryAcquire()!;
  assert.equal(again.bufferId, id, "the slot's buffer is the same");
});

gpuPoolTest(
  "a receiver that closes holding Vulkan frames keeps their memory: the slots get new exported memory",
  async (ctx) => {
    using pool = ctx.pool({ slots: 2 });
    using importer = ctx.bufferImporter();
    const [tx, rx] = Channel.pair();
    using _tx = tx;
    const held: { frame: VkOpaqueFd; id: bigint; seq: number }[] = [];
    for (let seq = 0; seq < 2; seq++) {
      using frame = await pool.acquire({ timeout: 2000 });
      ctx.copy(0, pool.slot(frame).buffer, BYTES, fillGpuPattern(new Uint8Array(BYTES), seq));
      await tx.send(frame);
      held.push({ frame: await rx.receive() as VkOpaqueFd, id: frame.bufferId!, seq });
    }
    rx.close(); // KEEP: the held buffers are never handed out again
    const next = [await pool.acquire({ timeout: 2000 }), await pool.acquire({ timeout: 2000 })];
    try {
      for (const f of next) {
        assert.ok(!held.some((h) => h.id === f.bufferId), "a held buffer is not handed out again");
        const { buffer } = pool.slot(f); // the slot's new memory, with its own objects
        ctx.copy(0, buffer, BYTES, fillGpuPattern(new Uint8Array(BYTES), 99));
      }
      for (const h of held) {
        const { buffer } = importer.import(h.frame);
        assert.equal(
          gpuPattern(ctx.copy(1, buffer, BYTES), h.seq),
          null,
          "what it holds is intact",
        );
      }
    } finally {
      for (const f of next) f.release();
      for (const h of held) h.frame.release();
    }
    await eventually(() => pool.stats.inUse === 0, "every slot back");
  },
);

gpuPoolTest(
  "a VkOpaqueFd that lies (an eventfd, a pipe, a memfd smaller than it says) is refused by name, nothing imported",
  async (ctx) => {
    using pool = ctx.pool({ slots: 1 });
    using importer = ctx.bufferImporter();
    const honest = pool.tryAcquire()!;
    const { fd: _fd, ...like } = honest.describe();
    honest.release();
    const refusedNaming = (field: string, what: string) => (e: InvalidHandleError) => {
      assert.ok(e instanceof InvalidHandleError, `${what}: ${e}`);
      assert.equal(e.field, field, `${what}: ${e.message}`);
      return true;
    };
    const lying = (fd: number) => {
      try {
        return VkOpaqueFd.create({ ...like, fd } as never); // duplicates fd
      } finally {
        close(fd);
      }
    };
    // Made here: the import refuses it before the driver sees it (lavapipe's import of an
    // eventfd never returned).
    for (
      const [what, fd, field] of [
        ["an eventfd", eventFd(), "fd"],
        ["a pipe", pipeReadEnd(), "fd"],
        ["a memfd of 4 KiB", memfd(4096), "size"],
      ] as const
    ) {
      using frame = lying(fd);
      assert.throws(() => importer.import(frame), refusedNaming(field, what));
    }
    // From a peer: the fds that are no memory are refused as they arrive, the short memfd at import.
    const [tx, rx] = Channel.pair();
    using _tx = tx;
    using _rx = rx;
    for (const [what, fd] of [["an eventfd", eventFd()], ["a pipe", pipeReadEnd()]] as const) {
      using frame = lying(fd);
      await tx.send(frame);
      await assert.rejects(rx.receive(), refusedNaming("fd", what));
    }
    using short = lying(memfd(4096));
    await tx.send(short);
    using got = await rx.receive() as VkOpaqueFd;
    assert.throws(() => importer.import(got), refusedNaming("size", "a short memfd from a peer"));
    assert.equal(importer.stats.imports, 0);
    assert.equal(importer.stats.cached, 0);
  },
);
