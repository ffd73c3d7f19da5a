// Leaks and misuse at scale, in a process of their own (CI runs every file of
// tests/isolated/ alone, so the fd count and RSS are this file's only):
//   - 100k DmaBufHandle and 100k VkOpaqueFd create/release cycles leave the
//     process's open fd count where it was;
//   - 1M create/release cycles keep RSS within +20 MB after a warm-up;
//   - misuse of every kind, not only the few tests/hostile_input_test.ts
//     picks: hostile values in every descriptor field, double release and use
//     after release, forged raw handles and wrong-kind calls. Each gets a
//     typed GpuResourceError and leaves every other handle intact; none
//     crashes the process.
// Run with --v8-flags=--expose-gc (as .ci/run does) for the tightest RSS
// figure; without it the test relies on V8's own collections.

import assert from "node:assert/strict";
import { KINDS } from "../../ffi/gen/kinds.ts";
import {
  CpuBytes,
  CpuSharedSlot,
  DmaBufHandle,
  GpuResource,
  GpuResourceError,
  InvalidHandleError,
  liveHandles,
  ReleasedError,
  UnsupportedPlatformError,
  VkImage,
  VkOpaqueFd,
  WrongKindError,
} from "../../mod.ts";
import {
  CLASSES,
  fixture,
  FIXTURES,
  gate,
  type KindName,
  validDesc,
} from "../_support/fixtures.ts";
import { close, countOpenFds, isOpen, memfd } from "../_support/libc.ts";

type Desc = Record<string, unknown>;
type Kind = {
  readonly kindId: number;
  readonly name: string;
  create(desc: never, options?: never): GpuResource<unknown>;
  fromRaw(handle: bigint): GpuResource<unknown>;
};

const MB = 1024 * 1024;
const gc = (globalThis as { gc?: () => void }).gc;

/** One memfd every fd of the descriptors below names (duplicated, never adopted). */
const memory = memfd(64 * 1024);

/** A valid descriptor of every kind except WgpuTexture (that needs a GPUTexture). */
/**
 * A kind's valid descriptor over the test's memfd; a SyncPoint's fence fd
 * (an eventfd, a declared sync_file) is opened once here, before any test
 * counts fds, and reused.
 */
function validOf(name: KindName): () => Desc {
  const once = fixture(name, { fds: [memory, memory] });
  if (once.fds.length === 0) return () => fixture(name, { fds: [memory, memory] }).desc;
  return () => once.desc;
}

const kinds: [Kind, () => Desc][] = (Object.keys(FIXTURES) as KindName[])
  .filter((name) => name !== "WgpuTexture")
  .map((name) => [CLASSES[name] as unknown as Kind, validOf(name)]);
const supported = kinds.filter(([cls]) => GpuResource.isSupported(cls.name as never));

function rss(): number {
  gc?.();
  gc?.();
  return Deno.memoryUsage().rss;
}

/** Runs `fn`; it must throw a GpuResourceError of `Class` (any subclass when omitted). */
function assertTyped(fn: () => unknown, Class = GpuResourceError, label = ""): GpuResourceError {
  let caught: unknown;
  try {
    const made = fn();
    if (made instanceof GpuResource) made.release();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof Class, `${label}: expected ${Class.name}, got ${caught}`);
  const e = caught as GpuResourceError;
  assert.equal(typeof e.code, "string", `${label}: code`);
  assert.ok(e.message.length > 0, `${label}: message`);
  return e;
}

function show(v: unknown): string {
  if (typeof v === "bigint") return `${v}n`;
  if (typeof v === "symbol" || typeof v === "function") return String(v);
  if (v !== null && typeof v === "object") return Object.prototype.toString.call(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return Object.prototype.toString.call(v);
  }
}

// ------------------------------------------------------------------ fd counts

Deno.test("100k DmaBufHandle and 100k VkOpaqueFd create/release cycles leave the fd count unchanged", () => {
  const fds = countOpenFds();
  const live = liveHandles();
  const dma = kinds.find(([cls]) => cls.name === "DmaBufHandle")![1]();
  const opaque = kinds.find(([cls]) => cls.name === "VkOpaqueFd")![1]();
  for (let i = 0; i < 100_000; i++) {
    const frame = DmaBufHandle.create(dma as never);
    if (i % 64 === 0) { // clones and importers' duplicates come and go too
      const copy = frame.clone();
      close(copy.dupFd(0));
      frame.release();
      copy.release();
    } else {
      frame.release();
    }
    const memoryHandle = VkOpaqueFd.create(opaque as never);
    if (i % 64 === 0) close(memoryHandle.dupFd());
    memoryHandle.release();
    if (i % 1000 === 0) { // adopted fds are closed by the last release
      const adopted = memfd(65536);
      VkOpaqueFd.create({ ...opaque, fd: adopted } as never, { takeOwnership: true }).release();
      assert.ok(!isOpen(adopted), "the adopted fd was closed by the last release");
      const refused = memfd(1024); // too small for the planes: refused, and still the caller's
      assertTyped(
        () =>
          DmaBufHandle.create({ ...dma, fds: [refused, refused] } as never, {
            takeOwnership: true,
          }),
        InvalidHandleError,
      );
      assert.ok(isOpen(refused), "a refused create leaves the caller's fd open");
      close(refused);
    }
  }
  assert.equal(liveHandles(), live);
  const after = countOpenFds();
  console.log(`open fds: ${fds} before, ${after} after 200k fd-owning handles`);
  assert.equal(after, fds, "open fds before and after 200k handles");
});

// ------------------------------------------------------------------------ RSS

Deno.test("1M create/release cycles keep RSS within +20 MB after a warm-up", () => {
  const desc = validDesc("CpuSharedSlot");
  const bytes = validDesc("CpuBytes");
  const cycles = (n: number) => {
    for (let i = 0; i < n; i++) {
      const slot = CpuSharedSlot.create(desc as never);
      if (i % 16 === 0) { // a keep-alive's bookkeeping and a clone, now and then
        slot.clone().release();
        CpuBytes.create(bytes as never, { keepAlive: { release() {} } }).release();
      }
      slot.release();
    }
  };
  const live = liveHandles();
  // Warm-up: JIT, the handle table, V8's heap. Without --expose-gc the heap is a
  // sawtooth between V8's own collections, so the base is the highest of three samples.
  let base = 0;
  for (let batch = 0; batch < 3; batch++) {
    cycles(100_000);
    base = Math.max(base, rss());
  }
  let peak = base;
  for (let batch = 0; batch < 10; batch++) {
    cycles(100_000);
    peak = Math.max(peak, rss());
  }
  const grown = (peak - base) / MB;
  console.log(
    `RSS ${(base / MB).toFixed(1)} MB after warm-up, peak ${(peak / MB).toFixed(1)} MB ` +
      `over 1M cycles (+${grown.toFixed(1)} MB)${gc ? "" : " (no --expose-gc)"}`,
  );
  assert.ok(grown < 20, `RSS grew by ${grown.toFixed(1)} MB`);
  assert.equal(liveHandles(), live);
});

// ------------------------------------------------------------- hostile fields

const hostile: unknown[] = [
  -1,
  -0.5,
  0.5,
  NaN,
  Infinity,
  -Infinity,
  2 ** 31,
  2 ** 32,
  2 ** 53 + 2,
  2 ** 64,
  Number.MAX_VALUE,
  -1n,
  1n << 63n,
  1n << 64n,
  "",
  "1",
  "NV12",
  true,
  null,
  undefined, // the field removed
  {},
  [],
  [1, 2, 3, 4, 5],
  Symbol("hostile"),
  () => 1,
  new Uint8Array(3),
  new ArrayBuffer(8),
  new Date(0),
  Object.create(null),
  { valueOf: () => 1, toString: () => "1" },
];

/** Every field path of a descriptor: top-level keys, members of groups and of array entries. */
function paths(desc: Desc): string[][] {
  const out: string[][] = [];
  for (const [key, value] of Object.entries(desc)) {
    out.push([key]);
    if (Array.isArray(value)) {
      value.forEach((entry, i) => {
        out.push([key, String(i)]);
        if (entry && typeof entry === "object") {
          for (const member of Object.keys(entry)) out.push([key, String(i), member]);
        }
      });
    } else if (value && typeof value === "object" && !ArrayBuffer.isView(value)) {
      for (const member of Object.keys(value)) out.push([key, member]);
    }
  }
  return out;
}

/** A copy of plain objects and arrays; buffers, pointers and primitives stay themselves. */
function copyOf(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(copyOf);
  if (v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, copyOf(x)]));
  }
  return v;
}

/** A copy of `desc` with the value at `path` replaced (or removed, for undefined). */
function mutate(desc: Desc, path: string[], value: unknown): Desc {
  const copy = copyOf(desc) as Desc;
  let target = copy as Record<string, unknown>;
  for (const step of path.slice(0, -1)) target = target[step] as Record<string, unknown>;
  const last = path[path.length - 1];
  if (value === undefined) delete target[last];
  else target[last] = value;
  return copy;
}

Deno.test("every kind: a hostile value in any field is a typed error or accepted, never a crash or a leak", () => {
  const fds = countOpenFds();
  const live = liveHandles();
  let refused = 0, accepted = 0;
  for (const [cls, valid] of kinds) {
    const desc = valid();
    for (const path of paths(desc)) {
      for (const value of hostile) {
        const label = `${cls.name} ${path.join(".")} = ${show(value)}`;
        let made: GpuResource<unknown> | undefined;
        try {
          made = cls.create(mutate(desc, path, value) as never);
          accepted++;
        } catch (e) {
          assert.ok(e instanceof GpuResourceError, `${label}: threw ${e}`);
          assert.ok(e.message.length > 0, `${label}: an empty message`);
          if (!GpuResource.isSupported(cls.name as never)) {
            assert.ok(e instanceof UnsupportedPlatformError, `${label}: ${e}`);
          } else {
            assert.ok(e instanceof InvalidHandleError, `${label}: ${e}`);
            assert.ok(e.field.length > 0, `${label}: no field named (${e.message})`);
          }
          refused++;
        } finally {
          made?.release();
        }
      }
    }
  }
  console.log(`${refused} hostile descriptors refused with a typed error, ${accepted} accepted`);
  assert.ok(refused > 1000, `${refused} refusals`);
  assert.ok(accepted > 0, `${accepted} accepted`);
  assert.equal(liveHandles(), live, "no handle left alive");
  assert.equal(countOpenFds(), fds, "no fd left open");
});

// ------------------------------------------- release, use after release, forging

const operations: [string, (r: GpuResource<unknown>) => unknown][] = [
  ["describe()", (r) => r.describe()],
  ["clone()", (r) => r.clone()],
  ["toJSON()", (r) => r.toJSON()],
  ["refcount", (r) => r.refcount],
  ["unsafeHandle", (r) => r.unsafeHandle],
  ["intoRaw()", (r) => r.intoRaw()],
  ["markConsumed()", (r) => r.markConsumed()],
];

Deno.test("every kind: double release is a no-op and every use after release throws ReleasedError", () => {
  const live = liveHandles();
  for (const [cls, valid] of supported) {
    const frame = cls.create(valid() as never);
    const raw = frame.unsafeHandle;
    frame.release();
    frame.release();
    frame[Symbol.dispose]();
    assert.ok(frame.released);
    for (const [name, operation] of operations) {
      const e = assertTyped(() => operation(frame), ReleasedError, `${cls.name}.${name}`);
      assert.equal(e.code, "STALE");
    }
    const withFd = frame as unknown as { dupFd?: (i?: number) => number };
    if (typeof withFd.dupFd === "function") assertTyped(() => withFd.dupFd!(0), ReleasedError);
    const withSlot = frame as unknown as { slotRelease?: () => void };
    if (typeof withSlot.slotRelease === "function") {
      assertTyped(() => withSlot.slotRelease!(), ReleasedError);
    }
    assertTyped(() => GpuResource.fromRaw(raw), ReleasedError, `${cls.name}: fromRaw of released`);
    assertTyped(() => cls.fromRaw(raw), ReleasedError, `${cls.name}.fromRaw of released`);
  }
  assert.equal(gate[0], 0n, "a released VkImage never wrote its gate");
  assert.equal(liveHandles(), live);
});

Deno.test("every kind: forged raw handles (another kind byte, a nearby generation) throw ReleasedError", () => {
  const live = liveHandles();
  const handles = supported.map(([cls, valid]) => cls.create(valid() as never));
  const before = handles.map((h) => JSON.stringify(h.toJSON()));
  const raws = new Set(handles.map((h) => h.unsafeHandle));
  for (const h of handles) {
    const raw = h.unsafeHandle;
    const forged: bigint[] = [];
    for (let kind = 0n; kind < 256n; kind++) forged.push((raw & ~(0xffn << 24n)) | (kind << 24n));
    for (const delta of [1n, 2n, 0xffffffffn]) {
      forged.push((raw + (delta << 32n)) & 0xffff_ffff_ffff_ffffn);
    }
    forged.push(raw & 0xffffffffn); // generation 0
    for (const value of forged) {
      if (raws.has(value)) continue;
      const e = assertTyped(() => GpuResource.fromRaw(value), GpuResourceError, `forged ${value}`);
      assert.ok(
        e instanceof ReleasedError || (e instanceof InvalidHandleError && e.field === "handle"),
        `forged ${value}: ${e}`,
      );
    }
  }
  handles.forEach((h, i) => {
    assert.equal(h.refcount, 1, `${h.kind}: untouched`);
    assert.equal(JSON.stringify(h.toJSON()), before[i]);
    h.release();
  });
  assert.equal(liveHandles(), live);
});

Deno.test("every kind: fromRaw() of every other kind, dupFd() and slotRelease() borrowed across kinds throw WrongKindError", () => {
  const live = liveHandles();
  const handles = supported.map(([cls, valid]) => cls.create(valid() as never));
  let refused = 0;
  for (const [cls] of supported) {
    for (const h of handles) {
      if (h.kindId === cls.kindId) continue;
      let adopted: GpuResource<unknown> | undefined;
      try {
        assertTyped(
          () => {
            adopted = cls.fromRaw(h.unsafeHandle);
          },
          WrongKindError,
          `${cls.name}.fromRaw(${h.kind})`,
        );
      } finally {
        adopted?.intoRaw(); // never: but if it were, the reference is h's
      }
      refused++;
    }
  }
  const dupFd = DmaBufHandle.prototype.dupFd;
  const slotRelease = VkImage.prototype.slotRelease;
  for (const h of handles) {
    // Every kind that owns an fd can give a copy (SyncFile, CpuFence, ... too).
    if (KINDS[h.kindId - 1].ownership !== 1) {
      assertTyped(() => dupFd.call(h as never, 0), WrongKindError, `dupFd on ${h.kind}`);
    }
    if (h.kind !== "VkImage" && h.kind !== "VkOpaqueFd" && h.kind !== "CudaVmmFd") {
      assertTyped(() => slotRelease.call(h as never), WrongKindError, `slotRelease on ${h.kind}`);
    }
  }
  assert.ok(refused >= supported.length * (supported.length - 1));
  for (const h of handles) {
    assert.equal(h.refcount, 1, `${h.kind}: untouched`);
    h.release();
  }
  assert.equal(liveHandles(), live);
});

Deno.test("the shared memfd is closed last", () => {
  assert.ok(close(memory));
});
