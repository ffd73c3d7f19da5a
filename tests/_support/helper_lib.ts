// Where the GPU test helper libraries (tests/gpu_helpers, CMake target
// test-helpers/) are: beside the gpures library the tests load when
// GPURES_LIB names one in a build folder that has them, else in build/.
// So a run against build-foo/libgpures.so uses build-foo's helpers, built from
// the same sources, never another folder's.

const DEFAULT_DIR = new URL("../../build/test-helpers/", import.meta.url);

/** The folder GPURES_LIB's build put its helpers in, or undefined. */
function besideGpuresLib(): URL | undefined {
  const state = Deno.permissions.querySync?.({ name: "env", variable: "GPURES_LIB" }).state;
  if (state !== "granted") return undefined;
  const lib = Deno.env.get("GPURES_LIB");
  if (!lib) return undefined;
  const dir = new URL("test-helpers/", new URL(lib, `file://${Deno.cwd()}/`));
  try {
    return Deno.statSync(dir).isDirectory ? dir : undefined;
  } catch {
    return undefined;
  }
}

/** The URL of helper library `file` (e.g. "libgpures_test_vulkan.so"). */
export function helperLib(file: string): URL {
  return new URL(file, besideGpuresLib() ?? DEFAULT_DIR);
}
