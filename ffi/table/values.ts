// The values a descriptor field accepts, one field type at a time: the
// checks and conversions behind every encode (the compiled codec's fast path
// takes the common forms inline and calls writeValue() for the rest), enum
// names, addresses, and own-property reads.

import { ENUM_SETS, ENUMS } from "../gen/kinds.ts";
import { FIELD } from "./shape.ts";
import type { FieldRow } from "./tables.ts";
import { InvalidHandleError } from "../errors.ts";

const U32_MAX = 0xffff_ffff;
/** 2^64 - 1. */
export const U64_MAX: bigint = (1n << 64n) - 1n;

/** Enumeration values by set, then by name. */
export const enumValues: Map<number, Map<string, number>> = new Map();
/** Enumeration names by set, then by value. */
export const enumNames: Map<number, Map<number, string>> = new Map();
for (const e of ENUMS) {
  if (!enumValues.has(e.set)) enumValues.set(e.set, new Map());
  if (!enumNames.has(e.set)) enumNames.set(e.set, new Map());
  enumValues.get(e.set)!.set(e.name, e.value);
  enumNames.get(e.set)!.set(e.value, e.name);
}

/** The value of an enumeration name, or undefined. */
export function enumValue(set: number, name: string): number | undefined {
  return enumValues.get(set)?.get(name);
}

/** The name of an enumeration value, or undefined. */
export function enumName(set: number, value: number): string | undefined {
  return enumNames.get(set)?.get(value);
}

/**
 * What `o` holds under `key` itself: an inherited property (a polluted
 * Object.prototype, a class's getter) is not part of a descriptor or of
 * options. Nothing for a null or undefined `o`.
 */
export function own(o: unknown, key: string | number): unknown {
  if (o === null || o === undefined) return undefined;
  const v = (o as Record<string | number, unknown>)[key];
  return v === undefined || Object.hasOwn(o, key) ? v : undefined;
}

/**
 * `value`, read as `o.key` by the caller, when it is `o`'s own property;
 * undefined when inherited. Reading at the call site keeps that load fast.
 */
export function ownValue<T>(value: T, o: object, key: string): T | undefined {
  return value === undefined || Object.hasOwn(o, key) ? value : undefined;
}

/** An address from a pointer or a bigint. */
export function addressOf(value: unknown): bigint | undefined {
  if (value === null) return 0n;
  if (typeof value === "bigint") return value >= 0n && value <= U64_MAX ? value : undefined;
  if (typeof value === "object") {
    const known = addresses.get(value);
    if (known !== undefined) return known;
    try {
      const address = BigInt(Deno.UnsafePointer.value(value as Deno.PointerObject));
      addresses.set(value, address);
      return address;
    } catch {
      return undefined; // an object that is not a pointer
    }
  }
  return undefined;
}

// A pointer object's address never changes, and Deno.UnsafePointer.value() is an op that costs
// several FFI calls; the VkDevice or CUDA context a producer names on every create is the same
// object each time, so each is asked once.
const addresses = new WeakMap<object, bigint>();

/** A value as an error message shows it. */
export function show(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "bigint") return `${v}n`;
  if (v === null || v === undefined || typeof v !== "object") return String(v);
  return Array.isArray(v) ? "an array" : `a ${v.constructor?.name ?? "object"}`;
}

/**
 * Throws the InvalidHandleError of a bad field, argument or option: "Cannot
 * `what`: `path` `message`". `what` is the call that failed ("create VkImage",
 * "set metadata", "acquire").
 */
export function refuse(what: string, path: string, message: string): never {
  throw new InvalidHandleError(`Cannot ${what}: ${path} ${message}`, "INVALID_VALUE", path);
}

function integer(what: string, path: string, v: unknown, min: number, max: number): number {
  const n = typeof v === "bigint" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isInteger(n) || n < min || n > max) {
    refuse(what, path, `must be an integer from ${min} to ${max}, not ${show(v)}`);
  }
  return n + 0; // -0 is 0 (Deno's FFI refuses -0 as an unsigned integer)
}

/**
 * A count or size: an integer from `min` to `max`, as a number or a bigint
 * (like every integer field of a descriptor). Anything else (a fraction, NaN,
 * a string, a value past the range) is refused, never rounded or wrapped.
 */
export function countOption(
  what: string,
  field: string,
  v: unknown,
  min: number,
  max: number,
): number {
  return integer(what, field, v, min, max);
}

/** An optional count (absent, that is undefined, not null: `absent`). */
export function optionalCount(
  what: string,
  field: string,
  v: unknown,
  min: number,
  max: number,
  absent: number,
): number {
  return v === undefined ? absent : integer(what, field, v, min, max);
}

/** An optional whole-number option from 0 to `max` (absent: 0, the C library's default). */
export function integerOption(what: string, field: string, v: unknown, max: number): number {
  return v === undefined ? 0 : integer(what, field, v, 0, max);
}

/**
 * The longest wait the library counts, in milliseconds: its waits take 64-bit
 * nanoseconds (2^63 ns is about 292 years). A longer timeout means no limit.
 */
const MAX_TIMEOUT_MS = 9e12;

/**
 * A timeout in milliseconds, as the one rule of the module has it: a number,
 * 0 or more (fractions count); Infinity, or anything past what the library
 * can count (about 285 years), is Infinity: no limit, as a caller of a
 * setTimeout-like API means by it. NaN, negatives and non-numbers are refused
 * naming `field`. `absent`: the value for undefined. Allocates nothing.
 */
export function timeoutOption(what: string, field: string, v: unknown, absent: number): number {
  if (v === undefined) return absent;
  if (typeof v !== "number" || !(v >= 0)) {
    refuse(what, field, `must be a number of milliseconds, 0 or more, or Infinity, not ${show(v)}`);
  }
  return v > MAX_TIMEOUT_MS ? Infinity : v + 0; // + 0: -0 is 0
}

/** A timeout from timeoutOption() as the library's nanoseconds (rounded up); -1: no limit. */
export function timeoutNanos(ms: number): bigint {
  return ms === Infinity ? -1n : BigInt(Math.ceil(ms * 1e6));
}

/**
 * The options bag `options` of `what`: undefined or an object, whose own
 * properties alone are read (with own()).
 */
export function optionsBag(what: string, options: unknown, field = "options"): object | undefined {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    refuse(what, field, `must be an object, not ${show(options)}`);
  }
  return options as object | undefined;
}

/** An optional boolean option (absent: `absent`). */
export function booleanOption(what: string, field: string, v: unknown, absent: boolean): boolean {
  if (v === undefined) return absent;
  if (typeof v !== "boolean") refuse(what, field, `must be a boolean, not ${show(v)}`);
  return v;
}

/**
 * What an unknown name of `names` should have been: the name that differs only
 * in case, or the list of every name.
 */
export function suggestName(given: unknown, names: Iterable<string>): string {
  const all = [...names];
  if (typeof given === "string") {
    const lower = given.toLowerCase().replace(/[-_ ]/g, "");
    const close = all.find((n) => n.toLowerCase() === lower);
    if (close !== undefined) return `did you mean ${JSON.stringify(close)}?`;
  }
  return `one of ${all.join(", ")}`;
}

/**
 * Writes `v` as field `f` at byte `at`, converting what can be converted (a
 * bigint for a u32, a safe integer for a u64, an enum name) and refusing the
 * rest with a message naming `path`.
 */
export function writeValue(
  kind: string,
  view: DataView,
  f: FieldRow,
  at: number,
  v: unknown,
  path: string,
): void {
  switch (f.type) {
    case FIELD.U32:
    case FIELD.COUNT:
      return view.setUint32(at, integer(kind, path, v, 0, U32_MAX), true);
    case FIELD.I32:
    case FIELD.FD:
      return view.setInt32(at, integer(kind, path, v, -0x8000_0000, 0x7fff_ffff), true);
    case FIELD.BOOL:
      if (typeof v !== "boolean") refuse(kind, path, `must be a boolean, not ${show(v)}`);
      return view.setUint32(at, v ? 1 : 0, true);
    case FIELD.U64: {
      const b = typeof v === "number" && Number.isSafeInteger(v) ? BigInt(v) : v;
      if (typeof b !== "bigint" || b < 0n || b > U64_MAX) {
        refuse(kind, path, `must be a bigint from 0 to 2^64-1, not ${show(v)}`);
      }
      return view.setBigUint64(at, b, true);
    }
    case FIELD.I64: {
      const n = typeof v === "bigint" ? Number(v) : v;
      if (typeof n !== "number" || !Number.isSafeInteger(n) || BigInt(n) !== BigInt(v as number)) {
        refuse(kind, path, `must be an integer within +-(2^53 - 1), not ${show(v)}`);
      }
      return view.setBigInt64(at, BigInt(n), true);
    }
    case FIELD.PTR: {
      const a = addressOf(v);
      if (a === undefined) {
        refuse(kind, path, `must be a pointer or a bigint address, not ${show(v)}`);
      }
      return f.size === 8 ? view.setBigUint64(at, a, true) : view.setUint32(at, Number(a), true);
    }
    case FIELD.UUID:
      if (v instanceof Uint8Array && v.length !== 16) {
        refuse(kind, path, `must be 16 bytes, not ${v.length}`);
      }
      if (!(v instanceof Uint8Array)) {
        refuse(kind, path, `must be a Uint8Array of 16 bytes, not ${show(v)}`);
      }
      return new Uint8Array(view.buffer, view.byteOffset + at, 16).set(v);
    case FIELD.ENUM: {
      const value = typeof v === "string" ? enumValue(f.enumSet, v) : v;
      if (typeof v === "string" && value === undefined) {
        const names = enumValues.get(f.enumSet)!.keys();
        refuse(
          kind,
          path,
          `must be a ${ENUM_SETS[f.enumSet]} name, not ${show(v)}: ${suggestName(v, names)}`,
        );
      }
      return view.setUint32(at, integer(kind, path, value, 0, U32_MAX), true);
    }
  }
}
