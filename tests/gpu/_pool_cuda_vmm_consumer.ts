// The consumer process of tests/gpu/gpu_pool_cuda_vmm_test.ts: receives
// CudaVmmFd frames of a CudaFramePool, maps each slot once into CUDA
// (CudaImporter), and queues on its CUDA stream a wait on the frame's acquire
// fence (a Vulkan timeline point, imported into CUDA once: later frames'
// fences name the same semaphore), a kernel that counts the bytes unlike the
// pattern the producer's kernel wrote, and a CUevent that becomes the frame's
// release fence. It releases each frame at once: gpures returns the slot when
// the event is reached. The host waits only at the end, for the counts.
// Prints {"frames","intact","first","imports","hits","announced",
// "fenceImports","firstImportUs","cachedImportUs","perFrameUs","fds10","fdsEnd",
// "mem10","memEnd"} as one JSON line.
//
//   deno run --allow-ffi --allow-read --allow-env <this> <path> <count> <bytes>

import { Channel, CudaContextEvent, type CudaVmmFd, type VkSemaphoreFd } from "../../mod.ts";
import { CudaImporter } from "../../ffi/interop/cuda.ts";
import { openProbe } from "./probe.ts";
import { seedOf } from "../_support/gpu_pattern.ts";
import { close, countOpenFds } from "../_support/libc.ts";

const [path, countText, bytesText] = Deno.args;
const count = Number(countText), bytes = Number(bytesText);
const opened = openProbe();
if (!opened.probe) throw new Error(opened.reason);
const probe = opened.probe;
const importer = CudaImporter.create({});
const channel = await Channel.connect(path, { wait: 5000 });

/** The timeline each frame's fence is a point of: imported into CUDA once, known by its open file. */
let timeline: { fd: number; cu: bigint } | undefined;
let fenceImports = 0;
function cudaSemaphoreOf(fence: VkSemaphoreFd): bigint {
  const fd = fence.dupFd();
  if (timeline && probe.fdSameFile(timeline.fd, fd)) {
    close(fd);
    return timeline.cu;
  }
  if (timeline) throw new Error("a frame's fence is on another semaphore than the first's");
  timeline = { fd, cu: probe.cuSemaphoreImport(fence.dupFd(), true) };
  fenceImports++;
  return timeline.cu;
}

const sequences: number[] = [];
const perFrame: number[] = [];
let firstImportUs = 0, cachedImportUs = 0, fds10 = 0, mem10 = 0;
for (let i = 0; i < count; i++) {
  const frame = await channel.receive() as CudaVmmFd | null;
  if (frame === null) throw new Error(`the producer ended after ${i} frames`);
  const t0 = performance.now();
  const { ptr } = importer.importPointer(frame);
  const t1 = performance.now();
  if (i === 0) firstImportUs = (t1 - t0) * 1e3;
  else cachedImportUs += (t1 - t0) * 1e3 / (count - 1);
  const seq = frame.meta?.sequence ?? -1;
  sequences.push(seq);
  const { acquire, release } = frame.fences;
  release?.release();
  if (!acquire) throw new Error(`frame ${i} came without an acquire fence`);
  const point = acquire as VkSemaphoreFd;
  const { value } = point.describe();
  const cuSemaphore = cudaSemaphoreOf(point);
  point.release();
  const done = probe.poolWaitCheck({
    ptr,
    n: bytes,
    seed: seedOf(seq),
    cuSemaphore,
    value,
    index: i,
  });
  using event = CudaContextEvent.create(done);
  frame.setFences({ release: event }); // the slot goes home once the check has run
  frame.release();
  perFrame.push((performance.now() - t0) * 1e3);
  if (i === 10) fds10 = countOpenFds(), mem10 = probe.cuMemInfo().free;
}
const counts = probe.poolCounts(count);
let intact = 0;
let first: string | null = null;
for (let i = 0; i < count; i++) {
  if (sequences[i] !== i) first ??= `frame ${i} came as ${sequences[i]}`;
  else if (counts[i] !== 0n) first ??= `frame ${i}: ${counts[i]} bytes wrong`;
  else intact++;
}
perFrame.sort((a, b) => a - b);
const stats = importer.stats;
console.log(JSON.stringify({
  frames: count,
  intact,
  first,
  imports: stats.imports,
  hits: stats.hits,
  announced: channel.stats.announced,
  fenceImports,
  firstImportUs,
  cachedImportUs,
  perFrameUs: perFrame[Math.floor(perFrame.length / 2)],
  fds10,
  fdsEnd: countOpenFds(),
  mem10,
  memEnd: probe.cuMemInfo().free,
}));
channel.close();
importer.close();
if (timeline) probe.cuSemaphoreDestroy(timeline.cu), close(timeline.fd);
probe.close();
