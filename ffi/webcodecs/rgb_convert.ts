// copyTo({ format: "RGBA" | "RGBX" | "BGRA" | "BGRX" }): 8-bit YUV (I420,
// I422, I444, NV12) through the frame's matrix and range, or one RGB order
// into another. The gamut is not converted: "srgb" and "display-p3" get the
// frame's primaries as they are.

import type { VideoPixelFormat } from "./pixel_layout.ts";
import type { VideoMatrixCoefficients } from "./color_space.ts";

/** A source plane: its bytes and the bytes from one row to the next. */
export interface SourcePlane {
  bytes: Uint8Array;
  stride: number;
}

/** Kr and Kb of each matrix (BT.601's for an unknown one, as browsers do). */
const WEIGHTS: Record<string, [number, number]> = {
  bt709: [0.2126, 0.0722],
  bt470bg: [0.299, 0.114],
  smpte170m: [0.299, 0.114],
  "bt2020-ncl": [0.2627, 0.0593],
};

/** Formats whose samples copyTo can turn into RGB. */
export function convertible(format: VideoPixelFormat): boolean {
  return ["I420", "I422", "I444", "NV12", "RGBA", "RGBX", "BGRA", "BGRX"].includes(format);
}

const clamp = (v: number) => v < 0 ? 0 : v > 255 ? 255 : Math.round(v);

/** Writes the `width` x `height` rectangle at (x, y) of the source as `to`, rows `stride` bytes apart. */
export function convertToRgb(
  from: VideoPixelFormat,
  planes: SourcePlane[],
  rect: { x: number; y: number; width: number; height: number },
  matrix: VideoMatrixCoefficients | null,
  fullRange: boolean,
  to: VideoPixelFormat,
  out: Uint8Array,
  offset: number,
  stride: number,
): void {
  const bgrOut = to === "BGRA" || to === "BGRX";
  const opaque = to === "RGBX" || to === "BGRX";
  const put = (at: number, r: number, g: number, b: number, a: number) => {
    out[at] = bgrOut ? b : r;
    out[at + 1] = g;
    out[at + 2] = bgrOut ? r : b;
    out[at + 3] = opaque ? 255 : a;
  };
  if (from.startsWith("RGB") || from.startsWith("BGR")) {
    const bgrIn = from.startsWith("BGR");
    const hasAlpha = from.endsWith("A");
    const { bytes, stride: s } = planes[0];
    for (let row = 0; row < rect.height; row++) {
      let src = (rect.y + row) * s + rect.x * 4;
      let dst = offset + row * stride;
      for (let col = 0; col < rect.width; col++, src += 4, dst += 4) {
        const r = bytes[bgrIn ? src + 2 : src], b = bytes[bgrIn ? src : src + 2];
        put(dst, r, bytes[src + 1], b, hasAlpha ? bytes[src + 3] : 255);
      }
    }
    return;
  }
  const [kr, kb] = WEIGHTS[matrix ?? "smpte170m"] ?? WEIGHTS.smpte170m;
  const kg = 1 - kr - kb;
  const [ys, cs, off] = fullRange ? [255 / 255, 255 / 255, 0] : [255 / 219, 255 / 224, 16];
  const hsub = from === "I444" ? 1 : 2, vsub = from === "I420" || from === "NV12" ? 2 : 1;
  const nv12 = from === "NV12";
  for (let row = 0; row < rect.height; row++) {
    const y = rect.y + row, cy = Math.floor(y / vsub);
    let dst = offset + row * stride;
    for (let col = 0; col < rect.width; col++, dst += 4) {
      const x = rect.x + col, cx = Math.floor(x / hsub);
      const luma = (planes[0].bytes[y * planes[0].stride + x] - off) * ys;
      const u = nv12
        ? planes[1].bytes[cy * planes[1].stride + cx * 2]
        : planes[1].bytes[cy * planes[1].stride + cx];
      const v = nv12
        ? planes[1].bytes[cy * planes[1].stride + cx * 2 + 1]
        : planes[2].bytes[cy * planes[2].stride + cx];
      const cb = (u - 128) * cs, cr = (v - 128) * cs;
      const r = luma + 2 * (1 - kr) * cr;
      const b = luma + 2 * (1 - kb) * cb;
      const g = (luma - kr * r - kb * b) / kg;
      put(dst, clamp(r), clamp(g), clamp(b), 255);
    }
  }
}

/** Destination planes of an I420 frame: Y, U, V. */
export type I420Planes = [SourcePlane, SourcePlane, SourcePlane];

/**
 * The `rect` of a frame in any convertible format, as I420 in `to` (an
 * encoder's input): RGB through BT.709's limited-range matrix, 4:2:2 and
 * 4:4:4 chroma averaged down, NV12 de-interleaved.
 */
export function convertToI420(
  from: VideoPixelFormat,
  planes: SourcePlane[],
  rect: { x: number; y: number; width: number; height: number },
  to: I420Planes,
): void {
  const { width: w, height: h } = rect;
  const cw = Math.ceil(w / 2), ch = Math.ceil(h / 2);
  if (from.startsWith("RGB") || from.startsWith("BGR")) {
    const bgr = from.startsWith("BGR");
    const { bytes, stride } = planes[0];
    const [kr, kb] = WEIGHTS.bt709, kg = 1 - kr - kb;
    const px = (x: number, y: number) => {
      const at = (rect.y + Math.min(y, h - 1)) * stride + (rect.x + Math.min(x, w - 1)) * 4;
      return bgr
        ? [bytes[at + 2], bytes[at + 1], bytes[at]]
        : [bytes[at], bytes[at + 1], bytes[at + 2]];
    };
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const [r, g, b] = px(x, y);
        to[0].bytes[y * to[0].stride + x] = clamp(16 + (219 * (kr * r + kg * g + kb * b)) / 255);
      }
    }
    for (let y = 0; y < ch; y++) {
      for (let x = 0; x < cw; x++) {
        let r = 0, g = 0, b = 0;
        for (const [dx, dy] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
          const [pr, pg, pb] = px(2 * x + dx, 2 * y + dy);
          r += pr / 4, g += pg / 4, b += pb / 4;
        }
        const yy = kr * r + kg * g + kb * b;
        to[1].bytes[y * to[1].stride + x] = clamp(128 + (224 * (b - yy)) / (2 * (1 - kb)) / 255);
        to[2].bytes[y * to[2].stride + x] = clamp(128 + (224 * (r - yy)) / (2 * (1 - kr)) / 255);
      }
    }
    return;
  }
  const y0 = planes[0];
  for (let y = 0; y < h; y++) {
    const from0 = (rect.y + y) * y0.stride + rect.x;
    to[0].bytes.set(y0.bytes.subarray(from0, from0 + w), y * to[0].stride);
  }
  const hsub = from === "I444" ? 1 : 2, vsub = from === "I420" || from === "NV12" ? 2 : 1;
  const sample = (p: number, x: number, y: number) => {
    const sx = Math.floor((rect.x + Math.min(x, w - 1)) / hsub);
    const sy = Math.floor((rect.y + Math.min(y, h - 1)) / vsub);
    if (from === "NV12") return planes[1].bytes[sy * planes[1].stride + sx * 2 + p - 1];
    return planes[p].bytes[sy * planes[p].stride + sx];
  };
  for (let p = 1; p <= 2; p++) {
    for (let y = 0; y < ch; y++) {
      for (let x = 0; x < cw; x++) {
        const v =
          (sample(p, 2 * x, 2 * y) + sample(p, 2 * x + 1, 2 * y) + sample(p, 2 * x, 2 * y + 1) +
            sample(p, 2 * x + 1, 2 * y + 1)) / 4;
        to[p].bytes[y * to[p].stride + x] = clamp(v);
      }
    }
  }
}
