// H.264 in the two framings WebCodecs names: Annex B (start codes, the
// parameter sets in the stream) and "avc" (4-byte lengths, the parameter sets
// in an avcC record, ISO/IEC 14496-15 5.3.3). libx264 gives Annex B; an
// "avc" encoder's output is rewritten here, a few bytes per NAL unit.

const NAL_SPS = 7, NAL_PPS = 8, NAL_AUD = 9;

/** The NAL units of an Annex B stream, without their start codes. */
export function nalUnits(stream: Uint8Array): Uint8Array[] {
  const units: Uint8Array[] = [];
  let start = -1;
  for (let i = 0; i + 2 < stream.length; i++) {
    if (stream[i] !== 0 || stream[i + 1] !== 0 || stream[i + 2] !== 1) continue;
    if (start >= 0) units.push(trimZeros(stream.subarray(start, i)));
    start = i + 3;
    i += 2;
  }
  if (start >= 0 && start < stream.length) units.push(stream.subarray(start));
  return units.filter((u) => u.length > 0);
}

/** A NAL unit without the zero bytes of the next start code (a 4-byte one). */
function trimZeros(unit: Uint8Array): Uint8Array {
  let end = unit.length;
  while (end > 0 && unit[end - 1] === 0) end--;
  return unit.subarray(0, end);
}

/** The avcC record of an Annex B stream's parameter sets; undefined without an SPS and a PPS. */
export function avcConfigurationRecord(annexB: Uint8Array): Uint8Array | undefined {
  const units = nalUnits(annexB);
  const sps = units.filter((u) => (u[0] & 0x1f) === NAL_SPS);
  const pps = units.filter((u) => (u[0] & 0x1f) === NAL_PPS);
  if (!sps.length || !pps.length || sps[0].length < 4 || sps.length > 31 || pps.length > 255) {
    return undefined;
  }
  const size = 7 + sps.reduce((n, u) => n + 2 + u.length, 0) +
    pps.reduce((n, u) => n + 2 + u.length, 0);
  const out = new Uint8Array(size);
  out.set([1, sps[0][1], sps[0][2], sps[0][3], 0xff, 0xe0 | sps.length]);
  let at = 6;
  const put = (u: Uint8Array) => {
    out[at] = u.length >> 8;
    out[at + 1] = u.length & 0xff;
    out.set(u, at + 2);
    at += 2 + u.length;
  };
  sps.forEach(put);
  out[at++] = pps.length;
  pps.forEach(put);
  return out;
}

/** An Annex B access unit as 4-byte-length NAL units, its parameter sets and delimiters left out. */
export function toLengthPrefixed(annexB: Uint8Array): Uint8Array {
  const units = nalUnits(annexB).filter((u) => {
    const type = u[0] & 0x1f;
    return type !== NAL_SPS && type !== NAL_PPS && type !== NAL_AUD;
  });
  const out = new Uint8Array(units.reduce((n, u) => n + 4 + u.length, 0));
  let at = 0;
  for (const u of units) {
    new DataView(out.buffer).setUint32(at, u.length);
    out.set(u, at + 4);
    at += 4 + u.length;
  }
  return out;
}

/**
 * An H.264 Annex B stream (a `.h264` file, an RTP depacketizer's output) as
 * its access units, one EncodedVideoChunk's worth each, start codes kept. A
 * unit starts at a delimiter, at parameter sets or SEI after a picture's
 * slices, or at the first slice of the next picture (first_mb_in_slice 0).
 */
export function h264AccessUnits(stream: Uint8Array): Uint8Array[] {
  const starts: number[] = []; // where each NAL unit's start code begins
  const types: number[] = [];
  for (let i = 0; i + 3 < stream.length; i++) {
    if (stream[i] !== 0 || stream[i + 1] !== 0 || stream[i + 2] !== 1) continue;
    starts.push(i > 0 && stream[i - 1] === 0 ? i - 1 : i);
    types.push(i + 3);
    i += 2;
  }
  const units: Uint8Array[] = [];
  let unitStart = -1, sawSlice = false;
  types.forEach((at, k) => {
    const type = stream[at] & 0x1f;
    const slice = type === 1 || type === 5;
    const firstSlice = slice && (stream[at + 1] & 0x80) !== 0; // ue(v) 0 is the single bit 1
    const opens = type === NAL_AUD || (sawSlice && (firstSlice || (type >= 6 && type <= 8)));
    if (unitStart < 0) unitStart = starts[k];
    else if (opens) {
      units.push(stream.subarray(unitStart, starts[k]));
      unitStart = starts[k];
      sawSlice = false;
    }
    if (slice) sawSlice = true;
  });
  if (unitStart >= 0) units.push(stream.subarray(unitStart));
  return units;
}
