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
    const v = desc[n.key];
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
        const m = (v as Record<string, unknown>)[memberName(f)];
        if (m === undefined) this.fail(path, "is missing");
        this.write(f, f.offset, m, path);
      }
      return;
    }
    if (!Array.isArray(v)) this.fail(n.key, `must be an array, not ${show(v)}`);
    const count = n.count!;
    // C checks the count; only as many elements as the struct holds are written.
    this.write(count, count.offset, v.length, n.key);
    const len = Math.min(v.length, count.count);
    for (let i = 0; i < len; i++) {
      for (const f of n.rows) {
        if (n.shape === "array") {
          this.write(f, f.offset + i * f.stride, v[i], `${n.key}[${i}]`);
          continue;
        }
        const path = `${n.key}[${i}].${memberName(f)}`;
        const item = v[i];
        if (typeof item !== "object" || item === null) {
          this.fail(`${n.key}[${i}]`, `must be an object, not ${show(item)}`);
        }
        const m = (item as Record<string, unknown>)[memberName(f)];
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

/** Encoder and decoder of one kind's descriptor. */
export class Codec {
  readonly nodes: Node[];
  readonly bytes: Uint8Array;
  readonly #view: DataView;

  constructor(readonly kind: KindRow) {
    this.nodes = nodesOf(kind);
    this.bytes = new Uint8Array(kind.descSize);
    this.#view = new DataView(this.bytes.buffer);
  }

  /** Writes `desc` into `this.bytes`, throwing InvalidHandleError naming the field on bad input. */
  encode(desc: Record<string, unknown>): Uint8Array {
    if (typeof desc !== "object" || desc === null) {
      throw new InvalidHandleError(
        `Cannot create ${this.kind.name}: the descriptor must be an object, not ${show(desc)}`,
        "INVALID_VALUE",
        "desc",
      );
    }
    this.bytes.fill(0);
    this.#view.setUint32(0, this.kind.descSize, true);
    const encoder = new Encoder(this.kind, this.#view);
    for (const n of this.nodes) encoder.node(n, desc);
    return this.bytes;
  }

  /** Reads the descriptor bytes `gpures_describe` wrote into `this.bytes`. */
  decode(): Record<string, unknown> {
    const view = this.#view;
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
