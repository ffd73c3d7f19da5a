// The prebuilt native library that ships inside the package, one module per
// target under prebuilt/ (tools/prebuild.ts writes them).
//
// How it fits the synchronous loader (the first create() loads the library,
// so every step must be synchronous):
//
// - Every target's module is imported statically. A literal dynamic import()
//   per target (each fetched by `deno add`, only the running one evaluated)
//   would need an await before the first synchronous use, i.e. top-level
//   await, and a top-level await anywhere in mod.ts's graph makes Deno hand a
//   Worker's messages to the Worker before its module has run: the Worker
//   loses them (tests/frame_queue_test.ts's Worker test failed that way). An
//   explicit async step (`await ready()` before the first create()) would
//   break the synchronous API that every example and caller uses. The price
//   of static imports is parsing every target's module: ~570 KiB of string
//   literals, 15-20 ms at import on a 2-core VM, and nothing is decompressed
//   until a library is needed.
// - On first use, only the running target's library is decompressed
//   and its size and sha256 checked (ffi/load/unpack.ts: node:zlib and
//   node:crypto, both synchronous). None of that needs a permission.
// - materialize() then puts the checked bytes where dlopen can open them: a
//   memfd on Linux, else the per-version cache folder (ffi/load/_prebuilt_fs.ts).

import { PREBUILT_TARGETS } from "./targets.ts";
import type { FileOps } from "./_prebuilt_fs.ts";
import type { PrebuiltModule } from "./prebuilt_module.ts";
import { fromBase64, gunzip, sha256HexSync } from "./unpack.ts";
import * as linuxX86_64 from "../../prebuilt/linux-x86_64.ts";
import * as linuxAarch64 from "../../prebuilt/linux-aarch64.ts";
import * as darwinX86_64 from "../../prebuilt/darwin-x86_64.ts";
import * as darwinAarch64 from "../../prebuilt/darwin-aarch64.ts";
import * as windowsX86_64 from "../../prebuilt/windows-x86_64.ts";
import * as windowsAarch64 from "../../prebuilt/windows-aarch64.ts";

export type { PrebuiltModule };

/** Every target's module, by target name. */
const MODULES: Record<string, PrebuiltModule> = {
  "linux-x86_64": linuxX86_64,
  "linux-aarch64": linuxAarch64,
  "darwin-x86_64": darwinX86_64,
  "darwin-aarch64": darwinAarch64,
  "windows-x86_64": windowsX86_64,
  "windows-aarch64": windowsAarch64,
};

/** A prebuilt library, decompressed and checked. */
export interface Prebuilt {
  target: string;
  fileName: string;
  sha256: string;
  bytes: Uint8Array;
}

/** The running target's prebuilt library, or why there is none, or why it was refused. */
export type PrebuiltState =
  | { ok: Prebuilt }
  | { none: string }
  | { refused: string };

/** The running target's name, `<Deno.build.os>-<Deno.build.arch>`. */
export function currentTarget(): string {
  return `${Deno.build.os}-${Deno.build.arch}`;
}

/** The sha256 of bytes, hex (crypto.subtle, for callers that may await). */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Decompresses a prebuilt module's library and checks it against the declared size and sha256. */
export function unpack(mod: PrebuiltModule): PrebuiltState {
  if (mod.buildError || !mod.gzipBase64) {
    return {
      none: `no prebuilt library for ${mod.target} in this package (${
        mod.buildError || "no data"
      })`,
    };
  }
  const refuse = (got: string) => ({
    refused:
      `the prebuilt library for ${mod.target} is damaged: its bytes hash to ${got}, the package declares ${mod.sha256}; reinstall the package (deno cache --reload) or set GPURES_LIB`,
  });
  let bytes: Uint8Array;
  try {
    bytes = gunzip(fromBase64(mod.gzipBase64), Math.max(mod.size, 1) * 2);
  } catch (e) {
    return refuse(`nothing (it does not decompress: ${(e as Error).message})`);
  }
  const got = sha256HexSync(bytes);
  if (got !== mod.sha256 || bytes.length !== mod.size) return refuse(got);
  return { ok: { target: mod.target, fileName: mod.fileName, sha256: got, bytes } };
}

/** The prebuilt library of a target, unpacked and checked, or why not. */
export function preparePrebuilt(target: string = currentTarget()): PrebuiltState {
  const mod = MODULES[target];
  if (!mod) {
    const names = PREBUILT_TARGETS.map((t) => t.name).join(", ");
    return { none: `no prebuilt library for ${target} (the package has ${names})` };
  }
  return unpack(mod);
}

let prepared: PrebuiltState | undefined;

/** The running target's prebuilt library, unpacked on first call. */
export function prebuiltState(): PrebuiltState {
  return prepared ??= preparePrebuilt();
}

/** Where {@link materialize} may put the library. */
export interface MaterializeOptions {
  /** The folder of the process's file descriptors (Linux); "/proc/self/fd" unless testing. */
  procFdDir?: string;
  /** The per-version cache folder; undefined when none is known. */
  cacheDir?: string;
}

/** A path to open the library from, and what to do once it is open (or failed to). */
export interface Materialized {
  /** The path to give dlopen. */
  path: string;
  /** How the error list names this attempt. */
  label: string;
  /** Call after dlopen (nothing to do today: a memfd stays open for the process). */
  done(): void;
}

/**
 * Puts the checked bytes where dlopen can open them: on Linux an anonymous
 * memfd, opened as /proc/self/fd/N (nothing is written to disk, no permission
 * but --allow-ffi); otherwise (and on Linux without /proc) a file in the
 * cache folder, written under a temporary name, checked and renamed, so dlopen
 * never sees a half-written file. A cached file whose hash differs is never
 * opened: it is replaced. `notes` collects why a way was skipped. Throws an
 * Error that says what failed.
 */
export function materialize(
  p: Prebuilt,
  ops: FileOps,
  options: MaterializeOptions,
  notes: string[],
): Materialized {
  const hashSync = sha256HexSync;
  const procDir = options.procFdDir ?? "/proc/self/fd";
  if (ops.memfd) {
    if (!ops.exists(procDir)) {
      notes.push(`a memfd (no ${procDir}: is /proc mounted?)`);
    } else {
      try {
        // One memfd per process, kept open, so that every isolate (Workers) and
        // process.dlopen() open the same path, and glibc hands back the library already
        // loaded instead of a second copy with its own handle table.
        // Found or made under one lock for every isolate: two isolates loading at once
        // would otherwise each make one and load two copies. A found one is used only
        // sealed and with the checked bytes (a name proves nothing).
        const label = `gpures-${p.target}-${p.sha256.slice(0, 16)}`;
        const unlock = ops.lockProcess?.();
        let fd: number | undefined;
        try {
          fd = (ops.findMemfds?.(label, procDir) ?? []).find((found) => {
            const bytes = ops.read(`${procDir}/${found}`, p.bytes.length, true);
            return bytes !== undefined && bytes.length === p.bytes.length &&
              hashSync(bytes) === p.sha256;
          });
          fd ??= ops.memfd(label, p.bytes);
        } finally {
          unlock?.();
        }
        if (fd !== undefined) {
          return {
            path: `${procDir}/${fd}`,
            label: `the prebuilt library for ${p.target} (in a memfd)`,
            done: () => {},
          };
        }
        notes.push("a memfd (memfd_create is missing from the C library)");
      } catch (e) {
        notes.push(`a memfd (${(e as Error).message})`);
      }
    }
  }
  const dir = options.cacheDir;
  if (!dir) {
    throw new Error(
      "no cache folder to write it to (set GPURES_CACHE_DIR, or HOME / LOCALAPPDATA)",
    );
  }
  const final = `${dir}/prebuilt-${p.sha256.slice(0, 16)}/${p.fileName}`;
  const label = `the prebuilt library for ${p.target} (cached as "${final}")`;
  const folder = final.slice(0, final.lastIndexOf("/"));
  const existing = ops.read(final, p.bytes.length);
  if (existing) {
    const got = hashSync(existing);
    if (got === p.sha256) return { path: final, label, done: () => {} };
    notes.push(
      `the cached "${final}" (refused: its bytes hash to ${got}, not ${p.sha256}; replaced)`,
    );
  }
  ops.mkdirp(folder);
  const temp = `${folder}/.${p.fileName}.${crypto.randomUUID()}.tmp`;
  try {
    ops.write(temp, p.bytes);
    const written = ops.read(temp, p.bytes.length);
    const got = written ? hashSync(written) : undefined;
    if (got !== p.sha256) {
      throw new Error(`"${temp}" reads back with hash ${got}, not ${p.sha256} (disk full?)`);
    }
    ops.rename(temp, final);
  } catch (e) {
    try {
      ops.remove(temp);
    } catch { /* the first error is the one to report */ }
    throw e;
  }
  return { path: final, label, done: () => {} };
}
