// gpures over real GPU objects: CUDA buffers, pitched NV12 frames and surface
// objects, Vulkan images, buffers and exported memory imported by CUDA, and a
// GL texture read by CUDA through interop. The objects come from the GPU
// probe (gpu_probe.c), which tests/gpu/run.sh builds on a machine with an
// NVIDIA GPU. Anywhere else every test is ignored, with the reason printed.
//
//   deno test --allow-ffi --allow-read --allow-env tests/gpu/gpu_test.ts

import assert from "node:assert/strict";
import {
  CudaBufferHandle,
  CudaPtr2D,
  CudaSurface,
  GlTextureHandle,
  liveHandles,
  load,
  PixelFormat,
  ReleasedError,
  VkBufferHandle,
  VkImage,
  VkOpaqueFd,
} from "../../mod.ts";
import {
  type CudaInfo,
  cudaVersionString,
  type ExportMemory,
  openProbe,
  type Probe,
  uuidString,
} from "./probe.ts";

// ------------------------------------------------------------------ set-up

const opened = openProbe();
let cudaSkip = opened.reason;
if (!cudaSkip) {
  try {
    load();
  } catch (e) {
    cudaSkip = `the gpures library did not load: ${(e as Error).message}`;
    opened.probe!.close();
  }
}
const probe = opened.probe as Probe;
const cuda = opened.cuda as CudaInfo;
const handlesAtStart = cudaSkip ? 0 : liveHandles();

let vkSkip = cudaSkip;
let vk: ReturnType<Probe["vkInfo"]> | undefined;
if (!vkSkip) {
  if (probe.vkOpen(cuda.uuid) === 0) vk = probe.vkInfo();
  else vkSkip = `no usable Vulkan device: ${probe.lastError()}`;
}

const GL_TEXTURE_2D = 0x0de1;
const GL_RGBA8 = 0x8058;
let glSkip = cudaSkip;
let interopSkip = cudaSkip;
let gl: ReturnType<Probe["glOpen"]> | undefined;
if (!glSkip) {
  gl = probe.glOpen();
  if (gl.rc !== 0) glSkip = `no OpenGL context through EGL: ${probe.lastError()}`;
}
if (!glSkip) {
  // Whether CUDA-GL interop registers a texture at all: decided once, here.
  try {
    const name = probe.glTexture(4, 4, 1);
    try {
      probe.cuGlAccess(name, GL_TEXTURE_2D, 4, 4, 1, false);
    } finally {
      probe.glTextureDelete(name);
    }
  } catch (e) {
    interopSkip = `CUDA-GL interop is unavailable here: ${(e as Error).message}`;
  }
} else {
  interopSkip = glSkip;
}

if (cudaSkip) {
  console.log(`gpu tests skipped: ${cudaSkip}`);
} else {
  console.log(
    `gpu: CUDA device "${cuda.name}" (sm ${cuda.computeCapability}, ${cuda.totalMiB} MiB), ` +
      `driver API ${cudaVersionString(cuda.driverVersion)}, ${uuidString(cuda.uuid)}, ` +
      `kernels ${
        cuda.kernelsLoaded ? "loaded (nvcc)" : `absent (${cuda.kernelNote}): patterns are uploaded`
      }`,
  );
  if (vk) {
    console.log(
      `gpu: Vulkan device "${vk.name}" (vendor 0x${
        vk.vendorId.toString(16)
      }, API ${vk.apiVersion}, ` +
        `driver ${vk.driverVersion}), ${uuidString(vk.uuid)}, ` +
        `VK_EXT_external_memory_dma_buf ${vk.dmaBufExtension ? "listed" : "not listed"}`,
    );
  } else console.log(`gpu: Vulkan checks skipped: ${vkSkip}`);
  if (gl && gl.rc === 0) {
    console.log(`gpu: GL ${gl.renderer}, EGL device's CUDA ordinal ${gl.cudaOrdinal}`);
  } else console.log(`gpu: GL checks skipped: ${glSkip}`);
  if (interopSkip && !glSkip) console.log(`gpu: CUDA-GL interop check skipped: ${interopSkip}`);
}

const MiB = 1 << 20;
const same = (a: Uint8Array | null, b: Uint8Array) => a !== null && a.every((v, i) => v === b[i]);

function noLeaks(before: number): void {
  assert.equal(liveHandles(), before, "every handle the test made was released");
}

// -------------------------------------------------------------------- CUDA

Deno.test({
  name: "gpu: CudaBufferHandle over cuMemAlloc memory: describe matches CUDA, clone, release",
  ignore: !!cudaSkip,
  fn() {
    const before = liveHandles();
    const size = 16n * BigInt(MiB) + 4096n;
    const ptr = probe.cuAlloc(size);
    let keepAliveReleases = 0;
    const h = CudaBufferHandle.create({ ptr, size, deviceUuid: cuda.uuid }, {
      // The producer's keep-alive frees the CUDA memory once the last reference is gone.
      keepAlive: {
        release() {
          keepAliveReleases++;
          probe.cuFree(ptr);
        },
      },
    });
    const d = h.describe();
    assert.equal(d.kind, "CudaBufferHandle");
    assert.equal(d.kindId, 8);
    assert.equal(d.refcount, 1);
    assert.equal(d.ptr, ptr);
    assert.equal(d.size, size);
    // What CUDA says about the address the handle names.
    const info = probe.cuPointerInfo(d.ptr);
    assert.equal(info.base, d.ptr, "the handle names the start of the allocation");
    assert.equal(info.size, d.size, "cuMemGetAddressRange gives the handle's size");
    assert.ok(same(d.deviceUuid, info.uuid), "deviceUuid is the owning device's cuDeviceGetUuid");
    const json = h.toJSON();
    assert.equal(json.kind, "CudaBufferHandle");
    assert.equal(BigInt(json.ptr as string), ptr);

    // A CUDA kernel writes through the handle's pointer; the bytes come back as written.
    probe.cuFill(d.ptr, d.size, 0x5eed);
    assert.equal(probe.cuCheckHost(ptr, size, 0x5eed), 0n);
    assert.ok(probe.cuCheckHost(ptr, size, 0xbad) > 0n, "the check sees a wrong pattern");

    const c = h.clone();
    assert.equal(h.refcount, 2);
    assert.equal(c.describe().ptr, ptr);
    h.release();
    assert.throws(() => h.describe(), ReleasedError);
    assert.equal(keepAliveReleases, 0, "a clone still holds the memory");
    assert.ok(probe.cuIsAllocated(ptr), "gpures never frees borrowed CUDA memory");
    assert.equal(probe.cuCheck(c.describe().ptr, size, 0x5eed), 0n);
    c.release();
    assert.equal(keepAliveReleases, 1, "the last release ran the keep-alive once");
    assert.ok(!probe.cuIsAllocated(ptr), "the producer freed it from its keep-alive");
    noLeaks(before);
  },
});

Deno.test({
  name: "gpu: CudaPtr2D over cuMemAllocPitch NV12 frames: pitch and plane offsets match CUDA",
  ignore: !!cudaSkip,
  fn() {
    const before = liveHandles();
    const nv12 = PixelFormat.info("NV12");
    for (const [width, height] of [[1920, 1080], [3840, 2160], [1280, 721]]) {
      // Plane sizes from gpures's own format table; one pitched allocation holds both planes.
      const rows = [0, 1].map((p) => PixelFormat.planeExtent("NV12", p, width, height));
      const rowBytes = rows.map((e, p) => e.width * nv12.planes[p].bytesPerSample);
      const { ptr, pitch } = probe.cuAllocPitch(width, rows[0].height + rows[1].height, 16);
      const uvOffset = pitch * BigInt(rows[0].height);
      try {
        const h = CudaPtr2D.create({
          ptr,
          rowPitch: Number(pitch),
          planeByteOffsets: [0, Number(uvOffset)],
          width,
          height,
          deviceUuid: cuda.uuid,
        });
        const d = h.describe();
        assert.equal(d.kind, "CudaPtr2D");
        assert.equal(d.ptr, ptr);
        assert.equal(d.rowPitch, Number(pitch), "rowPitch is cuMemAllocPitch's pitch");
        assert.ok(d.rowPitch >= width);
        assert.deepEqual(d.planeByteOffsets, [0n, uvOffset]);
        assert.equal(d.width, width);
        assert.equal(d.height, height);
        const info = probe.cuPointerInfo(d.ptr);
        assert.equal(info.base, ptr);
        assert.ok(same(d.deviceUuid, info.uuid));
        const end = d.planeByteOffsets[1] + BigInt(d.rowPitch) * BigInt(rows[1].height);
        assert.ok(end <= info.size, `both planes lie in the allocation (${end} <= ${info.size})`);

        // A kernel writes each plane through the handle's layout; CUDA copies
        // them back at its own pitch: the handle's layout is the real one.
        for (let p = 0; p < 2; p++) {
          const at = d.ptr + d.planeByteOffsets[p];
          probe.cuFill2D(at, d.rowPitch, rowBytes[p], rows[p].height, 0x100 + p);
        }
        assert.equal(probe.cuCheck2D(ptr, pitch, rowBytes[0], rows[0].height, 0x100), 0n);
        assert.equal(
          probe.cuCheck2D(ptr + uvOffset, pitch, rowBytes[1], rows[1].height, 0x101),
          0n,
        );
        assert.ok(
          probe.cuCheck2D(ptr, BigInt(width), rowBytes[0], rows[0].height, 0x100) > 0n ||
            pitch === BigInt(width),
          "a wrong pitch reads other bytes",
        );

        const c = h.clone();
        assert.equal(c.refcount, 2);
        assert.deepEqual(c.describe().planeByteOffsets, d.planeByteOffsets);
        c.release();
        h.release();
        assert.throws(() => h.describe(), ReleasedError);
        assert.ok(probe.cuIsAllocated(ptr), "gpures never frees borrowed CUDA memory");
      } finally {
        probe.cuFree(ptr);
      }
    }
    noLeaks(before);
  },
});

Deno.test({
  name: "gpu: CudaSurface over a surface object on a CUDA array: describe matches CUDA",
  ignore: !!cudaSkip,
  fn() {
    const before = liveHandles();
    const width = 640, height = 360;
    const { surface, array } = probe.cuSurfaceCreate(width, height);
    try {
      const h = CudaSurface.create({
        surface,
        format: "rgba8unorm",
        width,
        height,
        deviceUuid: cuda.uuid,
      });
      const d = h.describe();
      assert.equal(d.kind, "CudaSurface");
      assert.equal(d.surface, surface);
      assert.ok(same(d.deviceUuid, cuda.uuid));
      // cuSurfObjectGetResourceDesc + cuArray3DGetDescriptor of the handle's surface.
      const q = probe.cuSurfaceQuery(d.surface);
      assert.equal(q.resourceType, 0, "CU_RESOURCE_TYPE_ARRAY");
      assert.equal(q.array, array);
      assert.equal(q.width, d.width);
      assert.equal(q.height, d.height);
      assert.equal(q.arrayFormat, 0x01, "CU_AD_FORMAT_UNSIGNED_INT8");
      assert.equal(q.channels, 4);
      assert.equal(d.format, "rgba8unorm", "4 x unsigned 8-bit is rgba8unorm");
      assert.ok(q.flags & 0x02, "CUDA_ARRAY3D_SURFACE_LDST");

      if (cuda.kernelsLoaded) {
        // A kernel writes texels through the handle's surface object.
        probe.cuSurfaceFill(d.surface, d.width, d.height, 0x51);
        assert.equal(probe.cuArrayCheck(array, width, height, 0x51), 0n);
        assert.ok(probe.cuArrayCheck(array, width, height, 0x52) > 0n);
      } else {
        console.log("  (no kernels: surface writes not exercised)");
      }
      const c = h.clone();
      assert.equal(c.describe().surface, surface);
      h.release();
      assert.equal(c.refcount, 1);
      c.release();
      assert.throws(() => c.describe(), ReleasedError);
      assert.deepEqual(
        probe.cuSurfaceQuery(surface).width,
        width,
        "the surface outlives the handle",
      );
    } finally {
      probe.cuSurfaceDestroy(surface, array);
    }
    noLeaks(before);
  },
});

// ------------------------------------------------------------------ Vulkan

Deno.test({
  name: "gpu: Vulkan and CUDA name the same GPU (deviceUUID = cuDeviceGetUuid)",
  ignore: !!vkSkip,
  fn() {
    assert.equal(vk!.vendorId, 0x10de, "an NVIDIA device");
    assert.equal(uuidString(vk!.uuid), uuidString(cuda.uuid));
  },
});

Deno.test({
  name: "gpu: VkImage and VkBufferHandle of real Vulkan objects",
  ignore: !!vkSkip,
  fn() {
    const before = liveHandles();
    // 300 RGBA texels are 1200 bytes: the driver's row pitch may pad them.
    const width = 300, height = 200;
    const img = probe.vkImage(width, height, 0x77);
    const gate = new BigUint64Array(1);
    try {
      const h = VkImage.create({
        image: img.image,
        device: vk!.device,
        instance: vk!.instance,
        physicalDevice: vk!.physicalDevice,
        deviceUuid: vk!.uuid,
        rowPitch: Number(img.rowPitch),
        vkFormat: img.vkFormat,
        width,
        height,
        slotRelease: { gate: Deno.UnsafePointer.of(gate), value: 9n },
      });
      const d = h.describe();
      assert.equal(d.kind, "VkImage");
      assert.equal(d.image, img.image);
      assert.equal(d.device, vk!.device);
      assert.equal(d.instance, vk!.instance);
      assert.equal(d.physicalDevice, vk!.physicalDevice);
      assert.equal(d.rowPitch, Number(img.rowPitch), "rowPitch is vkGetImageSubresourceLayout's");
      assert.equal(d.vkFormat, 37, "VK_FORMAT_R8G8B8A8_UNORM");
      assert.equal(d.width, width);
      assert.equal(d.height, height);
      assert.ok(same(d.deviceUuid, cuda.uuid), "the image's device is CUDA's device");
      // The texels read back at the handle's row pitch are the ones written.
      assert.equal(probe.vkImageCheck(img.memory, img.offset, d.rowPitch, width, height, 0x77), 0n);
      if (img.rowPitch !== BigInt(width * 4)) {
        assert.ok(probe.vkImageCheck(img.memory, img.offset, width * 4, width, height, 0x77) > 0n);
      }
      const c = h.clone();
      c.slotRelease();
      assert.equal(gate[0], 9n, "slotRelease stored its value into the producer's gate");
      c.release();
      h.release();
      assert.throws(() => h.describe(), ReleasedError);
      // gpures never destroys the image: it is intact after the last release.
      assert.equal(
        probe.vkImageCheck(img.memory, img.offset, img.rowPitch, width, height, 0x77),
        0n,
      );
    } finally {
      probe.vkImageDestroy(img.image, img.memory);
    }

    const size = 4 * MiB;
    const ex = probe.vkExport(size, "host", false);
    try {
      probe.fdClose(ex.fd); // this test needs the VkBuffer only
      const b = VkBufferHandle.create({
        buffer: ex.buffer,
        device: vk!.device,
        deviceUuid: vk!.uuid,
        size,
      });
      const d = b.describe();
      assert.equal(d.kind, "VkBufferHandle");
      assert.equal(d.buffer, ex.buffer);
      assert.equal(d.device, vk!.device);
      assert.equal(d.size, BigInt(size));
      assert.ok(same(d.deviceUuid, vk!.uuid));
      // Vulkan copies through the buffer the handle names.
      probe.vkWrite(ex.slot, size, 0x99, true);
      assert.equal(probe.vkCheck(ex.slot, size, 0x99, false), 0n);
      const c = b.clone();
      assert.equal(c.refcount, 2);
      c.release();
      b.release();
      assert.throws(() => b.describe(), ReleasedError);
    } finally {
      probe.vkFree(ex.slot);
    }
    noLeaks(before);
  },
});

interface ZeroCopyCase {
  label: string;
  width: number;
  height: number;
  format: "RgbaU8" | "NV12";
  memory: ExportMemory;
  dedicated: boolean;
}

const zeroCopyCases: ZeroCopyCase[] = [
  {
    label: "4K RGBA, host-visible",
    width: 3840,
    height: 2160,
    format: "RgbaU8",
    memory: "host",
    dedicated: false,
  },
  {
    label: "1080p RGBA, host-visible system memory, dedicated",
    width: 1920,
    height: 1080,
    format: "RgbaU8",
    memory: "sysmem",
    dedicated: true,
  },
  {
    label: "4K NV12, device-local, dedicated",
    width: 3840,
    height: 2160,
    format: "NV12",
    memory: "device",
    dedicated: true,
  },
];

const memoryFlags = (f: number) =>
  [[1, "DEVICE_LOCAL"], [2, "HOST_VISIBLE"], [4, "HOST_COHERENT"], [8, "HOST_CACHED"]]
    .filter(([bit]) => f & (bit as number)).map(([, name]) => name).join("|");

for (const k of zeroCopyCases) {
  Deno.test({
    name: `gpu: VkOpaqueFd (${k.label}): CUDA imports dupFd(); CUDA writes, Vulkan reads, and back`,
    ignore: !!vkSkip,
    fn() {
      const before = liveHandles();
      const rowPitch = k.format === "NV12" ? k.width : k.width * 4;
      const bytes = Number(PixelFormat.frameSize(k.format, k.width, k.height, rowPitch));
      const ex = probe.vkExport(bytes, k.memory, k.dedicated);
      const mappable = k.memory !== "device";
      const gate = new BigUint64Array(1);
      let imported: { ext: bigint; ptr: bigint } | undefined;
      try {
        using h = VkOpaqueFd.create({
          fd: ex.fd,
          size: ex.allocationSize,
          memoryTypeIndex: ex.memoryTypeIndex,
          offset: 0,
          dedicated: ex.dedicated,
          width: k.width,
          height: k.height,
          format: k.format,
          deviceUuid: vk!.uuid,
          slotRelease: { gate: Deno.UnsafePointer.of(gate), value: 1n },
        }, { takeOwnership: true });
        const d = h.describe();
        assert.equal(d.kind, "VkOpaqueFd");
        assert.equal(d.fd, ex.fd, "takeOwnership adopts the exported fd itself");
        assert.equal(d.size, ex.allocationSize);
        assert.equal(d.memoryTypeIndex, ex.memoryTypeIndex);
        assert.equal(d.dedicated, k.dedicated);
        assert.equal(d.format, k.format);
        assert.ok(same(d.deviceUuid, cuda.uuid), "exported by the GPU CUDA runs on");

        // dupFd gives CUDA its own fd of the same open file; CUDA consumes it.
        const fd = h.dupFd();
        assert.notEqual(fd, d.fd);
        const mine = probe.fdIdentity(d.fd), theirs = probe.fdIdentity(fd);
        assert.equal(theirs.ino, mine.ino);
        assert.equal(theirs.dev, mine.dev);
        let kcmp: string;
        try {
          assert.ok(probe.fdSameFile(fd, d.fd), "kcmp: dupFd() names the handle's open file");
          kcmp = "kcmp: same open file";
        } catch (e) {
          if (e instanceof assert.AssertionError) throw e;
          kcmp = `kcmp unavailable (${(e as Error).message})`;
        }
        console.log(
          `  memory type ${ex.memoryTypeIndex} (${memoryFlags(ex.propertyFlags)}), ` +
            `${ex.allocationSize} bytes; fd is ${mine.link} (inode ${mine.ino}); ${kcmp}`,
        );
        imported = probe.cuImportFd(fd, d.size, d.dedicated, d.offset, bytes);
        using frame = CudaBufferHandle.create({
          ptr: imported.ptr,
          size: bytes,
          deviceUuid: cuda.uuid,
        });
        const at = frame.describe().ptr;

        // CUDA writes (a kernel), Vulkan reads: on its queue, and through its mapping.
        probe.cuFill(at, bytes, 0x11);
        assert.equal(
          probe.vkCheck(ex.slot, bytes, 0x11, true),
          0n,
          "Vulkan's queue reads CUDA's bytes",
        );
        if (mappable) {
          assert.equal(probe.vkCheck(ex.slot, bytes, 0x11, false), 0n, "so does Vulkan's mapping");
        }
        assert.ok(probe.vkCheck(ex.slot, bytes, 0x12, true) > 0n, "the check sees a wrong pattern");

        // Vulkan writes (its queue, then its mapping), CUDA reads (a kernel).
        probe.vkWrite(ex.slot, bytes, 0x22, true);
        assert.equal(probe.cuCheck(at, bytes, 0x22), 0n, "CUDA reads what Vulkan's queue wrote");
        if (mappable) {
          // Host writes through the mapping reach the same memory, but a CUDA
          // kernel may read older bytes (kept in the GPU's L2) until a Vulkan
          // submission with a host-write barrier makes them available: the
          // producer's submit-then-signal before it hands the frame over.
          probe.vkWrite(ex.slot, bytes, 0x33, false);
          const direct = probe.cuCheck(at, bytes, 0x33);
          probe.vkHostFlush();
          const afterSubmit = probe.cuCheck(at, bytes, 0x33);
          probe.cuEvictL2();
          const afterEvict = probe.cuCheck(at, bytes, 0x33);
          console.log(
            `  host writes through Vulkan's mapping, then read by a CUDA kernel: ${direct} of ` +
              `${bytes} bytes stale at once, ${afterSubmit} after a Vulkan submission with a ` +
              `host-write barrier, ${afterEvict} after evicting the GPU's L2`,
          );
          assert.equal(afterSubmit, 0n, "CUDA reads what Vulkan's mapping wrote after a submit");
          assert.equal(afterEvict, 0n);
        }
        assert.ok(probe.cuCheck(at, bytes, 0x34) > 0n, "the check sees a wrong pattern");

        if (k.format === "NV12") {
          // The consumer describes the imported frame as CudaPtr2D; a kernel
          // writes each plane through it, and both planes are where NV12 puts them.
          using p = CudaPtr2D.create({
            ptr: imported.ptr,
            rowPitch,
            planeByteOffsets: [0, rowPitch * k.height],
            width: k.width,
            height: k.height,
            deviceUuid: cuda.uuid,
          });
          const pd = p.describe();
          probe.cuFill2D(pd.ptr, pd.rowPitch, k.width, k.height, 0x44);
          probe.cuFill2D(pd.ptr + pd.planeByteOffsets[1], pd.rowPitch, k.width, k.height / 2, 0x45);
          assert.equal(probe.cuCheck2D(imported.ptr, rowPitch, k.width, k.height, 0x44), 0n);
          const uv = imported.ptr + BigInt(rowPitch * k.height);
          assert.equal(probe.cuCheck2D(uv, rowPitch, k.width, k.height / 2, 0x45), 0n);
        }

        h.slotRelease();
        assert.equal(gate[0], 1n, "slotRelease freed the producer's slot");
        h.release();
        assert.throws(() => h.describe(), ReleasedError);
        assert.ok(!probe.fdIsOpen(d.fd), "the last release closed the adopted fd");
        // CUDA's import holds its own fd: the memory stays shared after the handle is gone.
        probe.vkWrite(ex.slot, bytes, 0x55, true);
        assert.equal(probe.cuCheck(at, bytes, 0x55), 0n);
      } finally {
        if (imported) probe.cuUnimport(imported.ext, imported.ptr);
        probe.vkFree(ex.slot);
      }
      noLeaks(before);
    },
  });
}

// ---------------------------------------------------------------------- GL

Deno.test({
  name: "gpu: GlTextureHandle of a real texture (EGL on the NVIDIA device)",
  ignore: !!glSkip,
  fn() {
    const before = liveHandles();
    const width = 256, height = 128;
    const name = probe.glTexture(width, height, 0x61);
    try {
      const h = GlTextureHandle.create({
        name,
        target: "Texture2D",
        internalFormat: "Rgba8",
        context: gl!.context,
      });
      const d = h.describe();
      assert.equal(d.kind, "GlTextureHandle");
      assert.equal(d.name, name);
      assert.equal(d.target, "Texture2D");
      assert.equal(d.internalFormat, "Rgba8");
      assert.equal(d.context, gl!.context);
      const q = probe.glTextureQuery(d.name);
      assert.equal(q.width, width);
      assert.equal(q.height, height);
      assert.equal(q.internalFormat, GL_RGBA8, "GL says the texture is GL_RGBA8");
      assert.equal(probe.glTextureCheck(d.name, width, height, 0x61), 0n);
      const c = h.clone();
      c.release();
      h.release();
      assert.throws(() => h.describe(), ReleasedError);
      assert.equal(
        probe.glTextureCheck(name, width, height, 0x61),
        0n,
        "the texture outlives the handle",
      );
    } finally {
      probe.glTextureDelete(name);
    }
    noLeaks(before);
  },
});

Deno.test({
  name: "gpu: CUDA-GL interop reads and writes a texture named by a GlTextureHandle",
  ignore: !!interopSkip,
  fn() {
    const before = liveHandles();
    const width = 512, height = 256;
    const name = probe.glTexture(width, height, 0x71);
    try {
      using h = GlTextureHandle.create({
        name,
        target: "Texture2D",
        internalFormat: "Rgba8",
        context: gl!.context,
      });
      const d = h.describe();
      const target = { Texture2D: GL_TEXTURE_2D }[d.target as "Texture2D"];
      // cuGraphicsGLRegisterImage(d.name, d.target): CUDA reads the texels GL holds ...
      assert.equal(probe.cuGlAccess(d.name, target, width, height, 0x71, false), 0n);
      assert.ok(probe.cuGlAccess(d.name, target, width, height, 0x72, false) > 0n);
      // ... and writes new ones that GL then reads.
      probe.cuGlAccess(d.name, target, width, height, 0x73, true);
      assert.equal(probe.glTextureCheck(name, width, height, 0x73), 0n);
    } finally {
      probe.glTextureDelete(name);
    }
    noLeaks(before);
  },
});

Deno.test({
  name: "gpu: probe objects freed, no gpures handle left",
  ignore: !!cudaSkip,
  fn() {
    assert.equal(liveHandles(), handlesAtStart);
    probe.close();
  },
});
