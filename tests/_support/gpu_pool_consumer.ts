// A consumer process for tests/gpu_pool_test.ts: connects to the producer,
// imports each VkOpaqueFd frame of a VulkanFramePool into its own VkDevice
// (device B of the test helper's context) with a VulkanImporter, copies the
// imported buffer out through Vulkan and checks the pattern the producer's
// Vulkan copy wrote (gpuPattern). Prints one JSON line: {"frames", "intact",
// "corrupt", "first", "imports", "hits", "announced"}, then checks that every
// import and every helper object is gone.
//
//   deno run --allow-ffi --allow-read --allow-env <this> <path> <count> <bytes>

import { Channel, type VkOpaqueFd } from "../../mod.ts";
import { VulkanImporter } from "../../ffi/interop/vulkan.ts";
import { probe } from "./vulkan_helper.ts";
import { helperCheck, HelperContext } from "./vulkan_context.ts";
import { gpuPattern } from "./gpu_pattern.ts";

const [path, countText, bytesText] = Deno.args;
const count = Number(countText), bytes = Number(bytesText);
const vk = probe("").helper!;
const ctx = new HelperContext(vk);
const importer = VulkanImporter.create({
  instance: ctx.instance,
  physicalDevice: ctx.physicalDevice,
  device: ctx.device(1),
  image: false,
  buffer: true,
});
const channel = await Channel.connect(path, { wait: 5000 });
let intact = 0, corrupt = 0;
let first: string | null = null;
const out = new Uint8Array(bytes);
for (let i = 0; i < count; i++) {
  const frame = await channel.receive() as VkOpaqueFd | null;
  if (frame === null) throw new Error(`the producer ended after ${i} frames`);
  const { buffer } = importer.import(frame);
  helperCheck(vk, vk.gvk_buffer_copy(ctx.ptr, 1, buffer, 0n, out, BigInt(bytes), 0), "read back");
  const seq = frame.meta?.sequence ?? -1;
  const wrong = gpuPattern(out, seq);
  if (seq !== i) corrupt++, first ??= `frame ${i} came as ${seq}`;
  else if (wrong) corrupt++, first ??= wrong;
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
ctx.assertNothingLive();
ctx.close();
