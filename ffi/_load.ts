// Finds, opens and checks the native library. Nothing here runs at import
// time: the first call that needs the library loads it.

import { type Symbols, symbols } from "./_symbols.ts";
import { ABI_VERSION, ENUMS, FRAME_META, KINDS } from "./_kinds.ts";
import { type FieldRow, readEnums, readKinds, readMetaKind } from "./_tables.ts";
import { LibraryLoadError } from "./errors.ts";
import { cacheDir } from "./_cache.ts";

/** Where {@link load} looks for the library. */
export interface LoadOptions {
  /** A path to the library file; tried before anything else. */
  path?: string | URL;
}

/** The library's file name on an OS, as the build writes it. */
export function libraryFileName(os: string = Deno.build.os): string {
  if (os === "windows") return "gpures.dll";
  if (os === "darwin") return "libgpures.dylib";
  return "libgpures.so";
}

let loaded: Deno.DynamicLibrary<typeof symbols> | undefined;

/** Where to look, in order; a place that cannot be tried says why instead of giving a path. */
type Candidate = { path: string } | { note: string };

function envCandidate(): Candidate {
  // Ask first: reading an env var without permission would prompt or throw.
  const state = Deno.permissions.querySync?.({ name: "env", variable: "GPURES_LIB" }).state;
  if (state !== "granted") {
    return { note: "GPURES_LIB (not read: pass --allow-env=GPURES_LIB to use it)" };
  }
  const value = Deno.env.get("GPURES_LIB");
  return value ? { path: value } : { note: "GPURES_LIB (not set)" };
}

function candidates(options: LoadOptions): Candidate[] {
  const list: Candidate[] = [];
  if (options.path) {
    list.push({ path: options.path instanceof URL ? options.path.pathname : options.path });
  }
  list.push(envCandidate());
  const local = new URL(`../build/${libraryFileName()}`, import.meta.url);
  if (local.protocol === "file:") {
    list.push({ path: Deno.build.os === "windows" ? local.pathname.slice(1) : local.pathname });
  }
  const cache = cacheDir();
  list.push(
    cache ? { path: `${cache}/${libraryFileName()}` } : {
      note: "the build cache (not read: pass --allow-env=HOME,XDG_CACHE_HOME,GPURES_CACHE_DIR)",
    },
  );
  list.push({ path: libraryFileName() }); // the system loader's search path
  return list;
}

function isPermissionError(e: unknown): boolean {
  return e instanceof Deno.errors.PermissionDenied ||
    ("NotCapable" in Deno.errors &&
      e instanceof (Deno.errors as unknown as { NotCapable: ErrorConstructor }).NotCapable);
}

function sameField(a: FieldRow, b: FieldRow): string | undefined {
  for (const key of Object.keys(a) as (keyof FieldRow)[]) {
    if (key !== "doc" && a[key] !== b[key]) return key;
  }
  return undefined;
}

/** The first difference between the generated layouts and the library's, or undefined. */
function layoutMismatch(lib: Symbols): string | undefined {
  const major = (v: number) => v >>> 16;
  const abi = lib.gpures_abi_version();
  if (major(abi) !== major(ABI_VERSION) || (abi & 0xffff) < (ABI_VERSION & 0xffff)) {
    return `the library's ABI version is ${major(abi)}.${abi & 0xffff}, this module needs ${
      major(ABI_VERSION)
    }.${ABI_VERSION & 0xffff}`;
  }
  const kinds = [...readKinds(lib), readMetaKind(lib)];
  for (const want of [...KINDS, FRAME_META]) {
    const got = kinds.find((k) => k.id === want.id);
    if (!got || got.name !== want.name) return `kind ${want.id} (${want.name}) is missing`;
    if (got.descSize !== want.descSize) {
      return `${want.name} descriptors have ${got.descSize} bytes, not ${want.descSize}`;
    }
    if (got.platforms !== want.platforms) return `${want.name} has other platforms`;
    for (let i = 0; i < want.fields.length; i++) {
      const g = got.fields[i];
      const bad = g ? sameField(want.fields[i], g) : "path";
      if (bad) return `${want.name}.${want.fields[i].path} differs in ${bad}`;
    }
  }
  const enums = readEnums(lib);
  for (const e of ENUMS) {
    if (!enums.some((g) => g.set === e.set && g.value === e.value && g.name === e.name)) {
      return `enumeration value "${e.name}" is missing`;
    }
  }
  return undefined;
}

/**
 * Loads the native library, or returns the one already loaded. Looks, in
 * order, at `options.path`, the `GPURES_LIB` environment variable, the build
 * next to this module (`build/`), and the system loader's search path.
 *
 * @example
 * ```ts
 * import { load } from "@gpures/gpures";
 * load(); // throws LibraryLoadError listing every place tried
 * ```
 */
export function load(options: LoadOptions = {}): LoadedLibrary {
  openLibrary(options);
  const abi = loaded!.symbols.gpures_abi_version();
  return { path: loadedPath!, abiVersion: `${abi >>> 16}.${abi & 0xffff}` };
}

/** What {@link load} found. */
export interface LoadedLibrary {
  /** The path the library was opened from. */
  path: string;
  /** Its ABI version, "major.minor". */
  abiVersion: string;
}

let loadedPath: string | undefined;

function openLibrary(options: LoadOptions): Symbols {
  if (loaded) return loaded.symbols;
  const tried: string[] = [];
  for (const candidate of candidates(options)) {
    if ("note" in candidate) {
      tried.push(candidate.note);
      continue;
    }
    const { path } = candidate;
    let lib: Deno.DynamicLibrary<typeof symbols>;
    try {
      lib = Deno.dlopen(path, symbols);
    } catch (e) {
      if (isPermissionError(e)) {
        throw new LibraryLoadError(
          'Cannot load gpures: FFI is not permitted; run deno with "--allow-ffi"',
          "PERMISSION",
          "",
          { cause: e },
        );
      }
      tried.push(`"${path}" (${(e as Error).message.split("\n")[0]})`);
      continue;
    }
    const mismatch = layoutMismatch(lib.symbols);
    if (mismatch) {
      lib.close();
      throw new LibraryLoadError(
        `Cannot load gpures: "${path}" does not match this module: ${mismatch}; rebuild it with "deno task build"`,
        "ABI_MISMATCH",
      );
    }
    loaded = lib;
    loadedPath = path;
    return lib.symbols;
  }
  throw new LibraryLoadError(
    `Cannot load gpures: no library found (tried ${
      tried.join(", ")
    }); run "deno task build" (from a checkout) or "deno run -A jsr:@gpures/gpures/build" (from JSR), or set GPURES_LIB to the library's path`,
    "NOT_FOUND",
  );
}

/** The path the loaded library was opened from, loading it on first use. */
export function libraryPath(): string {
  lib();
  return loadedPath!;
}

/** The loaded library, loading it on first use. */
export function lib(): Symbols {
  return loaded ? loaded.symbols : openLibrary({});
}
