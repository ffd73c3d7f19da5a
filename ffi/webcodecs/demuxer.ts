// Demuxer: a container's video tracks, each with the VideoDecoderConfig a
// VideoDecoder takes, and their chunks, through FFmpeg's libavformat
// (native/src/codec/demuxer.c). Opening and reading are I/O: they run off the
// isolate's thread, one at a time, and touch no JavaScript memory; a packet is
// copied once, into the chunk that owns it.

import { lib } from "../load/load.ts";
import { check, lastError } from "../load/native.ts";
import { countOption, enumName, optionsBag, own, refuse, show } from "../table/values.ts";
import { GpuResourceError } from "../errors.ts";
import { chunkOf, type EncodedVideoChunk } from "./encoded_chunk.ts";
import type { VideoDecoderConfig } from "./video_decoder.ts";
import type {
  VideoColorPrimaries,
  VideoColorSpaceInit,
  VideoMatrixCoefficients,
  VideoTransferCharacteristics,
} from "./color_space.ts";
import { trackCodec, type TrackFacts } from "./track_config.ts";
import { descriptorOf, listOption, stringOption, urlOption } from "./_container_args.ts";

const DESC_SIZE = 48;
const TRACK_INFO_SIZE = 152;
const PACKET_SIZE = 48;
const TRACK_END = 0xffff_ffff;
const NOPTS = -(2n ** 63n);
const MEDIA = ["other", "video", "audio", "subtitle"] as const;

/** Options of {@link Demuxer.open}. */
export interface DemuxerOptions {
  /** A demuxer of libavformat by name ("mov", "matroska", "mpegts", "h264"); probed when absent. */
  format?: string;
  /**
   * The protocols libavformat may open, nested opens included. By default "file" for a
   * path, and for a URL its scheme with what carries it ("https": https, tls, tcp).
   */
  protocols?: string[];
  /**
   * The demuxers probing may pick. By default containers that open nothing but their own
   * input: no playlists (HLS, DASH), no concatenation lists, no image sequences.
   */
  formats?: string[];
  /** Milliseconds network I/O may go without progress, 1..3600000 (default 30 s for a URL, none for a path). */
  timeoutMs?: number;
  /** Aborting it interrupts the open (it rejects with CancelledError). */
  signal?: AbortSignal;
}

/** One track of a container. */
export interface DemuxedTrack {
  /** Its index in the container, what {@link Demuxer.chunks} takes. */
  index: number;
  /** What it carries. */
  media: "video" | "audio" | "subtitle" | "other";
  /** libavcodec's name of its codec ("h264", "hevc", "vp9", "av1", "aac"), "" when unknown. */
  codecName: string;
  /** The container marks it the one to play. */
  default: boolean;
  /** What a VideoDecoder takes: a video track whose codec the WebCodecs registry names. */
  config?: VideoDecoderConfig;
  /** Its timestamps' unit, seconds = num / den (chunks are in microseconds whatever it is). */
  timebase: [number, number];
  /** Frames per second, when the container or the stream says. */
  framerate?: number;
  /** Microseconds, when the container says. */
  duration?: number;
  /** Frames, when the container says. */
  frames?: number;
}

/** A chunk and the track it belongs to. */
export interface DemuxedChunk {
  /** The track's index. */
  track: number;
  /** The chunk: timestamps in microseconds. */
  chunk: EncodedVideoChunk;
  /** Microseconds, decode order, when the container says: what a Muxer needs of streams with B-frames. */
  decodeTimestamp?: number;
  /**
   * Decode it, but show none of its frame: pre-roll before the start an edit
   * list gives (a cut made without re-encoding). Drop the frames whose
   * timestamp is this chunk's.
   */
  discard?: boolean;
}

/** A Demuxer nobody closed: its input closed once it is garbage. */
const forgotten = new FinalizationRegistry<Deno.PointerValue>((d) => {
  lib().gpures_demuxer_interrupt(d);
  lib().gpures_demuxer_destroy(d);
});

/**
 * Timebase units as whole microseconds, exactly (BigInt, rounded half up). A
 * time too far for a chunk (beyond 2^53 µs, about 285 years) is the file's
 * lie: InvalidValueError naming "url".
 */
function microseconds(t: bigint, num: number, den: number): number {
  const n = t * 1_000_000n * BigInt(num) * 2n + BigInt(den), d = 2n * BigInt(den);
  const us = n / d - (n % d < 0n ? 1n : 0n); // floor, also below zero
  if (us > BigInt(Number.MAX_SAFE_INTEGER) || us < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new GpuResourceError(
      `Cannot read: the input's time ${t} x ${num}/${den} s is beyond what a chunk holds`,
      "INVALID_VALUE",
      "url",
    );
  }
  return Number(us);
}

/** Bits per sample and chroma of an FFmpeg pixel format name ("yuv420p10le"). */
function sampling(name: string): Pick<TrackFacts, "bitDepth" | "chroma"> {
  const yuv = /^yuvj?(420|422|444)p(\d+)?/.exec(name);
  if (yuv) return { chroma: yuv[1] as "420", bitDepth: Number(yuv[2] ?? 8) };
  const gray = /^gray(\d+)?/.exec(name);
  if (gray) return { chroma: "400", bitDepth: Number(gray[1] ?? 8) };
  if (/^nv(12|21)$/.test(name)) return { chroma: "420", bitDepth: 8 };
  const p = /^p(010|012|016)/.exec(name);
  if (p) return { chroma: "420", bitDepth: Number(p[1]) };
  return { bitDepth: 8, chroma: undefined };
}

/** A colour code point by WebCodecs' name, or null where WebCodecs has none. */
function colorName<T extends string>(set: number, code: number, names: readonly T[]): T | null {
  const name = enumName(set, code);
  return names.includes(name as T) ? name as T : null;
}

function colorOf(view: DataView): VideoColorSpaceInit | undefined {
  const [p, t, m, range] = [120, 124, 128, 132].map((o) => view.getUint32(o, true));
  if (p === 2 && t === 2 && m === 2 && range === 0) return undefined;
  return {
    primaries: colorName<VideoColorPrimaries>(7, p, [
      "bt709",
      "bt470bg",
      "smpte170m",
      "bt2020",
      "smpte432",
    ]),
    transfer: colorName<VideoTransferCharacteristics>(8, t, [
      "bt709",
      "smpte170m",
      "iec61966-2-1",
      "linear",
      "pq",
      "hlg",
    ]),
    matrix: colorName<VideoMatrixCoefficients>(9, m, [
      "rgb",
      "bt709",
      "bt470bg",
      "smpte170m",
      "bt2020-ncl",
    ]),
    fullRange: range === 0 ? null : range === 2,
  };
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes.subarray(0, bytes.indexOf(0)));

/** A track's description, read through gpures_track_info and its extradata. */
function trackOf(d: Deno.PointerValue, index: number): DemuxedTrack {
  const info = new Uint8Array(TRACK_INFO_SIZE);
  const view = new DataView(info.buffer);
  view.setUint32(0, TRACK_INFO_SIZE, true);
  check(lib().gpures_demuxer_track(d, index, info));
  const media = MEDIA[view.getUint32(4, true)] ?? "other";
  const codecName = text(info.subarray(16, 48));
  const pixelFormat = text(info.subarray(48, 80));
  const [width, height] = [view.getUint32(80, true), view.getUint32(84, true)];
  const [tbNum, tbDen] = [view.getUint32(96, true), view.getUint32(100, true)];
  const [frNum, frDen] = [view.getUint32(104, true), view.getUint32(108, true)];
  const [sarNum, sarDen] = [view.getUint32(112, true), view.getUint32(116, true)];
  const duration = view.getBigInt64(136, true);
  const frames = view.getBigInt64(144, true);
  const track: DemuxedTrack = {
    index,
    media,
    codecName,
    default: (view.getUint32(8, true) & 1) !== 0,
    timebase: [tbNum, tbDen],
  };
  if (frNum && frDen) track.framerate = frNum / frDen;
  if (duration >= 0n) {
    try {
      track.duration = microseconds(duration, tbNum, tbDen);
    } catch {
      // a duration no chunk could reach: unknown
    }
  }
  if (frames > 0n) track.frames = Number(frames);
  if (media !== "video" || !width || !height) return track;
  const extradata = extradataOf(d, index, view.getUint32(12, true));
  const color = colorOf(view);
  const codec = trackCodec({
    codec: codecName,
    extradata,
    profile: view.getInt32(88, true),
    level: view.getInt32(92, true),
    width,
    height,
    ...sampling(pixelFormat),
    primaries: view.getUint32(120, true),
    transfer: view.getUint32(124, true),
    matrix: view.getUint32(128, true),
    fullRange: view.getUint32(132, true) === 2,
  });
  if (!codec) return track;
  const config: VideoDecoderConfig = { codec: codec.codec, codedWidth: width, codedHeight: height };
  if (codec.description) config.description = codec.description;
  if (sarNum && sarDen && sarNum !== sarDen) {
    config.displayAspectWidth = width * sarNum;
    config.displayAspectHeight = height * sarDen;
  }
  if (color) config.colorSpace = color;
  track.config = config;
  return track;
}

function extradataOf(d: Deno.PointerValue, index: number, size: number): Uint8Array {
  const out = new Uint8Array(size);
  const got = new Uint32Array(1);
  if (size) check(lib().gpures_demuxer_extradata(d, index, out, size, got));
  return out.subarray(0, got[0]);
}

/**
 * A container's tracks and their chunks (FFmpeg's libavformat; UnsupportedError
 * naming what is missing without it). Video tracks whose codec the WebCodecs
 * registry names have the `config` a VideoDecoder takes; `chunks()` gives
 * their EncodedVideoChunks, timestamps in microseconds.
 *
 * ```ts ignore
 * await using input = await Demuxer.open("in.mp4");
 * const track = input.tracks.find((t) => t.config)!;
 * decoder.configure(track.config!);
 * for await (const chunk of input.chunks(track.index)) decoder.decode(chunk);
 * ```
 */
export class Demuxer implements AsyncDisposable {
  #demuxer: Deno.PointerValue;
  #running: Promise<unknown> = Promise.resolve();
  #packet = new Uint8Array(PACKET_SIZE);
  #track = new Uint32Array(1);
  /** Its tracks, in the container's order. */
  readonly tracks: readonly DemuxedTrack[];

  private constructor(demuxer: Deno.PointerValue, tracks: DemuxedTrack[]) {
    this.#demuxer = demuxer;
    this.tracks = Object.freeze(tracks);
    forgotten.register(this, demuxer, this);
  }

  /** Opens `url` (a path or a URL) and reads ahead to learn its tracks. */
  static async open(url: string | URL, options?: DemuxerOptions): Promise<Demuxer> {
    const what = "open a Demuxer";
    const path = urlOption(what, url);
    const bag = optionsBag(what, options) ?? {};
    const timeout = own(bag, "timeoutMs");
    const { view: desc, keep } = descriptorOf(DESC_SIZE, [
      path,
      stringOption(what, bag, "format"),
      listOption(what, bag, "protocols"),
      listOption(what, bag, "formats"),
    ]);
    desc.setUint32(
      40,
      timeout === undefined ? 0 : countOption(what, "timeoutMs", timeout, 1, 3_600_000),
      true,
    );
    const signal = own(bag, "signal");
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      refuse(what, "signal", `${show(signal)} is not an AbortSignal`);
    }
    const out = new BigUint64Array(1);
    check(lib().gpures_demuxer_create(new Uint8Array(desc.buffer), out));
    keep.length = 0; // copied by create
    const d = Deno.UnsafePointer.create(out[0]);
    const interrupt = () => lib().gpures_demuxer_interrupt(d);
    (signal as AbortSignal | undefined)?.addEventListener("abort", interrupt, { once: true });
    if ((signal as AbortSignal | undefined)?.aborted) interrupt();
    const status = await lib().gpures_demuxer_open(d); // the strings were copied by create
    (signal as AbortSignal | undefined)?.removeEventListener("abort", interrupt);
    if (status !== 0) {
      const error = lastError(lib().gpures_demuxer_last_run(d));
      lib().gpures_demuxer_destroy(d);
      throw error;
    }
    try {
      const count = new Uint32Array(1);
      check(lib().gpures_demuxer_track_count(d, count));
      return new Demuxer(d, Array.from({ length: count[0] }, (_, i) => trackOf(d, i)));
    } catch (e) {
      lib().gpures_demuxer_destroy(d);
      throw e;
    }
  }

  /**
   * The next chunk of the selected tracks (every video track at first), or
   * null at the end of the input. A packet the container cannot give throws
   * (InvalidValueError naming "url"); reading can go on after it.
   */
  read(): Promise<DemuxedChunk | null> {
    const d = this.#live("read");
    const next = this.#running.then(async () => {
      if (await lib().gpures_demuxer_read(d) !== 0) {
        throw lastError(lib().gpures_demuxer_last_run(d));
      }
      return this.#take(d);
    });
    this.#running = next.catch(() => {});
    return next;
  }

  /** Reads only these tracks from now on (indices of {@link tracks}), after a read in flight. */
  select(tracks: readonly number[]): Promise<void> {
    const what = "select tracks";
    let d: Deno.PointerValue, wanted: Set<number>;
    try {
      d = this.#live(what);
      if (!Array.isArray(tracks)) {
        refuse(what, "tracks", `${show(tracks)} is not a list of indices`);
      }
      const last = this.tracks.length - 1;
      wanted = new Set(tracks.map((t, i) => countOption(what, `tracks[${i}]`, t, 0, last)));
    } catch (e) {
      return Promise.reject(e);
    }
    const step = this.#running.then(() => {
      for (const t of this.tracks) {
        check(lib().gpures_demuxer_select(d, t.index, wanted.has(t.index) ? 1 : 0));
      }
    });
    this.#running = step.catch(() => {});
    return step;
  }

  /**
   * The chunks of one track (the first with a `config` by default), to the end
   * of the input: it becomes the only track read (call it before the first
   * read, so that the track starts at its first key chunk).
   */
  async *chunks(track?: number): AsyncGenerator<EncodedVideoChunk, void, undefined> {
    const index = track === undefined
      ? this.tracks.find((t) => t.config)?.index
      : countOption("read chunks", "track", track, 0, this.tracks.length - 1);
    if (index === undefined) {
      refuse("read chunks", "track", "the input has no video track WebCodecs can decode");
    }
    await this.select([index]);
    for (;;) {
      const next = await this.read();
      if (next === null) return;
      if (next.track === index) yield next.chunk; // another caller may select others meanwhile
    }
  }

  #take(d: Deno.PointerValue): DemuxedChunk | null {
    const view = new DataView(this.#packet.buffer);
    view.setUint32(0, PACKET_SIZE, true);
    check(lib().gpures_demuxer_packet(d, this.#track, this.#packet));
    const track = this.#track[0];
    if (track === TRACK_END) return null;
    const size = Number(view.getBigUint64(16, true));
    const ptr = Deno.UnsafePointer.create(view.getBigUint64(8, true));
    const data = new Uint8Array(size);
    Deno.UnsafePointerView.copyInto(ptr!, data);
    const [num, den] = this.tracks[track].timebase;
    const us = (t: bigint) => microseconds(t, num, den);
    const pts = view.getBigInt64(24, true), dts = view.getBigInt64(32, true);
    const duration = view.getBigInt64(40, true);
    const timestamp = pts !== NOPTS ? us(pts) : dts !== NOPTS ? us(dts) : 0;
    const flags = view.getUint32(4, true);
    const chunk = chunkOf(
      flags & 1 ? "key" : "delta",
      timestamp,
      duration > 0n ? us(duration) : null,
      data,
    );
    const out: DemuxedChunk = { track, chunk };
    if (dts !== NOPTS) out.decodeTimestamp = us(dts);
    if (flags & 2) out.discard = true;
    return out;
  }

  #closed(what: string): GpuResourceError {
    return new GpuResourceError(`Cannot ${what}: the Demuxer is closed`, "STALE", "demuxer");
  }

  #live(what: string): Deno.PointerValue {
    if (this.#demuxer === null) throw this.#closed(what);
    return this.#demuxer;
  }

  /** Closes the input: a read in flight is interrupted (it rejects with CancelledError, or resolves). */
  async close(): Promise<void> {
    const d = this.#demuxer;
    if (d === null) return;
    this.#demuxer = null;
    forgotten.unregister(this);
    lib().gpures_demuxer_interrupt(d); // a read stalled on the network returns
    await this.#running;
    lib().gpures_demuxer_destroy(d);
  }

  /** close(). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
