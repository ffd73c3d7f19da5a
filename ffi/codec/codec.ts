// Decoders and encoders over FFmpeg (native/src/codec/): a decoder's frames
// are slots of its own FramePool-like pool, DmaBufHandles that cross Workers
// and processes with no copy; an encoder reads a frame's memory where it
// lies. The work runs off the isolate's thread (gpures_decoder_run and
// gpures_encoder_run touch no JavaScript memory); what goes in is copied or
// referenced in C first, what comes out is taken after the run resolves.

import { lib } from "../load/load.ts";
import { check, lastError } from "../load/native.ts";
import { countOption, enumValue, optionsBag, own, refuse, show } from "../table/values.ts";
import type { PixelFormatName } from "../gen/types.ts";
import { GpuResource } from "../kinds/gpu_resource.ts";
import { DmaBufHandle } from "../kinds/dma_buf.ts";
import { GpuResourceError } from "../errors.ts";
import { whenSlotFree } from "../events/pool_waits.ts";
import "../gen/variants.ts";

const TIMED_OUT = 12;
const CANCELLED = 13;
const DECODER_DESC_SIZE = 48;
const ENCODER_DESC_SIZE = 72;
const PACKET_SIZE = 48;
const PACKET_KEY = 1;
const GLOBAL_HEADER = 1;

/** A C string the call reads while it runs. */
const cString = (s: string) => new TextEncoder().encode(s + "\0");
const addressOf = (b: Uint8Array) => BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(b)));

/** Compressed data: a decoder's input, an encoder's output. */
export interface EncodedPacket {
  /** The bytes (an encoder's packet is a copy, the caller's to keep). */
  data: Uint8Array;
  /** Presentation time, in the codec's timebase. */
  timestamp: bigint;
  /** Decode order (an encoder's packets; ignored by decoders). */
  decodeTimestamp?: bigint;
  /** In timebase units; 0 when unknown. */
  duration?: bigint;
  /** A key frame: decoding can start here. */
  key?: boolean;
}

/** What the process's codecs did: `copiedBytes` stays 0 on a zero-copy path. */
export interface CodecStats {
  /** Frames out of every decoder. */
  decoded: bigint;
  /** Frames into every encoder. */
  encoded: bigint;
  /** Frames gpures copied on their way (a decoder that allocates its own frames, a frame converted for an encoder). */
  copiedFrames: bigint;
  /** Their bytes. */
  copiedBytes: bigint;
}

/** Frames this isolate converted for an encoder that does not take their format (VideoEncoder). */
const converted = { frames: 0n, bytes: 0n };

/** Counts a frame gpures copied in JavaScript on its way to an encoder. @ignore */
export function countCopy(bytes: number): void {
  converted.frames++;
  converted.bytes += BigInt(bytes);
}

/** The counters of every decoder and encoder of the process (copies: the process's, plus this isolate's conversions). */
export function codecStats(): CodecStats {
  const out = new BigUint64Array(5);
  new Uint32Array(out.buffer)[0] = out.byteLength;
  check(lib().gpures_codec_stats_get(out));
  return {
    decoded: out[1],
    encoded: out[2],
    copiedFrames: out[3] + converted.frames,
    copiedBytes: out[4] + converted.bytes,
  };
}

/** Whether the FFmpeg gpures opens has a video decoder (or encoder) of that libavcodec name. */
export function isCodecSupported(name: string, kind: "decoder" | "encoder"): boolean {
  return lib().gpures_codec_find(cString(name), kind === "decoder" ? 1 : 2) === 0;
}

/** A timebase option: [numerator, denominator], both 1..2^31-1; default [1, 1000000] (microseconds). */
function timebaseOption(what: string, v: unknown): [number, number] {
  if (v === undefined) return [1, 1_000_000];
  if (!Array.isArray(v) || v.length !== 2) refuse(what, "timebase", `${show(v)} is not [num, den]`);
  return [
    countOption(what, "timebase[0]", v[0], 1, 0x7fff_ffff),
    countOption(what, "timebase[1]", v[1], 1, 0x7fff_ffff),
  ];
}

function writePacket(view: DataView, p: EncodedPacket, data: Uint8Array): void {
  view.setUint32(0, PACKET_SIZE, true);
  view.setUint32(4, p.key ? PACKET_KEY : 0, true);
  view.setBigUint64(8, data.byteLength ? addressOf(data) : 0n, true);
  view.setBigUint64(16, BigInt(data.byteLength), true);
  view.setBigInt64(24, p.timestamp, true);
  view.setBigInt64(32, 0n, true);
  view.setBigInt64(40, p.duration ?? 0n, true);
}

/** Options of {@link FrameDecoder.create}. */
export interface FrameDecoderOptions {
  /** A libavcodec decoder: "h264", "hevc", "vp9", "libdav1d", ... */
  codec: string;
  /** The stream's configuration record (avcC, hvcC, ...): WebCodecs' `description`. */
  description?: Uint8Array;
  /** Frames of its pool, 2..256: references plus what you hold at once (default 16 + threads + 8). */
  slots?: number;
  /** Decoding threads, 1..64 (default 1). */
  threads?: number;
  /** Of the packets' timestamps; [1, 1000000] (microseconds) by default. */
  timebase?: [number, number];
}

/**
 * Packets in, frames out: each frame a DmaBufHandle in a slot of the decoder's
 * own pool, written there by the decoder (no copy after it), with its metadata
 * (sequence, timing, visible rectangle, colour, HDR). A frame is to be read:
 * the decoder may still read it as a reference.
 */
export class FrameDecoder implements Disposable {
  #decoder: Deno.PointerValue;
  #running: Promise<void> = Promise.resolve();
  #packet = new Uint8Array(PACKET_SIZE);
  /** Frames a failed run decoded: the next call gives them, so none is lost to an error. */
  #kept: DmaBufHandle[] = [];
  #stalled = false;

  private constructor(decoder: Deno.PointerValue) {
    this.#decoder = decoder;
  }

  /** Opens FFmpeg (UnsupportedError naming what is missing without it) and makes a decoder. */
  static create(options: FrameDecoderOptions): FrameDecoder {
    const what = "create a FrameDecoder";
    if (optionsBag(what, options) === undefined) refuse(what, "options", "is missing");
    const codec = own(options, "codec");
    if (typeof codec !== "string") refuse(what, "codec", `${show(codec)} is not a codec name`);
    const description = own(options, "description");
    if (description !== undefined && !(description instanceof Uint8Array)) {
      refuse(what, "description", `${show(description)} is not a Uint8Array`);
    }
    const slots = own(options, "slots");
    const threads = own(options, "threads");
    const [num, den] = timebaseOption(what, own(options, "timebase"));
    const name = cString(codec as string);
    const extra = (description as Uint8Array | undefined) ?? new Uint8Array(0);
    const desc = new DataView(new ArrayBuffer(DECODER_DESC_SIZE));
    desc.setUint32(0, DECODER_DESC_SIZE, true);
    desc.setBigUint64(8, addressOf(name), true);
    desc.setBigUint64(16, extra.byteLength ? addressOf(extra) : 0n, true);
    desc.setUint32(24, extra.byteLength, true);
    desc.setUint32(28, slots === undefined ? 0 : countOption(what, "slots", slots, 2, 256), true);
    desc.setUint32(
      32,
      threads === undefined ? 0 : countOption(what, "threads", threads, 1, 64),
      true,
    );
    desc.setUint32(36, num, true);
    desc.setUint32(40, den, true);
    const out = new BigUint64Array(1);
    check(lib().gpures_decoder_create(new Uint8Array(desc.buffer), out));
    return new FrameDecoder(Deno.UnsafePointer.create(out[0]));
  }

  /**
   * Decodes one packet; resolves with the frames that came out (none while
   * the decoder fills its reorder window). While every slot is held the
   * packet waits, queued, and goes in with the next call after frames are
   * released; `flush()` throws TimeoutError if they never are.
   */
  decode(packet: EncodedPacket): Promise<DmaBufHandle[]> {
    const d = this.#live("decode");
    if (!(packet?.data instanceof Uint8Array)) {
      refuse("decode", "packet.data", "is not a Uint8Array");
    }
    if (typeof packet.timestamp !== "bigint") {
      refuse("decode", "packet.timestamp", "is not a bigint");
    }
    const copy = { ...packet, data: packet.data.slice() }; /* the caller's again at once */
    return this.#run(d, false, () => {
      writePacket(new DataView(this.#packet.buffer), copy, copy.data);
      check(lib().gpures_decoder_queue(d, this.#packet)); /* copied into the decoder */
    });
  }

  /**
   * Decodes what is queued, taking nothing new: after a stall, once frames
   * were released. Resolves with the frames that came out.
   */
  resume(): Promise<DmaBufHandle[]> {
    const d = this.#live("resume");
    return this.#run(d, false, () => {});
  }

  /**
   * Whether the last call stopped because every slot was held: packets wait
   * queued until frames are released, and the next decode() or flush() goes on.
   */
  get stalled(): boolean {
    return this.#stalled;
  }

  /**
   * Resolves once one of the pool's slots is free again (a frame released
   * here, in a Worker or in another process, and libavcodec done with it), or
   * the decoder moved to a pool of another shape: time to resume(). No thread
   * waits for it, and `signal` withdraws it.
   */
  slotFree(signal?: AbortSignal): Promise<void> {
    const d = this.#live("wait for a slot of");
    const { promise, resolve } = Promise.withResolvers<void>();
    if (signal?.aborted) return Promise.resolve();
    const withdraw = whenSlotFree({
      ask: (queue, token) => lib().gpures_decoder_notify(d, queue, token),
      withdraw: (queue, token, why) =>
        void lib().gpures_decoder_notify_cancel(d, queue, token, why),
    }, () => resolve());
    signal?.addEventListener("abort", () => {
      if (this.#decoder !== null) withdraw(CANCELLED); // a closed decoder withdrew it itself
      resolve();
    }, { once: true });
    return promise;
  }

  /**
   * Decodes everything queued and every frame still inside; the decoder then
   * wants a key frame. When every slot is held it resolves with the frames it
   * has and `stalled` set (release frames, flush again), or throws
   * TimeoutError if it had none to give.
   */
  flush(): Promise<DmaBufHandle[]> {
    const d = this.#live("flush");
    return this.#run(d, true, () => check(lib().gpures_decoder_queue(d, null)));
  }

  /*
   * One step after another: queue (on this thread, no run in flight: the C
   * queue and run must not overlap), run (off the thread), take the frames.
   * `d` is captured: close() clears the field while steps are still due.
   */
  #run(d: Deno.PointerValue, mustFinish: boolean, queue: () => void): Promise<DmaBufHandle[]> {
    const run = this.#running.then(async () => {
      queue();
      const status = await lib().gpures_decoder_run(d);
      const taken = this.#take(d);
      const frames = [...this.#kept.splice(0), ...taken.frames];
      this.#stalled = status === TIMED_OUT || taken.stalled;
      if (status === 0 || (this.#stalled && (!mustFinish || frames.length))) return frames;
      /* The run's error is its thread's: made this thread's again, TimeoutError while slots stay held. */
      this.#kept = frames;
      throw lastError(lib().gpures_decoder_last_run(d));
    });
    this.#running = run.then(() => {}, () => {});
    return run;
  }

  /** The frames the run left; `stalled` when one waits, kept in C, for a free slot. */
  #take(d: Deno.PointerValue): { frames: DmaBufHandle[]; stalled: boolean } {
    const frames: DmaBufHandle[] = [];
    const out = new BigUint64Array(1);
    for (;;) {
      const status = lib().gpures_decoder_receive(d, out);
      if (status === TIMED_OUT) return { frames, stalled: true };
      if (status !== 0) {
        this.#kept.push(...frames); // the frames taken before the failure come with the next call
        check(status);
      }
      if (out[0] === 0n) return { frames, stalled: false };
      frames.push(GpuResource.fromRaw(out[0], DmaBufHandle));
    }
  }

  #live(what: string): Deno.PointerValue {
    if (this.#decoder === null) {
      throw new GpuResourceError(`Cannot ${what}: the FrameDecoder is closed`, "STALE", "decoder");
    }
    return this.#decoder;
  }

  /** Frees the decoder once its last run ends; frames it gave out stay valid. */
  async close(): Promise<void> {
    const d = this.#decoder;
    if (d === null) return;
    this.#decoder = null;
    await this.#running;
    for (const f of this.#kept.splice(0)) f.release();
    lib().gpures_decoder_destroy(d);
  }

  /** close(), not awaited. */
  [Symbol.dispose](): void {
    void this.close();
  }
}

/** Options of {@link FrameEncoder.create}. */
export interface FrameEncoderOptions {
  /** A libavcodec encoder: "libx264", "libvpx-vp9", "libaom-av1", ... */
  codec: string;
  /** The frames' pixel format. */
  format: PixelFormatName;
  /** Of every frame, 1..16384. */
  width: number;
  /** Of every frame, 1..16384. */
  height: number;
  /** The encoder's own options, "preset=ultrafast:crf=23". */
  options?: string;
  /** Of timestamps in and out; [1, 1000000] (microseconds) by default. */
  timebase?: [number, number];
  /** Frames per second as [num, den], when known (rate control and levels use it). */
  framerate?: [number, number];
  /** Frames from one key frame to the next at most. */
  gop?: number;
  /** Bits per second. */
  bitrate?: number;
  /** B-frames in a row (default 0: packets in presentation order). */
  maxBFrames?: number;
  /** Encoder threads (default: the encoder's). */
  threads?: number;
  /** Put the stream's configuration in {@link FrameEncoder.extradata} rather than in key frames. */
  globalHeader?: boolean;
}

/** {@link FrameEncoder.encode}'s options. */
export interface EncodeOptions {
  /** Make it a key frame. */
  keyFrame?: boolean;
  /** Its pts in the encoder's timebase, instead of its metadata's timing. */
  timestamp?: bigint;
}

/** Frames in, packets out: a frame's memory is read where it lies, and the frame held until read. */
export class FrameEncoder implements Disposable {
  #encoder: Deno.PointerValue;
  #running: Promise<void> = Promise.resolve();
  #kept: EncodedPacket[] = [];

  private constructor(encoder: Deno.PointerValue) {
    this.#encoder = encoder;
  }

  /** Opens FFmpeg (UnsupportedError naming what is missing without it) and makes an encoder. */
  static create(options: FrameEncoderOptions): FrameEncoder {
    const what = "create a FrameEncoder";
    if (optionsBag(what, options) === undefined) refuse(what, "options", "is missing");
    const codec = own(options, "codec");
    if (typeof codec !== "string") refuse(what, "codec", `${show(codec)} is not a codec name`);
    const name = own(options, "format");
    const format = typeof name === "string" ? enumValue(1, name) : undefined;
    if (format === undefined) refuse(what, "format", `${show(name)} is not a PixelFormat name`);
    const extra = own(options, "options");
    if (extra !== undefined && typeof extra !== "string") {
      refuse(what, "options", "is not a string");
    }
    const [num, den] = timebaseOption(what, own(options, "timebase"));
    const rate = own(options, "framerate");
    const [fnum, fden] = rate === undefined ? [0, 0] : timebaseOption(what, rate);
    const optional = (field: string, min: number, max: number) => {
      const v = own(options, field);
      return v === undefined ? 0 : countOption(what, field, v, min, max);
    };
    const codecName = cString(codec as string);
    const optionText = extra === undefined ? null : cString(extra as string);
    const desc = new DataView(new ArrayBuffer(ENCODER_DESC_SIZE));
    desc.setUint32(0, ENCODER_DESC_SIZE, true);
    desc.setUint32(4, own(options, "globalHeader") === true ? GLOBAL_HEADER : 0, true);
    desc.setBigUint64(8, addressOf(codecName), true);
    desc.setBigUint64(16, optionText ? addressOf(optionText) : 0n, true);
    desc.setUint32(24, format!, true);
    desc.setUint32(28, optional("width", 1, 16384), true);
    desc.setUint32(32, optional("height", 1, 16384), true);
    desc.setUint32(36, num, true);
    desc.setUint32(40, den, true);
    desc.setUint32(44, fnum, true);
    desc.setUint32(48, fden, true);
    desc.setUint32(52, optional("gop", 1, 0x7fff_ffff), true);
    desc.setUint32(56, optional("maxBFrames", 0, 16), true);
    desc.setUint32(60, optional("threads", 1, 64), true);
    desc.setBigUint64(64, BigInt(optional("bitrate", 1, Number.MAX_SAFE_INTEGER)), true);
    const out = new BigUint64Array(1);
    check(lib().gpures_encoder_create(new Uint8Array(desc.buffer), out));
    return new FrameEncoder(Deno.UnsafePointer.create(out[0]));
  }

  /**
   * Encodes one frame (a DmaBufHandle of the encoder's format and size; its
   * timestamp from `options` or else its metadata); resolves with the packets that came out.
   * The encoder holds its own reference: release yours when you like.
   */
  encode(frame: DmaBufHandle, options: EncodeOptions = {}): Promise<EncodedPacket[]> {
    const e = this.#live("encode");
    const pts = options.timestamp;
    if (pts !== undefined && typeof pts !== "bigint") {
      refuse("encode", "timestamp", "is not a bigint");
    }
    const held = frame.clone(); /* the caller may release theirs at once */
    return this.#run(e, () => {
      const flags = options.keyFrame ? PACKET_KEY : 0;
      try {
        check(
          pts === undefined
            ? lib().gpures_encoder_queue(e, held.unsafeHandle, flags)
            : lib().gpures_encoder_queue_at(e, held.unsafeHandle, flags, pts),
        );
      } finally {
        held.release(); /* the encoder took its own reference */
      }
    });
  }

  /** Encodes what is queued and drains the encoder: every packet still inside. It takes no frame after. */
  flush(): Promise<EncodedPacket[]> {
    const e = this.#live("flush");
    return this.#run(e, () => check(lib().gpures_encoder_queue(e, 0n, 0)));
  }

  /** The stream's configuration (with `globalHeader`): WebCodecs' `decoderConfig.description`. */
  get extradata(): Uint8Array {
    const e = this.#live("read the extradata of");
    const size = new Uint32Array(1);
    const status = lib().gpures_encoder_extradata(e, null, 0, size);
    const bytes = new Uint8Array(size[0]);
    if (status !== 0 && size[0]) {
      check(lib().gpures_encoder_extradata(e, bytes, bytes.byteLength, size));
    }
    return bytes;
  }

  /* As FrameDecoder's: queue, run, take, one after another, `e` captured. */
  #run(e: Deno.PointerValue, queue: () => void): Promise<EncodedPacket[]> {
    const run = this.#running.then(async () => {
      queue();
      const status = await lib().gpures_encoder_run(e);
      const packets = [...this.#kept.splice(0), ...this.#take(e)];
      if (status === 0) return packets;
      this.#kept = packets; /* no packet lost to the error: the next call gives them */
      throw lastError(lib().gpures_encoder_last_run(e));
    });
    this.#running = run.then(() => {}, () => {});
    return run;
  }

  #take(e: Deno.PointerValue): EncodedPacket[] {
    const packets: EncodedPacket[] = [];
    const p = new Uint8Array(PACKET_SIZE);
    const view = new DataView(p.buffer);
    for (;;) {
      view.setUint32(0, PACKET_SIZE, true);
      check(lib().gpures_encoder_receive(e, p));
      const size = Number(view.getBigUint64(16, true));
      if (size === 0) return packets;
      const at = Deno.UnsafePointer.create(view.getBigUint64(8, true))!;
      const data = new Uint8Array(size);
      Deno.UnsafePointerView.copyInto(at, data);
      packets.push({
        data,
        timestamp: view.getBigInt64(24, true),
        decodeTimestamp: view.getBigInt64(32, true),
        duration: view.getBigInt64(40, true),
        key: (view.getUint32(4, true) & PACKET_KEY) !== 0,
      });
    }
  }

  #live(what: string): Deno.PointerValue {
    if (this.#encoder === null) {
      throw new GpuResourceError(`Cannot ${what}: the FrameEncoder is closed`, "STALE", "encoder");
    }
    return this.#encoder;
  }

  /** Frees the encoder once its last run ends, releasing every frame it held. */
  async close(): Promise<void> {
    const e = this.#encoder;
    if (e === null) return;
    this.#encoder = null;
    await this.#running;
    lib().gpures_encoder_destroy(e);
  }

  /** close(), not awaited. */
  [Symbol.dispose](): void {
    void this.close();
  }
}
