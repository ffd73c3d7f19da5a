// Live counts, in the whole process (every isolate and native code), so
// tests and servers can prove nothing leaked.

import { lib } from "../load/load.ts";
import { knownKind } from "../table/platform.ts";
import type { KindName } from "../gen/types.ts";

/**
 * Live handles in the process (every isolate and native code), of one kind or
 * of all; for proving nothing leaked.
 *
 * @example
 * ```ts
 * import { liveHandles } from "@gpures/gpures";
 * console.log(liveHandles()); // 0
 * ```
 */
export function liveHandles(kind?: KindName | number): number {
  const id = kind === undefined ? 0 : knownKind(kind).id;
  return Number(lib().gpures_live_handles(id));
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
