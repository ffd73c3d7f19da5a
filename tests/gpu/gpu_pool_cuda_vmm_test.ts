// CUDA frame pools across processes, on the GPU host (run by tests/gpu/run.sh;
// skipped elsewhere with the reason). The producer's CUDA kernel writes each
// 4K slot of a CudaFramePool, its stream then signals a Vulkan timeline
// semaphore imported into CUDA, and the frame goes with that point as its
// acquire fence (a VkSemaphoreFd). The consumer process
// (tests/gpu/_pool_cuda_vmm_consumer.ts) maps each slot once (CudaImporter),
// has its stream wait on the point, check every byte with a kernel, and
// record a CUevent that becomes the frame's release fence; it releases at
// once, and gpures holds the slot's return until the event is reached. No
// host wait and no host copy on the frame path of either side.
//
// The same run measures, on this GPU: a frame's cost through the pool, the
// first import of a slot against CUDA IPC's (cuIpcOpenMemHandle), and the
// copy a consumer makes without zero copy (device → host → device).

import assert from "node:assert/strict";
import { Channel, CudaFramePool, liveHandles, VkSemaphoreFd } from "../../mod.ts";
import { openProbe } from "./probe.ts";
import { eventually } from "../_support/frame_pattern.ts";
import { Peer } from "../hostile/_peer_wire.ts";
import { seedOf } from "../_support/gpu_pattern.ts";
import { countOpenFds } from "../_support/libc.ts";

const W = 3840, H = 2160, FRAMES = Number(Deno.env.get("GPURES_CUDA_POOL_FRAMES") ?? 1000);
const SLOTS = 4, OPAQUE_FD = 1;

{
  const opened = Deno.build.os === "linux" ? openProbe() : { reason: "Linux only" };
  let reason = opened.reason;
  const probe = opened.probe;
  if (!reason && !probe!.cudaInfo().kernelsLoaded) {
    reason = `the kernels did not load: ${probe!.cudaInfo().kernelNote}`;
  }
  if (!reason && probe!.vkOpen(probe!.cudaInfo().uuid) !== 0) {
    reason = `no usable Vulkan device: ${probe!.lastError()}`;
  }
  if (reason) console.log(`skipping gpu_pool_cuda_vmm: ${reason}`);
  Deno.test({
    name: `${FRAMES} 4K frames of a CUDA pool: a kernel writes them in one process, another's ` +
      "checks them, ordered only by the fences that travel with them",
    ignore: reason !== undefined,
    async fn() {
      const p = probe!;
      const handles = liveHandles();
      const cuda = p.cudaInfo();
      const semaphore = p.vkSemaphoreCreate(true, OPAQUE_FD, 0n);
      const timeline = VkSemaphoreFd.create({
        fd: p.vkSemaphoreExport(semaphore, OPAQUE_FD),
        handleType: "opaqueFd",
        semaphoreType: "timeline",
        value: 0n,
        deviceUuid: cuda.uuid,
      }, { takeOwnership: true });
      const cuSemaphore = p.cuSemaphoreImport(timeline.dupFd(), true); // CUDA takes its own fd
      const on = {
        fd: timeline.describe().fd,
        handleType: "opaqueFd",
        semaphoreType: "timeline",
        deviceUuid: cuda.uuid,
      } as const;
      const path = `@gpures-gpu-pool-cuda-vmm-${Deno.pid}`;
      const bytes = W * H * 4; // what the consumer checks: the frame's one plane
      const peer = new Peer("../gpu/_pool_cuda_vmm_consumer.ts", [
        path,
        String(FRAMES),
        String(bytes),
      ], [
        "--allow-ffi",
        "--allow-read",
        "--allow-env",
      ]);
      try {
        using pool = CudaFramePool.create({ format: "RgbaU8", width: W, height: H, slots: SLOTS });
        using listener = Channel.listen(path);
        using channel = await listener.accept();
        let fdsAt10 = 0, memAt10 = 0;
        const t0 = performance.now();
        for (let seq = 0; seq < FRAMES; seq++) {
          using frame = await pool.acquire({ timeout: 10_000 });
          const { ptr } = pool.slot(frame);
          if (seq === 0) {
            const id = p.fdIdentity(frame.describe().fd);
            console.log(
              `a CUDA VMM fd is ${id.link} (mode 0o${id.mode.toString(8)}, size unknown to gpures)`,
            );
          }
          const value = BigInt(seq + 1);
          p.poolFillSignal(ptr, bytes, seedOf(seq), cuSemaphore, value); // queued, not waited
          using point = VkSemaphoreFd.create({ ...on, value }); // duplicates the timeline's fd
          frame.setFences({ acquire: point });
          frame.setMeta({ sequence: seq });
          await channel.send(frame);
          if (seq === 10) fdsAt10 = countOpenFds(), memAt10 = p.cuMemInfo().free;
        }
        const report = JSON.parse((await peer.out.next())!);
        const ms = performance.now() - t0;
        await eventually(() => pool.stats.inUse === 0, "every slot came home");
        assert.deepEqual(report, { ...report, frames: FRAMES, intact: FRAMES, first: null });
        assert.ok(report.imports <= SLOTS, `${report.imports} imports on the consumer`);
        assert.equal(report.imports + report.hits, FRAMES);
        assert.equal(report.announced, report.imports, "each slot's fd crossed once");
        assert.equal(report.fenceImports, 1, "the consumer imported the timeline once");
        assert.ok(report.fdsEnd <= report.fds10, `consumer fds ${report.fds10} → ${report.fdsEnd}`);
        assert.ok(report.memEnd >= report.mem10, "consumer GPU memory flat");
        assert.ok(countOpenFds() <= fdsAt10, "producer fds flat");
        assert.ok(p.cuMemInfo().free >= memAt10, "producer GPU memory flat");
        const { status, stderr } = await peer.done();
        assert.ok(status.success, stderr);
        const ipc = compareIpc(p, bytes);
        console.log(
          `CUDA pool → CUDA: ${FRAMES} 4K frames in ${ms.toFixed(0)} ms (${
            (ms / FRAMES).toFixed(3)
          } ` +
            `ms a frame with a fill and a check kernel); consumer imports ${report.imports}, hits ` +
            `${report.hits}; first import ${report.firstImportUs.toFixed(0)} µs, cached import ` +
            `${report.cachedImportUs.toFixed(2)} µs; receive → release fence set ` +
            `${report.perFrameUs.toFixed(1)} µs p50; ${ipc}`,
        );
      } catch (e) {
        peer.kill();
        const { stderr } = await peer.done();
        throw new Error(`${(e as Error).message}\nconsumer's stderr: ${stderr}`, { cause: e });
      } finally {
        peer.kill();
        await peer.done();
        p.cuSemaphoreDestroy(cuSemaphore);
        timeline.release();
        p.vkSemaphoreDestroy(semaphore);
      }
      assert.ok(liveHandles() <= handles, "every handle was released");
    },
  });
}

/**
 * CUDA IPC's first import in a second process (cuIpcOpenMemHandle of a
 * cuMemAlloc'd 4K frame, the pick of a CUDA user without gpures), and the
 * copy through the host, both on this GPU in this run.
 */
function compareIpc(p: NonNullable<ReturnType<typeof openProbe>["probe"]>, bytes: number): string {
  const src = p.cuAlloc(bytes), dst = p.cuAlloc(bytes);
  const pinned = p.cuPinnedAlloc(bytes);
  try {
    p.cuFill(src, bytes, 77);
    const handle = p.cuIpcHandle(src);
    const hex = Array.from(handle, (b) => b.toString(16).padStart(2, "0")).join("");
    const out = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-ffi",
        "--allow-read",
        "--allow-env",
        new URL("./_ipc_open.ts", import.meta.url).pathname,
        hex,
        String(bytes),
      ],
    }).outputSync();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const ipc = JSON.parse(new TextDecoder().decode(out.stdout));
    assert.equal(ipc.mismatches, 0, "CUDA IPC read the frame intact");
    const copy = p.cuBenchCopy(src, dst, pinned, bytes, 20);
    return `CUDA IPC first import (cuIpcOpenMemHandle) ${(ipc.openNs / 1e3).toFixed(0)} µs, ` +
      `close ${(ipc.closeNs / 1e3).toFixed(0)} µs; device → host → device copy ` +
      `${copy.roundTrip.toFixed(0)} µs, device → device ${copy.d2d.toFixed(0)} µs`;
  } finally {
    p.cuFree(src);
    p.cuFree(dst);
    p.cuPinnedFree(pinned);
  }
}
