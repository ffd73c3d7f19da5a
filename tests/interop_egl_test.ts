// The EGL importer (native/src/interop/egl.c, ffi/interop/egl.ts) on a real
// EGL: Mesa's llvmpipe through EGL surfaceless in CI, which imports a plain
// memfd as a dma-buf. Frames come from a FramePool (memfds written by the
// CPU); the test GL library (tests/gpu_helpers/gl) reads the imported textures
// back through an FBO, samples YUV ones through a samplerExternalOES shader,
// and renders into them, so every check compares bytes the producer wrote
// with bytes GL saw, or the other way round.
//
// Without the helper, a GLES 3 context or EGL_EXT_image_dma_buf_import every
// test is skipped and the reason printed.
//   deno test --allow-ffi --allow-read --allow-env tests/interop_egl_test.ts

import assert from "node:assert/strict";
import {
  CpuBytes,
  DmaBufHandle,
  FramePool,
  InvalidHandleError,
  liveHandles,
  ReleasedError,
  UnsupportedError,
  WrongKindError,
} from "../mod.ts";
import type { FormatCap } from "../ffi/interop/device.ts";
import { eglCaps, EglImporter } from "../ffi/interop/egl.ts";
import { close, countOpenFds, memfd } from "./_support/libc.ts";
import { helperLib } from "./_support/helper_lib.ts";
import { negotiateDmaBuf, poolFor } from "./_support/negotiated_pool.ts";

const symbols = {
  gpures_test_gl_last_error: { parameters: [], result: "pointer" },
  gpures_test_gl_init: { parameters: [], result: "i32" },
  gpures_test_gl_display: { parameters: [], result: "pointer" },
  gpures_test_gl_renderer: { parameters: [], result: "pointer" },
  gpures_test_gl_has_extension: { parameters: ["buffer"], result: "i32" },
  gpures_test_gl_handle_kind: { parameters: ["u64"], result: "u32" },
  gpures_test_gl_make_texture: { parameters: ["u32", "u32", "u32"], result: "u32" },
  gpures_test_gl_texture_exists: { parameters: ["u32"], result: "i32" },
  gpures_test_gl_delete_texture: { parameters: ["u32"], result: "void" },
  gpures_test_gl_read_texture_name: {
    parameters: ["u32", "u32", "u32", "buffer", "u64"],
    result: "i32",
  },
  gpures_test_gl_sample_external_name: {
    parameters: ["u32", "u32", "u32", "buffer", "u64"],
    result: "i32",
  },
  gpures_test_gl_fill_texture_name: {
    parameters: ["u32", "u32", "u32", "u32", "u32", "u32", "u32"],
    result: "i32",
  },
  gpures_test_gl_get_proc_address: { parameters: [], result: "pointer" },
  gpures_test_gl_error: { parameters: [], result: "u32" },
  gpures_test_gl_bound_texture_2d: { parameters: [], result: "u32" },
  gpures_test_gl_bind_texture_2d: { parameters: ["u32"], result: "void" },
  gpures_test_gl_release_current: { parameters: [], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

type Gl = Deno.DynamicLibrary<typeof symbols>["symbols"];

const HELPER = helperLib("libgpures_test_gl.so");

function cString(ptr: Deno.PointerValue): string {
  return ptr === null ? "" : Deno.UnsafePointerView.getCString(ptr);
}

/** The helper with a current GLES 3 context that imports dma-bufs, or why the tests cannot run. */
function openGl(): { gl: Gl; skip: null } | { gl: null; skip: string } {
  if (Deno.build.os !== "linux") {
    return { gl: null, skip: `EGL dma-buf import is Linux-only (this is ${Deno.build.os})` };
  }
  const path = decodeURIComponent(HELPER.pathname);
  let lib: Deno.DynamicLibrary<typeof symbols>;
  try {
    lib = Deno.dlopen(HELPER, symbols);
  } catch (e) {
    return {
      gl: null,
      skip: `cannot load ${path}: ${(e as Error).message}; build it with ` +
        "`cmake -S . -B build && cmake --build build` (apt install libegl-dev libgles-dev)",
    };
  }
  const gl = lib.symbols;
  if (gl.gpures_test_gl_init() !== 0) {
    return { gl: null, skip: `no EGL surfaceless GLES 3 context: ${lastError(gl)}` };
  }
  const has = (name: string) =>
    gl.gpures_test_gl_has_extension(new TextEncoder().encode(`${name}\0`)) === 1;
  if (!has("EGL_EXT_image_dma_buf_import")) {
    return {
      gl: null,
      skip: "EGL has no EGL_EXT_image_dma_buf_import (Mesa imports a memfd from 23.x on; " +
        "Debian bookworm needs Mesa 25 from bookworm-backports)",
    };
  }
  // The helper must reach the same handle table as this module (GPURES_LIB set elsewhere?).
  using probe = CpuBytes.create({
    data: new Uint8Array(4),
    rowPitch: 4,
    format: "RgbaU8",
    width: 1,
    height: 1,
  });
  if (gl.gpures_test_gl_handle_kind(probe.unsafeHandle) !== CpuBytes.kindId) {
    return { gl: null, skip: `${path} links another libgpures than this module loaded` };
  }
  return { gl, skip: null };
}

function lastError(gl: Gl): string {
  return cString(gl.gpures_test_gl_last_error());
}

const opened = openGl();
const skip = opened.skip;
if (skip) console.log(`interop_egl_test: skipping: ${skip}`);
else console.log(`interop_egl_test: ${cString(opened.gl!.gpures_test_gl_renderer())}`);
const glOf = (): Gl => opened.gl!;

/** An importer of the helper's display, through the helper's eglGetProcAddress. */
function newImporter(capacity?: number): EglImporter {
  const gl = glOf();
  return EglImporter.create({
    display: gl.gpures_test_gl_display(),
    getProcAddress: gl.gpures_test_gl_get_proc_address(),
    capacity,
  });
}

function ok(gl: Gl, status: number, what: string): void {
  if (status !== 0) throw new Error(`${what}: ${lastError(gl)}`);
}

/** `width` x `height` tightly packed RGBA8 rows of `name` that the helper's `read` (`what`) fills. */
function rgbaRows(
  gl: Gl,
  what: string,
  read: (name: number, width: number, height: number, out: Uint8Array, size: bigint) => number,
  name: number,
  width: number,
  height: number,
): Uint8Array {
  const out = new Uint8Array(width * height * 4);
  ok(gl, read(name, width, height, out, BigInt(out.length)), what);
  return out;
}

/** Level 0 of 2D texture `name` as tightly packed RGBA8 rows, read through an FBO. */
function readTexture(gl: Gl, name: number, width: number, height: number): Uint8Array {
  return rgbaRows(gl, "read", gl.gpures_test_gl_read_texture_name, name, width, height);
}

/** Asserts equal bytes, naming the first difference (assert.deepEqual prints megabytes). */
function assertBytes(got: Uint8Array, want: Uint8Array, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i]) assert.fail(`${what}: byte ${i} is ${got[i]}, expected ${want[i]}`);
  }
}

/** Pixel (x, y) channel c of RGBA frame `seed`. */
const rgbaAt = (x: number, y: number, c: number, seed: number) =>
  [4 * x + seed, 4 * y + 3 * seed, x * y + 5 * seed, 255 - ((x + y + seed) & 127)][c] & 255;

/** Writes the RGBA pattern into an RgbaU8 frame's plane (padding 0xee) and returns it packed. */
function writeRgba(pool: FramePool, frame: DmaBufHandle, seed: number): Uint8Array {
  const [p] = pool.planes(frame);
  const { width, height } = pool.options;
  const packed = new Uint8Array(width * height * 4);
  p.data.fill(0xee);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < 4; c++) {
        packed[(y * width + x) * 4 + c] = p.data[y * p.stride + x * 4 + c] = rgbaAt(x, y, c, seed);
      }
    }
  }
  return packed;
}

function assertAccounted(importer: EglImporter): void {
  const s = importer.stats;
  assert.equal(s.imports, s.freed + s.cached, `imports == freed + cached (${JSON.stringify(s)})`);
}

// --------------------------------------------------------- (1) zero copy

Deno.test({
  name: "EGL import: an RgbaU8 pool frame is the texture's storage, both ways",
  ignore: skip !== null,
  async fn() {
    const gl = glOf();
    const handles = liveHandles();
    // 60 pixels of 4 bytes: rows of 240 bytes padded to 256, so the pitch reaches EGL.
    using pool = FramePool.create({ format: "RgbaU8", width: 60, height: 40, slots: 2 });
    using importer = newImporter();
    const frame = await pool.acquire();
    try {
      const packed = writeRgba(pool, frame, 7);
      // The import must leave the caller's GL state as it found it.
      const mine = gl.gpures_test_gl_make_texture(4, 4, 1);
      gl.gpures_test_gl_bind_texture_2d(mine);
      const imp = importer.import(frame);
      assert.equal(gl.gpures_test_gl_bound_texture_2d(), mine, "the caller's binding is back");
      assert.equal(gl.gpures_test_gl_error(), 0, "no GL error left behind");
      gl.gpures_test_gl_bind_texture_2d(0);
      gl.gpures_test_gl_delete_texture(mine);
      assert.equal(imp.target, "texture2d");
      assert.equal(imp.cached, false);
      // llvmpipe's EGL device has no EGL_EXT_device_persistent_id: no UUID, so no device check.
      const device = importer.device;
      assert.ok(cString(gl.gpures_test_gl_renderer()).startsWith(device.name), device.name);
      assert.ok(["none", "vulkanUuid"].includes(device.id.kind), device.id.kind);
      assert.ok(imp.texture > 0 && imp.image !== null);
      assertBytes(readTexture(gl, imp.texture, 60, 40), packed, "GL reads what the CPU wrote");

      // GPU -> CPU: a clear into the texture lands in the memfd the pool mapped.
      const bg = 0xff302010, fg = 0x80c0b0a0; // bytes R, G, B, A from the low end
      ok(gl, gl.gpures_test_gl_fill_texture_name(imp.texture, bg, fg, 8, 4, 16, 8), "fill");
      const [p] = pool.planes(frame);
      for (let y = 0; y < 40; y++) {
        for (let x = 0; x < 60; x++) {
          const inside = x >= 8 && x < 24 && y >= 4 && y < 12;
          const color = inside ? fg : bg;
          for (let c = 0; c < 4; c++) {
            const got = p.data[y * p.stride + x * 4 + c];
            if (got !== ((color >>> (8 * c)) & 255)) {
              assert.fail(`memfd pixel (${x}, ${y}) channel ${c} is ${got} after the GL clear`);
            }
          }
        }
        if (y < 39) assert.equal(p.data[y * p.stride + 240], 0xee, `row ${y}'s padding`);
      }

      // CPU -> GPU again, through the cached import: no copy was made at import time.
      const again = writeRgba(pool, frame, 11);
      const hit = importer.import(frame);
      assert.deepEqual([hit.cached, hit.texture, hit.image], [true, imp.texture, imp.image]);
      assertBytes(readTexture(gl, hit.texture, 60, 40), again, "GL sees the CPU's new bytes");
    } finally {
      frame.release();
    }
    importer.close();
    assert.ok(liveHandles() <= handles, "no handle left");
  },
});

// ------------------------------------------------------------ (2) YUV

/** Luma in 16..235; chroma constant over blocks of 16 pixels (drivers filter across edges). */
const lumaAt = (x: number, y: number) => 16 + ((x * 3 + y * 5) % 220);
const chromaAt = (x: number, y: number) => [64 + 32 * ((x >> 4) & 3), 80 + 40 * ((y >> 4) & 3)];

/** Sampled RGBA against BT.601 narrow range (the import's hints), within 6 per channel. */
function checkBt601(rgba: Uint8Array, width: number, height: number, what: string): void {
  const clamp = (v: number) => Math.max(0, Math.min(255, Math.round(v)));
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (x % 16 < 2 || x % 16 > 13 || y % 16 < 2 || y % 16 > 13) continue; // chroma edges
      const [u, v] = chromaAt(x, y);
      const c = 1.164383 * (lumaAt(x, y) - 16), d = u - 128, e = v - 128;
      const want = [c + 1.596027 * e, c - 0.391762 * d - 0.812968 * e, c + 2.017232 * d];
      for (let k = 0; k < 3; k++) {
        const got = rgba[(y * width + x) * 4 + k];
        if (Math.abs(got - clamp(want[k])) > 6) {
          assert.fail(`${what} at (${x}, ${y}) channel ${k}: ${got}, expected ${clamp(want[k])}`);
        }
      }
    }
  }
}

/** Packed 4:2:2: YUYV422 stores Y0 U Y1 V, UYVY422 stores U Y0 V Y1. */
function writePacked422(pool: FramePool, frame: DmaBufHandle): void {
  const [p] = pool.planes(frame);
  const uyvy = pool.options.format === "UYVY422";
  for (let y = 0; y < pool.options.height; y++) {
    for (let x = 0; x < pool.options.width; x += 2) {
      const [u, v] = chromaAt(x, y);
      const [y0, y1] = [lumaAt(x, y), lumaAt(x + 1, y)];
      p.data.set(uyvy ? [u, y0, v, y1] : [y0, u, y1, v], y * p.stride + x * 2);
    }
  }
}

function writeNv12(pool: FramePool, frame: DmaBufHandle): void {
  const [luma, chroma] = pool.planes(frame);
  for (let y = 0; y < pool.options.height; y++) {
    for (let x = 0; x < pool.options.width; x++) luma.data[y * luma.stride + x] = lumaAt(x, y);
  }
  for (let y = 0; y < chroma.height; y++) {
    for (let x = 0; x < chroma.width; x++) {
      chroma.data.set(chromaAt(2 * x, 2 * y), y * chroma.stride + 2 * x);
    }
  }
}

/** Samples an external import to RGBA through the helper's samplerExternalOES shader. */
function sampleExternal(gl: Gl, texture: number, width: number, height: number): Uint8Array {
  return rgbaRows(gl, "sample", gl.gpures_test_gl_sample_external_name, texture, width, height);
}

Deno.test({
  name: "EGL import: YUV frames become external textures sampled as BT.601 RGB",
  ignore: skip !== null,
  async fn() {
    const gl = glOf();
    const width = 64, height = 32;
    using importer = newImporter();

    // YUYV422: one plane, which llvmpipe imports.
    {
      using pool = FramePool.create({ format: "YUYV422", width, height, slots: 1 });
      using frame = await pool.acquire();
      writePacked422(pool, frame);
      const imp = importer.import(frame);
      assert.equal(imp.target, "external");
      checkBt601(sampleExternal(gl, imp.texture, width, height), width, height, "YUYV422");
    }

    // NV12: two planes in one memfd. Mesa 25's llvmpipe lists NV12 but cannot make the image
    // (EGL_BAD_ALLOC); that must be a typed refusal that leaves nothing behind.
    using pool = FramePool.create({ format: "NV12", width, height, slots: 1 });
    using frame = await pool.acquire();
    writeNv12(pool, frame);
    importer.collect(); // the YUYV pool is gone: its import goes now, not during the NV12 one
    const before = importer.stats;
    const fds = countOpenFds();
    try {
      const imp = importer.import(frame);
      assert.equal(imp.target, "external");
      checkBt601(sampleExternal(gl, imp.texture, width, height), width, height, "NV12");
      console.log("interop_egl_test: NV12 imported as one image and its colors checked");
    } catch (e) {
      assert.ok(e instanceof UnsupportedError, `NV12 refused as ${e}`);
      assert.equal(e.field, "format");
      assert.match(e.message, /EGL_BAD_ALLOC/);
      const after = importer.stats;
      assert.equal(after.failed, before.failed + 1);
      assert.equal(after.cached, before.cached, "nothing cached");
      assert.ok(countOpenFds() <= fds, "no fd left behind");
      console.log(`interop_egl_test: NV12 refused here, as expected of llvmpipe: ${e.message}`);
    }
    assertAccounted(importer);
  },
});

// ------------------------------------------------------------ (3) caching

Deno.test({
  name: "EGL import: 100 frames of a 3-slot pool make 3 imports, freed when the pool goes",
  ignore: skip !== null,
  async fn() {
    const gl = glOf();
    const handles = liveHandles();
    const width = 16, height = 8;
    const importer = newImporter();
    const pool = FramePool.create({ format: "RgbaU8", width, height, slots: 3 });
    const textures = new Set<number>();
    // Two frames held at a time, as a consumer a frame or two behind does: the pool hands the
    // three slots out in turn.
    const held: DmaBufHandle[] = [];
    for (let i = 0; i < 100; i++) {
      const frame = await pool.acquire();
      held.push(frame);
      const packed = writeRgba(pool, frame, i);
      const imp = importer.import(frame);
      assert.equal(imp.cached, i >= 3, `frame ${i} cached`);
      textures.add(imp.texture);
      // Each frame's own bytes, through its slot's one texture.
      assertBytes(readTexture(gl, imp.texture, width, height), packed, `frame ${i}`);
      assertAccounted(importer);
      if (held.length === 3) held.shift()!.release();
    }
    for (const frame of held) frame.release();
    assert.equal(textures.size, 3);
    assert.deepEqual(importer.stats, { cached: 3, imports: 3, hits: 97, freed: 0, failed: 0 });

    // forget() frees one slot's import now; its next frame imports again.
    {
      using frame = await pool.acquire();
      importer.forget(frame);
      assert.deepEqual([importer.stats.cached, importer.stats.freed], [2, 1]);
      assert.equal(importer.import(frame).cached, false);
    }

    // The pool's buffers go away with it: the imports are freed at the importer's next call.
    pool.close();
    assert.equal(importer.stats.cached, 3, "not before the next call");
    using other = FramePool.create({ format: "RgbaU8", width, height, slots: 1 });
    using frame = await other.acquire();
    const imp = importer.import(frame);
    assert.deepEqual(importer.stats, { cached: 1, imports: 5, hits: 97, freed: 4, failed: 0 });
    for (const t of textures) {
      if (t !== imp.texture) assert.equal(gl.gpures_test_gl_texture_exists(t), 0, `${t} deleted`);
    }

    // close() frees every import: the texture goes with it.
    assert.equal(gl.gpures_test_gl_texture_exists(imp.texture), 1);
    importer.close();
    assert.equal(gl.gpures_test_gl_texture_exists(imp.texture), 0);
    // Stats keep the counts of the close, its own frees counted.
    assert.deepEqual(importer.stats, { cached: 0, imports: 5, hits: 97, freed: 5, failed: 0 });
    assert.throws(() => importer.import(frame), ReleasedError);
    frame.release();
    other.close();
    assert.ok(liveHandles() <= handles, "no handle left");
  },
});

// ------------------------------------------------------------ (4) refusals

const AB24 = 0x34324241;
const NV12 = 0x3231564e;

/** A DmaBufHandle over a new memfd of `size` bytes. */
function dmaBuf(
  size: number,
  fourcc: number,
  modifier: bigint,
  width: number,
  height: number,
  planes: { offset: number; stride: number }[],
): DmaBufHandle {
  const fd = memfd(size);
  try {
    return DmaBufHandle.create({
      fds: [fd],
      fourcc,
      modifier,
      width,
      height,
      planes: planes.map((p) => ({ objectIndex: 0, ...p })),
    });
  } finally {
    close(fd);
  }
}

/** Asserts `fn` throws `type` naming `field`, and that the refusal left no fd open. */
function assertRefused(fn: () => unknown, type: typeof UnsupportedError, field: string): void {
  const fds = countOpenFds();
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof type, `expected ${type.name}, got ${e}`);
    assert.equal((e as InvalidHandleError).field, field, (e as Error).message);
    return true;
  });
  assert.ok(countOpenFds() <= fds, `refusing ${field} left no fd open`);
}

/** The refusals of test (4); the frames it makes are released as it returns. */
async function refusals(gl: Gl): Promise<void> {
  using importer = newImporter();
  using pool = FramePool.create({ format: "RgbaU8", width: 8, height: 8, slots: 1 });

  // No context current on this thread: neither create nor import can reach GL.
  const frame = await pool.acquire();
  ok(gl, gl.gpures_test_gl_release_current(), "release current");
  try {
    assertRefused(() => importer.import(frame), UnsupportedError, "context");
    assertRefused(() => newImporter(), UnsupportedError, "context");
  } finally {
    ok(gl, gl.gpures_test_gl_init(), "make current again");
  }
  assert.equal(importer.import(frame).cached, false, "works again with the context");

  // Strides and offsets EGL cannot take (it reads them as EGLint), by plane.
  const big = 0x8000_0000;
  using wide = dmaBuf(4096, AB24, 0n, 1, 1, [{ offset: 0, stride: big }]);
  assertRefused(() => importer.import(wide), InvalidHandleError, "planes[0].stride");
  using wideChroma = dmaBuf(4096, NV12, 0n, 2, 2, [{ offset: 0, stride: 64 }, {
    offset: 1024,
    stride: big,
  }]);
  assertRefused(() => importer.import(wideChroma), InvalidHandleError, "planes[1].stride");

  // A fourcc and a modifier the display does not list.
  using nv24 = dmaBuf(4096, 0x3432564e, 0n, 8, 8, [{ offset: 0, stride: 8 }, {
    offset: 1024,
    stride: 16,
  }]);
  assertRefused(() => importer.import(nv24), UnsupportedError, "format");
  const X_TILED = 0x0100000000000001n; // I915_FORMAT_MOD_X_TILED
  using tiled = dmaBuf(4096, AB24, X_TILED, 8, 8, [{ offset: 0, stride: 512 }]);
  assertRefused(() => importer.import(tiled), UnsupportedError, "modifier");

  // Kinds it cannot import, released frames, a closed importer.
  using bytes = CpuBytes.create({
    data: new Uint8Array(64),
    rowPitch: 16,
    format: "RgbaU8",
    width: 4,
    height: 4,
  });
  assertRefused(
    () => importer.import(bytes as unknown as DmaBufHandle),
    WrongKindError,
    "frame",
  );
  const raw = frame.unsafeHandle;
  frame.release();
  assert.throws(() => importer.import(frame), ReleasedError);
  // A caller holding the raw handle past its release: the C library says STALE.
  assert.throws(
    () => importer.import({ unsafeHandle: raw } as unknown as DmaBufHandle),
    (e: unknown) => e instanceof ReleasedError && (e as ReleasedError).code === "STALE",
  );

  // Displays that are not one.
  assertRefused(
    () => EglImporter.create({ display: null }),
    InvalidHandleError,
    "display",
  );
  assertRefused(
    () => EglImporter.create({ display: 0x1234n }),
    InvalidHandleError,
    "display",
  );
  assertRefused(() => newImporter(0.5), InvalidHandleError, "capacity");

  const s = importer.stats;
  assert.equal(s.cached, 1, "only the good frame's import");
  assert.equal(s.failed, 4, "the API refusals are counted");
  assertAccounted(importer);
  importer.close();
  assert.throws(() => importer.import(frame), ReleasedError);

  // Closed where its context is not current: the EGLImage goes, the texture name is left to
  // the context (deleting a name in another context would delete another texture).
  const late = newImporter();
  using again = await pool.acquire();
  const { texture } = late.import(again);
  ok(gl, gl.gpures_test_gl_release_current(), "release current");
  try {
    late.close();
  } finally {
    ok(gl, gl.gpures_test_gl_init(), "make current again");
  }
  assert.equal(gl.gpures_test_gl_texture_exists(texture), 1, "left to the context");
  gl.gpures_test_gl_delete_texture(texture);
  assert.equal(gl.gpures_test_gl_error(), 0);
}

Deno.test({
  name: "EGL import: bad input is a typed error naming the field, and nothing is kept",
  ignore: skip !== null,
  async fn() {
    const handles = liveHandles();
    await refusals(glOf());
    assert.ok(liveHandles() <= handles, "every frame released");
  },
});

// --------------------------------------------------- (5) caps, negotiation

Deno.test({
  name: "EGL caps: llvmpipe's rows, and a negotiated format a pool makes and EGL imports",
  ignore: skip !== null,
  async fn() {
    const gl = glOf();
    const caps = eglCaps(gl.gpures_test_gl_display());
    const row = (format: string) => caps.find((c) => c.format === format);
    for (const format of ["RgbaU8", "NV12"]) {
      const c = row(format);
      assert.ok(c, `${format} is listed: ${caps.map((c) => c.format).join(", ")}`);
      assert.deepEqual(c.memory, ["dmaBuf"]);
      assert.ok(c.modifier === 0n || c.modifier === 0x00ffffffffffffffn);
      assert.ok(c.maxWidth >= 2048, "GL_MAX_TEXTURE_SIZE, a context being current");
    }
    assert.ok(caps.every((c) => c.format !== undefined), "only formats gpures names");

    // Negotiate the pool's rows (its order of preference) against the display's; a format
    // the display lists but cannot import (llvmpipe: NV12) is dropped and negotiated again.
    using importer = newImporter();
    let consumer: FormatCap[] = caps;
    const refused: string[] = [];
    for (;;) {
      const pick = negotiateDmaBuf(consumer, { width: 96, height: 64 });
      using pool = poolFor(pick, Math.max(pick.rowAlign, 1));
      using frame = await pool.acquire();
      let imp;
      try {
        imp = importer.import(frame);
      } catch (e) {
        assert.ok(e instanceof UnsupportedError && e.field === "format", `${pick.format}: ${e}`);
        refused.push(pick.format);
        consumer = consumer.filter((c) => c.format !== pick.format);
        continue;
      }
      if (pick.format === "RgbaU8") {
        const packed = writeRgba(pool, frame, 3);
        assertBytes(readTexture(gl, imp.texture, 96, 64), packed, "negotiated RgbaU8");
      } else if (["NV12", "YUYV422", "UYVY422"].includes(pick.format)) {
        (pick.format === "NV12" ? writeNv12 : writePacked422)(pool, frame);
        assert.equal(imp.target, "external");
        checkBt601(sampleExternal(gl, imp.texture, 96, 64), 96, 64, pick.format);
      } else {
        assert.fail(`negotiated ${pick.format}, which this test has no reference for`);
      }
      console.log(
        `interop_egl_test: negotiated ${pick.format} (dropped as refused: ${
          refused.join(", ") || "none"
        })`,
      );
      break;
    }
  },
});
