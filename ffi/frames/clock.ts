// The clock frames are stamped with: one for every process, so a producer's
// stamp and a consumer's compare without a call of their own to libc.

import { lib } from "../load/load.ts";

/**
 * Microseconds on the machine's monotonic clock (CLOCK_MONOTONIC; on
 * Windows the performance counter): the same clock in every process, Worker
 * and native library of the machine, so a stamp a producer puts in a frame's
 * metadata means the same in its consumer. Not wall time; it starts at an
 * arbitrary point (often the boot).
 *
 * @example Latency of a frame across processes
 * ```ts
 * import { clockUs } from "@gpures/gpures";
 * const sent = clockUs(); // in the producer, carried in the frame's metadata
 * const latency = clockUs() - sent; // in the consumer
 * console.log(latency >= 0);
 * ```
 */
export function clockUs(): number {
  return Number(lib().gpures_clock_us());
}
