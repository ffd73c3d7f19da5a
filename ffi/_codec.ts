// Turns descriptor objects into the C structs' bytes and back, driven by the
// generated field rows: no offset is written by hand anywhere in TypeScript.

import { ENUM_SETS, ENUMS, KINDS } from "./_kinds.ts";
import { FIELD, memberName, type Node, nodesOf } from "./_shape.ts";
import type { FieldRow, KindRow } from "./_tables.ts";
import { InvalidHandleError } from "./errors.ts";

const U32_MAX = 0xffff_ffff;
const U64_MAX = (1n << 64n) - 1n;

const enumValues = new Map<number, Map<string, number>>();
const enumNames = new Map<number, Map<number, string>>();
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
 * Object.prototype, a class's getter) is not part of a descriptor.
 */
export function own(o: object, key: string | number): unknown {
  const v = (o as Record<string | number, unknown>)[key];
  return v === undefined || Object.hasOwn(o, key) ? v : undefined;
}

/** An address from a pointer or a bigint. */
export function addressOf(value: unknown): bigint | undefined {
  if (value === null) return 0n;
  if (typeof value === "bigint") return value >= 0n && value <= U64_MAX ? value : undefined;
  if (typeof value === "object") {
    try {
      return BigInt(Deno.UnsafePointer.value(value as Deno.PointerObject));
    } catch {
      return undefined; // an object that is not a pointer
    }
  }
  return undefined;
}

class Encoder {
  constructor(readonly kind: KindRow, readonly view: DataView) {}

  fail(path: string, message: string): never {
    throw new InvalidHandleError(
      `Cannot create ${this.kind.name}: ${path} ${message}`,
      "INVALID_VALUE",
      path,
    );
  }

  u32(path: string, v: unknown, min = 0, max = U32_MAX): number {
    const n = typeof v === "bigint" ? Number(v) : v;
    if (typeof n !== "number" || !Number.isInteger(n) || n < min || n > max) {
      this.fail(path, `must be an integer from ${min} to ${max}, not ${show(v)}`);
    }
    return n;
  }

  write(f: FieldRow, at: number, v: unknown, path: string): void {
    const view = this.view;
    switch (f.type) {
      case FIELD.U32:
      case FIELD.COUNT:
        view.setUint32(at, this.u32(path, v), true);
        return;
      case FIELD.I32:
      case FIELD.FD:
        view.setInt32(at, this.u32(path, v, -0x8000_0000, 0x7fff_ffff), true);
        return;
      case FIELD.BOOL:
        if (typeof v !== "boolean") this.fail(path, `must be a boolean, not ${show(v)}`);
        view.setUint32(at, v ? 1 : 0, true);
        return;
      case FIELD.U64: {
        const b = typeof v === "number" && Number.isSafeInteger(v) ? BigInt(v) : v;
        if (typeof b !== "bigint" || b < 0n || b > U64_MAX) {
          this.fail(path, `must be a bigint from 0 to 2^64-1, not ${show(v)}`);
        }
        view.setBigUint64(at, b, true);
        return;
      }
      case FIELD.PTR: {
        const a = addressOf(v);
        if (a === undefined) {
          this.fail(path, `must be a pointer or a bigint address, not ${show(v)}`);
        }
        if (f.size === 8) view.setBigUint64(at, a, true);
        else view.setUint32(at, Number(a), true);
        return;
      }
      case FIELD.UUID: {
        if (!(v instanceof Uint8Array) || v.length !== 16) {
          this.fail(path, `must be a Uint8Array of 16 bytes, not ${show(v)}`);
        }
        new Uint8Array(view.buffer, view.byteOffset + at, 16).set(v);
        return;
      }
      case FIELD.ENUM: {
        const value = typeof v === "string" ? enumValue(f.enumSet, v) : v;
        if (typeof v === "string" && value === undefined) {
          this.fail(path, `must be a ${ENUM_SETS[f.enumSet]} name, not ${show(v)}`);
        }
        view.setUint32(at, this.u32(path, value), true);
        return;
      }
    }
  }

  /** Sets an optional group's bit in the descriptor's flags. */
  present(f: FieldRow): void {
    this.view.setUint32(4, this.view.getUint32(4, true) | f.presentBit, true);
  }

  node(n: Node, desc: Record<string, unknown>): void {
    const v = own(desc, n.key);
    // null reads as absent for what may be absent, so create(describe()) round-trips.
    if (v === undefined || (v === null && (n.shape !== "scalar" || !n.required))) {
      if (n.required) this.fail(n.key, "is missing");
      return;
    }
    if (n.shape === "scalar") {
      const f = n.rows[0];
      if (f.presentBit) this.present(f);
      this.write(f, f.offset, v, n.key);
      return;
    }
    if (n.shape === "group") {
      if (typeof v !== "object") this.fail(n.key, `must be an object, not ${show(v)}`);
      this.present(n.rows[0]);
      for (const f of n.rows) {
        const path = `${n.key}.${memberName(f)}`;
        const m = own(v as object, memberName(f));
        if (m === undefined) this.fail(path, "is missing");
        this.write(f, f.offset, m, path);
      }
      return;
    }
    if (!Array.isArray(v)) this.fail(n.key, `must be an array, not ${show(v)}`);
    const count = n.count!;
    // Bounded before any element is read: a sparse array may claim 2^32-1 of them.
    if (v.length > count.count) {
      this.fail(n.key, `has ${v.length} entries; at most ${count.count} are allowed`);
    }
    // C checks the count; only as many elements as the struct holds are written.
    this.write(count, count.offset, v.length, n.key);
    const len = Math.min(v.length, count.count);
    for (let i = 0; i < len; i++) {
      for (const f of n.rows) {
        if (n.shape === "array") {
          this.write(f, f.offset + i * f.stride, own(v, i), `${n.key}[${i}]`);
          continue;
        }
        const path = `${n.key}[${i}].${memberName(f)}`;
        const item = own(v, i);
        if (typeof item !== "object" || item === null) {
          this.fail(`${n.key}[${i}]`, `must be an object, not ${show(item)}`);
        }
        const m = own(item as object, memberName(f));
        if (m === undefined) this.fail(path, "is missing");
        this.write(f, f.offset + i * f.stride, m, path);
      }
    }
  }
}

function show(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "bigint") return `${v}n`;
  if (v === null || v === undefined || typeof v !== "object") return String(v);
  return Array.isArray(v) ? "an array" : `a ${v.constructor?.name ?? "object"}`;
}

function read(f: FieldRow, view: DataView, at: number): unknown {
  switch (f.type) {
    case FIELD.I32:
    case FIELD.FD:
      return view.getInt32(at, true);
    case FIELD.U64:
      return view.getBigUint64(at, true);
    case FIELD.PTR: {
      const a = f.size === 8 ? view.getBigUint64(at, true) : BigInt(view.getUint32(at, true));
      return a === 0n && f.flags & 1 ? null : a;
    }
    case FIELD.BOOL:
      return view.getUint32(at, true) !== 0;
    case FIELD.UUID:
      return new Uint8Array(view.buffer.slice(view.byteOffset + at, view.byteOffset + at + 16));
    case FIELD.ENUM: {
      const value = view.getUint32(at, true);
      return enumName(f.enumSet, value) ?? value;
    }
    default: {
      const value = view.getUint32(at, true);
      return value === 0 && f.flags & 1 ? null : value;
    }
  }
}

// ------------------------------------------------------------- compiled codecs
//
// The generic Encoder and read() above walk the field rows on every call.
// Each kind also gets a pair of functions compiled once from its rows, with
// every offset, key and type written in: the encoder takes the common inputs
// (numbers, bigints, pointers, names, Uint8Array UUIDs) and gives up on
// anything else, which the generic Encoder then converts or rejects with its
// message; the decoder builds the description object in one literal. The rows
// come from the generated kind table (keys match /^\w+$/), never from input.

type FastEncode = (d: Record<string, unknown>, w: DataView, b: Uint8Array) => boolean;
type FastDecode = (
  w: DataView,
  b: Uint8Array,
  kind: string,
  kindId: number,
  refcount: number,
) => Record<string, unknown>;

/** Statements that check the JS value in `v` and write it at byte `at`, or return false. */
function encodeValue(f: FieldRow, at: string, v: string): string {
  switch (f.type) {
    case FIELD.U32:
    case FIELD.COUNT:
      return `if (typeof ${v} !== "number" || (${v} >>> 0) !== ${v}) return false;
      w.setUint32(${at}, ${v}, true);`;
    case FIELD.I32:
    case FIELD.FD:
      return `if (typeof ${v} !== "number" || (${v} | 0) !== ${v}) return false;
      w.setInt32(${at}, ${v}, true);`;
    case FIELD.BOOL:
      return `if (${v} === true) w.setUint32(${at}, 1, true); else if (${v} !== false) return false;`;
    case FIELD.U64:
      return `if (typeof ${v} !== "bigint" || ${v} < 0n || ${v} > M) return false;
      w.setBigUint64(${at}, ${v}, true);`;
    case FIELD.PTR:
      return `if (typeof ${v} === "bigint") { if (${v} < 0n || ${v} > M) return false; }
      else if (${v} === null) ${v} = 0n;
      else if (typeof ${v} === "object") { ${v} = addressOf(${v}); if (typeof ${v} !== "bigint") return false; }
      else return false;
      ${
        f.size === 8
          ? `w.setBigUint64(${at}, ${v}, true);`
          : `w.setUint32(${at}, Number(${v}), true);`
      }`;
    case FIELD.UUID:
      return `if (!(${v} instanceof Uint8Array) || ${v}.length !== 16) return false;
      b.set(${v}, ${at});`;
    case FIELD.ENUM:
      return `if (typeof ${v} === "string") { ${v} = E${f.enumSet}.get(${v}); if (${v} === undefined) return false; }
      if (typeof ${v} !== "number" || (${v} >>> 0) !== ${v}) return false;
      w.setUint32(${at}, ${v}, true);`;
  }
  return "return false;";
}

/** An expression reading the field at byte `at` as describe() shows it. */
function decodeValue(f: FieldRow, at: string): string {
  const optional = (f.flags & 1) !== 0;
  switch (f.type) {
    case FIELD.I32:
    case FIELD.FD:
      return `w.getInt32(${at}, true)`;
    case FIELD.U64:
      return `w.getBigUint64(${at}, true)`;
    case FIELD.PTR: {
      const a = f.size === 8 ? `w.getBigUint64(${at}, true)` : `BigInt(w.getUint32(${at}, true))`;
      return optional ? `((t = ${a}) === 0n ? null : t)` : a;
    }
    case FIELD.BOOL:
      return `w.getUint32(${at}, true) !== 0`;
    case FIELD.UUID:
      return `uuid(b, ${at})`;
    case FIELD.ENUM:
      return `(t = w.getUint32(${at}, true), N${f.enumSet}.get(t) ?? t)`;
    default:
      return optional
        ? `((t = w.getUint32(${at}, true)) === 0 ? null : t)`
        : `w.getUint32(${at}, true)`;
  }
}

// Described UUIDs are 16-byte views into a pool, the way Node pools small
// Buffers: an ArrayBuffer of their own would cost more than the whole describe.
// The pool is a SharedArrayBuffer, which nobody can detach or transfer, and a
// slot is never written twice: no later describe() changes a UUID, and no
// caller can break one view by giving another away.
const UUID_POOL = 4096;
let uuidPool = new SharedArrayBuffer(UUID_POOL);
let uuidNext = 0;

function uuid(b: Uint8Array, at: number): Uint8Array {
  if (uuidNext === UUID_POOL) {
    uuidPool = new SharedArrayBuffer(UUID_POOL);
    uuidNext = 0;
  }
  const u = new Uint8Array(uuidPool, uuidNext, 16);
  uuidNext += 16;
  for (let i = 0; i < 16; i++) u[i] = b[at + i];
  return u;
}

/**
 * Compiles a kind's encoder and decoder. With `checkOwn` the encoder reads
 * only own properties (a user's descriptor); without it, the descriptors
 * gpures builds itself from values already read that way skip the checks.
 */
/** compile(), or undefined where code generation is disallowed (the generic path does it all). */
function tryCompile(
  nodes: Node[],
  checkOwn: boolean,
): { encode: FastEncode; decode: FastDecode } | undefined {
  try {
    return compile(nodes, checkOwn);
  } catch {
    return undefined;
  }
}

function compile(nodes: Node[], checkOwn: boolean): { encode: FastEncode; decode: FastDecode } {
  /** A condition: `key` is not an own property of `o` (always false unchecked). */
  const notOwn = (o: string, key: string) => (checkOwn ? `!H(${o}, ${key})` : "false");
  const sets = new Set<number>();
  const enc: string[] = [];
  const locals: string[] = [];
  const props: string[] = [];
  nodes.forEach((n, index) => {
    for (const f of n.rows) if (f.enumSet) sets.add(f.enumSet);
    const key = JSON.stringify(n.key);
    const first = n.rows[0];
    const missing = n.required ? " else return false;" : "";
    // ---- encode
    if (n.shape === "scalar") {
      enc.push(`v = d[${key}]; if (v !== undefined && ${notOwn("d", key)}) v = undefined;
    if (v !== undefined) { ${first.presentBit ? `fl |= ${first.presentBit};` : ""}
      ${encodeValue(first, String(first.offset), "v")}
    }${missing}`);
    } else if (n.shape === "group") {
      enc.push(`v = d[${key}]; if (v !== undefined && ${notOwn("d", key)}) v = undefined;
    if (v !== undefined && v !== null) {
      if (typeof v !== "object") return false;
      fl |= ${first.presentBit};
      ${
        n.rows.map((f) =>
          `m = v[${JSON.stringify(memberName(f))}]; if (m === undefined || ${
            notOwn("v", JSON.stringify(memberName(f)))
          }) return false;
      ${encodeValue(f, String(f.offset), "m")}`
        ).join("\n      ")
      }
    }${missing}`);
    } else {
      const count = n.count!;
      const body = n.shape === "array"
        ? `e = v[i]; if (${notOwn("v", "i")}) return false; ${
          encodeValue(first, `${first.offset} + i * ${first.stride}`, "e")
        }`
        : `e = v[i]; if (typeof e !== "object" || e === null || ${notOwn("v", "i")}) return false;
        ${
          n.rows.map((f) =>
            `m = e[${JSON.stringify(memberName(f))}]; if (m === undefined || ${
              notOwn("e", JSON.stringify(memberName(f)))
            }) return false;
        ${encodeValue(f, `${f.offset} + i * ${f.stride}`, "m")}`
          ).join("\n        ")
        }`;
      enc.push(`v = d[${key}]; if (v !== undefined && ${notOwn("d", key)}) v = undefined;
    if (v !== undefined && v !== null) {
      if (!Array.isArray(v)) return false;
      w.setUint32(${count.offset}, v.length, true);
      n = v.length < ${count.count} ? v.length : ${count.count};
      for (i = 0; i < n; i++) { ${body} }
    }${missing}`);
    }
    // ---- decode
    let value: string;
    if (n.shape === "scalar") {
      value = decodeValue(first, String(first.offset));
    } else if (n.shape === "group") {
      value = `{ ${
        n.rows.map((f) => `${JSON.stringify(memberName(f))}: ${decodeValue(f, String(f.offset))}`)
          .join(", ")
      } }`;
    } else {
      const count = n.count!;
      const item = n.shape === "array"
        ? decodeValue(first, `${first.offset} + i * ${first.stride}`)
        : `{ ${
          n.rows.map((f) =>
            `${JSON.stringify(memberName(f))}: ${decodeValue(f, `${f.offset} + i * ${f.stride}`)}`
          ).join(", ")
        } }`;
      locals.push(`const a${index} = [];
    n = w.getUint32(${count.offset}, true); if (n > ${count.count}) n = ${count.count};
    for (i = 0; i < n; i++) a${index}.push(${item});`);
      value = `a${index}`;
    }
    props.push(
      `${key}: ${first.presentBit ? `(fl & ${first.presentBit}) ? ${value} : null` : value}`,
    );
  });
  const tables = [...sets].map((s) => `const E${s} = values.get(${s}), N${s} = names.get(${s});`);
  const source = `"use strict";
  ${tables.join("\n  ")}
  function encode(d, w, b) {
    let v, m, e, n, i, fl = 0;
    ${enc.join("\n    ")}
    if (fl) w.setUint32(4, fl, true);
    return true;
  }
  function decode(w, b, kind, kindId, refcount) {
    const fl = w.getUint32(4, true);
    let t, n, i;
    ${locals.join("\n    ")}
    return { kind, kindId, refcount, ${props.join(", ")} };
  }
  return { encode, decode };`;
  return new Function("values", "names", "addressOf", "uuid", "M", "H", source)(
    enumValues,
    enumNames,
    addressOf,
    uuid,
    U64_MAX,
    Object.hasOwn,
  );
}

/**
 * Encoder and decoder of one kind's descriptor, each over a buffer whose
 * address is computed once. A descriptor's getters run user code in the
 * middle of an encode; if that code creates a handle of the same kind, the
 * nested encode gets bytes of its own (see begin()), so the outer call's
 * half-written descriptor is never overwritten. Describing runs no user code
 * between the library writing the bytes and decode reading them, and has a
 * buffer of its own, so it needs no such care.
 */
export class Codec {
  readonly nodes: Node[];
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  /** What gpures_describe() writes into. */
  readonly out: Uint8Array;
  readonly #outView: DataView;
  readonly #own: { encode: FastEncode; decode: FastDecode } | undefined;
  #built: FastEncode | undefined;
  #pointer: Deno.PointerValue | undefined;
  #outPointer: Deno.PointerValue | undefined;
  #busy = false;

  constructor(readonly kind: KindRow) {
    this.nodes = nodesOf(kind);
    // Their own ArrayBuffers, so the addresses computed once stay the bytes' addresses.
    this.#bytes = new Uint8Array(new ArrayBuffer(kind.descSize));
    this.#view = new DataView(this.#bytes.buffer);
    this.out = new Uint8Array(new ArrayBuffer(kind.descSize));
    this.#outView = new DataView(this.out.buffer);
    this.#own = tryCompile(this.nodes, true);
  }

  /** Descriptor bytes for one create, until end(): the shared ones, or fresh ones when in use. */
  begin(): Uint8Array {
    if (this.#busy) return new Uint8Array(this.kind.descSize);
    this.#busy = true;
    return this.#bytes;
  }

  /** Gives back what begin() gave. */
  end(bytes: Uint8Array): void {
    if (bytes === this.#bytes) this.#busy = false;
  }

  /** The address of bytes from begin(), for the calls that take the descriptor as a pointer. */
  pointerOf(bytes: Uint8Array): Deno.PointerValue {
    if (bytes !== this.#bytes) return Deno.UnsafePointer.of(bytes as Uint8Array<ArrayBuffer>);
    return this.#pointer ??= Deno.UnsafePointer.of(bytes.buffer as ArrayBuffer);
  }

  /** The address of `out`. */
  get outPointer(): Deno.PointerValue {
    return this.#outPointer ??= Deno.UnsafePointer.of(this.out.buffer as ArrayBuffer);
  }

  /**
   * Writes `desc` into `bytes`, throwing InvalidHandleError naming the field
   * on bad input. `built`: gpures made `desc` itself from values it already
   * read as own properties, so the own-property checks are skipped.
   */
  encode(desc: Record<string, unknown>, bytes: Uint8Array, built = false): void {
    if (typeof desc !== "object" || desc === null) {
      throw new InvalidHandleError(
        `Cannot create ${this.kind.name}: the descriptor must be an object, not ${show(desc)}`,
        "INVALID_VALUE",
        "desc",
      );
    }
    const view = bytes === this.#bytes ? this.#view : new DataView(bytes.buffer);
    bytes.fill(0);
    view.setUint32(0, this.kind.descSize, true);
    const fast = built
      ? (this.#built ??= tryCompile(this.nodes, false)?.encode)
      : this.#own?.encode;
    if (fast?.(desc, view, bytes)) return;
    // A value to convert (a number for a u64, ...) or to reject: the generic encoder does both.
    bytes.fill(0);
    view.setUint32(0, this.kind.descSize, true);
    const encoder = new Encoder(this.kind, view);
    for (const n of this.nodes) encoder.node(n, desc);
  }

  /** The description of the bytes `gpures_describe` wrote into `out`. */
  describe(kind: string, kindId: number, refcount: number): Record<string, unknown> {
    if (this.#own) return this.#own.decode(this.#outView, this.out, kind, kindId, refcount);
    return { kind, kindId, refcount, ...this.decode(this.out) };
  }

  /** Reads the descriptor bytes `gpures_describe` wrote into `bytes` (the generic path). */
  decode(bytes: Uint8Array): Record<string, unknown> {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const flags = view.getUint32(4, true);
    const out: Record<string, unknown> = {};
    for (const n of this.nodes) {
      const first = n.rows[0];
      if (first.presentBit && !(flags & first.presentBit)) {
        out[n.key] = null;
        continue;
      }
      if (n.shape === "scalar") {
        out[n.key] = read(first, view, first.offset);
      } else if (n.shape === "group") {
        const g: Record<string, unknown> = {};
        for (const f of n.rows) g[memberName(f)] = read(f, view, f.offset);
        out[n.key] = g;
      } else {
        const len = Math.min(view.getUint32(n.count!.offset, true), n.count!.count);
        const items: unknown[] = [];
        for (let i = 0; i < len; i++) {
          if (n.shape === "array") {
            items.push(read(first, view, first.offset + i * first.stride));
            continue;
          }
          const item: Record<string, unknown> = {};
          for (const f of n.rows) item[memberName(f)] = read(f, view, f.offset + i * f.stride);
          items.push(item);
        }
        out[n.key] = items;
      }
    }
    return out;
  }
}

const codecs = new Map<number, Codec>();

/** The codec of a kind id. */
export function codecOf(kindId: number): Codec {
  let codec = codecs.get(kindId);
  if (!codec) {
    codec = new Codec(KINDS[kindId - 1]);
    codecs.set(kindId, codec);
  }
  return codec;
}
