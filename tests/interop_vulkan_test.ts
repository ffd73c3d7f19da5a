// The Vulkan importer (native/src/interop/vulkan.c, ffi/interop/vulkan.ts) on
// a real device: lavapipe, Mesa 25, which imports a memfd as a dma-buf.
//
// Bytes go both ways through real memory: the CPU writes a FramePool frame,
// Vulkan copies the imported VkImage/VkBuffer into a staging buffer and we
// compare; Vulkan writes the imported objects and the memfd mapping shows it.
// build/test-helpers/libgpures_test_vulkan.so (tests/gpu_helpers/vulkan) gives the
// VkInstance/VkDevice and does the copies. Without it, a Vulkan device or
// dma-buf import, each test is skipped and says why.

import assert from "node:assert/strict";
import {
  CpuBytes,
  DmaBufHandle,
  FramePool,
  liveHandles,
  liveMappings,
  VkOpaqueFd,
} from "../mod.ts";
import type { DmaBufHandle as Frame } from "../ffi/kinds/dma_buf.ts";
import type { PlaneView } from "../ffi/map/planes.ts";
import type { PixelFormatName } from "../ffi/gen/types.ts";
import {
  DeviceMismatchError,
  InvalidHandleError,
  ReleasedError,
  UnsupportedError,
  WrongKindError,
} from "../ffi/errors.ts";
import type { ImporterStats } from "../ffi/interop/device.ts";
import {
  vulkanCaps,
  vulkanDeviceInfo,
  VulkanImporter,
  type VulkanImporterOptions,
} from "../ffi/interop/vulkan.ts";
import { close, memfd } from "./_support/libc.ts";
import { negotiateDmaBuf, poolFor } from "./_support/negotiated_pool.ts";
import { helperCheck as check, HelperContext, inContext } from "./_support/vulkan_context.ts";
import {
  CAP_DMA_BUF_IMPORT,
  CAP_EXTERNAL_MEMORY_FD,
  CAP_OPAQUE_FD_IMAGE,
  lacking,
  probe,
} from "./_support/vulkan_helper.ts";

// ------------------------------------------------------------------- helper

const INSTALL = "install Mesa 25's lavapipe (mesa-vulkan-drivers from bookworm-backports) and " +
  "libvulkan-dev, then build: cmake -S . -B build && cmake --build build";

const probed = probe(INSTALL);
const vk = probed.helper!;

/** Why a test needing `caps` cannot run here: importers take fds, so Linux only. */
function missing(caps: number): string | undefined {
  if (Deno.build.os !== "linux") return `importers take fds: Linux only, not ${Deno.build.os}`;
  return lacking(probed, caps);
}

const helperCheck = (status: number, what: string) => check(vk, status, what);

/** The helper's context, with the importers and copies these tests use. */
class Context extends HelperContext {
  constructor() {
    super(vk);
  }

  importer(options: Partial<VulkanImporterOptions> = {}, which: 0 | 1 = 0): VulkanImporter {
    return VulkanImporter.create({
      instance: this.instance,
      physicalDevice: this.physicalDevice,
      device: this.device(which),
      ...options,
    });
  }

  /** Copies an imported image's planes (tightly packed) out, or `bytes` in. */
  image(which: 0 | 1, image: bigint, planes: PlaneView[], bytes?: Uint8Array): Uint8Array {
    const info = new Uint32Array(
      planes.flatMap((p) => [p.width, p.height, p.bytesPerRow / p.width]),
    );
    const size = planes.reduce((n, p) => n + p.bytesPerRow * p.height, 0);
    const out = bytes ?? new Uint8Array(size);
    helperCheck(
      vk.gvk_image_copy(
        this.ptr,
        which,
        image,
        planes.length,
        info,
        out,
        BigInt(size),
        bytes ? 1 : 0,
      ),
      "gvk_image_copy",
    );
    return out;
  }

  /** Copies `size` bytes of an imported buffer out, or `bytes` in. */
  buffer(
    which: 0 | 1,
    buffer: bigint,
    offset: number,
    size: number,
    bytes?: Uint8Array,
  ): Uint8Array {
    const out = bytes ?? new Uint8Array(size);
    helperCheck(
      vk.gvk_buffer_copy(this.ptr, which, buffer, BigInt(offset), out, BigInt(size), bytes ? 1 : 0),
      "gvk_buffer_copy",
    );
    return out;
  }
}

/** A Vulkan test: skipped, with the reason printed, where it cannot run; checks nothing leaked. */
function vkTest(
  name: string,
  caps: number,
  fn: (ctx: Context) => void | Promise<void>,
): void {
  const reason = missing(caps);
  if (reason) console.log(`skipping "${name}": ${reason}`);
  Deno.test({
    name,
    ignore: reason !== undefined,
    fn: async () => {
      await inContext(() => new Context(), fn);
      assert.equal(
        importMappings(),
        0,
        "no import still maps a pool memfd (every import was freed)",
      );
    },
  });
}

const DMA_BUF = CAP_EXTERNAL_MEMORY_FD | CAP_DMA_BUF_IMPORT;
const OPAQUE = CAP_EXTERNAL_MEMORY_FD | CAP_OPAQUE_FD_IMAGE;

// -------------------------------------------------------------- patterns

/**
 * Mappings of pool memfds that gpures did not make. lavapipe maps an imported
 * dma-buf and unmaps it when the VkDeviceMemory is freed, so this counts the
 * imports still alive (pool.planes() maps each slot too, until its views are
 * collected: those are gpures's, in liveMappings()).
 */
function importMappings(): number {
  return foreignFrameMappings() - FOREIGN_BEFORE;
}

function foreignFrameMappings(): number {
  // A child reads our maps: Deno grants /proc/self only with --allow-all.
  const maps = new Deno.Command("cat", { args: [`/proc/${Deno.pid}/maps`] }).outputSync();
  const all = new TextDecoder().decode(maps.stdout).split("\n")
    .filter((line) => line.includes("/memfd:gpures-frame")).length;
  return all - liveMappings();
}

// Test files share a process: another API's imports (EGL's, held by its context) count before ours.
const FOREIGN_BEFORE = linuxHost() ? foreignFrameMappings() : 0;

function linuxHost(): boolean {
  return Deno.build.os === "linux";
}

function bytesOf(p: PlaneView): Uint8Array {
  return new Uint8Array(p.data.buffer, p.data.byteOffset, p.data.byteLength);
}

function strideBytes(p: PlaneView): number {
  return p.stride * p.data.BYTES_PER_ELEMENT;
}

/** Writes a pattern into every plane's rows; returns the rows tightly packed. */
function fill(planes: PlaneView[], seed: number): Uint8Array {
  const size = planes.reduce((n, p) => n + p.bytesPerRow * p.height, 0);
  const tight = new Uint8Array(size);
  let at = 0;
  planes.forEach((p, i) => {
    const bytes = bytesOf(p);
    for (let y = 0; y < p.height; y++) {
      for (let x = 0; x < p.bytesPerRow; x++) {
        const v = (seed * 31 + i * 101 + y * 7 + x * 13) & 0xff;
        bytes[y * strideBytes(p) + x] = v;
        tight[at++] = v;
      }
    }
  });
  return tight;
}

/** The planes' rows as the CPU sees them now, tightly packed. */
function rows(planes: PlaneView[]): Uint8Array {
  const out: number[] = [];
  for (const p of planes) {
    const bytes = bytesOf(p);
    for (let y = 0; y < p.height; y++) {
      out.push(...bytes.subarray(y * strideBytes(p), y * strideBytes(p) + p.bytesPerRow));
    }
  }
  return new Uint8Array(out);
}

function pattern(size: number, seed: number): Uint8Array {
  return Uint8Array.from({ length: size }, (_, i) => (seed * 17 + i * 5 + (i >> 8)) & 0xff);
}

function assertConserved(s: ImporterStats, when: string): void {
  assert.equal(s.imports, s.freed + s.cached, `imports == freed + cached ${when}`);
}

/** What {@link importFilled} hands its body. */
interface Filled {
  planes: PlaneView[];
  /** The frame's bytes as fill() wrote them, tightly packed. */
  written: Uint8Array;
  imp: ReturnType<VulkanImporter["import"]>;
}

/**
 * Fills a frame of `pool` from `seed` and imports it with a new importer of
 * `options` (on device A) for `body`; releases the frame after it, and closes
 * the importer and `pool` either way.
 */
function importFilled(
  ctx: Context,
  pool: FramePool,
  options: Partial<VulkanImporterOptions>,
  seed: number,
  body: (filled: Filled) => void,
): void {
  const importer = ctx.importer(options);
  try {
    const frame = pool.tryAcquire()!;
    const planes = pool.planes(frame);
    const written = fill(planes, seed);
    body({ planes, written, imp: importer.import(frame) });
    frame.release();
  } finally {
    importer.close();
    pool.close();
  }
}

const W = 64;
const H = 64;

// ------------------------------------------------- (1) FramePool frames

for (const format of ["RgbaU8", "NV12", "YUV420P"] as PixelFormatName[]) {
  vkTest(
    `a ${format} FramePool frame: CPU bytes read back from the imported VkImage, Vulkan writes seen in the memfd`,
    DMA_BUF,
    (ctx) => {
      const pool = FramePool.create({ format, width: W, height: H, slots: 2, rowAlign: 64 });
      importFilled(ctx, pool, { image: true }, 3, ({ planes, written, imp }) => {
        assert.equal(imp.cached, false);
        assert.notEqual(imp.image, 0n);
        assert.equal(imp.buffer, 0n);
        assert.equal(imp.memories.length, 1);
        assert.equal(imp.offset, 0n);
        assert.equal(Number(imp.size), pool.stats.bufferSize);
        assert.deepEqual(ctx.image(0, imp.image, planes), written, "Vulkan read the CPU's bytes");

        const fromGpu = pattern(written.length, 9);
        ctx.image(0, imp.image, planes, fromGpu);
        assert.deepEqual(rows(planes), fromGpu, "the memfd mapping shows Vulkan's writes: no copy");
      });
    },
  );
}

vkTest("a FramePool frame imported as a VkBuffer: the whole memfd, both ways", DMA_BUF, (ctx) => {
  const pool = FramePool.create({ format: "NV12", width: W, height: H, slots: 1 });
  importFilled(ctx, pool, { image: false, buffer: true }, 4, ({ planes, imp }) => {
    assert.equal(imp.image, 0n);
    assert.notEqual(imp.buffer, 0n);
    assert.equal(imp.vkFormat, 0);
    const size = pool.stats.bufferSize;
    const whole = ctx.buffer(0, imp.buffer, 0, size);
    // Plane 1 starts where the pool's layout says: compare each plane's rows at its offset.
    for (const [i, p] of planes.entries()) {
      const at = pool.layout.planes[i].offset;
      const got = whole.subarray(at, at + strideBytes(p) * p.height);
      assert.deepEqual(got, bytesOf(p).subarray(0, got.length), `plane ${i} through the VkBuffer`);
    }
    const fromGpu = pattern(256, 2);
    ctx.buffer(0, imp.buffer, 128, 256, fromGpu);
    assert.deepEqual(
      bytesOf(planes[0]).subarray(128, 384),
      fromGpu,
      "Vulkan's buffer writes in the memfd",
    );
  });
});

vkTest("image and buffer together over one frame", DMA_BUF, (ctx) => {
  const pool = FramePool.create({ format: "RgbaU8", width: W, height: H, slots: 1 });
  importFilled(ctx, pool, { image: true, buffer: true }, 5, ({ planes, written, imp }) => {
    assert.notEqual(imp.image, 0n);
    assert.notEqual(imp.buffer, 0n);
    assert.equal(imp.vkFormat, 37, "VK_FORMAT_R8G8B8A8_UNORM");
    assert.deepEqual(ctx.image(0, imp.image, planes), written);
    assert.deepEqual(ctx.buffer(0, imp.buffer, 0, written.length), written);
  });
});

// ------------------------------------------------------- (2) VkOpaqueFd

/** Memory device A exported as an opaque fd (gvk_export_create), behind its W x H RGBA image. */
interface OpaqueExport {
  size: bigint;
  offset: bigint;
  dedicated: boolean;
  /** Writes `bytes` into the image through device A's mapping (gvk_object_write). */
  write(bytes: Uint8Array): void;
  /** The VkOpaqueFd that adopts the exported fd, naming `deviceUuid` (device A's unless given). */
  adopt(deviceUuid?: Uint8Array): VkOpaqueFd;
  /** Destroys the image and its memory. */
  destroy(): void;
}

function exportOpaque(ctx: Context, dedicated: boolean): OpaqueExport {
  const out = new BigUint64Array(8);
  helperCheck(vk.gvk_export_create(ctx.ptr, W, H, dedicated ? 1 : 0, out), "gvk_export_create");
  const [object, fd, size, memoryTypeIndex, isDedicated, , , offset] = out;
  const desc = {
    fd: Number(fd),
    size,
    memoryTypeIndex: Number(memoryTypeIndex),
    offset,
    dedicated: isDedicated === 1n,
    width: W,
    height: H,
    format: "RgbaU8" as const,
  };
  return {
    size,
    offset,
    dedicated: desc.dedicated,
    write: (bytes) =>
      helperCheck(vk.gvk_object_write(ctx.ptr, object, bytes, BigInt(bytes.length)), "write"),
    adopt: (deviceUuid = ctx.uuid) =>
      VkOpaqueFd.create({ ...desc, deviceUuid }, { takeOwnership: true }),
    destroy: () => helperCheck(vk.gvk_object_destroy(ctx.ptr, object), "gvk_object_destroy"),
  };
}

for (const dedicated of [true, false]) {
  vkTest(
    `a VkOpaqueFd exported by device A (${
      dedicated ? "dedicated" : "at an offset"
    }) imported into device B`,
    OPAQUE,
    (ctx) => {
      const exported = exportOpaque(ctx, dedicated);
      const written = pattern(W * H * 4, 6);
      exported.write(written);
      const importer = ctx.importer({ image: true, buffer: true }, 1);
      try {
        using memory = exported.adopt();
        const imp = importer.import(memory);
        assert.equal(imp.offset, exported.offset);
        assert.equal(imp.size, exported.size);
        assert.equal(
          imp.buffer === 0n,
          exported.dedicated,
          "memory dedicated to the image has no buffer",
        );
        const plane = { width: W, height: H, bytesPerRow: W * 4 } as PlaneView;
        assert.deepEqual(
          ctx.image(1, imp.image, [plane]),
          written,
          "device B read device A's bytes",
        );
        assert.equal(importer.import(memory).cached, true);
      } finally {
        importer.close();
        exported.destroy();
      }
    },
  );
}

// ---------------------------------------------------------- (3) caching

vkTest(
  "100 frames of a 3-slot pool: 3 imports, 97 hits; freed when the pool goes",
  DMA_BUF,
  (ctx) => {
    const pool = FramePool.create({ format: "NV12", width: W, height: H, slots: 3 });
    const importer = ctx.importer();
    try {
      const imageOf = new Map<bigint, bigint>();
      const held: Frame[] = []; // two frames held: each acquire takes the slot freed last
      for (let i = 0; i < 100; i++) {
        const frame = pool.tryAcquire()!;
        const imp = importer.import(frame);
        const id = frame.bufferId!;
        if (imageOf.has(id)) {
          assert.equal(imp.cached, true);
          assert.equal(imp.image, imageOf.get(id), "a slot's frames share one VkImage");
        }
        imageOf.set(id, imp.image);
        assertConserved(importer.stats, `after frame ${i}`);
        held.push(frame);
        if (held.length === 3) held.shift()!.release();
      }
      held.forEach((frame) => frame.release());
      let s = importer.stats;
      assert.equal(s.imports, 3);
      assert.equal(s.hits, 97);
      assert.equal(s.cached, 3);
      assert.equal(imageOf.size, 3);
      assert.equal(importMappings(), 3, "three imports hold the three slots' memory");

      pool.close(); // every frame is back: the slots' memory goes now
      importer.collect();
      s = importer.stats;
      assert.equal(s.freed, 3, "the imports of the closed pool's buffers were freed");
      assert.equal(s.cached, 0);
      assertConserved(s, "after the pool closed");
      assert.equal(importMappings(), 0, "Vulkan let go of the memory");
    } finally {
      importer.close();
      pool.close();
    }
  },
);

vkTest("forget() frees one import; close() frees the rest", DMA_BUF, (ctx) => {
  const pool = FramePool.create({ format: "RgbaU8", width: W, height: H, slots: 2 });
  const importer = ctx.importer();
  try {
    const a = pool.tryAcquire()!;
    const b = pool.tryAcquire()!;
    importer.import(a);
    importer.import(b);
    importer.forget(a);
    const s = importer.stats;
    assert.deepEqual([s.imports, s.freed, s.cached], [2, 1, 1]);
    assert.equal(importer.import(a).cached, false, "forgotten: imported again");
    a.release();
    b.release();
    assert.equal(importMappings(), 2);
    importer.close();
    assert.equal(importMappings(), 0, "close() freed every import");
  } finally {
    importer.close();
    pool.close();
  }
});

// ---------------------------------------------------- (4) device mismatch

vkTest("a VkOpaqueFd of another device: DeviceMismatchError naming deviceUuid", OPAQUE, (ctx) => {
  const exported = exportOpaque(ctx, false);
  const other = ctx.uuid.slice();
  other[0] ^= 0xff;
  const importer = ctx.importer({}, 1);
  try {
    using memory = exported.adopt(other);
    assert.throws(() => importer.import(memory), (e) => {
      assert.ok(e instanceof DeviceMismatchError, String(e));
      assert.equal(e.field, "deviceUuid");
      return true;
    });
    const s = importer.stats;
    assert.equal(s.cached, 0);
    assert.equal(s.imports, 0);
  } finally {
    importer.close();
    exported.destroy();
  }
});

// ---------------------------------------------------------- (5) bad input

function throwsNaming(
  fn: () => unknown,
  type: new (...args: never[]) => Error,
  field: string,
): void {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof type, `${type.name} expected, got ${String(e)}`);
    assert.equal((e as { field?: string }).field, field, String(e));
    return true;
  });
}

vkTest("refusals name the field and leave nothing behind", DMA_BUF, (ctx) => {
  const importer = ctx.importer();
  try {
    // NV21 has a DRM fourcc but no VkFormat (Vulkan has no CrCb order).
    const nv21 = FramePool.create({ format: "NV21", width: W, height: H, slots: 1 });
    const f1 = nv21.tryAcquire()!;
    throwsNaming(() => importer.import(f1), UnsupportedError, "format");
    f1.release();
    nv21.close();

    // Rows padded to 128 bytes where lavapipe lays 48 RGBA pixels out in 192.
    const wide = FramePool.create({
      format: "RgbaU8",
      width: 48,
      height: 16,
      slots: 1,
      rowAlign: 128,
    });
    const f2 = wide.tryAcquire()!;
    throwsNaming(() => importer.import(f2), InvalidHandleError, "planes[0].stride");
    f2.release();
    wide.close();

    // A tiled modifier on a device without VK_EXT_image_drm_format_modifier.
    const fd = memfd(W * H * 4);
    try {
      using tiled = DmaBufHandle.create({
        fds: [fd],
        format: "RgbaU8",
        modifier: 0x0100000000000001n, // I915_FORMAT_MOD_X_TILED
        width: W,
        height: H,
        planes: [{ objectIndex: 0, offset: 0, stride: W * 4 }],
      });
      throwsNaming(() => importer.import(tiled), UnsupportedError, "modifier");
    } finally {
      close(fd);
    }

    const pool = FramePool.create({ format: "RgbaU8", width: W, height: H, slots: 1 });
    const f3: Frame = pool.tryAcquire()!;
    f3.release();
    assert.throws(() => importer.import(f3), ReleasedError);
    pool.close();

    using cpu = CpuBytes.create({
      data: new Uint8Array(W * H * 4),
      format: "RgbaU8",
      width: W,
      height: H,
      rowPitch: W * 4,
    });
    throwsNaming(() => importer.import(cpu), WrongKindError, "frame");

    const s = importer.stats;
    assert.equal(s.failed, 3, "Vulkan refused NV21, the stride and the modifier");
    assert.equal(s.imports, 0);
    assert.equal(s.cached, 0);
    assertConserved(s, "after the refusals");
  } finally {
    importer.close();
  }
  assert.equal(importer.stats.failed, 3, "stats keep the counts of the close");
  throwsNaming(() => importer.device, ReleasedError, "importer");
  throwsNaming(() => importer.collect(), ReleasedError, "importer");
});

vkTest("create refuses bad options by name", CAP_EXTERNAL_MEMORY_FD, (ctx) => {
  throwsNaming(() => ctx.importer({ image: false, buffer: false }), InvalidHandleError, "flags");
  throwsNaming(() => ctx.importer({ device: null }), InvalidHandleError, "device");
  throwsNaming(() => ctx.importer({ capacity: -1 }), InvalidHandleError, "capacity");
  throwsNaming(() => ctx.importer({ instance: 1.5 }), InvalidHandleError, "instance");
});

// ---------------------------------------------- (6) caps and negotiation

vkTest("vulkanCaps: lavapipe's rows, and a negotiated pool that imports", DMA_BUF, (ctx) => {
  const info = vulkanDeviceInfo(ctx.instance, ctx.physicalDevice);
  assert.equal(info.id.kind, "vulkanUuid");
  assert.deepEqual(info.id.bytes, ctx.uuid);
  assert.equal(info.name, probed.device);

  const caps = vulkanCaps(ctx.instance, ctx.physicalDevice);
  for (const format of ["NV12", "RgbaU8"]) {
    const row = caps.find((c) => c.format === format && c.modifier === 0n);
    assert.ok(row, `${format} LINEAR is listed`);
    assert.ok(row.memory.includes("dmaBuf"), `${format} comes in a dma-buf`);
    assert.ok(row.maxWidth >= 4096 && row.maxHeight >= 4096);
    assert.ok(row.rowAlign >= 1 && (row.rowAlign & (row.rowAlign - 1)) === 0, "a power of two");
  }
  assert.ok(!caps.some((c) => c.format === "NV21"), "no row for a format without a VkFormat");

  // 48 pixels: a width whose rows only fit lavapipe's layout when the row alignment is negotiated.
  const pick = negotiateDmaBuf(caps, { width: 48, height: 16 });
  importFilled(ctx, poolFor(pick), {}, 8, ({ planes, written, imp }) => {
    assert.deepEqual(ctx.image(0, imp.image, planes), written, `${pick.format} read back`);
  });
});

// Not a vkTest: a Worker's own runtime holds fds past its end, so the fd count cannot say.
Deno.test({
  name:
    "buffers that end on a Worker's thread while this one imports: no deadlock, each import freed once",
  ignore: missing(DMA_BUF) !== undefined,
  async fn() {
    const handles = liveHandles();
    const ctx = new Context();
    const worker = new Worker(
      new URL("./_support/late_release_worker.ts", import.meta.url),
      { type: "module" },
    );
    const importer = ctx.importer({ capacity: 4 });
    let sent = 0;
    try {
      for (let round = 0; round < 12; round++) {
        const pool = FramePool.create({ format: "RgbaU8", width: 64, height: 16, slots: 3 });
        for (let i = 0; i < 9; i++) {
          const frame = await pool.acquire({ timeout: 5000 });
          importer.import(frame);
          worker.postMessage(frame.intoRaw()); // its last release happens over there
          sent++;
          const s = importer.stats;
          assert.equal(s.imports, s.freed + s.cached, `round ${round}, frame ${i}`);
        }
        pool.close(); // each slot's buffer ends at its frame's last release, on the Worker's thread
      }
      const released = () =>
        new Promise<number>((resolve) => {
          worker.onmessage = (e) => resolve(e.data);
          worker.postMessage("count");
        });
      while (await released() < sent) await new Promise((r) => setTimeout(r, 5));
      importer.collect();
      const s = importer.stats;
      assert.equal(s.cached, 0, "every buffer ended, so every import was freed");
      assert.equal(s.imports, s.freed);
      assert.equal(s.imports, 36, "one import per slot per pool");
    } finally {
      importer.close();
      worker.terminate();
      ctx.close();
    }
    assert.ok(liveHandles() <= handles, "every gpures handle was released");
    assert.equal(importMappings(), 0, "no import still maps a pool memfd");
  },
});
