// The codec strings of the WebCodecs codec registry (avc1/avc3, hev1/hvc1,
// vp8, vp09, av01), read into what libavcodec needs: which decoders and
// encoders can take the stream, and the encoder options its profile and level
// ask for. A string this does not recognise is unsupported, never guessed.

import type {
  VideoColorPrimaries,
  VideoColorSpaceInit,
  VideoMatrixCoefficients,
  VideoTransferCharacteristics,
} from "./color_space.ts";

/** What a codec string says, in libavcodec's terms. */
export interface CodecRoute {
  /** The registry's family. */
  family: "avc" | "hevc" | "vp8" | "vp9" | "av1";
  /** libavcodec decoders, best first. */
  decoders: readonly string[];
  /** libavcodec encoders, best first. */
  encoders: readonly string[];
  /** Encoder options the profile and level ask for ("profile=high:level=4.1"). */
  profileOptions: string;
  /** Bits per sample the string names (8 unless it says more). */
  bitDepth: number;
  /** The configuration record's name when the stream carries one out of band. */
  description?: "avcC" | "hvcC";
  /** The colour the string names (VP9's and AV1's optional fields, BT.709 by their default). */
  color?: VideoColorSpaceInit;
}

/** H.273 code points by WebCodecs' names (the ones it names). */
const PRIMARIES: Record<number, VideoColorPrimaries> = {
  1: "bt709",
  5: "bt470bg",
  6: "smpte170m",
  9: "bt2020",
  12: "smpte432",
};
const TRANSFERS: Record<number, VideoTransferCharacteristics> = {
  1: "bt709",
  6: "smpte170m",
  8: "linear",
  13: "iec61966-2-1",
  16: "pq",
  18: "hlg",
};
const MATRICES: Record<number, VideoMatrixCoefficients> = {
  0: "rgb",
  1: "bt709",
  5: "bt470bg",
  6: "smpte170m",
  9: "bt2020-ncl",
};

/** The colour fields of a VP9 or AV1 string; an absent one takes its default (1, 1, 1, 0). */
function colorFields(primaries = 1, transfer = 1, matrix = 1, range = 0): VideoColorSpaceInit {
  return {
    primaries: PRIMARIES[primaries] ?? null,
    transfer: TRANSFERS[transfer] ?? null,
    matrix: MATRICES[matrix] ?? null,
    fullRange: range === 1,
  };
}

const AVC_PROFILES: Record<number, string> = {
  0x42: "baseline",
  0x4d: "main",
  0x64: "high",
  0x6e: "high10",
  0x7a: "high422",
  0xf4: "high444",
};
/** level_idc values of H.264 Table A-1 (9 is level 1b). */
const AVC_LEVELS = new Set([
  9,
  10,
  11,
  12,
  13,
  20,
  21,
  22,
  30,
  31,
  32,
  40,
  41,
  42,
  50,
  51,
  52,
  60,
  61,
  62,
]);
const HEVC_PROFILES: Record<number, string> = { 1: "main", 2: "main10", 3: "mainstillpicture" };
/** general_level_idc: 30 times the level. */
const HEVC_LEVELS = new Set([30, 60, 63, 90, 93, 120, 123, 150, 153, 156, 180, 183, 186]);
const VP9_LEVELS = new Set([10, 11, 20, 21, 30, 31, 40, 41, 50, 51, 52, 60, 61, 62]);
const DEPTHS = new Set([8, 10, 12]);

function avc(codec: string): CodecRoute | undefined {
  const m = /^avc[13]\.([0-9A-Fa-f]{2})([0-9A-Fa-f]{2})([0-9A-Fa-f]{2})$/.exec(codec);
  if (!m) return undefined;
  const profile = AVC_PROFILES[parseInt(m[1], 16)];
  const level = parseInt(m[3], 16);
  if (!profile || !AVC_LEVELS.has(level)) return undefined;
  const levelText = level === 9 ? "1b" : `${Math.floor(level / 10)}.${level % 10}`;
  return {
    family: "avc",
    decoders: ["h264"],
    encoders: ["libx264"],
    profileOptions: `profile=${profile}:level=${levelText}`,
    bitDepth: profile === "high10" ? 10 : 8,
    description: "avcC",
  };
}

function hevc(codec: string): CodecRoute | undefined {
  // hvc1.<space><profile>.<compat flags>.<tier><level>[.<constraint bytes>]
  const m =
    /^(?:hev1|hvc1)\.([ABC]?)(\d{1,2})\.([0-9A-Fa-f]{1,8})\.([LH])(\d{1,3})((?:\.[0-9A-Fa-f]{1,2}){0,6})$/
      .exec(codec);
  if (!m || m[1] !== "") return undefined;
  const profile = HEVC_PROFILES[Number(m[2])];
  if (!profile || !HEVC_LEVELS.has(Number(m[5]))) return undefined;
  return {
    family: "hevc",
    decoders: ["hevc"],
    encoders: ["libx265"],
    profileOptions: `profile=${profile}`,
    bitDepth: profile === "main10" ? 10 : 8,
    description: "hvcC",
  };
}

function vp9(codec: string): CodecRoute | undefined {
  const m = /^vp09\.(\d\d)\.(\d\d)\.(\d\d)((?:\.\d\d){0,5})$/.exec(codec);
  if (!m) return undefined;
  const [profile, level, depth] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (profile > 3 || !VP9_LEVELS.has(level) || !DEPTHS.has(depth)) return undefined;
  const rest = m[4].split(".").slice(1).map(Number); // chroma, primaries, transfer, matrix, range
  if (rest.length && (rest[0] > 3 || (rest[4] ?? 0) > 1)) return undefined;
  return {
    family: "vp9",
    decoders: ["vp9", "libvpx-vp9"],
    encoders: ["libvpx-vp9"],
    profileOptions: `profile=${profile}`,
    bitDepth: depth,
    color: colorFields(rest[1], rest[2], rest[3], rest[4]),
  };
}

function av1(codec: string): CodecRoute | undefined {
  // av01.<profile>.<level><tier>.<depth>[.<mono>.<chroma>.<primaries>.<transfer>.<matrix>.<range>]
  const m = /^av01\.([012])\.(\d\d)([MH])\.(\d\d)((?:\.\d{1,3}){0,6})$/.exec(codec);
  if (!m) return undefined;
  const level = Number(m[2]);
  if ((level > 23 && level !== 31) || !DEPTHS.has(Number(m[4]))) return undefined;
  const rest = m[5].split(".").slice(1).map(Number); // mono, chroma, primaries, transfer, matrix, range
  return {
    family: "av1",
    decoders: ["libdav1d", "libaom-av1"],
    encoders: ["libaom-av1", "libsvtav1"],
    profileOptions: "",
    bitDepth: Number(m[4]),
    color: colorFields(rest[2], rest[3], rest[4], rest[5]),
  };
}

/** The route of a registry codec string, or undefined when it names none gpures knows. */
export function parseCodecString(codec: string): CodecRoute | undefined {
  if (codec === "vp8") {
    return {
      family: "vp8",
      decoders: ["vp8", "libvpx"],
      encoders: ["libvpx"],
      profileOptions: "",
      bitDepth: 8,
    };
  }
  return avc(codec) ?? hevc(codec) ?? vp9(codec) ?? av1(codec);
}
