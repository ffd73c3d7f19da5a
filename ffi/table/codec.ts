// Turns descriptor objects into the C structs' bytes and back. Each kind's
// encoder and decoder are compiled once from its generated field rows, with
// every offset, key and type written in: no offset is written by hand
// anywhere in TypeScript, and no generic walk runs per call. The common
// forms of each value are checked and written inline; anything else goes to
// writeValue() (ffi/table/values.ts), which converts it or refuses it naming the
// field. The rows come from the generated kind table (keys match /^\w+$/),
// never from input.

import { KINDS } from "../gen/kinds.ts";
import { FIELD, memberName, type Node, nodesOf } from "./shape.ts";
import type { FieldRow, KindRow } from "./tables.ts";
import { addressOf, enumNames, enumValues, refuse, show, U64_MAX, writeValue } from "./values.ts";

type Encode = (d: Record<string, unknown>, w: DataView, b: Uint8Array) => void;
type Decode = (
  w: DataView,
  b: Uint8Array,
  kind: string,
  kindId: number,
  refcount: number,
) => Record<string, unknown>;

/** Statements that write JS value `x` as field `f` at byte `at`; `path` names it on failure. */
function writeField(f: FieldRow, row: string, at: string, x: string, path: string): string {
  const slow = `W(K, w, ${row}, ${at}, ${x}, ${path});`;
  switch (f.type) {
    case FIELD.U32:
    case FIELD.COUNT:
      return `if (typeof ${x} === "number" && (${x} >>> 0) === ${x}) w.setUint32(${at}, ${x}, true);
      else ${slow}`;
    case FIELD.I32:
    case FIELD.FD:
      return `if (typeof ${x} === "number" && (${x} | 0) === ${x}) w.setInt32(${at}, ${x}, true);
      else ${slow}`;
    case FIELD.BOOL:
      return `if (${x} === true) w.setUint32(${at}, 1, true); else if (${x} !== false) ${slow}`;
    case FIELD.U64:
      return `if (typeof ${x} === "bigint" && ${x} >= 0n && ${x} <= M) w.setBigUint64(${at}, ${x}, true);
      else ${slow}`;
    case FIELD.I64:
      return `if (typeof ${x} === "number" && Number.isSafeInteger(${x})) w.setBigInt64(${at}, BigInt(${x}), true);
      else ${slow}`;
    case FIELD.PTR: {
      const set = (a: string) =>
        f.size === 8
          ? `w.setBigUint64(${at}, ${a}, true)`
          : `w.setUint32(${at}, Number(${a}), true)`;
      return `if (typeof ${x} === "bigint" && ${x} >= 0n && ${x} <= M) ${set(x)};
      else if (${x} !== null) ${slow}`;
    }
    case FIELD.UUID:
      return `if (${x} instanceof Uint8Array && ${x}.length === 16) b.set(${x}, ${at}); else ${slow}`;
    case FIELD.ENUM:
      return `t = typeof ${x} === "string" ? E${f.enumSet}.get(${x}) : ${x};
      if (typeof t === "number" && (t >>> 0) === t) w.setUint32(${at}, t, true); else ${slow}`;
  }
  return slow;
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
    case FIELD.I64:
      return `Number(w.getBigInt64(${at}, true))`;
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

/** One node's encoding statements; `own(o, k)` is the own-property condition. */
function encodeNode(
  kind: KindRow,
  n: Node,
  own: (o: string, key: string) => string,
): string {
  const row = (f: FieldRow) => `R[${kind.fields.indexOf(f)}]`;
  const key = JSON.stringify(n.key);
  const first = n.rows[0];
  const read = `v = d[${key}]; if (v !== undefined && !${own("d", key)}) v = undefined;`;
  const missing = n.required ? ` else F(${key}, "is missing");` : "";
  if (n.shape === "scalar") {
    // null reads as absent for what may be absent, so create(describe()) round-trips.
    const absent = n.required ? "v === undefined" : "v === undefined || v === null";
    return `${read}
    if (!(${absent})) { ${first.presentBit ? `fl |= ${first.presentBit};` : ""}
      ${writeField(first, row(first), String(first.offset), "v", key)}
    }${n.required ? ` else F(${key}, "is missing");` : ""}`;
  }
  if (n.shape === "group") {
    const members = n.rows.map((f) => {
      const name = JSON.stringify(memberName(f));
      const path = JSON.stringify(`${n.key}.${memberName(f)}`);
      return `m = v[${name}]; if (m === undefined || !${own("v", name)}) F(${path}, "is missing");
      ${writeField(f, row(f), String(f.offset), "m", path)}`;
    });
    return `${read}
    if (v !== undefined && v !== null) {
      if (typeof v !== "object") F(${key}, "must be an object, not " + S(v));
      fl |= ${first.presentBit};
      ${members.join("\n      ")}
    }${missing}`;
  }
  const count = n.count!;
  const item = `${JSON.stringify(n.key + "[")} + i + "]"`;
  const at = (f: FieldRow) => `${f.offset} + i * ${f.stride}`;
  const body = n.shape === "array"
    ? `e = v[i]; if (e !== undefined && !${own("v", "i")}) e = undefined;
        ${writeField(first, row(first), at(first), "e", item)}`
    : `e = v[i]; if (typeof e !== "object" || e === null || !${own("v", "i")}) {
          F(${item}, "must be an object, not " + S(e));
        }
        ${
      n.rows.map((f) => {
        const name = JSON.stringify(memberName(f));
        const path = `${item} + ${JSON.stringify("." + memberName(f))}`;
        return `m = e[${name}]; if (m === undefined || !${own("e", name)}) F(${path}, "is missing");
        ${writeField(f, row(f), at(f), "m", path)}`;
      }).join("\n        ")
    }`;
  // Bounded before any element is read: a sparse array may claim 2^32-1 of them.
  return `${read}
    if (v !== undefined && v !== null) {
      if (!Array.isArray(v)) F(${key}, "must be an array, not " + S(v));
      n = v.length;
      if (n > ${count.count}) F(${key}, "has " + n + " entries; at most ${count.count} are allowed");
      w.setUint32(${count.offset}, n, true);
      for (i = 0; i < n; i++) { ${body} }
    }${missing}`;
}

/** One node's property in the description literal, and any statements it needs first. */
function decodeNode(n: Node, index: number): { local?: string; prop: string } {
  const first = n.rows[0];
  let value: string;
  let local: string | undefined;
  if (n.shape === "scalar") {
    value = decodeValue(first, String(first.offset));
  } else if (n.shape === "group") {
    value = `{ ${
      n.rows.map((f) => `${JSON.stringify(memberName(f))}: ${decodeValue(f, String(f.offset))}`)
        .join(", ")
    } }`;
  } else {
    const count = n.count!;
    const at = (f: FieldRow) => `${f.offset} + i * ${f.stride}`;
    const item = n.shape === "array"
      ? decodeValue(first, at(first))
      : `{ ${
        n.rows.map((f) => `${JSON.stringify(memberName(f))}: ${decodeValue(f, at(f))}`).join(", ")
      } }`;
    local = `const a${index} = [];
    n = w.getUint32(${count.offset}, true); if (n > ${count.count}) n = ${count.count};
    for (i = 0; i < n; i++) a${index}.push(${item});`;
    value = `a${index}`;
  }
  const key = JSON.stringify(n.key);
  return {
    local,
    prop: `${key}: ${first.presentBit ? `(fl & ${first.presentBit}) ? ${value} : null` : value}`,
  };
}

/**
 * Compiles a kind's encoder and decoder. With `checkOwn` the encoder reads
 * only own properties (a user's descriptor); without it, a descriptor gpures
 * built itself from values already read that way skips the checks.
 */
function compile(
  kind: KindRow,
  checkOwn: boolean,
  what: string,
): { encode: Encode; decode: Decode } {
  const nodes = nodesOf(kind);
  // A plain object's inherited properties can only be Object.prototype's: while
  // that has no such key (an `in` check, fast), the own-property call is skipped.
  const own = (o: string, key: string) =>
    !checkOwn
      ? "true"
      : o === "d"
      ? `(plain && !(${key} in OP) || H(d, ${key}))`
      : `H(${o}, ${key})`;
  const sets = [...new Set(kind.fields.filter((f) => f.enumSet).map((f) => f.enumSet))];
  const decoded = nodes.map(decodeNode);
  const source = `"use strict";
  ${sets.map((s) => `const E${s} = values.get(${s}), N${s} = names.get(${s});`).join("\n  ")}
  const F = (path, message) => refuse(K, path, message);
  const OP = Object.prototype;
  function encode(d, w, b) {
    let v, m, e, n, i, t, fl = 0;
    const plain = Object.getPrototypeOf(d) === OP;
    ${nodes.map((n) => encodeNode(kind, n, own)).join("\n    ")}
    if (fl) w.setUint32(4, fl, true);
  }
  function decode(w, b, kind, kindId, refcount) {
    const fl = w.getUint32(4, true);
    let t, n, i;
    ${decoded.map((d) => d.local ?? "").join("\n    ")}
    return { kind, kindId, refcount, ${decoded.map((d) => d.prop).join(", ")} };
  }
  return { encode, decode };`;
  return new Function(
    "K",
    "R",
    "values",
    "names",
    "addressOf",
    "uuid",
    "M",
    "H",
    "W",
    "S",
    "refuse",
    source,
  )(
    what,
    kind.fields,
    enumValues,
    enumNames,
    addressOf,
    uuid,
    U64_MAX,
    Object.hasOwn,
    writeValue,
    show,
    refuse,
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
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  /** What gpures_describe() writes into. */
  readonly out: Uint8Array;
  readonly #outView: DataView;
  readonly #own: { encode: Encode; decode: Decode };
  #built: Encode | undefined;
  #pointer: Deno.PointerValue | undefined;
  #outPointer: Deno.PointerValue | undefined;
  #busy = false;

  /** What a refused value says failed: "create VkImage", "set metadata". */
  readonly #what: string;

  constructor(readonly kind: KindRow, what = `create ${kind.name}`) {
    this.#what = what;
    // Their own ArrayBuffers, so the addresses computed once stay the bytes' addresses.
    this.#bytes = new Uint8Array(new ArrayBuffer(kind.descSize));
    this.#view = new DataView(this.#bytes.buffer);
    this.out = new Uint8Array(new ArrayBuffer(kind.descSize));
    this.#outView = new DataView(this.out.buffer);
    this.#own = compile(kind, true, what);
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
      refuse(this.#what, "desc", `must be an object, not ${show(desc)}`);
    }
    const view = bytes === this.#bytes ? this.#view : new DataView(bytes.buffer);
    bytes.fill(0);
    view.setUint32(0, this.kind.descSize, true);
    const encode = built
      ? (this.#built ??= compile(this.kind, false, this.#what).encode)
      : this.#own.encode;
    encode(desc, view, bytes);
  }

  /** The description of the bytes `gpures_describe` wrote into `out`. */
  describe(kind: string, kindId: number, refcount: number): Record<string, unknown> {
    return this.#own.decode(this.#outView, this.out, kind, kindId, refcount);
  }
}

const codecs: (Codec | undefined)[] = [];

/** The codec of a kind id. */
export function codecOf(kindId: number): Codec {
  return codecs[kindId] ??= new Codec(KINDS[kindId - 1]);
}
