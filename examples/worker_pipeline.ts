// Decode in a Worker, consume on the main thread: frames cross as raw
// handles, never as bytes.
//
//   deno run --allow-ffi --allow-read examples/worker_pipeline.ts           (CpuBytes over SharedArrayBuffers)
//   deno run --allow-ffi --allow-read examples/worker_pipeline.ts --dmabuf  (memfd-backed DmaBufHandles, Linux)
//
// The worker (examples/_decode_worker.ts) writes each frame into a slot of a
// ring, makes a handle whose keep-alive frees the slot, and posts
// `frame.intoRaw()`. This thread adopts it with `GpuResource.fromRaw()`,
// reads the pixels in place (the CpuBytes' own address, or `map()` of the
// DmaBufHandle's fd) and releases it; the release reaches the worker's
// isolate, where the keep-alive runs, once per frame.
//
// The rules this follows (tests/worker_test.ts pins them):
//  - A raw handle belongs to whoever adopted it. An isolate that ends does not
//    release what it held (no finalizers run), so a handle given to a Worker
//    that dies stays live: keep the raw value until the Worker says it is
//    done, and reclaim one it never released with fromRaw(raw).release().
//  - Memory a handle aliases must outlive the handle wherever it goes:
//    SharedArrayBuffers are made here and kept here, so a dying worker cannot
//    take the frames' memory with it; a DmaBufHandle's memory lives as long
//    as any fd or mapping of it, in any thread or process.
//  - A keep-alive runs in the isolate that made it: that isolate must live
//    until its frames are released (the worker waits for its keep-alives).

import { CpuBytes, DmaBufHandle, GpuResource, liveHandles, liveMappings } from "../mod.ts";

const WIDTH = 1280, HEIGHT = 720, FRAMES = 120, SLOTS = 3;
const dmabuf = Deno.args.includes("--dmabuf");
if (dmabuf && Deno.build.os !== "linux") throw new Error("--dmabuf needs Linux (memfds)");

const worker = new Worker(new URL("./_decode_worker.ts", import.meta.url), { type: "module" });
const slots = dmabuf
  ? undefined
  : Array.from({ length: SLOTS }, () => new SharedArrayBuffer(WIDTH * HEIGHT * 4));
const slotAddresses = new Set(
  slots?.map((s) => BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(new Uint8Array(s))))),
);

let consumed = 0;
let inPlace = 0;
const started = performance.now();
const done = new Promise<number>((resolve, reject) => {
  worker.onerror = (e) => reject(e.error ?? new Error(e.message));
  worker.onmessage = (e: MessageEvent<{ n: number; raw: bigint } | { keepAlivesRun: number }>) => {
    if ("keepAlivesRun" in e.data) return resolve(e.data.keepAlivesRun);
    const { n, raw } = e.data;
    const frame = GpuResource.fromRaw(raw); // this thread owns the reference now
    try {
      let pixels: Uint32Array;
      if (frame instanceof DmaBufHandle) {
        pixels = new Uint32Array(frame.map()); // the memfd's pages, mapped here
      } else if (frame instanceof CpuBytes) {
        const { ptr, size } = frame.describe();
        if (slotAddresses.has(ptr)) inPlace++; // the very memory of one of our slots
        const p = Deno.UnsafePointer.create(ptr)!;
        pixels = new Uint32Array(Deno.UnsafePointerView.getArrayBuffer(p, Number(size)));
      } else {
        throw new Error(`unexpected ${frame.kind}`);
      }
      // "Render": check the first and the last pixel carry this frame's number.
      const want = (n & 0xff) << 8;
      if ((pixels[0] & 0xff00) !== want || (pixels[pixels.length - 1] & 0xff00) !== want) {
        throw new Error(`frame ${n} has the wrong pixels`);
      }
      consumed++;
    } finally {
      frame.release(); // unmaps a DmaBufHandle; the worker's keep-alive frees the slot
    }
  };
});

worker.postMessage({ width: WIDTH, height: HEIGHT, frames: FRAMES, slots, dmabufs: SLOTS });
const keepAlivesRun = await done;
worker.terminate();
const ms = performance.now() - started;

console.log(
  `${
    dmabuf ? "DmaBufHandle (memfd)" : "CpuBytes (SharedArrayBuffer)"
  } frames, ${WIDTH}x${HEIGHT} RGBA`,
);
console.log(
  `  decoded in a worker, consumed here: ${consumed} of ${FRAMES} in ${ms.toFixed(0)} ms`,
);
if (!dmabuf) {
  console.log(`  read in place (the slot's own address, no copy): ${inPlace} of ${consumed}`);
}
console.log(`  keep-alives run in the worker: ${keepAlivesRun} (one per frame)`);
console.log(`  live handles now: ${liveHandles()}, live mappings: ${liveMappings()}`);
if (consumed !== FRAMES || keepAlivesRun !== FRAMES || liveHandles() !== 0) Deno.exit(1);
