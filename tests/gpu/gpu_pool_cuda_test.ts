// Vulkan frame pools into CUDA across processes, on the GPU host (run by
// tests/gpu/run.sh; skipped elsewhere with the reason): the producer's CUDA
// kernel writes each 4K slot of a VulkanFramePool in device-local memory
// (through its own CudaImporter of the slot), a session carries the frame,
// and the consumer process (tests/gpu/_pool_cuda_consumer.ts) imports the
// slot once into CUDA and has a kernel check every byte. No host copy on
// either side.

import assert from "node:assert/strict";
import { Channel, liveHandles, VulkanFramePool } from "../../mod.ts";
import { CudaImporter } from "../../ffi/interop/cuda.ts";
import { openProbe } from "./probe.ts";
import { probe as probeVulkan } from "../_support/vulkan_helper.ts";
import { HelperContext } from "../_support/vulkan_context.ts";
import { eventually } from "../_support/frame_pattern.ts";
import { Peer } from "../hostile/_peer_wire.ts";

import { seedOf } from "../_support/gpu_pattern.ts";

const W = 3840, H = 2160, BYTES = W * H * 4, FRAMES = 1000, SLOTS = 4;

{
  const opened = Deno.build.os === "linux" ? openProbe() : { reason: "Linux only" };
  const vk = opened.probe ? probeVulkan("build the test helpers (cmake --build build)") : undefined;
  const reason = opened.reason ?? vk?.reason;
  if (reason) console.log(`skipping gpu_pool_cuda: ${reason}`);
  Deno.test({
    name: `${FRAMES} 4K frames of a Vulkan pool: a CUDA kernel writes them in one process, ` +
      "another's checks them, each slot imported once on each side",
    ignore: reason !== undefined,
    async fn() {
      const probe = opened.probe!;
      const handles = liveHandles();
      const ctx = new HelperContext(vk!.helper!);
      const producerCuda = CudaImporter.create({});
      const path = `@gpures-gpu-pool-cuda-${Deno.pid}`;
      const peer = new Peer(
        "../gpu/_pool_cuda_consumer.ts",
        [path, String(FRAMES), String(BYTES)],
        [
          "--allow-ffi",
          "--allow-read",
          "--allow-env",
        ],
      );
      try {
        using pool = VulkanFramePool.create({
          instance: ctx.instance,
          physicalDevice: ctx.physicalDevice,
          device: ctx.device(0),
          format: "RgbaU8",
          width: W,
          height: H,
          slots: SLOTS,
        });
        using listener = Channel.listen(path);
        using channel = await listener.accept();
        const t0 = performance.now();
        for (let seq = 0; seq < FRAMES; seq++) {
          using frame = await pool.acquire({ timeout: 5000 });
          const { ptr, handle } = producerCuda.import(frame);
          handle.release();
          probe.cuFill(ptr, BYTES, seedOf(seq)); // the kernel writes the slot, then the send
          frame.setMeta({ sequence: seq });
          await channel.send(frame);
        }
        const report = JSON.parse((await peer.out.next())!);
        const ms = performance.now() - t0;
        assert.deepEqual(report, {
          ...report,
          frames: FRAMES,
          intact: FRAMES,
          corrupt: 0,
          first: null,
        });
        assert.ok(report.imports <= SLOTS, `${report.imports} imports on the consumer`);
        assert.equal(report.imports + report.hits, FRAMES);
        assert.equal(report.announced, report.imports);
        assert.ok(producerCuda.stats.imports <= SLOTS, "the producer imported each slot once");
        const { status, stderr } = await peer.done();
        assert.ok(status.success, stderr);
        await eventually(() => pool.stats.inUse === 0, "every slot came home");
        console.log(
          `gpu pool → CUDA: ${FRAMES} 4K frames in ${ms.toFixed(0)} ms (${
            (ms / FRAMES).toFixed(2)
          } ms ` +
            `a frame, a fill kernel and a check kernel each); consumer imports ${report.imports}, ` +
            `hits ${report.hits}; producer imports ${producerCuda.stats.imports}`,
        );
      } finally {
        peer.kill();
        await peer.done();
        producerCuda.close();
        ctx.assertNothingLive();
        ctx.close();
      }
      assert.ok(liveHandles() <= handles, "every handle was released");
    },
  });
}
