// The consumer process of tests/gpu/gpu_pool_cuda_test.ts: receives
// VkOpaqueFd frames of a VulkanFramePool, imports each slot once into CUDA
// (CudaImporter) and has a CUDA kernel count the bytes unlike the pattern the
// producer's kernel wrote (seed from the frame's sequence). Nothing is copied
// to the host. Prints {"frames","intact","corrupt","first","imports","hits",
// "announced","memFreeBefore","memFreeAfter"} as one JSON line.
//
//   deno run --allow-ffi --allow-read --allow-env <this> <path> <count> <bytes>

import { Channel, type VkOpaqueFd } from "../../mod.ts";
import { CudaImporter } from "../../ffi/interop/cuda.ts";
import { openProbe } from "./probe.ts";
import { seedOf } from "../_support/gpu_pattern.ts";

const [path, countText, bytesText] = Deno.args;
const count = Number(countText), bytes = Number(bytesText);
const opened = openProbe();
if (!opened.probe) throw new Error(opened.reason);
const probe = opened.probe;
const importer = CudaImporter.create({});
const channel = await Channel.connect(path, { wait: 5000 });
let intact = 0, corrupt = 0;
let first: string | null = null;
for (let i = 0; i < count; i++) {
  const frame = await channel.receive() as VkOpaqueFd | null;
  if (frame === null) throw new Error(`the producer ended after ${i} frames`);
  const { ptr, handle } = importer.import(frame);
  handle.release();
  const seq = frame.meta?.sequence ?? -1;
  const wrong = probe.cuCheck(ptr, bytes, seedOf(seq));
  if (seq !== i) corrupt++, first ??= `frame ${i} came as ${seq}`;
  else if (wrong !== 0n) corrupt++, first ??= `frame ${i}: ${wrong} bytes wrong`;
  else intact++;
  frame.release();
}
const stats = importer.stats;
console.log(JSON.stringify({
  frames: count,
  intact,
  corrupt,
  first,
  imports: stats.imports,
  hits: stats.hits,
  announced: channel.stats.announced,
}));
channel.close();
importer.close();
probe.close();
