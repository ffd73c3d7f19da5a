// Pixel format facts, read from the library's one table (nothing kept here).

import {
  countOption,
  enumName,
  enumValue,
  optionalCount,
  optionsBag,
  own,
  suggestName,
} from "../table/values.ts";
import { lib } from "../load/load.ts";
import { type PixelFormatRow, readPixelFormats } from "../table/tables.ts";
import type { PixelFormatName } from "../gen/types.ts";
import { InvalidHandleError } from "../errors.ts";
import { check, lastError } from "../load/native.ts";

const PIXEL_FORMAT_SET = 1;

/** One plane of a pixel format. */
export interface PlaneInfo {
  /** Horizontal subsampling: the plane is ceil(width / hsub) samples wide. */
  hsub: number;
  /** Vertical subsampling: the plane is ceil(height / vsub) rows high. */
  vsub: number;
  /** Channels in one sample (2 for NV12's interleaved UV). */
  channels: number;
  /** Samples that share one horizontal block (2 for packed 4:2:2). */
  blockWidth: number;
  /** Bytes of one sample, all channels. */
  bytesPerSample: number;
}

/** What the library knows of a pixel format. */
export interface PixelFormatInfo {
  /** Stable id. */
  id: number;
  /** Name. */
  name: PixelFormatName;
  /** Planes, 1 to 4. */
  numPlanes: number;
  /** Significant bits per channel sample. */
  bitsPerSample: number;
  /** More than 8 bits per sample. */
  hdr: boolean;
  /** Luma/chroma rather than RGB. */
  yuv: boolean;
  /** Carries alpha. */
  alpha: boolean;
  /** Floating-point samples. */
  float: boolean;
  /** The DRM fourcc with this memory layout, or 0. */
  drmFourcc: number;
  /** Per-plane layout. */
  planes: PlaneInfo[];
}

/** One plane of a {@link FrameLayout}. All values are bytes except width and height. */
export interface PlaneLayout {
  /** Bytes from the buffer's start; a multiple of `rowAlign`. */
  offset: number;
  /** Bytes per row: the plane's row bytes rounded up to `rowAlign`. */
  stride: number;
  /** Samples per row. */
  width: number;
  /** Rows. */
  height: number;
  /** `stride * height`. */
  size: number;
}

/** A frame's standard layout in one buffer: planes in order, rows padded. */
export interface FrameLayout {
  /** The buffer's bytes (below 2^32, so every offset fits a DmaBufHandle plane). */
  size: number;
  /** One entry per plane of the format. */
  planes: PlaneLayout[];
}

/** {@link PixelFormatTable.layout}'s options. */
export interface LayoutOptions {
  /** Each row is padded to, and each plane starts at, a multiple of it: a power of two, 1..4096. */
  rowAlign?: number;
}

/**
 * The default row alignment of {@link PixelFormatTable.layout}. 64 bytes is a
 * cache line on x86 and ARM (no row shares one with the next, SIMD loads of a
 * row start aligned) and the linear pitch Intel's display and media engines
 * import; drivers that want more (AMD's linear textures: 256) are asked for it
 * through `rowAlign`.
 */
const DEFAULT_ROW_ALIGN = 64;

/** The queries {@link PixelFormat} answers. */
export interface PixelFormatTable {
  /** Everything the library knows of a format, by name or id. */
  info(name: PixelFormatName | number): PixelFormatInfo;
  /** The format whose memory layout a DRM fourcc names, or undefined when none does. */
  fromFourcc(fourcc: number): PixelFormatInfo | undefined;
  /** Every format name, by id. */
  names(): PixelFormatName[];
  /** Width and height in samples of one plane of a `width` x `height` frame. */
  planeExtent(
    name: PixelFormatName | number,
    plane: number,
    width: number,
    height: number,
  ): { width: number; height: number };
  /** Bytes of a frame whose planes follow each other in one buffer (plane 0 `rowPitch` wide). */
  frameSize(
    name: PixelFormatName | number,
    width: number,
    height: number,
    rowPitch: number,
  ): bigint;
  /** The standard layout of a `width` x `height` frame in one buffer (rows aligned to 64 bytes). */
  layout(
    name: PixelFormatName | number,
    width: number,
    height: number,
    options?: LayoutOptions,
  ): FrameLayout;
}

let table: PixelFormatRow[] | undefined;

function u32(what: string, field: string, value: unknown): number {
  return countOption(what, field, value, 0, 0xffff_ffff);
}

function rowOf(name: PixelFormatName | number): PixelFormatRow {
  const id = typeof name === "number" ? name : enumValue(PIXEL_FORMAT_SET, name);
  table ??= readPixelFormats(lib());
  const row = id === undefined ? undefined : table[id - 1];
  if (!row) {
    const names = () => PixelFormat.names();
    const ids = `PixelFormat.info() takes ids (1 to ${table.length}) and names`;
    const fourcc = typeof name === "number" ? byFourcc(name) : undefined;
    const hint = typeof name !== "number"
      ? `: ${suggestName(name, names())}`
      : fourcc
      ? `; ${name} is the DRM fourcc of ${
        enumName(PIXEL_FORMAT_SET, fourcc.id)
      }: ${ids}, PixelFormat.fromFourcc() looks up a fourcc`
      : `; ${ids} (PixelFormat.fromFourcc() looks up a DRM fourcc)`;
    throw new InvalidHandleError(
      `Unknown pixel format ${
        typeof name === "string" ? JSON.stringify(name) : String(name)
      }${hint}`,
      "INVALID_VALUE",
      "format",
    );
  }
  return row;
}

/** The table's row whose DRM fourcc is `fourcc`, or undefined. */
function byFourcc(fourcc: number): PixelFormatRow | undefined {
  table ??= readPixelFormats(lib());
  return fourcc ? table.find((r) => r.drmFourcc === fourcc) : undefined;
}

/**
 * The pixel format table.
 *
 * @example
 * ```ts
 * import { PixelFormat } from "@gpures/gpures";
 * const nv12 = PixelFormat.info("NV12");
 * console.log(nv12.numPlanes, nv12.planes[1].hsub); // 2 2
 * ```
 */
export const PixelFormat: PixelFormatTable = {
  /** Everything the library knows of a format, by name or id. */
  info(name: PixelFormatName | number): PixelFormatInfo {
    const row = rowOf(name);
    return {
      id: row.id,
      name: enumName(PIXEL_FORMAT_SET, row.id) as PixelFormatName,
      numPlanes: row.numPlanes,
      bitsPerSample: row.bitsPerSample,
      hdr: Boolean(row.flags & 1),
      yuv: Boolean(row.flags & 2),
      alpha: Boolean(row.flags & 4),
      float: Boolean(row.flags & 8),
      drmFourcc: row.drmFourcc,
      planes: row.planes.map((p) => ({ ...p })),
    };
  },

  /**
   * The format whose memory layout DRM fourcc `fourcc` (a u32, as a
   * DmaBufHandle carries it) names, or undefined when none does.
   *
   * @example
   * ```ts
   * import { PixelFormat } from "@gpures/gpures";
   * console.log(PixelFormat.fromFourcc(0x3231564e)?.name); // NV12
   * ```
   */
  fromFourcc(fourcc: number): PixelFormatInfo | undefined {
    const row = byFourcc(u32("look up a fourcc", "fourcc", fourcc));
    return row && PixelFormat.info(row.id);
  },

  /** Every format name, by id. */
  names(): PixelFormatName[] {
    table ??= readPixelFormats(lib());
    return table.map((r) => enumName(PIXEL_FORMAT_SET, r.id) as PixelFormatName);
  },

  /** Width and height in samples of one plane of a `width` x `height` frame. */
  planeExtent(
    name: PixelFormatName | number,
    plane: number,
    width: number,
    height: number,
  ): { width: number; height: number } {
    const row = rowOf(name);
    const p = row.planes[countOption("read a plane extent", "plane", plane, 0, 0xffff_ffff)];
    if (!p) {
      throw new InvalidHandleError(
        `Plane ${plane} is out of range; the format has ${row.numPlanes}`,
        "INVALID_VALUE",
        "plane",
      );
    }
    return {
      width: Math.ceil(u32("read a plane extent", "width", width) / p.hsub),
      height: Math.ceil(u32("read a plane extent", "height", height) / p.vsub),
    };
  },

  /**
   * Bytes of a frame whose planes follow each other in one buffer, plane 0
   * with `rowPitch` bytes per row (the layout {@link CpuBytes} checks).
   */
  frameSize(
    name: PixelFormatName | number,
    width: number,
    height: number,
    rowPitch: number,
  ): bigint {
    const out = new BigUint64Array(1);
    const status = lib().gpures_pixel_format_frame_size(
      rowOf(name).id,
      u32("compute a frame size", "width", width),
      u32("compute a frame size", "height", height),
      u32("compute a frame size", "rowPitch", rowPitch),
      out,
    );
    if (status !== 0) throw lastError(status);
    return out[0];
  },

  /**
   * The standard layout of a `width` x `height` frame in one buffer: planes
   * in order, each row padded to a multiple of `rowAlign` (default 64) and
   * each plane starting at a multiple of it.
   *
   * @example
   * ```ts
   * import { PixelFormat } from "@gpures/gpures";
   * const { size, planes } = PixelFormat.layout("NV12", 1920, 1080);
   * console.log(size, planes[1].offset, planes[1].stride); // 3110400 2073600 1920
   * ```
   */
  layout(
    name: PixelFormatName | number,
    width: number,
    height: number,
    options?: LayoutOptions,
  ): FrameLayout {
    const row = rowOf(name);
    const what = "lay out a frame";
    optionsBag(what, options);
    const rowAlign = optionalCount(
      what,
      "rowAlign",
      own(options, "rowAlign"),
      0,
      0xffff_ffff,
      DEFAULT_ROW_ALIGN,
    );
    const w = u32(what, "width", width), h = u32(what, "height", height);
    const out = new Uint8Array(4 * PLANE_LAYOUT_BYTES);
    const size = new BigUint64Array(1);
    check(
      lib().gpures_pixel_format_layout(
        row.id,
        w,
        h,
        rowAlign,
        out,
        size,
      ),
    );
    const view = new DataView(out.buffer);
    return { size: Number(size[0]), planes: row.planes.map((_, i) => planeLayoutAt(view, i)) };
  },
};

/** sizeof(gpures_plane_layout): offset, size (u64), stride, width, height, reserved (u32). */
const PLANE_LAYOUT_BYTES = 32;

function planeLayoutAt(view: DataView, i: number): PlaneLayout {
  const at = i * PLANE_LAYOUT_BYTES;
  return {
    offset: Number(view.getBigUint64(at, true)),
    stride: view.getUint32(at + 16, true),
    width: view.getUint32(at + 20, true),
    height: view.getUint32(at + 24, true),
    size: Number(view.getBigUint64(at + 8, true)),
  };
}

/** The format whose DRM fourcc is `fourcc`, or undefined (what the C check of a DmaBufHandle uses). */
export function formatOfFourcc(fourcc: number): PixelFormatInfo | undefined {
  const row = byFourcc(fourcc);
  return row && PixelFormat.info(row.id);
}
