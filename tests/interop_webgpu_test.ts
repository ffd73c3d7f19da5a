// The WebGPU bridge on Deno's own WebGPU (llvmpipe on a machine without a
// GPU): frames of each format uploaded from their plane views, converted to
// RGBA on the GPU, and compared with a plain CPU reference computed here from
// the textbook BT.601 / BT.709 equations (rounded published constants, not
// the bridge's derivation), within ±2 per channel.

import assert from "node:assert/strict";
import {
  CpuBytes,
  CpuPlanes,
  FramePool,
  InvalidHandleError,
  PixelFormat,
  type PlaneView,
  planeViews,
  ReleasedError,
  UnsupportedError,
} from "../mod.ts";
import {
  FRAME_TO_RGBA_WGSL,
  readRgbaTexture,
  type UploadOptions,
  WebGpuFrameUploader,
  yuvToRgbCoefficients,
} from "../ffi/interop/webgpu.ts";

const adapter = await navigator.gpu?.requestAdapter().catch(() => null);
const device = await adapter?.requestDevice().catch(() => undefined);
const missing = device ? "" : "no WebGPU adapter";
if (missing) console.log(`WebGPU bridge tests skip: ${missing}`);
const linux = Deno.build.os === "linux";

function gpuTest(
  name: string,
  fn: (device: GPUDevice) => Promise<void> | void,
  skip = missing,
): void {
  Deno.test({ name, ignore: Boolean(skip), fn: () => fn(device!) });
}

// ------------------------------------------------------------ CPU reference

type Matrix = "601" | "709";

/** Textbook equations: [Y gain, V→R, U→G, V→G, U→B] per matrix and range. */
const TEXTBOOK: Record<`${Matrix} ${"limited" | "full"}`, number[]> = {
  "601 limited": [1.164, 1.596, 0.392, 0.813, 2.017],
  "709 limited": [1.164, 1.793, 0.213, 0.533, 2.112],
  "601 full": [1, 1.402, 0.344, 0.714, 1.772],
  "709 full": [1, 1.575, 0.187, 0.468, 1.856],
};

/** 8-bit-scale Y, U, V (fractions allowed) to an RGBA pixel. */
function referencePixel(y: number, u: number, v: number, m: Matrix, full: boolean): number[] {
  const [k, rv, gu, gv, bu] = TEXTBOOK[`${m} ${full ? "full" : "limited"}`];
  const l = k * (full ? y : y - 16), cb = u - 128, cr = v - 128;
  const channel = (x: number) => Math.min(255, Math.max(0, Math.round(x)));
  return [channel(l + rv * cr), channel(l - gu * cb - gv * cr), channel(l + bu * cb), 255];
}

/** A 4:2:0 test pattern in 8-bit units: luma varies per pixel, chroma per 2 x 2 block. */
interface Pattern {
  y(x: number, row: number): number;
  u(cx: number, cy: number): number;
  v(cx: number, cy: number): number;
}

const PATTERN: Pattern = {
  y: (x, row) => 16 + ((x * 37 + row * 11) % 220),
  u: (cx, cy) => 16 + ((cx * 53 + cy * 29) % 225),
  v: (cx, cy) => 16 + ((cx * 17 + cy * 71 + 90) % 225),
};

/** One colour everywhere. */
const flat = (y: number, u: number, v: number): Pattern => ({ y: () => y, u: () => u, v: () => v });

function referenceImage(
  p: Pattern,
  width: number,
  height: number,
  m: Matrix,
  full: boolean,
): Uint8Array {
  const out = new Uint8Array(width * height * 4);
  for (let row = 0; row < height; row++) {
    for (let x = 0; x < width; x++) {
      const [cx, cy] = [x >> 1, row >> 1];
      out.set(
        referencePixel(p.y(x, row), p.u(cx, cy), p.v(cx, cy), m, full),
        (row * width + x) * 4,
      );
    }
  }
  return out;
}

/** Every channel within `tolerance`; the message names the first pixel off and by how much. */
function assertClose(actual: Uint8Array, expected: Uint8Array, width: number, tolerance = 2): void {
  assert.equal(actual.length, expected.length);
  let worst = 0, at = -1;
  for (let i = 0; i < actual.length; i++) {
    const d = Math.abs(actual[i] - expected[i]);
    if (d > worst) [worst, at] = [d, i];
  }
  if (worst > tolerance) {
    const px = at >> 2, x = px % width, y = Math.floor(px / width);
    const got = [...actual.subarray(px * 4, px * 4 + 4)];
    const want = [...expected.subarray(px * 4, px * 4 + 4)];
    assert.fail(`pixel (${x}, ${y}) is [${got}], expected [${want}]: off by ${worst}`);
  }
}

// ------------------------------------------------------------ frame painting

/** Writes a pattern into NV12 views: Y, then interleaved U, V. */
function paintNv12([y, uv]: PlaneView[], p: Pattern, width: number, height: number): void {
  for (let row = 0; row < height; row++) {
    for (let x = 0; x < width; x++) y.data[row * y.stride + x] = p.y(x, row);
  }
  for (let cy = 0; cy < height / 2; cy++) {
    for (let cx = 0; cx < width / 2; cx++) {
      uv.data[cy * uv.stride + cx * 2] = p.u(cx, cy);
      uv.data[cy * uv.stride + cx * 2 + 1] = p.v(cx, cy);
    }
  }
}

function paintI420([y, u, v]: PlaneView[], p: Pattern, width: number, height: number): void {
  for (let row = 0; row < height; row++) {
    for (let x = 0; x < width; x++) y.data[row * y.stride + x] = p.y(x, row);
  }
  for (let cy = 0; cy < height / 2; cy++) {
    for (let cx = 0; cx < width / 2; cx++) {
      u.data[cy * u.stride + cx] = p.u(cx, cy);
      v.data[cy * v.stride + cx] = p.v(cx, cy);
    }
  }
}

async function convert(
  uploader: WebGpuFrameUploader,
  source: Parameters<WebGpuFrameUploader["upload"]>[0],
  options?: UploadOptions,
): Promise<Uint8Array> {
  const rgba = uploader.convertToRgba(uploader.upload(source, options));
  return await readRgbaTexture(uploader.device, rgba);
}

function nv12Frame(p: Pattern, width: number, height: number): CpuBytes {
  const data = new Uint8Array((width * height * 3) / 2);
  const frame = CpuBytes.create({ data, rowPitch: width, format: "NV12", width, height });
  paintNv12(frame.planes(), p, width, height);
  return frame;
}

// ------------------------------------------------------------------- formats

gpuTest("NV12 converts to RGBA as BT.601 limited range by default below 720 rows", async (gpu) => {
  const [W, H] = [64, 32];
  using frame = nv12Frame(PATTERN, W, H);
  using uploader = new WebGpuFrameUploader(gpu);
  const uploaded = uploader.upload(frame);
  assert.deepEqual(uploaded.color, { matrix: "smpte170m", fullRange: false });
  assert.deepEqual(uploaded.textures.map((t) => [t.format, t.width, t.height]), [
    ["r8unorm", W, H],
    ["rg8unorm", W / 2, H / 2],
  ]);
  const rgba = uploader.convertToRgba(uploaded);
  assert.equal(rgba.format, "rgba8unorm");
  assertClose(await readRgbaTexture(gpu, rgba), referenceImage(PATTERN, W, H, "601", false), W);
});

gpuTest("I420 (YUV420P) planes convert like NV12's", async (gpu) => {
  const [W, H] = [48, 16];
  const layout = PixelFormat.layout("YUV420P", W, H);
  const views = planeViews(new ArrayBuffer(layout.size), "YUV420P", layout.planes, W, H);
  paintI420(views, PATTERN, W, H);
  using uploader = new WebGpuFrameUploader(gpu);
  const rgba = await convert(uploader, views, { format: "YUV420P", width: W, height: H });
  assertClose(rgba, referenceImage(PATTERN, W, H, "601", false), W);
});

gpuTest("P010 keeps its 10 high bits and drops the 6 low ones", async (gpu) => {
  const [W, H] = [32, 16];
  // 10-bit codes that are not multiples of 4, so 8-bit rounding would show.
  const y10 = (x: number, row: number) => 64 + ((x * 37 + row * 13) % 877);
  const u10 = (cx: number, cy: number) => 64 + ((cx * 101 + cy * 7) % 897);
  const v10 = (cx: number, cy: number) => 64 + ((cx * 29 + cy * 131 + 300) % 897);
  const junk = (i: number) => (i * 23) & 0x3f;
  const luma = new Uint16Array(W * H), chroma = new Uint16Array(W * (H / 2));
  for (let row = 0; row < H; row++) {
    for (let x = 0; x < W; x++) luma[row * W + x] = (y10(x, row) << 6) | junk(x);
  }
  for (let cy = 0; cy < H / 2; cy++) {
    for (let cx = 0; cx < W / 2; cx++) {
      chroma[cy * W + cx * 2] = (u10(cx, cy) << 6) | junk(cx + 1);
      chroma[cy * W + cx * 2 + 1] = (v10(cx, cy) << 6) | junk(cy + 2);
    }
  }
  using frame = CpuPlanes.create({
    format: "P010LE",
    width: W,
    height: H,
    planes: [{ data: luma, rowPitch: W * 2 }, { data: chroma, rowPitch: W * 2 }],
  });
  using uploader = new WebGpuFrameUploader(gpu);
  const uploaded = uploader.upload(frame, { matrix: "bt709" });
  assert.deepEqual(uploaded.textures.map((t) => t.format), ["r16uint", "rg16uint"]);
  // Limited range 10-bit is 8-bit limited range times 4: a quarter of each code, unrounded.
  const quarter: Pattern = {
    y: (x, row) => y10(x, row) / 4,
    u: (cx, cy) => u10(cx, cy) / 4,
    v: (cx, cy) => v10(cx, cy) / 4,
  };
  const rgba = await readRgbaTexture(gpu, uploader.convertToRgba(uploaded));
  assertClose(rgba, referenceImage(quarter, W, H, "709", false), W);
});

gpuTest("RgbaU8 is its own texture; BgraU8 is swizzled; RgbxU8 gets opaque alpha", async (gpu) => {
  const [W, H, pitch] = [20, 6, 96]; // 80 bytes of pixels, 16 of padding a row
  const pixels = new Uint8Array(pitch * H).map((_, i) => (i * 31 + 7) & 0xff);
  const packed = (order: number[], alpha?: number) => {
    const out = new Uint8Array(W * H * 4);
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const at = y * pitch + x * 4;
        const px = order.map((c) => pixels[at + c]);
        out.set(alpha === undefined ? px : [...px.slice(0, 3), alpha], (y * W + x) * 4);
      }
    }
    return out;
  };
  using uploader = new WebGpuFrameUploader(gpu);
  const frame = (format: "RgbaU8" | "BgraU8" | "RgbxU8") =>
    CpuBytes.create({ data: pixels, rowPitch: pitch, format, width: W, height: H });
  using rgba = frame("RgbaU8"), bgra = frame("BgraU8"), rgbx = frame("RgbxU8");
  const uploaded = uploader.upload(rgba);
  assert.equal(uploaded.color, null);
  assert.equal(uploader.convertToRgba(uploaded), uploaded.textures[0]);
  assert.deepEqual(await readRgbaTexture(gpu, uploaded.textures[0]), packed([0, 1, 2, 3]));
  assert.deepEqual(await convert(uploader, bgra), packed([2, 1, 0, 3]));
  assert.deepEqual(await convert(uploader, rgbx), packed([0, 1, 2], 255));
});

// ------------------------------------------------------------ matrix, range

gpuTest(
  "BT.601 and BT.709, limited and full range, give measurably different RGBA",
  async (gpu) => {
    const [W, H] = [16, 8];
    const red = flat(81, 90, 240); // a saturated colour, where the matrices differ most
    using frame = nv12Frame(red, W, H);
    using uploader = new WebGpuFrameUploader(gpu);
    const results = new Map<string, number[]>();
    for (const [matrix, m] of [["bt601", "601"], ["bt709", "709"]] as const) {
      for (const fullRange of [false, true]) {
        const rgba = await convert(uploader, frame, { matrix, fullRange });
        assertClose(rgba, referenceImage(red, W, H, m, fullRange), W);
        results.set(`${m} ${fullRange}`, [...rgba.subarray(0, 3)]);
      }
    }
    const apart = (a: string, b: string) =>
      Math.max(...results.get(a)!.map((c, i) => Math.abs(c - results.get(b)![i])));
    assert.ok(apart("601 false", "709 false") >= 10, `matrices: ${[...results]}`);
    assert.ok(apart("601 true", "709 true") >= 10, `matrices: ${[...results]}`);
    assert.ok(apart("601 false", "601 true") >= 10, `ranges: ${[...results]}`);
    assert.ok(apart("709 false", "709 true") >= 10, `ranges: ${[...results]}`);
  },
);

gpuTest("a frame's colour metadata picks the matrix and range over options", async (gpu) => {
  const [W, H] = [32, 16];
  using frame = nv12Frame(PATTERN, W, H);
  frame.setMeta({
    color: { primaries: "bt709", transfer: "bt709", matrix: "bt709", fullRange: true },
  });
  using uploader = new WebGpuFrameUploader(gpu);
  const expected = referenceImage(PATTERN, W, H, "709", true);
  const options: UploadOptions = { matrix: "bt601", fullRange: false };
  const uploaded = uploader.upload(frame, options);
  assert.deepEqual(uploaded.color, { matrix: "bt709", fullRange: true });
  assertClose(await readRgbaTexture(gpu, uploader.convertToRgba(uploaded)), expected, W);
  // Plane views carry no metadata of their own: options.meta brings the frame's along.
  const views = frame.planes();
  const shape = { format: "NV12", width: W, height: H } as const;
  assertClose(await convert(uploader, views, { ...shape, meta: frame.meta }), expected, W);
  // An "unspecified" matrix leaves the matrix to options, the range still the metadata's.
  frame.setMeta({
    color: { primaries: "bt709", transfer: "bt709", matrix: "unspecified", fullRange: true },
  });
  assert.deepEqual(uploader.upload(frame, options).color, { matrix: "smpte170m", fullRange: true });
  assertClose(
    await readRgbaTexture(gpu, uploader.convertToRgba(uploader.upload(frame, options))),
    referenceImage(PATTERN, W, H, "601", true),
    W,
  );
});

gpuTest("without metadata or options, 720 rows and more default to BT.709", (gpu) => {
  using uploader = new WebGpuFrameUploader(gpu);
  const views = (height: number) => {
    const layout = PixelFormat.layout("NV12", 16, height);
    return planeViews(new ArrayBuffer(layout.size), "NV12", layout.planes, 16, height);
  };
  for (const [height, matrix] of [[718, "smpte170m"], [720, "bt709"]] as const) {
    const uploaded = uploader.upload(views(height), { format: "NV12", width: 16, height });
    assert.deepEqual(uploaded.color, { matrix, fullRange: false });
  }
});

// ------------------------------------------------- zero copy, strides, cache

gpuTest(
  "a FramePool frame goes from its mapped planes to writeTexture, one call a plane",
  async (gpu) => {
    const [W, H] = [72, 40]; // 72-byte rows padded to 128 by the pool's 64-byte alignment
    using pool = FramePool.create({ format: "NV12", width: W, height: H, slots: 2 });
    using frame = await pool.acquire();
    const views = pool.planes(frame);
    assert.equal(views[0].stride, 128);
    paintNv12(views, PATTERN, W, H);
    frame.setMeta({
      color: { primaries: "bt709", transfer: "bt709", matrix: "bt709", fullRange: false },
    });
    using uploader = new WebGpuFrameUploader(gpu);
    const writes = spyWriteTexture(gpu.queue);
    try {
      const uploaded = uploader.upload(frame, { planes: views });
      assert.equal(writes.length, 2);
      writes.forEach(([, data, layout], i) => {
        assert.equal(data, views[i].data, `plane ${i} is written from its own view, not a copy`);
        assert.equal(layout.bytesPerRow, 128);
      });
      const rgba = await readRgbaTexture(gpu, uploader.convertToRgba(uploaded));
      assertClose(rgba, referenceImage(PATTERN, W, H, "709", false), W);
    } finally {
      writes.restore();
    }
  },
  missing || (linux ? "" : "FramePool is Linux only"),
);

/** Records queue.writeTexture's arguments while calling through. */
function spyWriteTexture(queue: GPUQueue) {
  type Args = [GPUTexelCopyTextureInfo, ArrayBufferView, GPUTexelCopyBufferLayout, GPUExtent3D];
  const calls: Args[] & { restore(): void } = Object.assign([], {
    restore: () => delete (queue as { writeTexture?: unknown }).writeTexture,
  });
  const original = queue.writeTexture;
  queue.writeTexture = function (this: GPUQueue, ...args: Args) {
    calls.push(args);
    return original.apply(this, args as Parameters<GPUQueue["writeTexture"]>);
  } as GPUQueue["writeTexture"];
  return calls;
}

gpuTest("strides that are no multiple of 4 or 256, planes apart in one buffer", async (gpu) => {
  const [W, H, stride] = [64, 32, 101];
  const chromaAt = stride * H + 13;
  const buffer = new ArrayBuffer(chromaAt + stride * (H / 2));
  const placed = [{ offset: 0, stride }, { offset: chromaAt, stride }];
  const views = planeViews(buffer, "NV12", placed, W, H);
  new Uint8Array(buffer).fill(0xee); // padding that must not show
  paintNv12(views, PATTERN, W, H);
  using uploader = new WebGpuFrameUploader(gpu);
  const rgba = await convert(uploader, views, { format: "NV12", width: W, height: H });
  assertClose(rgba, referenceImage(PATTERN, W, H, "601", false), W);
});

gpuTest(
  "steady-state frames reuse the cached textures; a new shape evicts the oldest",
  async (gpu) => {
    using uploader = new WebGpuFrameUploader(gpu, { maxShapes: 1 });
    let created = 0;
    const createTexture = gpu.createTexture;
    gpu.createTexture = function (d: GPUTextureDescriptor) {
      created++;
      return createTexture.call(this, d);
    };
    try {
      using a = nv12Frame(PATTERN, 32, 16), b = nv12Frame(flat(120, 60, 200), 32, 16);
      const first = uploader.upload(a);
      const rgba = uploader.convertToRgba(first);
      const made = created;
      assert.equal(made, 3); // two planes and the RGBA target
      for (const frame of [b, a, b]) {
        const next = uploader.upload(frame);
        assert.equal(next, first);
        assert.equal(uploader.convertToRgba(next), rgba);
      }
      assert.equal(created, made);
      assertClose(
        await readRgbaTexture(gpu, rgba),
        referenceImage(flat(120, 60, 200), 32, 16, "601", false),
        32,
      );
      using other = nv12Frame(PATTERN, 16, 16);
      uploader.upload(other);
      assert.throws(
        () => uploader.convertToRgba(first),
        (e) => e instanceof ReleasedError && e.field === "frame",
      );
    } finally {
      delete (gpu as { createTexture?: unknown }).createTexture;
    }
    uploader.destroy();
    assert.throws(
      () => uploader.upload([]),
      (e) => e instanceof ReleasedError && e.field === "uploader",
    );
  },
);

// --------------------------------------------------------------- bad input

gpuTest("bad input throws typed errors naming the field", (gpu) => {
  using uploader = new WebGpuFrameUploader(gpu);
  const layout = PixelFormat.layout("NV12", 64, 32);
  const views = planeViews(new ArrayBuffer(layout.size), "NV12", layout.planes, 64, 32);
  const nv12 = { format: "NV12", width: 64, height: 32 } as const;
  const refuses = (
    Class: typeof InvalidHandleError,
    field: string,
    source: PlaneView[],
    options: Record<string, unknown>,
  ) =>
    assert.throws(() => uploader.upload(source, options as UploadOptions), (e) => {
      assert.ok(e instanceof Class, `${String(e)} is a ${Class.name}`);
      assert.equal((e as InvalidHandleError).field, field);
      assert.match((e as Error).message, new RegExp(field.replace(/[[\].]/g, "\\$&")));
      return true;
    });
  refuses(InvalidHandleError, "format", views, { ...nv12, format: "NV13" });
  refuses(UnsupportedError, "format", views, { ...nv12, format: "NV16" });
  refuses(InvalidHandleError, "width", views, { ...nv12, width: 63 });
  refuses(InvalidHandleError, "height", views, { ...nv12, height: 0 });
  const tooHigh = gpu.limits.maxTextureDimension2D + 2;
  refuses(UnsupportedError, "height", views, { ...nv12, height: tooHigh });
  refuses(InvalidHandleError, "planes", views.slice(0, 1), nv12);
  const shortChroma = { ...views[1], data: views[1].data.subarray(0, 64 * 15) };
  refuses(InvalidHandleError, "planes[1].data", [views[0], shortChroma], nv12);
  refuses(InvalidHandleError, "planes[0].stride", [{ ...views[0], stride: 60 }, views[1]], nv12);
  refuses(InvalidHandleError, "matrix", views, { ...nv12, matrix: "bt609" });
  refuses(UnsupportedError, "matrix", views, { ...nv12, matrix: "ycgco" });
  const ictcp = { color: { matrix: "ictcp", fullRange: false } };
  refuses(UnsupportedError, "color.matrix", views, { ...nv12, meta: ictcp });
  refuses(InvalidHandleError, "format", views, { width: 64, height: 32 });
  assert.throws(
    () => yuvToRgbCoefficients({ matrix: "bt709", fullRange: false }, 7),
    (e) => e instanceof InvalidHandleError && e.field === "bitDepth",
  );
  assert.deepEqual(
    yuvToRgbCoefficients({ matrix: "bt601", fullRange: true }),
    yuvToRgbCoefficients({ matrix: "smpte170m", fullRange: true }),
  );
});

gpuTest("readRgbaTexture refuses textures it cannot read back", async (gpu) => {
  const r8 = gpu.createTexture({
    size: [4, 4],
    format: "r8unorm",
    usage: GPUTextureUsage.COPY_SRC,
  });
  const noCopy = gpu.createTexture({
    size: [4, 4],
    format: "rgba8unorm",
    usage: GPUTextureUsage.TEXTURE_BINDING,
  });
  await assert.rejects(
    readRgbaTexture(gpu, r8),
    (e) => e instanceof UnsupportedError && e.field === "texture.format",
  );
  await assert.rejects(
    readRgbaTexture(gpu, noCopy),
    (e) => e instanceof InvalidHandleError && e.field === "texture.usage",
  );
  r8.destroy();
  noCopy.destroy();
});

gpuTest("readRgbaTexture drops the 256-byte row padding of a narrow texture", async (gpu) => {
  const [W, H] = [5, 3]; // 20-byte rows, read through 256-byte ones
  const pixels = new Uint8Array(W * H * 4).map((_, i) => i);
  const texture = gpu.createTexture({
    size: [W, H],
    format: "rgba8unorm",
    usage: GPUTextureUsage.COPY_DST | GPUTextureUsage.COPY_SRC,
  });
  gpu.queue.writeTexture({ texture }, pixels, { bytesPerRow: W * 4 }, [W, H]);
  assert.deepEqual(await readRgbaTexture(gpu, texture), pixels);
  texture.destroy();
});

// ------------------------------------------------------------ the WGSL itself

gpuTest("the exported WGSL and coefficients convert in a user's own pipeline", async (gpu) => {
  const [W, H] = [8, 8];
  using frame = nv12Frame(PATTERN, W, H);
  using uploader = new WebGpuFrameUploader(gpu);
  const { textures } = uploader.upload(frame);
  const module = gpu.createShaderModule({ code: FRAME_TO_RGBA_WGSL });
  const pipeline = gpu.createComputePipeline({
    layout: "auto",
    compute: { module, entryPoint: "nv12" },
  });
  const target = gpu.createTexture({
    size: [W, H],
    format: "rgba8unorm",
    usage: GPUTextureUsage.STORAGE_BINDING | GPUTextureUsage.COPY_SRC,
  });
  const uniform = gpu.createBuffer({
    size: 48,
    usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
  });
  gpu.queue.writeBuffer(uniform, 0, yuvToRgbCoefficients({ matrix: "bt709", fullRange: true }));
  const bindGroup = gpu.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [
      { binding: 0, resource: target.createView() },
      { binding: 1, resource: { buffer: uniform } },
      { binding: 2, resource: textures[0].createView() },
      { binding: 3, resource: textures[1].createView() },
    ],
  });
  const encoder = gpu.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bindGroup);
  pass.dispatchWorkgroups(1, 1);
  pass.end();
  gpu.queue.submit([encoder.finish()]);
  assertClose(await readRgbaTexture(gpu, target), referenceImage(PATTERN, W, H, "709", true), W);
  target.destroy();
  uniform.destroy();
});

gpuTest("negotiation with WebGPU agrees on an upload, which a pool then feeds", async (device) => {
  const { framePoolCaps, negotiate } = await import("../ffi/interop/device.ts");
  const { webGpuCaps } = await import("../ffi/interop/webgpu.ts");
  const pick = negotiate(framePoolCaps(), webGpuCaps(device), { width: 64, height: 32 });
  assert.equal(pick.format, "NV12"); // the pool's first row WebGPU converts
  assert.equal(pick.memory, "host"); // WebGPU imports nothing: the planes are written in
  if (!linux) return;
  using pool = FramePool.fromNegotiated(pick, 2);
  using uploader = new WebGpuFrameUploader(device);
  using frame = pool.tryAcquire()!;
  const [y, uv] = pool.planes(frame);
  y.data.fill(235);
  uv.data.fill(128);
  const rgba = uploader.convertToRgba(uploader.upload(frame, { planes: [y, uv] }));
  assert.deepEqual([...(await readRgbaTexture(device, rgba)).subarray(0, 4)], [255, 255, 255, 255]);
  assert.throws(
    () => negotiate(framePoolCaps(), webGpuCaps(device), { width: 1 << 16, height: 64 }),
    (e) => e instanceof UnsupportedError && /at most/.test(e.message),
  );
});
