// The prebuilt libraries inside the package: intact, refused when damaged,
// opened from a memfd with only --allow-ffi, from the cache folder without
// /proc, and every bad input (damaged cache file, a cache folder that cannot
// be written, no prebuilt for the platform, a wrong library in GPURES_LIB)
// gives a clear error, never a crash. Loads run in child processes, in a copy
// of the package with no build/ next to it (as a JSR install has).

import assert from "node:assert/strict";
import { PREBUILT_TARGETS } from "../ffi/load/targets.ts";
import {
  currentTarget,
  type PrebuiltModule,
  preparePrebuilt,
  sha256Hex,
  unpack,
} from "../ffi/load/_prebuilt.ts";
import { gunzip, sha256HexSync } from "../ffi/load/unpack.ts";
import { placeholderModuleText } from "../tools/prebuild.ts";
import { setup } from "./_support/eval_setup.ts";
import { childOutcome, childScript, type Outcome } from "./_support/child_outcome.ts";

const root = new URL("../", import.meta.url);
const here = currentTarget();
const hasPrebuilt = PREBUILT_TARGETS.some((t) => t.name === here) &&
  Deno.build.os === "linux";

async function gzipBase64(bytes: Uint8Array): Promise<string> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(
    new CompressionStream("gzip"),
  );
  const packed = new Uint8Array(await new Response(stream).arrayBuffer());
  let s = "";
  for (let i = 0; i < packed.length; i += 0x8000) {
    s += String.fromCharCode(...packed.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

function fromB64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

async function moduleOf(target: string): Promise<PrebuiltModule> {
  return await import(new URL(`prebuilt/${target}.ts`, root).href);
}

/** The module's library with one byte changed, still declaring the original sha256. */
async function tampered(mod: PrebuiltModule): Promise<PrebuiltModule> {
  const state = unpack(mod);
  assert.ok("ok" in state);
  const bytes = state.ok.bytes.slice();
  bytes[bytes.length >> 1] ^= 0x01;
  return { ...mod, gzipBase64: await gzipBase64(bytes) };
}

// ------------------------------------------------------------- integrity

Deno.test("the synchronous sha256 equals crypto.subtle's", async () => {
  for (const n of [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000, 100_003]) {
    const bytes = new Uint8Array(n).map((_, i) => (i * 31 + n) & 0xff);
    assert.equal(sha256HexSync(bytes), await sha256Hex(bytes), `${n} bytes`);
  }
});

Deno.test("the synchronous gunzip equals DecompressionStream, and throws (never crashes) on damage", async () => {
  const samples = [
    new Uint8Array(0),
    new Uint8Array(1),
    new Uint8Array(100_000).map((_, i) => (i % 7 ? i % 13 : (i * 2654435761) >>> 24)),
    Deno.readFileSync(new URL("README.md", root)),
  ];
  for (const raw of samples) {
    const packed = fromB64(await gzipBase64(raw));
    assert.deepEqual(gunzip(packed), raw);
  }
  const packed = fromB64(await gzipBase64(samples[3]));
  let threw = 0;
  for (let i = 0; i < 200; i++) {
    const bad = packed.slice();
    bad[10 + ((i * 7919) % (bad.length - 10))] ^= 1 << (i % 8);
    try {
      gunzip(bad);
    } catch (e) {
      assert.ok(e instanceof Error);
      threw++;
    }
  }
  assert.ok(threw > 0);
  assert.throws(() => gunzip(packed.subarray(0, packed.length >> 1)), Error);
});

/** The targets whose module holds a library (one whose build failed is --check's to report). */
async function built(): Promise<string[]> {
  const names: string[] = [];
  for (const t of PREBUILT_TARGETS) if (!(await moduleOf(t.name)).buildError) names.push(t.name);
  return names;
}

Deno.test("every target's prebuilt module decompresses to its declared size and sha256", async () => {
  const names = await built();
  if (hasPrebuilt) assert.ok(names.includes(here), `the running target, ${here}, has a library`);
  for (const t of PREBUILT_TARGETS.filter((x) => names.includes(x.name))) {
    const mod = await moduleOf(t.name);
    assert.equal(mod.target, t.name);
    assert.equal(mod.fileName, t.fileName);
    const state = unpack(mod);
    assert.ok("ok" in state, `${t.name}: ${JSON.stringify(state)}`);
    assert.equal(state.ok.bytes.length, mod.size);
    assert.equal(state.ok.sha256, mod.sha256);
  }
});

Deno.test("one byte changed in a prebuilt library: refused, naming the target and both hashes", async () => {
  const names = await built();
  for (const t of PREBUILT_TARGETS.filter((x) => names.includes(x.name))) {
    const mod = await tampered(await moduleOf(t.name));
    const state = unpack(mod);
    assert.ok("refused" in state, t.name);
    const state2 = unpack({ ...mod, gzipBase64: (await moduleOf(t.name)).gzipBase64 });
    assert.ok("ok" in state2, "the untouched bytes pass");
    assert.ok(state.refused.includes(t.name), state.refused);
    assert.ok(state.refused.includes(mod.sha256), `the declared hash: ${state.refused}`);
    const got = /hash to ([0-9a-f]{64})/.exec(state.refused)?.[1];
    assert.ok(got && got !== mod.sha256, `the actual hash: ${state.refused}`);
  }
});

Deno.test("a prebuilt module whose data does not decompress is refused, not thrown", async () => {
  const mod = await moduleOf(PREBUILT_TARGETS[0].name);
  for (const data of [mod.gzipBase64.slice(0, 1000), "AAAA", "not base64 at all!"]) {
    const state = unpack({ ...mod, gzipBase64: data });
    assert.ok("refused" in state, data.slice(0, 20));
    assert.ok(state.refused.includes(mod.target), state.refused);
  }
});

Deno.test("a platform with no prebuilt library says so and names the targets that have one", () => {
  const state = preparePrebuilt("freebsd-riscv64");
  assert.ok("none" in state);
  assert.ok(state.none.includes("freebsd-riscv64"), state.none);
  for (const t of PREBUILT_TARGETS) assert.ok(state.none.includes(t.name), state.none);
});

// ------------------------------------------------------------ in a child

/**
 * A copy of the package (mod.ts, ffi/, prebuilt/) in a new temporary folder,
 * with no build/ beside it; `replace` overrides files (relative path to text).
 */
function packageCopy(replace: Record<string, string> = {}, drop: string[] = []): Promise<string> {
  return setup(
    `const { root, replace, drop } = await new Response(Deno.stdin.readable).json();
     const dir = Deno.makeTempDirSync({ prefix: "gpures_prebuilt_" });
     const copy = (rel) => {
       const info = Deno.statSync(root + rel);
       if (info.isDirectory) {
         Deno.mkdirSync(dir + "/" + rel, { recursive: true });
         for (const e of Deno.readDirSync(root + rel)) copy(rel + "/" + e.name);
       } else if (!drop.includes(rel)) Deno.copyFileSync(root + rel, dir + "/" + rel);
     };
     for (const rel of ["mod.ts", "ffi", "prebuilt"]) copy(rel);
     for (const [rel, text] of Object.entries(replace)) Deno.writeTextFileSync(dir + "/" + rel, text);
     Deno.mkdirSync(dir + "/cache");
     console.log(dir);`,
    { root: root.pathname, replace, drop },
  );
}

function remove(path: string): Promise<string> {
  return setup(
    `const p = await new Response(Deno.stdin.readable).json();
     try { Deno.chmodSync(p + "/cache", 0o755); } catch { /* absent */ }
     Deno.removeSync(p, { recursive: true });`,
    path,
  );
}

/** Runs `body` in the copy with `flags`; it may use `load` and `setPrebuiltOptions`. */
async function inCopy(
  dir: string,
  body: string,
  flags: string[],
  env: Record<string, string> = {},
): Promise<Outcome> {
  const script = childScript(
    `import { load, setPrebuiltOptions } from "./ffi/load/load.ts";
import { CpuBytes } from "./mod.ts";`,
    body,
  );
  await setup(
    `const { dir, script } = await new Response(Deno.stdin.readable).json();
     Deno.writeTextFileSync(dir + "/child.ts", script);`,
    { dir, script },
  );
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-config", "--no-lock", ...flags, "child.ts"],
    cwd: dir,
    env: { NO_COLOR: "1", PATH: Deno.env.get("PATH") ?? "", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return childOutcome(output);
}

const USE_HANDLE = `
  const data = new Uint8Array(64);
  const a = CpuBytes.create({ data, rowPitch: 16, format: "RgbaU8", width: 4, height: 4 });
  const b = a.clone();
  const refcount = b.describe().refcount;
  a.release();
  b.release();
  return { from: load().from, refcount };`;

/** A test in a fresh copy of the package, removed afterwards. */
function copyTest(
  name: string,
  fn: (dir: string) => Promise<void>,
  options: { replace?: () => Promise<Record<string, string>>; drop?: string[] } = {},
) {
  Deno.test({
    name,
    ignore: !hasPrebuilt,
    fn: async () => {
      const dir = await packageCopy(await options.replace?.() ?? {}, options.drop ?? []);
      try {
        await fn(dir);
      } finally {
        await remove(dir);
      }
    },
  });
}

const byteFlipped = async () => {
  const mod = await tampered(await moduleOf(here));
  const path = `prebuilt/${here}.ts`;
  const text = Deno.readTextFileSync(new URL(path, root));
  const edited = text.replace(
    /gzipBase64: string = "[^"]*"/,
    `gzipBase64: string = "${mod.gzipBase64}"`,
  );
  assert.notEqual(edited, text);
  return { [path]: edited };
};

copyTest("with only --allow-ffi the prebuilt library loads from a memfd", async (dir) => {
  const { result } = await inCopy(dir, USE_HANDLE, ["--allow-ffi"]);
  assert.deepEqual(result.ok, {
    from: `the prebuilt library for ${here} (in a memfd)`,
    refcount: 2,
  });
});

copyTest(
  "without /proc the prebuilt library is written to the cache folder and loads from there",
  async (dir) => {
    const { result } = await inCopy(
      dir,
      `setPrebuiltOptions({ procFdDir: "/nonexistent/proc/self/fd" });
     const r = (() => { ${USE_HANDLE} })();
     return { ...r, path: load().path };`,
      ["--allow-ffi"],
      { GPURES_CACHE_DIR: `${dir}/cache` },
    );
    const ok = result.ok as { from: string; path: string; refcount: number };
    assert.ok(ok, JSON.stringify(result));
    assert.equal(ok.refcount, 2);
    assert.ok(ok.path.startsWith(`${dir}/cache/0.1.0/prebuilt-`), ok.path);
    assert.ok(ok.from.includes("cached as"), ok.from);
    const mod = await moduleOf(here);
    const onDisk = await setup(
      `const p = await new Response(Deno.stdin.readable).json();
     const d = await crypto.subtle.digest("SHA-256", Deno.readFileSync(p));
     console.log(Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join(""));`,
      ok.path,
    );
    assert.equal(onDisk, mod.sha256);
  },
);

for (
  const [what, damage] of [
    ["corrupted", "bytes.fill(0xcc, 0, 64)"],
    ["truncated", "bytes = bytes.subarray(0, bytes.length >> 1)"],
  ] as const
) {
  copyTest(`a ${what} cached library is refused (never opened) and replaced`, async (dir) => {
    const mod = await moduleOf(here);
    const state = unpack(mod);
    assert.ok("ok" in state);
    const final = `${dir}/cache/0.1.0/prebuilt-${mod.sha256.slice(0, 16)}/${mod.fileName}`;
    await setup(
      `const { final, b64 } = await new Response(Deno.stdin.readable).json();
       let bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
       ${damage};
       Deno.mkdirSync(final.slice(0, final.lastIndexOf("/")), { recursive: true });
       Deno.writeFileSync(final, bytes);`,
      { final, b64: btoa(Array.from(state.ok.bytes, (b) => String.fromCharCode(b)).join("")) },
    );
    const { result } = await inCopy(
      dir,
      `setPrebuiltOptions({ procFdDir: "/nonexistent" }); ${USE_HANDLE}`,
      ["--allow-ffi"],
      { GPURES_CACHE_DIR: `${dir}/cache` },
    );
    assert.deepEqual((result.ok as { refcount: number })?.refcount, 2, JSON.stringify(result));
  });
}

copyTest(
  "a cache folder that cannot be written (holding a damaged library): a clear error, no crash",
  async (dir) => {
    // Root ignores permission bits: as root the folder is under /sys, which refuses even root.
    const isRoot = await setup("console.log(Deno.uid())", null) === "0";
    const cache = isRoot ? "/sys/gpures-test-cache" : `${dir}/cache/ro`;
    if (!isRoot) {
      const mod = await moduleOf(here);
      await setup(
        `const { d, sub, name } = await new Response(Deno.stdin.readable).json();
       Deno.mkdirSync(d + "/0.1.0/" + sub, { recursive: true });
       Deno.writeTextFileSync(d + "/0.1.0/" + sub + "/" + name, "not a library");
       for (const p of [d + "/0.1.0/" + sub, d + "/0.1.0", d]) Deno.chmodSync(p, 0o555);`,
        { d: cache, sub: `prebuilt-${mod.sha256.slice(0, 16)}`, name: mod.fileName },
      );
    }
    const { status, result } = await inCopy(
      dir,
      `setPrebuiltOptions({ procFdDir: "/nonexistent" }); return load() && 1;`,
      ["--allow-ffi"],
      { GPURES_CACHE_DIR: cache },
    );
    if (!isRoot) {
      await setup(
        `const d = await new Response(Deno.stdin.readable).json();
       for (const e of Deno.readDirSync(d + "/0.1.0")) Deno.chmodSync(d + "/0.1.0/" + e.name, 0o755);
       Deno.chmodSync(d + "/0.1.0", 0o755); Deno.chmodSync(d, 0o755);`,
        cache,
      );
    }
    assert.equal(status, 0);
    assert.equal(result.error, "LibraryLoadError");
    assert.equal(result.code, "NOT_FOUND");
    const message = result.message ?? "";
    assert.ok(message.includes(`the prebuilt library for ${here}: not written`), message);
    assert.ok(message.includes("no /nonexistent"), `says /proc is missing: ${message}`);
    assert.ok(message.includes(cache), `names the folder: ${message}`);
    assert.ok(message.includes("deno task build"), `says how to build: ${message}`);
  },
);

copyTest("a missing cache folder is created", async (dir) => {
  const { result } = await inCopy(
    dir,
    `setPrebuiltOptions({ procFdDir: "/nonexistent" }); ${USE_HANDLE}`,
    ["--allow-ffi"],
    { GPURES_CACHE_DIR: `${dir}/cache/not/yet/there` },
  );
  assert.equal((result.ok as { refcount: number })?.refcount, 2, JSON.stringify(result));
});

copyTest("no /proc and no cache folder known: a clear error", async (dir) => {
  const { result } = await inCopy(
    dir,
    `setPrebuiltOptions({ procFdDir: "/nonexistent", cacheDir: undefined }); return load() && 1;`,
    ["--allow-ffi"],
  );
  assert.equal(result.code, "NOT_FOUND");
  assert.ok(result.message?.includes("no cache folder"), result.message);
});

copyTest(
  "one byte changed in the running target's prebuilt: load() refuses it, naming the target and both hashes",
  async (dir) => {
    const { result } = await inCopy(dir, "return load() && 1;", ["--allow-ffi"]);
    assert.equal(result.error, "LibraryLoadError");
    assert.equal(result.code, "INTEGRITY");
    const mod = await moduleOf(here);
    assert.ok(result.message?.includes(here), result.message);
    assert.ok(result.message?.includes(mod.sha256), result.message);
    assert.match(result.message ?? "", /hash to [0-9a-f]{64}/);
  },
  { replace: byteFlipped },
);

copyTest(
  "no prebuilt for this platform: the error lists each attempt once and how to build from source",
  async (dir) => {
    const { result } = await inCopy(dir, "return load() && 1;", ["--allow-ffi"]);
    assert.equal(result.code, "NOT_FOUND");
    const message = result.message ?? "";
    assert.ok(!message.includes("Could not open library"), `no dlopen prefix: ${message}`);
    const lines = message.split("\n").filter((l) => l.startsWith("  - "));
    assert.equal(new Set(lines).size, lines.length, `each attempt once: ${message}`);
    assert.ok(lines.some((l) => l.includes(`no prebuilt library for ${here}`)), message);
    assert.ok(message.includes("jsr:@gpures/gpures/build"), message);
    assert.ok(message.includes("no network"), message);
  },
  {
    replace: () => {
      const t = PREBUILT_TARGETS.find((x) => x.name === here)!;
      return Promise.resolve({ [`prebuilt/${here}.ts`]: placeholderModuleText(t, "simulated") });
    },
  },
);

copyTest(
  "GPURES_LIB pointing at another library: a clear ABI_MISMATCH error, not a crash",
  async (dir) => {
    const other = [
      "/lib/x86_64-linux-gnu/libz.so.1",
      "/usr/lib/x86_64-linux-gnu/libz.so.1",
      "/lib/aarch64-linux-gnu/libz.so.1",
    ].find((p) => {
      try {
        return Deno.statSync(p).isFile;
      } catch {
        return false;
      }
    }) ?? "libc.so.6";
    const { result } = await inCopy(dir, "return load() && 1;", ["--allow-ffi", "--allow-env"], {
      GPURES_LIB: other,
    });
    assert.equal(result.code, "ABI_MISMATCH", JSON.stringify(result));
    assert.ok(result.message?.includes(other), result.message);
    assert.ok(result.message?.includes("lacks gpures_"), result.message);
  },
);

copyTest(
  "GPURES_LIB pointing at a file that is no library: listed, then the prebuilt loads",
  async (dir) => {
    const { result } = await inCopy(dir, USE_HANDLE, ["--allow-ffi", "--allow-env"], {
      GPURES_LIB: `${dir}/mod.ts`,
    });
    assert.equal((result.ok as { refcount: number })?.refcount, 2, JSON.stringify(result));
  },
);

const WORKER = `import { liveHandles, load } from "./mod.ts";
self.onmessage = () => {
  const loaded = load();
  self.postMessage({ live: liveHandles(), from: loaded.from, path: loaded.path });
};
`;

copyTest(
  "a Worker opens the same prebuilt library as the main thread, not a second copy",
  async (dir) => {
    const { result } = await inCopy(
      dir,
      `const data = new Uint8Array(64);
       const a = CpuBytes.create({ data, rowPitch: 16, format: "RgbaU8", width: 4, height: 4 });
       const main = load();
       const w = new Worker(new URL("./worker.ts", import.meta.url).href, { type: "module" });
       const got = await new Promise((resolve) => { w.onmessage = (e) => resolve(e.data); w.postMessage(0); });
       w.terminate();
       a.release();
       return { main: main.path, ...got };`,
      ["--allow-ffi", "--allow-read"],
    );
    const ok = result.ok as { main: string; path: string; live: number; from: string };
    assert.ok(ok, JSON.stringify(result));
    assert.equal(ok.live, 1, "the Worker sees the main thread's handle: one handle table");
    assert.equal(ok.path, ok.main, "the same memfd path");
    assert.ok(ok.from.includes("memfd"), ok.from);
  },
  { replace: () => Promise.resolve({ "worker.ts": WORKER }) },
);

copyTest(
  "a memfd that only bears the prebuilt's name (half of it, unsealed) is never opened",
  async (dir) => {
    const { result } = await inCopy(
      dir,
      `const { prebuiltState } = await import("./ffi/load/_prebuilt.ts");
       const p = prebuiltState().ok;
       const libc = Deno.dlopen("libc.so.6", {
         memfd_create: { parameters: ["buffer", "u32"], result: "i32" },
         write: { parameters: ["i32", "buffer", "usize"], result: "isize" },
       }).symbols;
       const name = new TextEncoder().encode("gpures-" + p.target + "-" + p.sha256.slice(0, 16) + "\0");
       const planted = libc.memfd_create(name, 1);
       const half = p.bytes.subarray(0, p.bytes.length >> 1);
       libc.write(planted, half, BigInt(half.length)); // a bus error if it were mapped and run
       const loaded = load();
       return { planted, path: loaded.path, from: loaded.from };`,
      ["--allow-ffi"],
    );
    const ok = result.ok as { planted: number; path: string; from: string };
    assert.ok(ok, JSON.stringify(result));
    assert.ok(ok.from.includes("memfd"), ok.from);
    assert.notEqual(ok.path, `/proc/self/fd/${ok.planted}`, "the planted memfd was not used");
  },
);

const WORKERS = `import { load } from "./mod.ts";
self.onmessage = () => self.postMessage(load().path);
`;

copyTest(
  "isolates that load at the same moment all open one library",
  async (dir) => {
    const { result } = await inCopy(
      dir,
      `const workers = Array.from({ length: 6 }, () =>
         new Worker(new URL("./workers.ts", import.meta.url).href, { type: "module" }));
       const paths = await Promise.all(workers.map((w) => new Promise((resolve) => {
         w.onmessage = (e) => resolve(e.data);
         w.postMessage(0);
       })));
       paths.push(load().path);
       workers.forEach((w) => w.terminate());
       return [...new Set(paths)];`,
      ["--allow-ffi", "--allow-read"],
    );
    const paths = result.ok as string[];
    assert.ok(paths, JSON.stringify(result));
    assert.equal(paths.length, 1, `one memfd for every isolate, not ${paths.join(", ")}`);
  },
  { replace: () => Promise.resolve({ "workers.ts": WORKERS }) },
);

copyTest(
  "process.dlopen() of load().path (the Node-API side of map()) opens the loaded library",
  async (dir) => {
    const { result } = await inCopy(
      dir,
      `const process = (await import("node:process")).default;
     const m = { exports: {} };
     process.dlopen(m, load().path);
     return typeof m.exports.mapBuffer;`,
      ["--allow-ffi"],
    );
    assert.deepEqual(result, { ok: "function" });
  },
);
