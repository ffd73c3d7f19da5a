// Frame metadata on any handle: encoded and decoded by the codec compiled
// from gpures_frame_meta's rows (FRAME_META), like a descriptor's.

import { Codec } from "../table/codec.ts";
import { FRAME_META } from "../gen/kinds.ts";
import { check } from "../load/native.ts";
import { lib } from "../load/load.ts";
import type { FrameMeta, FrameMetaInit } from "../gen/types.ts";

let codec: Codec | undefined;
let out: DataView | undefined; // over codec.out, where gpures_meta_get writes
const metaCodec = () => codec ??= new Codec(FRAME_META, "set metadata");
const idOut = new BigUint64Array(1);

/** Stores `meta` in the handle (null removes it). */
export function setMeta(handle: bigint, meta: FrameMetaInit | null): void {
  const c = metaCodec();
  const bytes = c.begin();
  try {
    if (meta === null) return check(lib().gpures_meta_set(handle, null));
    c.encode(meta as Record<string, unknown>, bytes);
    check(lib().gpures_meta_set(handle, bytes));
  } finally {
    c.end(bytes);
  }
}

/** The handle's metadata, or null when it has none. */
export function getMeta(handle: bigint): FrameMeta | null {
  const c = metaCodec();
  out ??= new DataView(c.out.buffer);
  out.setUint32(0, c.out.byteLength, true);
  check(lib().gpures_meta_get(handle, c.out));
  if (out.getUint32(4, true) === 0) return null; // flags 0: no metadata
  const { kind: _k, kindId: _i, refcount: _r, ...meta } = c.describe("FrameMeta", 0, 0);
  return meta as unknown as FrameMeta;
}

/** The handle's buffer identity (gpures_buffer_id), or null when it has none. */
export function bufferIdOf(handle: bigint): bigint | null {
  check(lib().gpures_buffer_id(handle, idOut));
  return idOut[0] === 0n ? null : idOut[0];
}
