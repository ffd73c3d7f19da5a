// The decoder of examples/worker_pipeline.ts, in a Worker: decodes frames
// into a ring of slots and posts each one to the main thread as a raw handle.
// A slot is reused once the frame's keep-alive runs here, which happens when
// the main thread makes the frame's last release (the event reaches this
// isolate through its event queue). The worker says "done" only when every
// keep-alive ran, so none is left waiting on an isolate that is gone.
/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
import { CpuBytes, DmaBufHandle, type GpuResource } from "../mod.ts";
import { AB24, memfd } from "./_memfd.ts";

interface Start {
  width: number;
  height: number;
  frames: number;
  /** SharedArrayBuffers the main thread made and keeps: CpuBytes slots. */
  slots?: SharedArrayBuffer[];
  /** Otherwise this many memfd-backed DmaBufHandle slots, made here. */
  dmabufs?: number;
}

self.onmessage = async (e: MessageEvent<Start>) => {
  const { width, height, frames } = e.data;
  const bytes = width * height * 4;
  const free: number[] = [];
  let wake: (() => void) | undefined;
  let keepAlivesRun = 0;
  const release = (slot: number) => {
    keepAlivesRun++;
    free.push(slot);
    wake?.();
  };
  const nextFree = async (): Promise<number> => {
    while (!free.length) await new Promise<void>((r) => (wake = r));
    return free.shift()!;
  };

  // The slots: shared memory the main thread also holds, or memfds this worker made.
  const views: Uint8Array[] = [];
  const owners: DmaBufHandle[] = [];
  if (e.data.slots) {
    for (const sab of e.data.slots) views.push(new Uint8Array(sab));
  } else {
    for (let i = 0; i < e.data.dmabufs!; i++) {
      const slot = DmaBufHandle.create(layout(memfd(bytes)), { takeOwnership: true });
      owners.push(slot);
      views.push(new Uint8Array(slot.map())); // this worker's own CPU access to the slot
    }
  }
  views.forEach((_, i) => free.push(i));

  function layout(fd: number): Parameters<typeof DmaBufHandle.create>[0] {
    return {
      fds: [fd],
      fourcc: AB24,
      modifier: 0n,
      width,
      height,
      planes: [{ objectIndex: 0, offset: 0, stride: width * 4 }],
    };
  }

  for (let n = 0; n < frames; n++) {
    const slot = await nextFree();
    const pixels = new Uint32Array(views[slot].buffer, views[slot].byteOffset, width * height);
    pixels.fill(0xff000000 | (n & 0xff) << 8 | slot); // "decoding": frame number and slot
    const keepAlive = { release: () => release(slot) };
    let frame: GpuResource<unknown>;
    if (owners.length) {
      // A handle of its own per frame (the same memory: its fd is duplicated).
      frame = DmaBufHandle.create(layout(owners[slot].describe().fds[0]), { keepAlive });
    } else {
      frame = CpuBytes.create(
        { data: views[slot], rowPitch: width * 4, format: "RgbaU8", width, height },
        { keepAlive },
      );
    }
    self.postMessage({ n, raw: frame.intoRaw() }); // the main thread adopts it
  }
  while (keepAlivesRun < frames) await new Promise<void>((r) => (wake = r));
  for (const slot of owners) slot.release();
  self.postMessage({ done: true, keepAlivesRun });
  self.close();
};
