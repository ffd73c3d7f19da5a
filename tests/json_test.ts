// toJSON(): the C library's JSON description, unchanged, and its agreement
// with describe().

import assert from "node:assert/strict";
import {
  CpuBytes,
  CpuPlanes,
  CudaPtr2D,
  DmaBufHandle,
  GlBufferHandle,
  GlTextureHandle,
  type GpuResource,
  ReleasedError,
  VkBufferHandle,
  VkImage,
} from "../mod.ts";
import { close, memfd } from "./_support/libc.ts";
import { lib } from "../ffi/load/load.ts";

const U64_MAX = (1n << 64n) - 1n;
const UUID = Uint8Array.from({ length: 16 }, (_, i) => i * 17); // 00 11 22 ... ff
const UUID_TEXT = "00112233-4455-6677-8899-aabbccddeeff";

/** The JSON text gpures_describe_json() writes for the handle, read straight from C. */
function cJson(resource: GpuResource<unknown>): string {
  const symbols = lib();
  const buffer = new Uint8Array(8192);
  const length = new BigUint64Array(1);
  const status = symbols.gpures_describe_json(
    resource.unsafeHandle,
    buffer,
    BigInt(buffer.length),
    length,
  );
  assert.equal(status, 0, "gpures_describe_json succeeded");
  return new TextDecoder().decode(buffer.subarray(0, Number(length[0])));
}

/** The address of a buffer, as gpures stores it. */
function addressOf(buffer: BufferSource): bigint {
  return BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(buffer)));
}

function hex(address: bigint): string {
  return `0x${address.toString(16)}`;
}

/**
 * What toJSON() must hold for a describe() value: 64-bit values as decimal
 * strings, the fields named in `addresses` as "0x..." strings, UUIDs as
 * 8-4-4-4-12 hex text, everything else as is.
 */
function expectedJson(value: unknown, addresses: Set<string>, path = ""): unknown {
  if (value === null || typeof value !== "object") {
    if (typeof value !== "bigint") return value;
    return addresses.has(path) ? hex(value) : value.toString();
  }
  if (value instanceof Uint8Array) {
    const h = Array.from(value, (b) => b.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${
      h.slice(20)
    }`;
  }
  if (Array.isArray(value)) return value.map((v) => expectedJson(v, addresses, `${path}[]`));
  return Object.fromEntries(
    Object.entries(value).map((
      [k, v],
    ) => [k, expectedJson(v, addresses, path ? `${path}.${k}` : k)]),
  );
}

// One resource of each shape the JSON writer has: scalars, optional groups,
// arrays of scalars, arrays of structs, enums, UUIDs, addresses.

interface Case {
  /** Makes the resource and returns what must be released after it (beyond the resource). */
  make(): { resource: GpuResource<unknown>; cleanup?: () => void };
  /** The exact JSON object toJSON() gives; a function when it depends on addresses or fds. */
  json(resource: GpuResource<unknown>): Record<string, unknown>;
  /** The fields whose bigint values are addresses. */
  addresses: string[];
}

const pixels = new Uint8Array(4 * 4 * 4);
const gate = new BigUint64Array(1);
const luma = new Uint8Array(64 * 32);
const chroma = new Uint8Array(64 * 16);

const cases: Record<string, Case> = {
  CpuBytes: {
    make: () => ({
      resource: CpuBytes.create({
        data: pixels,
        rowPitch: 16,
        format: "RgbaU8",
        width: 4,
        height: 4,
      }),
    }),
    json: () => ({
      kind: "CpuBytes",
      kindId: 17,
      refcount: 1,
      ptr: hex(addressOf(pixels)),
      size: "64",
      rowPitch: 16,
      format: "RgbaU8",
      width: 4,
      height: 4,
    }),
    addresses: ["ptr"],
  },
  "VkImage with deviceUuid and slotRelease": {
    make: () => ({
      resource: VkImage.create({
        image: (1n << 63n) + 1n,
        device: 0xdead_beef_0000n,
        deviceUuid: UUID,
        rowPitch: 7680,
        vkFormat: 37,
        width: 1920,
        height: 1080,
        slotRelease: { gate: Deno.UnsafePointer.of(gate), value: U64_MAX },
      }),
    }),
    json: () => ({
      kind: "VkImage",
      kindId: 4,
      refcount: 1,
      image: "9223372036854775809",
      device: "0xdeadbeef0000",
      instance: null,
      physicalDevice: null,
      deviceUuid: UUID_TEXT,
      rowPitch: 7680,
      vkFormat: 37,
      width: 1920,
      height: 1080,
      slotRelease: { gate: hex(addressOf(gate)), value: "18446744073709551615" },
    }),
    addresses: ["device", "instance", "physicalDevice", "slotRelease.gate"],
  },
  GlTextureHandle: {
    make: () => ({
      resource: GlTextureHandle.create({
        name: 7,
        target: "Texture2DArray",
        internalFormat: "Rgba16F",
        shareGroup: 2n ** 60n,
      }),
    }),
    json: () => ({
      kind: "GlTextureHandle",
      kindId: 13,
      refcount: 1,
      name: 7,
      target: "Texture2DArray",
      internalFormat: "Rgba16F",
      context: null,
      shareGroup: "1152921504606846976",
    }),
    addresses: ["context"],
  },
  GlBufferHandle: {
    make: () => ({ resource: GlBufferHandle.simple(3, 4096) }),
    json: () => ({
      kind: "GlBufferHandle",
      kindId: 14,
      refcount: 1,
      name: 3,
      target: "ArrayBuffer",
      size: "4096",
      context: null,
      shareGroup: null,
    }),
    addresses: ["context"],
  },
  DmaBufHandle: {
    make: () => {
      const fd = memfd(4096);
      return {
        resource: DmaBufHandle.create({
          fds: [fd],
          fourcc: 0x3231564e,
          modifier: 0x00ff_ffff_ffff_ffffn,
          width: 64,
          height: 32,
          planes: [
            { objectIndex: 0, offset: 0, stride: 64 },
            { objectIndex: 0, offset: 2048, stride: 64 },
          ],
        }),
        cleanup: () => close(fd),
      };
    },
    json: (resource) => ({
      kind: "DmaBufHandle",
      kindId: 15,
      refcount: 1,
      fds: [(resource as DmaBufHandle).describe().fds[0]],
      fourcc: 0x3231564e,
      modifier: "72057594037927935",
      width: 64,
      height: 32,
      planes: [
        { objectIndex: 0, offset: 0, stride: 64 },
        { objectIndex: 0, offset: 2048, stride: 64 },
      ],
    }),
    addresses: [],
  },
  "CudaPtr2D with planeByteOffsets": {
    make: () => ({
      resource: CudaPtr2D.create({
        ptr: 0x7f00_0000_0000n,
        rowPitch: 2048,
        // The generated CudaPtr2DDesc types this field as `bigint | number[]`.
        planeByteOffsets: [0n, 2048n * 1080n] as unknown as number[],
        width: 1920,
        height: 1080,
      }),
    }),
    json: () => ({
      kind: "CudaPtr2D",
      kindId: 7,
      refcount: 1,
      ptr: "139637976727552",
      rowPitch: 2048,
      deviceUuid: null,
      planeByteOffsets: ["0", "2211840"],
      width: 1920,
      height: 1080,
    }),
    addresses: [],
  },
  "VkBufferHandle with size 2^64-1": {
    make: () => ({ resource: VkBufferHandle.create({ buffer: 42n, size: U64_MAX }) }),
    json: () => ({
      kind: "VkBufferHandle",
      kindId: 5,
      refcount: 1,
      buffer: "42",
      device: null,
      deviceUuid: null,
      size: "18446744073709551615",
    }),
    addresses: ["device"],
  },
  CpuPlanes: {
    make: () => ({
      resource: CpuPlanes.create({
        format: "NV12",
        planes: [{ data: luma, rowPitch: 64 }, { data: chroma, rowPitch: 64 }],
      }),
    }),
    json: () => ({
      kind: "CpuPlanes",
      kindId: 18,
      refcount: 1,
      format: "NV12",
      planes: [
        { data: hex(addressOf(luma)), size: "2048", rowPitch: 64 },
        { data: hex(addressOf(chroma)), size: "1024", rowPitch: 64 },
      ],
      width: null, // made without an extent
      height: null,
    }),
    addresses: ["planes[].data"],
  },
};

/** Runs `fn` on a fresh resource of a case, releasing everything after. */
function withCase(c: Case, fn: (resource: GpuResource<unknown>) => void): void {
  const { resource, cleanup } = c.make();
  try {
    fn(resource);
  } finally {
    resource.release();
    cleanup?.();
  }
}

for (const [name, c] of Object.entries(cases)) {
  Deno.test(`${name}: JSON.stringify(resource) is the C library's JSON text`, () => {
    withCase(c, (resource) => assert.equal(JSON.stringify(resource), cJson(resource)));
  });

  Deno.test(`${name}: toJSON() gives every field in its JSON form`, () => {
    withCase(c, (resource) => assert.deepEqual(resource.toJSON(), c.json(resource)));
  });

  Deno.test(`${name}: describe() and toJSON() agree field by field`, () => {
    withCase(c, (resource) => {
      const described = resource.describe() as Record<string, unknown>;
      const json = resource.toJSON();
      assert.deepEqual(Object.keys(json), Object.keys(described), "the same fields, in order");
      assert.deepEqual(json, expectedJson(described, new Set(c.addresses)));
    });
  });
}

Deno.test("toJSON() puts kind, kindId and refcount first", () => {
  for (const c of Object.values(cases)) {
    withCase(c, (resource) => {
      assert.deepEqual(Object.keys(resource.toJSON()).slice(0, 3), ["kind", "kindId", "refcount"]);
      assert.ok(cJson(resource).startsWith(`{"kind":"${resource.kind}","kindId":`));
    });
  }
});

Deno.test("toJSON() writes 64-bit values as decimal strings that keep every digit", () => {
  using buffer = VkBufferHandle.create({ buffer: (1n << 53n) + 1n, size: U64_MAX });
  const json = buffer.toJSON();
  assert.equal(json.size, "18446744073709551615");
  assert.equal(json.buffer, "9007199254740993");
  assert.equal(BigInt(json.size as string), buffer.describe().size);
});

Deno.test("toJSON() writes addresses as 0x strings", () => {
  using image = VkImage.create({
    image: 1n,
    device: U64_MAX,
    instance: 0x1000n,
    rowPitch: 0,
  });
  const json = image.toJSON();
  assert.equal(json.device, "0xffffffffffffffff");
  assert.equal(json.instance, "0x1000");
});

Deno.test("toJSON() writes absent optional fields as null", () => {
  using image = VkImage.create({ image: 1n, rowPitch: 256 });
  const json = image.toJSON();
  for (
    const field of [
      "device",
      "instance",
      "physicalDevice",
      "deviceUuid",
      "vkFormat",
      "width",
      "height",
      "slotRelease",
    ]
  ) {
    assert.ok(field in json, `${field} is present`);
    assert.equal(json[field], null, `${field} is null`);
  }
});

Deno.test("toJSON() writes an empty optional array as []", () => {
  using frame = CudaPtr2D.create({ ptr: 1n, rowPitch: 64 });
  assert.deepEqual(frame.toJSON().planeByteOffsets, []);
});

Deno.test("toJSON() writes enumerations by name", () => {
  using texture = GlTextureHandle.create({ name: 1, target: 0x8513, internalFormat: 0x8058 });
  const json = texture.toJSON();
  assert.equal(json.target, "CubeMap");
  assert.equal(json.internalFormat, "Rgba8");
});

Deno.test("toJSON() counts every reference in refcount", () => {
  using frame = CpuBytes.create({ data: pixels, rowPitch: 16, format: "RgbaU8" });
  using copy = frame.clone();
  assert.equal(frame.toJSON().refcount, 2);
  copy.release();
  assert.equal(frame.toJSON().refcount, 1);
});

Deno.test("toJSON() of a released resource throws ReleasedError", () => {
  const frame = CpuBytes.create({ data: pixels, rowPitch: 16, format: "RgbaU8" });
  frame.release();
  assert.throws(() => frame.toJSON(), (e: unknown) => {
    assert.ok(e instanceof ReleasedError);
    assert.equal(e.code, "STALE");
    assert.equal(e.field, "handle");
    return true;
  });
  assert.throws(() => JSON.stringify(frame), ReleasedError);
});

Deno.test("toJSON() of a resource whose other clone was released still works", () => {
  const frame = CpuBytes.create({ data: pixels, rowPitch: 16, format: "RgbaU8" });
  using copy = frame.clone();
  frame.release();
  assert.equal(copy.toJSON().refcount, 1);
  assert.equal(copy.toJSON().kind, "CpuBytes");
});
