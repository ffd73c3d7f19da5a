// A valid descriptor of every kind, and the descriptors create must reject,
// with the error code and field each rejection names. The variant tests walk
// these tables; a new kind adds one entry here.

import * as gpures from "../mod.ts";
import { memfd } from "./_libc.ts";

type Desc = Record<string, unknown>;

/** A kind's class, as the tests use it. */
export interface KindClass {
  readonly kindId: number;
  create(desc: never, options?: gpures.FdCreateOptions): gpures.GpuResource<unknown>;
}

/** What one kind's tests need. */
export interface Fixture {
  cls: KindClass;
  /** A fresh valid descriptor (fds are new memfds the test must close). */
  valid(): Desc;
  /** fds valid() opened, for the test to close. */
  fds?(desc: Desc): number[];
  /** Mutations create must refuse: [what, mutate, code, field]. */
  rejects: [string, (d: Desc) => void, string, string][];
}

const ptr = (n: number) => Deno.UnsafePointer.create(BigInt(n));
const uuid = () => new Uint8Array(16).map((_, i) => i + 1);
const pixels = new Uint8Array(64 * 64 * 4);
const NV12 = 0x3231564e; // DRM fourcc "NV12"

const nullRejects = (field: string, code = "NULL_HANDLE"): Fixture["rejects"] => [
  [
    `a null ${field}`,
    (d) => (d[field] = field.match(/^(image|buffer|ptr|surface|token)$/) ? 0n : null),
    code,
    field,
  ],
];
const zero = (field: string, code = "ZERO_SIZE"): Fixture["rejects"][number] => [
  `${field} 0`,
  (d) => (d[field] = typeof d[field] === "bigint" ? 0n : 0),
  code,
  field,
];

export const fixtures: Record<string, Fixture> = {
  D3D11Texture: {
    cls: gpures.D3D11Texture,
    valid: () => ({ texture: ptr(0x1000), rowPitch: 256, luid: { high: -1, low: 7 } }),
    rejects: nullRejects("texture"),
  },
  D3D12Resource: {
    cls: gpures.D3D12Resource,
    valid: () => ({ resource: ptr(0x1000), rowPitch: 256 }),
    rejects: nullRejects("resource"),
  },
  D3D12BufferHandle: {
    cls: gpures.D3D12BufferHandle,
    valid: () => ({ resource: ptr(0x1000), size: 4096n }),
    rejects: [...nullRejects("resource"), zero("size")],
  },
  VkImage: {
    cls: gpures.VkImage,
    valid: () => ({
      image: 0xabcdefn,
      device: ptr(0x2000),
      deviceUuid: uuid(),
      rowPitch: 256,
      width: 64,
      height: 64,
    }),
    rejects: [
      ...nullRejects("image"),
      ["width without height", (d) => (d.height = 0), "ZERO_SIZE", "height"],
      [
        "a null slot release gate",
        (d) => (d.slotRelease = { gate: null, value: 1n }),
        "NULL_POINTER",
        "slotRelease.gate",
      ],
      [
        "a 15-byte deviceUuid",
        (d) => (d.deviceUuid = new Uint8Array(15)),
        "INVALID_VALUE",
        "deviceUuid",
      ],
    ],
  },
  VkBufferHandle: {
    cls: gpures.VkBufferHandle,
    valid: () => ({ buffer: 0x1234n, size: 65536n }),
    rejects: [...nullRejects("buffer"), zero("size")],
  },
  VkOpaqueFd: {
    cls: gpures.VkOpaqueFd,
    valid: () => ({
      fd: memfd(65536),
      size: 65536n,
      memoryTypeIndex: 2,
      offset: 0n,
      dedicated: true,
      width: 64,
      height: 64,
      format: "RgbaU8",
      deviceUuid: uuid(),
    }),
    fds: (d) => [d.fd as number],
    rejects: [
      ["a negative fd", (d) => (d.fd = -1), "INVALID_VALUE", "fd"],
      zero("size"),
      zero("width"),
      zero("height"),
      ["offset at size", (d) => (d.offset = 65536n), "INVALID_VALUE", "offset"],
      ["an unknown format", (d) => (d.format = 0), "INVALID_VALUE", "format"],
    ],
  },
  CudaPtr2D: {
    cls: gpures.CudaPtr2D,
    valid: () => ({
      ptr: 0x7f0000000000n,
      rowPitch: 2048,
      planeByteOffsets: [0n, 2048n * 1080n],
      width: 1920,
      height: 1080,
    }),
    rejects: [
      ...nullRejects("ptr"),
      zero("rowPitch"),
      [
        "5 plane offsets",
        (d) => (d.planeByteOffsets = [0n, 1n, 2n, 3n, 4n]),
        "INVALID_VALUE",
        "planeByteOffsets",
      ],
    ],
  },
  CudaBufferHandle: {
    cls: gpures.CudaBufferHandle,
    valid: () => ({ ptr: 0x7f0000000000n, size: 1n << 20n, deviceUuid: uuid() }),
    rejects: [...nullRejects("ptr"), zero("size")],
  },
  CudaSurface: {
    cls: gpures.CudaSurface,
    valid: () => ({ surface: 5n, format: "rgba8unorm", width: 64, height: 64 }),
    rejects: [
      ...nullRejects("surface"),
      zero("width"),
      zero("height"),
      ["an unknown format", (d) => (d.format = 999), "INVALID_VALUE", "format"],
    ],
  },
  OpenClMem: {
    cls: gpures.OpenClMem,
    valid: () => ({ mem: ptr(0x3000), queue: ptr(0x4000), rowPitch: 256 }),
    rejects: [...nullRejects("mem"), ...nullRejects("queue")],
  },
  MetalTextureHandle: {
    cls: gpures.MetalTextureHandle,
    valid: () => ({ texture: ptr(0x5000), registryId: 42n }),
    rejects: nullRejects("texture"),
  },
  MetalBufferHandle: {
    cls: gpures.MetalBufferHandle,
    valid: () => ({ buffer: ptr(0x5000), rowPitch: 256 }),
    rejects: nullRejects("buffer"),
  },
  GlTextureHandle: {
    cls: gpures.GlTextureHandle,
    valid: () => ({ name: 3, target: "Texture2D", internalFormat: "Rgba8" }),
    rejects: [
      ["name 0", (d) => (d.name = 0), "NULL_HANDLE", "name"],
      ["an unknown target", (d) => (d.target = 0x1234), "INVALID_VALUE", "target"],
      [
        "an unknown internal format",
        (d) => (d.internalFormat = 0x1234),
        "INVALID_VALUE",
        "internalFormat",
      ],
    ],
  },
  GlBufferHandle: {
    cls: gpures.GlBufferHandle,
    valid: () => ({ name: 4, target: "PixelUnpackBuffer", size: 1024n }),
    rejects: [
      ["name 0", (d) => (d.name = 0), "NULL_HANDLE", "name"],
      zero("size"),
      ["an unknown target", (d) => (d.target = 0x0DE1), "INVALID_VALUE", "target"],
    ],
  },
  DmaBufHandle: {
    cls: gpures.DmaBufHandle,
    valid: () => ({
      fds: [memfd(64 * 48 * 3 / 2)],
      fourcc: NV12,
      modifier: 0n,
      width: 64,
      height: 48,
      planes: [{ objectIndex: 0, offset: 0, stride: 64 }, {
        objectIndex: 0,
        offset: 64 * 48,
        stride: 64,
      }],
    }),
    fds: (d) => d.fds as number[],
    rejects: [
      ["a negative fd", (d) => ((d.fds as number[])[0] = -1), "INVALID_VALUE", "fds[0]"],
      ["no fds", (d) => (d.fds = []), "INVALID_VALUE", "fds"],
      ["5 fds", (d) => (d.fds = [0, 0, 0, 0, 0]), "INVALID_VALUE", "fds"],
      ["no planes", (d) => (d.planes = []), "INVALID_VALUE", "planes"],
      zero("width"),
      zero("height"),
      [
        "a plane naming a missing object",
        (d) => ((d.planes as Desc[])[1].objectIndex = 1),
        "INVALID_VALUE",
        "planes[1].objectIndex",
      ],
      [
        "a plane outside its object",
        (d) => ((d.planes as Desc[])[1].offset = 64 * 48 + 1),
        "INVALID_VALUE",
        "planes[1].offset",
      ],
      [
        "a stride below the row",
        (d) => ((d.planes as Desc[])[0].stride = 63),
        "INVALID_VALUE",
        "planes[0].stride",
      ],
      [
        "one plane for NV12",
        (d) => (d.planes = [(d.planes as Desc[])[0]]),
        "INVALID_VALUE",
        "planes",
      ],
    ],
  },
  VaapiSurface: {
    cls: gpures.VaapiSurface,
    valid: () => ({ surface: 0, display: ptr(0x6000) }),
    rejects: nullRejects("display"),
  },
  CpuBytes: {
    cls: gpures.CpuBytes,
    valid: () => ({ data: pixels, rowPitch: 256, format: "RgbaU8", width: 64, height: 64 }),
    rejects: [
      [
        "a null ptr",
        (d) => {
          delete d.data;
          d.ptr = null;
          d.size = 16n;
        },
        "NULL_POINTER",
        "ptr",
      ],
      [
        "size 0",
        (d) => {
          delete d.data;
          d.ptr = ptr(0x7000);
          d.size = 0n;
        },
        "ZERO_SIZE",
        "size",
      ],
      ["an empty buffer", (d) => (d.data = new Uint8Array(0)), "ZERO_SIZE", "data"],
      ["a row pitch below the row", (d) => (d.rowPitch = 255), "INVALID_VALUE", "rowPitch"],
      ["rows that do not fit", (d) => (d.height = 65), "INVALID_VALUE", "size"],
      ["width without height", (d) => delete d.height, "ZERO_SIZE", "height"],
      ["an unknown format", (d) => (d.format = "Rgba9"), "INVALID_VALUE", "format"],
    ],
  },
  CpuPlanes: {
    cls: gpures.CpuPlanes,
    valid: () => ({
      format: "NV12",
      planes: [{ data: new Uint8Array(64 * 48), rowPitch: 64 }, {
        data: new Uint8Array(64 * 24),
        rowPitch: 64,
      }],
    }),
    rejects: [
      [
        "three planes for NV12",
        (d) => (d.planes as Desc[]).push({ data: new Uint8Array(8), rowPitch: 8 }),
        "INVALID_VALUE",
        "planes",
      ],
      ["no planes", (d) => (d.planes = []), "INVALID_VALUE", "planes"],
      [
        "5 planes",
        (d) => (d.planes = Array.from({ length: 5 }, () => ({ data: pixels, rowPitch: 8 }))),
        "INVALID_VALUE",
        "planes",
      ],
      [
        "a null plane",
        (d) => ((d.planes as Desc[])[1] = { ptr: null, size: 8n, rowPitch: 8 }),
        "NULL_POINTER",
        "planes[1].data",
      ],
      [
        "a zero-size plane",
        (d) => ((d.planes as Desc[])[1] = { ptr: ptr(0x8000), size: 0n, rowPitch: 8 }),
        "ZERO_SIZE",
        "planes[1].size",
      ],
    ],
  },
  CpuSharedSlot: {
    cls: gpures.CpuSharedSlot,
    valid: () => ({ size: 4096n, rowPitch: 64, format: "R16U" }),
    rejects: [zero("size")],
  },
  WgpuTexture: {
    cls: gpures.WgpuTexture,
    valid: () => ({ texture: wgpuTexture }),
    rejects: [["not a GPUTexture", (d) => (d.texture = {}), "INVALID_VALUE", "texture"]],
  },
};

/** A real texture of Deno's WebGPU, or undefined when there is no adapter. */
export let wgpuTexture: GPUTexture | undefined;
/** Why WebGPU tests skip, when they do. */
export let wgpuMissing = "";
try {
  const adapter = await navigator.gpu?.requestAdapter();
  const device = await adapter?.requestDevice();
  wgpuTexture = device?.createTexture({
    size: [64, 32],
    format: "rgba8unorm",
    usage: GPUTextureUsage.COPY_DST | GPUTextureUsage.TEXTURE_BINDING,
  });
  if (!wgpuTexture) wgpuMissing = "no WebGPU adapter";
} catch (e) {
  wgpuMissing = `WebGPU failed: ${(e as Error).message}`;
}
