// The library as the hot paths call it: out-parameters, create options and
// polled events live in one scratch buffer whose addresses are computed once
// (a pointer argument crosses several times faster than a buffer), and the
// error of a failed call is read from the library's thread-local last error.

import { lib } from "./load.ts";
import type { Symbols } from "../gen/symbols.ts";
import { errorFor, type GpuResourceError } from "../errors.ts";

const scratch = new ArrayBuffer(16 + 48 + 16 * 64);
/** A created handle. */
export const u64Out: BigUint64Array = new BigUint64Array(scratch, 0, 1);
/** A kind, refcount, queue or event count. */
export const u32Out: Uint32Array = new Uint32Array(scratch, 8, 1);
/** gpures_create_options; struct_size set once, keep_alive always zero. */
export const optionView: DataView = new DataView(scratch, 16, 48);
/** gpures_event[64]. */
export const eventView: DataView = new DataView(scratch, 64, 16 * 64);
optionView.setUint32(0, 48, true);

// Their addresses, set by native() once the library is loaded (live bindings).
export let scratchAt: Deno.PointerObject | null = null;
export let u32At: Deno.PointerValue = null;
export let optionsAt: Deno.PointerValue = null;
export let eventsAt: Deno.PointerValue = null;
let loaded: Symbols | undefined;

/** The library, with the scratch addresses computed (once: a library stays loaded for good). */
export function native(): Symbols {
  if (loaded) return loaded;
  const s = lib();
  scratchAt = Deno.UnsafePointer.of(scratch)!;
  u32At = Deno.UnsafePointer.offset(scratchAt, 8);
  optionsAt = Deno.UnsafePointer.offset(scratchAt, 16);
  eventsAt = Deno.UnsafePointer.offset(scratchAt, 64);
  return loaded = s;
}

/** Reads a C string the library returned. */
export function cString(ptr: Deno.PointerValue): string {
  return ptr === null ? "" : Deno.UnsafePointerView.getCString(ptr);
}

/** The error of a failed call, from the library's thread-local last error. */
export function lastError(status: number): GpuResourceError {
  const s = lib();
  return errorFor(
    cString(s.gpures_status_name(status)) || `STATUS_${status}`,
    cString(s.gpures_last_error()),
    cString(s.gpures_last_error_field()),
  );
}

/** Throws the error of a failed call. */
export function check(status: number): void {
  if (status !== 0) throw lastError(status);
}
