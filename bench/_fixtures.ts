// tools/fixtures.ts resolved for the benchmarks: the valid descriptors the C
// benchmark (native/bench/bench.c) measures too, so both sides time the same
// descriptor.

import { FIXTURES, type KindName, resolve, textureDescriptor } from "../tools/fixtures.ts";
import { memfd } from "./_memfd.ts";

/** The 64-bit word the descriptors' slot-release gates point at. */
const gate = new BigUint64Array(1);

/** What {@link benchDesc} makes. */
export interface BenchDescOptions {
  /** A named shape of tools/fixtures.ts instead of the valid descriptor. */
  shape?: string;
  /** Receives the memfds made, for the caller to close. */
  fds?: number[];
  /** Makes the textures WgpuTexture's descriptor names. */
  device?: GPUDevice;
}

/** `kind`'s valid descriptor (or a named shape), its placeholders made for this process. */
export function benchDesc(
  kind: KindName,
  { shape, fds = [], device }: BenchDescOptions = {},
): Record<string, unknown> {
  const unused = () => {
    throw new Error("the benchmarks use valid descriptors only");
  };
  const fixture = FIXTURES[kind];
  const source = shape
    ? (fixture.shapes as Record<string, unknown> | undefined)?.[shape]
    : fixture.valid;
  if (source === undefined) throw new Error(`${kind} has no shape "${shape}"`);
  return resolve(source, {
    memfd: (size) => {
      const fd = memfd(size);
      fds.push(fd);
      return fd;
    },
    pipe: unused,
    closedFd: unused,
    fence: unused,
    gate: (offset) => Deno.UnsafePointer.offset(Deno.UnsafePointer.of(gate)!, offset),
    texture: (shape) => device?.createTexture(textureDescriptor(shape)),
  }) as Record<string, unknown>;
}
