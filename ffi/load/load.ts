/**
 * Finds, opens and checks the native library. Nothing here opens anything at
 * import time: the first call that needs the library loads it.
 *
 * The places tried, in order (the first that opens wins):
 *
 * 1. `load({ path })`, a path given explicitly;
 * 2. the `GPURES_LIB` environment variable (read only with `--allow-env`);
 * 3. `build/` next to this module, a checkout's `deno task build`;
 * 4. the prebuilt library inside the package, for linux-x86_64,
 *    linux-aarch64, darwin-x86_64, darwin-aarch64, windows-x86_64 and
 *    windows-aarch64
 *    (ffi/load/_prebuilt.ts: decompressed and sha256-checked synchronously on
 *    first use, opened from a memfd on Linux, from the per-version cache
 *    folder elsewhere; only `--allow-ffi` is needed);
 * 5. a library built from source into the per-version cache folder by
 *    `deno run -A jsr:@gpures/gpures/build`;
 * 6. the system loader's search path.
 *
 * A library that opens but lacks a symbol, or whose ABI or layouts differ
 * from this module's, is refused with an ABI_MISMATCH error; a damaged
 * prebuilt with an INTEGRITY error naming both hashes. Otherwise, when
 * nothing opens, the error lists every attempt once and how to build from
 * source.
 *
 * @module
 */

import { type Symbols, symbols } from "../gen/symbols.ts";
import { ABI_VERSION, ENUMS, FRAME_META, KINDS } from "../gen/kinds.ts";
import { type FieldRow, readEnums, readKinds, readMetaKind } from "../table/tables.ts";
import { LibraryLoadError } from "../errors.ts";
import { cacheDir } from "./cache.ts";
import { materialize, type MaterializeOptions, prebuiltState } from "./_prebuilt.ts";
import { type FileOps, fileOps } from "./_prebuilt_fs.ts";

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
type Candidate = { path: string } | { note: string } | { prebuilt: true };

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
  const local = new URL(`../../build/${libraryFileName()}`, import.meta.url);
  if (local.protocol === "file:") {
    list.push({ path: Deno.build.os === "windows" ? local.pathname.slice(1) : local.pathname });
  }
  list.push({ prebuilt: true });
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
 * next to this module (`build/`), the prebuilt library inside the package,
 * a build from source in the cache folder, and the system loader's search
 * path.
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
  return { path: loadedPath!, from: loadedFrom!, abiVersion: `${abi >>> 16}.${abi & 0xffff}` };
}

/** What {@link load} found. */
export interface LoadedLibrary {
  /** The path the library was opened from (for a memfd, /proc/self/fd/N, kept open for the process). */
  path: string;
  /** Which place it came from, as the load error would name it. */
  from: string;
  /** Its ABI version, "major.minor". */
  abiVersion: string;
}

let loadedPath: string | undefined;
let loadedFrom: string | undefined;
let prebuiltOptions: MaterializeOptions & { ops?: () => FileOps } = {};

/**
 * For tests: where the prebuilt library may go (a fake /proc, another cache
 * folder) and which file operations put it there. Not part of the public API.
 */
export function setPrebuiltOptions(options: MaterializeOptions & { ops?: () => FileOps }): void {
  prebuiltOptions = options;
}

/** Deno's dlopen message, without its (sometimes repeated) "Could not open library:" prefix. */
function openError(e: unknown): string {
  return String((e as Error)?.message ?? e).split("\n")[0].replace(
    /^(Could not open library:\s*)+/,
    "",
  );
}

function permissionError(e: unknown): LibraryLoadError {
  return new LibraryLoadError(
    'Cannot load gpures: FFI is not permitted; run deno with "--allow-ffi"',
    "PERMISSION",
    "",
    { cause: e },
  );
}

const BUILD_HINT =
  'build it from the C sources, which ship in the package (needs CMake and a C compiler, no network): "deno task build" in a checkout, or "deno run -A jsr:@gpures/gpures/build"; or set GPURES_LIB to a library\'s path';

/** Opens a path as the library, or says why not; throws when it opens but is not usable. */
function tryOpen(
  path: string,
  label: string,
  tried: string[],
  rebuild: string,
): Deno.DynamicLibrary<typeof symbols> | undefined {
  let lib: Deno.DynamicLibrary<typeof symbols>;
  try {
    lib = Deno.dlopen(path, symbols);
  } catch (e) {
    if (isPermissionError(e)) throw permissionError(e);
    const reason = openError(e);
    const symbol = /Failed to register symbol (\w+)/.exec(reason);
    if (symbol) {
      throw new LibraryLoadError(
        `Cannot load gpures: ${label} is not a gpures library this module can use: it lacks ${
          symbol[1]
        } (an older or another library?); ${rebuild}`,
        "ABI_MISMATCH",
      );
    }
    tried.push(`${label}: ${reason}`);
    return undefined;
  }
  const mismatch = layoutMismatch(lib.symbols);
  if (mismatch) {
    lib.close();
    throw new LibraryLoadError(
      `Cannot load gpures: ${label} does not match this module: ${mismatch}; ${rebuild}`,
      "ABI_MISMATCH",
    );
  }
  return lib;
}

/** Opens the package's prebuilt library for this target, or says why not. */
function tryPrebuilt(
  tried: string[],
): { lib: Deno.DynamicLibrary<typeof symbols>; path: string; label: string } | undefined {
  const state = prebuiltState();
  if ("none" in state) {
    tried.push(state.none);
    return undefined;
  }
  if ("refused" in state) {
    throw new LibraryLoadError(`Cannot load gpures: ${state.refused}`, "INTEGRITY");
  }
  const p = state.ok;
  let ops: FileOps;
  try {
    ops = (prebuiltOptions.ops ?? fileOps)();
  } catch (e) {
    // A --allow-ffi scoped to a library's path does not cover the C library:
    // go on to the next place rather than report FFI as not permitted.
    const why = isPermissionError(e)
      ? "opening it needs the C library, which a scoped --allow-ffi does not cover"
      : `the C library: ${openError(e)}`;
    tried.push(`the prebuilt library for ${p.target}: ${why}`);
    return undefined;
  }
  try {
    const notes: string[] = [];
    let where;
    try {
      where = materialize(p, ops, {
        procFdDir: prebuiltOptions.procFdDir,
        cacheDir: "cacheDir" in prebuiltOptions
          ? prebuiltOptions.cacheDir
          : cacheDir(Deno.build.os, (name) => ops.env(name)),
      }, notes);
    } catch (e) {
      const ways = notes.length ? ` (tried ${notes.join("; ")})` : "";
      tried.push(
        `the prebuilt library for ${p.target}: not written${ways}: ${(e as Error).message}`,
      );
      return undefined;
    }
    try {
      // LoadLibrary wants backslashes.
      const path = Deno.build.os === "windows" ? where.path.replaceAll("/", "\\") : where.path;
      const lib = tryOpen(
        path,
        where.label,
        tried,
        'regenerate the prebuilt libraries with "deno task prebuild" (a checkout), or report it (a published package)',
      );
      return lib && { lib, path, label: where.label };
    } finally {
      where.done();
    }
  } finally {
    ops.dispose();
  }
}

function openLibrary(options: LoadOptions): Symbols {
  if (loaded) return loaded.symbols;
  const tried: string[] = [];
  const rebuild = 'rebuild it with "deno task build"';
  for (const candidate of candidates(options)) {
    if ("note" in candidate) {
      tried.push(candidate.note);
      continue;
    }
    if ("prebuilt" in candidate) {
      const found = tryPrebuilt(tried);
      if (!found) continue;
      loaded = found.lib;
      loadedPath = found.path;
      loadedFrom = found.label;
      return found.lib.symbols;
    }
    const { path } = candidate;
    const lib = tryOpen(path, `"${path}"`, tried, rebuild);
    if (!lib) continue;
    loaded = lib;
    loadedPath = path;
    loadedFrom = `"${path}"`;
    return lib.symbols;
  }
  throw new LibraryLoadError(
    `Cannot load gpures: no library found. Tried, in order:\n${
      tried.map((t) => `  - ${t}`).join("\n")
    }\nTo fix it, ${BUILD_HINT}.`,
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
