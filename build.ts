/**
 * Builds the native library from the C sources that ship with this package,
 * into a per-version cache folder where {@link load} finds it, with no
 * network access. Most users never need it: the package carries prebuilt
 * libraries for linux-x86_64, linux-aarch64, darwin-x86_64, darwin-aarch64,
 * windows-x86_64 and windows-aarch64. It is for other platforms, or to build with your own
 * compiler; a checkout builds with `deno task build` instead.
 *
 * ```sh
 * deno run -A jsr:@gpures/gpures/build
 * ```
 *
 * Needs CMake (3.20 or newer) and a C compiler. GPURES_CACHE_DIR overrides
 * the cache folder.
 *
 * @example
 * ```ts
 * import { buildNativeLibrary } from "@gpures/gpures/build";
 * const path = await buildNativeLibrary();
 * console.log(`built ${path}`);
 * ```
 *
 * @module
 */

import { cacheDir, VERSION } from "./ffi/load/cache.ts";
import { libraryFileName } from "./ffi/load/load.ts";
import { fromBase64, gunzip } from "./ffi/load/unpack.ts";

/** The folders and files, relative to the package root, that the native build needs. */
const SOURCE_ROOTS = ["CMakeLists.txt", "cmake/install", "native/include", "native/src"];

/**
 * The files the native build needs, path (relative to the package root) to
 * contents. A checkout's (a `file:` module) are read from disk; an installed
 * package's come from prebuilt/sources.ts, a module of the package that
 * `deno add` cached with the rest: nothing is fetched from the network.
 *
 * @param from "disk" or "package"; by default "disk" for a `file:` module.
 */
export async function nativeSources(
  from: "disk" | "package" = new URL(import.meta.url).protocol === "file:" ? "disk" : "package",
): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  if (from === "package") {
    const mod = await import("./prebuilt/sources.ts");
    const json = new TextDecoder().decode(gunzip(fromBase64(mod.gzipBase64)));
    const map: Record<string, string> = JSON.parse(json);
    const enc = new TextEncoder();
    for (const [path, text] of Object.entries(map)) files.set(path, enc.encode(text));
    return files;
  }
  const root = new URL("./", import.meta.url);
  const walk = (rel: string) => {
    const info = Deno.statSync(new URL(rel, root));
    if (info.isFile) {
      files.set(rel, Deno.readFileSync(new URL(rel, root)));
      return;
    }
    for (const entry of Deno.readDirSync(new URL(rel, root))) walk(`${rel}/${entry.name}`);
  };
  for (const rel of SOURCE_ROOTS) walk(rel);
  return new Map([...files].sort(([a], [b]) => a < b ? -1 : 1));
}

async function run(cmd: string, args: string[], what: string): Promise<void> {
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new Error(
        `Cannot build gpures: "${cmd}" is not installed; install CMake 3.20+ and a C compiler (Debian: apt install cmake gcc; macOS: xcode-select --install and brew install cmake)`,
      );
    }
    throw e;
  }
  if (!output.success) {
    const log = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    const hint = /CMAKE_C_COMPILER|No CMAKE_C_COMPILER|compiler/i.test(log)
      ? "; no working C compiler was found (Debian: apt install gcc)"
      : "";
    throw new Error(`Cannot build gpures: ${what} failed${hint}\n${log}`);
  }
}

/**
 * Builds the library into the cache folder and returns its path.
 *
 * @param options `dir` overrides the cache folder; `quiet` silences progress;
 * `from` picks where the sources come from (see {@link nativeSources}).
 */
export async function buildNativeLibrary(
  options: { dir?: string; quiet?: boolean; from?: "disk" | "package" } = {},
): Promise<string> {
  const dir = options.dir ?? cacheDir();
  if (!dir) {
    throw new Error(
      "Cannot build gpures: no cache folder; set GPURES_CACHE_DIR or HOME and allow reading it (--allow-env)",
    );
  }
  const log = options.quiet ? () => {} : (m: string) => console.error(m);
  const src = `${dir}/src`, out = `${dir}/cmake-build`;
  const sources = await nativeSources(options.from);
  log(`gpures ${VERSION}: writing ${sources.size} source files into ${src}`);
  for (const [file, bytes] of sources) {
    const target = `${src}/${file}`;
    await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), { recursive: true });
    await Deno.writeFile(target, bytes);
  }
  log("configuring with cmake");
  await run("cmake", [
    "-S",
    src,
    "-B",
    out,
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGPURES_BUILD_TESTS=OFF",
    "-DGPURES_BUILD_TEST_HELPERS=OFF",
    "-DGPURES_BUILD_BENCH=OFF",
  ], "cmake configure");
  log("building");
  await run("cmake", ["--build", out, "--config", "Release"], "cmake --build");
  const name = libraryFileName();
  const built = [`${out}/${name}`, `${out}/Release/${name}`].find((p) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  });
  if (!built) throw new Error(`Cannot build gpures: the build did not produce ${name}`);
  const target = `${dir}/${name}`;
  await Deno.copyFile(built, target); // follows the versioned symlinks to the real file
  log(`built ${target}`);
  return target;
}

if (import.meta.main) {
  try {
    await buildNativeLibrary();
  } catch (e) {
    console.error((e as Error).message);
    Deno.exit(1);
  }
}
