// Layouts and views: PixelFormat.layout() places a frame's planes in one
// buffer; planeViews() and the planes() of DmaBufHandle, CpuBytes and
// CpuPlanes give typed arrays over a frame's real memory, row by row.
// Every expected number is worked out by hand in the comment beside it.

import assert from "node:assert/strict";
import {
  CpuBytes,
  CpuPlanes,
  DmaBufHandle,
  type DmaBufHandleDesc,
  type GpuResourceError,
  InvalidHandleError,
  PixelFormat,
  planeViews,
  VkOpaqueFd,
  WrongKindError,
} from "../mod.ts";
import { fixture } from "./_support/fixtures.ts";
import { close, memfd, readAt, SEAL, writeAt } from "./_support/libc.ts";

const linux = Deno.build.os === "linux";
const NV12 = 0x3231564e;

/** `fn` must throw InvalidHandleError (or `Class`) naming `field`. */
function refuses(
  fn: () => unknown,
  field: string,
  Class: typeof GpuResourceError = InvalidHandleError,
) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof Class, `${e}`);
    assert.equal(e.field, field, e.message);
    return true;
  });
}

// ------------------------------------------------------ PixelFormat.layout

Deno.test("layout: NV12 1080p is 1920-byte luma rows then 540 chroma rows of the same bytes", () => {
  assert.deepEqual(PixelFormat.layout("NV12", 1920, 1080), {
    size: 3110400, // 1920 * 1080 * 1.5
    planes: [
      { offset: 0, stride: 1920, width: 1920, height: 1080, size: 2073600 },
      { offset: 2073600, stride: 1920, width: 960, height: 540, size: 1036800 },
    ],
  });
});

Deno.test("layout: NV12 33x17 rounds chroma up and pads rows to rowAlign", () => {
  assert.deepEqual(PixelFormat.layout("NV12", 33, 17, { rowAlign: 16 }), {
    size: 1248,
    planes: [
      { offset: 0, stride: 48, width: 33, height: 17, size: 816 }, // 33 -> 48, 17 rows
      { offset: 816, stride: 48, width: 17, height: 9, size: 432 }, // 17 UV pairs = 34 -> 48, 9 rows
    ],
  });
});

Deno.test("layout: I420 (YUV420P) 33x17 has two quarter-size chroma planes", () => {
  assert.deepEqual(PixelFormat.layout("YUV420P", 33, 17, { rowAlign: 16 }), {
    size: 1392,
    planes: [
      { offset: 0, stride: 48, width: 33, height: 17, size: 816 },
      { offset: 816, stride: 32, width: 17, height: 9, size: 288 }, // 17 -> 32, 9 rows
      { offset: 1104, stride: 32, width: 17, height: 9, size: 288 },
    ],
  });
});

Deno.test("layout: P010 has two bytes a sample and rows aligned to 64 by default", () => {
  assert.deepEqual(PixelFormat.layout("P010LE", 33, 17), {
    size: 3328,
    planes: [
      { offset: 0, stride: 128, width: 33, height: 17, size: 2176 }, // 66 bytes -> 128
      { offset: 2176, stride: 128, width: 17, height: 9, size: 1152 }, // 17 x 4 = 68 -> 128
    ],
  });
});

Deno.test("layout: RGBA rows are tight with rowAlign 1 and padded with 256", () => {
  const tight = PixelFormat.layout("RgbaU8", 33, 17, { rowAlign: 1 });
  assert.deepEqual(tight, {
    size: 2244, // 33 * 4 * 17
    planes: [{ offset: 0, stride: 132, width: 33, height: 17, size: 2244 }],
  });
  assert.equal(PixelFormat.layout("RgbaU8", 33, 17, { rowAlign: 256 }).size, 256 * 17);
  assert.equal(PixelFormat.layout(34, /* RgbaU8's id */ 33, 17, { rowAlign: 1 }).size, 2244);
});

Deno.test("layout: bad inputs are refused naming format, width, height or rowAlign", () => {
  refuses(() => PixelFormat.layout("Rgba9" as "RgbaU8", 64, 64), "format");
  refuses(() => PixelFormat.layout(49, 64, 64), "format");
  refuses(() => PixelFormat.layout("NV12", 0, 64), "width");
  refuses(() => PixelFormat.layout("NV12", -1, 64), "width");
  refuses(() => PixelFormat.layout("NV12", 64, 0), "height");
  refuses(() => PixelFormat.layout("NV12", 64, 1.5), "height");
  for (const rowAlign of [0, 3, 48, 8192, -64, 0.5]) {
    refuses(() => PixelFormat.layout("NV12", 64, 64, { rowAlign }), "rowAlign");
  }
  // a row past what a 32-bit stride holds, a buffer of 2^32 bytes or more
  refuses(() => PixelFormat.layout("RgbaF32", 0xffff_ffff, 1), "width");
  assert.equal(PixelFormat.layout("RgbaU8", 16384, 65535, { rowAlign: 1 }).size, 4294901760);
  refuses(() => PixelFormat.layout("RgbaU8", 16384, 65536, { rowAlign: 1 }), "height");
});

// ------------------------------------------------------------ planeViews

Deno.test("planeViews: each view starts at its plane's offset and steps by its stride", () => {
  const layout = PixelFormat.layout("NV12", 4, 2, { rowAlign: 8 }); // Y: 8 x 2 at 0, UV: 8 x 1 at 16
  const buffer = new ArrayBuffer(layout.size);
  const [y, uv] = planeViews(buffer, "NV12", layout.planes, 4, 2);
  assert.deepEqual(
    {
      width: y.width,
      height: y.height,
      stride: y.stride,
      channels: y.channels,
      row: y.bytesPerRow,
    },
    { width: 4, height: 2, stride: 8, channels: 1, row: 4 },
  );
  assert.deepEqual(
    { width: uv.width, height: uv.height, stride: uv.stride, channels: uv.channels },
    { width: 2, height: 1, stride: 8, channels: 2 },
  );
  y.data[1 * y.stride + 3] = 0xaa; // row 1, sample 3
  uv.data[0 * uv.stride + 1 * uv.channels + 1] = 0xbb; // sample 1's V
  const bytes = new Uint8Array(buffer);
  assert.equal(bytes[8 + 3], 0xaa);
  assert.equal(bytes[16 + 3], 0xbb);
  assert.ok(y.data instanceof Uint8Array);
  assert.equal(y.data.length, 8 + 4, "up to the last byte of the last row");
});

Deno.test("planeViews: P010 gives Uint16Array views with strides in samples", () => {
  const layout = PixelFormat.layout("P010LE", 6, 2, { rowAlign: 16 }); // Y: 16 x 2, UV: 16 x 1 at 32
  const buffer = new ArrayBuffer(layout.size);
  const [y, uv] = planeViews(buffer, "P010LE", layout.planes, 6, 2);
  assert.ok(y.data instanceof Uint16Array && uv.data instanceof Uint16Array);
  assert.equal(y.stride, 8); // 16 bytes
  assert.equal(y.bytesPerRow, 12);
  assert.equal(uv.width, 3);
  y.data[y.stride + 5] = 0x3ff << 6; // row 1, sample 5: 10-bit white in the high bits
  assert.equal(new DataView(buffer).getUint16(16 + 10, true), 0xffc0);
});

Deno.test("planeViews: a plane that does not fit is refused naming the field", () => {
  const layout = PixelFormat.layout("NV12", 64, 32); // 3072 bytes
  const at = (i: number, change: object) =>
    layout.planes.map((p, k) => k === i ? { ...p, ...change } : p);
  const views = (size: number, planes: { offset: number; stride: number }[], format = "NV12") =>
    planeViews(new ArrayBuffer(size), format as "NV12", planes, 64, 32);
  refuses(() => views(3071, layout.planes), "planes[1].offset");
  refuses(() => views(3072, at(1, { offset: 2049 })), "planes[1].offset");
  refuses(() => views(3072, at(0, { stride: 63 })), "planes[0].stride");
  refuses(() => views(3072, at(0, { offset: -1 })), "planes[0].offset");
  refuses(() => views(3072, layout.planes.slice(0, 1)), "planes");
  refuses(() => planeViews(new ArrayBuffer(3072), "NV12", layout.planes, 0, 32), "width");
  refuses(() => planeViews({} as ArrayBuffer, "NV12", layout.planes, 64, 32), "buffer");
  const p010 = PixelFormat.layout("P010LE", 64, 32);
  const p010At = (i: number, change: object) =>
    p010.planes.map((p, k) => k === i ? { ...p, ...change } : p);
  refuses(() => views(p010.size + 1, p010At(1, { offset: 4097 }), "P010LE"), "planes[1].offset");
  refuses(() => views(p010.size + 64, p010At(0, { stride: 129 }), "P010LE"), "planes[0].stride");
  // channels that are not 8 or 16 bits each have no typed view here
  refuses(
    () => planeViews(new ArrayBuffer(4096), "Rgb10A2", [{ offset: 0, stride: 256 }], 64, 4),
    "format",
  );
  refuses(
    () => planeViews(new ArrayBuffer(4096), "RgbaF32", [{ offset: 0, stride: 1024 }], 64, 4),
    "format",
  );
});

// ------------------------------------------------------ DmaBufHandle.planes

/** A sealed memfd holding one frame of `format` in its standard layout, as a DmaBufHandle. */
function laidOut(format: "P010LE" | "NV12", width: number, height: number) {
  const layout = PixelFormat.layout(format, width, height);
  const fd = memfd(layout.size, { seals: SEAL.SHRINK });
  const frame = DmaBufHandle.create({
    fds: [fd],
    format,
    modifier: 0n,
    width,
    height,
    planes: layout.planes.map((p) => ({ objectIndex: 0, offset: p.offset, stride: p.stride })),
  });
  return { frame, fd, layout };
}

Deno.test({
  name: "DmaBufHandle.planes(): P010 views read and write the sealed memfd's memory",
  ignore: !linux,
  fn() {
    const { frame, fd, layout } = laidOut("P010LE", 64, 32);
    try {
      assert.equal(frame.describe().fourcc, 0x30313050); // "P010": the format name became its fourcc
      const [y, uv] = frame.planes();
      assert.ok(y.data instanceof Uint16Array && uv.data instanceof Uint16Array);
      assert.equal(y.stride, 64); // 128 bytes
      y.data[y.stride * 2 + 1] = 0x1234; // row 2, sample 1
      assert.deepEqual([...readAt(fd, 2, 128 * 2 + 2)], [0x34, 0x12], "little-endian, in the file");
      writeAt(fd, new Uint8Array([0x78, 0x56]), layout.planes[1].offset + 128 + 4); // UV row 1, U of sample 1
      assert.equal(uv.data[uv.stride + 1 * uv.channels], 0x5678, "seen through the view");
      frame.release();
      assert.equal(y.data.length, 0, "the views end with the mapping");
    } finally {
      frame.release();
      close(fd);
    }
  },
});

Deno.test({
  name: "DmaBufHandle.planes(): a plane in each object is viewed over that object's mapping",
  ignore: !linux,
  fn() {
    const luma = memfd(2048), chroma = memfd(1024);
    try {
      using frame = DmaBufHandle.create(
        fixture("DmaBufHandle", { fds: [luma, chroma] }).desc as never,
      ); // NV12 64x32, 64-byte rows
      const [y, uv] = frame.planes();
      assert.equal(y.data.buffer, frame.map(0));
      assert.equal(uv.data.buffer, frame.map(1));
      uv.data[uv.stride * 15 + 31 * 2] = 7; // the last row's last U
      assert.deepEqual([...readAt(chroma, 1, 64 * 15 + 62)], [7]);
    } finally {
      close(luma);
      close(chroma);
    }
  },
});

Deno.test({
  name: "DmaBufHandle.planes(): a tiled or unknown layout and a kind without planes are refused",
  ignore: !linux,
  fn() {
    const fd = memfd(4096);
    try {
      const desc = { fds: [fd], modifier: 0n, width: 32, height: 32 };
      const plane = [{ objectIndex: 0, offset: 0, stride: 128 }];
      using tiled = DmaBufHandle.create({
        ...desc,
        format: "RgbaU8",
        modifier: 0x0100000000000001n,
        planes: plane,
      });
      refuses(() => tiled.planes(), "modifier");
      using unknown = DmaBufHandle.create({ ...desc, fourcc: 0x5a5a5a5a, planes: plane });
      refuses(() => unknown.planes(), "fourcc");
      using opaque = VkOpaqueFd.create(fixture("VkOpaqueFd", { fds: [fd] }).desc as never);
      refuses(() => (opaque as unknown as DmaBufHandle).planes(), "", WrongKindError);
    } finally {
      close(fd);
    }
  },
});

Deno.test({
  name: "DmaBufHandle.create(): a format name or a fourcc, exactly one, held to the format",
  ignore: !linux,
  fn() {
    const fd = memfd(3072);
    try {
      // The fixtures' NV12 64x32 frame in one object, its fourcc left out: each case names the format.
      using f = fixture("DmaBufHandle", { shape: "oneObject", fds: [fd] });
      const { fourcc: _fourcc, ...desc } = f.desc as unknown as DmaBufHandleDesc;
      using named = DmaBufHandle.create({ ...desc, format: "NV12" });
      assert.equal(named.describe().fourcc, NV12);
      refuses(() => DmaBufHandle.create({ ...desc, format: "Rgba9" as "NV12" }), "format");
      refuses(
        () => DmaBufHandle.create({ ...desc, format: "NV12", fourcc: NV12 } as never),
        "format",
      );
      refuses(() => DmaBufHandle.create({ ...desc, format: "P216LE" }), "format"); // no DRM fourcc
      refuses(() => DmaBufHandle.create({ ...desc, format: "YUV420P" }), "planes"); // 3 planes
      const overlapping = desc.planes.map((p, i) => i ? { ...p, offset: 1024 } : p);
      refuses(
        () => DmaBufHandle.create({ ...desc, format: "NV12", planes: overlapping }),
        "planes[1].offset",
      );
    } finally {
      close(fd);
    }
  },
});

// --------------------------------------------------------- CPU memory

Deno.test("CpuBytes.planes(): views over the aliased buffer, from its view's offset", () => {
  const memory = new Uint8Array(16 + 64 * 32 * 3 / 2);
  const data = memory.subarray(16); // the frame starts 16 bytes into the buffer
  using frame = CpuBytes.create({ data, rowPitch: 64, format: "NV12", width: 64, height: 32 });
  const [y, uv] = frame.planes();
  assert.equal(y.data.byteOffset, 16);
  assert.equal(uv.data.byteOffset, 16 + 2048);
  assert.deepEqual([uv.width, uv.height, uv.stride], [32, 16, 64]);
  uv.data[1] = 200;
  assert.equal(data[2048 + 1], 200);
  using copy = frame.clone();
  assert.equal(copy.planes()[1].data[1], 200, "a clone views the same memory");
});

Deno.test("CpuBytes.planes(): needs width and height, and JS memory", () => {
  using noExtent = CpuBytes.create({ data: new Uint8Array(64), rowPitch: 8, format: "RgbaU8" });
  refuses(() => noExtent.planes(), "width");
  using native = CpuBytes.create({
    ptr: 0x7000n,
    size: 64n,
    rowPitch: 8,
    format: "RgbaU8",
    width: 2,
    height: 2,
  });
  refuses(() => native.planes(), "data");
});

Deno.test("CpuPlanes: with width and height, an undersized chroma plane is refused", () => {
  const planes = [{ data: new Uint8Array(4096), rowPitch: 64 }, {
    data: new Uint8Array(2047),
    rowPitch: 64,
  }];
  refuses(
    () => CpuPlanes.create({ format: "NV12", width: 64, height: 64, planes }),
    "planes[1].size",
  );
  refuses(
    () =>
      CpuPlanes.create({
        format: "NV12",
        width: 64,
        height: 64,
        planes: [planes[0], { ...planes[1], rowPitch: 62 }],
      }),
    "planes[1].rowPitch",
  );
  refuses(() => CpuPlanes.create({ format: "NV12", width: 64, planes }), "height");
  using noExtent = CpuPlanes.create({ format: "NV12", planes }); // nothing to hold the planes to
  refuses(() => noExtent.planes(), "width");
});

Deno.test("CpuPlanes.planes(): P010 planes are Uint16Array views of each plane's own buffer", () => {
  const luma = new Uint16Array(16 * 8), chroma = new Uint16Array(16 * 4);
  using frame = CpuPlanes.create({
    format: "P010LE",
    width: 16,
    height: 8,
    planes: [{ data: luma, rowPitch: 32 }, { data: chroma, rowPitch: 32 }],
  });
  assert.deepEqual([frame.describe().width, frame.describe().height], [16, 8]);
  const [y, uv] = frame.planes();
  assert.ok(y.data instanceof Uint16Array);
  assert.equal(y.data.buffer, luma.buffer);
  assert.equal(uv.data.buffer, chroma.buffer);
  uv.data[uv.stride * 3 + 7 * 2 + 1] = 512; // last row, sample 7's V
  assert.equal(chroma[16 * 3 + 15], 512);
});
