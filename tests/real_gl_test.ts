// Real GL objects and real DMA-BUF imports through the public API.
//
// A test-only C library (tests/gpu_helpers/gl, built into build/test-helpers)
// drives OpenGL ES 3 through EGL surfaceless (Mesa llvmpipe in CI). Its
// producers make real GL textures and buffers; this file wraps them as
// GlTextureHandle / GlBufferHandle exactly as a user would, and hands the
// helper's consumers nothing but `resource.unsafeHandle`: they find the name,
// target and context through gpures's C API and read the producer's pattern
// back. DmaBufHandles of memfds (linear AB24, two-plane NV12) go into
// eglCreateImageKHR(EGL_LINUX_DMA_BUF_EXT) the same way.
//
// Without the helper, EGL surfaceless or GLES 3, every test is skipped and the
// reason printed. Run: deno test --allow-ffi --allow-read --allow-env --allow-run

import assert from "node:assert/strict";
import { DmaBufHandle, GlBufferHandle, GlTextureHandle, GpuResource, liveHandles } from "../mod.ts";
import { close, countOpenFds, memfd, readAt, writeAt } from "./_support/libc.ts";
import { helperLib } from "./_support/helper_lib.ts";

const symbols = {
  gpures_test_gl_last_error: { parameters: [], result: "pointer" },
  gpures_test_gl_init: { parameters: [], result: "i32" },
  gpures_test_gl_context: { parameters: [], result: "pointer" },
  gpures_test_gl_renderer: { parameters: [], result: "pointer" },
  gpures_test_gl_has_extension: { parameters: ["buffer"], result: "i32" },
  gpures_test_gl_handle_kind: { parameters: ["u64"], result: "u32" },
  gpures_test_gl_make_texture: { parameters: ["u32", "u32", "u32"], result: "u32" },
  gpures_test_gl_make_buffer: { parameters: ["u64", "u32"], result: "u32" },
  gpures_test_gl_texture_exists: { parameters: ["u32"], result: "i32" },
  gpures_test_gl_buffer_exists: { parameters: ["u32"], result: "i32" },
  gpures_test_gl_delete_texture: { parameters: ["u32"], result: "void" },
  gpures_test_gl_delete_buffer: { parameters: ["u32"], result: "void" },
  gpures_test_gl_read_texture: { parameters: ["u64", "buffer", "u64", "buffer"], result: "i32" },
  gpures_test_gl_read_buffer: { parameters: ["u64", "buffer", "u64"], result: "i32" },
  gpures_test_gl_fill_texture: {
    parameters: ["u64", "u32", "u32", "u32", "u32", "u32", "u32"],
    result: "i32",
  },
  gpures_test_gl_dma_buf_read_rgba: { parameters: ["u64", "buffer", "u64"], result: "i32" },
  gpures_test_gl_dma_buf_read_planes: {
    parameters: ["u64", "buffer", "u64", "buffer"],
    result: "i32",
  },
  gpures_test_gl_dma_buf_import_texture: { parameters: ["u64"], result: "u32" },
} as const satisfies Deno.ForeignLibraryInterface;

type Gl = Deno.DynamicLibrary<typeof symbols>["symbols"];

const LIB_FILE = { windows: "gpures_test_gl.dll", darwin: "libgpures_test_gl.dylib" }[
  Deno.build.os as string
] ?? "libgpures_test_gl.so";
const HELPER = helperLib(LIB_FILE);

function cString(ptr: Deno.PointerValue): string {
  return ptr === null ? "" : Deno.UnsafePointerView.getCString(ptr);
}

/** The helper with a current GLES 3 context, or why the GL tests cannot run here. */
function openGl(): { gl: Gl; skip: null } | { gl: null; skip: string } {
  const path = decodeURIComponent(HELPER.pathname);
  try {
    Deno.statSync(HELPER);
  } catch {
    return {
      gl: null,
      skip: `${path} is missing; build it with \`cmake -S . -B build && cmake --build build\` ` +
        "(needs the EGL and GLES headers: apt install libegl-dev libgles-dev)",
    };
  }
  let lib: Deno.DynamicLibrary<typeof symbols>;
  try {
    lib = Deno.dlopen(HELPER, symbols);
  } catch (e) {
    return { gl: null, skip: `cannot load ${path}: ${(e as Error).message}` };
  }
  const gl = lib.symbols;
  if (gl.gpures_test_gl_init() !== 0) {
    const why = cString(gl.gpures_test_gl_last_error());
    lib.close();
    return { gl: null, skip: `no EGL surfaceless GLES 3 context: ${why}` };
  }
  // The helper must reach the same handle table as this module.
  const probe = GlTextureHandle.simple(1);
  const kind = gl.gpures_test_gl_handle_kind(probe.unsafeHandle);
  probe.release();
  if (kind !== 13) {
    return {
      gl: null,
      skip: `${path} links another libgpures than the one this module loaded ` +
        "(is GPURES_LIB set to a different build?)",
    };
  }
  return { gl, skip: null };
}

const { gl, skip } = openGl();
const glOrSkip = (): Gl => gl!;
if (skip) console.log(`real_gl_test: skipping the GL tests: ${skip}`);
else console.log(`real_gl_test: ${cString(gl!.gpures_test_gl_renderer())}`);

const hasExtension = (name: string): boolean =>
  gl !== null && gl.gpures_test_gl_has_extension(new TextEncoder().encode(`${name}\0`)) === 1;

const dmaBufSkip = skip ??
  (Deno.build.os !== "linux"
    ? `DMA-BUF is Linux-only (this is ${Deno.build.os})`
    : !hasExtension("EGL_EXT_image_dma_buf_import")
    ? "EGL has no EGL_EXT_image_dma_buf_import (Mesa imports a memfd from 23.x on; " +
      "Debian bookworm needs Mesa from bookworm-backports)"
    : null);
if (!skip && dmaBufSkip) console.log(`real_gl_test: skipping the DMA-BUF tests: ${dmaBufSkip}`);

/** The helper's last failure, as an Error to throw. */
function helperError(what: string): Error {
  return new Error(`${what}: ${cString(glOrSkip().gpures_test_gl_last_error())}`);
}

/** Throws unless status is 0, with the helper's reason. */
function ok(status: number, what: string): void {
  if (status !== 0) throw helperError(what);
}

// ------------------------------------------------------------------ patterns

/** The texture pattern the helper's producer writes (see gpures_test_gl.c). */
function texturePattern(width: number, height: number, seed: number): Uint8Array {
  const out = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      out[i] = 4 * x + seed;
      out[i + 1] = 4 * y + 3 * seed;
      out[i + 2] = x * y + 5 * seed;
      out[i + 3] = 255 - ((x + y + seed) & 127);
    }
  }
  return out;
}

/** The buffer pattern the helper's producer writes. */
function bufferPattern(size: number, seed: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = 7 * i + 13 * (i >> 8) + seed;
  return out;
}

/** Equal bytes, or a message naming the first difference (not a 16 KiB diff). */
function assertBytes(actual: Uint8Array, expected: Uint8Array, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  const at = actual.findIndex((v, i) => v !== expected[i]);
  assert.equal(at, -1, `${what}: byte ${at} is ${actual[at]}, expected ${expected[at]}`);
}

/** Reads a GlTextureHandle through the helper's consumer, given only its raw handle. */
function readTexture(handle: bigint): { pixels: Uint8Array; width: number; height: number } {
  const out = new Uint8Array(1 << 20);
  const extent = new Uint32Array(2);
  ok(glOrSkip().gpures_test_gl_read_texture(handle, out, BigInt(out.length), extent), "read");
  return {
    pixels: out.subarray(0, extent[0] * extent[1] * 4),
    width: extent[0],
    height: extent[1],
  };
}

/** Reads `size` bytes of a GlBufferHandle through the helper's consumer. */
function readBuffer(handle: bigint, size: number): Uint8Array {
  const out = new Uint8Array(size);
  ok(glOrSkip().gpures_test_gl_read_buffer(handle, out, BigInt(size)), "read buffer");
  return out;
}

// ---------------------------------------------------------------- GL objects

Deno.test({
  name: "GL: GlTextureHandle of a real texture; a consumer reads it through the handle alone",
  ignore: skip !== null,
  fn() {
    const gl = glOrSkip();
    const start = liveHandles();
    const name = gl.gpures_test_gl_make_texture(64, 64, 11);
    if (name === 0) throw helperError("make texture");
    const context = gl.gpures_test_gl_context();
    let released = 0;
    const texture = GlTextureHandle.create(
      { name, target: "Texture2D", internalFormat: "Rgba8", context },
      {
        keepAlive: {
          release() {
            gl.gpures_test_gl_delete_texture(name);
            released++;
          },
        },
      },
    );
    try {
      const d = texture.describe();
      assert.equal(d.kind, "GlTextureHandle");
      assert.equal(d.kindId, 13);
      assert.equal(d.refcount, 1);
      assert.equal(d.name, name);
      assert.equal(d.target, "Texture2D");
      assert.equal(d.internalFormat, "Rgba8");
      assert.equal(d.context, Deno.UnsafePointer.value(context));
      assert.equal(d.shareGroup, null);
      const json = texture.toJSON();
      assert.equal(json.kind, "GlTextureHandle");
      assert.equal(json.name, name);

      const read = readTexture(texture.unsafeHandle);
      assert.equal(read.width, 64);
      assert.equal(read.height, 64);
      assertBytes(read.pixels, texturePattern(64, 64, 11), "texture read through the handle");

      // A clone is the same texture; the consumer holds its own reference while it reads.
      const copy = texture.clone();
      assert.equal(texture.refcount, 2);
      assertBytes(readTexture(copy.unsafeHandle).pixels, texturePattern(64, 64, 11), "clone");
      assert.equal(texture.refcount, 2, "the consumer returned its reference");
      copy.release();
      assert.equal(released, 0, "a clone's release leaves the producer's texture");
      assert.equal(gl.gpures_test_gl_texture_exists(name), 1);
    } finally {
      texture.release();
    }
    assert.equal(released, 1, "the last release ran the keep-alive once");
    assert.equal(gl.gpures_test_gl_texture_exists(name), 0, "the keep-alive deleted it");
    assert.equal(liveHandles(), start);
  },
});

Deno.test({
  name: "GL: GlBufferHandle of a real buffer; a consumer maps it through the handle alone",
  ignore: skip !== null,
  fn() {
    const gl = glOrSkip();
    const start = liveHandles();
    const size = 3 * 4096 + 123;
    const name = gl.gpures_test_gl_make_buffer(BigInt(size), 29);
    if (name === 0) throw helperError("make buffer");
    const context = gl.gpures_test_gl_context();
    let released = 0;
    const buffer = GlBufferHandle.create(
      { name, target: "ArrayBuffer", size, context },
      {
        keepAlive: {
          release() {
            gl.gpures_test_gl_delete_buffer(name);
            released++;
          },
        },
      },
    );
    try {
      const d = buffer.describe();
      assert.equal(d.kind, "GlBufferHandle");
      assert.equal(d.kindId, 14);
      assert.equal(d.name, name);
      assert.equal(d.target, "ArrayBuffer");
      assert.equal(d.size, BigInt(size));
      assert.equal(d.context, Deno.UnsafePointer.value(context));
      assertBytes(readBuffer(buffer.unsafeHandle, size), bufferPattern(size, 29), "buffer");

      // Through a raw handle given away and adopted back, as native code would pass it.
      const raw = buffer.clone().intoRaw();
      assertBytes(readBuffer(raw, size), bufferPattern(size, 29), "buffer through a raw handle");
      GpuResource.fromRaw(raw).release();
      assert.equal(gl.gpures_test_gl_buffer_exists(name), 1);
    } finally {
      buffer.release();
    }
    assert.equal(released, 1);
    assert.equal(gl.gpures_test_gl_buffer_exists(name), 0, "the keep-alive deleted it");
    assert.equal(liveHandles(), start);
  },
});

Deno.test({
  name: "GL: simple() handles name the current context, and a consumer reads through them",
  ignore: skip !== null,
  fn() {
    const gl = glOrSkip();
    const start = liveHandles();
    const textureName = gl.gpures_test_gl_make_texture(64, 64, 3);
    const bufferName = gl.gpures_test_gl_make_buffer(1000n, 4);
    try {
      if (textureName === 0 || bufferName === 0) throw helperError("make");
      using texture = GlTextureHandle.simple(textureName);
      using buffer = GlBufferHandle.simple(bufferName, 1000);
      const t = texture.describe();
      assert.equal(t.context, null);
      assert.equal(t.target, "Texture2D");
      assert.equal(t.internalFormat, "Unspecified");
      assert.equal(buffer.describe().context, null);
      assert.equal(buffer.describe().target, "ArrayBuffer");
      assertBytes(readTexture(texture.unsafeHandle).pixels, texturePattern(64, 64, 3), "simple");
      assertBytes(readBuffer(buffer.unsafeHandle, 1000), bufferPattern(1000, 4), "simple buffer");
    } finally {
      gl.gpures_test_gl_delete_texture(textureName);
      gl.gpures_test_gl_delete_buffer(bufferName);
    }
    assert.equal(liveHandles(), start);
  },
});

Deno.test({
  name: "GL: a consumer given a released handle gets STALE and never reaches GL",
  ignore: skip !== null,
  fn() {
    const gl = glOrSkip();
    const start = liveHandles();
    const name = gl.gpures_test_gl_make_texture(8, 8, 1);
    try {
      const texture = GlTextureHandle.create({
        name,
        target: "Texture2D",
        internalFormat: "Rgba8",
      });
      const stale = texture.unsafeHandle;
      texture.release();
      const out = new Uint8Array(8 * 8 * 4);
      assert.equal(gl.gpures_test_gl_read_texture(stale, out, BigInt(out.length), null), -1);
      assert.match(cString(gl.gpures_test_gl_last_error()), /STALE/);
      assert.equal(gl.gpures_test_gl_fill_texture(stale, 0, 0, 0, 0, 1, 1), -1);
      assert.match(cString(gl.gpures_test_gl_last_error()), /STALE/);
    } finally {
      gl.gpures_test_gl_delete_texture(name);
    }
    assert.equal(liveHandles(), start);
  },
});

// ------------------------------------------------------------ DMA-BUF in EGL

const AB24 = 0x34324241; // DRM_FORMAT_ABGR8888: bytes R, G, B, A
const NV12 = 0x3231564e; // DRM_FORMAT_NV12
const MOD_LINEAR = 0n;
const MOD_INVALID = 0x00ff_ffff_ffff_ffffn; // implicit layout: no modifier attribute is passed

/** An AB24 frame of width x height at `offset` with `stride` bytes per row, in a new memfd. */
function ab24Memfd(width: number, height: number, offset: number, stride: number, seed: number) {
  const fd = memfd(offset + stride * height);
  const rows = texturePattern(width, height, seed);
  const padded = new Uint8Array(stride * height).fill(0xee); // the padding must never be read
  for (let y = 0; y < height; y++) {
    padded.set(rows.subarray(y * width * 4, (y + 1) * width * 4), y * stride);
  }
  writeAt(fd, padded, offset);
  return { fd, rows };
}

Deno.test({
  name: "EGL: DmaBufHandle (memfd, linear AB24) imported by eglCreateImageKHR reads the memfd",
  ignore: dmaBufSkip !== null,
  fn() {
    const gl = glOrSkip();
    const start = liveHandles();
    for (const modifier of [MOD_LINEAR, MOD_INVALID]) {
      const offset = 4096;
      const stride = 320; // 64 pixels of 4 bytes, then 64 bytes of padding
      const { fd, rows } = ab24Memfd(64, 48, offset, stride, 5);
      let frame: DmaBufHandle;
      try {
        frame = DmaBufHandle.create({
          fds: [fd],
          fourcc: AB24,
          modifier,
          width: 64,
          height: 48,
          planes: [{ objectIndex: 0, offset, stride }],
        });
      } finally {
        close(fd); // the handle holds its own duplicate; the consumer gets only the handle
      }
      try {
        const d = frame.describe();
        assert.equal(d.fourcc, AB24);
        assert.equal(d.modifier, modifier);
        const out = new Uint8Array(64 * 48 * 4);
        const read = () =>
          ok(
            gl.gpures_test_gl_dma_buf_read_rgba(frame.unsafeHandle, out, BigInt(out.length)),
            "AB24 import",
          );
        read();
        assertBytes(out, rows, `AB24 read through EGL (modifier 0x${modifier.toString(16)})`);
        // Mesa may keep a dup of the last imported fd until its next import, so count after one
        // import: more imports must not add fds (the consumer closes the ones it duplicates).
        const fds = countOpenFds();
        for (let i = 0; i < 3; i++) read();
        assert.equal(countOpenFds(), fds, "imports leaked no fd");
        assertBytes(out, rows, "AB24 read again");
      } finally {
        frame.release();
      }
    }
    assert.equal(liveHandles(), start);
  },
});

/** Luma of an NV12 test frame: every value in 16..235. */
const lumaAt = (x: number, y: number) => 16 + ((x * 3 + y * 5) % 220);
/** Chroma of an NV12 test frame: constant over 8x8 chroma samples (16x16 pixels). */
const chromaAt = (cx: number, cy: number) => [64 + 32 * (cx >> 3), 64 + 32 * (cy >> 3)];

Deno.test({
  name: "EGL: DmaBufHandle (memfd, two-plane NV12) imported into EGL reads the planes' bytes",
  ignore: dmaBufSkip !== null,
  fn() {
    const gl = glOrSkip();
    const start = liveHandles();
    const width = 64, height = 64, cw = width / 2, ch = height / 2;
    const yStride = 128, uvStride = 128; // rows padded with 0xee
    const uvOffset = yStride * height + 4096;
    const fd = memfd(uvOffset + uvStride * ch);
    const y = new Uint8Array(yStride * height).fill(0xee);
    const uv = new Uint8Array(uvStride * ch).fill(0xee);
    const planes = new Uint8Array(width * height + cw * ch * 2); // what the planes hold, packed
    for (let row = 0; row < height; row++) {
      for (let x = 0; x < width; x++) {
        y[row * yStride + x] = planes[row * width + x] = lumaAt(x, row);
      }
    }
    for (let row = 0; row < ch; row++) {
      for (let x = 0; x < cw; x++) {
        const [u, v] = chromaAt(x, row);
        uv[row * uvStride + 2 * x] = planes[width * height + (row * cw + x) * 2] = u;
        uv[row * uvStride + 2 * x + 1] = planes[width * height + (row * cw + x) * 2 + 1] = v;
      }
    }
    writeAt(fd, y, 0);
    writeAt(fd, uv, uvOffset);
    let frame: DmaBufHandle;
    try {
      frame = DmaBufHandle.create({
        fds: [fd],
        fourcc: NV12,
        modifier: MOD_LINEAR,
        width,
        height,
        planes: [{ objectIndex: 0, offset: 0, stride: yStride }, {
          objectIndex: 0,
          offset: uvOffset,
          stride: uvStride,
        }],
      });
    } finally {
      close(fd);
    }
    try {
      // The exact path: each plane its own image (plane 0 as R8, plane 1 as GR88) with that
      // plane's offset and pitch, read through an FBO.
      const out = new Uint8Array(planes.length);
      const length = new BigUint64Array(1);
      const read = () =>
        ok(
          gl.gpures_test_gl_dma_buf_read_planes(
            frame.unsafeHandle,
            out,
            BigInt(out.length),
            length,
          ),
          "NV12 per plane",
        );
      read();
      assert.equal(length[0], BigInt(planes.length));
      assertBytes(out, planes, "NV12 planes read through EGL (R8 + GR88 images)");
      const fds = countOpenFds(); // after one import: see the AB24 test
      for (let i = 0; i < 3; i++) read();
      assert.equal(countOpenFds(), fds, "imports leaked no fd");

      // The YUV path: the whole layout as one NV12 image, sampled as an external texture
      // (BT.601, narrow range). Mesa 25's llvmpipe lists NV12 as importable but fails
      // eglCreateImageKHR with EGL_BAD_ALLOC; where a driver imports it, check the colors.
      const rgba = new Uint8Array(width * height * 4);
      if (gl.gpures_test_gl_dma_buf_read_rgba(frame.unsafeHandle, rgba, BigInt(rgba.length))) {
        console.log(
          "real_gl_test: NV12 as one EGLImage is not available here " +
            `(${cString(gl.gpures_test_gl_last_error())}); checked it per plane (R8 + GR88)`,
        );
      } else {
        checkBt601(rgba, width, height);
        console.log("real_gl_test: NV12 as one EGLImage imported and its colors checked");
      }
      read();
      assert.equal(countOpenFds(), fds, "imports leaked no fd");
    } finally {
      frame.release();
    }
    assert.equal(liveHandles(), start);
  },
});

/** RGBA pixels of the NV12 test frame converted as BT.601 narrow range, within 6 per channel. */
function checkBt601(rgba: Uint8Array, width: number, height: number): void {
  const clamp = (v: number) => Math.max(0, Math.min(255, v));
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      // Skip pixels next to a chroma edge, where a driver may filter between blocks.
      if ((x % 16) < 2 || (x % 16) > 13 || (y % 16) < 2 || (y % 16) > 13) continue;
      const [u, v] = chromaAt(x >> 1, y >> 1);
      const c = 1.164383 * (lumaAt(x, y) - 16), d = u - 128, e = v - 128;
      const expected = [c + 1.596027 * e, c - 0.391762 * d - 0.812968 * e, c + 2.017232 * d];
      for (let k = 0; k < 3; k++) {
        const got = rgba[(y * width + x) * 4 + k];
        assert.ok(
          Math.abs(got - clamp(expected[k])) <= 6,
          `NV12 as RGB at (${x}, ${y}) channel ${k}: ${got}, expected ${clamp(expected[k])}`,
        );
      }
    }
  }
}

Deno.test({
  name: "EGL: an imported DMA-BUF is the memfd's memory both ways, through a GlTextureHandle",
  ignore: dmaBufSkip !== null,
  fn() {
    const gl = glOrSkip();
    const start = liveHandles();
    const width = 64, height = 64, stride = 256;
    const { fd, rows } = ab24Memfd(width, height, 0, stride, 9);
    try {
      // Producer side: the memfd as a DmaBufHandle (the handle duplicates fd; we keep ours
      // to look at the memory directly).
      using frame = DmaBufHandle.create({
        fds: [fd],
        fourcc: AB24,
        modifier: MOD_LINEAR,
        width,
        height,
        planes: [{ objectIndex: 0, offset: 0, stride }],
      });
      // The importer gets only the DmaBufHandle and returns a texture bound to its memory,
      // which is handed on as a GlTextureHandle.
      const name = gl.gpures_test_gl_dma_buf_import_texture(frame.unsafeHandle);
      if (name === 0) throw helperError("import");
      using texture = GlTextureHandle.create(
        {
          name,
          target: "Texture2D",
          internalFormat: "Unspecified",
          context: gl.gpures_test_gl_context(),
        },
        { keepAlive: { release: () => gl.gpures_test_gl_delete_texture(name) } },
      );
      assertBytes(readTexture(texture.unsafeHandle).pixels, rows, "the memfd's pixels in GL");

      // memfd -> GL: bytes written into the memfd show up in the same texture, no re-import.
      const row7 = Uint8Array.from({ length: width * 4 }, (_, i) => (i * 13 + 1) & 0xff);
      writeAt(fd, row7, 7 * stride);
      const expected = rows.slice();
      expected.set(row7, 7 * width * 4);
      assertBytes(readTexture(texture.unsafeHandle).pixels, expected, "a memfd write seen in GL");

      // GL -> memfd: rendering through the texture handle lands in the memfd's bytes.
      const background = 0xff_30_20_10, foreground = 0x80_c0_b0_a0; // A B G R
      ok(
        gl.gpures_test_gl_fill_texture(texture.unsafeHandle, background, foreground, 8, 4, 16, 8),
        "fill",
      );
      const memory = readAt(fd, stride * height, 0);
      for (let y = 0; y < height; y++) {
        for (let x = 0; x < width; x++) {
          const inside = x >= 8 && x < 24 && y >= 4 && y < 12;
          const color = inside ? foreground : background;
          const at = y * stride + x * 4;
          const got = memory[at] | memory[at + 1] << 8 | memory[at + 2] << 16 |
            memory[at + 3] << 24;
          assert.equal(got >>> 0, color >>> 0, `memfd pixel (${x}, ${y}) after the GL render`);
        }
      }
      texture.release();
      assert.equal(gl.gpures_test_gl_texture_exists(name), 0, "the keep-alive deleted the import");
    } finally {
      close(fd);
    }
    assert.equal(liveHandles(), start);
  },
});
