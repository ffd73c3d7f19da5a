// Plane views cached by buffer identity: a pool slot, or a buffer a channel
// received, is mapped once, and every later frame of it gets the same views.
// FramePool and Channel keep one each; a Worker given raw frames keeps its own.

import { DmaBufHandle } from "../kinds/dma_buf.ts";
import { GpuResource } from "../kinds/gpu_resource.ts";
import { WrongKindError } from "../errors.ts";
import { formatOfFourcc } from "../map/pixel_format.ts";
import { type PlaneView, viewsOf } from "../map/planes.ts";

/**
 * Typed views of frames' planes, made once per buffer (`bufferId`)
 * and given again for every later frame of that buffer: no `mmap` per frame.
 * `FramePool.planes()` and `Channel.planes()` use one; code that gets
 * frames another way (a Worker adopting raw handles) keeps its own. Forget a
 * buffer when its owner says it is gone (a channel's `buffergone` event).
 *
 * @example
 * ```ts
 * import { FramePool, PlaneCache } from "@gpures/gpures";
 * using pool = FramePool.create({ format: "NV12", width: 64, height: 32, slots: 1 });
 * const cache = new PlaneCache();
 * using first = pool.tryAcquire()!;
 * const views = cache.of(first);
 * first.release();
 * using second = pool.tryAcquire()!;
 * console.log(cache.of(second) === views); // true: the same slot, the same views
 * ```
 */
export class PlaneCache {
  readonly #views = new Map<bigint, PlaneView[]>();

  /**
   * Makes an empty cache.
   *
   * @param limit The most buffers alive at once (a pool's slots). A slot whose
   * memory was given away gets a new buffer, so views past the limit are of
   * buffers that are gone: the oldest go first.
   */
  constructor(readonly limit: number = Infinity) {}

  /**
   * The frame's plane views: made (one mapping) for its buffer's first frame,
   * reused after. Views whose memory was moved away (a BYOB read into one,
   * `transfer()`, `postMessage` with transfer) are made again over the same
   * memory, so a detached or empty view is never handed out; fetch them again
   * after each such read. A handle of another kind (a VkOpaqueFd from a
   * channel) has no planes to view: WrongKindError, field "frame".
   */
  of(frame: GpuResource<unknown>): PlaneView[] {
    if (!(frame instanceof DmaBufHandle)) throw notFrame(frame);
    const id = frame.bufferId;
    if (id === null) return frame.planes();
    let views = this.#views.get(id);
    if (views === undefined || detached(views)) {
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
      // Made again for a known buffer: it keeps its place (the moved buffer keeps the old mapping
      // alive until it is collected). A new buffer may push the oldest out.
      this.#views.set(id, views);
      if (this.#views.size > this.limit) this.#views.delete(this.#views.keys().next().value!);
    }
    return views;
  }

  /** Drops a buffer's views: the mapping ends when they are collected. */
  forget(id: bigint): void {
    this.#views.delete(id);
  }

  /** Drops every buffer's views. */
  clear(): void {
    this.#views.clear();
  }
}

/**
 * Whether any view's buffer was detached: its typed array then reads as 0
 * bytes long, which a plane view never is otherwise. No allocation: this runs
 * on every planes() call.
 */
function detached(views: PlaneView[]): boolean {
  for (let i = 0; i < views.length; i++) if (views[i].data.byteLength === 0) return true;
  return false;
}

function notFrame(frame: unknown): WrongKindError {
  const what = frame instanceof GpuResource ? `a ${frame.kind}` : `${typeof frame}`;
  return new WrongKindError(
    `Cannot view planes: the frame is ${what}, not a DmaBufHandle`,
    "WRONG_KIND",
    "frame",
  );
}
