// VideoEncoder over FrameEncoder: a frame in a format the encoder takes
// (I420 everywhere, NV12 for x264) is read where it lies, in its pool slot,
// here or received from another process; any other (RGB, 4:2:2, 4:4:4) is
// converted to I420 in a slot first, and that copy is counted in
// codecStats(). The libavcodec encoder is opened at the first frame, when
// its format is known.

import { countCopy, FrameEncoder, isCodecSupported } from "../codec/codec.ts";
import { DmaBufHandle } from "../kinds/dma_buf.ts";
import { FramePool } from "../frames/frame_pool.ts";
import type { PixelFormatName } from "../gen/types.ts";
import type { PlaneView } from "../map/planes.ts";
import { planeBytes as bytesOf } from "./pixel_layout.ts";
import { avcConfigurationRecord, toLengthPrefixed } from "./avc.ts";
import { hevcConfigurationRecord, hevcToLengthPrefixed } from "./hevc.ts";
import { type CodecRoute, parseCodecString } from "./codec_string.ts";
import { ACCELERATION, callBack, CodecMachine, codecName } from "./codec_machine.ts";
import { REC709, type VideoColorSpaceInit } from "./color_space.ts";
import { chunkOf, type EncodedVideoChunk } from "./encoded_chunk.ts";
import { convertible, convertToI420, type I420Planes } from "./rgb_convert.ts";
import type { VideoDecoderConfig } from "./video_decoder.ts";
import { VideoFrame, videoFrameResource } from "./video_frame.ts";
import { enforceRange, enumMember } from "./webidl.ts";

/** What an encoder is asked to make. */
export interface VideoEncoderConfig {
  /** A codec string of the WebCodecs registry: "avc1.42001f", "vp8", "vp09.00.10.08", "av01.0.04M.08", "hvc1.1.6.L93.B0". */
  codec: string;
  /** Of the stream: every frame's visible size. */
  width: number;
  /** Of the stream. */
  height: number;
  /** To display at, with displayHeight. */
  displayWidth?: number;
  /** To display at, with displayWidth. */
  displayHeight?: number;
  /** Bits per second. */
  bitrate?: number;
  /** Frames per second (30 when not given: rate control needs one). */
  framerate?: number;
  /** Only "no-preference" and "prefer-software" are supported (software encoders). */
  hardwareAcceleration?: "no-preference" | "prefer-hardware" | "prefer-software";
  /** Only "discard" is supported. */
  alpha?: "keep" | "discard";
  /** Only "L1T1" (no scalability) is supported. */
  scalabilityMode?: string;
  /** "variable" (default) or "constant"; "quantizer" is not supported. */
  bitrateMode?: "constant" | "variable" | "quantizer";
  /** "quality" (default) or "realtime": the encoder's fast, low-delay settings. */
  latencyMode?: "quality" | "realtime";
  /** A hint of the content ("motion", "detail", "text"). */
  contentHint?: string;
  /** H.264: "avc" (default; an avcC description, length-prefixed chunks) or "annexb". */
  avc?: { format?: "avc" | "annexb" };
  /** H.265: "hevc" (default; an hvcC description, length-prefixed chunks) or "annexb". */
  hevc?: { format?: "hevc" | "annexb" };
  /** AV1 options. */
  av1?: { forceScreenContentTools?: boolean };
}

/** isConfigSupported()'s answer. */
export interface VideoEncoderSupport {
  /** Whether configure() with it would work. */
  supported: boolean;
  /** The recognised members of the config, copied. */
  config: VideoEncoderConfig;
}

/** What comes with a chunk. */
export interface EncodedVideoChunkMetadata {
  /** With the first chunk and whenever it changes: what a decoder needs. */
  decoderConfig?: VideoDecoderConfig;
}

/** VideoEncoder's callbacks. */
export interface VideoEncoderInit {
  /** Every chunk, in decode order. */
  output: (chunk: EncodedVideoChunk, metadata: EncodedVideoChunkMetadata) => void;
  /** A fatal error (NotSupportedError, EncodingError); the encoder is closed. */
  error: (error: DOMException) => void;
}

/** encode()'s options. */
export interface VideoEncoderEncodeOptions {
  /** Make this frame a key frame. */
  keyFrame?: boolean;
}

/** The formats each encoder reads in place; anything else is converted to I420. */
const TAKES: Record<string, PixelFormatName[]> = { libx264: ["YUV420P", "NV12"] };
const DEFAULT_TAKES: PixelFormatName[] = ["YUV420P"];

/** Each encoder's settings for the two latency modes. */
const SPEED: Record<string, [string, string]> = {
  libx264: ["preset=veryfast", "preset=ultrafast:tune=zerolatency"],
  libx265: ["preset=ultrafast", "preset=ultrafast:tune=zerolatency"],
  libvpx: ["deadline=good:cpu-used=4", "deadline=realtime:cpu-used=8"],
  "libvpx-vp9": ["deadline=good:cpu-used=4", "deadline=realtime:cpu-used=8"],
  "libaom-av1": ["cpu-used=6", "usage=realtime:cpu-used=8"],
  libsvtav1: ["preset=10", "preset=12"],
};

/** The spec's "valid VideoEncoderConfig" and "Clone Configuration": TypeError, or the copy. */
function checkConfig(what: string, config: unknown): VideoEncoderConfig {
  if (typeof config !== "object" || config === null) {
    throw new TypeError(`Cannot ${what}: config is missing`);
  }
  const c = config as Record<string, unknown>;
  const size = (field: string) => {
    const v = enforceRange(what, field, c[field], 0, 0xffff_ffff);
    if (v === 0) throw new TypeError(`Cannot ${what}: ${field} must not be 0`);
    return v;
  };
  const out: VideoEncoderConfig = {
    codec: codecName(what, c.codec),
    width: size("width"),
    height: size("height"),
  };
  if ((c.displayWidth === undefined) !== (c.displayHeight === undefined)) {
    throw new TypeError(`Cannot ${what}: give displayWidth and displayHeight together`);
  }
  if (c.displayWidth !== undefined) {
    [out.displayWidth, out.displayHeight] = [size("displayWidth"), size("displayHeight")];
  }
  if (c.bitrate !== undefined) out.bitrate = enforceRange(what, "bitrate", c.bitrate, 0);
  if (c.framerate !== undefined) {
    const f = Number(c.framerate);
    if (!Number.isFinite(f) || f <= 0) {
      throw new TypeError(`Cannot ${what}: framerate must be above 0`);
    }
    out.framerate = f;
  }
  const pick = <T extends string>(field: keyof VideoEncoderConfig, names: readonly T[]) => {
    if (c[field] !== undefined) {
      (out as unknown as Record<string, unknown>)[field] = enumMember(what, field, c[field], names);
    }
  };
  pick("hardwareAcceleration", ACCELERATION);
  pick("alpha", ["keep", "discard"] as const);
  pick("bitrateMode", ["constant", "variable", "quantizer"] as const);
  pick("latencyMode", ["quality", "realtime"] as const);
  if (c.scalabilityMode !== undefined) out.scalabilityMode = String(c.scalabilityMode);
  if (c.contentHint !== undefined) out.contentHint = String(c.contentHint);
  const format = <T extends string>(field: "avc" | "hevc", names: readonly T[]) => {
    if (c[field] === undefined) return;
    const f = (c[field] as { format?: unknown }).format;
    out[field] = f === undefined
      ? {}
      : { format: enumMember(what, `${field}.format`, f, names) as never };
  };
  format("avc", ["avc", "annexb"] as const);
  format("hevc", ["hevc", "annexb"] as const);
  if (c.av1 !== undefined) {
    const screen = (c.av1 as { forceScreenContentTools?: unknown }).forceScreenContentTools;
    out.av1 = screen === undefined ? {} : { forceScreenContentTools: Boolean(screen) };
  }
  return out;
}

/** The libavcodec encoder for a config, or why there is none. */
function encoderFor(c: VideoEncoderConfig): { route: CodecRoute; name: string } | string {
  const route = parseCodecString(c.codec);
  if (!route) return `no codec of the registry is called ${JSON.stringify(c.codec)}`;
  if (c.hardwareAcceleration === "prefer-hardware") return "only software encoders are used";
  if (c.width > 16384 || c.height > 16384) {
    return `${c.width}x${c.height} is larger than 16384x16384`;
  }
  if (route.bitDepth > 8) return "10- and 12-bit frames have no DMA-BUF layout yet";
  if (c.width % 2 || c.height % 2) return "4:2:0 streams have an even width and height";
  if (c.alpha === "keep") return "no encoder here keeps alpha";
  if (c.scalabilityMode !== undefined && c.scalabilityMode !== "L1T1") {
    return `scalabilityMode ${c.scalabilityMode} is not supported (L1T1 only)`;
  }
  if (c.bitrateMode === "quantizer") return "bitrateMode quantizer is not supported";
  const name = route.encoders.find((e) => isCodecSupported(e, "encoder"));
  return name ? { route, name } : `this FFmpeg has none of ${route.encoders.join(", ")}`;
}

/** The stream's settings, fixed at configure(). */
interface Setup {
  config: VideoEncoderConfig;
  route: CodecRoute;
  name: string;
  /** Whose configuration record the stream's parameter sets go into (null: they stay in the stream). */
  record: "avc" | "hevc" | null;
}

/** WebCodecs' VideoEncoder: VideoFrames in, EncodedVideoChunks out. */
export class VideoEncoder extends CodecMachine {
  readonly #output: (chunk: EncodedVideoChunk, metadata: EncodedVideoChunkMetadata) => void;
  #setup: Setup | null = null;
  #encoder: FrameEncoder | null = null;
  #format: PixelFormatName | null = null;
  #orientation: [number, boolean] | null = null;
  #durations = new Map<bigint, number[]>();
  #sentConfig: string | null = null;
  #colorSpace: Required<VideoColorSpaceInit> | null = null;
  #convertPool: FramePool | null = null;
  /** The clones of frames given to encode() whose message has not ended. */
  readonly #held = new Set<VideoFrame>();

  /** An encoder that gives chunks to `init.output` and fatal errors to `init.error`. */
  constructor(init: VideoEncoderInit) {
    super("VideoEncoder", init);
    this.#output = init.output;
  }

  /** Frames given and not yet started. */
  get encodeQueueSize(): number {
    return this.queueSize;
  }

  /** Whether this runtime encodes `config`; rejects with TypeError for one that is not valid. */
  static isConfigSupported(config: VideoEncoderConfig): Promise<VideoEncoderSupport> {
    try {
      const copy = checkConfig("check a VideoEncoderConfig", config);
      return Promise.resolve({ supported: typeof encoderFor(copy) !== "string", config: copy });
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Sets up a stream; an unsupported one closes the encoder with NotSupportedError. */
  configure(config: VideoEncoderConfig): void {
    const copy = checkConfig("configure a VideoEncoder", config);
    this.beginConfigure();
    this.#orientation = null;
    this.enqueue(async (epoch) => {
      await this.#finishEncoder(epoch); // chunks of the previous configuration come out first
      this.#dropStream();
      const found = encoderFor(copy);
      if (!this.current(epoch)) return;
      if (typeof found === "string") {
        this.closeWith(
          new DOMException(
            `Cannot encode with ${JSON.stringify(copy.codec)}: ${found}`,
            "NotSupportedError",
          ),
        );
        return;
      }
      const family = found.route.family;
      const record = family === "avc" && copy.avc?.format !== "annexb"
        ? "avc"
        : family === "hevc" && copy.hevc?.format !== "annexb"
        ? "hevc"
        : null;
      this.#setup = { config: copy, route: found.route, name: found.name, record };
    });
  }

  /** Encodes a frame; the encoder takes its own reference, so close yours when you like. */
  encode(frame: VideoFrame, options: VideoEncoderEncodeOptions = {}): void {
    if (!(frame instanceof VideoFrame) || videoFrameResource(frame) === null) {
      throw new TypeError("Cannot encode: frame is closed or not a VideoFrame");
    }
    this.requireConfigured("encode");
    const orientation: [number, boolean] = [frame.rotation, frame.flip];
    if (
      this.#orientation &&
      (this.#orientation[0] !== orientation[0] || this.#orientation[1] !== orientation[1])
    ) {
      throw new DOMException(
        "Cannot encode: the frame's rotation and flip differ from the first frame's",
        "DataError",
      );
    }
    this.#orientation ??= orientation;
    const held = frame.clone();
    this.#held.add(held); // closed when its message ends, or at a reset that drops the message
    const keyFrame = Boolean(options?.keyFrame);
    this.enqueueCounted(async (epoch) => {
      try {
        if (!this.current(epoch) || !this.#setup) return;
        const setup = this.#setup;
        const input = await this.#input(held, setup);
        try {
          if (!this.current(epoch)) return; // reset while converting: nothing of it reaches the next stream
          this.#colorSpace ??= colorOf(held, input.converted);
          const encoder = this.#encoder ??= this.#open(setup, input.format, this.#colorSpace);
          if (input.format !== this.#format) {
            throw new DOMException(
              `Cannot encode: a ${input.format} frame after ${this.#format} ones`,
              "EncodingError",
            );
          }
          const pts = BigInt(held.timestamp);
          this.#durations.set(pts, [...this.#durations.get(pts) ?? [], held.duration ?? -1]);
          this.#deliver(epoch, await encoder.encode(input.handle, { keyFrame, timestamp: pts }));
        } finally {
          input.release();
        }
      } finally {
        this.#held.delete(held);
        held.close();
      }
    });
  }

  /** Resolves once every frame given was encoded and its chunks output. */
  flush(): Promise<void> {
    try {
      this.requireConfigured("flush");
    } catch (e) {
      return Promise.reject(e);
    }
    return this.enqueueFlush(async (epoch) => {
      await this.#finishEncoder(epoch); // libavcodec takes no frame after a drain: the next opens anew
    });
  }

  /** The frame as a DmaBufHandle in a format the encoder takes: its own, or converted into a slot. */
  async #input(frame: VideoFrame, setup: Setup) {
    const resource = videoFrameResource(frame)!;
    const { width, height } = setup.config;
    const visible = frame.visibleRect!;
    if (visible.width !== width || visible.height !== height) {
      throw new DOMException(
        `Cannot encode: the frame shows ${visible.width}x${visible.height}, the stream is ${width}x${height} (frames are not scaled)`,
        "EncodingError",
      );
    }
    const takes = TAKES[setup.name] ?? DEFAULT_TAKES;
    const own = resource instanceof DmaBufHandle ? formatOf(frame) : null;
    // Read in place only where the handle's own visible rectangle is the frame's (the C side crops by it).
    if (own && takes.includes(own) && sameRect(resource.meta?.visible, frame)) {
      return { handle: resource as DmaBufHandle, format: own, converted: false, release: () => {} };
    }
    if (!frame.format || !convertible(frame.format)) {
      throw new DOMException(
        `Cannot encode: a ${frame.format ?? resource.kind} frame cannot be converted`,
        "EncodingError",
      );
    }
    // The encoder holds its lookahead's frames: enough slots that waiting for one is rare.
    const pool = this.#convertPool ??= FramePool.create({
      format: "YUV420P",
      width,
      height,
      slots: 48,
    });
    const slot = pool.tryAcquire() ?? await pool.acquire({ timeout: 10_000 });
    const source = (resource as unknown as { planes(): PlaneView[] }).planes().map(bytesOf);
    const to = pool.planes(slot).map(bytesOf) as I420Planes;
    convertToI420(frame.format, source, visible, to);
    countCopy(pool.layout.size);
    return {
      handle: slot,
      format: "YUV420P" as PixelFormatName,
      converted: true,
      release: () => slot.release(),
    };
  }

  #open(setup: Setup, format: PixelFormatName, color: Required<VideoColorSpaceInit>): FrameEncoder {
    const c = setup.config;
    const speed = SPEED[setup.name]?.[c.latencyMode === "realtime" ? 1 : 0];
    const options = [setup.route.profileOptions, speed, colorOptions(color)].filter(Boolean).join(
      ":",
    );
    const rate = c.framerate ?? 30;
    this.#format = format;
    return FrameEncoder.create({
      codec: setup.name,
      format,
      width: c.width,
      height: c.height,
      options: options || undefined,
      framerate: [Math.max(1, Math.round(rate * 1000)), 1000],
      bitrate: c.bitrate || undefined,
      globalHeader: setup.record !== null,
    });
  }

  #deliver(epoch: number, packets: Awaited<ReturnType<FrameEncoder["encode"]>>): void {
    const setup = this.#setup;
    const encoder = this.#encoder;
    for (const p of packets) {
      if (!this.current(epoch) || !setup || !encoder) return;
      const durations = this.#durations.get(p.timestamp);
      const duration = durations?.shift();
      if (durations && !durations.length) this.#durations.delete(p.timestamp);
      const metadata: EncodedVideoChunkMetadata = {};
      const config = this.#decoderConfig(setup, encoder);
      const key = JSON.stringify(config, (_k, v) => v instanceof Uint8Array ? [...v] : v);
      if (key !== this.#sentConfig) {
        this.#sentConfig = key;
        metadata.decoderConfig = config;
      }
      const data = setup.record === "avc"
        ? toLengthPrefixed(p.data)
        : setup.record === "hevc"
        ? hevcToLengthPrefixed(p.data)
        : p.data;
      const chunk = chunkOf(
        p.key ? "key" : "delta",
        Number(p.timestamp),
        duration === undefined || duration < 0 ? null : duration,
        data,
      );
      callBack(() => this.#output(chunk, metadata));
    }
  }

  #decoderConfig(setup: Setup, encoder: FrameEncoder): VideoDecoderConfig {
    const c = setup.config;
    const config: VideoDecoderConfig = {
      codec: c.codec,
      codedWidth: c.width,
      codedHeight: c.height,
      displayAspectWidth: c.displayWidth ?? c.width,
      displayAspectHeight: c.displayHeight ?? c.height,
      colorSpace: { ...this.#colorSpace! },
      rotation: this.#orientation?.[0] ?? 0,
      flip: this.#orientation?.[1] ?? false,
    };
    if (setup.record) {
      const extradata = encoder.extradata;
      const record = setup.record === "avc"
        ? avcConfigurationRecord(extradata)
        : hevcConfigurationRecord(extradata);
      if (!record) {
        throw new DOMException("Cannot encode: the encoder gave no SPS and PPS", "EncodingError");
      }
      config.description = record;
    }
    return config;
  }

  /** The open encoder drained, its chunks output, and closed. */
  async #finishEncoder(epoch: number): Promise<void> {
    const encoder = this.#encoder;
    if (!encoder) return;
    try {
      this.#deliver(epoch, await encoder.flush());
    } finally {
      if (this.#encoder === encoder) this.#encoder = null;
      await encoder.close();
    }
  }

  /** Drops the FrameEncoder (releasing every frame it held) and the stream's state. */
  protected dropConfiguration(): void {
    const encoder = this.#encoder;
    this.#encoder = null;
    this.#setup = null;
    this.#dropStream();
    for (const frame of this.#held) frame.close(); // the frames of dropped messages: their slots go home
    this.#held.clear();
    void encoder?.close();
  }

  /** What belonged to the stream of one configuration (its format, colour, conversion slots). */
  #dropStream(): void {
    this.#format = null;
    this.#sentConfig = null;
    this.#colorSpace = null;
    this.#durations.clear();
    this.#convertPool?.close();
    this.#convertPool = null;
  }
}

/** Whether a handle's visible rectangle (none: the whole frame) is the frame's. */
function sameRect(
  v: { x: number; y: number; width: number; height: number } | null | undefined,
  frame: VideoFrame,
) {
  const r = frame.visibleRect!;
  const mine = v ?? { x: 0, y: 0, width: frame.codedWidth, height: frame.codedHeight };
  return mine.x === r.x && mine.y === r.y && mine.width === r.width && mine.height === r.height;
}

/** The gpures format of a DmaBufHandle-backed frame. */
function formatOf(frame: VideoFrame): PixelFormatName | null {
  const map: Record<string, PixelFormatName> = { I420: "YUV420P", NV12: "NV12" };
  return frame.format ? map[frame.format] ?? null : null;
}

/** FFmpeg's names of WebCodecs' colour values, where they differ. */
const FFMPEG_COLOR: Record<string, string> = {
  pq: "smpte2084",
  hlg: "arib-std-b67",
  "bt2020-ncl": "bt2020nc",
};

/** The colour as the context's AVOptions: what the encoder writes into the stream (H.264's VUI, VP9's and AV1's colour config). */
function colorOptions(c: Required<VideoColorSpaceInit>): string {
  const name = (v: string) => FFMPEG_COLOR[v] ?? v;
  return [
    `color_primaries=${name(c.primaries!)}`,
    `color_trc=${name(c.transfer!)}`,
    `colorspace=${name(c.matrix!)}`,
    `color_range=${c.fullRange ? "pc" : "tv"}`,
  ].join(":");
}

/** The stream's colour as decoderConfig says it: every member known (REC 709 where the frame is silent). */
function colorOf(frame: VideoFrame, converted: boolean): Required<VideoColorSpaceInit> {
  if (converted) return REC709; // what convertToI420 writes
  const c = frame.colorSpace;
  return {
    primaries: c.primaries ?? REC709.primaries,
    transfer: c.transfer ?? REC709.transfer,
    matrix: c.matrix ?? REC709.matrix,
    fullRange: c.fullRange ?? REC709.fullRange,
  };
}
