// The text of ffi/gen/symbols.ts, the table handed to Deno.dlopen, from the
// prototypes of native/include/gpures.h and the exceptions of
// tools/symbols_overlay.ts. The rule, for what the overlay does not name:
//   - every gpures_* function is a row, but the per-kind entry points
//     (gpures_<kind>_create, _clone, _describe, _release): TypeScript calls
//     gpures_create and the others with the kind's id;
//   - scalars cross as their width says; 64-bit ones as bigint, which keeps
//     calls on V8's fast path;
//   - a pointer to an object only the library sees into (a struct the header
//     declares and never defines: gpures_pool, gpures_session, ...) crosses as
//     "pointer", and so does a `void *` the call neither reads (const) nor
//     fills (out*): an address of another API's object;
//   - every other pointer, and every array, crosses as "buffer": a TypedArray;
//   - a function pointer crosses as "function"; every pointer result as "pointer".

import { type CFunction, type CHeader, type CParam, type CType, readHeader } from "./c_header.ts";
import { overlay, type SymbolOverlay } from "./symbols_overlay.ts";

/** Fixed-width scalars and the ones whose width is the same on every host Deno runs on. */
const SCALARS: Readonly<Record<string, string>> = {
  uint8_t: "u8",
  int8_t: "i8",
  uint16_t: "u16",
  int16_t: "i16",
  uint32_t: "u32",
  int32_t: "i32",
  uint64_t: "u64",
  int64_t: "i64",
  int: "i32",
  "unsigned int": "u32",
  unsigned: "u32",
  size_t: "usize",
  uintptr_t: "usize",
  intptr_t: "isize",
  ptrdiff_t: "isize",
  float: "f32",
  double: "f64",
  _Bool: "bool",
  bool: "bool",
};

/** One row of the table. */
interface Row {
  key: string;
  name?: string;
  parameters: string[];
  result: string;
  nonblocking?: true;
  declaration: string;
}

/** The full text of ffi/gen/symbols.ts. */
export async function symbolsFile(root: URL): Promise<string> {
  const header = await readHeader(root);
  const problems = overlayProblems(header);
  if (problems.length) throw new Error(`tools/symbols_overlay.ts:\n  ${problems.join("\n  ")}`);
  return render(rowsOf(header));
}

/** The overlay's entries that name a function, row or parameter the header does not back. */
export function overlayProblems(
  header: CHeader,
  entries: Readonly<Record<string, SymbolOverlay>> = overlay,
): string[] {
  const byName = new Map(header.functions.map((f) => [f.name, f]));
  const problems: string[] = [];
  for (const [key, entry] of Object.entries(entries)) {
    const fn = byName.get(entry.of ?? key);
    if (!fn) problems.push(`${key}: gpures.h declares no ${entry.of ?? key}`);
    else if (entry.of && byName.has(key)) problems.push(`${key}: a second row under a C name`);
    else if (entry.omit && (entry.of || entry.pass || entry.nonblocking || entry.addresses)) {
      problems.push(`${key}: omitted, yet given changes`);
    }
    for (const name of Object.keys(entry.pass ?? {})) {
      if (fn && !fn.params.some((p) => p.name === name)) {
        problems.push(`${key}: ${fn.name} has no parameter ${name}`);
      }
    }
  }
  return problems;
}

/** Whether `name` is one of the entry points GPURES_EVERY_KIND_LIST declares per kind. */
function isPerKind(header: CHeader, name: string): boolean {
  const m = name.match(/^gpures_(\w+)_(create|clone|describe|release)$/);
  return m !== null && header.kinds.includes(m[1]);
}

/** The rows, in the header's order; a second row follows the first. */
function rowsOf(header: CHeader): Row[] {
  const seconds = Object.entries(overlay).filter(([, entry]) => entry.of);
  const rows: Row[] = [];
  for (const fn of header.functions) {
    if (isPerKind(header, fn.name) || overlay[fn.name]?.omit) continue;
    const first = rowOf(header, fn, fn.name, overlay[fn.name]);
    rows.push(first);
    for (const [key, entry] of seconds) {
      if (entry.of === fn.name) rows.push(secondRow(fn, first, key, entry));
    }
  }
  return rows;
}

function rowOf(header: CHeader, fn: CFunction, key: string, entry?: SymbolOverlay): Row {
  const parameters = fn.params.map((p) => entry?.pass?.[p.name] ?? paramType(header, fn, p));
  const row: Row = { key, parameters, result: resultType(header, fn), declaration: fn.text };
  if (entry?.nonblocking) row.nonblocking = true;
  return row;
}

/** A second row: the first one's types, then the entry's own changes. */
function secondRow(fn: CFunction, first: Row, key: string, entry: SymbolOverlay): Row {
  const parameters = fn.params.map((p, i) =>
    entry.pass?.[p.name] ?? (entry.addresses && isPointer(p) ? "pointer" : first.parameters[i])
  );
  const row: Row = { ...first, key, name: fn.name, parameters };
  delete row.nonblocking;
  if (entry.nonblocking) row.nonblocking = true;
  return row;
}

const isPointer = (t: CType) => t.pointers > 0 || t.isFunction;

function paramType(header: CHeader, fn: CFunction, p: CParam): string {
  if (p.isFunction) return "function";
  if (p.pointers === 0) return scalarType(header, p.base, `${fn.name}(${p.name})`);
  if (p.pointers > 1) return "buffer";
  if (header.opaque.has(p.base)) return "pointer";
  if (p.base === "void" && !p.readOnly && !p.name.startsWith("out")) return "pointer";
  return "buffer";
}

function resultType(header: CHeader, fn: CFunction): string {
  if (isPointer(fn.result)) return "pointer";
  if (fn.result.base === "void") return "void";
  return scalarType(header, fn.result.base, `${fn.name}'s result`);
}

/** The FFI type of a C scalar, through the header's typedefs. */
function scalarType(header: CHeader, base: string, where: string): string {
  const seen = new Set<string>();
  let type = base;
  while (header.scalars.has(type) && !seen.has(type)) {
    seen.add(type);
    type = header.scalars.get(type)!;
  }
  const ffi = SCALARS[type];
  if (!ffi) throw new Error(`${where}: no FFI type for C type "${base}"; add one to the rule`);
  return ffi;
}

const list = (types: string[]) => `[${types.map((t) => `"${t}"`).join(", ")}]`;

function rowLine(row: Row): string {
  const fields = [
    ...(row.name ? [`name: "${row.name}"`] : []),
    `parameters: ${list(row.parameters)}`,
    `result: "${row.result}"`,
    ...(row.nonblocking ? ["nonblocking: true"] : []),
  ];
  return `  ${row.key}: { ${fields.join(", ")} }, // ${row.declaration}`;
}

function render(rows: Row[]): string {
  return `// deno-fmt-ignore-file
// Generated by tools/gen.ts from native/include/gpures.h and tools/symbols_overlay.ts. Do not edit.
// The C functions TypeScript calls, one row each with its C declaration; tools/gen_symbols.ts gives the rule.

/** The symbol table handed to \`Deno.dlopen\`. */
export const symbols = {
${rows.map(rowLine).join("\n")}
} as const satisfies Deno.ForeignLibraryInterface;

/** The loaded library's symbols. */
export type Symbols = Deno.DynamicLibrary<typeof symbols>["symbols"];
`;
}
