// Plane views cached by buffer identity: a pool slot, or a buffer a channel
// received, is mapped once, and every later frame of it gets the same views.

import type { DmaBufHandle } from "./dma_buf.ts";
import { formatOfFourcc } from "./pixel_format.ts";
import { type PlaneView, viewsOf } from "./planes.ts";

/** Views by buffer id; a buffer's entry goes when its owner says the buffer is gone. */
export class BufferViews {
  readonly #views = new Map<bigint, PlaneView[]>();

  /**
   * `limit`: the most buffers alive at once (a pool's slots). A slot whose
   * memory was given away gets a new buffer, so views past the limit are of
   * buffers that are gone: the oldest go first.
   */
  constructor(readonly limit = Infinity) {}

  /** The frame's plane views: made (one mapping) for its buffer's first frame, reused after. */
  of(frame: DmaBufHandle): PlaneView[] {
    const id = frame.bufferId;
    if (id === null) return frame.planes();
    let views = this.#views.get(id);
    if (!views) {
      const d = frame.describe();
      // A transferred buffer keeps the mapping when the frame's wrapper is released.
      const memories = d.fds.map((_, i) => {
        const buffer = frame.map(i).transfer();
        return { buffer, byteOffset: 0, byteLength: buffer.byteLength };
      });
      const format = formatOfFourcc(d.fourcc)?.id ?? 0;
      views = viewsOf(
        d.planes.map((p) => memories[p.objectIndex]),
        format,
        d.planes,
        d.width,
        d.height,
      );
      this.#views.set(id, views);
      if (this.#views.size > this.limit) this.#views.delete(this.#views.keys().next().value!);
    }
    return views;
  }

  /** Drops a buffer's views: the mapping ends when they are collected. */
  forget(id: bigint): void {
    this.#views.delete(id);
  }

  clear(): void {
    this.#views.clear();
  }
}
