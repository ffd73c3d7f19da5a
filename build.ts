/**
 * Builds the native library from the C sources that ship with this package,
 * into a per-version cache folder where {@link load} finds it. For users who
 * install from JSR; a checkout builds with `deno task build` instead.
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

import { cacheDir, VERSION } from "./ffi/_cache.ts";
import { libraryFileName } from "./ffi/_load.ts";

/** The files the native build needs, relative to this module; a test keeps the list complete. */
export const NATIVE_SOURCES: readonly string[] = [
  "CMakeLists.txt",
  "cmake/install/gpures.pc.in",
  "cmake/install/gpuresConfig.cmake.in",
  "native/include/gpures.h",
  "native/include/gpures_lists.h",
  "native/src/build_os.h",
  "native/src/channel/channel.h",
  "native/src/channel/listeners.c",
  "native/src/channel/messages.c",
  "native/src/channel/sockets.c",
  "native/src/channel/windows.c",
  "native/src/channel/wire.c",
  "native/src/core/alloc.c",
  "native/src/core/status.c",
  "native/src/enums/enums.c",
  "native/src/enums/pixel_format.c",
  "native/src/events/events.c",
  "native/src/events/wait.c",
  "native/src/frames/pool.c",
  "native/src/internal.h",
  "native/src/kinds/cpu.c",
  "native/src/kinds/cuda.c",
  "native/src/kinds/d3d.c",
  "native/src/kinds/dma_buf.c",
  "native/src/kinds/fields.c",
  "native/src/kinds/gl.c",
  "native/src/kinds/kind_table.c",
  "native/src/kinds/meta.c",
  "native/src/kinds/metal.c",
  "native/src/kinds/opencl.c",
  "native/src/kinds/sync.c",
  "native/src/kinds/vaapi.c",
  "native/src/kinds/vulkan.c",
  "native/src/kinds/wgpu.c",
  "native/src/map/frame_fd.c",
  "native/src/map/mappings.c",
  "native/src/map/napi_buffers.c",
  "native/src/map/windows.c",
  "native/src/os/errno_names.c",
  "native/src/os/fence_fd.c",
  "native/src/os/pin.c",
  "native/src/os/posix.c",
  "native/src/os/windows.c",
  "native/src/session/receive.c",
  "native/src/session/send.c",
  "native/src/session/service.c",
  "native/src/session/session.c",
  "native/src/session/session.h",
  "native/src/session/windows.c",
  "native/src/sync/access.c",
  "native/src/sync/apis.c",
  "native/src/sync/fence.c",
  "native/src/sync/sync.h",
  "native/src/sync/waiter.c",
  "native/src/table/describe_json.c",
  "native/src/table/fds.c",
  "native/src/table/handles.c",
  "native/src/table/kind_api.c",
  "native/src/table/meta.c",
  "native/src/table/per_handle.c",
  "native/src/table/slots.c",
  "native/src/table/struct_size.c",
  "native/src/table/table.h",
];

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
 * @param options `dir` overrides the cache folder; `quiet` silences progress.
 */
export async function buildNativeLibrary(
  options: { dir?: string; quiet?: boolean } = {},
): Promise<string> {
  const dir = options.dir ?? cacheDir();
  if (!dir) {
    throw new Error(
      "Cannot build gpures: no cache folder; set GPURES_CACHE_DIR or HOME and allow reading it (--allow-env)",
    );
  }
  const log = options.quiet ? () => {} : (m: string) => console.error(m);
  const src = `${dir}/src`, out = `${dir}/cmake-build`;
  log(`gpures ${VERSION}: fetching ${NATIVE_SOURCES.length} source files into ${src}`);
  for (const file of NATIVE_SOURCES) {
    const response = await fetch(new URL(file, import.meta.url));
    if (!response.ok) {
      throw new Error(`Cannot build gpures: ${file} could not be fetched (${response.status})`);
    }
    const target = `${src}/${file}`;
    await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), { recursive: true });
    await Deno.writeFile(target, new Uint8Array(await response.arrayBuffer()));
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
