// CPU mappings of the memory behind an owned fd (gpures_map): an ArrayBuffer
// straight over the mmap()ed object, no copy.
//
// A mapping lives exactly as long as the last ArrayBuffer over its pages. The
// buffer is a Node-API external ArrayBuffer made by the library itself
// (native/src/map/napi_buffers.c), whose finalizer ends the mapping: a buffer
// moved away with transfer(), postMessage() or a BYOB read takes the mapping
// with it, and it ends when that buffer is collected, in whichever isolate.
// unmap() detaches the buffer while it is still the wrapper's own: with no
// buffer left over the pages, the runtime runs the finalizer at once.

import process from "node:process";
import { libraryPath } from "../load/load.ts";
import { lastError } from "../load/native.ts";
import { InvalidHandleError } from "../errors.ts";
import { own } from "../table/values.ts";

const MAP_READ = 1;
const MAP_WRITE = 2;
const MAP_ALLOW_UNSEALED = 4;

/** One live mapping. */
export interface Mapping {
  /** The mapped object's bytes; detached (byteLength 0) once unmapped or moved away. */
  readonly buffer: ArrayBuffer;
}

/** What {@link DmaBufHandle.map} accepts. */
export interface MapOptions {
  /**
   * Map a regular file, or a memfd that is not sealed against shrinking and
   * cannot be sealed. Only for a trusted local producer: if anyone shrinks
   * the object while it is mapped, the next access past its new end kills
   * the process with SIGBUS. Without it such objects are refused.
   */
  allowUnsealed?: boolean;
}

interface Addon {
  mapBuffer(handle: bigint, index: number, flags: number): ArrayBuffer | number;
}
let addon: Addon | undefined;

/** The library loaded a second time, as a Node-API addon, for its mapBuffer(). */
function buffers(): Addon {
  if (addon) return addon;
  const module = { exports: {} as Partial<Addon> };
  process.dlopen(module, libraryPath());
  if (typeof module.exports.mapBuffer !== "function") {
    throw new Error("Cannot map: the library exports no mapBuffer (Node-API is missing)");
  }
  return addon = module.exports as Addon;
}

/** Maps owned fd `index` of `handle` for reading and writing. */
export function mapHandle(
  handle: bigint,
  index: number,
  kind: string,
  options: MapOptions = {},
): Mapping {
  if (!Number.isInteger(index) || index < 0 || index > 0xffff_ffff) {
    throw new InvalidHandleError(
      `Cannot map ${kind}: index must be a non-negative integer, not ${index}`,
      "INVALID_VALUE",
      "index",
    );
  }
  const allow = own(options, "allowUnsealed") ?? false;
  if (typeof allow !== "boolean") {
    throw new InvalidHandleError(
      `Cannot map ${kind}: options.allowUnsealed must be a boolean, not ${typeof allow}`,
      "INVALID_VALUE",
      "options.allowUnsealed",
    );
  }
  const flags = MAP_READ | MAP_WRITE | (allow ? MAP_ALLOW_UNSEALED : 0);
  const buffer = buffers().mapBuffer(handle, index, flags);
  if (typeof buffer === "number") throw lastError(buffer);
  return { buffer };
}

/**
 * Ends a mapping if its buffer is still the wrapper's: detaching the buffer
 * (typed arrays over it read as empty) drops the last reference to its pages,
 * and the finalizer unmaps them. A buffer moved elsewhere keeps the mapping
 * until that buffer is collected.
 */
export function unmapMapping(mapping: Mapping): void {
  if (!mapping.buffer.detached) mapping.buffer.transfer(0);
}
