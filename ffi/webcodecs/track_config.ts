// A demuxed video track's VideoDecoderConfig codec string and description,
// by the W3C WebCodecs codec registry (avc1, hvc1/hev1, vp8, vp09, av01),
// from what libavformat reports. Everything here comes from the file, so no
// field is trusted: a record that does not hold together is not a record, a
// number out of its range is unknown, and nothing read can throw.

import { nalUnits } from "./avc.ts";
import { hevcConfigurationRecord } from "./hevc.ts";

/** What libavformat knows of a video track (all from AVCodecParameters). */
export interface TrackFacts {
  /** libavcodec's codec name: "h264", "hevc", "vp8", "vp9", "av1", or anything else. */
  codec: string;
  /** AVCodecParameters.extradata (may be empty). */
  extradata: Uint8Array;
  /** FFmpeg's profile, -99 when unknown. */
  profile: number;
  /** FFmpeg's level, -99 when unknown (h264: 31 = 3.1; hevc: 30 × level; vp9: 10 × level; av1: seq_level_idx). */
  level: number;
  /** Bits per sample, from the pixel format; 8 when unknown. */
  bitDepth: number;
  /** Coded width in pixels. */
  width: number;
  /** Coded height in pixels. */
  height: number;
  /** Chroma subsampling, from the pixel format. */
  chroma: "420" | "422" | "444" | "400" | undefined;
  /** H.273 colour primaries (2 = unspecified). */
  primaries: number;
  /** H.273 transfer characteristics (2 = unspecified). */
  transfer: number;
  /** H.273 matrix coefficients (2 = unspecified). */
  matrix: number;
  /** Full-range (JPEG) samples rather than limited (video) range. */
  fullRange: boolean;
}

/** A track's WebCodecs codec string, and its configuration record when the chunks need one. */
export interface TrackCodec {
  /** The registry codec string. */
  codec: string;
  /** The configuration record (a copy), absent when the chunks carry their parameter sets. */
  description?: Uint8Array;
}

/** `v` when it is an integer in [lo, hi], else undefined: how an untrusted number becomes a known one. */
function within(v: unknown, lo: number, hi: number): number | undefined {
  return typeof v === "number" && Number.isInteger(v) && v >= lo && v <= hi ? v : undefined;
}

const hex2 = (n: number) => n.toString(16).padStart(2, "0");
const dec2 = (n: number) => String(n).padStart(2, "0");

/** Whether `b` opens with an Annex B start code (3 or 4 bytes). */
function annexB(b: Uint8Array): boolean {
  return b.length >= 4 && b[0] === 0 && b[1] === 0 &&
    (b[2] === 1 || (b[2] === 0 && b[3] === 1));
}

/**
 * Walks `count` NAL units of 16-bit length from `at`; the offset after them,
 * or -1 when one runs past the end (the lengths are the file's, not ours).
 */
function skipUnits(b: Uint8Array, at: number, count: number): number {
  for (let i = 0; i < count; i++) {
    if (at + 2 > b.length) return -1;
    at += 2 + ((b[at] << 8) | b[at + 1]);
    if (at > b.length) return -1;
  }
  return at;
}

/** Whether `b` is an avcC (ISO/IEC 14496-15 5.3.3) whose parameter set arrays fit in it. */
function isAvcC(b: Uint8Array): boolean {
  if (b.length < 7 || b[0] !== 1 || b[1] === 0) return false;
  const afterSps = skipUnits(b, 6, b[5] & 0x1f);
  // Trailing bytes are allowed: High profiles append chroma and depth fields.
  return afterSps >= 0 && afterSps < b.length && skipUnits(b, afterSps + 1, b[afterSps]) >= 0;
}

/** Whether `b` is an hvcC (ISO/IEC 14496-15 8.3.3) whose NAL unit arrays fit in it. */
function isHvcC(b: Uint8Array): boolean {
  if (b.length < 23 || b[0] !== 1) return false;
  let at = 23;
  for (let i = 0; i < b[22]; i++) {
    if (at + 3 > b.length) return false;
    at = skipUnits(b, at + 3, (b[at + 1] << 8) | b[at + 2]);
    if (at < 0) return false;
  }
  return true;
}

const avcString = (profileIdc: number, constraints: number, levelIdc: number) =>
  `avc1.${hex2(profileIdc)}${hex2(constraints)}${hex2(levelIdc)}`;

/** FFmpeg's bits for the constraint_set flags it folds into the profile (AV_PROFILE_H264_CONSTRAINED, _INTRA). */
const FF_H264_CONSTRAINED = 1 << 9, FF_H264_INTRA = 1 << 11;

function h264(t: TrackFacts, extradata: Uint8Array): TrackCodec | undefined {
  if (isAvcC(extradata)) {
    return {
      codec: avcString(extradata[1], extradata[2], extradata[3]),
      description: extradata.slice(),
    };
  }
  if (annexB(extradata)) {
    const sps = nalUnits(extradata).find((u) => (u[0] & 0x1f) === 7 && u.length >= 4);
    // profile_idc 0 is no profile: it would also be the only way bytes 1..3
    // could hold an emulation prevention byte, so non-zero means they are raw.
    if (sps && sps[1] !== 0) return { codec: avcString(sps[1], sps[2], sps[3]) };
  }
  const profile = within(t.profile, 1, 0xfff), level = within(t.level, 1, 255);
  if (profile === undefined || level === undefined || (profile & 0xff) === 0) return undefined;
  // FFmpeg moves constraint_set1 and constraint_set3 into the profile
  // (Constrained Baseline, the Intra profiles); put them back where they were.
  const constraints = (profile & FF_H264_CONSTRAINED ? 0x40 : 0) |
    (profile & FF_H264_INTRA ? 0x10 : 0);
  return { codec: avcString(profile & 0xff, constraints, level) };
}

/** The part of an HEVC codec string after its prefix, from the first 13 bytes of an hvcC. */
function hevcFields(r: Uint8Array): string {
  const space = ["", "A", "B", "C"][r[1] >> 6];
  const tier = r[1] & 0x20 ? "H" : "L";
  const compat = ((r[2] << 24) | (r[3] << 16) | (r[4] << 8) | r[5]) >>> 0;
  let reversed = 0;
  for (let i = 0; i < 32; i++) reversed = reversed * 2 + ((compat >>> i) & 1);
  const constraints = Array.from(r.subarray(6, 12));
  while (constraints.length && constraints[constraints.length - 1] === 0) constraints.pop();
  return `${space}${r[1] & 0x1f}.${reversed.toString(16).toUpperCase()}.${tier}${r[12]}` +
    constraints.map((c) => "." + c.toString(16).toUpperCase()).join("");
}

function hevc(extradata: Uint8Array): TrackCodec | undefined {
  if (isHvcC(extradata)) {
    return { codec: "hvc1." + hevcFields(extradata), description: extradata.slice() };
  }
  if (!annexB(extradata)) return undefined;
  // hev1: the parameter sets stay in the chunks, so the record only names the profile.
  const record = hevcConfigurationRecord(extradata);
  return record && { codec: "hev1." + hevcFields(record) };
}

/** An H.273 code point for a two-digit field; unspecified, and what cannot be written, as the default 1. */
function colourField(v: number): number {
  const n = within(v, 0, 99);
  return n === undefined || n === 2 ? 1 : n;
}

/** VP9 levels (×10) by their largest luma picture size (WebM's VP9 level table), smallest first. */
const VP9_LEVEL_SIZES: [number, number][] = [
  [10, 36864],
  [11, 73728],
  [20, 122880],
  [21, 245760],
  [30, 552960],
  [31, 983040],
  [40, 2228224],
  [50, 8912896],
  [60, 35651584],
];
const VP9_LEVELS = new Set([10, 11, 20, 21, 30, 31, 40, 41, 50, 51, 52, 60, 61, 62]);

function vp9Level(t: TrackFacts): number {
  const level = within(t.level, 10, 62);
  if (level !== undefined && VP9_LEVELS.has(level)) return level;
  const w = within(t.width, 0, 65536) ?? 0, h = within(t.height, 0, 65536) ?? 0;
  // Past the largest level the stream is out of the table; 6.2 is the nearest it has.
  return VP9_LEVEL_SIZES.find(([, size]) => w * h <= size)?.[0] ?? 62;
}

function vp9(t: TrackFacts): TrackCodec | undefined {
  const depth = within(t.bitDepth, 8, 12);
  if (depth !== 8 && depth !== 10 && depth !== 12) return undefined;
  const subsampled = t.chroma === "422" || t.chroma === "444";
  // An unknown profile follows from what the profiles allow (1 and 3 add
  // 4:2:2 and 4:4:4, 2 and 3 add 10 and 12 bits), so a 10-bit stream is
  // never called profile 0.
  const profile = within(t.profile, 0, 3) ?? (depth > 8 ? 2 : 0) + (subsampled ? 1 : 0);
  const chroma = t.chroma === "422" ? 2 : t.chroma === "444" ? 3 : 1;
  const colour = [colourField(t.primaries), colourField(t.transfer), colourField(t.matrix)];
  const range = t.fullRange === true ? 1 : 0;
  const short = `vp09.${dec2(profile)}.${dec2(vp9Level(t))}.${dec2(depth)}`;
  if (chroma === 1 && colour.every((c) => c === 1) && range === 0) return { codec: short };
  return { codec: `${short}.${dec2(chroma)}.${colour.map(dec2).join(".")}.${dec2(range)}` };
}

/** seq_level_idx values AV1 defines (Annex A.3): 0..23, and 31 for no level. */
const av1Level = (v: number) => {
  const n = within(v, 0, 31);
  return n !== undefined && (n <= 23 || n === 31) ? n : undefined;
};

interface Av1Fields {
  profile: number;
  level: number;
  tier: number;
  depth: number;
  mono: number;
  chroma: string; // subsampling_x, subsampling_y, chroma_sample_position
}

function av1String(f: Av1Fields, t: TrackFacts): string {
  const short = `av01.${f.profile}.${dec2(f.level)}${f.tier ? "H" : "M"}.${dec2(f.depth)}`;
  const colour = [colourField(t.primaries), colourField(t.transfer), colourField(t.matrix)];
  const range = t.fullRange === true ? 1 : 0;
  if (!f.mono && f.chroma === "110" && colour.every((c) => c === 1) && range === 0) return short;
  return `${short}.${f.mono}.${f.chroma}.${colour.map(dec2).join(".")}.${range}`;
}

function av1(t: TrackFacts, extradata: Uint8Array): TrackCodec | undefined {
  if (extradata.length >= 4 && extradata[0] === 0x81) {
    const [, b1, b2] = extradata;
    const profile = b1 >> 5, level = av1Level(b1 & 0x1f);
    // Profiles 3..7 are reserved: a record naming one is not a record we can describe.
    if (profile <= 2 && level !== undefined) {
      const high = (b2 >> 6) & 1, twelve = profile === 2 && (b2 >> 5) & 1;
      const fields = {
        profile,
        level,
        tier: b2 >> 7,
        depth: high ? (twelve ? 12 : 10) : 8,
        mono: (b2 >> 4) & 1,
        chroma: `${(b2 >> 3) & 1}${(b2 >> 2) & 1}${b2 & 3}`,
      };
      return { codec: av1String(fields, t), description: extradata.slice() };
    }
  }
  const profile = within(t.profile, 0, 2), level = av1Level(t.level);
  const depth = within(t.bitDepth, 8, 12);
  if (profile === undefined || level === undefined) return undefined;
  if (depth !== 8 && depth !== 10 && depth !== 12) return undefined;
  const chroma = t.chroma === "444" ? "000" : t.chroma === "422" ? "100" : "110";
  const fields = { profile, level, tier: 0, depth, mono: t.chroma === "400" ? 1 : 0, chroma };
  return { codec: av1String(fields, t) };
}

/**
 * The WebCodecs codec string of a demuxed video track and, where its chunks
 * need one, its description (a copy of the avcC, hvcC or av1C record); or
 * undefined when WebCodecs has no string for its codec or the file says too
 * little to write one. Never throws, whatever the file holds.
 */
export function trackCodec(t: TrackFacts): TrackCodec | undefined {
  const extradata = t.extradata instanceof Uint8Array ? t.extradata : new Uint8Array(0);
  switch (t.codec) {
    case "h264":
      return h264(t, extradata);
    case "hevc":
      return hevc(extradata);
    case "vp8":
      return { codec: "vp8" };
    case "vp9":
      return vp9(t);
    case "av1":
      return av1(t, extradata);
    default:
      return undefined;
  }
}
