// The bytes a GPU pool test writes into frame `seq` and checks on the far side.

/** Fills `bytes` with frame `seq`'s pattern. */
export function fillGpuPattern(bytes: Uint8Array, seq: number): Uint8Array {
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7 + (i >> 10) + seq * 13) & 255;
  return bytes;
}

/** Where `bytes` differ from frame `seq`'s pattern, or null when they do not. */
export function gpuPattern(bytes: Uint8Array, seq: number): string | null {
  for (let i = 0; i < bytes.length; i++) {
    const want = (i * 7 + (i >> 10) + seq * 13) & 255;
    if (bytes[i] !== want) return `frame ${seq}: byte ${i} is ${bytes[i]}, not ${want}`;
  }
  return null;
}

/** The seed of frame `seq`'s pattern on the GPU host (gp_pattern_byte in tests/gpu_helpers/probe/pattern.h). */
export function seedOf(seq: number): number {
  return (seq * 7919 + 1) >>> 0;
}
