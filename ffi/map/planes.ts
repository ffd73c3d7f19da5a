// Typed views of a frame's planes over memory JS already holds: a mapping, a
// JS buffer. Nothing is copied; a view reads and writes the frame itself.

import { lib } from "../load/load.ts";
import type { PixelFormatName } from "../gen/types.ts";
import { InvalidHandleError } from "../errors.ts";
import { PixelFormat, type PixelFormatInfo } from "./pixel_format.ts";

/** One plane of a frame as a typed array, row by row. */
export interface PlaneView {
  /**
   * The plane's memory from its first byte to the last byte of its last row:
   * a Uint16Array when samples have more than 8 bits (P010LE, RgbaU16, ...;
   * half floats as their bits), else a Uint8Array. Sample `x`, channel `c` of
   * row `y` is `data[y * stride + x * channels + c]`.
   */
  data: Uint8Array | Uint16Array;
  /** Samples per row (the plane's width: half the frame's for subsampled chroma). */
  width: number;
  /** Rows. */
  height: number;
  /** Elements of `data` from one row to the next (padding included). */
  stride: number;
  /** Elements per sample: 2 for NV12's interleaved UV, 4 for RGBA. */
  channels: number;
  /** Bytes of a row that hold samples (the row's bytes without padding). */
  bytesPerRow: number;
}

/** Where a plane lies in its memory, in bytes. */
export interface PlanePlacement {
  /** Bytes from the memory's start to the plane's first row. */
  offset: number;
  /** Bytes from one row to the next. */
  stride: number;
}

/** A plane's memory: a range of an ArrayBuffer. @ignore */
export interface PlaneMemory {
  buffer: ArrayBufferLike;
  byteOffset: number;
  byteLength: number;
}

/**
 * One view per plane of a `width` x `height` frame of `format` whose planes
 * lie in `buffer` at `planes[i].offset`, `planes[i].stride` bytes a row.
 * Refuses (InvalidHandleError naming the field) a plane that does not fit the
 * buffer, a stride below the row, and, for 16-bit samples, an odd offset or
 * stride.
 *
 * @example
 * ```ts
 * import { PixelFormat, planeViews } from "@gpures/gpures";
 * const layout = PixelFormat.layout("NV12", 4, 2, { rowAlign: 8 });
 * const [y, uv] = planeViews(new ArrayBuffer(layout.size), "NV12", layout.planes, 4, 2);
 * uv.data[1] = 128; // V of the first chroma sample
 * console.log(y.stride, uv.width, uv.channels); // 8 2 2
 * ```
 */
export function planeViews(
  buffer: ArrayBufferLike,
  format: PixelFormatName | number,
  planes: readonly PlanePlacement[],
  width: number,
  height: number,
): PlaneView[] {
  if (!(buffer instanceof ArrayBuffer) && !(buffer instanceof SharedArrayBuffer)) {
    throw invalid("buffer", "buffer must be an ArrayBuffer or a SharedArrayBuffer");
  }
  const memory = { buffer, byteOffset: 0, byteLength: buffer.byteLength };
  return viewsOf(planes.map(() => memory), format, planes, width, height);
}

/**
 * planeViews with each plane in its own memory (a DmaBufHandle's objects,
 * CpuPlanes' buffers). @ignore
 */
export function viewsOf(
  memories: readonly PlaneMemory[],
  format: PixelFormatName | number,
  planes: readonly PlanePlacement[],
  width: number,
  height: number,
): PlaneView[] {
  const info = PixelFormat.info(format);
  extent("width", width);
  extent("height", height);
  if (!Array.isArray(planes) || planes.length !== info.numPlanes) {
    throw invalid(
      "planes",
      `planes has ${
        Array.isArray(planes) ? planes.length : "no"
      } entries but ${info.name} has ${info.numPlanes}`,
    );
  }
  return planes.map((p, i) => viewOf(memories[i], info, i, p, width, height));
}

/** Bytes of one channel of a sample of plane `i`: what the typed array's elements are. */
function elementBytes(info: PixelFormatInfo, i: number): 1 | 2 {
  const p = info.planes[i];
  const bytes = p.bytesPerSample / p.channels;
  if (bytes === 1 && info.bitsPerSample <= 8) return 1;
  if (bytes === 2) return 2;
  // Rgb10A2 packs channels across bytes, RgbaF32 has 4-byte samples: no 8- or 16-bit view reads them.
  throw invalid(
    "format",
    `${info.name} has ${info.bitsPerSample}-bit channels, ${p.channels} to a ${p.bytesPerSample}-byte sample; plane views hold 8- or 16-bit channels (view its memory as a Uint32Array or Float32Array)`,
  );
}

function viewOf(
  memory: PlaneMemory,
  info: PixelFormatInfo,
  i: number,
  p: PlanePlacement,
  width: number,
  height: number,
): PlaneView {
  const bytes = elementBytes(info, i);
  const offset = placement(`planes[${i}].offset`, p?.offset);
  const stride = placement(`planes[${i}].stride`, p?.stride);
  const rowBytes = rowBytesOf(info, i, width);
  const rows = PixelFormat.planeExtent(info.id, i, width, height);
  if (stride < rowBytes) {
    throw invalid(
      `planes[${i}].stride`,
      `planes[${i}].stride ${stride} is below the ${rowBytes} bytes of a row of plane ${i}`,
    );
  }
  const start = memory.byteOffset + offset;
  if (bytes === 2) aligned(i, start, stride);
  const length = stride * (rows.height - 1) + rowBytes;
  if (offset + length > memory.byteLength) {
    throw invalid(
      `planes[${i}].offset`,
      `planes[${i}] ends at byte ${offset + length} but its memory has ${memory.byteLength} bytes`,
    );
  }
  const data = bytes === 2
    ? new Uint16Array(memory.buffer, start, length / 2)
    : new Uint8Array(memory.buffer, start, length);
  const channels = info.planes[i].channels;
  return {
    data,
    width: rows.width,
    height: rows.height,
    stride: stride / bytes,
    channels,
    bytesPerRow: rowBytes,
  };
}

/** A typed array's elements must start on their own size. */
function aligned(i: number, start: number, stride: number): void {
  if (start % 2) {
    throw invalid(
      `planes[${i}].offset`,
      `planes[${i}] starts at odd byte ${start}; 16-bit samples need an even offset`,
    );
  }
  if (stride % 2) {
    throw invalid(
      `planes[${i}].stride`,
      `planes[${i}].stride ${stride} is odd; 16-bit samples need an even stride`,
    );
  }
}

const rowBytesOut = new BigUint64Array(1);
function rowBytesOf(info: PixelFormatInfo, plane: number, width: number): number {
  lib().gpures_pixel_format_row_bytes(info.id, plane, width, rowBytesOut); // arguments checked above
  return Number(rowBytesOut[0]);
}

function extent(field: string, value: unknown): void {
  if (Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 0xffff_ffff) return;
  throw invalid(field, `${field} must be an integer from 1 to 4294967295, not ${String(value)}`);
}

function placement(field: string, value: unknown): number {
  if (Number.isSafeInteger(value) && (value as number) >= 0) return value as number;
  throw invalid(field, `${field} must be a non-negative integer, not ${String(value)}`);
}

function invalid(field: string, message: string): InvalidHandleError {
  return new InvalidHandleError(`Cannot view planes: ${message}`, "INVALID_VALUE", field);
}
