// WgpuTexture create+describe+release, when Deno has a WebGPU adapter. Its own
// file and process (bench/run.ts runs it apart): see gpures_bench.ts.
//
//   deno bench --allow-ffi --allow-read --allow-env bench/webgpu_bench.ts

import { liveHandles, WgpuTexture } from "../mod.ts";
import { benchDesc } from "./_fixtures.ts";

const adapter = await navigator.gpu?.requestAdapter().catch(() => null);
const device = await adapter?.requestDevice().catch(() => null);
// The texture tools/fixtures.ts describes, as native/bench/bench.c's WgpuTexture.
const desc = benchDesc("WgpuTexture", { device: device ?? undefined }) as { texture?: GPUTexture };
const texture = desc.texture;

Deno.bench({
  name: "WgpuTexture [x100]",
  group: "create+describe+release",
  ignore: !texture,
  permissions: { ffi: true, read: true, env: true },
  fn() {
    for (let i = 0; i < 100; i++) {
      const r = WgpuTexture.create(desc as { texture: GPUTexture });
      r.describe();
      r.release();
    }
  },
});

globalThis.addEventListener("unload", () => {
  texture?.destroy();
  device?.destroy();
  if (liveHandles() !== 0) console.error(`gpures bench: ${liveHandles()} handles leaked`);
});
