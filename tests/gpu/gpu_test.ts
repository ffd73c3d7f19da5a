// gpures over real GPU objects: CUDA buffers, pitched NV12 frames and surface
// objects, Vulkan images, buffers and exported memory imported by CUDA, and a
// GL texture read by CUDA through interop. The objects come from the GPU
// probe (tests/gpu_helpers/probe), which tests/gpu/run.sh builds on a machine with an
// NVIDIA GPU. Anywhere else every test is ignored, with the reason printed.
// The "sync:" tests are issue 16's GPU proof: a Vulkan timeline semaphore
// exported as an opaque fd and imported by CUDA, hand-offs at 4K with only
// the semaphore between the APIs (both ways), CUDA event SyncPoints, and a
// semaphore exported as a sync fd (a kernel sync_file).
//
//   deno test --allow-ffi --allow-read --allow-env tests/gpu/gpu_test.ts

import assert from "node:assert/strict";
import {
  CpuFence,
  CudaBufferHandle,
  CudaContextEvent,
  CudaEvent,
  CudaPtr2D,
  CudaSurface,
  GlTextureHandle,
  GpuResourceError,
  liveHandles,
  load,
  PixelFormat,
  ReleasedError,
  SyncFile,
  VkBufferHandle,
  VkImage,
  VkOpaqueFd,
  VkSemaphore,
  VkSemaphoreFd,
} from "../../mod.ts";
import type { VkOpaqueFdDesc } from "../../ffi/gen/types.ts";
import {
  type CudaInfo,
  cudaVersionString,
  type ExportMemory,
  openProbe,
  type Probe,
  uuidString,
  type VkExport,
} from "./probe.ts";
import {
  cudaCaps,
  cudaDeviceInfo,
  CudaImporter,
  type CudaImporterOptions,
} from "../../ffi/interop/cuda.ts";
import {
  compareDevices,
  decodeDeviceInfo,
  type DeviceId,
  deviceInfoBuffer,
  deviceOf,
} from "../../ffi/interop/device.ts";
import { lastError, native } from "../../ffi/load/native.ts";
import { DeviceMismatchError } from "../../ffi/errors.ts";

// ------------------------------------------------------------------ set-up

const opened = openProbe();
let cudaSkip = opened.reason;
let gpuresPath = "";
if (!cudaSkip) {
  try {
    gpuresPath = load().path;
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

// The sync checks: the timeline semaphore exported as an opaque fd (and CUDA's
// import of it), and a binary one exported as a sync fd; the probe's own
// gpures calls (event queue, C timings) need the library the tests loaded.
const OPAQUE_FD = 1, SYNC_FD = 16;
let syncSkip = vkSkip;
if (!syncSkip) {
  const note = probe.syncNote();
  if (note) syncSkip = `Vulkan semaphores are unavailable: ${note}`;
  else if (!probe.vkSemaphoreProps(OPAQUE_FD, true).exportable) {
    syncSkip = "the driver cannot export a timeline semaphore as an opaque fd";
  }
}
let syncFdSkip = syncSkip;
if (!syncFdSkip) {
  const p = probe.vkSemaphoreProps(SYNC_FD, false);
  if (!p.exportable) {
    syncFdSkip = `the driver cannot export a binary semaphore as a sync fd ` +
      `(compatible handle types 0x${p.compatible.toString(16)})`;
  }
}
let gpuresCSkip = cudaSkip;
if (!gpuresCSkip && probe.gpuresOpen(gpuresPath) !== 0) {
  gpuresCSkip = `the probe could not open gpures at ${gpuresPath}: ${probe.lastError()}`;
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
  if (syncSkip && !vkSkip) console.log(`gpu: Vulkan semaphore checks skipped: ${syncSkip}`);
  else if (syncFdSkip && !vkSkip) console.log(`gpu: sync fd check skipped: ${syncFdSkip}`);
  if (gpuresCSkip) console.log(`gpu: the probe's own gpures calls skipped: ${gpuresCSkip}`);
}

const MiB = 1 << 20;
const same = (a: Uint8Array | null, b: Uint8Array) => a !== null && a.every((v, i) => v === b[i]);

/** `h.describe()`, asserting that it describes a `kind`. */
function describedAs<D extends { kind: string }>(h: { describe(): D }, kind: D["kind"]): D {
  const d = h.describe();
  assert.equal(d.kind, kind);
  return d;
}

/** Runs `body`, then checks that it released every handle it made. */
async function releasingAll(body: () => void | Promise<void>): Promise<void> {
  const before = liveHandles();
  await body();
  assert.equal(liveHandles(), before, "every handle the test made was released");
}

/** A GPU test, ignored here when `skip` gives a reason; it must release every handle it makes. */
function gpuTest(name: string, skip: string | undefined, body: () => void | Promise<void>): void {
  Deno.test({ name, ignore: !!skip, fn: () => releasingAll(body) });
}

// -------------------------------------------------------------------- CUDA

gpuTest(
  "gpu: CudaBufferHandle over cuMemAlloc memory: describe matches CUDA, clone, release",
  cudaSkip,
  () => {
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
    const d = describedAs(h, "CudaBufferHandle");
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
  },
);

gpuTest(
  "gpu: CudaPtr2D over cuMemAllocPitch NV12 frames: pitch and plane offsets match CUDA",
  cudaSkip,
  () => {
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
        const d = describedAs(h, "CudaPtr2D");
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
  },
);

gpuTest(
  "gpu: CudaSurface over a surface object on a CUDA array: describe matches CUDA",
  cudaSkip,
  () => {
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
      const d = describedAs(h, "CudaSurface");
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
  },
);

// ------------------------------------------------------------------ Vulkan

gpuTest("gpu: Vulkan and CUDA name the same GPU (deviceUUID = cuDeviceGetUuid)", vkSkip, () => {
  assert.equal(vk!.vendorId, 0x10de, "an NVIDIA device");
  assert.equal(uuidString(vk!.uuid), uuidString(cuda.uuid));
});

gpuTest("gpu: VkImage and VkBufferHandle of real Vulkan objects", vkSkip, () => {
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
    const d = describedAs(h, "VkImage");
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
    const d = describedAs(b, "VkBufferHandle");
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
  gpuTest(
    `gpu: VkOpaqueFd (${k.label}): CUDA imports dupFd(); CUDA writes, Vulkan reads, and back`,
    vkSkip,
    () => {
      const rowPitch = k.format === "NV12" ? k.width : k.width * 4;
      const bytes = Number(PixelFormat.frameSize(k.format, k.width, k.height, rowPitch));
      const ex = probe.vkExport(bytes, k.memory, k.dedicated);
      const mappable = k.memory !== "device";
      const gate = new BigUint64Array(1);
      let imported: { ext: bigint; ptr: bigint } | undefined;
      try {
        using h = exportedFrame(ex, {
          width: k.width,
          height: k.height,
          format: k.format,
          slotRelease: { gate: Deno.UnsafePointer.of(gate), value: 1n },
        });
        const d = describedAs(h, "VkOpaqueFd");
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
    },
  );
}

// ---------------------------------------------------------------------- GL

/** Runs `body` on a new `width` x `height` texture filled from `seed`, then deletes it. */
function withTexture(width: number, height: number, seed: number, body: (name: number) => void) {
  const name = probe.glTexture(width, height, seed);
  try {
    body(name);
  } finally {
    probe.glTextureDelete(name);
  }
}

/** A GlTextureHandle of the RGBA8 2D texture `name` in the probe's EGL context. */
function textureHandle(name: number): GlTextureHandle {
  return GlTextureHandle.create({
    name,
    target: "Texture2D",
    internalFormat: "Rgba8",
    context: gl!.context,
  });
}

gpuTest("gpu: GlTextureHandle of a real texture (EGL on the NVIDIA device)", glSkip, () => {
  const width = 256, height = 128;
  withTexture(width, height, 0x61, (name) => {
    const h = textureHandle(name);
    const d = describedAs(h, "GlTextureHandle");
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
  });
});

gpuTest(
  "gpu: CUDA-GL interop reads and writes a texture named by a GlTextureHandle",
  interopSkip,
  () => {
    const width = 512, height = 256;
    withTexture(width, height, 0x71, (name) => {
      using h = textureHandle(name);
      const d = h.describe();
      const target = { Texture2D: GL_TEXTURE_2D }[d.target as "Texture2D"];
      // cuGraphicsGLRegisterImage(d.name, d.target): CUDA reads the texels GL holds ...
      assert.equal(probe.cuGlAccess(d.name, target, width, height, 0x71, false), 0n);
      assert.ok(probe.cuGlAccess(d.name, target, width, height, 0x72, false) > 0n);
      // ... and writes new ones that GL then reads.
      probe.cuGlAccess(d.name, target, width, height, 0x73, true);
      assert.equal(probe.glTextureCheck(name, width, height, 0x73), 0n);
    });
  },
);

// -------------------------------------------------------------- SyncPoints

const FRAME_4K = 3840 * 2160 * 4; // 33177600 bytes of RGBA
const NEW_FRAME = 0x5e1f;

/**
 * A Vulkan timeline semaphore exported as an opaque fd: the fd adopted by a
 * VkSemaphoreFd (opaqueFd, timeline), the semaphore named by a VkSemaphore
 * with its VkDevice (host waits), and CUDA's import of a dupFd() of it.
 */
interface Timeline {
  semaphore: bigint;
  point: VkSemaphoreFd;
  cuSemaphore: bigint;
  close(): void;
}

function openTimeline(): Timeline {
  const semaphore = probe.vkSemaphoreCreate(true, OPAQUE_FD, 0n);
  let point: VkSemaphoreFd | undefined;
  try {
    const fd = probe.vkSemaphoreExport(semaphore, OPAQUE_FD);
    point = VkSemaphoreFd.create({
      fd,
      handleType: "opaqueFd",
      semaphoreType: "timeline",
      value: 1n,
      deviceUuid: vk!.uuid,
    }, { takeOwnership: true });
    // CUDA consumes the fd it imports: it gets its own, from gpures.
    const cuSemaphore = probe.cuSemaphoreImport(point.dupFd(), true);
    const p = point;
    return {
      semaphore,
      point: p,
      cuSemaphore,
      close() {
        probe.cuSemaphoreDestroy(cuSemaphore);
        p.release();
        probe.vkSemaphoreDestroy(semaphore);
      },
    };
  } catch (e) {
    point?.release();
    probe.vkSemaphoreDestroy(semaphore);
    throw e;
  }
}

/** A host-side point on the timeline: gpures waits through vkWaitSemaphores on `vk.device`. */
function hostPoint(semaphore: bigint, value: bigint): VkSemaphore {
  return VkSemaphore.create({
    semaphore,
    device: vk!.device,
    semaphoreType: "timeline",
    value,
    deviceUuid: vk!.uuid,
  });
}

/** A 4K frame in device-local Vulkan memory, exported (VkOpaqueFd) and imported by CUDA. */
interface SharedFrame {
  slot: number;
  handle: VkOpaqueFd;
  ptr: bigint;
  close(): void;
}

/** The handle of an export's memory (it takes the fd): a 4K RGBA frame unless `layout` says else. */
function exportedFrame(ex: VkExport, layout: Partial<VkOpaqueFdDesc> = {}): VkOpaqueFd {
  return VkOpaqueFd.create({
    fd: ex.fd,
    size: ex.allocationSize,
    memoryTypeIndex: ex.memoryTypeIndex,
    offset: 0,
    dedicated: ex.dedicated,
    width: 3840,
    height: 2160,
    format: "RgbaU8",
    deviceUuid: vk!.uuid,
    ...layout,
  }, { takeOwnership: true });
}

/** Another handle over `frame`'s memory (a dup of its fd), with `layout` changed. */
function sameMemory(frame: VkOpaqueFd, layout: Partial<VkOpaqueFdDesc> = {}): VkOpaqueFd {
  // Its description less the handle's own fields and what another handle does not take
  // over: the producer's slotRelease, and a rowPitch unless `layout` gives one.
  const d = frame.describe();
  const { kind: _kind, kindId: _id, refcount: _refs, slotRelease: _slot, rowPitch: _, ...desc } = d;
  return VkOpaqueFd.create({ ...desc, ...layout });
}

function openFrame(bytes: number): SharedFrame {
  const ex = probe.vkExport(bytes, "device", true);
  let handle: VkOpaqueFd | undefined;
  try {
    handle = exportedFrame(ex);
    const d = handle.describe();
    const imported = probe.cuImportFd(handle.dupFd(), d.size, d.dedicated, d.offset, bytes);
    const h = handle;
    return {
      slot: ex.slot,
      handle: h,
      ptr: imported.ptr,
      close() {
        probe.cuUnimport(imported.ext, imported.ptr);
        h.release();
        probe.vkFree(ex.slot);
      },
    };
  } catch (e) {
    handle?.release();
    probe.vkFree(ex.slot);
    throw e;
  }
}

/**
 * A "sync:" test of hand-offs at 4K: `body` gets a timeline (openTimeline) and a frame both
 * APIs share (openFrame), closed after it.
 */
function handOffTest(
  name: string,
  body: (tl: Timeline, frame: SharedFrame) => void | Promise<void>,
): void {
  gpuTest(name, syncSkip, async () => {
    const tl = openTimeline();
    try {
      const frame = openFrame(FRAME_4K);
      try {
        await body(tl, frame);
      } finally {
        frame.close();
      }
    } finally {
      tl.close();
    }
  });
}

/**
 * What each of the probe's hand-offs names: the 4K frame (Vulkan's slot and CUDA's pointer)
 * and the timeline (Vulkan's semaphore and CUDA's import of it).
 */
function route(tl: Timeline, frame: SharedFrame) {
  return {
    slot: frame.slot,
    ptr: frame.ptr,
    n: FRAME_4K,
    semaphore: tl.semaphore,
    cuSemaphore: tl.cuSemaphore,
  };
}

/**
 * One Vulkan → CUDA hand-off (probe.syncVkToCuda): CUDA first writes `oldSeed`'s pattern into
 * the frame, then Vulkan copies the new frame (NEW_FRAME) into it `repeats` times and signals
 * `value`; CUDA reads it, after waiting for `value` when `wait`.
 */
function vkToCuda(
  tl: Timeline,
  frame: SharedFrame,
  step: { oldSeed: number; value: bigint; wait: boolean; repeats: number },
) {
  return probe.syncVkToCuda({ ...route(tl, frame), seed: NEW_FRAME, ...step });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};
const us = (ns: number) => (ns / 1e3).toFixed(1);

handOffTest("sync: Vulkan timeline semaphore → CUDA wait at 4K, no host wait", (tl, frame) => {
  const d = describedAs(tl.point, "VkSemaphoreFd");
  assert.equal(d.handleType, "opaqueFd");
  assert.equal(d.semaphoreType, "timeline");
  assert.equal(d.value, 1n);
  assert.ok(same(d.deviceUuid, cuda.uuid));
  const id = probe.fdIdentity(d.fd);
  console.log(
    `  timeline semaphore exported as fd ${d.fd} (${id.link}); CUDA imported a dupFd()`,
  );
  probe.syncSource(FRAME_4K, NEW_FRAME);

  // Each frame: the producer's point (its submission signals `value`) travels
  // with the frame as its acquire fence; the consumer reads the value from
  // it and its CUDA stream waits for it (cuWaitExternalSemaphoresAsync).
  const frames = 8;
  let value = 0n;
  let notDoneWhenQueued = 0;
  const rounds: number[] = [];
  for (let i = 0; i < frames; i++) {
    value++;
    {
      using point = VkSemaphoreFd.create({
        fd: d.fd,
        handleType: "opaqueFd",
        semaphoreType: "timeline",
        value,
        deviceUuid: vk!.uuid,
      });
      frame.handle.setFences({ acquire: point });
    }
    const acquire = frame.handle.fences.acquire!;
    const want = (acquire.describe() as { value: bigint }).value;
    acquire.release();
    assert.equal(want, value, "the acquire fence carries the producer's point");
    const r = vkToCuda(tl, frame, { oldSeed: 0x1000 + i, value: want, wait: true, repeats: 16 });
    frame.handle.setFences({});
    if (r.kernelMismatches !== null) {
      assert.equal(
        r.kernelMismatches,
        0n,
        `frame ${i}: CUDA's kernel saw Vulkan's final bytes`,
      );
    }
    assert.equal(r.copiedMismatches, 0n, `frame ${i}: CUDA copied Vulkan's final bytes out`);
    assert.ok(r.valueAtEnd >= value);
    if (r.valueWhenQueued < value) notDoneWhenQueued++;
    rounds.push(r.roundTripNs);
  }
  // The host reads the frame through CUDA at the end: the final bytes.
  assert.equal(probe.cuCheckHost(frame.ptr, FRAME_4K, NEW_FRAME), 0n);
  assert.ok(
    probe.cuCheckHost(frame.ptr, FRAME_4K, NEW_FRAME + 1) > 0n,
    "the check sees a wrong pattern",
  );
  {
    using reached = hostPoint(tl.semaphore, value);
    assert.ok(reached.signaled, "gpures's VkSemaphore sees the timeline at the last point");
  }
  console.log(
    `  with the wait: ${frames} frames of 16 Vulkan copies of ${FRAME_4K} bytes, CUDA read ` +
      `0 stale bytes in each; Vulkan had not finished when every CUDA call was queued in ` +
      `${notDoneWhenQueued} of ${frames} frames; submit → CUDA done median ${
        us(median(rounds))
      } µs`,
  );

  // Without the wait, CUDA's read launched at once may see the old frame.
  const stale: string[] = [];
  for (let i = 0; i < 4; i++) {
    value++;
    const r = vkToCuda(tl, frame, { oldSeed: 0x1100 + i, value, wait: false, repeats: 16 });
    stale.push(`${r.kernelMismatches ?? "-"}/${r.copiedMismatches}`);
  }
  console.log(
    `  without the wait (timing-dependent, not asserted): stale bytes seen by CUDA's ` +
      `kernel/copy per frame: ${stale.join(", ")} of ${FRAME_4K}`,
  );
  assert.equal(
    probe.cuCheckHost(frame.ptr, FRAME_4K, NEW_FRAME),
    0n,
    "final bytes once Vulkan is done",
  );
});

handOffTest(
  "sync: CUDA → Vulkan timeline semaphore at 4K, host waits through gpures (VkSemaphore)",
  async (tl, frame) => {
    let value = 0n;
    const lines: string[] = [];
    for (let i = 0; i < 6; i++) {
      const cuValue = ++value, vkValue = ++value;
      const seed = 0x2000 + i;
      // CUDA writes then signals cuValue; Vulkan waits for it, copies, signals vkValue.
      const r = probe.syncCudaToVk({
        ...route(tl, frame),
        seed,
        cuValue,
        vkValue,
      });
      using done = hostPoint(tl.semaphore, vkValue);
      const early = done.signaled;
      const t0 = performance.now();
      // Blocking (gpures_sync_wait) and async (the waiter thread) in turn.
      if (i % 2 === 0) done.wait(10_000);
      else await done.waitAsync({ timeout: 10_000 });
      const ms = performance.now() - t0;
      assert.ok(done.signaled);
      assert.equal(
        probe.syncReadCheck(FRAME_4K, seed),
        0n,
        `frame ${i}: Vulkan copied CUDA's bytes`,
      );
      if (i === 0) {
        assert.ok(
          probe.syncReadCheck(FRAME_4K, seed ^ 0x5a) > 0n, // low bits: the pattern hides bits 8 and up of a seed
          "the check sees a wrong pattern",
        );
      }
      lines.push(
        `${i % 2 ? "waitAsync" : "wait"}: reached at once ${early}, value after submit ` +
          `${r.valueAfterSubmit}, CUDA busy at return ${r.cudaBusyAtReturn}, ${
            (ms * 1e3).toFixed(0)
          } µs`,
      );
    }
    console.log(`  6 frames, 0 wrong bytes each; per frame: ${lines.join("; ")}`);
    // A point past the timeline times out (and never hangs).
    using ahead = hostPoint(tl.semaphore, value + 100n);
    assert.ok(!ahead.signaled);
    assert.throws(() => ahead.wait(5), GpuResourceError);
  },
);

gpuTest(
  "sync: CUDA events as CudaEvent and CudaContextEvent: poll, wait, waitAsync, event queue",
  cudaSkip,
  async () => {
    const bytes = 1 << 30, passes = 8; // 8 GiB of memsets ahead of the event
    const lines: string[] = [];
    {
      const e = probe.cuEventAfterWork(bytes, passes);
      try {
        using ev = CudaEvent.create({ event: e.event, value: 1n, deviceUuid: cuda.uuid });
        using cev = CudaContextEvent.create({
          event: e.event,
          context: e.context,
          device: e.device,
          deviceUuid: cuda.uuid,
        });
        const d = cev.describe();
        assert.equal(d.event, e.event);
        assert.equal(d.context, e.context);
        const early = ev.signaled, earlyCtx = cev.signaled;
        const t0 = performance.now();
        cev.wait(10_000);
        const ms = performance.now() - t0;
        assert.ok(cev.signaled);
        assert.ok(ev.signaled);
        assert.equal(probe.cuEventQuery(e.event), 0, "cuEventQuery agrees: reached");
        lines.push(
          `cuEventQuery at record ${e.queryAtRecord}; poll right after recording: CudaEvent ` +
            `${early}, CudaContextEvent ${earlyCtx}; CudaContextEvent.wait ${ms.toFixed(2)} ms`,
        );
      } finally {
        probe.cuEventDestroy(e.event);
      }
    }
    {
      const e = probe.cuEventAfterWork(bytes, passes);
      try {
        using ev = CudaEvent.create({ event: e.event, deviceUuid: cuda.uuid });
        const early = ev.signaled;
        const t0 = performance.now();
        ev.wait(10_000);
        lines.push(
          `CudaEvent (no context).wait: early ${early}, ${(performance.now() - t0).toFixed(2)} ms`,
        );
        assert.ok(ev.signaled);
      } finally {
        probe.cuEventDestroy(e.event);
      }
    }
    for (const withContext of [false, true]) {
      const e = probe.cuEventAfterWork(bytes, passes);
      try {
        using ev = withContext
          ? CudaContextEvent.create({ event: e.event, context: e.context, device: e.device })
          : CudaEvent.create({ event: e.event });
        const early = ev.signaled;
        const t0 = performance.now();
        await ev.waitAsync({ timeout: 10_000 });
        const ms = performance.now() - t0;
        assert.ok(ev.signaled);
        lines.push(`${ev.kind}.waitAsync (waiter thread): early ${early}, ${ms.toFixed(2)} ms`);
      } finally {
        probe.cuEventDestroy(e.event);
      }
    }
    if (!gpuresCSkip) {
      // From C: gpures_sync_wait_async on an event queue, then event_queue_wait and poll.
      const e = probe.cuEventAfterWork(bytes, passes);
      try {
        using ev = CudaEvent.create({ event: e.event, deviceUuid: cuda.uuid });
        const r = probe.gpuresAsyncWait(ev.unsafeHandle, 10_000_000_000n);
        assert.equal(r.events, 1, "one event");
        assert.equal(r.type, 3, "GPURES_EVENT_SYNC_DONE");
        assert.equal(r.status, 0, "status OK");
        assert.ok(r.tokenMatches, "with the wait's token");
        assert.ok(ev.signaled);
        lines.push(
          `C: gpures_sync_wait_async + event queue: SYNC_DONE/OK after ${us(r.ns)} µs ` +
            `(reached before the wait: ${r.reachedBefore})`,
        );
      } finally {
        probe.cuEventDestroy(e.event);
      }
    } else {
      lines.push(`C event-queue wait skipped: ${gpuresCSkip}`);
    }
    console.log(`  ${lines.join("\n  ")}`);
  },
);

gpuTest(
  "sync: binary semaphore exported as a sync fd is a kernel sync_file (SyncFile, VkSemaphoreFd syncFd)",
  syncFdSkip,
  async () => {
    const ex = probe.vkExport(FRAME_4K, "device", true);
    probe.fdClose(ex.fd); // the copies need the buffer only
    try {
      probe.syncSource(FRAME_4K, 0x3000);
      for (const mode of ["wait", "waitAsync"] as const) {
        // The signal is still pending at export: 32 copies of 33 MB run first.
        const x = probe.vkSyncFdExport(ex.slot, FRAME_4K, 32);
        try {
          if (x.fd < 0) {
            console.log(
              `  ${mode}: the driver exported -1 (signal already complete): nothing to wrap`,
            );
            continue;
          }
          const id = probe.fdIdentity(x.fd);
          using sf = SyncFile.create({ fd: x.fd }, { takeOwnership: true });
          // The same fence as a Vulkan semaphore fd (syncFd is binary, no value): validated as a sync_file too.
          using vsf = VkSemaphoreFd.create({
            fd: sf.describe().fd,
            handleType: "syncFd",
            semaphoreType: "binary",
            value: 0n,
          });
          const early = sf.signaled;
          const t0 = performance.now();
          if (mode === "wait") sf.wait(10_000);
          else await sf.waitAsync({ timeout: 10_000 });
          const ms = performance.now() - t0;
          assert.ok(sf.signaled);
          vsf.wait(1_000);
          assert.ok(vsf.signaled);
          console.log(
            `  ${mode}: sync fd ${id.link}, exported ${us(x.ns)} µs after submit; reached at ` +
              `once ${early}; SyncFile.${mode} ${ms.toFixed(2)} ms; VkSemaphoreFd(syncFd) reached`,
          );
        } finally {
          probe.vkSemaphoreDestroy(x.semaphore);
        }
      }
      // An eventfd is no sync_file: SyncFile refuses it, naming the fd.
      using cpu = CpuFence.create();
      const efd = cpu.dupFd();
      try {
        assert.throws(
          () => SyncFile.create({ fd: efd }),
          (e: unknown) => e instanceof GpuResourceError && /eventfd/.test((e as Error).message),
        );
      } finally {
        probe.fdClose(efd);
      }
    } finally {
      probe.vkFree(ex.slot);
    }
  },
);

handOffTest(
  "sync: per-frame semaphore hand-off in gpures terms vs the Vulkan → CUDA round trip (4K)",
  (tl, frame) => {
    probe.syncSource(FRAME_4K, NEW_FRAME);
    // The round trip: Vulkan copies the frame once and signals; CUDA waits and reads it.
    const rounds: number[] = [];
    let value = 0n;
    for (let i = 0; i < 40; i++) {
      value++;
      const r = vkToCuda(tl, frame, { oldSeed: 0x4000 + i, value, wait: true, repeats: 1 });
      assert.equal(r.copiedMismatches, 0n);
      if (i >= 5) rounds.push(r.roundTripNs);
    }
    const fd = tl.point.describe().fd;
    using reached = hostPoint(tl.semaphore, value);
    // From Deno: a VkSemaphoreFd per frame (dup of the producer's fd), cloned
    // for the consumer, both released; and the host's poll of the timeline.
    const iters = 2000;
    let t0 = performance.now();
    for (let i = 0; i < iters; i++) {
      const p = VkSemaphoreFd.create({
        fd,
        handleType: "opaqueFd",
        semaphoreType: "timeline",
        value: BigInt(i + 1),
      });
      const c = p.clone();
      c.release();
      p.release();
    }
    const denoHandoff = ((performance.now() - t0) / iters) * 1e3;
    t0 = performance.now();
    for (let i = 0; i < iters; i++) if (!reached.signaled) throw new Error("not reached");
    const denoPoll = ((performance.now() - t0) / iters) * 1e3;
    let c = "";
    if (!gpuresCSkip) {
      const b = probe.gpuresBench(fd, reached.unsafeHandle, 20_000);
      c = `; from C: hand-off ${us(b.semaphoreFdHandoff)} µs, gpures_sync_poll ` +
        `${us(b.poll)} µs, gpures_sync_wait(0) on a reached point ${us(b.waitReached)} µs`;
    }
    const rt = median(rounds) / 1e3;
    console.log(
      `  Vulkan → CUDA round trip (one 4K copy, signal, CUDA wait + check + copy out, ` +
        `host waits for CUDA only): median ${rt.toFixed(1)} µs of ${rounds.length}; ` +
        `gpures per frame from Deno: VkSemaphoreFd create+clone+2 releases ` +
        `${denoHandoff.toFixed(2)} µs (${(rt / denoHandoff).toFixed(0)}x less), ` +
        `VkSemaphore.signaled ${denoPoll.toFixed(2)} µs${c}`,
    );
  },
);

// ------------------------------------------ CudaImporter (issue 17's GPU proof)
//
// Each check prints "PASS cuda-import (N) ..." with its numbers, or
// "FAIL cuda-import (N): <why>" before the test fails: (1) Vulkan → CUDA →
// Vulkan through one import, (2) device matching, (3) cached vs uncached
// imports over a 3-slot ring at 4K, (4) the importer's counts and its destroy.

/** A producer's ring: 4K RGBA frames in device-local Vulkan memory, each its own export. */
interface Ring {
  frames: VkOpaqueFd[];
  slots: number[];
  /** The pattern Vulkan wrote into each slot. */
  seeds: number[];
  close(): void;
}

function exportRing(seeds: number[]): Ring {
  const frames: VkOpaqueFd[] = [], slots: number[] = [];
  const close = () => {
    for (const f of frames) f.release();
    for (const s of slots) probe.vkFree(s);
  };
  try {
    for (const seed of seeds) {
      const ex = probe.vkExport(FRAME_4K, "device", true);
      slots.push(ex.slot);
      frames.push(exportedFrame(ex));
      // Vulkan writes the slot's pattern on its queue (and waits for it).
      probe.vkWrite(ex.slot, FRAME_4K, seed, true);
    }
  } catch (e) {
    close();
    throw e;
  }
  return { frames, slots, seeds, close };
}

/** Runs a check, printing FAIL `label` with the reason when it throws. */
async function point(label: string, check: () => Promise<void>): Promise<void> {
  try {
    await check();
  } catch (e) {
    console.log(`FAIL ${label}: ${(e as Error).message}`);
    throw e;
  }
}

/**
 * A cuda-import check: `check` gets a ring exported with `setUp.ring`'s seeds and a
 * CudaImporter made with `setUp.importer`, both closed after it, and must release every
 * handle it makes. A failure prints "FAIL cuda-import (N): <why>" first.
 */
function cudaImportTest(
  name: string,
  setUp: { ring: number[]; importer?: CudaImporterOptions },
  check: (ring: Ring, importer: CudaImporter) => void,
): void {
  const label = name.slice(0, name.indexOf(":")); // "cuda-import (N)"
  Deno.test({
    name,
    ignore: !!vkSkip,
    fn: () =>
      point(label, () =>
        releasingAll(() => {
          const ring = exportRing(setUp.ring);
          try {
            const importer = CudaImporter.create(setUp.importer);
            try {
              check(ring, importer);
            } finally {
              importer.close(); // idempotent: a check may close it itself
            }
          } finally {
            ring.close();
          }
        })),
  });
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))] : NaN;
};

cudaImportTest(
  "cuda-import (1): a 4K RGBA VkOpaqueFd into CUDA; Vulkan writes, CUDA reads, and back",
  { ring: [0x51], importer: { device: 0 } },
  (ring, importer) => {
    const [frame] = ring.frames, [slot] = ring.slots;
    const t0 = performance.now();
    const imp = importer.import(frame);
    const firstUs = (performance.now() - t0) * 1e3;
    try {
      assert.equal(imp.cached, false);
      assert.ok(imp.handle instanceof CudaPtr2D, "a frame with rows is a CudaPtr2D");
      const d = imp.handle.describe();
      assert.equal(d.ptr, imp.ptr);
      assert.equal(d.rowPitch, 3840 * 4);
      assert.deepEqual(d.planeByteOffsets, [0n]);
      assert.ok(same(d.deviceUuid, cuda.uuid), "the handle names CUDA's device");
      assert.ok(imp.size >= BigInt(FRAME_4K));
      const at = probe.cuPointerInfo(imp.ptr);
      assert.ok(at.base <= imp.ptr && imp.ptr + BigInt(FRAME_4K) <= at.base + at.size);
      assert.ok(same(at.uuid, cuda.uuid), "CUDA maps the import on its device");

      // Vulkan wrote 0x51 on its queue; CUDA reads it through the import.
      const read = probe.cuCheck(imp.ptr, FRAME_4K, 0x51);
      assert.equal(read, 0n, "CUDA reads every byte Vulkan wrote");
      assert.ok(probe.cuCheck(imp.ptr, FRAME_4K, 0x52) > 0n, "the check sees a wrong pattern");
      // CUDA writes through the same import; Vulkan's queue reads it.
      probe.cuFill(imp.ptr, FRAME_4K, 0x53);
      const back = probe.vkCheck(slot, FRAME_4K, 0x53, true);
      assert.equal(back, 0n, "Vulkan reads every byte CUDA wrote");
      assert.ok(probe.vkCheck(slot, FRAME_4K, 0x51, true) > 0n, "the old bytes are gone");

      // The same memory as a frame with padded rows: another layout, so another import,
      // whose CudaPtr2D carries the exporter's pitch and the planes at it.
      const padded = sameMemory(frame, {
        width: 3840,
        height: 2000,
        format: "NV12",
        rowPitch: 4096,
      });
      const pi = importer.import(padded);
      try {
        assert.equal(pi.cached, false, "another layout is another import");
        assert.ok(pi.handle instanceof CudaPtr2D);
        const pd = pi.handle.describe();
        assert.equal(pd.rowPitch, 4096);
        assert.deepEqual(pd.planeByteOffsets, [0n, 4096n * 2000n]);
      } finally {
        pi.handle.release();
        padded.release();
      }
      const again = importer.import(frame);
      assert.equal(again.cached, true);
      assert.equal(again.ptr, imp.ptr, "the cached import is the same mapping");
      assert.equal(
        again.handle.unsafeHandle,
        imp.handle.unsafeHandle,
        "the import's one handle",
      );
      assert.equal(again.handle.refcount, 3, "the importer's reference and one per import()");
      again.handle.release();
      console.log(
        `PASS cuda-import (1): ${FRAME_4K} bytes, Vulkan → CUDA ${read} wrong, CUDA → ` +
          `Vulkan ${back} wrong (kernels ${cuda.kernelsLoaded ? "on" : "off: copies"}); ` +
          `first import + map ${firstUs.toFixed(0)} µs; CudaPtr2D rowPitch ${d.rowPitch}`,
      );
    } finally {
      imp.handle.release();
    }
  },
);

/** Vulkan's id of its device: gpures_vk_device_info where it is in, else the probe's own query. */
function vulkanDeviceId(): { id: DeviceId; source: string } {
  const buf = deviceInfoBuffer();
  const status = native().gpures_vk_device_info(
    Deno.UnsafePointer.create(vk!.instance),
    Deno.UnsafePointer.create(vk!.physicalDevice),
    null,
    buf,
  );
  if (status === 0) return { id: decodeDeviceInfo(buf).id, source: "gpures_vk_device_info" };
  return {
    id: { kind: "vulkanUuid", bytes: vk!.uuid },
    source: `the probe's vkGetPhysicalDeviceProperties2 (gpures_vk_device_info: ${
      lastError(status).message
    })`,
  };
}

cudaImportTest(
  "cuda-import (2): Vulkan's device UUID is the importer's; a flipped UUID byte is refused",
  { ring: [0x61] },
  (ring, importer) => {
    const dev = importer.device;
    assert.equal(dev.id.kind, "cudaUuid");
    assert.ok(same(dev.id.bytes, cuda.uuid), "cuDeviceGetUuid of device 0");
    assert.equal(dev.vendorId, 0x10de);
    assert.equal(dev.name, cuda.name);
    assert.ok(same(cudaDeviceInfo(0).id.bytes, cuda.uuid));
    const caps = cudaCaps(0);
    const rgba = caps.find((c) => c.format === "RgbaU8");
    assert.ok(rgba && rgba.modifier === 0n && rgba.memory.includes("opaqueFd"));

    const vkDev = vulkanDeviceId();
    assert.equal(vkDev.id.kind, "vulkanUuid");
    assert.equal(compareDevices(vkDev.id, dev.id), "same", "Vulkan's UUID is CUDA's");
    assert.equal(compareDevices(deviceOf(ring.frames[0]), dev.id), "same");

    const wrong = vk!.uuid.slice();
    wrong[5] ^= 0x80;
    // A dup of the same export, claiming another GPU.
    using other = sameMemory(ring.frames[0], { deviceUuid: wrong });
    assert.equal(compareDevices(deviceOf(other), dev.id), "different");
    const s0 = importer.stats;
    assert.throws(
      () => importer.import(other),
      (e: unknown) =>
        e instanceof DeviceMismatchError && e.code === "DEVICE_MISMATCH" &&
        e.field === "deviceUuid",
    );
    const s1 = importer.stats;
    assert.equal(s1.imports, s0.imports, "nothing was imported");
    assert.equal(s1.cached, s0.cached);
    const ok = importer.import(ring.frames[0]);
    ok.handle.release();
    console.log(
      `PASS cuda-import (2): ${uuidString(dev.id.bytes)} from CUDA equals Vulkan's (from ` +
        `${vkDev.source}): compare says same; flipped byte 5: DeviceMismatchError ` +
        `(deviceUuid); cudaCaps: ${caps.length} formats, RgbaU8 max ` +
        `${rgba.maxWidth}x${rgba.maxHeight}`,
    );
  },
);

cudaImportTest(
  "cuda-import (3): 200 frames over a 3-slot 4K ring: 3 imports, 197 cached; µs per import",
  { ring: [0x71, 0x72, 0x73], importer: { capacity: 8 } },
  (ring, importer) => {
    const cachedUs: number[] = [], firstUs: number[] = [], ptrs: bigint[] = [];
    let wrong = 0n;
    for (let i = 0; i < 200; i++) {
      const slot = i % 3;
      const t0 = performance.now();
      const imp = importer.import(ring.frames[slot]);
      const us = (performance.now() - t0) * 1e3;
      (imp.cached ? cachedUs : firstUs).push(us);
      assert.equal(imp.cached, i >= 3, `frame ${i} of slot ${slot}`);
      if (i < 3) {
        ptrs.push(imp.ptr);
      } else {
        assert.equal(imp.ptr, ptrs[slot], `frame ${i} maps slot ${slot}'s memory`);
      }
      // Each slot's import reads that slot's bytes (first and last laps).
      if (i < 6 || i >= 194) {
        wrong += probe.cuCheck(imp.ptr, FRAME_4K, ring.seeds[slot]);
      }
      imp.handle.release();
    }
    assert.equal(new Set(ptrs).size, 3, "three slots, three mappings");
    assert.equal(wrong, 0n, "every slot's import holds that slot's bytes");
    let s = importer.stats;
    assert.deepEqual(s, { cached: 3, imports: 3, hits: 197, freed: 0, failed: 0 });

    const freshUs: number[] = [];
    for (let i = 0; i < 20; i++) {
      importer.forget(ring.frames[i % 3]);
      const t0 = performance.now();
      const imp = importer.import(ring.frames[i % 3]);
      freshUs.push((performance.now() - t0) * 1e3);
      assert.equal(imp.cached, false);
      imp.handle.release();
    }
    s = importer.stats;
    assert.deepEqual(s, { cached: 3, imports: 23, hits: 197, freed: 20, failed: 0 });

    // The pointer-only path: no handle to wrap or release per frame.
    const pointerUs: number[] = [], now: bigint[] = [];
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      const imp = importer.importPointer(ring.frames[i % 3]);
      pointerUs.push((performance.now() - t0) * 1e3);
      assert.ok(imp.cached);
      now[i % 3] ??= imp.ptr;
      assert.equal(imp.ptr, now[i % 3], `frame ${i}: the slot's one mapping`);
    }
    assert.equal(importer.stats.hits, 397);
    // The same path timed over a batch: one performance.now() per call costs about what a
    // cached import does, so the per-call medians above carry the timer's own cost.
    const batch = 3000, b0 = performance.now();
    for (let i = 0; i < batch; i++) importer.importPointer(ring.frames[i % 3]);
    const batchUs = ((performance.now() - b0) * 1e3) / batch;
    const e0 = performance.now();
    for (let i = 0; i < batch; i++) native().gpures_abi_version();
    const emptyUs = ((performance.now() - e0) * 1e3) / batch;
    // Each frame a new handle over a new dup of the slot's fd (as a plain channel delivers
    // them): the cache knows the file by fstat and kcmp, not by the handle.
    const freshHandleUs: number[] = [];
    for (let i = 0; i < 200; i++) {
      const f = sameMemory(ring.frames[i % 3]);
      const t0 = performance.now();
      const imp = importer.importPointer(f);
      freshHandleUs.push((performance.now() - t0) * 1e3);
      f.release();
      assert.ok(imp.cached, `frame ${i}: a new handle over a cached file`);
      assert.equal(imp.ptr, now[i % 3]);
    }

    let c = "from C: skipped (" + gpuresCSkip + ")";
    let cMedianUs = NaN;
    if (!gpuresCSkip) {
      const b = probe.gpuresCudaBench(ring.frames.map((f) => f.unsafeHandle), 200, 20);
      assert.equal(b.wrongCachedFlags, 0, "C saw 3 new imports, then only cached ones");
      assert.deepEqual(b.stats, { imports: 23, hits: 197, freed: 20, cached: 3, failed: 0 });
      cMedianUs = b.cachedMedian / 1e3;
      c = `from C: cached ${us(b.cachedMedian)} µs median (p99 ${us(b.cachedP99)}, with the ` +
        `handle's release ${us(b.cachedWithReleaseMedian)}), uncached ` +
        `${us(b.uncachedMedian)} µs median of 20`;
    }
    const cached = median(cachedUs), fresh = median(freshUs);
    console.log(
      `PASS cuda-import (3): 200 frames, 3 slots: imports 3, hits 197, 0 wrong bytes; ` +
        `from Deno: cached ${cached.toFixed(2)} µs median (p99 ` +
        `${percentile(cachedUs, 99).toFixed(2)}) of 197, uncached (forget + import + map) ` +
        `${fresh.toFixed(0)} µs median of 20 (${(fresh / cached).toFixed(0)}x), first lap ` +
        `${firstUs.map((x) => x.toFixed(0)).join("/")} µs; importPointer (no handle) ` +
        `${median(pointerUs).toFixed(2)} µs median (p99 ${
          percentile(pointerUs, 99).toFixed(2)
        }), over a batch ${batchUs.toFixed(2)} µs a call (an empty FFI call ${
          emptyUs.toFixed(3)
        } µs), a new handle each frame ${median(freshHandleUs).toFixed(2)} µs; ${c}`,
    );
    if (!gpuresCSkip) {
      const met = cMedianUs <= 2;
      console.log(
        `${met ? "PASS" : "FAIL"} cuda-import (3) target: a cached import from C ≤ 2 µs ` +
          `(median ${cMedianUs.toFixed(2)} µs)`,
      );
      assert.ok(met, `a cached import takes ${cMedianUs.toFixed(2)} µs from C, above 2 µs`);
    }
  },
);

cudaImportTest(
  "cuda-import (4): imports == freed + cached; forget and destroy free CUDA's mappings",
  { ring: [0x81, 0x82, 0x83] },
  (ring, importer) => {
    const ptrs = ring.frames.map((f) => {
      const imp = importer.import(f);
      imp.handle.release();
      return imp.ptr;
    });
    for (const f of ring.frames) importer.import(f).handle.release();
    const balanced = (s: typeof importer.stats) => s.imports === s.freed + s.cached;
    let s = importer.stats;
    assert.deepEqual(s, { cached: 3, imports: 3, hits: 3, freed: 0, failed: 0 });
    assert.ok(ptrs.every((p) => probe.cuIsAllocated(p)), "CUDA maps all three");

    importer.forget(ring.frames[0]);
    s = importer.stats;
    assert.deepEqual(s, { cached: 2, imports: 3, hits: 3, freed: 1, failed: 0 });
    assert.ok(balanced(s));
    assert.equal(probe.cuIsAllocated(ptrs[0]), false, "forget unmapped slot 0's import");
    assert.ok(probe.cuIsAllocated(ptrs[1]) && probe.cuIsAllocated(ptrs[2]));

    const last = importer.stats;
    importer.close();
    // Stats keep the last counts: the close freed what was cached.
    assert.deepEqual(importer.stats, { ...last, cached: 0, freed: last.freed + last.cached });
    assert.throws(() => importer.device, ReleasedError);
    const mapped = ptrs.filter((p) => probe.cuIsAllocated(p)).length;
    assert.equal(mapped, 0, "destroy freed every import");
    console.log(
      `PASS cuda-import (4): before destroy imports ${last.imports} = freed ${last.freed} + ` +
        `cached ${last.cached}; after destroy CUDA maps ${mapped} of the ${ptrs.length} ` +
        `imports (freed == imports)`,
    );
  },
);

Deno.test({
  name: "gpu: probe objects freed, no gpures handle left",
  ignore: !!cudaSkip,
  fn() {
    assert.equal(liveHandles(), handlesAtStart);
    probe.close();
  },
});
