// VideoFrame: WebCodecs' frame over a gpures handle. A decoder's frame is its
// pool slot (a DmaBufHandle), a frame made from bytes is a slot of a pool of
// this module's (formats with a DRM fourcc, so encoders and sessions take
// it) or CpuPlanes over its own buffer, and `new VideoFrame(resource)` wraps
// any frame-like handle. Clones share the handle; nothing is copied until
// copyTo().

import { GpuResource } from "../kinds/gpu_resource.ts";
import { CpuPlanes } from "../kinds/cpu.ts";
import { FramePool } from "../frames/frame_pool.ts";
import { PixelFormat, type PixelFormatInfo } from "../map/pixel_format.ts";
import type { PlaneView } from "../map/planes.ts";
import type { PixelFormatName } from "../gen/types.ts";
import {
  colorSpaceOfMeta,
  metaOfColorSpace,
  REC709,
  SRGB,
  VideoColorSpace,
  type VideoColorSpaceInit,
} from "./color_space.ts";
import {
  computeLayout,
  gpuresFormat,
  parseRect,
  parseRotation,
  planeBytes,
  type PlaneLayout,
  planeRects,
  type Rect,
  RGB_FORMATS,
  VIDEO_PIXEL_FORMATS,
  type VideoPixelFormat,
  webFormat,
} from "./pixel_layout.ts";
import { convertible, convertToRgb } from "./rgb_convert.ts";
import {
  bufferSource,
  detachAll,
  dictionary,
  enforceRange,
  enumMember,
  optionalRange,
  requiredDictionary,
  transferList,
} from "./webidl.ts";

export type { PlaneLayout, VideoPixelFormat };

/** A rectangle as DOMRectInit gives it. */
export interface VideoFrameRect {
  /** Left, samples. */
  x?: number;
  /** Top, rows. */
  y?: number;
  /** Samples. */
  width?: number;
  /** Rows. */
  height?: number;
}

/** What a frame made from another frame or a handle may change. */
export interface VideoFrameInit {
  /** Presentation time, microseconds (a handle's metadata timing when not given). */
  timestamp?: number;
  /** Microseconds. */
  duration?: number;
  /** "keep" (default) or "discard": RGBA becomes RGBX, BGRA BGRX. */
  alpha?: "keep" | "discard";
  /** The part of the coded frame to show. */
  visibleRect?: VideoFrameRect;
  /** Clockwise degrees, a multiple of 90 after rounding. */
  rotation?: number;
  /** Mirrored horizontally (after rotation). */
  flip?: boolean;
  /** Width to display at, with displayHeight. */
  displayWidth?: number;
  /** Height to display at, with displayWidth. */
  displayHeight?: number;
  /** The application's own. */
  metadata?: Record<string, unknown>;
}

/** `new VideoFrame(data, init)`: bytes and how they are laid out. */
export interface VideoFrameBufferInit {
  /** The bytes' pixel format. */
  format: VideoPixelFormat;
  /** Samples per row of plane 0. */
  codedWidth: number;
  /** Rows of plane 0. */
  codedHeight: number;
  /** Presentation time, microseconds. */
  timestamp: number;
  /** Microseconds. */
  duration?: number;
  /** Where each plane lies in `data` (packed one after another when absent). */
  layout?: PlaneLayout[];
  /** The part to show. */
  visibleRect?: VideoFrameRect;
  /** Clockwise degrees. */
  rotation?: number;
  /** Mirrored. */
  flip?: boolean;
  /** Width to display at. */
  displayWidth?: number;
  /** Height to display at. */
  displayHeight?: number;
  /** The frame's colour (REC 709 for YUV, sRGB for RGB when absent). */
  colorSpace?: VideoColorSpaceInit;
  /** Buffers to detach once the bytes are taken. */
  transfer?: ArrayBuffer[];
  /** The application's own. */
  metadata?: Record<string, unknown>;
}

/** {@link VideoFrame.copyTo}'s and {@link VideoFrame.allocationSize}'s options. */
export interface VideoFrameCopyToOptions {
  /** The part to copy (the visible rectangle by default). */
  rect?: VideoFrameRect;
  /** Where each plane goes (packed by default). */
  layout?: PlaneLayout[];
  /** "RGBA", "RGBX", "BGRA" or "BGRX" to convert to; the frame's own format otherwise. */
  format?: VideoPixelFormat;
  /** The RGB output's colour space: "srgb" or "display-p3" (primaries are kept as they are). */
  colorSpace?: "srgb" | "display-p3";
}

/** What a frame is, apart from its memory. */
interface FrameState {
  format: VideoPixelFormat | null;
  pixelFormat: PixelFormatName | null;
  codedWidth: number;
  codedHeight: number;
  visible: Rect;
  displayWidth: number;
  displayHeight: number;
  timestamp: number;
  duration: number | null;
  colorSpace: VideoColorSpace;
  rotation: number;
  flip: boolean;
  metadata: Record<string, unknown>;
}

/** What a decoder passes for the frames it makes. @ignore */
export interface DecodedFrameInit {
  timestamp: number;
  duration: number | null;
  displayAspect?: [number, number];
  colorSpace?: VideoColorSpace;
  rotation: number;
  flip: boolean;
  onClose?: () => void;
}

/** The constructor's private path: a handle taken over with its state. */
const ADOPT = Symbol("adopt");
interface Adopted {
  resource: GpuResource<unknown>;
  state: FrameState;
  onClose: (() => void) | undefined;
}

type AdoptingConstructor = new (token: typeof ADOPT, adopted: Adopted) => VideoFrame;

let adoptFrame: (resource: GpuResource<unknown>, init: DecodedFrameInit) => VideoFrame;
let resourceOf: (frame: VideoFrame) => GpuResource<unknown> | null;

/** Display size given, or the visible size scaled as the base frame's, turned for 90 and 270. */
function displaySize(
  what: string,
  init: { displayWidth?: number; displayHeight?: number },
  visible: Rect,
  rotation: number,
  scale: [number, number] = [1, 1],
): [number, number] {
  const w = optionalRange(what, "displayWidth", init.displayWidth, 0, 0xffff_ffff);
  const h = optionalRange(what, "displayHeight", init.displayHeight, 0, 0xffff_ffff);
  if ((w === undefined) !== (h === undefined)) {
    throw new TypeError(`Cannot ${what}: give displayWidth and displayHeight together`);
  }
  if (w !== undefined && h !== undefined) {
    if (w === 0 || h === 0) throw new TypeError(`Cannot ${what}: a display size of 0`);
    return [w, h];
  }
  const dw = Math.round(visible.width * scale[0]), dh = Math.round(visible.height * scale[1]);
  return rotation % 180 ? [dh, dw] : [dw, dh];
}

/** The planes of a handle whose memory JS can view (DmaBufHandle, CpuPlanes, CpuBytes). */
function planesOf(resource: GpuResource<unknown>): PlaneView[] {
  const viewable = resource as unknown as { planes?: () => PlaneView[] };
  if (typeof viewable.planes !== "function") {
    throw new DOMException(
      `Cannot copy a VideoFrame: a ${resource.kind}'s memory is not the host's to read; import it with its API`,
      "NotSupportedError",
    );
  }
  return viewable.planes();
}

/** Format name and size of a frame-like handle, from its description. */
function geometry(
  resource: GpuResource<unknown>,
): { name: PixelFormatName | null; width: number; height: number } {
  const d = resource.describe() as unknown as Record<string, unknown>;
  const width = Number(d.width ?? 0), height = Number(d.height ?? 0);
  if (!width || !height) {
    throw new TypeError(
      `Cannot construct a VideoFrame: a ${resource.kind} has no width and height`,
    );
  }
  let name: PixelFormatName | null = null;
  if (typeof d.format === "string") name = d.format as PixelFormatName;
  else if (typeof d.fourcc === "number") name = PixelFormat.fromFourcc(d.fourcc)?.name ?? null;
  return { name, width, height };
}

function stateOfDecoded(resource: GpuResource<unknown>, init: DecodedFrameInit): FrameState {
  const g = geometry(resource);
  const meta = resource.meta;
  const visible = meta?.visible ?? { x: 0, y: 0, width: g.width, height: g.height };
  let [dw, dh] = [visible.width, visible.height];
  if (init.displayAspect) {
    const [aw, ah] = init.displayAspect; // the config's aspect at the visible height
    dw = Math.max(1, Math.round(visible.height * aw / ah));
    dh = visible.height;
  }
  if (init.rotation % 180) [dw, dh] = [dh, dw];
  return {
    format: g.name && webFormat(g.name),
    pixelFormat: g.name,
    codedWidth: g.width,
    codedHeight: g.height,
    visible,
    displayWidth: dw,
    displayHeight: dh,
    timestamp: init.timestamp,
    duration: init.duration,
    colorSpace: init.colorSpace ?? colorSpaceOfMeta(meta?.color ?? null),
    rotation: init.rotation,
    flip: init.flip,
    metadata: {},
  };
}

/**
 * The frames made from bytes: pools per format and size, replaced when all
 * their slots are out; the least recently used goes past MAX_POOLS (its
 * frames stay valid, its memory goes with them).
 */
const pools = new Map<string, FramePool>();
const MAX_POOLS = 4;

function slotFor(name: PixelFormatName, width: number, height: number) {
  const key = `${name}:${width}x${height}`;
  let pool = pools.get(key);
  let frame = pool?.tryAcquire();
  if (!pool || !frame) {
    pool?.close(); // its frames stay valid; each slot goes with its frame
    pool = FramePool.create({ format: name, width, height, slots: 8 });
    frame = pool.tryAcquire()!;
  }
  pools.delete(key);
  pools.set(key, pool); // the most recently used last
  for (const [old, p] of pools) {
    if (pools.size <= MAX_POOLS) break;
    p.close();
    pools.delete(old);
  }
  return { frame, views: pool.planes(frame) };
}

/** A frame of video: WebCodecs' VideoFrame, backed by a gpures handle. */
export class VideoFrame {
  #resource: GpuResource<unknown> | null;
  #s: FrameState;
  #onClose: (() => void) | undefined;

  static {
    adoptFrame = (resource, init) => {
      const state = stateOfDecoded(resource, init);
      return new (VideoFrame as unknown as AdoptingConstructor)(ADOPT, {
        resource,
        state,
        onClose: init.onClose,
      });
    };
    resourceOf = (frame) => frame.#resource;
  }

  /**
   * A frame over bytes (copied, or laid in a pool slot), over another
   * frame's memory (shared), or over a gpures handle (a clone of it: yours
   * stays yours). Images of a browser's DOM do not exist here.
   */
  constructor(data: ArrayBuffer | ArrayBufferView, init: VideoFrameBufferInit);
  /** A frame over another frame's memory, or over a gpures handle (a clone of it). */
  constructor(source: VideoFrame | GpuResource<unknown>, init?: VideoFrameInit);
  constructor(source: unknown, init?: unknown) {
    if (source === ADOPT) { // a handle of gpures' own, taken over as it is
      const a = init as Adopted;
      [this.#resource, this.#s, this.#onClose] = [a.resource, a.state, a.onClose];
      return;
    }
    if (source instanceof VideoFrame) {
      const base = source.#resource;
      if (!base) {
        throw new DOMException(
          "Cannot construct a VideoFrame from a closed one",
          "InvalidStateError",
        );
      }
      this.#s = frameInit("construct a VideoFrame", source.#s, init);
      this.#resource = base.clone();
    } else if (source instanceof GpuResource) {
      const what = "construct a VideoFrame";
      const g = geometry(source);
      const meta = source.meta;
      const d = dictionary<VideoFrameInit>(what, "init", init);
      let timestamp = d.timestamp;
      let duration = d.duration;
      if (timestamp === undefined && meta?.timing) {
        const t = meta.timing;
        timestamp = Math.round(t.pts * t.timebaseNum * 1e6 / t.timebaseDen);
        duration ??= t.duration
          ? Math.round(t.duration * t.timebaseNum * 1e6 / t.timebaseDen)
          : undefined;
      }
      if (timestamp === undefined) {
        throw new TypeError(
          `Cannot ${what}: timestamp is missing and the ${source.kind} has no timing`,
        );
      }
      const base: FrameState = {
        format: g.name && webFormat(g.name),
        pixelFormat: g.name,
        codedWidth: g.width,
        codedHeight: g.height,
        visible: meta?.visible ?? { x: 0, y: 0, width: g.width, height: g.height },
        displayWidth: 0,
        displayHeight: 0,
        timestamp: enforceRange(what, "timestamp", timestamp),
        duration: null,
        colorSpace: meta?.color
          ? colorSpaceOfMeta(meta.color)
          : new VideoColorSpace(g.name && PixelFormat.info(g.name).yuv ? REC709 : SRGB),
        rotation: 0,
        flip: false,
        metadata: {},
      };
      [base.displayWidth, base.displayHeight] = [base.visible.width, base.visible.height];
      this.#s = frameInit(what, base, { ...d, timestamp, duration });
      this.#resource = source.clone();
    } else if (
      source instanceof ArrayBuffer || source instanceof SharedArrayBuffer ||
      ArrayBuffer.isView(source)
    ) {
      const made = fromBytes(source, init);
      this.#s = made.state;
      this.#resource = made.resource;
    } else {
      throw new TypeError(
        "Cannot construct a VideoFrame: give bytes, a VideoFrame or a gpures handle (there are no DOM images here)",
      );
    }
  }

  /** The pixel format, or null once closed (or for a layout WebCodecs does not name). */
  get format(): VideoPixelFormat | null {
    return this.#resource ? this.#s.format : null;
  }
  /** Samples per row of the memory; 0 once closed. */
  get codedWidth(): number {
    return this.#resource ? this.#s.codedWidth : 0;
  }
  /** Rows of the memory; 0 once closed. */
  get codedHeight(): number {
    return this.#resource ? this.#s.codedHeight : 0;
  }
  /** The whole memory as a rectangle; null once closed. */
  get codedRect(): DOMRectReadOnly | null {
    return this.#resource
      ? rect({ x: 0, y: 0, width: this.#s.codedWidth, height: this.#s.codedHeight })
      : null;
  }
  /** The part to show; null once closed. */
  get visibleRect(): DOMRectReadOnly | null {
    return this.#resource ? rect(this.#s.visible) : null;
  }
  /** Clockwise degrees: 0, 90, 180 or 270. */
  get rotation(): number {
    return this.#resource ? this.#s.rotation : 0;
  }
  /** Mirrored horizontally. */
  get flip(): boolean {
    return this.#resource ? this.#s.flip : false;
  }
  /** Width to display at; 0 once closed. */
  get displayWidth(): number {
    return this.#resource ? this.#s.displayWidth : 0;
  }
  /** Height to display at; 0 once closed. */
  get displayHeight(): number {
    return this.#resource ? this.#s.displayHeight : 0;
  }
  /** Presentation time, microseconds (kept after close). */
  get timestamp(): number {
    return this.#s.timestamp;
  }
  /** Microseconds, or null (kept after close). */
  get duration(): number | null {
    return this.#s.duration;
  }
  /** The frame's colour; every member null once closed. */
  get colorSpace(): VideoColorSpace {
    return this.#resource ? this.#s.colorSpace : new VideoColorSpace();
  }
  /**
   * The gpures handle behind the frame, borrowed: valid until close(), and
   * not to be released (clone it to keep it). Null once closed.
   */
  get resource(): GpuResource<unknown> | null {
    return this.#resource;
  }

  /** The application's metadata given at construction. */
  metadata(): Record<string, unknown> {
    this.#live("read the metadata of");
    return { ...this.#s.metadata };
  }

  /** Bytes copyTo() needs with these options. */
  allocationSize(options: VideoFrameCopyToOptions = {}): number {
    return this.#plan(options).size;
  }

  /**
   * Copies `rect` (the visible rectangle by default) into `destination`, in
   * `layout` (planes packed by default), converted to RGB when `format` asks;
   * resolves with the layout written.
   */
  copyTo(
    destination: ArrayBuffer | ArrayBufferView,
    options: VideoFrameCopyToOptions = {},
  ): Promise<PlaneLayout[]> {
    try {
      const plan = this.#plan(options);
      const out = bufferSource("copy a VideoFrame", "destination", destination);
      if (out.byteLength < plan.size) {
        throw new TypeError(
          `Cannot copy a VideoFrame: destination has ${out.byteLength} bytes, the copy needs ${plan.size}`,
        );
      }
      const views = planesOf(this.#resource!).map(planeBytes);
      if (plan.to !== this.#s.format) {
        const { matrix, fullRange } = this.#s.colorSpace;
        convertToRgb(
          this.#s.format!,
          views,
          plan.rect,
          matrix,
          fullRange ?? false,
          plan.to,
          out,
          plan.planes[0].offset,
          plan.planes[0].stride,
        );
      } else {
        planeRects(plan.info, plan.rect).forEach((r, i) => {
          const { bytes, stride } = views[i];
          const { offset, stride: to } = plan.planes[i];
          for (let row = 0; row < r.rows; row++) {
            const from = (r.top + row) * stride + r.left;
            out.set(bytes.subarray(from, from + r.rowBytes), offset + row * to);
          }
        });
      }
      return Promise.resolve(plan.planes.map((p) => ({ ...p })));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** The checks of copyTo and allocationSize, in the spec's order. */
  #plan(options: unknown) {
    const what = "copy a VideoFrame";
    this.#live(what);
    const s = this.#s;
    if (s.format === null || s.pixelFormat === null) {
      throw new DOMException(
        `Cannot ${what}: its memory's layout (${
          s.pixelFormat ?? "unknown"
        }) has no WebCodecs format`,
        "NotSupportedError",
      );
    }
    const o = dictionary<VideoFrameCopyToOptions>(what, "options", options);
    const info = PixelFormat.info(s.pixelFormat);
    const r = o.rect === undefined
      ? s.visible
      : parseRect(what, "rect", o.rect, info, s.codedWidth, s.codedHeight);
    let to = s.format;
    let outInfo: PixelFormatInfo = info;
    if (o.format !== undefined) {
      to = enumMember(what, "format", o.format, VIDEO_PIXEL_FORMATS);
      if (!RGB_FORMATS.includes(to) || !convertible(s.format)) {
        throw new DOMException(
          `Cannot ${what}: ${s.format} converts to RGBA, RGBX, BGRA or BGRX only (not ${to})`,
          "NotSupportedError",
        );
      }
      outInfo = PixelFormat.info(gpuresFormat(to)!);
    }
    if (o.colorSpace !== undefined) {
      enumMember(what, "colorSpace", o.colorSpace, ["srgb", "display-p3"]);
    }
    const rects = planeRects(outInfo, { ...r, x: 0, y: 0 });
    const { planes, size } = computeLayout(what, rects, o.layout);
    return { info, rect: r, to, planes, size };
  }

  /** Another frame over the same memory; close each on its own. */
  clone(): VideoFrame {
    const resource = this.#live("clone");
    return new (VideoFrame as unknown as AdoptingConstructor)(ADOPT, {
      resource: resource.clone(),
      state: { ...this.#s },
      onClose: this.#onClose,
    });
  }

  /** Lets the memory go (a decoder's slot comes home once every clone is closed). Idempotent. */
  close(): void {
    const resource = this.#resource;
    if (!resource) return;
    this.#resource = null;
    resource.release();
    this.#onClose?.();
  }

  #live(what: string): GpuResource<unknown> {
    if (!this.#resource) {
      throw new DOMException(`Cannot ${what} a closed VideoFrame`, "InvalidStateError");
    }
    return this.#resource;
  }
}

function rect(r: Rect): DOMRectReadOnly {
  return Object.freeze({
    x: r.x,
    y: r.y,
    width: r.width,
    height: r.height,
    top: r.y,
    left: r.x,
    right: r.x + r.width,
    bottom: r.y + r.height,
    toJSON: () => ({ ...r }),
  }) as unknown as DOMRectReadOnly;
}

/** A frame made from another one: the spec's "Validate VideoFrameInit" and its overrides. */
function frameInit(what: string, base: FrameState, init: unknown): FrameState {
  const d = dictionary<VideoFrameInit>(what, "init", init);
  const info = base.pixelFormat ? PixelFormat.info(base.pixelFormat) : undefined;
  const visible = d.visibleRect === undefined || !info
    ? base.visible
    : parseRect(what, "visibleRect", d.visibleRect, info, base.codedWidth, base.codedHeight);
  const turn = parseRotation(what, d.rotation);
  const rotation = (base.rotation + (base.flip ? 360 - turn : turn)) % 360;
  const flip = base.flip !== Boolean(d.flip);
  const baseW = base.rotation % 180 ? base.displayHeight : base.displayWidth;
  const baseH = base.rotation % 180 ? base.displayWidth : base.displayHeight;
  const scale: [number, number] = [baseW / base.visible.width, baseH / base.visible.height];
  const [displayWidth, displayHeight] = displaySize(what, d, visible, rotation, scale);
  let format = base.format, pixelFormat = base.pixelFormat;
  if (
    d.alpha !== undefined && enumMember(what, "alpha", d.alpha, ["keep", "discard"]) === "discard"
  ) {
    if (format === "RGBA") [format, pixelFormat] = ["RGBX", "RgbxU8"];
    if (format === "BGRA") [format, pixelFormat] = ["BGRX", "BgrxU8"];
  }
  return {
    ...base,
    format,
    pixelFormat,
    visible,
    rotation,
    flip,
    displayWidth,
    displayHeight,
    timestamp: d.timestamp === undefined
      ? base.timestamp
      : enforceRange(what, "timestamp", d.timestamp),
    duration: d.duration === undefined
      ? base.duration
      : enforceRange(what, "duration", d.duration, 0),
    metadata: d.metadata === undefined ? base.metadata : { ...d.metadata },
  };
}

/** A frame over bytes: checked in the spec's order, then copied (or adopted) into a handle. */
function fromBytes(source: ArrayBuffer | SharedArrayBuffer | ArrayBufferView, init: unknown) {
  const what = "construct a VideoFrame";
  const d = requiredDictionary<VideoFrameBufferInit>(what, "init", init);
  const format = enumMember(what, "format", d.format, VIDEO_PIXEL_FORMATS);
  const codedWidth = enforceRange(what, "codedWidth", d.codedWidth, 0, 0xffff_ffff);
  const codedHeight = enforceRange(what, "codedHeight", d.codedHeight, 0, 0xffff_ffff);
  const timestamp = enforceRange(what, "timestamp", d.timestamp);
  // IDL conversion comes first: a bad colour name is a TypeError before any other check
  const colorSpace = new VideoColorSpace(
    d.colorSpace === undefined
      ? (format === "NV12" || format.startsWith("I") ? REC709 : SRGB)
      : dictionary(what, "colorSpace", d.colorSpace),
  );
  const duration = optionalRange(what, "duration", d.duration, 0);
  if (codedWidth === 0 || codedHeight === 0) {
    throw new TypeError(`Cannot ${what}: a coded size of 0`);
  }
  if (codedWidth > 16384 || codedHeight > 16384) {
    throw new TypeError(`Cannot ${what}: ${codedWidth}x${codedHeight} is larger than 16384x16384`);
  }
  const pixelFormat = gpuresFormat(format);
  if (!pixelFormat) {
    throw new DOMException(`Cannot ${what}: gpures has no ${format} layout`, "NotSupportedError");
  }
  const info = PixelFormat.info(pixelFormat);
  const full = { x: 0, y: 0, width: codedWidth, height: codedHeight };
  const visible = d.visibleRect === undefined
    ? full
    : parseRect(what, "visibleRect", d.visibleRect, info, codedWidth, codedHeight);
  const rotation = parseRotation(what, d.rotation);
  const [displayWidth, displayHeight] = displaySize(what, d, visible, rotation);
  const rects = planeRects(info, full);
  const { planes, size } = computeLayout(what, rects, d.layout);
  const data = bufferSource(what, "data", source);
  if (data.byteLength < size) {
    throw new TypeError(
      `Cannot ${what}: data has ${data.byteLength} bytes, the layout needs ${size}`,
    );
  }
  const transfer = transferList(what, d.transfer);
  const resource = info.drmFourcc
    ? intoSlot(pixelFormat, codedWidth, codedHeight, data, rects, planes)
    : intoBuffer(pixelFormat, codedWidth, codedHeight, data, rects, planes);
  try {
    resource.setMeta({
      visible,
      color: metaOfColorSpace(colorSpace),
      timing: { pts: timestamp, duration: duration ?? 0, timebaseNum: 1, timebaseDen: 1_000_000 },
    });
    detachAll(transfer);
  } catch (e) {
    resource.release(); // a transfer list that cannot be detached leaves no slot held
    throw e;
  }
  const state: FrameState = {
    format,
    pixelFormat,
    codedWidth,
    codedHeight,
    visible,
    displayWidth,
    displayHeight,
    timestamp,
    duration: duration ?? null,
    colorSpace,
    rotation,
    flip: Boolean(d.flip),
    metadata: d.metadata === undefined ? {} : { ...d.metadata },
  };
  return { state, resource };
}

type PlaneRects = ReturnType<typeof planeRects>;

/** One plane's rows of `data` (laid out as `from` says) into `to`, row after row. */
function copyRows(
  data: Uint8Array,
  from: PlaneLayout,
  r: PlaneRects[number],
  to: { bytes: Uint8Array; stride: number },
): void {
  for (let row = 0; row < r.rows; row++) {
    const at = from.offset + row * from.stride;
    to.bytes.set(data.subarray(at, at + r.rowBytes), row * to.stride);
  }
}

/** The bytes in a pool slot: a DmaBufHandle that encoders and sessions take as it is. */
function intoSlot(
  name: PixelFormatName,
  width: number,
  height: number,
  data: Uint8Array,
  rects: PlaneRects,
  layout: PlaneLayout[],
): GpuResource<unknown> {
  const { frame, views } = slotFor(name, width, height);
  rects.forEach((r, i) => copyRows(data, layout[i], r, planeBytes(views[i])));
  return frame;
}

/** The bytes in a buffer of the frame's own, as CpuPlanes (formats no DMA-BUF names). */
function intoBuffer(
  name: PixelFormatName,
  width: number,
  height: number,
  data: Uint8Array,
  rects: PlaneRects,
  layout: PlaneLayout[],
): GpuResource<unknown> {
  const planes = rects.map((r, i) => {
    const copy = new Uint8Array(r.rowBytes * r.rows);
    copyRows(data, layout[i], r, { bytes: copy, stride: r.rowBytes });
    return { data: copy, rowPitch: r.rowBytes };
  });
  return CpuPlanes.create({ format: name, width, height, planes });
}

/** A VideoFrame that takes over a decoder's handle (no clone). @ignore */
export function adoptVideoFrame(
  resource: GpuResource<unknown>,
  init: DecodedFrameInit,
): VideoFrame {
  return adoptFrame(resource, init);
}

/** The handle behind a frame, or null once closed. @ignore */
export function videoFrameResource(frame: VideoFrame): GpuResource<unknown> | null {
  return resourceOf(frame);
}
