// Hostile input: every bad value gets a typed error naming the field, never
// a crash, a bare TypeError or a leaked handle; forged and stale handles are
// reported, never reached.

import assert from "node:assert/strict";
import {
  CpuSharedSlot,
  DmaBufHandle,
  GpuResource,
  InvalidHandleError,
  liveHandles,
  ReleasedError,
  VkBufferHandle,
  VkImage,
  WrongKindError,
} from "../mod.ts";
import { CLASSES, fixture, validDesc } from "./_support/fixtures.ts";
import { close, memfd } from "./_support/libc.ts";

type Create = (desc: Record<string, unknown>) => GpuResource<unknown>;
type Desc = Record<string, unknown>;

/**
 * Asserts that `fn` throws `Class` with `code` and `field`, and that no
 * handle was left alive by it.
 */
function assertRefused(
  fn: () => unknown,
  field: string,
  { code = "INVALID_VALUE", Class = InvalidHandleError, label = "" } = {},
): void {
  const before = liveHandles();
  let made: unknown;
  assert.throws(() => {
    made = fn();
  }, (e: unknown) => {
    assert.ok(e instanceof Class, `${label}: expected ${Class.name}, got ${e}`);
    assert.equal(e.code, code, `${label}: code`);
    assert.equal(e.field, field, `${label}: field`);
    return true;
  });
  if (made instanceof GpuResource) made.release();
  assert.equal(liveHandles(), before, `${label}: no handle left alive`);
}

/** Runs `fn`, then checks it left the live handle count where it found it. */
function noLeak(fn: () => void): void {
  const before = liveHandles();
  fn();
  assert.equal(liveHandles(), before, "every handle made was released");
}

/** A copy of `desc` with `key` set to `value` (or removed, for undefined). */
function withField(desc: Desc, key: string, value: unknown): Desc {
  const out = { ...desc };
  if (value === undefined) delete out[key];
  else out[key] = value;
  return out;
}

function show(v: unknown): string {
  if (typeof v === "bigint") return `${v}n`;
  if (typeof v === "symbol" || typeof v === "function") return String(v);
  if (v instanceof Uint8Array) return `Uint8Array(${v.length})`;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return Object.prototype.toString.call(v);
  }
}

// Valid descriptors (tools/fixtures.ts), one per kind under test; each test breaks one field.

const vkBuffer = validDesc("VkBufferHandle");
const glTexture = validDesc("GlTextureHandle");
const cpuSlot = validDesc("CpuSharedSlot");
const vkImage = validDesc("VkImage");
const openCl = validDesc("OpenClMem");
const vaapi = validDesc("VaapiSurface");
const cudaSurface = validDesc("CudaSurface");
const cpuPtr = fixture("CpuBytes", { shape: "address" }).desc;
/** A one-object DmaBufHandle descriptor (a 32x32 RGBA frame) over `fd`, 4096 bytes or more. */
const frameOver = (fd: number) => fixture("DmaBufHandle", { shape: "rgba", fds: [fd] }).desc;

/** The kinds under test, each one's create(). */
const KINDS_UNDER_TEST = [
  "VkBufferHandle",
  "GlTextureHandle",
  "GlBufferHandle",
  "CpuSharedSlot",
  "VkImage",
  "OpenClMem",
  "VaapiSurface",
  "CudaSurface",
  "CudaPtr2D",
  "CpuBytes",
  "CpuPlanes",
  "DmaBufHandle",
  "VkOpaqueFd",
] as const;
type UnderTest = (typeof KINDS_UNDER_TEST)[number];
const create = Object.fromEntries(
  KINDS_UNDER_TEST.map((name) => [name, (d: Desc) => CLASSES[name].create(d as never)]),
) as Record<UnderTest, Create>;

/** The valid descriptors the field lists below break. */
const valid: Partial<Record<UnderTest, Desc>> = {
  GlTextureHandle: glTexture,
  CpuSharedSlot: cpuSlot,
  VkImage: vkImage,
  VaapiSurface: vaapi,
  CudaSurface: cudaSurface,
  VkBufferHandle: vkBuffer,
  CpuBytes: cpuPtr,
  OpenClMem: openCl,
};

/** [create, valid descriptor, field] of each "Kind.field". */
function fieldsOf(...paths: `${UnderTest}.${string}`[]): [Create, Desc, string][] {
  return paths.map((path) => {
    const [kind, field] = path.split(".") as [UnderTest, string];
    return [create[kind], valid[kind]!, field];
  });
}

/** Fields of each scalar type. */
const u32Fields = fieldsOf(
  "GlTextureHandle.name",
  "CpuSharedSlot.rowPitch",
  "VkImage.rowPitch",
  "VkImage.vkFormat",
  "VaapiSurface.surface",
  "CudaSurface.width",
);
const u64Fields = fieldsOf(
  "VkBufferHandle.size",
  "VkBufferHandle.buffer",
  "CpuSharedSlot.size",
  "VkImage.image",
  "CudaSurface.surface",
  "CpuBytes.size",
);
const pointerFields = fieldsOf(
  "VkImage.device",
  "VkBufferHandle.device",
  "OpenClMem.mem",
  "OpenClMem.queue",
  "VaapiSurface.display",
  "CpuBytes.ptr",
  "GlTextureHandle.context",
);

const symbol = Symbol("hostile");
const notNumbers: unknown[] = ["16", "", true, null, {}, [], [16], symbol, () => 16, new Date(0)];

// ------------------------------------------------------------------- numbers

Deno.test("a u32 field refuses negative, fractional, non-finite and too large numbers", () => {
  const bad = [-1, -0.5, 1.5, NaN, Infinity, -Infinity, 2 ** 32, 2 ** 53 + 2, Number.MAX_VALUE];
  for (const [make, desc, field] of u32Fields) {
    for (const value of bad) {
      assertRefused(() => make(withField(desc, field, value)), field, {
        label: `${field} = ${value}`,
      });
    }
  }
});

Deno.test("a u32 field refuses strings, booleans, null, objects, arrays, symbols and functions", () => {
  for (const [make, desc, field] of u32Fields) {
    for (const value of notNumbers) {
      if (value === null && field === "vkFormat") continue; // optional: null means absent
      assertRefused(() => make(withField(desc, field, value)), field, {
        label: `${field} = ${show(value)}`,
      });
    }
  }
});

Deno.test("a u32 field refuses bigints outside 0..2^32-1", () => {
  for (const [make, desc, field] of u32Fields) {
    for (const value of [-1n, 1n << 32n, 1n << 64n]) {
      assertRefused(() => make(withField(desc, field, value)), field, {
        label: `${field} = ${value}n`,
      });
    }
  }
});

Deno.test("a u32 field takes 0..2^32-1 (the refusals above are not blanket ones)", () => {
  noLeak(() => {
    using slot = CpuSharedSlot.create({ size: 1n, rowPitch: 2 ** 32 - 1, format: "NV12" });
    assert.equal(slot.describe().rowPitch, 2 ** 32 - 1);
  });
});

Deno.test("a u64 field refuses negative, fractional, non-finite and unsafe numbers", () => {
  // Past 2^53 a number has already lost digits: only a bigint is exact there.
  const bad = [-1, 1.5, NaN, Infinity, -Infinity, 2 ** 53, 2 ** 53 + 2, 2 ** 64];
  for (const [make, desc, field] of u64Fields) {
    for (const value of bad) {
      assertRefused(() => make(withField(desc, field, value)), field, {
        label: `${field} = ${value}`,
      });
    }
  }
});

Deno.test("a u64 field refuses bigints outside 0..2^64-1", () => {
  for (const [make, desc, field] of u64Fields) {
    for (const value of [-1n, 1n << 64n, -(1n << 64n)]) {
      assertRefused(() => make(withField(desc, field, value)), field, {
        label: `${field} = ${value}n`,
      });
    }
  }
});

Deno.test("a u64 field refuses strings, booleans, null, objects, arrays, symbols and functions", () => {
  for (const [make, desc, field] of u64Fields) {
    for (const value of notNumbers) {
      assertRefused(() => make(withField(desc, field, value)), field, {
        label: `${field} = ${show(value)}`,
      });
    }
  }
});

Deno.test("a u64 field takes safe integers and bigints up to 2^64-1", () => {
  noLeak(() => {
    using a = VkBufferHandle.create({ buffer: Number.MAX_SAFE_INTEGER, size: (1n << 64n) - 1n });
    assert.equal(a.describe().buffer, BigInt(Number.MAX_SAFE_INTEGER));
    assert.equal(a.describe().size, (1n << 64n) - 1n);
  });
});

Deno.test("an fd field refuses numbers outside the int32 range and non-numbers", () => {
  using f = fixture("VkOpaqueFd");
  for (const value of [2 ** 31, -(2 ** 31) - 1, 0.5, NaN, "3", null, {}, 3n ** 40n]) {
    assertRefused(() => create.VkOpaqueFd(withField(f.desc, "fd", value)), "fd", {
      label: `fd = ${show(value)}`,
    });
  }
});

Deno.test("a boolean field refuses 1, 0, strings and null", () => {
  using f = fixture("VkOpaqueFd");
  for (const value of [1, 0, "true", "false", null, {}]) {
    assertRefused(() => create.VkOpaqueFd(withField(f.desc, "dedicated", value)), "dedicated", {
      label: `dedicated = ${show(value)}`,
    });
  }
});

// ------------------------------------------------------------------ pointers

Deno.test("a pointer field refuses numbers, even 0 and small integers", () => {
  for (const [make, desc, field] of pointerFields) {
    for (const value of [0, 4096, -1, 1.5, NaN, 2 ** 53 + 2]) {
      assertRefused(() => make(withField(desc, field, value)), field, {
        label: `${field} = ${value}`,
      });
    }
  }
});

Deno.test("a pointer field refuses strings, booleans, symbols and out-of-range bigints", () => {
  for (const [make, desc, field] of pointerFields) {
    for (const value of ["0x1000", true, symbol, () => 1, -1n, 1n << 64n]) {
      assertRefused(() => make(withField(desc, field, value)), field, {
        label: `${field} = ${show(value)}`,
      });
    }
  }
});

Deno.test({
  name: "a pointer field refuses plain objects, arrays and dates with InvalidHandleError",
  fn() {
    for (const [make, desc, field] of pointerFields) {
      for (const value of [{}, [], [4096], new Date(0), new Uint8Array(8)]) {
        assertRefused(() => make(withField(desc, field, value)), field, {
          label: `${field} = ${show(value)}`,
        });
      }
    }
  },
});

Deno.test("a pointer field takes a Deno.PointerValue, a bigint address, or null when optional", () => {
  noLeak(() => {
    const gate = new BigUint64Array(1);
    const pointer = Deno.UnsafePointer.of(gate);
    using image = VkImage.create({ image: 1n, rowPitch: 0, device: pointer, instance: null });
    const d = image.describe();
    assert.equal(d.device, BigInt(Deno.UnsafePointer.value(pointer)));
    assert.equal(d.instance, null);
  });
});

Deno.test("a pointer object reused across creates keeps its own address, and a refused one stays refused", () => {
  noLeak(() => {
    const pointers = [new BigUint64Array(1), new BigUint64Array(1)].map((b) =>
      Deno.UnsafePointer.of(b)
    );
    const other = Deno.UnsafePointer.create(0x1000n);
    for (let round = 0; round < 3; round++) {
      for (const [device, instance] of [[pointers[0], pointers[1]], [pointers[1], other]]) {
        using image = VkImage.create({ image: 1n, rowPitch: 0, device, instance });
        const d = image.describe();
        assert.equal(d.device, BigInt(Deno.UnsafePointer.value(device)), `round ${round}`);
        assert.equal(d.instance, BigInt(Deno.UnsafePointer.value(instance)), `round ${round}`);
      }
    }
    const notAPointer = {};
    for (let round = 0; round < 2; round++) {
      assertRefused(
        () => VkImage.create({ image: 1n, rowPitch: 0, device: notAPointer as never }),
        "device",
      );
    }
  });
});

// ---------------------------------------------------------------------- UUIDs

Deno.test("a UUID field refuses anything but a Uint8Array of 16 bytes", () => {
  const bad = [
    new Uint8Array(15),
    new Uint8Array(17),
    new Uint8Array(0),
    new Uint16Array(16),
    new Int8Array(16),
    new Uint8ClampedArray(16),
    new ArrayBuffer(16),
    new Array(16).fill(0),
    "00112233-4455-6677-8899-aabbccddeeff",
    1n,
    16,
    {},
  ];
  for (const value of bad) {
    assertRefused(() => create.VkBufferHandle({ ...vkBuffer, deviceUuid: value }), "deviceUuid", {
      label: `deviceUuid = ${Object.prototype.toString.call(value)} ${show(value)}`,
    });
    assertRefused(() => create.VkImage({ ...vkImage, deviceUuid: value }), "deviceUuid");
  }
});

Deno.test("a UUID field takes a 16-byte view into a larger buffer", () => {
  noLeak(() => {
    const bytes = Uint8Array.from({ length: 32 }, (_, i) => i);
    using buffer = VkBufferHandle.create(
      { ...vkBuffer, deviceUuid: bytes.subarray(8, 24) } as never,
    );
    assert.deepEqual((buffer as VkBufferHandle).describe().deviceUuid, bytes.slice(8, 24));
  });
});

// ---------------------------------------------------------------- enumerations

Deno.test("an enumeration field refuses unknown names, wrong case and Object.prototype keys", () => {
  const names = [
    "NV13",
    "nv12",
    "",
    " NV12",
    "toString",
    "__proto__",
    "constructor",
    "hasOwnProperty",
  ];
  for (const name of names) {
    assertRefused(() => create.CpuSharedSlot({ ...cpuSlot, format: name }), "format", {
      label: `format = ${show(name)}`,
    });
    assertRefused(() => create.GlTextureHandle({ ...glTexture, target: name }), "target");
    assertRefused(
      () => create.GlTextureHandle({ ...glTexture, internalFormat: name }),
      "internalFormat",
    );
    assertRefused(() => create.CudaSurface({ ...cudaSurface, format: name }), "format");
  }
});

Deno.test("an enumeration field refuses numbers that name no value", () => {
  for (const value of [0, 49, 2 ** 32 - 1, -1, 2 ** 32, 1.5, NaN]) {
    assertRefused(() => create.CpuSharedSlot({ ...cpuSlot, format: value }), "format", {
      label: `format = ${value}`,
    });
  }
  for (const value of [1, 0x0de0, /* GL_TEXTURE_1D */ 0x8892 /* a buffer target */]) {
    assertRefused(() => create.GlTextureHandle({ ...glTexture, target: value }), "target", {
      label: `target = ${value}`,
    });
  }
  assertRefused(() => create.GlBufferHandle({ name: 1, target: 0x0de1, size: 1n }), "target");
});

Deno.test("an enumeration field refuses booleans, null, objects and arrays", () => {
  for (const value of [true, null, {}, ["NV12"], symbol]) {
    assertRefused(() => create.CpuSharedSlot({ ...cpuSlot, format: value }), "format", {
      label: `format = ${show(value)}`,
    });
  }
});

// ------------------------------------------------------------ missing fields

Deno.test("a missing required field is named by its path", () => {
  const cases: [Create, Desc, string[]][] = [
    [create.VkBufferHandle, vkBuffer, ["buffer", "size"]],
    [create.GlTextureHandle, glTexture, ["name", "target", "internalFormat"]],
    [create.CpuSharedSlot, cpuSlot, ["size", "rowPitch", "format"]],
    [create.VkImage, vkImage, ["image", "rowPitch"]],
    [create.OpenClMem, openCl, ["mem", "queue", "rowPitch"]],
    [create.VaapiSurface, vaapi, ["surface", "display"]],
    [create.CudaSurface, cudaSurface, ["surface", "format", "width", "height"]],
    [create.CpuBytes, cpuPtr, ["ptr", "size", "rowPitch", "format"]],
  ];
  for (const [make, desc, fields] of cases) {
    for (const field of fields) {
      assertRefused(() => make(withField(desc, field, undefined)), field, {
        label: `without ${field}`,
      });
      assertRefused(() => make({ ...desc, [field]: undefined }), field, {
        label: `${field}: undefined`,
      });
    }
  }
});

Deno.test("a missing member of an optional group is named by its path", () => {
  const gate = new BigUint64Array(1);
  assertRefused(
    () => create.VkImage({ ...vkImage, slotRelease: { gate: Deno.UnsafePointer.of(gate) } }),
    "slotRelease.value",
  );
  assertRefused(
    () => create.VkImage({ ...vkImage, slotRelease: { value: 1n } }),
    "slotRelease.gate",
  );
  assertRefused(() => create.VkImage({ ...vkImage, slotRelease: 5 }), "slotRelease");
});

Deno.test("every required field of DmaBufHandle and VkOpaqueFd is named when missing", () => {
  using dma = fixture("DmaBufHandle");
  for (const field of Object.keys(dma.desc)) {
    assertRefused(() => create.DmaBufHandle(withField(dma.desc, field, undefined)), field, {
      label: `DmaBufHandle without ${field}`,
    });
  }
  using opaque = fixture("VkOpaqueFd");
  for (const field of Object.keys(opaque.desc)) {
    if (field === "slotRelease") continue; // optional
    assertRefused(() => create.VkOpaqueFd(withField(opaque.desc, field, undefined)), field, {
      label: `VkOpaqueFd without ${field}`,
    });
  }
});

Deno.test({
  name: "an optional number field given null is absent, as describe() reports it",
  fn() {
    noLeak(() => {
      using image = VkImage.create({
        image: 1n,
        rowPitch: 0,
        vkFormat: null,
        width: null,
        height: null,
      } as never);
      assert.equal(image.describe().width, null);
      using again = VkImage.create(image.describe() as never);
      assert.deepEqual(again.toJSON(), image.toJSON());
    });
  },
});

// ---------------------------------------------------------------- descriptors

Deno.test({
  name: "create() of a descriptor that is not an object throws InvalidHandleError on desc",
  fn() {
    for (const [name, make] of Object.entries(create)) {
      for (const value of [null, undefined, 5, "desc", true, 1n, symbol]) {
        assertRefused(() => make(value as never), "desc", {
          label: `${name}.create(${show(value)})`,
        });
      }
    }
  },
});

Deno.test("create() refuses an array and names the first missing field of an empty object", () => {
  assertRefused(() => create.VkBufferHandle([] as never), "desc");
  assertRefused(() => create.VkBufferHandle({}), "buffer");
  assertRefused(() => create.GlTextureHandle([1, 2, 3] as never), "desc");
});

Deno.test("create() ignores fields it does not know", () => {
  noLeak(() => {
    using slot = CpuSharedSlot.create({ ...cpuSlot, bogus: 1, kind: "VkImage" } as never);
    assert.equal(slot.kind, "CpuSharedSlot");
  });
});

Deno.test("create() takes null or a non-object as no options", () => {
  noLeak(() => {
    for (const options of [null, undefined, 5, "x"]) {
      CpuSharedSlot.create(cpuSlot as never, options as never).release();
    }
  });
});

// -------------------------------------------------------------------- arrays

Deno.test("DmaBufHandle.create() refuses planes that are not objects, by index", () => {
  const fd = memfd(4096);
  try {
    const desc = frameOver(fd);
    const plane = { objectIndex: 0, offset: 0, stride: 4 };
    assertRefused(() => create.DmaBufHandle({ ...desc, planes: [1] }), "planes[0]");
    assertRefused(() => create.DmaBufHandle({ ...desc, planes: [plane, null] }), "planes[1]");
    assertRefused(() => create.DmaBufHandle({ ...desc, planes: [plane, "x"] }), "planes[1]");
    assertRefused(() => create.DmaBufHandle({ ...desc, planes: plane }), "planes");
    assertRefused(() => create.DmaBufHandle({ ...desc, planes: "planes" }), "planes");
    assertRefused(
      () => create.DmaBufHandle({ ...desc, planes: [{ objectIndex: 0, stride: 4 }] }),
      "planes[0].offset",
    );
    assertRefused(
      () => create.DmaBufHandle({ ...desc, planes: [{ ...plane, stride: -4 }] }),
      "planes[0].stride",
    );
  } finally {
    close(fd);
  }
});

Deno.test("DmaBufHandle.create() refuses 0 or 5 planes, and 0 or 5 fds", () => {
  const fd = memfd(4096);
  try {
    const plane = { objectIndex: 0, offset: 0, stride: 128 };
    const desc = frameOver(fd);
    assertRefused(() => create.DmaBufHandle({ ...desc, planes: [] }), "planes");
    assertRefused(
      () => create.DmaBufHandle({ ...desc, planes: new Array(5).fill(plane) }),
      "planes",
    );
    assertRefused(
      () => create.DmaBufHandle({ ...desc, planes: new Array(1_000_000).fill(plane) }),
      "planes",
    );
    assertRefused(() => create.DmaBufHandle({ ...desc, fds: [] }), "fds");
    assertRefused(() => create.DmaBufHandle({ ...desc, fds: [fd, fd, fd, fd, fd] }), "fds");
    assertRefused(() => create.DmaBufHandle({ ...desc, fds: fd }), "fds");
    assertRefused(() => create.DmaBufHandle({ ...desc, fds: [fd, "4"] }), "fds[1]");
    assertRefused(() => create.DmaBufHandle({ ...desc, fds: [-1] }), "fds[0]");
  } finally {
    close(fd);
  }
});

Deno.test("CudaPtr2D.create() refuses 5 plane offsets and offsets that are not u64", () => {
  const desc: Desc = { ptr: 1n, rowPitch: 64 };
  assertRefused(
    () => create.CudaPtr2D({ ...desc, planeByteOffsets: [0n, 1n, 2n, 3n, 4n] }),
    "planeByteOffsets",
  );
  assertRefused(() => create.CudaPtr2D({ ...desc, planeByteOffsets: 7n }), "planeByteOffsets");
  assertRefused(
    () => create.CudaPtr2D({ ...desc, planeByteOffsets: [0n, -1n] }),
    "planeByteOffsets[1]",
  );
  assertRefused(
    () => create.CudaPtr2D({ ...desc, planeByteOffsets: ["0"] }),
    "planeByteOffsets[0]",
  );
});

Deno.test("CpuPlanes.create() refuses 5 planes, null planes and the wrong plane count", () => {
  const plane = { data: new Uint8Array(64), rowPitch: 16 };
  assertRefused(
    () => create.CpuPlanes({ format: "NV12", planes: new Array(5).fill(plane) }),
    "planes",
  );
  assertRefused(() => create.CpuPlanes({ format: "NV12", planes: [] }), "planes");
  assertRefused(() => create.CpuPlanes({ format: "NV12", planes: [plane] }), "planes");
  assertRefused(() => create.CpuPlanes({ format: "NV12", planes: [plane, null] }), "planes[1]");
  assertRefused(() => create.CpuPlanes({ format: "NV12", planes: 2 }), "planes");
  assertRefused(
    () => create.CpuPlanes({ format: "RgbaU8", planes: [{ data: "bytes", rowPitch: 16 }] }),
    "planes[0].data",
  );
  assertRefused(
    () => create.CpuPlanes({ format: "RgbaU8", planes: [{ ptr: null, size: 64, rowPitch: 16 }] }),
    "planes[0].data",
    { code: "NULL_POINTER" },
  );
});

Deno.test({
  name: "CpuPlanes.create() refuses a plane that is not an object, by index",
  fn() {
    for (const value of [5, "plane", true]) {
      assertRefused(
        () => create.CpuPlanes({ format: "NV12", planes: [value, value] }),
        "planes[0]",
        { label: show(value) },
      );
    }
  },
});

Deno.test("CpuBytes.create() refuses data that is not a fixed, non-empty buffer", () => {
  const detached = new ArrayBuffer(64);
  const views = [new DataView(detached), new Uint8Array(detached)];
  structuredClone(detached, { transfer: [detached] });
  const base = { rowPitch: 16, format: "RgbaU8" };
  assertRefused(() => create.CpuBytes({ ...base, data: "bytes" }), "data");
  assertRefused(() => create.CpuBytes({ ...base, data: null }), "data");
  assertRefused(() => create.CpuBytes({ ...base, data: [1, 2, 3] }), "data");
  assertRefused(() => create.CpuBytes({ ...base, data: new Uint8Array(0) }), "data", {
    code: "ZERO_SIZE",
  });
  assertRefused(() => create.CpuBytes({ ...base, data: detached }), "data");
  for (const view of views) assertRefused(() => create.CpuBytes({ ...base, data: view }), "data");
  assertRefused(
    () => create.CpuBytes({ ...base, data: new ArrayBuffer(64, { maxByteLength: 128 }) }),
    "data",
  );
});

// ----------------------------------------------------------------- fromRaw

Deno.test("GpuResource.fromRaw(0n) throws InvalidHandleError NULL_HANDLE", () => {
  assertRefused(() => GpuResource.fromRaw(0n), "handle", { code: "NULL_HANDLE" });
});

Deno.test("GpuResource.fromRaw() of a value that is not a bigint throws InvalidHandleError", () => {
  noLeak(() => {
    using frame = CpuSharedSlot.create(cpuSlot as never);
    const raw = frame.unsafeHandle;
    for (const value of [Number(raw), 0, 1, NaN, String(raw), null, undefined, {}, [raw]]) {
      assertRefused(() => GpuResource.fromRaw(value as bigint), "handle", {
        label: `fromRaw(${show(value)})`,
      });
    }
    assert.equal(frame.refcount, 1);
  });
});

Deno.test("GpuResource.fromRaw() of 10k random values throws ReleasedError, never adopts", () => {
  let seed = 0x9e3779b97f4a7c15n;
  const next = () => { // xorshift64*: the same values on every run
    seed ^= seed >> 12n;
    seed ^= (seed << 25n) & 0xffff_ffff_ffff_ffffn;
    seed ^= seed >> 27n;
    return (seed * 0x2545f4914f6cdd1dn) & 0xffff_ffff_ffff_ffffn;
  };
  noLeak(() => {
    using frame = CpuSharedSlot.create(cpuSlot as never);
    for (let i = 0; i < 10_000; i++) {
      const value = next();
      if (value === frame.unsafeHandle) continue;
      assertRefused(() => GpuResource.fromRaw(value), "handle", {
        code: "STALE",
        Class: ReleasedError,
        label: `fromRaw(${value})`,
      });
    }
    assert.equal(frame.refcount, 1);
  });
});

Deno.test("GpuResource.fromRaw() of a live handle with a generation or kind bit flipped throws ReleasedError", () => {
  noLeak(() => {
    using frame = CpuSharedSlot.create(cpuSlot as never);
    const raw = frame.unsafeHandle;
    for (let bit = 24n; bit < 64n; bit++) {
      assertRefused(() => GpuResource.fromRaw(raw ^ (1n << bit)), "handle", {
        code: "STALE",
        Class: ReleasedError,
        label: `bit ${bit}`,
      });
    }
    assert.equal(frame.refcount, 1, "the real handle is untouched");
    assert.equal(frame.describe().size, cpuSlot.size);
  });
});

Deno.test("GpuResource.fromRaw() of a released handle throws ReleasedError", () => {
  const frame = CpuSharedSlot.create(cpuSlot as never);
  const raw = frame.unsafeHandle;
  frame.release();
  assertRefused(() => GpuResource.fromRaw(raw), "handle", { code: "STALE", Class: ReleasedError });
});

Deno.test("GpuResource.fromRaw() of a slot's old handle does not reach the resource reusing the slot", () => {
  noLeak(() => {
    const first = CpuSharedSlot.create(cpuSlot as never);
    const stale = first.unsafeHandle;
    first.release();
    using second = CpuSharedSlot.create({ ...cpuSlot, size: 8n } as never);
    assert.equal(BigInt.asUintN(24, second.unsafeHandle), BigInt.asUintN(24, stale), "same slot");
    assertRefused(() => GpuResource.fromRaw(stale), "handle", {
      code: "STALE",
      Class: ReleasedError,
    });
    assert.equal(second.refcount, 1);
  });
});

Deno.test({
  name:
    "GpuResource.fromRaw() of a bigint outside 0..2^64-1 throws InvalidHandleError and adopts nothing",
  fn() {
    noLeak(() => {
      using frame = CpuSharedSlot.create(cpuSlot as never);
      const raw = frame.unsafeHandle;
      for (const value of [raw + (1n << 64n), raw - (1n << 64n), -1n, 1n << 64n]) {
        let adopted: GpuResource<unknown> | undefined;
        try {
          assert.throws(() => {
            adopted = GpuResource.fromRaw(value);
          }, (e: unknown) => {
            assert.ok(e instanceof InvalidHandleError, `fromRaw(${value}n): ${e}`);
            assert.equal(e.code, "INVALID_VALUE");
            assert.equal(e.field, "handle");
            return true;
          });
        } finally {
          adopted?.intoRaw(); // the reference it claims is frame's: do not release it twice
        }
      }
      assert.equal(frame.refcount, 1);
    });
  },
});

Deno.test("GpuResource.fromRaw() adopts what intoRaw() gave away, as its own kind", () => {
  noLeak(() => {
    const frame = VkBufferHandle.create(vkBuffer as never);
    const raw = frame.intoRaw();
    assert.ok(frame.released);
    using back = GpuResource.fromRaw(raw);
    assert.ok(back instanceof VkBufferHandle);
    assert.equal(back.refcount, 1);
  });
});

// -------------------------------------------------------------- wrong kinds

Deno.test("dupFd() borrowed onto a kind without fds throws WrongKindError", () => {
  noLeak(() => {
    using slot = CpuSharedSlot.create(cpuSlot as never);
    assertRefused(
      () => DmaBufHandle.prototype.dupFd.call(slot as unknown as DmaBufHandle, 0),
      "handle",
      { code: "WRONG_KIND", Class: WrongKindError },
    );
  });
});

Deno.test("slotRelease() borrowed onto a kind without slot release throws WrongKindError", () => {
  noLeak(() => {
    using slot = CpuSharedSlot.create(cpuSlot as never);
    assertRefused(
      () => VkImage.prototype.slotRelease.call(slot as unknown as VkImage),
      "handle",
      { code: "WRONG_KIND", Class: WrongKindError },
    );
  });
});

Deno.test({
  name: "DmaBufHandle.fromRaw() of another kind's handle throws WrongKindError and leaves it live",
  fn() {
    noLeak(() => {
      using slot = CpuSharedSlot.create(cpuSlot as never);
      const raw = slot.unsafeHandle;
      let adopted: GpuResource<unknown> | undefined;
      try {
        assert.throws(() => {
          adopted = DmaBufHandle.fromRaw(raw);
        }, (e: unknown) => {
          assert.ok(e instanceof WrongKindError, `${e}`);
          assert.equal(e.code, "WRONG_KIND");
          assert.equal(e.field, "handle");
          return true;
        });
      } finally {
        adopted?.intoRaw(); // the reference is slot's
      }
      assert.equal(slot.refcount, 1);
    });
  },
});

// --------------------------------------------------------- use after release

/** Every operation on a live wrapper, by name. */
const operations: Record<string, (r: DmaBufHandle) => unknown> = {
  "describe()": (r) => r.describe(),
  "clone()": (r) => r.clone(),
  "toJSON()": (r) => r.toJSON(),
  "refcount": (r) => r.refcount,
  "unsafeHandle": (r) => r.unsafeHandle,
  "intoRaw()": (r) => r.intoRaw(),
  "markConsumed()": (r) => r.markConsumed(),
  "dupFd()": (r) => r.dupFd(0),
};

for (const [name, operation] of Object.entries(operations)) {
  Deno.test(`${name} after release() throws ReleasedError STALE on handle`, () => {
    const fd = memfd(4096);
    try {
      noLeak(() => {
        const frame = DmaBufHandle.create(frameOver(fd) as never);
        frame.release();
        assertRefused(() => operation(frame), "handle", { code: "STALE", Class: ReleasedError });
      });
    } finally {
      close(fd);
    }
  });

  Deno.test(`${name} after intoRaw() throws ReleasedError STALE on handle`, () => {
    const fd = memfd(4096);
    try {
      noLeak(() => {
        const frame = DmaBufHandle.create(frameOver(fd) as never);
        const raw = frame.intoRaw();
        try {
          assertRefused(() => operation(frame), "handle", { code: "STALE", Class: ReleasedError });
        } finally {
          GpuResource.fromRaw(raw).release();
        }
      });
    } finally {
      close(fd);
    }
  });
}

Deno.test("slotRelease() after release() throws ReleasedError STALE on handle", () => {
  const gate = new BigUint64Array(1);
  const image = VkImage.create({
    ...vkImage,
    slotRelease: { gate: Deno.UnsafePointer.of(gate), value: 9n },
  } as never);
  image.release();
  assertRefused(() => image.slotRelease(), "handle", { code: "STALE", Class: ReleasedError });
  assert.equal(gate[0], 0n, "the gate was not written");
});

Deno.test("release() twice is a no-op, and so is dispose after release()", () => {
  noLeak(() => {
    const frame = CpuSharedSlot.create(cpuSlot as never);
    frame.release();
    frame.release();
    frame[Symbol.dispose]();
    assert.ok(frame.released);
  });
});

Deno.test("release() of one clone twice does not drop the other clone's reference", () => {
  noLeak(() => {
    const frame = CpuSharedSlot.create(cpuSlot as never);
    using copy = frame.clone();
    frame.release();
    frame.release();
    assert.equal(copy.refcount, 1);
    assert.equal(copy.describe().size, cpuSlot.size);
  });
});

Deno.test("kind, kindId, released and inspect still work after release()", () => {
  const frame = CpuSharedSlot.create(cpuSlot as never);
  frame.release();
  assert.equal(frame.kind, "CpuSharedSlot");
  assert.equal(frame.kindId, 19);
  assert.equal(frame.released, true);
  assert.equal(Deno.inspect(frame), "CpuSharedSlot { released }");
});

// ---------------------------------------------------------------- isolation

Deno.test("a burst of hostile creates leaves every other handle intact", () => {
  noLeak(() => {
    using keep = VkBufferHandle.create({ buffer: 5n, size: 77n });
    using keepClone = keep.clone();
    const before = keep.toJSON();
    for (const [make, desc, field] of [...u32Fields, ...u64Fields, ...pointerFields]) {
      for (const value of [-1, NaN, "x", 1n << 64n, 2 ** 53 + 2]) {
        try {
          make(withField(desc, field, value)).release();
        } catch (e) {
          if (!(e instanceof InvalidHandleError)) throw e;
        }
      }
    }
    assert.deepEqual(keep.toJSON(), before);
    assert.equal(keepClone.refcount, 2);
  });
});

Deno.test("liveHandles() and isSupported() of an unknown kind throw InvalidHandleError on kind", () => {
  for (const kind of ["Nope", "", 0, 38, -1, "toString"]) {
    assert.throws(() => liveHandles(kind as never), (e: unknown) => {
      assert.ok(e instanceof InvalidHandleError, `${show(kind)}: ${e}`);
      assert.equal(e.field, "kind");
      return true;
    });
    assert.throws(() => GpuResource.isSupported(kind as never), (e: unknown) => {
      assert.ok(e instanceof InvalidHandleError, `${show(kind)}: ${e}`);
      assert.equal(e.field, "kind");
      return true;
    });
  }
});

Deno.test({
  name: "liveHandles() and isSupported() of a bigint kind throw InvalidHandleError on kind",
  fn() {
    assertRefused(() => liveHandles(17n as never), "kind");
    assertRefused(() => GpuResource.isSupported(17n as never), "kind");
  },
});
