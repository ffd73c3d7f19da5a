// Reads the functions gpures.h declares, as the C preprocessor leaves them:
// the per-kind entry points exist only once the X-macros of gpures_lists.h
// are expanded, so the header is never parsed as written. The preprocessor
// runs with the host's own defines; gpures.h has one platform branch, and it
// only chooses what GPURES_API expands to, which is stripped here.

/** A C type as a parameter or result carries it. */
export interface CType {
  /** The type named, qualifiers dropped: "uint32_t", "gpures_pool", "void". */
  base: string;
  /** Levels of indirection; an array parameter counts one (C passes its address). */
  pointers: number;
  /** `const` appears before the first `*`: the call only reads what it points at. */
  readOnly: boolean;
  /** A pointer to a function, written out or through a typedef. */
  isFunction: boolean;
}

/** One parameter of a prototype. */
export interface CParam extends CType {
  name: string;
}

/** One `gpures_*` prototype. */
export interface CFunction {
  name: string;
  result: CType;
  params: CParam[];
  /** The declaration, whitespace-normalised, without attributes or `;`. */
  text: string;
}

/** What the table's rule needs from the header. */
export interface CHeader {
  /** Every `gpures_*` function, in the header's order. */
  functions: CFunction[];
  /** Typedef names of scalars: gpures_handle -> uint64_t. */
  scalars: Map<string, string>;
  /** Typedef names of structs declared and never defined: objects only the library sees into. */
  opaque: Set<string>;
  /** Typedef names of function pointers. */
  functionTypes: Set<string>;
  /** The snake name of every kind, from GPURES_EVERY_KIND_LIST. */
  kinds: string[];
}

const KIND_MARK = "GPURES_GEN_KIND";

// The header, and after it the kind list expanded into marks that survive
// preprocessing as text: the per-kind entry points are told apart by them.
const SOURCE = `#include "gpures.h"
#define GPURES_GEN_KIND_ROW(id, UPPER, snake, Name, own, os) ${KIND_MARK}(snake)
GPURES_EVERY_KIND_LIST(GPURES_GEN_KIND_ROW)
`;

/** The arguments handed to the C compiler, relative to the repository root. */
export const PREPROCESS_ARGS = ["-E", "-P", "-I", "native/include", "-x", "c", "-"];

/**
 * The C compiler's command: $CC when set (one program, no arguments) and
 * readable, else `cc`; tools/gen.ts runs without --allow-env.
 */
export function compiler(): string {
  const env = Deno.permissions.querySync({ name: "env", variable: "CC" });
  return (env.state === "granted" && Deno.env.get("CC")) || "cc";
}

/** The header after the C preprocessor. */
export async function preprocess(root: URL): Promise<string> {
  const child = new Deno.Command(compiler(), {
    args: PREPROCESS_ARGS,
    cwd: root,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(SOURCE));
  await writer.close();
  const out = await child.output();
  const text = new TextDecoder();
  if (!out.success) throw new Error(`${compiler()} -E failed:\n${text.decode(out.stderr)}`);
  return text.decode(out.stdout);
}

/** Parses the preprocessed header. */
export function parseHeader(source: string): CHeader {
  const kinds = [...source.matchAll(new RegExp(`${KIND_MARK}\\((\\w+)\\)`, "g"))].map((m) => m[1]);
  const code = stripAttributes(
    source.replaceAll(new RegExp(`${KIND_MARK}\\(\\w+\\)`, "g"), "")
      .split("\n").filter((line) => !line.trimStart().startsWith("#")).join("\n"),
  );
  const header: CHeader = {
    functions: [],
    scalars: new Map(),
    opaque: new Set(),
    functionTypes: new Set(),
    kinds,
  };
  const defined = new Set<string>();
  const declared = new Map<string, string>(); // typedef name -> struct tag
  for (const statement of statements(code)) {
    const s = normalise(statement.replace(/^__extension__\s*/, ""));
    if (s.startsWith("typedef ")) readTypedef(s, header, defined, declared);
    else {
      for (const m of s.matchAll(/\bstruct (\w+) \{/g)) defined.add(m[1]);
      const fn = readFunction(s, header);
      if (fn) header.functions.push(fn);
    }
  }
  for (const [name, tag] of declared) if (!defined.has(tag)) header.opaque.add(name);
  return header;
}

/** Runs the preprocessor on gpures.h and parses what it leaves. */
export async function readHeader(root: URL): Promise<CHeader> {
  return parseHeader(await preprocess(root));
}

/** Drops `__attribute__((...))` and `__declspec(...)`, whose parentheses nest. */
function stripAttributes(code: string): string {
  let out = "";
  let i = 0;
  for (const m of code.matchAll(/\b(__attribute__|__declspec)\s*\(/g)) {
    if (m.index < i) continue;
    out += code.slice(i, m.index);
    i = closingParen(code, m.index + m[0].length - 1) + 1;
  }
  return out + code.slice(i);
}

/** The index of the `)` that closes the `(` at `open`. */
function closingParen(code: string, open: number): number {
  let depth = 0;
  for (let i = open; i < code.length; i++) {
    if (code[i] === "(") depth++;
    else if (code[i] === ")" && --depth === 0) return i;
  }
  throw new Error(`unbalanced parentheses at offset ${open}`);
}

/** The top-level declarations: split at `;` outside braces and parentheses. */
function statements(code: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (c === "{" || c === "(") depth++;
    else if (c === "}" || c === ")") depth--;
    else if (c === ";" && depth === 0) {
      out.push(code.slice(start, i));
      start = i + 1;
    }
  }
  return out.map((s) => s.trim()).filter((s) => s !== "");
}

/** One space between tokens, none inside parentheses' edges or before commas. */
function normalise(text: string): string {
  return text.replace(/\s+/g, " ").replace(/\( /g, "(").replace(/ \)/g, ")")
    .replace(/ ,/g, ",").trim();
}

function readTypedef(
  s: string,
  header: CHeader,
  defined: Set<string>,
  declared: Map<string, string>,
): void {
  const fnType = s.match(/\(\s*\*\s*(\w+)\s*\)\s*\(/);
  if (fnType) return void header.functionTypes.add(fnType[1]);
  const body = s.match(/^typedef (?:struct|union) (\w+)? ?\{/);
  if (body) {
    if (body[1]) defined.add(body[1]);
    return;
  }
  const forward = s.match(/^typedef (?:struct|union) (\w+) (\w+)$/);
  if (forward) return void declared.set(forward[2], forward[1]);
  const scalar = s.match(/^typedef ([\w ]+) (gpures_\w+)$/);
  if (scalar && !/\b(struct|union|enum)\b/.test(scalar[1])) {
    header.scalars.set(scalar[2], scalar[1]);
  }
}

function readFunction(s: string, header: CHeader): CFunction | null {
  const m = s.match(/^([^(){}=]*?)\b(gpures_\w+) ?\((.*)\)$/);
  if (!m) return null;
  const prefix = m[1].replace(/\b(extern|static|inline)\b/g, "");
  const result = typeOf(prefix, header);
  const list = m[3].trim();
  const params = list === "void" || list === ""
    ? []
    : splitParams(list).map((p) => param(p, header));
  return { name: m[2], result, params, text: s.replace(/^extern /, "") };
}

/** Splits a parameter list at commas outside parentheses. */
function splitParams(list: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    if (list[i] === "(") depth++;
    else if (list[i] === ")") depth--;
    else if (list[i] === "," && depth === 0) {
      out.push(list.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(list.slice(start).trim());
  return out;
}

function param(text: string, header: CHeader): CParam {
  const fn = text.match(/\(\s*\*\s*(\w+)\s*\)\s*\(/);
  if (fn) return { name: fn[1], base: "function", pointers: 1, readOnly: false, isFunction: true };
  const array = /\[[^\]]*\]$/.test(text);
  const bare = text.replace(/\s*\[[^\]]*\]$/, "");
  const name = bare.match(/(\w+)$/);
  if (!name || /^(const |volatile |struct |enum |unsigned |signed )*\w+$/.test(bare)) {
    throw new Error(`parameter without a name: "${text}"`);
  }
  const type = typeOf(bare.slice(0, name.index), header);
  return { name: name[1], ...type, pointers: type.pointers + (array ? 1 : 0) };
}

function typeOf(text: string, header: CHeader): CType {
  const stars = text.indexOf("*");
  const words = text.replace(/\*/g, " ").split(/\s+/).filter((w) => w !== "");
  const qualifiers = new Set(["const", "volatile", "restrict", "__restrict", "struct", "enum"]);
  const base = words.filter((w) => !qualifiers.has(w)).join(" ");
  const before = stars < 0 ? text : text.slice(0, stars);
  return {
    base,
    pointers: (text.match(/\*/g) ?? []).length,
    readOnly: /\bconst\b/.test(before),
    isFunction: header.functionTypes.has(base),
  };
}
