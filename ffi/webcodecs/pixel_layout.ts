// WebCodecs' pixel formats in gpures' terms, and the plane arithmetic of
// VideoFrame's rectangles and layouts (the spec's "Parse Visible Rect",
// "Compute Layout and Allocation Size"): every refusal is a TypeError naming
// the member, thrown before a byte moves.

import type { PixelFormatInfo } from "../map/pixel_format.ts";
import type { PlaneView } from "../map/planes.ts";
import type { PixelFormatName } from "../gen/types.ts";

/** WebCodecs' pixel formats. */
export type VideoPixelFormat =
  | "I420"
  | "I420P10"
  | "I420P12"
  | "I420A"
  | "I420AP10"
  | "I420AP12"
  | "I422"
  | "I422P10"
  | "I422P12"
  | "I422A"
  | "I422AP10"
  | "I422AP12"
  | "I444"
  | "I444P10"
  | "I444P12"
  | "I444A"
  | "I444AP10"
  | "I444AP12"
  | "NV12"
  | "RGBA"
  | "RGBX"
  | "BGRA"
  | "BGRX";

/** Every WebCodecs format, with the gpures format of its memory layout where there is one. */
const FORMATS: Record<VideoPixelFormat, PixelFormatName | null> = {
  I420: "YUV420P",
  I420P10: "YUV420P10LE",
  I420P12: "YUV420P12LE",
  I420A: null,
  I420AP10: null,
  I420AP12: null,
  I422: "YUV422P",
  I422P10: "YUV422P10LE",
  I422P12: "YUV422P12LE",
  I422A: null,
  I422AP10: null,
  I422AP12: null,
  I444: "YUV444P",
  I444P10: "YUV444P10LE",
  I444P12: "YUV444P12LE",
  I444A: null,
  I444AP10: "YUVA444P10LE",
  I444AP12: "YUVA444P12LE",
  NV12: "NV12",
  RGBA: "RgbaU8",
  RGBX: "RgbxU8",
  BGRA: "BgraU8",
  BGRX: "BgrxU8",
};

/** The formats' names, for enum checks. */
export const VIDEO_PIXEL_FORMATS = Object.keys(FORMATS) as VideoPixelFormat[];

/** The RGB formats copyTo() converts to. */
export const RGB_FORMATS: readonly VideoPixelFormat[] = ["RGBA", "RGBX", "BGRA", "BGRX"];

/** The gpures format of a WebCodecs one; null where gpures has none (the A variants). */
export function gpuresFormat(format: VideoPixelFormat): PixelFormatName | null {
  return FORMATS[format];
}

/** The WebCodecs name of a gpures format; null for formats WebCodecs does not name (P010LE, ...). */
export function webFormat(name: PixelFormatName): VideoPixelFormat | null {
  for (const [web, ours] of Object.entries(FORMATS)) {
    if (ours === name) return web as VideoPixelFormat;
  }
  return null;
}

/** A rectangle in samples of plane 0. */
export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** WebCodecs' PlaneLayout: where a plane lies in a buffer. */
export interface PlaneLayout {
  /** Bytes from the buffer's start. */
  offset: number;
  /** Bytes from one row to the next. */
  stride: number;
}

/** One plane's share of a rectangle, in bytes and rows. */
export interface PlaneRect {
  /** Bytes from the row's start to the rectangle's first sample. */
  left: number;
  /** The rectangle's first row in this plane. */
  top: number;
  /** Bytes of a row of the rectangle. */
  rowBytes: number;
  /** Rows. */
  rows: number;
}

const U32_MAX = 0xffff_ffff;

function finite(what: string, field: string, v: unknown): number {
  const n = Number(v);
  if (typeof v !== "number" || !Number.isFinite(n)) {
    throw new TypeError(`Cannot ${what}: ${field} is ${String(v)}, not a finite number`);
  }
  return n;
}

/**
 * A DOMRectInit checked against the coded size and the format's subsampling:
 * inside the frame, not empty, its left and top on a chroma sample.
 */
export function parseRect(
  what: string,
  field: string,
  init: unknown,
  info: PixelFormatInfo,
  codedWidth: number,
  codedHeight: number,
): Rect {
  if (typeof init !== "object" || init === null) {
    throw new TypeError(`Cannot ${what}: ${field} is not a rectangle`);
  }
  const r = init as Record<string, unknown>;
  const x = finite(what, `${field}.x`, r.x ?? 0), y = finite(what, `${field}.y`, r.y ?? 0);
  const width = finite(what, `${field}.width`, r.width ?? 0);
  const height = finite(what, `${field}.height`, r.height ?? 0);
  if (x < 0 || y < 0 || width <= 0 || height <= 0) {
    throw new TypeError(
      `Cannot ${what}: ${field} {${x}, ${y}, ${width}x${height}} is empty or negative`,
    );
  }
  if (
    !Number.isInteger(x) || !Number.isInteger(y) || !Number.isInteger(width) ||
    !Number.isInteger(height)
  ) {
    throw new TypeError(`Cannot ${what}: ${field} is not in whole samples`);
  }
  if (x + width > codedWidth || y + height > codedHeight) {
    throw new TypeError(
      `Cannot ${what}: ${field} {${x}, ${y}, ${width}x${height}} leaves the ${codedWidth}x${codedHeight} frame`,
    );
  }
  for (const p of info.planes) {
    if (x % p.hsub || y % p.vsub) {
      throw new TypeError(
        `Cannot ${what}: ${field}'s left and top (${x}, ${y}) must fall on a chroma sample of ${info.name} (multiples of ${p.hsub}, ${p.vsub})`,
      );
    }
  }
  return { x, y, width, height };
}

/** Each plane's share of `rect`: chroma rounded out, as the format's planes are. */
export function planeRects(info: PixelFormatInfo, rect: Rect): PlaneRect[] {
  return info.planes.map((p) => ({
    left: Math.floor(rect.x / p.hsub) * p.bytesPerSample, // floored: a peer's rectangle may be off the grid
    top: Math.floor(rect.y / p.vsub),
    rowBytes: Math.ceil(rect.width / p.hsub) * p.bytesPerSample,
    rows: Math.ceil(rect.height / p.vsub),
  }));
}

/**
 * The layout of `rects` in a buffer: `layout` checked (one entry per plane,
 * strides that hold a row, nothing past 2^32, no two planes sharing a byte),
 * or the planes packed one after another. Returns it and the bytes it needs.
 */
export function computeLayout(
  what: string,
  rects: PlaneRect[],
  layout: unknown,
): { planes: PlaneLayout[]; size: number } {
  if (layout === undefined) {
    let offset = 0;
    const planes = rects.map((r) => {
      const plane = { offset, stride: r.rowBytes };
      offset += r.rowBytes * r.rows;
      return plane;
    });
    return { planes, size: offset };
  }
  if (!Array.isArray(layout) || layout.length !== rects.length) {
    throw new TypeError(`Cannot ${what}: layout must have ${rects.length} planes`);
  }
  const planes: PlaneLayout[] = layout.map((l, i) => {
    const offset = finite(what, `layout[${i}].offset`, (l as PlaneLayout)?.offset);
    const stride = finite(what, `layout[${i}].stride`, (l as PlaneLayout)?.stride);
    if (offset < 0 || stride < 0 || offset > U32_MAX || stride > U32_MAX) {
      throw new TypeError(`Cannot ${what}: layout[${i}] is outside 0..2^32-1`);
    }
    return { offset: Math.trunc(offset), stride: Math.trunc(stride) };
  });
  const ends: [number, number][] = [];
  planes.forEach((p, i) => {
    const r = rects[i];
    if (p.stride < r.rowBytes) {
      throw new TypeError(
        `Cannot ${what}: layout[${i}].stride is ${p.stride}, below the row's ${r.rowBytes} bytes`,
      );
    }
    const end = p.offset + p.stride * r.rows;
    if (end > U32_MAX) throw new TypeError(`Cannot ${what}: layout[${i}] ends past 2^32-1`);
    ends.push([p.offset, end]);
  });
  ends.forEach(([start, end], i) => {
    ends.forEach(([s, e], j) => {
      if (i < j && start < e && s < end) {
        throw new TypeError(`Cannot ${what}: layout planes ${i} and ${j} overlap`);
      }
    });
  });
  return { planes, size: Math.max(0, ...ends.map(([, e]) => e)) };
}

/** Rotation as the spec parses it: the nearest multiple of 90 (ties up), then 0..270. */
export function parseRotation(what: string, v: unknown): number {
  if (v === undefined) return 0;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new TypeError(`Cannot ${what}: rotation is ${String(v)}`);
  const r = Math.round(n / 90) * 90;
  return ((r % 360) + 360) % 360;
}

/** A plane view's bytes, with its stride in bytes (16-bit planes are Uint16Arrays). */
export function planeBytes(view: PlaneView): { bytes: Uint8Array; stride: number } {
  const d = view.data;
  return {
    bytes: new Uint8Array(d.buffer, d.byteOffset, d.byteLength),
    stride: view.stride * d.BYTES_PER_ELEMENT,
  };
}
