// tools/fixtures.ts resolved for the Deno tests: fresh descriptors whose
// memfds the test closes, the kind classes, and WebGPU for WgpuTexture.
//
//   using f = fixture("DmaBufHandle");           // the valid descriptor
//   DmaBufHandle.create(f.desc);                 // f's memfds close at scope end
//   fixture("DmaBufHandle", { shape: "rgba", fds: [fd] })   // a named shape, given fds
//   fixture("CpuBytes", { change })              // the valid descriptor with a change
//   rgbaFrame(fd), patternedFrame(seed)          // the RGBA frame most fd tests map and send

import * as gpures from "../../mod.ts";
import {
  applyChange,
  type Change,
  type Descs,
  type Env,
  FIXTURES,
  type KindName,
  resolve,
  textureDescriptor,
  type TextureShape,
} from "../../tools/fixtures.ts";
import { close, eventFd, memfd, pipeReadEnd, writeAt } from "./libc.ts";

export { type Change, FIXTURES, type KindName };

let hooks: { gpures__test_fence_fd_as(fd: number, type: number): void } | undefined;

/**
 * Declares a memfd a sync_file (1) or a syncobj (3) to the library's test
 * hook: no kernel here makes either without a GPU, and the kinds' shared
 * contract (create, clone, describe, release) needs one.
 */
export function declareFence(fd: number, type: number): void {
  hooks ??= Deno.dlopen(gpures.load().path, {
    gpures__test_fence_fd_as: { parameters: ["i32", "i32"], result: "void" },
  }).symbols;
  hooks.gpures__test_fence_fd_as(fd, type);
}

/** A kind's class, as the tests use it. */
export interface KindClass {
  readonly kindId: number;
  create(desc: never, options?: gpures.FdCreateOptions): gpures.GpuResource<unknown>;
}

/** Every kind's class, by name. */
export const CLASSES: Readonly<Record<KindName, KindClass>> = Object.fromEntries(
  Object.keys(FIXTURES).map((name) => [name, (gpures as Record<string, unknown>)[name]]),
) as Record<KindName, KindClass>;

/** The 64-bit word the fixtures' slot-release gates point at. */
export const gate = new BigUint64Array(1);

let webgpu: GPUDevice | undefined;

/**
 * Opens a WebGPU device for the texture() placeholder; returns why WebGPU
 * tests skip ("" when they run). Only tests of WgpuTexture call it: a device
 * alive next to a Worker can corrupt Deno 2.9.6's heap at exit.
 */
export async function openWebGpu(): Promise<string> {
  try {
    const adapter = await navigator.gpu?.requestAdapter();
    webgpu = await adapter?.requestDevice();
    return webgpu ? "" : "no WebGPU adapter";
  } catch (e) {
    return `WebGPU failed: ${(e as Error).message}`;
  }
}

const textures = new Map<string, GPUTexture>();

function textureOf(shape: TextureShape): GPUTexture | undefined {
  const key = JSON.stringify(shape, (_, v) => typeof v === "bigint" ? String(v) : v);
  let texture = textures.get(key);
  if (!texture && webgpu) {
    texture = webgpu.createTexture(textureDescriptor(shape));
    textures.set(key, texture);
  }
  return texture;
}

/** A fixture's descriptor and the fds made for it, closed when it is disposed. */
export interface Fixture extends Disposable {
  desc: Record<string, unknown>;
  /** The fds made for this descriptor (not the ones the caller gave). */
  fds: number[];
}

/** What {@link fixture} makes. */
export interface FixtureOptions {
  /** A named shape of tools/fixtures.ts instead of the valid descriptor. */
  shape?: string;
  /** A change applied to the valid descriptor. */
  change?: Change;
  /** fds to use, in order, instead of new memfds. */
  fds?: number[];
}

/** A fresh descriptor of `kind`'s fixtures (see the top of the file). */
export function fixture(kind: KindName, options: FixtureOptions = {}): Fixture {
  const made: number[] = [];
  const given = [...(options.fds ?? [])];
  const env: Env = {
    memfd: (size) => {
      if (given.length) return given.shift()!;
      const fd = memfd(size);
      made.push(fd);
      return fd;
    },
    pipe: () => {
      const fd = pipeReadEnd();
      made.push(fd);
      return fd;
    },
    closedFd: () => {
      const fd = memfd(16);
      close(fd);
      return fd;
    },
    fence: (type) => {
      const fd = type === "eventfd" ? eventFd() : memfd(16);
      if (type !== "eventfd") declareFence(fd, type === "syncFile" ? 1 : 3);
      made.push(fd);
      return fd;
    },
    gate: (offset) => Deno.UnsafePointer.offset(Deno.UnsafePointer.of(gate)!, offset),
    texture: textureOf,
  };
  const fixtures = FIXTURES[kind];
  const source = options.shape
    ? (fixtures.shapes as Record<string, unknown> | undefined)?.[options.shape]
    : fixtures.valid;
  if (source === undefined) throw new Error(`${kind} has no shape "${options.shape}"`);
  const desc = resolve(source, env) as Record<string, unknown>;
  if (options.change) applyChange(desc, options.change, env);
  return {
    desc,
    fds: made,
    [Symbol.dispose]() {
      for (const fd of made) close(fd);
    },
  };
}

/** A valid descriptor of `kind` without fds (for kinds that own none). */
export function validDesc(kind: KindName): Record<string, unknown> {
  const f = fixture(kind);
  if (f.fds.length) throw new Error(`${kind}'s fixture opens fds: use fixture() and dispose it`);
  return f.desc;
}

/** Bytes of the RGBA frame (tools/fixtures.ts's DmaBufHandle "rgba": 32x32 AB24, one object). */
export const RGBA_FRAME_BYTES = 32 * 32 * 4;

/** The RGBA frame's descriptor over `fd` (RGBA_FRAME_BYTES or more). */
export function rgbaDesc(fd: number): gpures.DmaBufHandleDesc {
  return fixture("DmaBufHandle", { shape: "rgba", fds: [fd] }).desc as never;
}

/** A DmaBufHandle of the RGBA frame over `fd` (duplicated, or adopted with takeOwnership). */
export function rgbaFrame(fd: number, options?: gpures.FdCreateOptions): gpures.DmaBufHandle {
  return gpures.DmaBufHandle.create(rgbaDesc(fd), options);
}

/** The RGBA frame over a new memfd whose bytes are seed + offset; the handle holds the only fd. */
export function patternedFrame(seed: number): gpures.DmaBufHandle {
  const fd = memfd(RGBA_FRAME_BYTES);
  writeAt(fd, new Uint8Array(RGBA_FRAME_BYTES).map((_, i) => (seed + i) & 0xff), 0);
  try {
    return rgbaFrame(fd);
  } finally {
    close(fd);
  }
}

/** `kind`'s valid descriptor, typed as its class's create() takes it (kinds without fds). */
export function valid<K extends KindName>(kind: K): Descs[K] {
  return validDesc(kind) as unknown as Descs[K];
}

/** `kind`'s change named `what`. */
export function changeOf(kind: KindName, what: string): Change {
  const change = FIXTURES[kind].changes?.find((c) => c.what === what);
  if (!change) throw new Error(`${kind} has no change "${what}"`);
  return change;
}
