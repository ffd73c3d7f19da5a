// What a user installing the package gets: the sources the native build
// needs are all listed, the version is one, and a library built from the
// published sources into the cache folder is found by load().

import assert from "node:assert/strict";
import { nativeSources } from "../build.ts";
import { VERSION } from "../ffi/load/cache.ts";
import { PREBUILT_TARGETS } from "../ffi/load/targets.ts";
import { placeholderModuleText } from "../tools/prebuild.ts";

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

Deno.test("build.ts takes every file the native build needs from a checkout", async () => {
  const onDisk = [
    "CMakeLists.txt",
    ...filesUnder("cmake/install"),
    ...filesUnder("native/include"),
    ...filesUnder("native/src"),
  ].sort();
  assert.deepEqual([...(await nativeSources("disk")).keys()], onDisk);
});

Deno.test("build.ts takes the sources of an installed package from prebuilt/sources.ts, not the network", async () => {
  // What a JSR install has: the same kind of files, embedded in a module (its freshness is
  // tools/prebuild.ts --check's business, so only the shape is checked here).
  const files = await nativeSources("package");
  assert.ok(files.has("CMakeLists.txt"));
  assert.ok(files.has("native/include/gpures.h"));
  assert.ok([...files.keys()].some((p) => p.startsWith("native/src/") && p.endsWith(".c")));
  for (const path of files.keys()) {
    assert.match(path, /^(CMakeLists\.txt|cmake\/install\/|native\/(include|src)\/)/, path);
  }
  const text = Deno.readTextFileSync(new URL("build.ts", root));
  assert.ok(!/\bfetch\(/.test(text), "build.ts fetches nothing");
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
      const copyTree = async (from, to) => {
        await Deno.mkdir(to);
        for (const e of Deno.readDirSync(from)) {
          if (e.isDirectory) await copyTree(from + e.name + "/", to + e.name + "/");
          else await Deno.copyFile(from + e.name, to + e.name);
        }
      };
      await copyTree(${JSON.stringify(new URL("ffi/", root).pathname)}, copy + "/ffi/");
      // prebuilt/ holding no library: as on a platform without a prebuilt one.
      await Deno.mkdir(copy + "/prebuilt");
      for (const [name, text] of Object.entries(${
    JSON.stringify(Object.fromEntries(
      PREBUILT_TARGETS.map((t) => [t.name, placeholderModuleText(t, "a copy without libraries")]),
    ))
  })) {
        await Deno.writeTextFile(copy + "/prebuilt/" + name + ".ts", text);
      }
      const { load } = await import("file://" + copy + "/ffi/load/load.ts");
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
