// A 1080p NV12 frame into Deno's WebGPU through ffi/interop/webgpu.ts, next
// to what a CPU does with the same frame in the same run:
//   - NV12 to RGBA in TypeScript (BT.601 limited, fixed point): the baseline;
//   - a plain copy of the frame's bytes (`target.set`), the least a copy costs;
//   - an empty submit, waited for (queue.onSubmittedWorkDone): the wait's own cost;
//   - upload: one writeTexture a plane from the pool slot's mapping, waited for;
//   - upload + the WGSL conversion to rgba8unorm, waited for;
//   - both again, ten frames to one wait ("[x10]": divide by 10), as a pipeline
//     that does not wait for each frame runs them.
// On a machine without a GPU the adapter is llvmpipe, so "GPU" here is
// Mesa's CPU rasterizer: figures say what the bridge costs, not a GPU's speed.
// Its own process, as webgpu_bench.ts (see gpures_bench.ts on WebGPU and Workers).
//
//   deno bench --allow-ffi --allow-read --allow-env bench/interop_webgpu_bench.ts

import { FramePool, liveHandles, PixelFormat, type PlaneView, planeViews } from "../mod.ts";
import { WebGpuFrameUploader } from "../ffi/interop/webgpu.ts";

const W = 1920, H = 1080;
const perms = { ffi: true, read: true, env: true } as const;
const adapter = await navigator.gpu?.requestAdapter().catch(() => null);
const device = await adapter?.requestDevice().catch(() => null);

// A memfd-backed pool slot on Linux (the zero-copy path); a JS buffer elsewhere.
const pool = Deno.build.os === "linux"
  ? FramePool.create({ format: "NV12", width: W, height: H, slots: 1 })
  : null;
const frame = pool ? await pool.acquire() : null;
const views: PlaneView[] = pool && frame ? pool.planes(frame) : jsViews();
paint(views);

function jsViews(): PlaneView[] {
  const layout = PixelFormat.layout("NV12", W, H);
  return planeViews(new ArrayBuffer(layout.size), "NV12", layout.planes, W, H);
}

/** Luma ramps, chroma varies by block: nothing a branch predictor or a zero page shortcuts. */
function paint([y, uv]: PlaneView[]): void {
  for (let row = 0; row < H; row++) {
    for (let x = 0; x < W; x++) y.data[row * y.stride + x] = 16 + ((x + row) % 220);
  }
  for (let row = 0; row < H / 2; row++) {
    for (let x = 0; x < W; x++) uv.data[row * uv.stride + x] = 16 + ((x * 7 + row * 3) % 225);
  }
}

const rgbaOut = new Uint8ClampedArray(W * H * 4);

/** BT.601 limited range, 16.16 fixed point, two rows per chroma row. */
function nv12ToRgba([yp, uvp]: PlaneView[], out: Uint8ClampedArray): void {
  const y = yp.data, uv = uvp.data;
  for (let row = 0; row < H; row++) {
    const yAt = row * yp.stride, cAt = (row >> 1) * uvp.stride;
    let o = row * W * 4;
    for (let x = 0; x < W; x++) {
      const c = cAt + (x & ~1);
      const l = (y[yAt + x] - 16) * 76284; // 1.164 << 16
      const u = uv[c] - 128, v = uv[c + 1] - 128;
      out[o] = (l + 104595 * v) >> 16; // 1.596
      out[o + 1] = (l - 25625 * u - 53281 * v) >> 16; // 0.391, 0.813
      out[o + 2] = (l + 132252 * u) >> 16; // 2.018
      out[o + 3] = 255;
      o += 4;
    }
  }
}

// The frame's bytes as one span: the pool slot (or buffer) from Y's start to UV's end.
const frameBytes = new Uint8Array(
  views[0].data.buffer,
  views[0].data.byteOffset,
  views[1].data.byteOffset + views[1].data.byteLength - views[0].data.byteOffset,
);
const copyTarget = new Uint8Array(frameBytes.length);

Deno.bench({
  name: "CPU NV12 to RGBA in TypeScript (BT.601 limited, fixed point)",
  group: "1080p NV12 frame",
  baseline: true,
  permissions: perms,
  fn() {
    nv12ToRgba(views, rgbaOut);
  },
});

Deno.bench({
  name: "copy of the frame's bytes (target.set)",
  group: "1080p NV12 frame",
  permissions: perms,
  fn() {
    copyTarget.set(frameBytes);
  },
});

const uploader = device ? new WebGpuFrameUploader(device) : null;
const options = { format: "NV12", width: W, height: H, matrix: "bt601" } as const;

/** A GPU bench: `frames` frames through `step`, then one wait for the queue. */
function gpuBench(name: string, frames: number, step: () => void): void {
  Deno.bench({
    name: frames > 1 ? `${name} [x${frames}]` : name,
    group: "1080p NV12 frame",
    ignore: !uploader,
    permissions: perms,
    async fn() {
      for (let i = 0; i < frames; i++) step();
      device!.queue.submit([]); // writeTexture's copies run at the next submit
      await device!.queue.onSubmittedWorkDone();
    },
  });
}

const upload = () => void uploader!.upload(views, options);
const uploadAndConvert = () => void uploader!.convertToRgba(uploader!.upload(views, options));

gpuBench("empty submit, waited for (the wait's own cost)", 1, () => {});
gpuBench("upload: writeTexture per plane, waited for", 1, upload);
gpuBench("upload + WGSL conversion to rgba8unorm, waited for", 1, uploadAndConvert);
// Deno's onSubmittedWorkDone resolves on a poll, ~11 ms after the work: ten frames a wait
// show what a frame costs in a pipeline that does not wait for each one.
gpuBench("upload, ten frames a wait", 10, upload);
gpuBench("upload + WGSL conversion, ten frames a wait", 10, uploadAndConvert);

globalThis.addEventListener("unload", () => {
  uploader?.destroy();
  frame?.release();
  pool?.close();
  device?.destroy();
  if (liveHandles() !== 0) console.error(`gpures bench: ${liveHandles()} handles leaked`);
});
