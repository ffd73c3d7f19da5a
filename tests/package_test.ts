// What a user installing the package gets: the sources the native build
// needs are all listed, the version is one, and a library built from the
// published sources into the cache folder is found by load().

import assert from "node:assert/strict";
import { NATIVE_SOURCES } from "../build.ts";
import { VERSION } from "../ffi/_cache.ts";

const root = new URL("../", import.meta.url);

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of Deno.readDirSync(new URL(dir, root))) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) out.push(...filesUnder(path));
    else out.push(path);
  }
  return out;
}

Deno.test("build.ts lists every file the native build needs", () => {
  const onDisk = [
    "CMakeLists.txt",
    ...filesUnder("cmake/install"),
    ...filesUnder("native/include"),
    ...filesUnder("native/src"),
  ].sort();
  assert.deepEqual([...NATIVE_SOURCES].sort(), onDisk);
});

Deno.test("the module's VERSION is deno.json's version", () => {
  const config = JSON.parse(Deno.readTextFileSync(new URL("deno.json", root)));
  assert.equal(VERSION, config.version);
});

Deno.test("a library built by build.ts into the cache folder is found by load()", async () => {
  // Everything runs in a child with its own permissions: this process may not write.
  const script = `
    const cache = await Deno.makeTempDir({ prefix: "gpures-cache-" });
    const copy = await Deno.makeTempDir({ prefix: "gpures-module-" });
    try {
      Deno.env.set("GPURES_CACHE_DIR", cache);
      const { buildNativeLibrary } = await import(${
    JSON.stringify(new URL("build.ts", root).href)
  });
      const built = await buildNativeLibrary({ quiet: true });
      // A copy of the module with no build/ beside it, as a JSR install has.
      await Deno.mkdir(copy + "/ffi");
      for (const e of Deno.readDirSync(${JSON.stringify(new URL("ffi/", root).pathname)})) {
        await Deno.copyFile(${
    JSON.stringify(new URL("ffi/", root).pathname)
  } + e.name, copy + "/ffi/" + e.name);
      }
      const { load } = await import("file://" + copy + "/ffi/_load.ts");
      const found = load();
      console.log(JSON.stringify({ built, found: found.path, cache }));
    } finally {
      await Deno.remove(cache, { recursive: true });
      await Deno.remove(copy, { recursive: true });
    }
  `;
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.ok(output.success, stderr);
  const { built, found, cache } = JSON.parse(new TextDecoder().decode(output.stdout));
  assert.equal(found, built);
  assert.ok(found.startsWith(`${cache}/${VERSION}/`), found);
});
