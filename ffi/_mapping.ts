// CPU mappings of the memory behind an owned fd (gpures_map): an ArrayBuffer
// straight over the mmap()ed object, no copy. A mapping ends on unmap(), on
// the wrapper's release, or (safety net) once its ArrayBuffer is collected;
// ending it detaches the ArrayBuffer first, so JavaScript never reaches
// memory that is no longer mapped.

import { lib } from "./_load.ts";
import { lastError } from "./gpu_resource.ts";
import { InvalidHandleError } from "./errors.ts";

const MAP_READ = 1;
const MAP_WRITE = 2;
const ptrOut = new BigUint64Array(1);
const sizeOut = new BigUint64Array(1);

/** One live mapping. */
export interface Mapping {
  /** The mapped object's bytes; detached (byteLength 0) once unmapped. */
  readonly buffer: ArrayBuffer;
  readonly ptr: Deno.PointerObject;
}

// Unmaps what a collected ArrayBuffer covered. Nothing can reach the memory then.
const collected = new FinalizationRegistry<Deno.PointerObject>((ptr) => {
  lib().gpures_unmap(ptr);
});

/** Maps owned fd `index` of `handle` for reading and writing. */
export function mapHandle(handle: bigint, index: number, kind: string): Mapping {
  if (!Number.isInteger(index) || index < 0 || index > 0xffff_ffff) {
    throw new InvalidHandleError(
      `Cannot map ${kind}: index must be a non-negative integer, not ${index}`,
      "INVALID_VALUE",
      "index",
    );
  }
  const s = lib();
  const status = s.gpures_map(handle, index, MAP_READ | MAP_WRITE, ptrOut, sizeOut);
  if (status !== 0) throw lastError(status);
  const ptr = Deno.UnsafePointer.create(ptrOut[0])!;
  const size = Number(sizeOut[0]);
  let buffer: ArrayBuffer;
  try {
    buffer = Deno.UnsafePointerView.getArrayBuffer(ptr, size);
  } catch (e) {
    s.gpures_unmap(ptr);
    throw e;
  }
  const mapping = { buffer, ptr };
  collected.register(buffer, ptr, mapping);
  return mapping;
}

/**
 * Ends a mapping: detaches its ArrayBuffer (typed arrays over it read as
 * empty), then unmaps. An ArrayBuffer someone else detached (transferred to
 * another isolate) may still be in use there: that mapping is left in place.
 */
export function unmapMapping(mapping: Mapping): void {
  collected.unregister(mapping);
  if (mapping.buffer.detached) return;
  mapping.buffer.transfer(0);
  const status = lib().gpures_unmap(mapping.ptr);
  if (status !== 0) throw lastError(status);
}

/**
 * Mappings made by `DmaBufHandle.map()` (or `gpures_map` in native code) and
 * not yet unmapped, in the whole process; for proving nothing stays mapped.
 *
 * @example
 * ```ts
 * import { liveMappings } from "@gpures/gpures";
 * console.log(liveMappings()); // 0
 * ```
 */
export function liveMappings(): number {
  return Number(lib().gpures_live_mappings());
}
