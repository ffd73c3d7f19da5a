// PixelFormat: the library's one format table, as TypeScript reads it.

import assert from "node:assert/strict";
import { InvalidHandleError, PixelFormat, type PixelFormatName } from "../mod.ts";

/** SPEC section 2's list, in id order (id = index + 1). */
const SPEC_NAMES: PixelFormatName[] = [
  "NV12",
  "NV21",
  "P010LE",
  "P016LE",
  "NV16",
  "P210LE",
  "P216LE",
  "P410LE",
  "P416LE",
  "NV24",
  "NV12A",
  "YUV420P",
  "YUV422P",
  "YUV444P",
  "YUV420P10LE",
  "YUV420P12LE",
  "YUV420P14LE",
  "YUV420P16LE",
  "YUV422P10LE",
  "YUV422P12LE",
  "YUV422P14LE",
  "YUV422P16LE",
  "YUV444P10LE",
  "YUV444P12LE",
  "YUV444P14LE",
  "YUV444P16LE",
  "YUVA444P10LE",
  "YUVA444P12LE",
  "UYVY422",
  "YUYV422",
  "AYUV64LE",
  "V216",
  "Y210LE",
  "RgbaU8",
  "BgraU8",
  "RgbxU8",
  "BgrxU8",
  "RgbaU16",
  "BgraU16",
  "RgbaF16",
  "BgraF16",
  "RgbaF32",
  "BgraF32",
  "Rgb10A2",
  "RgbU16",
  "R16U",
  "R32F",
  "Rgba16U",
];

function isFormatError(e: unknown): boolean {
  assert.ok(e instanceof InvalidHandleError, `${e}`);
  assert.equal(e.code, "INVALID_VALUE");
  assert.equal(e.field, "format");
  return true;
}

// ------------------------------------------------------------------ the table

Deno.test("PixelFormat.names() lists SPEC's 48 formats, unique, in id order", () => {
  const names = PixelFormat.names();
  assert.equal(names.length, 48);
  assert.equal(new Set(names).size, 48);
  assert.deepEqual(names, SPEC_NAMES);
});

Deno.test("PixelFormat.info() gives each format the id of its place in SPEC's list", () => {
  SPEC_NAMES.forEach((name, i) => {
    const info = PixelFormat.info(name);
    assert.equal(info.id, i + 1, name);
    assert.equal(info.name, name);
  });
});

Deno.test("PixelFormat.info() by id equals PixelFormat.info() by name", () => {
  for (const name of SPEC_NAMES) {
    const byName = PixelFormat.info(name);
    assert.deepEqual(PixelFormat.info(byName.id), byName);
  }
});

Deno.test("PixelFormat.info() gives 1 to 4 planes, one entry each, with sane layouts", () => {
  for (const name of SPEC_NAMES) {
    const info = PixelFormat.info(name);
    assert.ok(info.numPlanes >= 1 && info.numPlanes <= 4, name);
    assert.equal(info.planes.length, info.numPlanes, name);
    for (const p of info.planes) {
      assert.ok([1, 2].includes(p.hsub) && [1, 2].includes(p.vsub), `${name} subsampling`);
      assert.ok(p.channels >= 1 && p.channels <= 4, `${name} channels`);
      assert.ok(p.blockWidth >= 1, `${name} blockWidth`);
      assert.ok(p.bytesPerSample >= 1, `${name} bytesPerSample`);
    }
  }
});

Deno.test("PixelFormat.info() marks HDR exactly the formats of more than 8 bits per sample", () => {
  for (const name of SPEC_NAMES) {
    const info = PixelFormat.info(name);
    assert.equal(info.hdr, info.bitsPerSample > 8, `${name}: ${info.bitsPerSample} bits`);
  }
});

Deno.test("PixelFormat.info() returns a copy: changing it changes nothing", () => {
  const info = PixelFormat.info("NV12");
  info.planes[1].hsub = 7;
  info.numPlanes = 4;
  assert.equal(PixelFormat.info("NV12").planes[1].hsub, 2);
  assert.equal(PixelFormat.info("NV12").numPlanes, 2);
});

// ------------------------------------------------------------ SPEC's examples

Deno.test("NV12 has two planes: full-size luma and half-size two-channel chroma", () => {
  const nv12 = PixelFormat.info("NV12");
  assert.equal(nv12.numPlanes, 2);
  assert.equal(nv12.planes[0].channels, 1);
  assert.equal(nv12.planes[1].channels, 2);
  assert.equal(nv12.planes[1].hsub, 2);
  assert.equal(nv12.planes[1].vsub, 2);
  assert.ok(nv12.yuv);
});

Deno.test("NV12 at 1920x1080: plane 0 is 1920x1080, plane 1 is 960x540 samples", () => {
  assert.deepEqual(PixelFormat.planeExtent("NV12", 0, 1920, 1080), { width: 1920, height: 1080 });
  assert.deepEqual(PixelFormat.planeExtent("NV12", 1, 1920, 1080), { width: 960, height: 540 });
});

Deno.test("PixelFormat.planeExtent() rounds subsampled planes of odd frames up", () => {
  assert.deepEqual(PixelFormat.planeExtent("NV12", 1, 1921, 1081), { width: 961, height: 541 });
  assert.deepEqual(PixelFormat.planeExtent("YUV422P", 2, 3, 3), { width: 2, height: 3 });
});

Deno.test("NV12 is 8 bits per sample and not HDR", () => {
  const nv12 = PixelFormat.info("NV12");
  assert.equal(nv12.bitsPerSample, 8);
  assert.equal(nv12.hdr, false);
});

Deno.test("P010LE, RgbaF16 and RgbaU16 are HDR", () => {
  for (const name of ["P010LE", "RgbaF16", "RgbaU16"] as const) {
    assert.equal(PixelFormat.info(name).hdr, true, name);
  }
  assert.equal(PixelFormat.info("P010LE").bitsPerSample, 10);
  assert.equal(PixelFormat.info("RgbaF16").float, true);
  assert.equal(PixelFormat.info("RgbaU16").float, false);
});

Deno.test("PixelFormat.frameSize() of NV12 1920x1080 with pitch 1920 is 3110400 bytes", () => {
  assert.equal(PixelFormat.frameSize("NV12", 1920, 1080, 1920), 3110400n);
});

Deno.test("PixelFormat.frameSize() counts pitch padding in every plane", () => {
  // Luma rows of 2048 bytes, chroma rows scaled the same: 2048 * (1080 + 540).
  assert.equal(PixelFormat.frameSize("NV12", 1920, 1080, 2048), 3317760n);
  assert.equal(PixelFormat.frameSize("RgbaU8", 1920, 1080, 7680), 8294400n);
  assert.equal(PixelFormat.frameSize("YUV420P", 1920, 1080, 1920), 3110400n);
});

Deno.test("PixelFormat.frameSize() refuses a pitch below a row, on rowPitch", () => {
  assert.throws(() => PixelFormat.frameSize("RgbaU8", 1920, 1080, 1920), (e: unknown) => {
    assert.ok(e instanceof InvalidHandleError);
    assert.equal(e.code, "INVALID_VALUE");
    assert.equal(e.field, "rowPitch");
    return true;
  });
});

// ---------------------------------------------------------------- bad names

Deno.test("PixelFormat.info() of an unknown name throws InvalidHandleError on format", () => {
  for (const name of ["nv12", "NV13", "", "toString", "__proto__", "constructor"]) {
    assert.throws(() => PixelFormat.info(name as PixelFormatName), isFormatError, name);
  }
});

Deno.test("PixelFormat.info() of an id outside 1..48 throws InvalidHandleError on format", () => {
  for (const id of [0, 49, -1, 1.5, NaN, 2 ** 32 + 1]) {
    assert.throws(() => PixelFormat.info(id), isFormatError, `${id}`);
  }
});

Deno.test("PixelFormat.info() of a value neither name nor id throws InvalidHandleError on format", () => {
  for (const value of [null, undefined, {}, [], true, Symbol("NV12")]) {
    assert.throws(() => PixelFormat.info(value as unknown as number), isFormatError, String(value));
  }
});

Deno.test({
  name: "PixelFormat.info() of a bigint throws InvalidHandleError on format",
  fn() {
    assert.throws(() => PixelFormat.info(1n as unknown as number), isFormatError);
  },
});

Deno.test("PixelFormat.planeExtent() and frameSize() of an unknown name throw InvalidHandleError on format", () => {
  assert.throws(() => PixelFormat.planeExtent("NV13" as PixelFormatName, 0, 4, 4), isFormatError);
  assert.throws(() => PixelFormat.frameSize("NV13" as PixelFormatName, 4, 4, 4), isFormatError);
  assert.throws(() => PixelFormat.frameSize(0, 4, 4, 4), isFormatError);
});

Deno.test("PixelFormat.planeExtent() of a plane the format lacks throws InvalidHandleError on plane", () => {
  for (const plane of [2, 4, -1, 0.5]) {
    assert.throws(() => PixelFormat.planeExtent("NV12", plane, 4, 4), (e: unknown) => {
      assert.ok(e instanceof InvalidHandleError);
      assert.equal(e.code, "INVALID_VALUE");
      assert.equal(e.field, "plane");
      return true;
    }, `plane ${plane}`);
  }
});

Deno.test({
  name:
    "PixelFormat.planeExtent() of a width or height that is not a u32 throws InvalidHandleError",
  fn() {
    for (
      const [width, height, field] of [[-1, 4, "width"], [NaN, 4, "width"], [
        4,
        2 ** 32,
        "height",
      ]] as const
    ) {
      assert.throws(() => PixelFormat.planeExtent("NV12", 1, width, height), (e: unknown) => {
        assert.ok(e instanceof InvalidHandleError, `${width}x${height}: ${e}`);
        assert.equal(e.code, "INVALID_VALUE");
        assert.equal(e.field, field);
        return true;
      });
    }
  },
});

Deno.test({
  name:
    "PixelFormat.frameSize() of a width, height or pitch that is not a u32 throws InvalidHandleError",
  fn() {
    const cases = [
      [[-1, 1080, 1920], "width"],
      [[NaN, 1080, 1920], "width"],
      [[1.5, 1080, 1920], "width"],
      [[1920, 2 ** 32, 1920], "height"],
      [[1920, 1080, 2 ** 32 + 1920], "rowPitch"],
    ] as const;
    for (const [[width, height, pitch], field] of cases) {
      assert.throws(() => PixelFormat.frameSize("NV12", width, height, pitch), (e: unknown) => {
        assert.ok(e instanceof InvalidHandleError, `${width}x${height}/${pitch}: ${e}`);
        assert.equal(e.code, "INVALID_VALUE");
        assert.equal(e.field, field);
        return true;
      });
    }
  },
});

Deno.test("PixelFormat.layout() of every format: planes in order, rows of rowAlign multiples", () => {
  for (const name of PixelFormat.names()) {
    const { size, planes } = PixelFormat.layout(name, 101, 37, { rowAlign: 32 });
    assert.equal(planes.length, PixelFormat.info(name).numPlanes, name);
    let end = 0;
    planes.forEach((p, i) => {
      assert.equal(p.offset, end, `${name} plane ${i} follows the one before`);
      assert.equal(p.stride % 32, 0, `${name} plane ${i}`);
      assert.deepEqual(
        { width: p.width, height: p.height },
        PixelFormat.planeExtent(name, i, 101, 37),
        `${name} plane ${i}`,
      );
      assert.equal(p.size, p.stride * p.height);
      end += p.size;
    });
    assert.equal(size, end, name);
  }
});

Deno.test("PixelFormat.layout() with rowAlign 1 and even sizes is frameSize()'s contiguous layout", () => {
  for (const name of PixelFormat.names()) {
    const layout = PixelFormat.layout(name, 64, 32, { rowAlign: 1 });
    const rowPitch = layout.planes[0].stride; // plane 0's row bytes: no padding
    assert.equal(BigInt(layout.size), PixelFormat.frameSize(name, 64, 32, rowPitch), name);
  }
});

Deno.test("PixelFormat.layout() refuses an unknown format, a zero extent or a bad rowAlign", () => {
  const cases = [
    [() => PixelFormat.layout("Rgba9" as PixelFormatName, 64, 64), "format"],
    [() => PixelFormat.layout("NV12", 0, 64), "width"],
    [() => PixelFormat.layout("NV12", 64, 0), "height"],
    [() => PixelFormat.layout("NV12", 64, 64, { rowAlign: 96 }), "rowAlign"],
    [() => PixelFormat.layout("NV12", 64, 64, { rowAlign: 2 ** 32 }), "rowAlign"],
  ] as const;
  for (const [fn, field] of cases) {
    assert.throws(fn, (e: unknown) => {
      assert.ok(e instanceof InvalidHandleError, `${e}`);
      assert.equal(e.code, "INVALID_VALUE");
      assert.equal(e.field, field);
      return true;
    });
  }
});
