// What an EGL import costs per frame, next to its floor, in one run:
//   (a) an empty FFI call, gpures_abi_version(): what every call from Deno pays;
//   (b) a cached import: EglImporter.import() of a pool frame whose slot was
//       imported before (the cache lookup by buffer id, one FFI call, the
//       result object);
//   (c) an uncached import: forget() then import(), so each one frees the last
//       EGLImage and texture and makes new ones (eglCreateImageKHR over the
//       memfd, glGenTextures, glEGLImageTargetTexture2DOES).
// Each figure is the median over batches of the per-call time (batch time / calls).
// Needs the test GL library (tests/gpu_helpers/gl) and an EGL that imports dma-bufs (Mesa 25).
//
//   deno run --allow-ffi --allow-read --allow-env bench/interop_egl_bench.ts

import { FramePool } from "../mod.ts";
import { EglImporter } from "../ffi/interop/egl.ts";
import { lib } from "../ffi/load/load.ts";
import { helperLib } from "../tests/_support/helper_lib.ts";

const gl = Deno.dlopen(helperLib("libgpures_test_gl.so"), {
  gpures_test_gl_init: { parameters: [], result: "i32" },
  gpures_test_gl_display: { parameters: [], result: "pointer" },
  gpures_test_gl_renderer: { parameters: [], result: "pointer" },
  gpures_test_gl_get_proc_address: { parameters: [], result: "pointer" },
}).symbols;
if (gl.gpures_test_gl_init() !== 0) throw new Error("no EGL surfaceless GLES context");

/** Median over `batches` of the per-call time of `fn` run `calls` times, in ns. */
function median(calls: number, batches: number, fn: () => void): number {
  for (let i = 0; i < calls; i++) fn(); // warm up: JIT, caches, the driver's first-time work
  const times: number[] = [];
  for (let b = 0; b < batches; b++) {
    const start = performance.now();
    for (let i = 0; i < calls; i++) fn();
    times.push(((performance.now() - start) * 1e6) / calls);
  }
  times.sort((x, y) => x - y);
  return times[times.length >> 1];
}

const s = lib();
const rows: [string, number][] = [];
rows.push(["empty FFI call: gpures_abi_version()", median(1000, 41, () => s.gpures_abi_version())]);

for (const [width, height] of [[64, 64], [1920, 1080]]) {
  using pool = FramePool.create({ format: "RgbaU8", width, height, slots: 3 });
  using importer = EglImporter.create({
    display: gl.gpures_test_gl_display(),
    getProcAddress: gl.gpures_test_gl_get_proc_address(),
  });
  using frame = await pool.acquire();
  importer.import(frame);
  rows.push([
    `cached import, RgbaU8 ${width}x${height}`,
    median(1000, 41, () => importer.import(frame)),
  ]);
  rows.push([
    `uncached import (forget + import), RgbaU8 ${width}x${height}`,
    median(50, 21, () => {
      importer.forget(frame);
      importer.import(frame);
    }),
  ]);
  const stats = importer.stats;
  if (stats.imports !== stats.freed + stats.cached) throw new Error("imports are unaccounted for");
}

console.log(`EGL import on ${Deno.UnsafePointerView.getCString(gl.gpures_test_gl_renderer()!)}`);
const base = rows[0][1];
for (const [name, ns] of rows) {
  console.log(`${name.padEnd(58)} ${ns.toFixed(0).padStart(8)} ns  ${(ns / base).toFixed(1)}x`);
}
