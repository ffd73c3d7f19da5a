// The Deno side of gpures's benchmarks: what each operation costs from
// TypeScript, next to the empty FFI call that every one of them pays at least
// once. native/bench/bench.c measures the same operations in C, and
// bench/run.ts (`deno task bench`) runs both and prints their ratios.
//
//   deno bench --allow-ffi --allow-read --allow-env bench/gpures_bench.ts
//
// A name ending in "[xN]" runs the operation N times per iteration (so the
// harness's own per-iteration cost stays out of figures of a few ns);
// bench/run.ts divides by N. Timings live here, never in the tests.
//
// WgpuTexture has its own file, webgpu_bench.ts, run in its own process: Deno
// 2.9.6 can corrupt its heap at exit when a WebGPU device and a Worker were
// both alive (reproduced without gpures), and this file needs a Worker.

import {
  CpuBytes,
  CudaPtr2D,
  DmaBufHandle,
  GlTextureHandle,
  GpuResource,
  liveHandles,
  VkBufferHandle,
  VkImage,
} from "../mod.ts";
import { codecOf } from "../ffi/table/codec.ts";
import { lib } from "../ffi/load/load.ts";
import { benchFfiFloor } from "./_ffi_floor.ts";
import { benchDesc } from "./_fixtures.ts";
import { closeFd } from "./_memfd.ts";

const s = lib();
const perms = { ffi: true, read: true, env: true } as const;

// ------------------------------------------------------------------- floor

// The descriptors: tools/fixtures.ts, the ones native/bench/bench.c measures.
const vkBufferDesc = benchDesc("VkBufferHandle") as never;
const cpuDesc = benchDesc("CpuBytes") as never;
const vkImageDesc = benchDesc("VkImage") as never;
const glDesc = benchDesc("GlTextureHandle") as never;
const cudaDesc = benchDesc("CudaPtr2D") as never;
const dmaFds: number[] = [];
// NV12 in one memfd (memfd() is -1 off Linux).
const dmaDesc = benchDesc("DmaBufHandle", { shape: "oneObject", fds: dmaFds });

const anchor = VkBufferHandle.create(vkBufferDesc);
const anchorHandle = anchor.unsafeHandle;
const outBuffer = new ArrayBuffer(8);
const u32Out = new Uint32Array(outBuffer, 0, 1);
const u32At = Deno.UnsafePointer.of(outBuffer);

benchFfiFloor("floor", perms);

Deno.bench({
  name: "empty FFI call pair: 2 x gpures_abi_version() [x1000]",
  group: "floor",
  permissions: perms,
  fn() {
    let acc = 0;
    for (let i = 0; i < 1000; i++) acc += s.gpures_abi_version() + s.gpures_abi_version();
    if (acc === 0) throw new Error("unreachable");
  },
});

Deno.bench({
  name: "empty FFI call, one u64 arg: gpures_refcount(handle, out) [x1000]",
  group: "floor",
  permissions: perms,
  fn() {
    let acc = 0;
    for (let i = 0; i < 1000; i++) acc += s.gpures_refcount_at(anchorHandle, u32At);
    if (acc !== 0 || u32Out[0] !== 1) throw new Error("refcount failed");
  },
});

// ------------------------------------------------------------ clone+release

Deno.bench({
  name: "resource.clone().release() [x1000]",
  group: "clone+release",
  baseline: true,
  permissions: perms,
  fn() {
    for (let i = 0; i < 1000; i++) anchor.clone().release();
  },
});

Deno.bench({
  name: "raw FFI: gpures_clone(h) + gpures_release(h) [x1000]",
  group: "clone+release",
  permissions: perms,
  fn() {
    for (let i = 0; i < 1000; i++) {
      s.gpures_clone(anchorHandle);
      s.gpures_release(anchorHandle);
    }
  },
});

// Wrappers that outlive the current microtask checkpoint: the finalization
// safety net registers and unregisters each of them.
Deno.bench({
  name: "clone(), release() after a microtask checkpoint [x1000]",
  group: "clone+release",
  permissions: perms,
  async fn() {
    const clones = [];
    for (let i = 0; i < 1000; i++) clones.push(anchor.clone());
    await null;
    for (const c of clones) c.release();
  },
});

// ------------------------------------------------- create+describe+release

// One function per family (not one shared loop body), so each bench's call
// sites see one class, as a pipeline stage handling one kind does.
function createBench(name: string, reps: number, fn: () => void, baseline = false): void {
  Deno.bench({
    name: `${name} [x${reps}]`,
    group: "create+describe+release",
    baseline,
    permissions: perms,
    fn,
  });
}

createBench("CpuBytes (64x64 JS buffer, aliased)", 100, () => {
  for (let i = 0; i < 100; i++) {
    const r = CpuBytes.create(cpuDesc);
    r.describe();
    r.release();
  }
});

createBench("VkImage", 100, () => {
  for (let i = 0; i < 100; i++) {
    const r = VkImage.create(vkImageDesc);
    r.describe();
    r.release();
  }
}, true);

createBench("VkBufferHandle", 100, () => {
  for (let i = 0; i < 100; i++) {
    const r = VkBufferHandle.create(vkBufferDesc);
    r.describe();
    r.release();
  }
});

createBench("GlTextureHandle", 100, () => {
  for (let i = 0; i < 100; i++) {
    const r = GlTextureHandle.create(glDesc);
    r.describe();
    r.release();
  }
});

// DmaBufHandle pays system calls (fcntl, fstat, dup, close) that cost more than
// the budget here, so it is also measured through the raw calls on the same
// descriptor bytes. The two alternate inside each sample (each bench times its
// own half), so both see the same machine: system call times drift a lot.
function dmaBufWrapped(n: number): void {
  for (let i = 0; i < n; i++) {
    const r = DmaBufHandle.create(dmaDesc as never);
    r.describe();
    r.release();
  }
}

const dmaBytes = new Uint8Array(codecOf(DmaBufHandle.kindId).kind.descSize);
codecOf(DmaBufHandle.kindId).encode(dmaDesc, dmaBytes);
const dmaOut = new Uint8Array(dmaBytes.length);
const handleOut = new BigUint64Array(1);
function dmaBufRaw(n: number): void {
  for (let i = 0; i < n; i++) {
    if (s.gpures_create(DmaBufHandle.kindId, dmaBytes, null, handleOut) !== 0) throw new Error();
    if (s.gpures_describe(handleOut[0], dmaOut, dmaOut.length) !== 0) throw new Error();
    if (s.gpures_release(handleOut[0]) !== 0) throw new Error();
  }
}

// A long warm-up: the wrapped path settles only after some ten thousand creates.
const dmaRuns = { warmup: 300, n: 600 };

Deno.bench({
  name: "DmaBufHandle (memfd, duplicated) [x50]",
  group: "create+describe+release",
  permissions: perms,
  ...dmaRuns,
  fn(b) {
    dmaBufRaw(50);
    b.start();
    dmaBufWrapped(50);
    b.end();
  },
});

Deno.bench({
  name: "DmaBufHandle, raw FFI calls on the same descriptor [x50]",
  group: "create+describe+release",
  permissions: perms,
  ...dmaRuns,
  fn(b) {
    dmaBufWrapped(50);
    b.start();
    dmaBufRaw(50);
    b.end();
  },
});

createBench("CudaPtr2D (descriptor only)", 100, () => {
  for (let i = 0; i < 100; i++) {
    const r = CudaPtr2D.create(cudaDesc);
    r.describe();
    r.release();
  }
});

// ------------------------------------------------------ typed against JSON

const image = VkImage.create(vkImageDesc);

Deno.bench({
  name: "VkImage describe() [x100]",
  group: "describe",
  baseline: true,
  permissions: perms,
  fn() {
    for (let i = 0; i < 100; i++) image.describe();
  },
});

Deno.bench({
  name: "VkImage toJSON() [x100]",
  group: "describe",
  permissions: perms,
  fn() {
    for (let i = 0; i < 100; i++) image.toJSON();
  },
});

// ------------------------------------------------ CpuBytes against copying

for (const [label, width, height] of [["1080p", 1920, 1080], ["4K", 3840, 2160]] as const) {
  const pixels = new Uint8Array(width * height * 4).fill(0x5a);
  const target = new Uint8Array(pixels.length).fill(1);
  Deno.bench({
    name: `CpuBytes.create + release, ${label} RGBA [x100]`,
    group: `frame ${label}`,
    baseline: true,
    permissions: perms,
    fn() {
      for (let i = 0; i < 100; i++) {
        CpuBytes.create({ data: pixels, rowPitch: width * 4, format: "RgbaU8", width, height })
          .release();
      }
    },
  });
  Deno.bench({
    name: `copy into a new buffer: pixels.slice(), ${label} RGBA`,
    group: `frame ${label}`,
    permissions: perms,
    fn() {
      if (pixels.slice().length !== pixels.length) throw new Error("unreachable");
    },
  });
  Deno.bench({
    name: `copy into a reused buffer: target.set(pixels), ${label} RGBA`,
    group: `frame ${label}`,
    permissions: perms,
    fn() {
      target.set(pixels);
    },
  });
}

// -------------------------------------------------------- Worker hand-off

const worker = new Worker(new URL("./_handoff_worker.ts", import.meta.url), { type: "module" });
let answer: ((v: unknown) => void) | undefined;
worker.onmessage = (e) => answer!(e.data);
const ask = (message: unknown, transfer: Transferable[] = []) =>
  new Promise((resolve) => {
    answer = resolve;
    worker.postMessage(message, transfer);
  });
await ask("ready");

const frameBytes = new Uint8Array(1920 * 1080 * 4).fill(0x5a);
const frame = CpuBytes.create({
  data: frameBytes,
  rowPitch: 1920 * 4,
  format: "RgbaU8",
  width: 1920,
  height: 1080,
});

Deno.bench({
  name: "post frame.clone().intoRaw(); the Worker fromRaw()s and releases; round trip",
  group: "hand-off",
  baseline: true,
  permissions: perms,
  async fn() {
    if (await ask(frame.clone().intoRaw()) !== "released") throw new Error("hand-off failed");
  },
});

// What the hand-off does besides the message, in one isolate: the handle's share.
Deno.bench({
  name: "the same handle work without the message: clone, intoRaw, fromRaw, release [x100]",
  group: "hand-off",
  permissions: perms,
  fn() {
    for (let i = 0; i < 100; i++) GpuResource.fromRaw(frame.clone().intoRaw()).release();
  },
});

// Servers with many streams can batch: one message carries many raw handles.
const batch = new BigUint64Array(16);
Deno.bench({
  name: "post 16 raw handles in one BigUint64Array; round trip, per handle [x16]",
  group: "hand-off",
  permissions: perms,
  async fn() {
    for (let i = 0; i < 16; i++) batch[i] = frame.clone().intoRaw();
    if (await ask(batch) !== "released 16") throw new Error("hand-off failed");
  },
});

Deno.bench({
  name: "post a number; the Worker echoes it; round trip (the messaging floor)",
  group: "hand-off",
  permissions: perms,
  async fn() {
    if (await ask(7) !== 7) throw new Error("echo failed");
  },
});

Deno.bench({
  name: "post the 1080p frame's bytes (structured clone copy); round trip",
  group: "hand-off",
  permissions: perms,
  async fn() {
    if (await ask(frameBytes) !== frameBytes.length) throw new Error("copy failed");
  },
});

// Nothing below runs until every bench above finished: leave no handle behind.
globalThis.addEventListener("unload", () => {
  frame.release();
  image.release();
  anchor.release();
  for (const fd of dmaFds) closeFd(fd);
  worker.terminate();
  if (liveHandles() !== 0) console.error(`gpures bench: ${liveHandles()} handles leaked`);
});
