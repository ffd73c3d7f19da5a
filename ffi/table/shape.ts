// Folds a kind's flat field rows into the object shape TypeScript shows:
// scalars, optional groups ("luid"), arrays ("fds") and arrays of structs
// ("planes"). Shared by the codec and the generator.

import type { FieldRow, KindRow } from "./tables.ts";

/** Field types, as gpures.h numbers them. */
export const FIELD = {
  U32: 1,
  I32: 2,
  U64: 3,
  PTR: 4,
  BOOL: 5,
  UUID: 6,
  ENUM: 7,
  FD: 8,
  COUNT: 9,
  I64: 10,
} as const;

/** gpures_field_info.flags: zero means absent. */
export const FIELD_OPTIONAL = 1;

/** One property of a descriptor object. */
export interface Node {
  /** The property name. */
  key: string;
  /** One row for scalars and arrays; the member rows for groups and struct arrays. */
  rows: FieldRow[];
  shape: "scalar" | "group" | "array" | "structArray";
  /** The COUNT row of an array. */
  count?: FieldRow;
  /** Whether create needs it. */
  required: boolean;
}

/** The member name of a row inside its node ("offset" for "planes[].offset"). */
export function memberName(f: FieldRow): string {
  const dot = f.path.lastIndexOf(".");
  return dot < 0 ? f.path.replace("[]", "") : f.path.slice(dot + 1);
}

/** The properties of a kind's descriptor, in field order. */
export function nodesOf(kind: KindRow): Node[] {
  const out: Node[] = [];
  const counts = new Map(
    kind.fields.filter((f) => f.type === FIELD.COUNT).map((f) => [f.path, f]),
  );
  for (const f of kind.fields) {
    if (f.type === FIELD.COUNT) continue;
    const [, key, brackets, member] = /^(\w+)(\[\])?(?:\.(\w+))?$/.exec(f.path)!;
    const last = out[out.length - 1];
    if (last?.key === key && member) {
      last.rows.push(f);
      continue;
    }
    const count = counts.get(key);
    out.push({
      key,
      rows: [f],
      shape: brackets ? (member ? "structArray" : "array") : member ? "group" : "scalar",
      count,
      required: brackets
        ? Boolean(count?.zeroStatus)
        : !(f.presentBit || (f.flags & FIELD_OPTIONAL)),
    });
  }
  return out;
}
