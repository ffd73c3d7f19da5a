// Every kind's fixtures, the one hand-written copy: a valid descriptor, named
// extra shapes, and the changes create must refuse (or must still accept),
// each with the status and the field it names.
//
// The Deno tests and benchmarks import this file and resolve it at run time
// (tests/_support/fixtures.ts, bench/_fixtures.ts); tools/gen_fixtures.ts
// writes the C form (native/tests/fixtures.gen.h: one function per descriptor
// and a table of the changes, for the C tests and benchmark) and the fuzzer's
// seed inputs (native/fuzz/corpus/fixture-*) from it.
//
// Descriptors are written in the Deno vocabulary (camelCase fields, enums by
// name, arrays for fds and planes, `data` for CPU memory). What differs per
// process is a placeholder: memfd(size), pipeFd() and closedFd() for fds,
// address(n) for pointers nobody dereferences, gate() for a slot-release gate
// (a 64-bit word the test owns), bytes(n) for memory a descriptor points at,
// texture(shape) for a WebGPU texture.
//
// A change is a set of paths and values applied to a fresh valid descriptor:
//   "planes[1].offset": 2048   sets one field ("fds[0]", "slotRelease.gate", ...)
//   height: undefined          removes it: absent in Deno, zero in C (a group's
//                              present bit cleared too)
//   planes: count(1)           keeps the entries and names that many: the C
//                              count field, a Deno array cut or padded with
//                              copies of its last entry
//   flags: extraFlags(1 << 7)  C only: the descriptor's flags word with more bits
// Changes that one language cannot express say `only: "c"` or `only: "ts"`.

import type * as T from "../ffi/gen/types.ts";
import type * as V from "../ffi/gen/variants.ts";

// ------------------------------------------------------------ placeholders

/** The shape of a WebGPU texture: what a WgpuTexture describes (and, in C, its token). */
export type TextureShape = Omit<T.WgpuTextureDescription, "kind" | "kindId" | "refcount">;

/** A value that differs per process, resolved where the fixture is used. */
export type Placeholder =
  | { readonly $: "memfd"; readonly size: number }
  | { readonly $: "pipe" }
  | { readonly $: "closedFd" }
  | { readonly $: "fence"; readonly fence: FenceFdType }
  | { readonly $: "address"; readonly value: bigint }
  | { readonly $: "gate"; readonly offset: number }
  | { readonly $: "bytes"; readonly size: number }
  | { readonly $: "texture"; readonly shape: TextureShape }
  | { readonly $: "count"; readonly n: number }
  | { readonly $: "extraFlags"; readonly bits: number };

/** An fd: a new memfd of `size` bytes (C: one of the fds the caller passes). */
export const memfd = (size: number): Placeholder => ({ $: "memfd", size });
/** An fd whose size cannot be read: the read end of a pipe. */
export const pipeFd = (): Placeholder => ({ $: "pipe" });
/** What a fence fd is: a real eventfd, or a memfd declared a sync_file or syncobj (none can be made without a GPU). */
export type FenceFdType = "eventfd" | "syncFile" | "syncobj";
/** A fence fd of `type` (C: one of the fds the caller passes). */
export const fenceFd = (fence: FenceFdType): Placeholder => ({ $: "fence", fence });
/** An fd number that names nothing: a memfd made and closed just before use. */
export const closedFd = (): Placeholder => ({ $: "closedFd" });
/** A fixed non-null address that gpures stores and never dereferences. */
export const address = (value: bigint): Placeholder => ({ $: "address", value });
/** The address of the test's own 64-bit slot-release gate (plus `offset` bytes). */
export const gate = (offset = 0): Placeholder => ({ $: "gate", offset });
/** `size` bytes of memory the descriptor points at: a JS buffer, a static C buffer. */
export const bytes = (size: number): Placeholder => ({ $: "bytes", size });
/** A WebGPU texture of this shape (C: its description and a token). */
export const texture = (shape: TextureShape): Placeholder => ({ $: "texture", shape });
/** In a change: the array keeps its entries and names `n` of them. */
export const count = (n: number): Placeholder => ({ $: "count", n });
/** In a change (C only): the valid descriptor's flags plus `bits`. */
export const extraFlags = (bits: number): Placeholder => ({ $: "extraFlags", bits });

/** Whether v is a placeholder. */
export function isPlaceholder(v: unknown): v is Placeholder {
  return typeof v === "object" && v !== null && "$" in v;
}

// ----------------------------------------------------------------- shapes

/** A descriptor type with placeholders allowed wherever a value is. */
export type Symbolic<D> = D extends Uint8Array ? D | Placeholder
  : D extends readonly (infer E)[] ? Symbolic<E>[] | Placeholder
  : D extends Deno.PointerObject ? D | Placeholder
  : D extends object ? { [K in keyof D]: Symbolic<D[K]> } | Placeholder
  : D | Placeholder;

/** A status create returns, by name ("OK": it accepts the descriptor). */
export type Status =
  | "OK"
  | "NULL_HANDLE"
  | "NULL_POINTER"
  | "ZERO_SIZE"
  | "INVALID_VALUE";

/** A value in a change (see the top of the file). */
export type Value =
  | Placeholder
  | number
  | bigint
  | string
  | boolean
  | null
  | undefined
  | Uint8Array
  | Readonly<Record<string, unknown>>
  | readonly unknown[];

/** One change to a kind's valid descriptor and what create answers. */
export interface Change {
  /** What it is, as a test name ends: "create() rejects <what>" or "accepts <what>". */
  what: string;
  /** Paths and their new values, applied in order to a fresh valid descriptor. */
  set: Readonly<Record<string, Value>>;
  /** What create returns. */
  status: Status;
  /** The field path the error names (absent when create accepts). */
  field?: string;
  /** Where it can be written, when only one language can. */
  only?: "c" | "ts";
}

/** A kind's fixtures. */
export interface KindFixture<D> {
  /** A descriptor create accepts on every OS where the kind exists. */
  valid: Symbolic<D>;
  /** Other valid descriptors that tests use by name. */
  shapes?: Readonly<Record<string, Symbolic<D>>>;
  /** Changes to `valid` and what create answers (none: only the shared contract). */
  changes?: readonly Change[];
}

/** Every kind's descriptor type, by name: what its class's create() takes. */
export type Descs = {
  [K in T.KindName]: Parameters<(typeof V)[K]["create"]>[0];
};

// ----------------------------------------------------------------- values

/** The device UUID the fixtures carry. */
const UUID = new Uint8Array([
  0x00,
  0x11,
  0x22,
  0x33,
  0x44,
  0x55,
  0x66,
  0x77,
  0x88,
  0x99,
  0xaa,
  0xbb,
  0xcc,
  0xdd,
  0xee,
  0xff,
]);
/** DRM fourccs. */
const NV12 = 0x3231564e;
const AB24 = 0x34324241; // DRM_FORMAT_ABGR8888: bytes R, G, B, A
const ZZZZ = 0x5a5a5a5a; // no format gpures knows
const U64_MAX = (1n << 64n) - 1n;

/** Changes every kind shares the form of. */
const rejects = (what: string, set: Change["set"], status: Status, field: string): Change => ({
  what,
  set,
  status,
  field,
});
const accepts = (what: string, set: Change["set"]): Change => ({ what, set, status: "OK" });
/** `field` set to `value`: refused as INVALID_VALUE naming it. */
const invalid = (what: string, field: string, value: Value): Change =>
  rejects(what, { [field]: value }, "INVALID_VALUE", field);
const zero = (field: string, value: 0 | 0n = 0): Change =>
  rejects(`${field} 0`, { [field]: value }, "ZERO_SIZE", field);
const nullHandle = (field: string, value: null | 0 | 0n = null): Change =>
  rejects(`a null ${field}`, { [field]: value }, "NULL_HANDLE", field);
/** C only: flag bits no field of the kind defines. */
const unknownFlags = (flags: number | Placeholder): Change => ({
  ...rejects("unknown flag bits", { flags }, "INVALID_VALUE", "flags"),
  only: "c",
});

/** Every kind's fixtures, by kind name (tools/gen_fixtures.ts checks them against the kind table). */
export const FIXTURES: { readonly [K in keyof Descs]: KindFixture<Descs[K]> } = {
  // Addresses above 4 GiB and a 4 GiB size, so that a 32-bit `long` on the way would show
  // (native/tests/test_windows.c checks their JSON).
  D3D11Texture: {
    valid: {
      texture: address(0x00007ff612340000n),
      luid: { high: -2, low: 0x80000007 },
      rowPitch: 7680,
    },
    changes: [nullHandle("texture")],
  },
  D3D12Resource: {
    valid: { resource: address(0x00007ff6abcd0010n), rowPitch: 256 },
    changes: [nullHandle("resource")],
  },
  D3D12BufferHandle: {
    valid: { resource: address(0x00007ff6abcd0010n), luid: { high: 1, low: 2 }, size: 1n << 32n },
    changes: [nullHandle("resource"), zero("size", 0n)],
  },
  VkImage: {
    valid: {
      image: 0xabcdefn,
      device: address(0x2000n),
      instance: address(0x3000n),
      physicalDevice: address(0x4000n),
      deviceUuid: UUID,
      rowPitch: 256,
      vkFormat: 37, // VK_FORMAT_R8G8B8A8_UNORM
      width: 64,
      height: 64,
      slotRelease: { gate: gate(), value: 7n },
    },
    changes: [
      nullHandle("image", 0n),
      rejects("width without height", { height: 0 }, "ZERO_SIZE", "height"),
      rejects("height without width", { width: 0 }, "ZERO_SIZE", "width"),
      rejects(
        "a null slot release gate",
        { "slotRelease.gate": null },
        "NULL_POINTER",
        "slotRelease.gate",
      ),
      invalid("a misaligned slot release gate", "slotRelease.gate", gate(1)),
      {
        ...invalid("a 15-byte deviceUuid", "deviceUuid", new Uint8Array(15)),
        only: "ts",
      },
      unknownFlags(extraFlags(1 << 7)),
      accepts("no device (a trusted import)", {
        device: undefined,
        instance: undefined,
        physicalDevice: undefined,
        deviceUuid: undefined,
        slotRelease: undefined,
      }),
      accepts("no extent", { width: undefined, height: undefined }),
      accepts("no slot release", { slotRelease: undefined }),
    ],
  },
  VkBufferHandle: {
    valid: { buffer: 0x55n, device: address(0x2000n), deviceUuid: UUID, size: 65536n },
    changes: [
      nullHandle("buffer", 0n),
      zero("size", 0n),
      unknownFlags(1 << 0), // GPURES_HAS_LUID alone
      accepts("no device", { device: undefined }),
    ],
  },
  VkOpaqueFd: {
    valid: {
      fd: memfd(4096),
      size: 4096n,
      memoryTypeIndex: 3,
      offset: 256n,
      dedicated: true,
      width: 16,
      height: 16,
      format: "RgbaU8",
      deviceUuid: UUID,
      slotRelease: { gate: gate(), value: 9n },
    },
    changes: [
      invalid("a negative fd", "fd", -1),
      invalid("a closed fd", "fd", closedFd()),
      zero("size", 0n),
      zero("width"),
      zero("height"),
      invalid("offset at size", "offset", 4096n),
      invalid("offset above size", "offset", U64_MAX),
      invalid("an unknown format", "format", 0),
      {
        ...invalid("dedicated not a bool", "dedicated", 2),
        only: "c",
      },
      rejects(
        "a null slot release gate",
        { "slotRelease.gate": null },
        "NULL_POINTER",
        "slotRelease.gate",
      ),
      unknownFlags(extraFlags(1 << 0)), // GPURES_HAS_LUID
      accepts("offset just below size", { offset: 4095n }),
      accepts("no slot release", { slotRelease: undefined }),
      accepts("rows padded to 128 bytes", { rowPitch: 128 }),
      invalid("a row pitch below a row (16 RGBA pixels: 64 bytes)", "rowPitch", 32),
      invalid("rows that do not fit after the offset", "rowPitch", 1024),
    ],
  },
  CudaPtr2D: {
    valid: {
      ptr: 0x7f0000000000n,
      rowPitch: 2048,
      deviceUuid: UUID,
      planeByteOffsets: [0n, 2048n * 1080n],
      width: 1920,
      height: 1080,
    },
    changes: [
      nullHandle("ptr", 0n),
      zero("rowPitch"),
      invalid("5 plane offsets", "planeByteOffsets", count(5)),
      rejects("width without height", { height: 0 }, "ZERO_SIZE", "height"),
      unknownFlags(extraFlags(1 << 4)), // GPURES_HAS_SHARE_GROUP
      accepts("no plane offsets and no size hint", {
        planeByteOffsets: [],
        width: undefined,
        height: undefined,
      }),
    ],
  },
  CudaBufferHandle: {
    valid: { ptr: 0x7f0000100000n, size: 1n << 20n, deviceUuid: UUID },
    changes: [nullHandle("ptr", 0n), zero("size", 0n), unknownFlags(1 << 31)],
  },
  CudaSurface: {
    valid: { surface: 0x99n, format: "rgba8unorm", width: 64, height: 64 },
    changes: [
      nullHandle("surface", 0n),
      zero("width"),
      zero("height"),
      invalid("format 0", "format", 0),
      invalid("an unknown format", "format", 102),
      invalid("format 999", "format", 999),
      invalid("a GL format as format", "format", 0x8058),
      unknownFlags(extraFlags(1 << 2)), // GPURES_HAS_SLOT_RELEASE
      accepts("rgba16float", { format: "rgba16float" }),
    ],
  },
  OpenClMem: {
    valid: { mem: address(0x5000n), queue: address(0x6000n), rowPitch: 256 },
    changes: [nullHandle("mem"), nullHandle("queue"), unknownFlags(1)],
  },
  MetalTextureHandle: {
    valid: { texture: address(0x7000n), registryId: 0x1234n },
    changes: [nullHandle("texture")],
  },
  MetalBufferHandle: {
    valid: { buffer: address(0x7100n), rowPitch: 256 },
    changes: [nullHandle("buffer")],
  },
  GlTextureHandle: {
    valid: {
      name: 7,
      target: "Texture2D",
      internalFormat: "Rgba8",
      context: address(0x8000n),
      shareGroup: 99n,
    },
    changes: [
      rejects("name 0", { name: 0 }, "NULL_HANDLE", "name"),
      invalid("an unknown target", "target", 0x1234),
      invalid("a buffer target as target", "target", 0x8892), // GL_ARRAY_BUFFER
      invalid("an unknown internal format", "internalFormat", 0x1234),
      invalid("an unsized internal format", "internalFormat", 0x1908), // GL_RGBA
      unknownFlags(extraFlags(1 << 1)), // GPURES_HAS_DEVICE_UUID
      accepts("an unspecified format in the current context", {
        internalFormat: "Unspecified",
        context: undefined,
        shareGroup: undefined,
      }),
      accepts("a Depth24Stencil8 cube map", {
        target: "CubeMap",
        internalFormat: "Depth24Stencil8",
      }),
    ],
  },
  GlBufferHandle: {
    valid: { name: 8, target: "ArrayBuffer", size: 4096n },
    changes: [
      rejects("name 0", { name: 0 }, "NULL_HANDLE", "name"),
      zero("size", 0n),
      invalid("an unknown target", "target", 0x1234),
      invalid("a texture target as target", "target", 0x0DE1), // GL_TEXTURE_2D
      unknownFlags(1 << 3), // GPURES_HAS_REGISTRY_ID
      accepts("CopyWriteBuffer", { target: "CopyWriteBuffer" }),
    ],
  },
  // NV12 64x32, linear: plane 0 in fds[0] (2048 bytes), plane 1 in fds[1] (1024).
  DmaBufHandle: {
    valid: {
      fds: [memfd(2048), memfd(1024)],
      fourcc: NV12,
      modifier: 0n, // DRM_FORMAT_MOD_LINEAR
      width: 64,
      height: 32,
      planes: [{ objectIndex: 0, offset: 0, stride: 64 }, {
        objectIndex: 1,
        offset: 0,
        stride: 64,
      }],
    },
    shapes: {
      /** The same NV12 64x32 frame with both planes in one object of 3072 bytes. */
      oneObject: {
        fds: [memfd(3072)],
        fourcc: NV12,
        modifier: 0n,
        width: 64,
        height: 32,
        planes: [{ objectIndex: 0, offset: 0, stride: 64 }, {
          objectIndex: 0,
          offset: 2048,
          stride: 64,
        }],
      },
      /** A 32x32 RGBA frame (AB24) in one object of 4096 bytes. */
      rgba: {
        fds: [memfd(4096)],
        fourcc: AB24,
        modifier: 0n,
        width: 32,
        height: 32,
        planes: [{ objectIndex: 0, offset: 0, stride: 128 }],
      },
    },
    changes: [
      invalid("a negative fd", "fds[0]", -1),
      invalid("a negative second fd", "fds[1]", -7),
      invalid("a closed fd", "fds[1]", closedFd()),
      invalid("no fds", "fds", []),
      invalid("5 fds", "fds", count(5)),
      invalid("no planes", "planes", []),
      invalid("5 planes", "planes", count(5)),
      zero("width"),
      zero("height"),
      invalid("a plane naming a missing object", "planes[1].objectIndex", 2),
      rejects(
        "a plane naming an object beyond the one fd",
        { fds: count(1), "planes[1].objectIndex": 1 },
        "INVALID_VALUE",
        "planes[1].objectIndex",
      ),
      invalid("a plane outside its object", "planes[1].offset", 1024),
      invalid("a plane one byte past its object's end", "planes[1].offset", 1),
      rejects(
        "rows past the object's end",
        { height: 33 },
        "INVALID_VALUE",
        "planes[0].offset",
      ),
      invalid("a stride below the row", "planes[0].stride", 63),
      invalid("a chroma stride below the row", "planes[1].stride", 62),
      invalid("one plane for NV12", "planes", count(1)),
      rejects(
        "an unknown fourcc with a plane outside its object",
        { fourcc: ZZZZ, "planes[1].offset": 1024 },
        "INVALID_VALUE",
        "planes[1].offset",
      ),
      rejects(
        "planes that overlap in one object",
        { "planes[1].objectIndex": 0, "planes[1].offset": 1024 },
        "INVALID_VALUE",
        "planes[1].offset",
      ),
      rejects(
        "an unknown fourcc whose plane 0 rows pass its object's end",
        { fourcc: ZZZZ, height: 33 },
        "INVALID_VALUE",
        "planes[0].offset",
      ),
      rejects(
        "an unknown fourcc with a plane inside plane 0's rows",
        { fourcc: ZZZZ, "planes[1].objectIndex": 0, "planes[1].offset": 1984 },
        "INVALID_VALUE",
        "planes[1].offset",
      ),
      {
        ...rejects(
          "an unknown format name",
          { fourcc: undefined, format: "Rgba9" },
          "INVALID_VALUE",
          "format",
        ),
        only: "ts",
      },
      {
        ...rejects("both a fourcc and a format", { format: "NV12" }, "INVALID_VALUE", "format"),
        only: "ts",
      },
      {
        ...rejects(
          "a format without a DRM fourcc",
          { fourcc: undefined, format: "P216LE" },
          "INVALID_VALUE",
          "format",
        ),
        only: "ts",
      },
      {
        ...rejects(
          "a format of another plane count",
          { fourcc: undefined, format: "YUV420P" },
          "INVALID_VALUE",
          "planes",
        ),
        only: "ts",
      },
      unknownFlags(1 << 0), // GPURES_HAS_LUID
      accepts("both planes in one object", {
        fds: count(1),
        "planes[1].objectIndex": 0,
        "planes[1].offset": 1024,
        "planes[0].stride": 32,
        "planes[1].stride": 32,
        width: 32,
        height: 32,
      }),
      accepts("a tiled modifier (the driver's to check)", {
        modifier: 0x0100000000000001n, // I915_FORMAT_MOD_X_TILED
        planes: count(1),
        "planes[0].stride": 1,
      }),
      accepts("an unknown fourcc with its planes inside their objects", {
        fourcc: ZZZZ,
        "planes[1].offset": 1023,
      }),
      accepts("a padded stride", {
        "planes[0].stride": 64,
        "planes[1].stride": 32,
        width: 32,
        height: 32,
      }),
      accepts("a plane in an object of unknown size", {
        "fds[1]": pipeFd(),
        "planes[1].offset": 1 << 30,
      }),
      {
        ...accepts("a format name instead of a fourcc", { fourcc: undefined, format: "NV12" }),
        only: "ts",
      },
      accepts("an unknown fourcc with a plane after plane 0's last row in one object", {
        fourcc: ZZZZ,
        "planes[1].objectIndex": 0,
        "planes[1].offset": 1985,
      }),
    ],
  },
  VaapiSurface: {
    valid: { surface: 0, display: address(0x9000n) }, // 0 is a legal VASurfaceID: accepted
    changes: [
      nullHandle("display"),
      unknownFlags(2),
      accepts("surface 2^32-1", { surface: 0xffffffff }),
    ],
  },
  // RgbaU8 64x64, rowPitch 256: exactly the 16384 bytes it needs.
  CpuBytes: {
    valid: { data: bytes(64 * 64 * 4), rowPitch: 256, format: "RgbaU8", width: 64, height: 64 },
    shapes: {
      /** An address and a size instead of a JS buffer. */
      address: {
        ptr: address(0x7000n),
        size: 64n * 64n * 4n,
        rowPitch: 256,
        format: "RgbaU8",
        width: 64,
        height: 64,
      },
    },
    changes: [
      rejects(
        "a null ptr",
        { data: undefined, ptr: null, size: 16384n },
        "NULL_POINTER",
        "ptr",
      ),
      rejects(
        "size 0",
        { data: undefined, ptr: address(0x7000n), size: 0n },
        "ZERO_SIZE",
        "size",
      ),
      { ...rejects("an empty buffer", { data: bytes(0) }, "ZERO_SIZE", "data"), only: "ts" },
      invalid("a row pitch below the row", "rowPitch", 255),
      rejects("rows that do not fit", { height: 65 }, "INVALID_VALUE", "size"),
      rejects(
        "rows that do not fit the size",
        { data: bytes(256 * 64 - 1) },
        "INVALID_VALUE",
        "size",
      ),
      rejects(
        "rows of a padded pitch that do not fit",
        { rowPitch: 512 },
        "INVALID_VALUE",
        "size",
      ),
      rejects("width without height", { height: undefined }, "ZERO_SIZE", "height"),
      rejects("height without width", { width: undefined }, "ZERO_SIZE", "width"),
      invalid("pixel format 49", "format", 49),
      invalid("pixel format 0", "format", 0),
      {
        ...invalid("an unknown format", "format", "Rgba9"),
        only: "ts",
      },
      rejects(
        "an NV12 frame one byte short",
        { format: "NV12", rowPitch: 64, data: bytes(64 * 64 * 3 / 2 - 1) },
        "INVALID_VALUE",
        "size",
      ),
      unknownFlags(1),
      accepts("no extent", {
        width: undefined,
        height: undefined,
        rowPitch: 0,
        data: bytes(1),
      }),
      accepts("an exact NV12 frame", {
        format: "NV12",
        rowPitch: 64,
        data: bytes(64 * 64 * 3 / 2),
      }),
      accepts("an address and a size", {
        data: undefined,
        ptr: address(0x7000n),
        size: 16384n,
      }),
    ],
  },
  // NV12 64x64, 64 bytes a row: 4096 bytes of luma, 2048 of chroma.
  CpuPlanes: {
    valid: {
      format: "NV12",
      planes: [{ data: bytes(4096), rowPitch: 64 }, { data: bytes(2048), rowPitch: 64 }],
      width: 64,
      height: 64,
    },
    changes: [
      invalid("no planes", "planes", []),
      invalid("5 planes", "planes", count(5)),
      invalid("one plane for NV12", "planes", count(1)),
      rejects(
        "three planes for NV12",
        { "planes[2]": { data: bytes(16), rowPitch: 4 } },
        "INVALID_VALUE",
        "planes",
      ),
      rejects("two planes for YUV420P", { format: "YUV420P" }, "INVALID_VALUE", "planes"),
      rejects(
        "a null plane",
        { "planes[1]": { ptr: null, size: 2048n, rowPitch: 64 } },
        "NULL_POINTER",
        "planes[1].data",
      ),
      rejects(
        "a zero-size plane",
        { "planes[1]": { ptr: address(0x8000n), size: 0n, rowPitch: 64 } },
        "ZERO_SIZE",
        "planes[1].size",
      ),
      {
        ...rejects(
          "a zero-size plane over memory",
          { "planes[0].size": 0n },
          "ZERO_SIZE",
          "planes[0].size",
        ),
        only: "c",
      },
      invalid("pixel format 0", "format", 0),
      unknownFlags(1),
      rejects(
        "a chroma plane one byte short of its rows",
        { "planes[1]": { data: bytes(2047), rowPitch: 64 } },
        "INVALID_VALUE",
        "planes[1].size",
      ),
      rejects("rows past the luma plane's end", { height: 65 }, "INVALID_VALUE", "planes[0].size"),
      invalid("a luma row pitch below the row", "planes[0].rowPitch", 63),
      invalid("a chroma row pitch below the row", "planes[1].rowPitch", 62),
      rejects("width without height", { height: undefined }, "ZERO_SIZE", "height"),
      rejects("height without width", { width: undefined }, "ZERO_SIZE", "width"),
      accepts("four planes for YUVA444P10LE", {
        format: "YUVA444P10LE",
        width: 32,
        height: 32,
        "planes[2]": { data: bytes(2048), rowPitch: 64 },
        "planes[3]": { data: bytes(4096), rowPitch: 64 },
      }),
      accepts("no extent, and planes of any size", {
        width: undefined,
        height: undefined,
        "planes[1]": { data: bytes(1), rowPitch: 64 },
      }),
      accepts("a padded chroma pitch", { "planes[1]": { data: bytes(128 * 32), rowPitch: 128 } }),
    ],
  },
  CpuSharedSlot: {
    valid: { size: 16384n, rowPitch: 256, format: "RgbaU8" },
    changes: [
      zero("size", 0n),
      invalid("pixel format 49", "format", 49),
      unknownFlags(1 << 16),
    ],
  },
  // The Deno class takes a GPUTexture; the C descriptor is its description and a token.
  WgpuTexture: {
    valid: {
      texture: texture({
        token: 42n,
        width: 64,
        height: 64,
        depthOrArrayLayers: 1,
        mipLevelCount: 1,
        sampleCount: 1,
        dimension: "2d",
        format: "rgba8unorm",
        usage: 0x10, // RENDER_ATTACHMENT
      }),
    },
    changes: [
      {
        ...rejects("not a GPUTexture", { texture: {} }, "INVALID_VALUE", "texture"),
        only: "ts",
      },
      { ...rejects("token 0", { token: 0n }, "NULL_HANDLE", "token"), only: "c" },
      { ...zero("width"), only: "c" },
      { ...zero("height"), only: "c" },
      { ...zero("depthOrArrayLayers"), only: "c" },
      { ...zero("mipLevelCount"), only: "c" },
      { ...zero("sampleCount"), only: "c" },
      {
        ...invalid("an unknown dimension", "dimension", 4),
        only: "c",
      },
      { ...invalid("format 0", "format", 0), only: "c" },
      unknownFlags(1),
    ],
  },
  VkSemaphore: {
    valid: {
      semaphore: 0x77n,
      device: address(0x2000n),
      semaphoreType: "timeline",
      value: 5n,
      deviceUuid: UUID,
    },
    changes: [
      nullHandle("semaphore", 0n),
      invalid("an unknown semaphore type", "semaphoreType", 7),
      rejects(
        "a value on a binary semaphore",
        { semaphoreType: "binary" },
        "INVALID_VALUE",
        "value",
      ),
      accepts("a binary semaphore without a value", { semaphoreType: "binary", value: 0n }),
      accepts("no device", { device: undefined }),
      unknownFlags(1 << 0),
    ],
  },
  VkSemaphoreFd: {
    valid: { fd: memfd(16), handleType: "opaqueFd", semaphoreType: "timeline", value: 3n },
    changes: [
      invalid("a negative fd", "fd", -1),
      invalid("a closed fd", "fd", closedFd()),
      invalid("an unknown handle type", "handleType", 2),
      rejects(
        "a timeline as a sync fd",
        { handleType: "syncFd", fd: fenceFd("syncFile") },
        "INVALID_VALUE",
        "semaphoreType",
      ),
      rejects(
        "a sync fd that is not a sync_file",
        { handleType: "syncFd", semaphoreType: "binary", value: 0n, fd: fenceFd("eventfd") },
        "INVALID_VALUE",
        "fd",
      ),
      accepts("a binary sync fd", {
        handleType: "syncFd",
        semaphoreType: "binary",
        value: 0n,
        fd: fenceFd("syncFile"),
      }),
    ],
  },
  D3D12Fence: {
    valid: { fence: address(0x3000n), value: 9n, luid: { high: -1, low: 7 } },
    changes: [nullHandle("fence"), accepts("no luid", { luid: undefined })],
  },
  D3D11KeyedMutex: {
    valid: { mutex: address(0x3100n), key: 1n },
    changes: [nullHandle("mutex"), unknownFlags(1 << 0)],
  },
  CudaEvent: {
    valid: { event: 0xce00n, value: 12n, deviceUuid: UUID },
    changes: [
      nullHandle("event", 0n),
      accepts("no value and no device", { value: undefined, deviceUuid: undefined }),
    ],
  },
  CudaContextEvent: {
    valid: { event: 0xce10n, context: 0xc0n, device: 0, deviceUuid: UUID },
    changes: [
      nullHandle("event", 0n),
      nullHandle("context", 0n),
      invalid("a negative device", "device", -1),
    ],
  },
  OpenClEvent: {
    valid: { event: address(0x4000n) },
    changes: [nullHandle("event"), unknownFlags(1 << 0)],
  },
  MetalEvent: {
    valid: { event: address(0x5000n), value: 4n, registryId: 0x1234n },
    changes: [nullHandle("event"), accepts("no registry id", { registryId: undefined })],
  },
  GlSemaphore: {
    valid: { name: 3, context: address(0x6000n) },
    changes: [nullHandle("name", 0), accepts("no context", { context: undefined })],
  },
  GlSync: {
    valid: { sync: address(0x6100n), context: address(0x6000n) },
    changes: [nullHandle("sync"), accepts("no context", { context: undefined })],
  },
  WgpuSubmission: {
    valid: { fd: fenceFd("eventfd"), submission: 8n },
    changes: [
      invalid("a negative fd", "fd", -1),
      invalid("a memfd", "fd", memfd(16)),
    ],
  },
  WgpuDeferred: {
    valid: { fd: fenceFd("eventfd"), slot: 2n },
    changes: [nullHandle("slot", 0n), invalid("a pipe", "fd", pipeFd())],
  },
  CpuFence: {
    valid: { fd: fenceFd("eventfd") },
    changes: [
      invalid("a negative fd", "fd", -1),
      invalid("a closed fd", "fd", closedFd()),
      invalid("a memfd", "fd", memfd(16)),
      invalid("a sync_file", "fd", fenceFd("syncFile")),
    ],
  },
  NoopSync: {
    valid: {},
    changes: [unknownFlags(1 << 0)],
  },
  SyncFile: {
    valid: { fd: fenceFd("syncFile") },
    changes: [
      invalid("a negative fd", "fd", -1),
      invalid("an eventfd", "fd", fenceFd("eventfd")),
      invalid("a memfd", "fd", memfd(16)),
      invalid("a pipe", "fd", pipeFd()),
    ],
  },
  DrmSyncobj: {
    valid: { fd: fenceFd("syncobj"), point: 6n },
    changes: [
      invalid("a sync_file", "fd", fenceFd("syncFile")),
      invalid("a memfd", "fd", memfd(16)),
    ],
  },
  CudaVmmFd: {
    valid: {
      fd: memfd(4096),
      size: 4096n,
      offset: 256n,
      width: 16,
      height: 16,
      format: "RgbaU8",
      deviceUuid: UUID,
      slotRelease: { gate: gate(), value: 9n },
    },
    changes: [
      invalid("a negative fd", "fd", -1),
      invalid("a closed fd", "fd", closedFd()),
      zero("size", 0n),
      zero("width"),
      zero("height"),
      invalid("offset at size", "offset", 4096n),
      invalid("an unknown format", "format", 0),
      rejects(
        "a null slot release gate",
        { "slotRelease.gate": null },
        "NULL_POINTER",
        "slotRelease.gate",
      ),
      unknownFlags(extraFlags(1 << 0)), // GPURES_HAS_LUID
      accepts("no slot release", { slotRelease: undefined }),
      accepts("rows padded to 128 bytes", { rowPitch: 128 }),
      invalid("a row pitch below a row (16 RGBA pixels: 64 bytes)", "rowPitch", 32),
      invalid("rows that do not fit after the offset", "rowPitch", 1024),
    ],
  },
};

/** Kind names, in kind-id order. */
export type KindName = keyof Descs;

// -------------------------------------------------- resolving in Deno

/** What a Deno test or benchmark gives the fixtures for the placeholders. */
export interface Env {
  /** A new memfd of `size` bytes (the caller closes it). */
  memfd(size: number): number;
  /** An fd whose size cannot be read. */
  pipe(): number;
  /** An fd number that names nothing now. */
  closedFd(): number;
  /** A new fence fd of `type` (the caller closes it). */
  fence(type: FenceFdType): number;
  /** The address of the caller's 64-bit gate, plus `offset` bytes. */
  gate(offset: number): Deno.PointerValue;
  /** A texture of `shape`, or undefined where WebGPU is absent. */
  texture(shape: TextureShape): GPUTexture | undefined;
}

/** What GPUDevice.createTexture() takes to make a texture of `shape`. */
export function textureDescriptor(shape: TextureShape): GPUTextureDescriptor {
  return {
    size: [shape.width, shape.height, shape.depthOrArrayLayers],
    mipLevelCount: shape.mipLevelCount,
    sampleCount: shape.sampleCount,
    dimension: shape.dimension,
    format: shape.format as GPUTextureFormat,
    usage: shape.usage,
  };
}

/** `value` with every placeholder replaced through `env`: a fresh copy. */
export function resolve(value: unknown, env: Env): unknown {
  if (isPlaceholder(value)) {
    switch (value.$) {
      case "memfd":
        return env.memfd(value.size);
      case "pipe":
        return env.pipe();
      case "closedFd":
        return env.closedFd();
      case "fence":
        return env.fence(value.fence);
      case "address":
        return Deno.UnsafePointer.create(value.value);
      case "gate":
        return env.gate(value.offset);
      case "bytes":
        return new Uint8Array(value.size);
      case "texture":
        return env.texture(value.shape);
      default:
        throw new Error(`Cannot resolve a "${value.$}" placeholder outside a change`);
    }
  }
  if (value instanceof Uint8Array) return value.slice();
  if (Array.isArray(value)) return value.map((v) => resolve(v, env));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, env)]));
  }
  return value;
}

/** "planes[1].offset" -> ["planes", 1, "offset"]. */
export function pathParts(path: string): (string | number)[] {
  return path.split(/\.|(?=\[)/).map((p) => p.startsWith("[") ? Number(p.slice(1, -1)) : p);
}

/** Applies a change's paths to a resolved descriptor (Deno form). */
export function applyChange(desc: Record<string, unknown>, change: Change, env: Env): void {
  for (const [path, value] of Object.entries(change.set)) {
    const parts = pathParts(path);
    let at: Record<string | number, unknown> = desc;
    for (const p of parts.slice(0, -1)) at = at[p] as Record<string | number, unknown>;
    const last = parts[parts.length - 1];
    if (value === undefined) {
      delete at[last];
    } else if (isPlaceholder(value) && value.$ === "count") {
      const array = at[last] as unknown[];
      const tail = array[array.length - 1];
      at[last] = Array.from({ length: value.n }, (_, i) => i < array.length ? array[i] : tail);
    } else if (isPlaceholder(value) && value.$ === "extraFlags") {
      throw new Error(`"${change.what}" changes flags: a C-only change`);
    } else {
      at[last] = resolve(value, env);
    }
  }
}
