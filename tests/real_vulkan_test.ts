// Real Vulkan objects (lavapipe on CI) through gpures handles, and consumers
// that read the bytes back through the handle alone.
//
// build/test-helpers/libgpures_test_vulkan.so (tests/gpu_helpers/vulkan) makes the
// objects: a linear RGBA8 VkImage and a VkBuffer on device A, memory exported
// from A with vkGetMemoryFdKHR. The handles are made here with the public API,
// as a user's would be; the helper's consumers are given only
// `resource.unsafeHandle` and read through gpures's C API (describe, dup_fd),
// importing into a second VkDevice (B) where the handle carries an fd.
// Without the helper, a Vulkan device or an extension, each test is skipped
// and says why. With vulkan-validationlayers installed,
// VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation runs them under the
// validation layer (they are clean there, synchronization validation included).

import assert from "node:assert/strict";
import {
  DmaBufHandle,
  type DmaBufHandleDesc,
  liveHandles,
  VkBufferHandle,
  VkImage,
  VkOpaqueFd,
} from "../mod.ts";
import { close, countOpenFds, isOpen, memfd, readAt, writeAt } from "./_support/libc.ts";
import {
  CAP_DMA_BUF_IMPORT,
  CAP_EXTERNAL_MEMORY_FD,
  CAP_OPAQUE_FD_IMAGE,
  cString,
  lacking,
  probe,
} from "./_support/vulkan_helper.ts";
import { helperCheck, HelperContext } from "./_support/vulkan_context.ts";

// ------------------------------------------------------------------- helper

/** How a consumer reads: mapping the memory, or a transfer on the device's queue. */
const MODES = { map: 0, gpu: 1 } as const;

const VK_FORMAT_R8G8B8A8_UNORM = 37;
const WIDTH = 64;
const HEIGHT = 64;
const RGBA_BYTES = WIDTH * HEIGHT * 4;

const probed = probe(
  "install libvulkan-dev and build it: cmake -S . -B build && cmake --build build",
);
const vk = probed.helper!;

/** Why a test needing `caps` cannot run here, or undefined when it can. */
const missing = (caps: number) => lacking(probed, caps);

/** A Vulkan test: skipped, with the reason printed, where it cannot run. */
function vkTest(name: string, caps: number, fn: (ctx: Context) => void): void {
  const reason = missing(caps);
  if (reason) console.log(`skipping "${name}": ${reason}`);
  Deno.test({
    name,
    ignore: reason !== undefined,
    fn: () => {
      const handles = liveHandles();
      const ctx = new Context();
      try {
        fn(ctx);
        ctx.assertNothingLive();
      } finally {
        ctx.close();
      }
      assert.equal(liveHandles(), handles, "every gpures handle was released");
    },
  });
}

const check = (status: number, what: string) => helperCheck(vk, status, what);

/** The helper's context, with the object reads and writes these tests use. */
class Context extends HelperContext {
  constructor() {
    super(vk);
  }

  read(id: bigint, mode: number, size: number): Uint8Array {
    const out = new Uint8Array(size);
    check(vk.gvk_object_read(this.ptr, id, mode, out, BigInt(size)), "gvk_object_read");
    return out;
  }

  write(id: bigint, bytes: Uint8Array): void {
    check(vk.gvk_object_write(this.ptr, id, bytes, BigInt(bytes.length)), "gvk_object_write");
  }

  destroy(id: bigint): void {
    check(vk.gvk_object_destroy(this.ptr, id), "gvk_object_destroy");
  }
}

/** Bytes no shift, stride or offset mistake can reproduce. */
function pattern(length: number, seed: number): Uint8Array {
  return Uint8Array.from(
    { length },
    (_, i) => (Math.imul(i + seed * 7919, 2654435761) >>> 24) ^ seed,
  );
}

const address = (ptr: Deno.PointerValue) => BigInt(Deno.UnsafePointer.value(ptr));

/** Byte equality that names the first difference (assert's diff of 16 KiB takes a minute). */
function assertBytes(actual: Uint8Array, expected: Uint8Array, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  const first = actual.findIndex((v, i) => v !== expected[i]);
  if (first >= 0) {
    const differing = actual.filter((v, i) => v !== expected[i]).length;
    assert.fail(
      `${what}: ${differing} of ${actual.length} bytes differ, the first at ${first} ` +
        `(${actual[first]}, expected ${expected[first]})`,
    );
  }
}

// ------------------------------------------------------------ the shared library

vkTest("the helper sees the handles of the libgpures this module loaded", 0, () => {
  using resource = VkBufferHandle.create({ buffer: 0x1234n, size: 16n });
  assert.equal(
    vk.gvk_handle_kind(resource.unsafeHandle),
    resource.kindId,
    "the helper and the module share one handle table (is GPURES_LIB another copy?)",
  );
});

// ------------------------------------------------------------ VkImage

vkTest("VkImage of a real vkCreateImage: a consumer given only the handle reads the pixels", 0, (
  ctx,
) => {
  const pixels = pattern(RGBA_BYTES, 1);
  const out = new BigUint64Array(8);
  check(
    vk.gvk_image_create(ctx.ptr, WIDTH, HEIGHT, pixels, BigInt(pixels.length), out),
    "gvk_image_create",
  );
  const [id, image, rowPitch, , vkFormat] = out;
  let destroyed = 0;
  const producer = VkImage.create({
    image,
    device: ctx.device(0),
    instance: vk.gvk_instance(ctx.ptr),
    physicalDevice: vk.gvk_physical_device(ctx.ptr),
    deviceUuid: ctx.uuid,
    rowPitch: Number(rowPitch),
    vkFormat: Number(vkFormat),
    width: WIDTH,
    height: HEIGHT,
  }, {
    // The producer destroys the image when the last reference anywhere goes.
    keepAlive: {
      release() {
        destroyed++;
        ctx.destroy(id);
      },
    },
  });

  const d = producer.describe();
  assert.equal(d.kind, "VkImage");
  assert.equal(d.image, image);
  assert.equal(d.device, address(ctx.device(0)));
  assert.equal(d.instance, address(vk.gvk_instance(ctx.ptr)));
  assert.equal(d.physicalDevice, address(vk.gvk_physical_device(ctx.ptr)));
  assert.deepEqual(d.deviceUuid, ctx.uuid);
  assert.equal(d.rowPitch, Number(rowPitch));
  assert.ok(d.rowPitch >= WIDTH * 4);
  assert.equal(d.vkFormat, VK_FORMAT_R8G8B8A8_UNORM);
  assert.equal(d.width, WIDTH);
  assert.equal(d.height, HEIGHT);
  assert.notDeepEqual(ctx.uuid, new Uint8Array(16), "the device has a UUID");

  // The consumer holds its own reference; the producer lets go of its own.
  const consumer = producer.clone();
  producer.release();
  assert.equal(destroyed, 0);

  for (const [how, mode] of Object.entries(MODES)) {
    const read = new Uint8Array(RGBA_BYTES);
    check(
      vk.gvk_vk_image_read(consumer.unsafeHandle, mode, read, BigInt(read.length)),
      `gvk_vk_image_read (${how})`,
    );
    assertBytes(read, pixels, `the consumer reads the producer's pixels (${how})`);
  }

  // The reverse direction: the consumer writes, the producer sees it in its image.
  const back = pattern(RGBA_BYTES, 2);
  check(
    vk.gvk_vk_image_write(consumer.unsafeHandle, back, BigInt(back.length)),
    "gvk_vk_image_write",
  );
  assertBytes(ctx.read(id, MODES.map, RGBA_BYTES), back, "the producer maps the consumer's pixels");
  assertBytes(
    ctx.read(id, MODES.gpu, RGBA_BYTES),
    back,
    "the producer copies the consumer's pixels",
  );

  consumer.release();
  assert.equal(destroyed, 1, "the last release ran the producer's keep-alive once");
});

// ------------------------------------------------------------ VkBufferHandle

vkTest("VkBufferHandle of a real vkCreateBuffer: a consumer given only the handle reads it", 0, (
  ctx,
) => {
  const size = 10_000;
  const bytes = pattern(size, 3);
  const out = new BigUint64Array(8);
  check(vk.gvk_buffer_create(ctx.ptr, bytes, BigInt(size), out), "gvk_buffer_create");
  const [id, buffer] = out;
  using resource = VkBufferHandle.create(
    { buffer, device: ctx.device(0), deviceUuid: ctx.uuid, size: BigInt(size) },
    { keepAlive: { release: () => ctx.destroy(id) } },
  );
  const d = resource.describe();
  assert.equal(d.kind, "VkBufferHandle");
  assert.equal(d.buffer, buffer);
  assert.equal(d.device, address(ctx.device(0)));
  assert.deepEqual(d.deviceUuid, ctx.uuid);
  assert.equal(d.size, BigInt(size));

  for (const [how, mode] of Object.entries(MODES)) {
    const read = new Uint8Array(size);
    check(
      vk.gvk_vk_buffer_read(resource.unsafeHandle, mode, read, BigInt(size)),
      `gvk_vk_buffer_read (${how})`,
    );
    assertBytes(read, bytes, `the consumer reads the producer's bytes (${how})`);
  }

  const back = pattern(size, 4);
  check(vk.gvk_vk_buffer_write(resource.unsafeHandle, back, BigInt(size)), "gvk_vk_buffer_write");
  assertBytes(ctx.read(id, MODES.map, size), back, "the producer maps the consumer's bytes");
  assertBytes(ctx.read(id, MODES.gpu, size), back, "the producer copies the consumer's bytes");

  // A consumer given a released handle is told so and reads nothing.
  const stale = resource.unsafeHandle;
  resource.release();
  assert.equal(vk.gvk_live_objects(ctx.ptr), 0, "the keep-alive destroyed the buffer");
  const read = new Uint8Array(size);
  assert.notEqual(vk.gvk_vk_buffer_read(stale, MODES.map, read, BigInt(size)), 0);
  assert.match(cString(vk.gvk_last_error()), /STALE/);
});

// ------------------------------------------------------------ VkOpaqueFd

for (const dedicated of [true, false]) {
  vkTest(
    `VkOpaqueFd from vkGetMemoryFdKHR (${
      dedicated ? "dedicated" : "suballocated at an offset"
    }): adopted, imported into a second VkDevice, same memory both ways`,
    CAP_EXTERNAL_MEMORY_FD | CAP_OPAQUE_FD_IMAGE,
    (ctx) => {
      const fdsBefore = countOpenFds();
      const out = new BigUint64Array(8);
      check(
        vk.gvk_export_create(ctx.ptr, WIDTH, HEIGHT, dedicated ? 1 : 0, out),
        "gvk_export_create",
      );
      const [exported, fdValue, size, memoryTypeIndex, isDedicated, , , offset] = out;
      const fd = Number(fdValue);
      assert.ok(isOpen(fd), "vkGetMemoryFdKHR gave an open fd");

      // Device A writes the frame through its own mapping.
      const a = pattern(RGBA_BYTES, 5);
      ctx.write(exported, a);

      const memory = VkOpaqueFd.create({
        fd,
        size,
        memoryTypeIndex: Number(memoryTypeIndex),
        offset,
        dedicated: isDedicated === 1n,
        width: WIDTH,
        height: HEIGHT,
        format: "RgbaU8",
        deviceUuid: ctx.uuid,
      }, { takeOwnership: true });
      const d = memory.describe();
      assert.equal(d.fd, fd, "takeOwnership adopts the fd itself");
      assert.equal(d.size, size);
      assert.equal(d.memoryTypeIndex, Number(memoryTypeIndex));
      assert.equal(d.offset, offset);
      assert.equal(d.dedicated, isDedicated === 1n);
      assert.equal(d.format, "RgbaU8");
      assert.deepEqual(d.deviceUuid, ctx.uuid);
      if (!dedicated) assert.ok(offset > 0n, "the image sits past the allocation's start");

      // The consumer gets a reference and imports dupFd's fd into device B.
      const consumer = memory.clone();
      const imp = new BigUint64Array(4);
      check(vk.gvk_import_opaque_fd(ctx.ptr, consumer.unsafeHandle, imp), "gvk_import_opaque_fd");
      const [imported, , importedSize] = imp;
      assert.equal(importedSize, size);
      assert.ok(isOpen(fd), "importing used a duplicate, not the handle's own fd");

      for (const [how, mode] of Object.entries(MODES)) {
        assertBytes(ctx.read(imported, mode, RGBA_BYTES), a, `B reads A's frame (${how})`);
      }

      // B writes; A sees it in its own memory: one allocation, no copy.
      const b = pattern(RGBA_BYTES, 6);
      ctx.write(imported, b);
      for (const [how, mode] of Object.entries(MODES)) {
        assertBytes(ctx.read(exported, mode, RGBA_BYTES), b, `A reads B's frame (${how})`);
      }

      // The adopted fd closes with the last reference, and not before.
      memory.release();
      assert.ok(isOpen(fd), "the consumer's reference keeps the fd open");
      consumer.release();
      assert.ok(!isOpen(fd), "the last release closed the adopted fd");

      // The Vulkan memory objects live on without the fd, still shared.
      const c = pattern(RGBA_BYTES, 7);
      ctx.write(exported, c);
      assertBytes(
        ctx.read(imported, MODES.gpu, RGBA_BYTES),
        c,
        "B reads A's frame after the fd closed",
      );

      ctx.destroy(imported);
      ctx.destroy(exported);
      assert.equal(countOpenFds(), fdsBefore, "no fd leaked (Vulkan consumed the imported one)");
    },
  );
}

// ------------------------------------------------------------ DmaBufHandle

const fourcc = (s: string) =>
  s.charCodeAt(0) | s.charCodeAt(1) << 8 | s.charCodeAt(2) << 16 | s.charCodeAt(3) << 24;

interface PlaneSpec {
  object: number;
  offset: number;
  stride: number;
  rowBytes: number;
  rows: number;
}

interface Layout {
  name: string;
  fourcc: number;
  width: number;
  height: number;
  /** Size of each object (memfd). */
  objects: number[];
  planes: PlaneSpec[];
}

const NV12_W = 64;
const NV12_H = 48;
const LAYOUTS: Layout[] = [
  {
    // DRM_FORMAT_ABGR8888: R, G, B, A bytes; rows padded, starting past the object's start.
    name: "linear RGBA (AB24), stride 320 at offset 512",
    fourcc: fourcc("AB24"),
    width: WIDTH,
    height: HEIGHT,
    objects: [24576],
    planes: [{ object: 0, offset: 512, stride: 320, rowBytes: WIDTH * 4, rows: HEIGHT }],
  },
  {
    name: "NV12, both planes in one object",
    fourcc: fourcc("NV12"),
    width: NV12_W,
    height: NV12_H,
    objects: [12288],
    planes: [
      { object: 0, offset: 0, stride: 128, rowBytes: NV12_W, rows: NV12_H },
      { object: 0, offset: 8192, stride: 128, rowBytes: NV12_W, rows: NV12_H / 2 },
    ],
  },
  {
    name: "NV12, one object per plane",
    fourcc: fourcc("NV12"),
    width: NV12_W,
    height: NV12_H,
    objects: [4096, 8192],
    planes: [
      { object: 0, offset: 0, stride: NV12_W, rowBytes: NV12_W, rows: NV12_H },
      { object: 1, offset: 256, stride: 96, rowBytes: NV12_W, rows: NV12_H / 2 },
    ],
  },
];

for (const layout of LAYOUTS) {
  vkTest(
    `DmaBufHandle over a memfd (${layout.name}) imported through VK_EXT_external_memory_dma_buf`,
    CAP_EXTERNAL_MEMORY_FD | CAP_DMA_BUF_IMPORT,
    (ctx) => {
      const fdsBefore = countOpenFds();
      const fds = layout.objects.map((size) => memfd(size));
      try {
        // The producer writes each plane's rows into its memfd at the plane's offset and stride.
        const pixels = layout.planes.map((p, i) => pattern(p.rowBytes * p.rows, 10 + i));
        layout.planes.forEach((p, i) => {
          for (let y = 0; y < p.rows; y++) {
            const row = pixels[i].subarray(y * p.rowBytes, (y + 1) * p.rowBytes);
            writeAt(fds[p.object], row, p.offset + y * p.stride);
          }
        });

        const desc: DmaBufHandleDesc = {
          fds,
          fourcc: layout.fourcc,
          modifier: 0n, // DRM_FORMAT_MOD_LINEAR
          width: layout.width,
          height: layout.height,
          planes: layout.planes.map((p) => ({
            objectIndex: p.object,
            offset: p.offset,
            stride: p.stride,
          })),
        };
        using frame = DmaBufHandle.create(desc);
        const d = frame.describe();
        assert.equal(d.fourcc, layout.fourcc);
        assert.equal(d.fds.length, fds.length);
        assert.deepEqual(d.planes, desc.planes);

        const out = new BigUint64Array(4);
        check(vk.gvk_import_dma_buf(ctx.ptr, frame.unsafeHandle, out), "gvk_import_dma_buf");
        const [imported, objects, planes, memoryTypeBits] = out;
        assert.equal(Number(objects), fds.length);
        assert.equal(Number(planes), layout.planes.length);
        assert.notEqual(memoryTypeBits, 0n, "vkGetMemoryFdPropertiesKHR named memory types");

        layout.planes.forEach((p, i) => {
          for (const [how, mode] of Object.entries(MODES)) {
            const read = new Uint8Array(p.rowBytes * p.rows);
            check(
              vk.gvk_dma_buf_read_plane(ctx.ptr, imported, i, mode, read, BigInt(read.length)),
              `gvk_dma_buf_read_plane ${i} (${how})`,
            );
            assertBytes(read, pixels[i], `plane ${i} reads back through the import (${how})`);
          }
        });

        // The reverse direction: Vulkan writes plane by plane; the producer's memfd shows it.
        layout.planes.forEach((p, i) => {
          const back = pattern(p.rowBytes * p.rows, 20 + i);
          check(
            vk.gvk_dma_buf_write_plane(ctx.ptr, imported, i, back, BigInt(back.length)),
            `gvk_dma_buf_write_plane ${i}`,
          );
          for (let y = 0; y < p.rows; y++) {
            assertBytes(
              readAt(fds[p.object], p.rowBytes, p.offset + y * p.stride),
              back.subarray(y * p.rowBytes, (y + 1) * p.rowBytes),
              `plane ${i} row ${y} is in the memfd`,
            );
          }
        });

        ctx.destroy(imported);
        frame.release();
      } finally {
        for (const fd of fds) close(fd);
      }
      assert.equal(countOpenFds(), fdsBefore, "no fd leaked (Vulkan consumed the imported ones)");
    },
  );
}
