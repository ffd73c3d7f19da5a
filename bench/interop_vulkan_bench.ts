// The Vulkan importer's per-frame cost from Deno, each next to its floor
// measured in the same run (medians of batches):
//   empty   an FFI call that does nothing (gpures_abi_version): the floor;
//   cached  VulkanImporter.import() of a frame whose buffer was imported
//           before (every frame of a pool slot after the first): the cache
//           lookup, the frame checks and decoding the result;
//   first   forget() then import(): a real import on lavapipe (dup the memfd,
//           vkGetMemoryFdPropertiesKHR, vkCreateImage, vkAllocateMemory with
//           the fd, vkBindImageMemory) plus freeing the previous one.
//
//   cmake --build build && deno run -A bench/interop_vulkan_bench.ts
//
// Needs build/test-helpers/libgpures_test_vulkan.so for a VkDevice (lavapipe will do).

import { FramePool } from "../mod.ts";
import { native } from "../ffi/load/native.ts";
import { VulkanImporter } from "../ffi/interop/vulkan.ts";
import { helperLib } from "../tests/_support/helper_lib.ts";

const helper = Deno.dlopen(
  helperLib("libgpures_test_vulkan.so"),
  {
    gvk_open: { parameters: [], result: "pointer" },
    gvk_close: { parameters: ["pointer"], result: "u32" },
    gvk_device_name: { parameters: ["pointer"], result: "pointer" },
    gvk_instance: { parameters: ["pointer"], result: "pointer" },
    gvk_physical_device: { parameters: ["pointer"], result: "pointer" },
    gvk_device: { parameters: ["pointer", "u32"], result: "pointer" },
  } as const,
).symbols;

/** Median nanoseconds per call over `samples` batches of `batch` calls. */
function median(batch: number, samples: number, fn: () => void): number {
  for (let i = 0; i < batch; i++) fn(); // warm up (JIT, caches)
  const per: number[] = [];
  for (let s = 0; s < samples; s++) {
    const t0 = performance.now();
    for (let i = 0; i < batch; i++) fn();
    per.push(((performance.now() - t0) * 1e6) / batch);
  }
  per.sort((a, b) => a - b);
  return per[Math.floor(per.length / 2)];
}

const ctx = helper.gvk_open();
if (ctx === null) throw new Error("no Vulkan device (install mesa-vulkan-drivers)");
const device = Deno.UnsafePointerView.getCString(helper.gvk_device_name(ctx)!);
const importer = VulkanImporter.create({
  instance: helper.gvk_instance(ctx),
  physicalDevice: helper.gvk_physical_device(ctx),
  device: helper.gvk_device(ctx, 0),
});
const pool = FramePool.create({ format: "NV12", width: 1920, height: 1080, slots: 3 });
const frame = pool.tryAcquire()!;
importer.import(frame);

const s = native();
const results = {
  empty: median(10_000, 51, () => s.gpures_abi_version()),
  cached: median(10_000, 51, () => importer.import(frame)),
  first: median(50, 21, () => {
    importer.forget(frame);
    importer.import(frame);
  }),
};

console.log(`Vulkan importer on ${device}, NV12 1920x1080 frames of a FramePool (medians):`);
console.log(`  empty FFI call          ${results.empty.toFixed(0).padStart(8)} ns`);
console.log(`  cached import()         ${results.cached.toFixed(0).padStart(8)} ns`);
console.log(`  first import (+forget)  ${results.first.toFixed(0).padStart(8)} ns`);
const stats = importer.stats;
console.log(`  stats: ${JSON.stringify(stats)}`);

frame.release();
importer.close();
pool.close();
helper.gvk_close(ctx);
if (results.cached > 2000) {
  console.error(`cached import() takes ${results.cached.toFixed(0)} ns: above the 2 µs target`);
  Deno.exit(1);
}
