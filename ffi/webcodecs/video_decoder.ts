// VideoDecoder over FrameDecoder: each output VideoFrame is the decoder's
// pool slot, written once by libavcodec and never copied. While every slot
// is held (frames not closed yet) the decoder waits, and decodeQueueSize
// shows it; closing a frame, or a short poll for frames released elsewhere
// (another Worker, another process), lets it go on.

import { FrameDecoder, isCodecSupported } from "../codec/codec.ts";
import type { DmaBufHandle } from "../kinds/dma_buf.ts";
import { type CodecRoute, parseCodecString } from "./codec_string.ts";
import {
  ACCELERATION,
  asDomException,
  callBack,
  CodecMachine,
  codecName,
} from "./codec_machine.ts";
import { parseRotation } from "./pixel_layout.ts";
import { colorSpaceOfMeta, VideoColorSpace, type VideoColorSpaceInit } from "./color_space.ts";
import { chunkBytes, EncodedVideoChunk } from "./encoded_chunk.ts";
import { adoptVideoFrame, type VideoFrame } from "./video_frame.ts";
import { bufferSource, enforceRange, enumMember } from "./webidl.ts";

/** What a decoder is told of the stream. */
export interface VideoDecoderConfig {
  /** A codec string of the WebCodecs registry: "avc1.64001f", "vp8", "vp09.00.10.08", "av01.0.04M.08", "hvc1.1.6.L93.B0". */
  codec: string;
  /** The configuration record (avcC, hvcC): H.264 and H.265 chunks are then length-prefixed, else Annex B. */
  description?: ArrayBuffer | ArrayBufferView;
  /** Coded width, with codedHeight. */
  codedWidth?: number;
  /** Coded height, with codedWidth. */
  codedHeight?: number;
  /** Display aspect: width part, with displayAspectHeight. */
  displayAspectWidth?: number;
  /** Display aspect: height part. */
  displayAspectHeight?: number;
  /** Overrides the stream's colour. */
  colorSpace?: VideoColorSpaceInit;
  /** Only "no-preference" and "prefer-software" are supported (software decoders). */
  hardwareAcceleration?: "no-preference" | "prefer-hardware" | "prefer-software";
  /** Output each frame as soon as it can be. */
  optimizeForLatency?: boolean;
  /** Clockwise degrees of every output frame. */
  rotation?: number;
  /** Mirror every output frame. */
  flip?: boolean;
}

/** isConfigSupported()'s answer. */
export interface VideoDecoderSupport {
  /** Whether configure() with it would work. */
  supported: boolean;
  /** The recognised members of the config, copied. */
  config: VideoDecoderConfig;
}

/** VideoDecoder's callbacks. */
export interface VideoDecoderInit {
  /** Every decoded frame, in presentation order; close each. */
  output: (frame: VideoFrame) => void;
  /** A fatal error (NotSupportedError, EncodingError); the decoder is closed. */
  error: (error: DOMException) => void;
}

/** The spec's "valid VideoDecoderConfig" and "Clone Configuration": TypeError, or the copy. */
function checkConfig(what: string, config: unknown): VideoDecoderConfig {
  if (typeof config !== "object" || config === null) {
    throw new TypeError(`Cannot ${what}: config is missing`);
  }
  const c = config as Record<string, unknown>;
  const out: VideoDecoderConfig = { codec: codecName(what, c.codec) };
  if (c.description !== undefined) {
    out.description = bufferSource(what, "description", c.description).slice();
  }
  const pair = (
    a: "codedWidth" | "displayAspectWidth",
    b: "codedHeight" | "displayAspectHeight",
  ) => {
    if ((c[a] === undefined) !== (c[b] === undefined)) {
      throw new TypeError(`Cannot ${what}: give ${a} and ${b} together`);
    }
    if (c[a] === undefined) return;
    out[a] = enforceRange(what, a, c[a], 0, 0xffff_ffff);
    out[b] = enforceRange(what, b, c[b], 0, 0xffff_ffff);
    if (out[a] === 0 || out[b] === 0) {
      throw new TypeError(`Cannot ${what}: ${a} and ${b} must not be 0`);
    }
  };
  pair("codedWidth", "codedHeight");
  pair("displayAspectWidth", "displayAspectHeight");
  if (c.colorSpace !== undefined) {
    out.colorSpace = new VideoColorSpace(c.colorSpace as VideoColorSpaceInit).toJSON();
  }
  if (c.hardwareAcceleration !== undefined) {
    out.hardwareAcceleration = enumMember(
      what,
      "hardwareAcceleration",
      c.hardwareAcceleration,
      ACCELERATION,
    );
  }
  if (c.optimizeForLatency !== undefined) out.optimizeForLatency = Boolean(c.optimizeForLatency);
  if (c.rotation !== undefined) out.rotation = parseRotation(what, c.rotation);
  if (c.flip !== undefined) out.flip = Boolean(c.flip);
  return out;
}

/** The libavcodec decoder for a config, or undefined when none here takes it. */
function decoderFor(config: VideoDecoderConfig): { route: CodecRoute; name: string } | undefined {
  const route = parseCodecString(config.codec);
  if (!route || config.hardwareAcceleration === "prefer-hardware") return undefined;
  if ((config.codedWidth ?? 0) > 16384 || (config.codedHeight ?? 0) > 16384) return undefined;
  if (route.bitDepth > 8) return undefined; // 10- and 12-bit planar frames have no DMA-BUF layout yet
  const name = route.decoders.find((d) => isCodecSupported(d, "decoder"));
  return name ? { route, name } : undefined;
}

/**
 * A frame's colour, member by member: the config's, else the bitstream's,
 * else the codec string's (VP9 carries only its matrix and range; its string
 * names the rest, BT.709 by default). An empty config colour hides nothing.
 */
function colorOfFrame(
  handle: DmaBufHandle,
  override: VideoColorSpaceInit | undefined,
  named: VideoColorSpaceInit | undefined,
): VideoColorSpace {
  const stream = colorSpaceOfMeta(handle.meta?.color ?? null);
  const pick = <K extends keyof VideoColorSpaceInit>(k: K) =>
    override?.[k] ?? stream[k] ?? named?.[k] ?? null;
  return new VideoColorSpace({
    primaries: pick("primaries"),
    transfer: pick("transfer"),
    matrix: pick("matrix"),
    fullRange: pick("fullRange"),
  });
}

/** WebCodecs' VideoDecoder: chunks in, VideoFrames out, each a slot of the decoder's pool. */
export class VideoDecoder extends CodecMachine {
  readonly #output: (frame: VideoFrame) => void;
  #decoder: FrameDecoder | null = null;
  #config: VideoDecoderConfig | null = null;
  /** The colour the codec string names. */
  #named: VideoColorSpaceInit | undefined;
  #keyRequired = true;
  #released: PromiseWithResolvers<void> | null = null;

  /** A decoder that gives frames to `init.output` and fatal errors to `init.error`. */
  constructor(init: VideoDecoderInit) {
    super("VideoDecoder", init);
    this.#output = init.output;
  }

  /** Chunks given and not yet started. */
  get decodeQueueSize(): number {
    return this.queueSize;
  }

  /** Whether this runtime decodes `config`; rejects with TypeError for one that is not valid. */
  static isConfigSupported(config: VideoDecoderConfig): Promise<VideoDecoderSupport> {
    try {
      const copy = checkConfig("check a VideoDecoderConfig", config);
      return Promise.resolve({ supported: decoderFor(copy) !== undefined, config: copy });
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Sets up decoding of a stream; an unsupported one closes the decoder with NotSupportedError. */
  configure(config: VideoDecoderConfig): void {
    const copy = checkConfig("configure a VideoDecoder", config);
    this.beginConfigure();
    this.#keyRequired = true;
    this.enqueue(async (epoch) => {
      await this.#finishDecoder(epoch); // frames of the previous configuration come out first
      const found = decoderFor(copy);
      if (!this.current(epoch)) return;
      if (!found) {
        this.closeWith(
          new DOMException(`Cannot decode ${JSON.stringify(copy.codec)} here`, "NotSupportedError"),
        );
        return;
      }
      try {
        this.#decoder = FrameDecoder.create({
          codec: found.name,
          description: copy.description as Uint8Array | undefined,
        });
        this.#config = copy;
        this.#named = found.route.color;
      } catch (e) {
        this.closeWith(asDomException(e, "NotSupportedError"));
      }
    });
  }

  /** Decodes a chunk; the first after configure() or flush() must be a key chunk (DataError). */
  decode(chunk: EncodedVideoChunk): void {
    if (!(chunk instanceof EncodedVideoChunk)) {
      throw new TypeError("Cannot decode: chunk is not an EncodedVideoChunk");
    }
    this.requireConfigured("decode");
    if (this.#keyRequired && chunk.type !== "key") {
      throw new DOMException("Cannot decode: a key chunk must come first", "DataError");
    }
    this.#keyRequired = false;
    if (chunk.byteLength === 0) {
      /* to libavcodec an empty packet is the end of the stream */
      this.enqueueCounted(() => {
        throw new DOMException("Cannot decode an empty chunk", "EncodingError");
      });
      return;
    }
    const packet = {
      data: chunkBytes(chunk), // the chunk's own bytes, never changed; FrameDecoder copies them
      timestamp: BigInt(chunk.timestamp),
      duration: BigInt(chunk.duration ?? 0),
      key: chunk.type === "key",
    };
    this.enqueueCounted(async (epoch) => {
      const decoder = this.#decoder;
      if (!decoder) return;
      this.#deliver(epoch, await decoder.decode(packet));
      while (decoder.stalled && this.current(epoch)) {
        await this.#slotReleased(decoder);
        if (this.current(epoch)) this.#deliver(epoch, await decoder.resume());
      }
    });
  }

  /** Resolves once every chunk given was decoded and its frames output. */
  flush(): Promise<void> {
    try {
      this.requireConfigured("flush");
    } catch (e) {
      return Promise.reject(e);
    }
    this.#keyRequired = true;
    return this.enqueueFlush(async (epoch) => {
      const decoder = this.#decoder;
      if (decoder) await this.#drain(epoch, decoder);
    });
  }

  /** Every frame still inside `decoder`, output; waits while the caller holds every slot. */
  async #drain(epoch: number, decoder: FrameDecoder): Promise<void> {
    for (;;) {
      try {
        this.#deliver(epoch, await decoder.flush());
        if (!decoder.stalled) return;
      } catch (e) {
        if ((e as { field?: string }).field !== "slots") throw e;
      }
      if (!this.current(epoch)) return;
      await this.#slotReleased(decoder);
    }
  }

  /** The previous configuration's frames out, then its decoder closed. */
  async #finishDecoder(epoch: number): Promise<void> {
    const decoder = this.#decoder;
    if (!decoder) return;
    this.#decoder = null;
    try {
      await this.#drain(epoch, decoder);
    } finally {
      await decoder.close();
    }
  }

  #deliver(epoch: number, handles: DmaBufHandle[]): void {
    const config = this.#config;
    for (const handle of handles) {
      if (!this.current(epoch) || !config) {
        handle.release(); // decoded before a reset: delivered to no one
        continue;
      }
      const t = handle.meta?.timing;
      const aspect = config.displayAspectWidth
        ? [config.displayAspectWidth, config.displayAspectHeight!] as [number, number]
        : undefined;
      const frame = adoptVideoFrame(handle, {
        timestamp: t ? t.pts : 0,
        duration: t?.duration ? t.duration : null,
        displayAspect: aspect,
        colorSpace: colorOfFrame(handle, config.colorSpace, this.#named),
        rotation: config.rotation ?? 0,
        flip: config.flip ?? false,
      });
      callBack(() => this.#output(frame));
    }
  }

  /**
   * Resolves when a slot of the decoder's pool comes home (a frame closed here,
   * in a Worker or in another process, and libavcodec done with it: the pool's
   * notice, no thread and no timer), or when a reset drops the stream.
   */
  async #slotReleased(decoder: FrameDecoder): Promise<void> {
    this.#released = Promise.withResolvers<void>();
    const gone = new AbortController();
    try {
      await Promise.race([this.#released.promise, decoder.slotFree(gone.signal)]);
    } catch {
      // a decoder closed meanwhile: the caller sees the reset
    } finally {
      gone.abort();
      this.#released = null;
    }
  }

  /** Drops the FrameDecoder (once its run ends; frames out stay valid). */
  protected dropConfiguration(): void {
    const decoder = this.#decoder;
    this.#decoder = null;
    this.#config = null;
    this.#released?.resolve(); // a stalled message sees the reset at once
    void decoder?.close(); // after its run in flight, if any; frames out stay valid
  }
}
