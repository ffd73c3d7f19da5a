// H.265 in WebCodecs' "hevc" framing: the parameter sets in an hvcC record
// (ISO/IEC 14496-15 8.3.3), 4-byte lengths before each NAL unit. libx265
// gives Annex B; the record's fields come from the SPS, read here (its
// profile_tier_level, chroma format and bit depths), the rest from the units.

import { nalUnits } from "./avc.ts";

const VPS = 32, SPS = 33, PPS = 34, AUD = 35;
const typeOf = (unit: Uint8Array) => (unit[0] >> 1) & 0x3f;

/** A NAL unit's payload without its emulation prevention bytes (00 00 03 → 00 00). */
function rbsp(unit: Uint8Array): Uint8Array {
  const out = new Uint8Array(unit.length);
  let n = 0, zeros = 0;
  for (const b of unit) {
    if (zeros >= 2 && b === 3) {
      zeros = 0;
      continue;
    }
    zeros = b === 0 ? zeros + 1 : 0;
    out[n++] = b;
  }
  return out.subarray(0, n);
}

/** Bits of an RBSP, most significant first; reads past the end give 0s (a short SPS gives no record). */
class Bits {
  #at = 0;
  constructor(readonly bytes: Uint8Array) {}
  u(n: number): number {
    let v = 0;
    for (let i = 0; i < n; i++, this.#at++) {
      v = v * 2 + ((this.bytes[this.#at >> 3] >> (7 - (this.#at & 7))) & 1);
    }
    return v;
  }
  ue(): number {
    let zeros = 0;
    while (this.u(1) === 0) if (++zeros > 31) return -1;
    return 2 ** zeros - 1 + this.u(zeros);
  }
  get overrun(): boolean {
    return this.#at > this.bytes.length * 8;
  }
}

/** What hvcC takes from the SPS. */
interface SpsFields {
  ptl: Uint8Array; // the 12 bytes of general_profile_tier_level
  subLayers: number;
  nesting: number;
  chroma: number;
  depthLuma: number;
  depthChroma: number;
}

function readSps(unit: Uint8Array): SpsFields | undefined {
  const bytes = rbsp(unit);
  const b = new Bits(bytes.subarray(2)); // after the 2-byte NAL header
  b.u(4); // sps_video_parameter_set_id
  const maxSub = b.u(3);
  const nesting = b.u(1);
  if (bytes.length < 2 + 1 + 12) return undefined;
  const ptl = bytes.slice(3, 15); // byte-aligned: 4 + 3 + 1 bits before it
  b.u(96);
  const present: [number, number][] = [];
  for (let i = 0; i < maxSub; i++) present.push([b.u(1), b.u(1)]);
  if (maxSub > 0) { for (let i = maxSub; i < 8; i++) b.u(2); }
  for (const [profile, level] of present) b.u(profile * 88 + level * 8);
  b.ue(); // sps_seq_parameter_set_id
  const chroma = b.ue();
  if (chroma === 3) b.u(1);
  b.ue(), b.ue(); // width, height
  if (b.u(1)) b.ue(), b.ue(), b.ue(), b.ue(); // conformance window
  const depthLuma = b.ue() + 8, depthChroma = b.ue() + 8;
  if (b.overrun || chroma < 0 || chroma > 3 || depthLuma > 16 || depthChroma > 16) return undefined;
  return { ptl, subLayers: maxSub + 1, nesting, chroma, depthLuma, depthChroma };
}

/** The hvcC record of an Annex B stream's parameter sets; undefined without a readable VPS, SPS and PPS. */
export function hevcConfigurationRecord(annexB: Uint8Array): Uint8Array | undefined {
  const units = nalUnits(annexB);
  const arrays = [VPS, SPS, PPS].map((t) => units.filter((u) => u.length > 2 && typeOf(u) === t));
  if (arrays.some((a) => a.length === 0 || a.length > 0xffff)) return undefined;
  const sps = readSps(arrays[1][0]);
  if (!sps) return undefined;
  const size = 23 + arrays.reduce((n, a) => n + 3 + a.reduce((m, u) => m + 2 + u.length, 0), 0);
  const out = new Uint8Array(size);
  out[0] = 1;
  out.set(sps.ptl, 1); // profile space/tier/idc, compatibility flags, constraint flags, level
  out.set([
    0xf0,
    0x00, // min_spatial_segmentation_idc 0
    0xfc, // parallelismType 0
    0xfc | sps.chroma,
    0xf8 | (sps.depthLuma - 8),
    0xf8 | (sps.depthChroma - 8),
    0,
    0, // avgFrameRate unknown
    (sps.subLayers << 3) | (sps.nesting << 2) | 3, // 4-byte lengths
    arrays.length,
  ], 13);
  let at = 23;
  arrays.forEach((a, i) => {
    out.set([0x80 | [VPS, SPS, PPS][i], a.length >> 8, a.length & 0xff], at);
    at += 3;
    for (const u of a) {
      out.set([u.length >> 8, u.length & 0xff], at);
      out.set(u, at + 2);
      at += 2 + u.length;
    }
  });
  return out;
}

/** An Annex B access unit as 4-byte-length NAL units, its parameter sets and delimiters left out. */
export function hevcToLengthPrefixed(annexB: Uint8Array): Uint8Array {
  const units = nalUnits(annexB).filter((u) => ![VPS, SPS, PPS, AUD].includes(typeOf(u)));
  const out = new Uint8Array(units.reduce((n, u) => n + 4 + u.length, 0));
  const view = new DataView(out.buffer);
  let at = 0;
  for (const u of units) {
    view.setUint32(at, u.length);
    out.set(u, at + 4);
    at += 4 + u.length;
  }
  return out;
}
