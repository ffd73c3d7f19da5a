// Finds, opens and checks the native library. Nothing here runs at import
// time: the first call that needs the library loads it.

import { type Symbols, symbols } from "./_symbols.ts";
import { ABI_VERSION, ENUMS, KINDS } from "./_kinds.ts";
import { type FieldRow, readEnums, readKinds } from "./_tables.ts";
import { LibraryLoadError } from "./errors.ts";

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

function envPath(tried: string[]): string | undefined {
  // Ask first: reading an env var without permission would prompt or throw.
  const state = Deno.permissions.querySync?.({ name: "env", variable: "GPURES_LIB" }).state;
  if (state !== "granted") {
    tried.push("GPURES_LIB (not read: pass --allow-env=GPURES_LIB to use it)");
    return undefined;
  }
  const value = Deno.env.get("GPURES_LIB");
  if (!value) tried.push("GPURES_LIB (not set)");
  return value || undefined;
}

function candidates(options: LoadOptions, tried: string[]): string[] {
  const paths: string[] = [];
  if (options.path) {
    paths.push(options.path instanceof URL ? options.path.pathname : options.path);
  }
  const env = envPath(tried);
  if (env) paths.push(env);
  const local = new URL(`../build/${libraryFileName()}`, import.meta.url);
  if (local.protocol === "file:") {
    paths.push(Deno.build.os === "windows" ? local.pathname.slice(1) : local.pathname);
  }
  paths.push(libraryFileName()); // the system loader's search path
  return paths;
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
  const kinds = readKinds(lib);
  for (const want of KINDS) {
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
export function load(options: LoadOptions = {}): Symbols {
  if (loaded) return loaded.symbols;
  const tried: string[] = [];
  const failures: string[] = [];
  for (const path of candidates(options, tried)) {
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
      failures.push(`"${path}" (${(e as Error).message.split("\n")[0]})`);
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
    return lib.symbols;
  }
  throw new LibraryLoadError(
    `Cannot load gpures: no library found (tried ${
      [...failures, ...tried].join(", ")
    }); run "deno task build" or set GPURES_LIB to the library's path`,
    "NOT_FOUND",
  );
}

/** The loaded library, loading it on first use. */
export function lib(): Symbols {
  return loaded ? loaded.symbols : load();
}
