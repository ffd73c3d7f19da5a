// Muxer: EncodedVideoChunks into a container (mp4, Matroska, WebM, MPEG-TS),
// tracks described by the VideoDecoderConfig a VideoEncoder gives with its
// first chunk (native/src/codec/muxer.c). Queueing copies a chunk on the
// isolate's thread; writing is I/O and runs off it, one step at a time.

import { lib } from "../load/load.ts";
import { check, lastError } from "../load/native.ts";
import { countOption, enumValue, optionsBag, own, refuse, show } from "../table/values.ts";
import { GpuResourceError } from "../errors.ts";
import { chunkBytes, EncodedVideoChunk } from "./encoded_chunk.ts";
import type { VideoDecoderConfig } from "./video_decoder.ts";
import { parseCodecString } from "./codec_string.ts";
import { bufferSource } from "./webidl.ts";
import {
  addressOf,
  cString,
  descriptorOf,
  listOption,
  stringOption,
  urlOption,
} from "./_container_args.ts";

const DESC_SIZE = 48;
const TRACK_DESC_SIZE = 72;
const PACKET_SIZE = 48;
const LIBAVCODEC_NAME = { avc: "h264", hevc: "hevc", vp8: "vp8", vp9: "vp9", av1: "av1" } as const;

/** A Muxer nobody closed: its output closed as it is, once it is garbage. */
const forgotten = new FinalizationRegistry<Deno.PointerValue>((m) => {
  lib().gpures_muxer_interrupt(m);
  lib().gpures_muxer_destroy(m);
});

/** Options of {@link Muxer.create}. */
export interface MuxerOptions {
  /** A muxer of libavformat by name ("mp4", "matroska", "webm", "mpegts"); by the url's extension when absent. */
  format?: string;
  /** The protocols libavformat may open: "file" for a path, the URL's scheme for a URL by default. */
  protocols?: string[];
  /** The muxer's own options, "movflags=+faststart"; one it does not have throws when writing begins. */
  options?: string;
  /** Milliseconds network I/O may go without progress, 1..3600000 (default 30 s for a URL, none for a path). */
  timeoutMs?: number;
}

/** Options of {@link Muxer.addTrack}. */
export interface MuxerTrackOptions {
  /** Frames per second, when known (some containers record it). */
  framerate?: number;
}

/** Options of {@link Muxer.addChunk}. */
export interface MuxerChunkOptions {
  /** Microseconds, decode order: for streams with B-frames (the chunk's timestamp by default). */
  decodeTimestamp?: number;
}

/** H.273 code points of a config's colour; 2 (unspecified) for what it does not say. */
function colorCodes(config: VideoDecoderConfig): number[] {
  const c = config.colorSpace ?? {};
  return [
    c.primaries ? enumValue(7, c.primaries) ?? 2 : 2,
    c.transfer ? enumValue(8, c.transfer) ?? 2 : 2,
    c.matrix ? enumValue(9, c.matrix) ?? 2 : 2,
    c.fullRange === true ? 2 : c.fullRange === false ? 1 : 0,
  ];
}

/**
 * Chunks into a container file (FFmpeg's libavformat; UnsupportedError naming
 * what is missing without it). Add every track first, from the
 * `decoderConfig` a VideoEncoder gives; then add chunks in decode order;
 * `finish()` writes the container's index and closes the file.
 *
 * ```ts ignore
 * await using out = Muxer.create("out.mp4");
 * let track = -1;
 * const encoder = new VideoEncoder({
 *   output: (chunk, meta) => {
 *     if (track < 0) track = out.addTrack(meta!.decoderConfig!);
 *     void out.addChunk(track, chunk); // a failure comes back from finish() too
 *   },
 *   error: console.error,
 * });
 * // ... encode, flush
 * await out.finish();
 * ```
 */
export class Muxer implements AsyncDisposable {
  #muxer: Deno.PointerValue;
  #running: Promise<unknown> = Promise.resolve();
  #packet = new Uint8Array(PACKET_SIZE);
  #tracks = 0;
  #started = false;
  /** The first chunk that could not be written: every later call fails with it, finish() included. */
  #failure: unknown = undefined;
  #lastDts: number[] = [];

  private constructor(muxer: Deno.PointerValue) {
    this.#muxer = muxer;
    forgotten.register(this, muxer, this);
  }

  /** Picks the muxer for `url` (a path or a URL); the file is created when the first chunk is written. */
  static create(url: string | URL, options?: MuxerOptions): Muxer {
    const what = "create a Muxer";
    const bag = optionsBag(what, options) ?? {};
    const { view: desc, keep } = descriptorOf(DESC_SIZE, [
      urlOption(what, url),
      stringOption(what, bag, "format"),
      listOption(what, bag, "protocols"),
      stringOption(what, bag, "options"),
    ]);
    const timeout = own(bag, "timeoutMs");
    if (timeout !== undefined) {
      desc.setUint32(40, countOption(what, "timeoutMs", timeout, 1, 3_600_000), true);
    }
    const out = new BigUint64Array(1);
    check(lib().gpures_muxer_create(new Uint8Array(desc.buffer), out));
    keep.length = 0; // copied by create
    return new Muxer(Deno.UnsafePointer.create(out[0]));
  }

  /**
   * A track for chunks of `config`'s stream: its codec string (the WebCodecs
   * registry's), coded size and description; its colour when it says. Returns
   * the track's index. Every track comes before the first chunk.
   */
  addTrack(config: VideoDecoderConfig, options?: MuxerTrackOptions): number {
    const what = "add a track to the Muxer";
    const m = this.#live(what);
    if (this.#started) {
      refuse(what, "muxer", "has chunks already: every track comes before the first");
    }
    if (typeof config !== "object" || config === null) {
      refuse(what, "config", "is not a VideoDecoderConfig");
    }
    const route = typeof config.codec === "string" ? parseCodecString(config.codec) : undefined;
    if (!route) {
      refuse(
        what,
        "config.codec",
        `${show(config.codec)} is not a codec string of the WebCodecs registry`,
      );
    }
    for (const field of ["codedWidth", "codedHeight"] as const) {
      const v = config[field];
      if (!Number.isInteger(v) || v! < 1 || v! > 32768) {
        refuse(what, `config.${field}`, `${show(v)} is not 1..32768`);
      }
    }
    const record = config.description === undefined
      ? new Uint8Array(0)
      : bufferSource(what, "config.description", config.description).slice();
    const rate = own(optionsBag(what, options), "framerate");
    if (rate !== undefined && !(typeof rate === "number" && rate > 0 && rate <= 1000)) {
      refuse(what, "framerate", `${show(rate)} is not frames per second (0..1000]`);
    }
    const name = cString(LIBAVCODEC_NAME[route.family]);
    const desc = new DataView(new ArrayBuffer(TRACK_DESC_SIZE));
    desc.setUint32(0, TRACK_DESC_SIZE, true);
    desc.setBigUint64(8, addressOf(name), true);
    desc.setBigUint64(16, record.byteLength ? addressOf(record) : 0n, true);
    desc.setUint32(24, record.byteLength, true);
    desc.setUint32(28, config.codedWidth!, true);
    desc.setUint32(32, config.codedHeight!, true);
    desc.setUint32(36, 1, true);
    desc.setUint32(40, 1_000_000, true);
    if (rate !== undefined) {
      desc.setUint32(44, Math.round(rate * 1000), true);
      desc.setUint32(48, 1000, true);
    }
    colorCodes(config).forEach((code, i) => desc.setUint32(52 + 4 * i, code, true));
    const out = new Uint32Array(1);
    check(lib().gpures_muxer_add_track(m, new Uint8Array(desc.buffer), out));
    this.#tracks++;
    return out[0];
  }

  /**
   * Writes a chunk of a track, in decode order; resolves once it is written
   * (the file is opened, and its header written, with the first).
   * InvalidValueError naming "packet" for one the container refuses
   * (timestamps that go back).
   */
  addChunk(track: number, chunk: EncodedVideoChunk, options?: MuxerChunkOptions): Promise<void> {
    const what = "add a chunk to the Muxer";
    const m = this.#live(what);
    if (!Number.isInteger(track) || track < 0 || track >= this.#tracks) {
      refuse(what, "track", `${show(track)} is not a track of the Muxer (${this.#tracks})`);
    }
    if (!(chunk instanceof EncodedVideoChunk)) refuse(what, "chunk", "is not an EncodedVideoChunk");
    const given = own(optionsBag(what, options), "decodeTimestamp");
    const dts = given ?? chunk.timestamp;
    if (!Number.isSafeInteger(dts)) {
      refuse(what, "decodeTimestamp", `${show(dts)} is not microseconds`);
    }
    if (given === undefined && (dts as number) < (this.#lastDts[track] ?? -Infinity)) {
      // Chunks come in decode order: a timestamp that goes back is a B-frame's, whose decode time only the caller knows.
      refuse(
        what,
        "decodeTimestamp",
        `is needed: the chunk at ${dts} µs comes after one at ${
          this.#lastDts[track]
        } µs (B-frames)`,
      );
    }
    this.#lastDts[track] = dts as number;
    this.#started = true;
    return this.#step(m, () => {
      const data = chunkBytes(chunk);
      const view = new DataView(this.#packet.buffer);
      view.setUint32(0, PACKET_SIZE, true);
      view.setUint32(4, chunk.type === "key" ? 1 : 0, true);
      view.setBigUint64(8, data.byteLength ? addressOf(data) : 0n, true);
      view.setBigUint64(16, BigInt(data.byteLength), true);
      view.setBigInt64(24, BigInt(chunk.timestamp), true);
      view.setBigInt64(32, BigInt(dts as number), true);
      view.setBigInt64(40, BigInt(chunk.duration ?? 0), true);
      check(lib().gpures_muxer_queue(m, track, this.#packet)); // copied
    });
  }

  /** Writes the container's trailer (its index) and closes the file; nothing can be added after. */
  finish(): Promise<void> {
    const m = this.#live("finish the Muxer");
    return this.#step(m, () => check(lib().gpures_muxer_queue(m, 0, null)));
  }

  /* Queue on this thread with no write in flight (the C queue and run must not overlap), then write off it. */
  #step(m: Deno.PointerValue, queue: () => void): Promise<void> {
    const step = this.#running.then(async () => {
      if (this.#failure !== undefined) throw this.#failure; // nothing after a lost chunk looks whole
      try {
        queue();
        if (await lib().gpures_muxer_run(m) !== 0) throw lastError(lib().gpures_muxer_last_run(m));
      } catch (e) {
        this.#failure ??= e;
        throw e;
      }
    });
    this.#running = step.catch(() => {});
    return step;
  }

  #live(what: string): Deno.PointerValue {
    if (this.#muxer === null) {
      throw new GpuResourceError(`Cannot ${what}: the Muxer is closed`, "STALE", "muxer");
    }
    return this.#muxer;
  }

  /** Frees the muxer: a write in flight is interrupted (it rejects with CancelledError); a file not finished is left as it is. */
  async close(): Promise<void> {
    const m = this.#muxer;
    if (m === null) return;
    this.#muxer = null;
    forgotten.unregister(this);
    lib().gpures_muxer_interrupt(m); // a write stalled on the network returns
    await this.#running;
    lib().gpures_muxer_destroy(m);
  }

  /** close(). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
