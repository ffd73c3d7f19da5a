// Deno's WebGPU as a frame consumer: each plane written into a GPUTexture by
// one queue.writeTexture straight from the memory it lies in (a pool slot's
// mapping, an aliased JS buffer), a WGSL compute pass to rgba8unorm, and a
// read-back. writeTexture's own staging copy is the only one: WebGPU has no
// way to wrap host memory as a texture.

import type { FormatCap } from "./device.ts";
import type { MatrixCoefficientsName, PixelFormatName } from "../gen/types.ts";
import { InvalidHandleError, ReleasedError, UnsupportedError } from "../errors.ts";
import { GpuResource } from "../kinds/gpu_resource.ts";
import { formatOfFourcc, PixelFormat } from "../map/pixel_format.ts";
import type { PlaneView } from "../map/planes.ts";
import type { CpuBytes, CpuPlanes } from "../kinds/cpu.ts";
import type { DmaBufHandle } from "../kinds/dma_buf.ts";
import { enumValue, optionalCount, optionsBag, own, suggestName } from "../table/values.ts";

const MATRIX_COEFFICIENTS_SET = 9; // gen/kinds.ts's enumeration set of H.273 matrices

/** The pixel formats {@link WebGpuFrameUploader} takes. */
export const WEBGPU_FRAME_FORMATS = [
  "NV12",
  "YUV420P",
  "P010LE",
  "RgbaU8",
  "BgraU8",
  "RgbxU8",
  "BgrxU8",
] as const;

/** A pixel format {@link WebGpuFrameUploader} takes: NV12, I420 (YUV420P), P010, 8-bit RGB. */
export type WebGpuFrameFormat = typeof WEBGPU_FRAME_FORMATS[number];

/**
 * What a WebGPU device takes from a frame, as negotiation rows: WebGPU has no
 * import, so every format {@link WebGpuFrameUploader} converts comes in host
 * memory (mapped planes, one `writeTexture` each), LINEAR, up to the device's
 * largest 2D texture.
 */
export function webGpuCaps(device: GPUDevice): FormatCap[] {
  const max = device.limits.maxTextureDimension2D;
  return WEBGPU_FRAME_FORMATS.map((format) => ({
    format,
    modifier: 0n,
    memory: ["host"],
    maxWidth: max,
    maxHeight: max,
    rowAlign: 1,
    externalOnly: false,
  }));
}

/** A YUV matrix: an H.273 name (`bt470bg` and `smpte170m` are BT.601), or `"bt601"`. */
export type YuvMatrix = MatrixCoefficientsName | "bt601";

/** The conversion a YUV frame gets: matrix and range. */
export interface FrameColor {
  /** The H.273 matrix coefficients ("bt601" is read as "smpte170m"). */
  matrix: MatrixCoefficientsName;
  /** Full range (0..255) rather than limited (16..235 luma, 16..240 chroma). */
  fullRange: boolean;
}

/** Colour metadata as a frame carries it ({@link GpuResource.meta} is one). */
export interface ColorMeta {
  /** The frame's colour description, or null. */
  color: { matrix: MatrixCoefficientsName; fullRange: boolean } | null;
}

/** What {@link WebGpuFrameUploader.upload} takes besides the frame. */
export interface UploadOptions {
  /** The pixel format ({@link WEBGPU_FRAME_FORMATS}); a handle's own when left out. Required with plane views. */
  format?: PixelFormatName;
  /** Width in pixels; a handle's own when left out. Required with plane views. */
  width?: number;
  /** Height in pixels; a handle's own when left out. Required with plane views. */
  height?: number;
  /**
   * Plane views to upload in place of the handle's own `planes()`: a pool's
   * cached views (`pool.planes(frame)`), which map each slot once.
   */
  planes?: readonly PlaneView[];
  /**
   * Colour metadata in place of the handle's: `frame.meta` for plane views
   * that come without their handle; null to ignore a handle's metadata, so
   * that `matrix` and `fullRange` decide.
   */
  meta?: ColorMeta | null;
  /** The matrix when the frame's metadata names none. */
  matrix?: YuvMatrix;
  /** The range when the frame carries no colour metadata (default: limited). */
  fullRange?: boolean;
}

/** A frame: its plane views, or a handle with `planes()` (CpuBytes, CpuPlanes, DmaBufHandle). */
export type FrameSource = readonly PlaneView[] | CpuBytes | CpuPlanes | DmaBufHandle;

/**
 * A frame in GPUTextures, one per plane. The uploader owns the textures and
 * hands out the same object for every frame of one format and size: the next
 * upload of that shape overwrites them.
 */
export interface UploadedFrame {
  /** The pixel format. */
  readonly format: WebGpuFrameFormat;
  /** Width in pixels. */
  readonly width: number;
  /** Height in pixels. */
  readonly height: number;
  /**
   * One texture per plane: r8unorm luma and rg8unorm (NV12) or r8unorm (I420)
   * chroma at half size; r16uint and rg16uint for P010; rgba8unorm or
   * bgra8unorm for RGB.
   */
  readonly textures: readonly GPUTexture[];
  /** The conversion {@link WebGpuFrameUploader.convertToRgba} applies; null for RGB formats. */
  readonly color: Readonly<FrameColor> | null;
}

/** {@link WebGpuFrameUploader}'s options. */
export interface WebGpuFrameUploaderOptions {
  /** Frame shapes (format, width, height) whose textures stay cached (default 4); the oldest go. */
  maxShapes?: number;
}

/**
 * Frame planes to rgba8unorm, one compute entry point per plane layout
 * (`nv12`, `i420`, `p010`, `copyRgba`, `opaqueRgba`), 8 x 8 pixels a
 * workgroup. Bindings of group 0: 0 the rgba8unorm storage texture written;
 * 1 the uniform `Coefficients` ({@link yuvToRgbCoefficients}); 2 luma, 3
 * chroma (NV12's UV, I420's U), 4 I420's V, as float textures; 5 and 6 P010's
 * luma and UV as uint textures; 7 an RGB texture. A YUV entry point turns
 * samples into code values (0..255, or 0..1023 for P010, whose low 6 bits
 * are dropped) and applies the coefficients; chroma is taken from the nearest
 * sample (4:2:0 replicated, not interpolated).
 */
export const FRAME_TO_RGBA_WGSL = `
struct Coefficients { r: vec4<f32>, g: vec4<f32>, b: vec4<f32> }

@group(0) @binding(0) var rgbaOut: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(1) var<uniform> k: Coefficients;
@group(0) @binding(2) var luma: texture_2d<f32>;
@group(0) @binding(3) var chroma: texture_2d<f32>;
@group(0) @binding(4) var chromaV: texture_2d<f32>;
@group(0) @binding(5) var luma16: texture_2d<u32>;
@group(0) @binding(6) var chroma16: texture_2d<u32>;
@group(0) @binding(7) var rgbIn: texture_2d<f32>;

fn inside(p: vec2<u32>) -> bool {
  return all(p < textureDimensions(rgbaOut));
}

// c: Y, Cb, Cr code values.
fn storeYcbcr(p: vec2<u32>, c: vec3<f32>) {
  let v = vec3(dot(k.r.xyz, c) + k.r.w, dot(k.g.xyz, c) + k.g.w, dot(k.b.xyz, c) + k.b.w);
  textureStore(rgbaOut, p, vec4(clamp(v, vec3(0.0), vec3(1.0)), 1.0));
}

@compute @workgroup_size(8, 8)
fn nv12(@builtin(global_invocation_id) id: vec3<u32>) {
  if (!inside(id.xy)) { return; }
  let y = textureLoad(luma, id.xy, 0).r;
  let uv = textureLoad(chroma, id.xy / 2u, 0).rg;
  storeYcbcr(id.xy, vec3(y, uv.x, uv.y) * 255.0);
}

@compute @workgroup_size(8, 8)
fn i420(@builtin(global_invocation_id) id: vec3<u32>) {
  if (!inside(id.xy)) { return; }
  let y = textureLoad(luma, id.xy, 0).r;
  let u = textureLoad(chroma, id.xy / 2u, 0).r;
  let v = textureLoad(chromaV, id.xy / 2u, 0).r;
  storeYcbcr(id.xy, vec3(y, u, v) * 255.0);
}

@compute @workgroup_size(8, 8)
fn p010(@builtin(global_invocation_id) id: vec3<u32>) {
  if (!inside(id.xy)) { return; }
  let y = textureLoad(luma16, id.xy, 0).r >> 6u;
  let uv = textureLoad(chroma16, id.xy / 2u, 0).rg >> vec2(6u);
  storeYcbcr(id.xy, vec3<f32>(vec3(y, uv.x, uv.y)));
}

@compute @workgroup_size(8, 8)
fn copyRgba(@builtin(global_invocation_id) id: vec3<u32>) {
  if (!inside(id.xy)) { return; }
  textureStore(rgbaOut, id.xy, textureLoad(rgbIn, id.xy, 0));
}

@compute @workgroup_size(8, 8)
fn opaqueRgba(@builtin(global_invocation_id) id: vec3<u32>) {
  if (!inside(id.xy)) { return; }
  textureStore(rgbaOut, id.xy, vec4(textureLoad(rgbIn, id.xy, 0).rgb, 1.0));
}
`;

interface PlaneSpec {
  texture: GPUTextureFormat;
  /** 2 for 4:2:0 chroma. */
  sub: 1 | 2;
  /** Bytes of one texel. */
  bytes: number;
  channels: number;
  binding: number;
}

interface FormatSpec {
  planes: PlaneSpec[];
  /** The WGSL entry point, or null when the plane is rgba8unorm already. */
  entry: string | null;
  /** Bits per sample code value; 0 for RGB. */
  bits: 0 | 8 | 10;
}

const plane = (
  texture: GPUTextureFormat,
  sub: 1 | 2,
  bytes: number,
  channels: number,
  binding: number,
): PlaneSpec => ({ texture, sub, bytes, channels, binding });

// r16unorm needs a feature Deno does not expose: P010 travels as uint and is scaled in WGSL.
const FORMATS: Record<WebGpuFrameFormat, FormatSpec> = {
  NV12: {
    planes: [plane("r8unorm", 1, 1, 1, 2), plane("rg8unorm", 2, 2, 2, 3)],
    entry: "nv12",
    bits: 8,
  },
  YUV420P: {
    planes: [
      plane("r8unorm", 1, 1, 1, 2),
      plane("r8unorm", 2, 1, 1, 3),
      plane("r8unorm", 2, 1, 1, 4),
    ],
    entry: "i420",
    bits: 8,
  },
  P010LE: {
    planes: [plane("r16uint", 1, 2, 1, 5), plane("rg16uint", 2, 4, 2, 6)],
    entry: "p010",
    bits: 10,
  },
  RgbaU8: { planes: [plane("rgba8unorm", 1, 4, 4, 7)], entry: null, bits: 0 },
  BgraU8: { planes: [plane("bgra8unorm", 1, 4, 4, 7)], entry: "copyRgba", bits: 0 },
  RgbxU8: { planes: [plane("rgba8unorm", 1, 4, 4, 7)], entry: "opaqueRgba", bits: 0 },
  BgrxU8: { planes: [plane("bgra8unorm", 1, 4, 4, 7)], entry: "opaqueRgba", bits: 0 },
};

/** Kr and Kb of each matrix (H.273 table 4); Kg = 1 - Kr - Kb. */
const LUMA_WEIGHTS: Partial<Record<MatrixCoefficientsName, readonly [number, number]>> = {
  bt709: [0.2126, 0.0722],
  fcc: [0.30, 0.11],
  bt470bg: [0.299, 0.114],
  smpte170m: [0.299, 0.114],
  smpte240m: [0.212, 0.087],
  "bt2020-ncl": [0.2627, 0.0593],
};

const COEFFICIENT_BYTES = 48; // three vec4<f32>

/**
 * The `Coefficients` uniform of {@link FRAME_TO_RGBA_WGSL}: three rows
 * (R, G, B) of four floats, `[wY, wCb, wCr, bias]`, that take Y, Cb, Cr
 * code values of `bitDepth` bits to 0..1. Limited range puts black at
 * 16 << (bitDepth - 8) and spans 219 (luma) or 224 (chroma) << (bitDepth - 8);
 * full range spans 2^bitDepth - 1.
 *
 * @example
 * ```ts
 * import { yuvToRgbCoefficients } from "@gpures/gpures";
 * const k = yuvToRgbCoefficients({ matrix: "bt709", fullRange: false });
 * console.log(Math.round(k[0] * 255 * 1000) / 1000); // 1.164: luma's gain in limited range
 * ```
 */
export function yuvToRgbCoefficients(
  color: { matrix: YuvMatrix; fullRange: boolean },
  bitDepth = 8,
): Float32Array<ArrayBuffer> {
  if (!Number.isInteger(bitDepth) || bitDepth < 8 || bitDepth > 16) {
    const why = `bitDepth must be an integer from 8 to 16, not ${String(bitDepth)}`;
    throw invalid("bitDepth", why, "compute coefficients");
  }
  const [kr, kb] = LUMA_WEIGHTS[checkedMatrix("matrix", color.matrix)]!;
  const kg = 1 - kr - kb;
  const scale = 2 ** (bitDepth - 8);
  const max = 2 ** bitDepth - 1;
  const yOff = color.fullRange ? 0 : 16 * scale, ySpan = color.fullRange ? max : 219 * scale;
  const cOff = 2 ** (bitDepth - 1), cSpan = color.fullRange ? max : 224 * scale;
  const rv = 2 * (1 - kr), bu = 2 * (1 - kb);
  const gu = (2 * kb * (1 - kb)) / kg, gv = (2 * kr * (1 - kr)) / kg;
  const row = (wCb: number, wCr: number) => {
    const wY = 1 / ySpan;
    return [wY, wCb, wCr, -(wY * yOff + (wCb + wCr) * cOff)];
  };
  return new Float32Array([
    ...row(0, rv / cSpan),
    ...row(-gu / cSpan, -gv / cSpan),
    ...row(bu / cSpan, 0),
  ]);
}

/** One cached shape: the plane textures, and what the conversion pass needs. */
interface Slot {
  key: string;
  frame: { -readonly [K in keyof UploadedFrame]: UploadedFrame[K] };
  spec: FormatSpec;
  rgba?: GPUTexture;
  uniform?: GPUBuffer;
  bindGroup?: GPUBindGroup;
  /** The colour whose coefficients the uniform holds. */
  uniformColor?: string;
}

/**
 * Uploads frames into GPUTextures of one GPUDevice and converts them to
 * rgba8unorm. Each plane is written by one `queue.writeTexture` straight from
 * its plane view, row stride as given (writeTexture needs no 256-byte rows).
 * Textures are cached per format and size, so steady-state frames allocate
 * no GPU memory; the textures of {@link UploadedFrame} and the result of
 * {@link WebGpuFrameUploader.convertToRgba} are overwritten by the next frame
 * of the same shape (queue order keeps earlier submitted work correct).
 *
 * The YUV matrix and range come from the frame's colour metadata
 * (`frame.meta.color`, or `options.meta`) when present (a matrix of
 * "unspecified" counts as absent), else from `options.matrix` and
 * `options.fullRange`, else the default: BT.709 for frames 720 rows high
 * or more, BT.601 below, limited range.
 *
 * @example
 * ```ts
 * import { CpuBytes, readRgbaTexture, WebGpuFrameUploader } from "@gpures/gpures";
 * const device = await (await navigator.gpu.requestAdapter())!.requestDevice();
 * const data = new Uint8Array(64 * 32 * 3 / 2).fill(128);
 * using frame = CpuBytes.create({ data, rowPitch: 64, format: "NV12", width: 64, height: 32 });
 * using uploader = new WebGpuFrameUploader(device);
 * const rgba = uploader.convertToRgba(uploader.upload(frame));
 * const pixels = await readRgbaTexture(device, rgba);
 * console.log(pixels.length, pixels[0]); // 8192 130: grey, BT.601 limited range
 * ```
 */
export class WebGpuFrameUploader {
  /** The device every texture belongs to. */
  readonly device: GPUDevice;
  readonly #maxShapes: number;
  readonly #maxDimension: number;
  readonly #slots = new Map<string, Slot>();
  readonly #pipelines = new Map<string, GPUComputePipeline>();
  #module?: GPUShaderModule;
  #last?: Slot;
  #destroyed = false;

  /** Makes an uploader for `device`; textures are made as frames come. */
  constructor(device: GPUDevice, options: WebGpuFrameUploaderOptions = {}) {
    const what = "create a WebGpuFrameUploader";
    optionsBag(what, options);
    const maxShapes = optionalCount(
      what,
      "maxShapes",
      own(options, "maxShapes"),
      1,
      0xffff_ffff,
      4,
    );
    this.device = device;
    this.#maxShapes = maxShapes;
    this.#maxDimension = device.limits.maxTextureDimension2D;
  }

  /**
   * Writes a frame's planes into this uploader's textures for its shape: one
   * `queue.writeTexture` per plane, from the plane view itself (no JS copy).
   * A handle gives its format, size, planes and colour metadata unless
   * `options` does; plane views need `format`, `width` and `height`.
   * Throws InvalidHandleError naming the field for an unknown format, an odd
   * 4:2:0 size or a plane too small for its rows, and UnsupportedError for a
   * format or matrix this bridge does not convert or a size beyond the
   * device's `maxTextureDimension2D`.
   */
  upload(source: FrameSource, given: UploadOptions = {}): UploadedFrame {
    this.#live("upload");
    const options = ownUploadOptions(given);
    const frame = frameOf(source, options);
    const format = supportedFormat(frame.format);
    const spec = FORMATS[format];
    this.#checkExtent("width", frame.width, format, spec);
    this.#checkExtent("height", frame.height, format, spec);
    const views = frame.planes();
    checkPlanes(views, format, spec, frame.width, frame.height);
    const slot = this.#slotFor(format, frame.width, frame.height);
    slot.frame.color = spec.bits ? colorOf(frame.meta(), options, frame.height) : null;
    for (let i = 0; i < views.length; i++) this.#writePlane(slot, i, views[i]);
    return slot.frame;
  }

  /**
   * Converts an uploaded frame to rgba8unorm (usage STORAGE_BINDING,
   * TEXTURE_BINDING, COPY_SRC) with one compute pass, submitted before this
   * returns; `await device.queue.onSubmittedWorkDone()` to wait for it. An
   * RgbaU8 frame's plane texture is returned as is, with no pass.
   */
  convertToRgba(frame: UploadedFrame): GPUTexture {
    this.#live("convert");
    const slot = this.#last?.frame === frame
      ? this.#last
      : this.#slots.get(shapeKey(frame.format, frame.width, frame.height));
    if (!slot || slot.frame !== frame) {
      throw new ReleasedError(
        "Cannot convert: the frame's textures were dropped (more shapes than maxShapes came since)",
        "STALE",
        "frame",
      );
    }
    if (!slot.spec.entry) return frame.textures[0];
    const bindGroup = this.#bindGroupOf(slot);
    const encoder = this.device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(this.#pipeline(slot.spec.entry));
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(Math.ceil(frame.width / 8), Math.ceil(frame.height / 8));
    pass.end();
    this.device.queue.submit([encoder.finish()]);
    return slot.rgba!;
  }

  /** Whether {@link WebGpuFrameUploader.destroy} was called. */
  get destroyed(): boolean {
    return this.#destroyed;
  }

  /**
   * Destroys every texture and buffer this uploader made; it then refuses
   * work (`upload()`, `convertToRgba()`: ReleasedError, field "uploader").
   * `device` stays. Idempotent.
   */
  destroy(): void {
    this.#destroyed = true;
    for (const slot of this.#slots.values()) destroySlot(slot);
    this.#slots.clear();
    this.#last = undefined;
  }

  /** Destroys at the end of a `using` block. */
  [Symbol.dispose](): void {
    this.destroy();
  }

  #live(verb: string): void {
    if (this.#destroyed) {
      throw new ReleasedError(`Cannot ${verb}: the uploader was destroyed`, "STALE", "uploader");
    }
  }

  #checkExtent(field: "width" | "height", value: number, format: string, spec: FormatSpec): void {
    if (!Number.isInteger(value) || value < 1) {
      throw invalid(field, `${field} must be a positive integer, not ${String(value)}`);
    }
    if (spec.planes.length > 1 && value % 2) {
      throw invalid(
        field,
        `${format} halves chroma both ways, so ${field} must be even, not ${value}`,
      );
    }
    if (value > this.#maxDimension) {
      throw new UnsupportedError(
        `Cannot upload: ${field} ${value} is above this device's maxTextureDimension2D (${this.#maxDimension})`,
        "UNSUPPORTED",
        field,
      );
    }
  }

  /** The cached textures of a shape, made the first time it comes (the last one is checked first). */
  #slotFor(format: WebGpuFrameFormat, width: number, height: number): Slot {
    const last = this.#last;
    if (
      last?.frame.format === format && last.frame.width === width && last.frame.height === height
    ) {
      return last;
    }
    const key = shapeKey(format, width, height);
    let slot = this.#slots.get(key);
    if (slot) this.#slots.delete(key); // re-inserted below: most recently used last
    slot ??= this.#newSlot(key, format, width, height);
    this.#slots.set(key, slot);
    if (this.#slots.size > this.#maxShapes) {
      const [oldest] = this.#slots.values();
      this.#slots.delete(oldest.key);
      destroySlot(oldest);
    }
    return this.#last = slot;
  }

  #newSlot(key: string, format: WebGpuFrameFormat, width: number, height: number): Slot {
    const spec = FORMATS[format];
    const textures = spec.planes.map((p) =>
      this.device.createTexture({
        label: `gpures ${format} ${width}x${height} plane`,
        size: [width / p.sub, height / p.sub],
        format: p.texture,
        usage: GPUTextureUsage.COPY_DST | GPUTextureUsage.TEXTURE_BINDING |
          GPUTextureUsage.COPY_SRC,
      })
    );
    return { key, spec, frame: { format, width, height, textures, color: null } };
  }

  #writePlane(slot: Slot, i: number, view: PlaneView): void {
    const p = slot.spec.planes[i];
    const width = slot.frame.width / p.sub, height = slot.frame.height / p.sub;
    this.device.queue.writeTexture(
      { texture: slot.frame.textures[i] },
      view.data as Uint8Array<ArrayBuffer>,
      { bytesPerRow: view.stride * view.data.BYTES_PER_ELEMENT, rowsPerImage: height },
      [width, height],
    );
  }

  /** The slot's bind group, made once, with the uniform rewritten when the colour changed. */
  #bindGroupOf(slot: Slot): GPUBindGroup {
    const { spec, frame } = slot;
    if (spec.bits) {
      slot.uniform ??= this.device.createBuffer({
        label: "gpures YUV coefficients",
        size: COEFFICIENT_BYTES,
        usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
      });
      const color = `${frame.color!.matrix} ${frame.color!.fullRange}`;
      if (slot.uniformColor !== color) {
        this.device.queue.writeBuffer(
          slot.uniform,
          0,
          yuvToRgbCoefficients(frame.color!, spec.bits),
        );
        slot.uniformColor = color;
      }
    }
    slot.rgba ??= this.device.createTexture({
      label: `gpures rgba ${frame.width}x${frame.height}`,
      size: [frame.width, frame.height],
      format: "rgba8unorm",
      usage: GPUTextureUsage.STORAGE_BINDING | GPUTextureUsage.TEXTURE_BINDING |
        GPUTextureUsage.COPY_SRC,
    });
    return slot.bindGroup ??= this.device.createBindGroup({
      label: `gpures ${frame.format} to rgba`,
      layout: this.#pipeline(spec.entry!).getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: slot.rgba.createView() },
        ...(slot.uniform ? [{ binding: 1, resource: { buffer: slot.uniform } }] : []),
        ...spec.planes.map((p, i) => ({
          binding: p.binding,
          resource: frame.textures[i].createView(),
        })),
      ],
    });
  }

  #pipeline(entry: string): GPUComputePipeline {
    let pipeline = this.#pipelines.get(entry);
    if (!pipeline) {
      this.#module ??= this.device.createShaderModule({
        label: "gpures frame to rgba",
        code: FRAME_TO_RGBA_WGSL,
      });
      pipeline = this.device.createComputePipeline({
        label: `gpures ${entry}`,
        layout: "auto",
        compute: { module: this.#module, entryPoint: entry },
      });
      this.#pipelines.set(entry, pipeline);
    }
    return pipeline;
  }
}

const TEXEL_BYTES_4: ReadonlySet<string> = new Set([
  "rgba8unorm",
  "rgba8unorm-srgb",
  "bgra8unorm",
  "bgra8unorm-srgb",
  "rgba8uint",
  "rgba8sint",
  "rgba8snorm",
]);

/**
 * The texels of a 4-byte-per-texel 2D texture (rgba8unorm, bgra8unorm, ...;
 * usage COPY_SRC), rows packed `width * 4` bytes apart, in the texture's own
 * channel order. The copy goes through a buffer whose rows are padded to 256
 * bytes, as copyTextureToBuffer requires; the padding is dropped here.
 *
 * @example
 * ```ts
 * import { readRgbaTexture } from "@gpures/gpures";
 * const device = await (await navigator.gpu.requestAdapter())!.requestDevice();
 * const texture = device.createTexture({
 *   size: [3, 2],
 *   format: "rgba8unorm",
 *   usage: GPUTextureUsage.COPY_DST | GPUTextureUsage.COPY_SRC,
 * });
 * device.queue.writeTexture({ texture }, new Uint8Array(24).fill(7), { bytesPerRow: 12 }, [3, 2]);
 * console.log((await readRgbaTexture(device, texture)).join("") === "7".repeat(24)); // true
 * ```
 */
export async function readRgbaTexture(device: GPUDevice, texture: GPUTexture): Promise<Uint8Array> {
  if (!TEXEL_BYTES_4.has(texture.format)) {
    throw new UnsupportedError(
      `Cannot read texture: format ${texture.format} does not have 4-byte texels`,
      "UNSUPPORTED",
      "texture.format",
    );
  }
  if (!(texture.usage & GPUTextureUsage.COPY_SRC)) {
    throw invalid("texture.usage", "texture.usage lacks COPY_SRC", "read texture");
  }
  const { width, height } = texture;
  const rowBytes = width * 4;
  const paddedRow = Math.ceil(rowBytes / 256) * 256;
  const buffer = device.createBuffer({
    size: paddedRow * height,
    usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ,
  });
  try {
    const encoder = device.createCommandEncoder();
    encoder.copyTextureToBuffer({ texture }, { buffer, bytesPerRow: paddedRow }, [width, height]);
    device.queue.submit([encoder.finish()]);
    await buffer.mapAsync(GPUMapMode.READ);
    const padded = new Uint8Array(buffer.getMappedRange());
    const out = new Uint8Array(rowBytes * height);
    for (let y = 0; y < height; y++) {
      out.set(padded.subarray(y * paddedRow, y * paddedRow + rowBytes), y * rowBytes);
    }
    return out;
  } finally {
    buffer.destroy();
  }
}

/** What upload() needs of its source, the handle read only for what options leave out. */
interface Frame {
  format: unknown;
  width: number;
  height: number;
  planes(): readonly PlaneView[];
  meta(): ColorMeta | null;
}

/** The caller's own upload options, each read once (an inherited one is not the caller's). */
function ownUploadOptions(given: UploadOptions): UploadOptions {
  optionsBag("upload", given);
  const options: UploadOptions = {};
  for (const key of UPLOAD_OPTIONS) {
    const v = own(given, key);
    if (v !== undefined) (options as Record<string, unknown>)[key] = v;
  }
  return options;
}

function frameOf(source: FrameSource, options: UploadOptions): Frame {
  const { format, width, height } = options;
  if (Array.isArray(source)) {
    for (const field of ["format", "width", "height"] as const) {
      if (options[field] === undefined) {
        throw invalid(field, `plane views come without a ${field}: give options.${field}`);
      }
    }
    const views = source as readonly PlaneView[];
    return {
      format,
      width: width!,
      height: height!,
      planes: () => views,
      meta: () => options.meta ?? null,
    };
  }
  if (!(source instanceof GpuResource)) {
    throw invalid(
      "source",
      "source must be plane views or a handle (CpuBytes, CpuPlanes, DmaBufHandle)",
    );
  }
  const handle = source as unknown as Handle;
  const d = format === undefined || width === undefined || height === undefined
    ? handle.describe()
    : {};
  return {
    format: format ?? d.format ??
      (d.fourcc === undefined ? undefined : formatOfFourcc(d.fourcc)?.name),
    width: width ?? d.width ?? 0,
    height: height ?? d.height ?? 0,
    planes: () => options.planes ?? planesOf(handle),
    meta: () => options.meta !== undefined ? options.meta : handle.meta,
  };
}

const UPLOAD_OPTIONS = [
  "format",
  "width",
  "height",
  "planes",
  "meta",
  "matrix",
  "fullRange",
] as const;

/** What upload() reads of a handle; `planes` is checked, as JS callers may pass any kind. */
interface Handle {
  kind: string;
  describe(): { format?: string; fourcc?: number; width?: number; height?: number };
  planes?: () => PlaneView[];
  meta: ColorMeta | null;
}

function planesOf(handle: Handle): PlaneView[] {
  if (typeof handle.planes !== "function") {
    throw invalid("planes", `a ${handle.kind} has no plane views: give options.planes`);
  }
  return handle.planes();
}

/** The format as one this bridge uploads; an unknown name and an unsupported one fail apart. */
function supportedFormat(format: unknown): WebGpuFrameFormat {
  if (typeof format === "string" && Object.hasOwn(FORMATS, format)) {
    return format as WebGpuFrameFormat;
  }
  const known = typeof format === "string" && (PixelFormat.names() as string[]).includes(format);
  if (!known) {
    throw invalid(
      "format",
      `format ${JSON.stringify(format) ?? String(format)} is not a PixelFormat: ${
        suggestName(format, WEBGPU_FRAME_FORMATS)
      }`,
    );
  }
  throw new UnsupportedError(
    `Cannot upload: format ${format} is not one the WebGPU bridge converts (${
      WEBGPU_FRAME_FORMATS.join(", ")
    })`,
    "UNSUPPORTED",
    "format",
  );
}

function checkPlanes(
  views: readonly PlaneView[],
  format: WebGpuFrameFormat,
  spec: FormatSpec,
  width: number,
  height: number,
): void {
  if (!Array.isArray(views) || views.length !== spec.planes.length) {
    throw invalid(
      "planes",
      `${format} has ${spec.planes.length} planes but ${
        Array.isArray(views) ? views.length : "no"
      } came`,
    );
  }
  views.forEach((view, i) => checkPlane(view, i, spec.planes[i], width, height));
}

/** A plane must hold `height / sub` rows of `width / sub` texels, `stride` elements apart. */
function checkPlane(view: PlaneView, i: number, p: PlaneSpec, width: number, height: number): void {
  const data = view?.data;
  if (!(data instanceof Uint8Array) && !(data instanceof Uint16Array)) {
    throw invalid(`planes[${i}].data`, `planes[${i}].data must be a Uint8Array or a Uint16Array`);
  }
  if (view.channels !== p.channels) {
    throw invalid(
      `planes[${i}].channels`,
      `planes[${i}] has ${view.channels} channels but a ${p.texture} plane has ${p.channels}`,
    );
  }
  const rowBytes = (width / p.sub) * p.bytes, rows = height / p.sub;
  const stride = view.stride * data.BYTES_PER_ELEMENT;
  if (!Number.isInteger(view.stride) || stride < rowBytes) {
    throw invalid(
      `planes[${i}].stride`,
      `planes[${i}].stride is ${stride} bytes, below the ${rowBytes} of a row`,
    );
  }
  const needed = stride * (rows - 1) + rowBytes;
  if (data.byteLength < needed) {
    throw invalid(
      `planes[${i}].data`,
      `planes[${i}].data has ${data.byteLength} bytes but ${rows} rows of ${rowBytes} bytes, ${stride} apart, need ${needed}`,
    );
  }
}

const MATRIX_ALIASES: Partial<Record<YuvMatrix, MatrixCoefficientsName>> = { bt601: "smpte170m" };

/** Metadata first, then options, then the size's default (see WebGpuFrameUploader). */
function colorOf(meta: ColorMeta | null, options: UploadOptions, height: number): FrameColor {
  const tagged = meta?.color ?? null;
  let matrix: MatrixCoefficientsName | undefined;
  if (tagged && tagged.matrix !== "unspecified") {
    matrix = checkedMatrix("color.matrix", tagged.matrix);
  }
  if (matrix === undefined && options.matrix !== undefined) {
    matrix = checkedMatrix("matrix", options.matrix);
  }
  matrix ??= height >= 720 ? "bt709" : "smpte170m";
  if (options.fullRange !== undefined && typeof options.fullRange !== "boolean") {
    throw invalid("fullRange", `fullRange must be a boolean, not ${String(options.fullRange)}`);
  }
  return { matrix, fullRange: tagged ? tagged.fullRange : options.fullRange ?? false };
}

/** The matrix as a name the bridge converts: InvalidHandleError for no H.273 name, else UnsupportedError. */
function checkedMatrix(field: string, given: unknown): MatrixCoefficientsName {
  const matrix = typeof given === "string" ? MATRIX_ALIASES[given as YuvMatrix] ?? given : "";
  if (Object.hasOwn(LUMA_WEIGHTS, matrix)) return matrix as MatrixCoefficientsName;
  if (enumValue(MATRIX_COEFFICIENTS_SET, matrix) === undefined) {
    throw invalid(field, `${field} ${String(given)} is not an H.273 matrix name`, "convert");
  }
  const known = [...Object.keys(LUMA_WEIGHTS), "bt601"].join(", ");
  throw new UnsupportedError(
    `Cannot convert: ${field} ${matrix} is not a matrix the bridge converts (${known})`,
    "UNSUPPORTED",
    field,
  );
}

function shapeKey(format: string, width: number, height: number): string {
  return `${format} ${width}x${height}`;
}

function destroySlot(slot: Slot): void {
  for (const t of slot.frame.textures) t.destroy();
  slot.rgba?.destroy();
  slot.uniform?.destroy();
}

function invalid(field: string, message: string, verb = "upload"): InvalidHandleError {
  return new InvalidHandleError(`Cannot ${verb}: ${message}`, "INVALID_VALUE", field);
}
