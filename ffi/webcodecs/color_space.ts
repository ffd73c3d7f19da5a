// VideoColorSpace: WebCodecs' names for H.273's colour code points, which a
// frame's metadata keeps under the same names (gpures' names are a superset).

import type { FrameMeta } from "../gen/types.ts";

/** WebCodecs' colour primaries. */
export type VideoColorPrimaries = "bt709" | "bt470bg" | "smpte170m" | "bt2020" | "smpte432";
/** WebCodecs' transfer characteristics. */
export type VideoTransferCharacteristics =
  | "bt709"
  | "smpte170m"
  | "iec61966-2-1"
  | "linear"
  | "pq"
  | "hlg";
/** WebCodecs' matrix coefficients. */
export type VideoMatrixCoefficients = "rgb" | "bt709" | "bt470bg" | "smpte170m" | "bt2020-ncl";

/** {@link VideoColorSpace}'s members, each null when not known. */
export interface VideoColorSpaceInit {
  /** Colour primaries. */
  primaries?: VideoColorPrimaries | null;
  /** Transfer characteristics. */
  transfer?: VideoTransferCharacteristics | null;
  /** Matrix coefficients. */
  matrix?: VideoMatrixCoefficients | null;
  /** Full range (else limited). */
  fullRange?: boolean | null;
}

const PRIMARIES = ["bt709", "bt470bg", "smpte170m", "bt2020", "smpte432"];
const TRANSFERS = ["bt709", "smpte170m", "iec61966-2-1", "linear", "pq", "hlg"];
const MATRICES = ["rgb", "bt709", "bt470bg", "smpte170m", "bt2020-ncl"];

function member<T extends string>(
  init: VideoColorSpaceInit,
  key: keyof VideoColorSpaceInit,
  names: string[],
): T | null {
  const v = init[key];
  if (v === undefined || v === null) return null;
  if (!names.includes(String(v))) {
    throw new TypeError(
      `Cannot make a VideoColorSpace: ${key} is ${JSON.stringify(v)}, not one of ${
        names.join(", ")
      }`,
    );
  }
  return v as T;
}

/** The colour of a frame or a stream, as WebCodecs names it. */
export class VideoColorSpace {
  /** Colour primaries, or null. */
  readonly primaries: VideoColorPrimaries | null;
  /** Transfer characteristics, or null. */
  readonly transfer: VideoTransferCharacteristics | null;
  /** Matrix coefficients, or null. */
  readonly matrix: VideoMatrixCoefficients | null;
  /** Full range, or null. */
  readonly fullRange: boolean | null;

  /** TypeError for a member WebCodecs does not name. */
  constructor(init: VideoColorSpaceInit = {}) {
    this.primaries = member(init, "primaries", PRIMARIES);
    this.transfer = member(init, "transfer", TRANSFERS);
    this.matrix = member(init, "matrix", MATRICES);
    this.fullRange = init.fullRange === undefined || init.fullRange === null
      ? null
      : Boolean(init.fullRange);
  }

  /** The members as a plain object. */
  toJSON(): Required<VideoColorSpaceInit> {
    return {
      primaries: this.primaries,
      transfer: this.transfer,
      matrix: this.matrix,
      fullRange: this.fullRange,
    };
  }
}

/** REC 709, limited range: a YUV frame's colour when nothing says otherwise. @ignore */
export const REC709 = {
  primaries: "bt709",
  transfer: "bt709",
  matrix: "bt709",
  fullRange: false,
} as const;
/** sRGB, full range: an RGB frame's. @ignore */
export const SRGB = {
  primaries: "bt709",
  transfer: "iec61966-2-1",
  matrix: "rgb",
  fullRange: true,
} as const;

const known = (v: string, names: string[]) => names.includes(v) ? v : null;

/** A frame's colour metadata as a VideoColorSpace (code points WebCodecs does not name are null). */
export function colorSpaceOfMeta(color: FrameMeta["color"]): VideoColorSpace {
  if (!color) return new VideoColorSpace();
  return new VideoColorSpace({
    primaries: known(color.primaries, PRIMARIES) as VideoColorPrimaries | null,
    transfer: known(color.transfer, TRANSFERS) as VideoTransferCharacteristics | null,
    matrix: known(color.matrix, MATRICES) as VideoMatrixCoefficients | null,
    fullRange: color.fullRange,
  });
}

/** A VideoColorSpace as frame metadata; members it lacks are "unspecified". */
export function metaOfColorSpace(space: VideoColorSpaceInit): NonNullable<FrameMeta["color"]> {
  return {
    primaries: space.primaries ?? "unspecified",
    transfer: space.transfer ?? "unspecified",
    matrix: space.matrix ?? "unspecified",
    fullRange: space.fullRange ?? false,
  };
}
