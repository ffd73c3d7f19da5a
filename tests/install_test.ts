// Installing from JSR with no compiler: a local JSR stand-in
// (tools/jsr_stand_in.ts) serves the package as `deno publish` would upload
// it; a fresh DENO_DIR and HOME, with PATH holding only deno, run `deno add`
// and then a script with only --allow-ffi. .ci/jsr_install.sh runs the same
// story offline and on aarch64 under qemu.

import assert from "node:assert/strict";
import { currentTarget } from "../ffi/load/_prebuilt.ts";
import { PREBUILT_TARGETS } from "../ffi/load/targets.ts";
import { setup } from "./_support/eval_setup.ts";

const root = new URL("../", import.meta.url).pathname.replace(/\/$/, "");
const decoder = new TextDecoder();
const here = currentTarget();
const runs = Deno.build.os === "linux" && PREBUILT_TARGETS.some((t) => t.name === here);

const MAIN = `import { CpuBytes, load } from "@gpures/gpures";
let out;
try {
  const data = new Uint8Array(64);
  const a = CpuBytes.create({ data, rowPitch: 16, format: "RgbaU8", width: 4, height: 4 });
  const b = a.clone();
  const d = b.describe();
  a.release();
  b.release();
  out = { kind: d.kind, refcount: d.refcount, from: load().from };
} catch (e) {
  out = { code: e.code, message: e.message };
}
console.log(JSON.stringify(out));
`;

interface Session {
  dir: string;
  url: string;
  server: Deno.ChildProcess;
}

/** A stand-in serving `packageRoot`, and a user folder with only deno on PATH. */
async function start(packageRoot: string, extra: string[] = []): Promise<Session> {
  const dir = await setup(
    `const { main } = await new Response(Deno.stdin.readable).json();
     const dir = Deno.makeTempDirSync({ prefix: "gpures_install_" });
     for (const d of ["bin", "home", "app"]) Deno.mkdirSync(dir + "/" + d);
     Deno.symlinkSync(Deno.execPath(), dir + "/bin/deno");
     Deno.writeTextFileSync(dir + "/app/deno.json", "{}");
     Deno.writeTextFileSync(dir + "/app/main.ts", main);
     console.log(dir);`,
    { main: MAIN },
  );
  const server = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net=127.0.0.1",
      "--allow-read",
      "--allow-write",
      "--allow-run",
      `${root}/tools/jsr_stand_in.ts`,
      "--root",
      packageRoot,
      "--url-file",
      `${dir}/url`,
      "--log",
      `${dir}/requests.log`,
      ...extra,
    ],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  for (let i = 0; i < 300; i++) {
    try {
      const url = Deno.readTextFileSync(`${dir}/url`);
      if (url) return { dir, url, server };
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  server.kill();
  const { stderr } = await server.output();
  throw new Error(`the stand-in did not start: ${decoder.decode(stderr)}`);
}

async function stop(s: Session): Promise<void> {
  try {
    s.server.kill("SIGTERM");
  } catch { /* gone */ }
  await s.server.output();
  await setup(
    `Deno.removeSync(await new Response(Deno.stdin.readable).json(), { recursive: true });`,
    s.dir,
  );
}

/** Runs deno as the user would: only deno on PATH, a fresh DENO_DIR and HOME. */
async function user(s: Session, args: string[]) {
  const out = await new Deno.Command(`${s.dir}/bin/deno`, {
    args,
    cwd: `${s.dir}/app`,
    env: {
      HOME: `${s.dir}/home`,
      DENO_DIR: `${s.dir}/deno-dir`,
      PATH: `${s.dir}/bin`,
      JSR_URL: s.url,
      NO_COLOR: "1",
    },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    ok: out.success,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

function requests(s: Session): string[] {
  return Deno.readTextFileSync(`${s.dir}/requests.log`).trim().split("\n");
}

Deno.test({
  name:
    "deno add from a JSR stand-in, then only --allow-ffi: the prebuilt library, no request at run time",
  ignore: !runs,
  fn: async () => {
    const s = await start(root);
    try {
      const add = await user(s, ["add", "jsr:@gpures/gpures"]);
      assert.ok(add.ok, add.stderr);
      const fetched = requests(s);
      for (const t of PREBUILT_TARGETS) {
        assert.ok(
          fetched.includes(`GET /@gpures/gpures/0.1.0/prebuilt/${t.name}.ts 200`),
          `deno add fetched ${t.name}'s module: ${fetched.join("\n")}`,
        );
      }
      assert.ok(fetched.includes("GET /@gpures/gpures/0.1.0/prebuilt/sources.ts 200"));
      const run = await user(s, ["run", "--allow-ffi", "main.ts"]);
      assert.deepEqual(JSON.parse(run.stdout), {
        kind: "CpuBytes",
        refcount: 2,
        from: `the prebuilt library for ${here} (in a memfd)`,
      }, run.stderr);
      assert.equal(requests(s).length, fetched.length, "the run made no registry request");
    } finally {
      await stop(s);
    }
  },
});

Deno.test({
  name: "a registry serving a prebuilt with one byte changed: the install runs, load() refuses it",
  ignore: !runs,
  fn: async () => {
    // A copy of the package whose running-target library has one byte flipped (the module
    // still declares the original sha256): what a tampered mirror could serve.
    const copy = await setup(
      `const { root, target } = await new Response(Deno.stdin.readable).json();
       const dir = Deno.makeTempDirSync({ prefix: "gpures_pkg_" });
       const skip = new Set(["build", ".git", "node_modules"]);
       const copy = (rel) => {
         const from = root + "/" + rel, info = Deno.statSync(from);
         if (info.isDirectory) {
           Deno.mkdirSync(dir + "/" + rel, { recursive: true });
           for (const e of Deno.readDirSync(from)) {
             if (!skip.has(e.name) && !e.name.startsWith("build-")) copy(rel ? rel + "/" + e.name : e.name);
           }
         } else Deno.copyFileSync(from, dir + "/" + rel);
       };
       copy("");
       const path = dir + "/prebuilt/" + target + ".ts";
       const text = Deno.readTextFileSync(path);
       const b64 = /gzipBase64: string = "([^"]*)"/.exec(text)[1];
       const packed = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
       const lib = new Uint8Array(await new Response(new Blob([packed]).stream()
         .pipeThrough(new DecompressionStream("gzip"))).arrayBuffer());
       lib[lib.length >> 1] ^= 1;
       const repacked = new Uint8Array(await new Response(new Blob([lib]).stream()
         .pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
       let s = "";
       for (let i = 0; i < repacked.length; i += 0x8000) s += String.fromCharCode(...repacked.subarray(i, i + 0x8000));
       Deno.writeTextFileSync(path, text.replace(b64, btoa(s)));
       console.log(dir);`,
      { root, target: here },
    );
    const s = await start(copy);
    try {
      const add = await user(s, ["add", "jsr:@gpures/gpures"]);
      assert.ok(add.ok, add.stderr);
      const run = await user(s, ["run", "--allow-ffi", "main.ts"]);
      const out = JSON.parse(run.stdout);
      assert.equal(out.code, "INTEGRITY", run.stdout);
      assert.ok(out.message.includes(here), out.message);
      assert.match(out.message, /hash to [0-9a-f]{64}, the package declares [0-9a-f]{64}/);
    } finally {
      await stop(s);
      await setup(
        `Deno.removeSync(await new Response(Deno.stdin.readable).json(), { recursive: true });`,
        copy,
      );
    }
  },
});

Deno.test({
  name: "the stand-in's manifest matters: a wrong sha256 in it makes deno add fail",
  ignore: !runs,
  fn: async () => {
    const s = await start(root, ["--wrong-checksum", `/prebuilt/${here}.ts`]);
    try {
      const add = await user(s, ["add", "jsr:@gpures/gpures"]);
      assert.ok(!add.ok, "deno add refused the file");
      assert.match(add.stderr, /checksum|integrity/i, add.stderr);
    } finally {
      await stop(s);
    }
  },
});
