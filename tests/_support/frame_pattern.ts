// A frame's contents that say which frame they are: every 32-bit word of
// every row is a function of the frame's sequence number, its plane, row and
// column, and the frame's metadata carries the sequence and a checksum of
// all of it. A slot handed out again while a consumer still reads it shows
// up as the pattern (and checksum) of another frame.

import type { DmaBufHandle, FrameMeta, FrameMetaInit, FramePool, PlaneView } from "../../mod.ts";

function rowWords(view: PlaneView, y: number): Uint32Array {
  const data = view.data;
  const bytes = view.bytesPerRow;
  const at = data.byteOffset + y * view.stride * data.BYTES_PER_ELEMENT;
  if (at % 4 !== 0 || bytes % 4 !== 0) throw new Error("rows are not 4-byte aligned");
  return new Uint32Array(data.buffer, at, bytes / 4);
}

const base = (seq: number, plane: number, y: number) =>
  Math.imul(seq + 1, 0x9e3779b1) ^ Math.imul(plane + 1, 0x85ebca6b) ^ Math.imul(y, 0xc2b2ae35);

/** Writes frame `seq`'s pattern into its planes; returns the checksum of what it wrote. */
export function paint(views: PlaneView[], seq: number): number {
  let sum = 0x811c9dc5;
  views.forEach((view, plane) => {
    for (let y = 0; y < view.height; y++) {
      const words = rowWords(view, y);
      const b = base(seq, plane, y);
      for (let k = 0; k < words.length; k++) {
        const w = (b + Math.imul(k, 0x27d4eb2f)) >>> 0;
        words[k] = w;
        sum = Math.imul(sum ^ w, 16777619);
      }
    }
  });
  return sum >>> 0;
}

/** The metadata that goes with frame `seq`: its sequence and checksum (userData bytes 0..3). */
export function patternMeta(seq: number, checksum: number): FrameMetaInit {
  const userData = new Uint8Array(16);
  new DataView(userData.buffer).setUint32(0, checksum, true);
  return { sequence: seq, userData };
}

/** Why the planes do not hold the frame `meta` names, or null when they do, word for word. */
export function verify(views: PlaneView[], meta: FrameMeta | null): string | null {
  if (meta?.sequence == null || !meta.userData) return "the frame has no sequence or checksum";
  const seq = meta.sequence;
  const want = new DataView(meta.userData.buffer, meta.userData.byteOffset).getUint32(0, true);
  let sum = 0x811c9dc5;
  let wrong: string | null = null;
  views.forEach((view, plane) => {
    for (let y = 0; y < view.height; y++) {
      const words = rowWords(view, y);
      const b = base(seq, plane, y);
      for (let k = 0; k < words.length; k++) {
        const w = words[k];
        if (wrong === null && w !== (b + Math.imul(k, 0x27d4eb2f)) >>> 0) {
          wrong = `frame ${seq}: plane ${plane} row ${y} word ${k} is 0x${w.toString(16)}`;
        }
        sum = Math.imul(sum ^ w, 16777619);
      }
    }
  });
  if (wrong) return wrong;
  if (sum >>> 0 !== want) return `frame ${seq}: checksum 0x${(sum >>> 0).toString(16)}`;
  return null;
}

/** Polls `cond` until it holds, or throws after `ms` (for counts a background thread updates). */
export async function eventually(cond: () => boolean, what: string, ms = 2000): Promise<void> {
  for (const end = performance.now() + ms; !cond();) {
    if (performance.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * Acquires a frame of `pool` for each of `seqs` (waiting up to 2 s each) and
 * paints it with that sequence's pattern; if one does not come, releases the
 * ones it got before it throws.
 */
export async function acquirePainted(pool: FramePool, seqs: number[]): Promise<DmaBufHandle[]> {
  const frames: DmaBufHandle[] = [];
  try {
    for (const seq of seqs) {
      const frame = await pool.acquire({ timeout: 2000 });
      paint(pool.planes(frame), seq);
      frames.push(frame);
    }
  } catch (e) {
    for (const f of frames) f.release();
    throw e;
  }
  return frames;
}
