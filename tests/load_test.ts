// Finding, opening and trusting the native library. Most tests run a fresh
// Deno process, since a process loads the library once and keeps it.

import assert from "node:assert/strict";
import { liveHandles, load } from "../mod.ts";
import { libraryFileName } from "../ffi/load/load.ts";
import { PREBUILT_TARGETS } from "../ffi/load/targets.ts";
import { placeholderModuleText } from "../tools/prebuild.ts";
import {
  childOutcome,
  childScript,
  type Outcome as ChildOutcome,
} from "./_support/child_outcome.ts";

const MOD = new URL("../mod.ts", import.meta.url).href;
const FFI = new URL("../ffi/", import.meta.url);
const BUILT = new URL(`../build/${libraryFileName()}`, import.meta.url);
const BUILT_PATH = Deno.build.os === "windows" ? BUILT.pathname.slice(1) : BUILT.pathname;

interface Outcome extends ChildOutcome {
  /** The temporary folder it ran in (removed by now). */
  dir: string;
}

/** The environment a child gets: enough for Deno to run, and nothing of gpures. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: "1" };
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME", "TMPDIR"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
}

const decoder = new TextDecoder();

/**
 * Runs `code` in `deno eval` (which may write files; these tests run without
 * --allow-write) with `input` as JSON on stdin, and returns its stdout.
 */
async function evalWithInput(code: string, input: unknown): Promise<string> {
  const process = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", code],
    env: baseEnv(),
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = process.stdin.getWriter();
  await writer.write(new TextEncoder().encode(JSON.stringify(input)));
  await writer.close();
  const { code: status, stdout, stderr } = await process.output();
  if (status !== 0) throw new Error(`deno eval failed: ${decoder.decode(stderr)}`);
  return decoder.decode(stdout).trim();
}

/** A new temporary folder holding `files` (relative path to text). */
function makeTempDir(files: Record<string, string>): Promise<string> {
  return evalWithInput(
    `const files = await new Response(Deno.stdin.readable).json();
     const dir = Deno.makeTempDirSync({ prefix: "gpures_load_" });
     for (const [name, text] of Object.entries(files)) {
       Deno.mkdirSync(dir + "/" + name.split("/").slice(0, -1).join("/"), { recursive: true });
       Deno.writeTextFileSync(dir + "/" + name, text);
     }
     console.log(dir);`,
    files,
  );
}

async function removeDir(dir: string): Promise<void> {
  await evalWithInput(
    `Deno.removeSync(await new Response(Deno.stdin.readable).json(), { recursive: true });`,
    dir,
  );
}

/**
 * Every .ts file under ffi/, to copy into a temporary folder so the copy's "build next to the
 * module" (<folder>/build) does not exist, with prebuilt/ modules that hold no
 * library. `edit` may change a file's text; it gets the path under ffi/.
 */
function ffiFiles(edit?: (name: string, text: string) => string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of Deno.readDirSync(new URL(dir, FFI))) {
      const name = dir + entry.name;
      if (entry.isDirectory) walk(`${name}/`);
      if (!entry.isFile || !entry.name.endsWith(".ts")) continue;
      const text = Deno.readTextFileSync(new URL(name, FFI));
      files[`ffi/${name}`] = edit ? edit(name, text) : text;
    }
  };
  walk("");
  // prebuilt/ with no library for any target: as on a platform without a prebuilt one.
  for (const t of PREBUILT_TARGETS) {
    files[`prebuilt/${t.name}.ts`] = placeholderModuleText(t, "a copy without prebuilt libraries");
  }
  return files;
}

/**
 * Runs `body` (statements that may `await`, ending with `return value`) as
 * a module in a fresh Deno process with `flags`, in a temporary folder that
 * also holds `files`. The child prints what the body returned, or the error
 * it threw.
 */
async function child(
  imports: string,
  body: string,
  flags: string[],
  { env = {}, files = {} }: { env?: Record<string, string>; files?: Record<string, string> } = {},
): Promise<Outcome> {
  const script = childScript(imports, body);
  const dir = await makeTempDir({ ...files, "child.ts": script });
  try {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-config", "--no-lock", ...flags, "child.ts"],
      cwd: dir,
      env: { ...baseEnv(), ...env },
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { ...childOutcome(output), dir };
  } finally {
    await removeDir(dir);
  }
}

const IMPORT_MOD = `import * as gpures from ${JSON.stringify(MOD)};`;
const IMPORT_COPY = `import { load } from "./ffi/load/load.ts";`;

// ------------------------------------------------------------------ permissions

Deno.test("importing mod.ts loads nothing: it works without --allow-ffi", async () => {
  const { status, result } = await child(IMPORT_MOD, "return typeof gpures.load;", []);
  assert.equal(status, 0);
  assert.deepEqual(result, { ok: "function" });
});

Deno.test("GpuResource.isSupported() answers without --allow-ffi", async () => {
  const { result } = await child(
    IMPORT_MOD,
    `return [gpures.GpuResource.isSupported("CpuBytes"), gpures.GpuResource.isSupported(17)];`,
    [],
  );
  assert.deepEqual(result, { ok: [true, true] });
});

Deno.test("create() of a kind absent from this OS fails without --allow-ffi, before any native call", async () => {
  const absent = Deno.build.os === "windows" ? "MetalTextureHandle" : "D3D11Texture";
  const { result } = await child(
    IMPORT_MOD,
    `return gpures.${absent}.create({ texture: 1n, rowPitch: 0 });`,
    [],
  );
  assert.equal(result.error, "UnsupportedPlatformError");
  assert.equal(result.code, "UNSUPPORTED_PLATFORM");
});

Deno.test("load() without --allow-ffi throws LibraryLoadError saying to pass --allow-ffi", async () => {
  const { status, result } = await child(IMPORT_MOD, "return gpures.load() && 1;", [
    "--allow-read",
    "--allow-env",
  ]);
  assert.equal(status, 0);
  assert.equal(result.error, "LibraryLoadError");
  assert.equal(result.code, "PERMISSION");
  assert.ok(result.message?.includes('"--allow-ffi"'), result.message);
});

Deno.test("the first create() without --allow-ffi throws LibraryLoadError saying to pass --allow-ffi", async () => {
  const { result } = await child(
    IMPORT_MOD,
    `return gpures.CpuSharedSlot.create({ size: 64n, rowPitch: 16, format: "RgbaU8" }) && 1;`,
    [],
  );
  assert.equal(result.error, "LibraryLoadError");
  assert.equal(result.code, "PERMISSION");
  assert.ok(result.message?.includes('"--allow-ffi"'), result.message);
});

// ------------------------------------------------------------------- lookup

Deno.test("load() succeeds on the real build: its ABI and layouts match the module", () => {
  const loaded = load();
  assert.match(loaded.abiVersion, /^1\.\d+$/);
  assert.match(loaded.path, /libgpures\.so$/);
  assert.equal(typeof liveHandles(), "number");
});

Deno.test("load() returns the library already loaded on later calls", () => {
  assert.deepEqual(load(), load());
  assert.deepEqual(load({ path: "/nonexistent/libgpures.so" }), load());
});

Deno.test("load() with a missing explicit path falls through to the next candidate", async () => {
  const { result } = await child(
    IMPORT_MOD,
    `gpures.load({ path: "/nonexistent/libgpures.so" });
     return gpures.liveHandles();`,
    ["--allow-ffi", "--allow-read", "--allow-env"],
  );
  assert.deepEqual(result, { ok: 0 });
});

Deno.test("load() takes an explicit path as a file: URL", async () => {
  const { result } = await child(
    IMPORT_COPY,
    `return load({ path: new URL(${JSON.stringify(BUILT.href)}) }).abiVersion.split(".")[0] * 1;`,
    ["--allow-ffi"],
    { files: ffiFiles() },
  );
  assert.deepEqual(result, { ok: 1 });
});

Deno.test("load() honours GPURES_LIB", async () => {
  // No build next to the copy and none on the search path: only GPURES_LIB can succeed.
  const { result } = await child(
    IMPORT_COPY,
    'return load().abiVersion.split(".")[0] * 1;',
    ["--allow-ffi", "--allow-env=GPURES_LIB"],
    { files: ffiFiles(), env: { GPURES_LIB: BUILT_PATH } },
  );
  assert.deepEqual(result, { ok: 1 });
});

Deno.test("load() failure lists every place tried, in order, and how to build", async () => {
  const { result, dir } = await child(
    IMPORT_COPY,
    `return load({ path: "/nonexistent.so" }) && 1;`,
    ["--allow-ffi", "--allow-env"],
    { files: ffiFiles() },
  );
  assert.equal(result.error, "LibraryLoadError");
  assert.equal(result.code, "NOT_FOUND");
  const message = result.message ?? "";
  const explicit = message.indexOf('"/nonexistent.so"');
  const local = message.indexOf(`"${dir}/build/${libraryFileName()}"`);
  const system = message.indexOf(`"${libraryFileName()}"`);
  assert.ok(explicit >= 0, `names the explicit path: ${message}`);
  assert.ok(local > explicit, `then the build next to the module: ${message}`);
  assert.ok(system > local, `then the system search path: ${message}`);
  assert.ok(message.includes("GPURES_LIB"), `names GPURES_LIB: ${message}`);
  assert.ok(message.includes('"deno task build"'), `says how to build: ${message}`);
});

Deno.test("load() without --allow-env says GPURES_LIB was not read and which flag reads it", async () => {
  const { result } = await child(
    IMPORT_COPY,
    "return load() && 1;",
    ["--allow-ffi"],
    { files: ffiFiles(), env: { GPURES_LIB: BUILT_PATH } },
  );
  assert.equal(result.error, "LibraryLoadError");
  assert.equal(result.code, "NOT_FOUND");
  assert.ok(result.message?.includes("--allow-env=GPURES_LIB"), result.message);
});

// ---------------------------------------------------------------------- trust

/** ffi/ with gen/kinds.ts (the generated layouts) edited, as if made for another build. */
function ffiWithKinds(edit: (text: string) => string): Record<string, string> {
  return ffiFiles((name, text) => {
    if (name !== "gen/kinds.ts") return text;
    const edited = edit(text);
    assert.notEqual(edited, text, "the edit changed gen/kinds.ts");
    return edited;
  });
}

/** Loads the real build through GPURES_LIB from a copy of ffi/ with these files. */
function loadThroughCopy(files: Record<string, string>, body = "return load() && 1;") {
  return child(IMPORT_COPY, body, ["--allow-ffi", "--allow-env=GPURES_LIB"], {
    files,
    env: { GPURES_LIB: BUILT_PATH },
  });
}

Deno.test("load() refuses a library whose ABI major differs from the module's", async () => {
  const { result } = await loadThroughCopy(
    ffiWithKinds((text) => text.replace(/ABI_VERSION = \d+;/, `ABI_VERSION = ${2 << 16};`)),
  );
  assert.equal(result.error, "LibraryLoadError");
  assert.equal(result.code, "ABI_MISMATCH");
  assert.ok(result.message?.includes(BUILT_PATH), result.message);
  assert.ok(result.message?.includes('"deno task build"'), result.message);
});

Deno.test("load() refuses a library older than the module (a lower ABI minor)", async () => {
  const { result } = await loadThroughCopy(
    ffiWithKinds((text) =>
      text.replace(/ABI_VERSION = (\d+);/, (_, v) => `ABI_VERSION = ${Number(v) + 1};`)
    ),
  );
  assert.equal(result.error, "LibraryLoadError");
  assert.equal(result.code, "ABI_MISMATCH");
});

Deno.test("load() refuses a library whose descriptor sizes differ from the module's", async () => {
  const { result } = await loadThroughCopy(
    ffiWithKinds((text) => text.replace("descSize: 32,", "descSize: 40,")), // D3D11Texture's
  );
  assert.equal(result.error, "LibraryLoadError");
  assert.equal(result.code, "ABI_MISMATCH");
  assert.ok(result.message?.includes("D3D11Texture"), result.message);
});

Deno.test("load() refuses a library whose field offsets differ from the module's", async () => {
  const { result } = await loadThroughCopy(ffiWithKinds((text) => {
    // Move CpuBytes.rowPitch by four bytes.
    const kind = text.indexOf('name: "CpuBytes"');
    const row = text.indexOf('path: "rowPitch"', kind);
    const offset = text.indexOf("offset: ", row) + "offset: ".length;
    const end = text.indexOf(",", offset);
    return `${text.slice(0, offset)}${Number(text.slice(offset, end)) + 4}${text.slice(end)}`;
  }));
  assert.equal(result.error, "LibraryLoadError");
  assert.equal(result.code, "ABI_MISMATCH");
  assert.ok(result.message?.includes("CpuBytes.rowPitch"), result.message);
});

Deno.test("a refused library stays refused: the next load() does not take it", async () => {
  const { result } = await loadThroughCopy(
    ffiWithKinds((text) => text.replace(/ABI_VERSION = \d+;/, `ABI_VERSION = ${2 << 16};`)),
    `try { load(); } catch { /* the first refusal */ }
     return load() && 1;`,
  );
  assert.equal(result.error, "LibraryLoadError");
  assert.equal(result.code, "ABI_MISMATCH");
});
