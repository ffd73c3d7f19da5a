// One clock for every process and thread of the frame benchmarks:
// CLOCK_MONOTONIC through libc (performance.now() counts from each
// isolate's own start, so two of them cannot be compared).

// The demo (examples/frame_server.ts) stamps with the same function.
export { clockUs } from "../examples/frame_server.ts";

/** What a consumer reports per frame, as three float64s. */
export interface Stamps {
  /** When it started waiting for the frame. */
  readyUs: number;
  /** When it held typed views of the frame's planes (or all of its bytes). */
  heldUs: number;
  /** Just before its last release. */
  releasedUs: number;
}

export const STAMP_BYTES = 24;

export function encodeStamps(s: Stamps, into = new Float64Array(3)): Float64Array {
  into[0] = s.readyUs;
  into[1] = s.heldUs;
  into[2] = s.releasedUs;
  return into;
}

export function decodeStamps(f: Float64Array): Stamps {
  return { readyUs: f[0], heldUs: f[1], releasedUs: f[2] };
}
