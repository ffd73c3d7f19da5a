// The CUDA importer (ffi/interop/cuda.ts, native/src/interop/cuda.c) where
// it can run: without NVIDIA's driver every entry point must fail cleanly,
// UnsupportedError naming libcuda.so.1, with no crash, handle or fd left; bad
// input is refused before CUDA is asked. With a driver, the device's identity
// and capabilities, and a refused import. Imports of real Vulkan exports are
// tests/gpu/gpu_test.ts's ("cuda-import").

import assert from "node:assert/strict";
import { liveHandles, UnsupportedError, VkOpaqueFd } from "../mod.ts";
import { cudaCaps, cudaDeviceInfo, CudaImporter } from "../ffi/interop/cuda.ts";
import { framePoolCaps } from "../ffi/interop/device.ts";
import { lastError, native } from "../ffi/load/native.ts";
import { GpuResourceError, InvalidHandleError } from "../ffi/errors.ts";
import { close, countOpenFds, memfd } from "./_support/libc.ts";

/** Why CUDA cannot be used here ("" when it can), as the library says it. */
let noCuda = "";
try {
  cudaDeviceInfo(0);
} catch (e) {
  if (!(e instanceof UnsupportedError)) throw e;
  noCuda = e.message;
}
if (noCuda) console.log(`interop_cuda: the CUDA checks are skipped: ${noCuda}`);
else console.log("interop_cuda: CUDA is here: the checks without a driver are skipped");

const DESC_SIZE = 24, IMPORTED_SIZE = 40;

/** The status of a C call and the error it left, as {code, field}. */
function refusal(status: number): { code: string; field: string } {
  assert.notEqual(status, 0, "the call was refused");
  const e = lastError(status);
  return { code: e.code, field: e.field };
}

function importerDesc(fields: { size?: number; flags?: number; device?: number } = {}) {
  const desc = new Uint8Array(DESC_SIZE);
  const view = new DataView(desc.buffer);
  view.setUint32(0, fields.size ?? DESC_SIZE, true);
  view.setUint32(4, fields.flags ?? 0, true);
  view.setInt32(8, fields.device ?? 0, true);
  return desc;
}

/** A VkOpaqueFd over a memfd: a frame no driver exported (CUDA must refuse it). */
function fakeExport(deviceUuid: Uint8Array = new Uint8Array(16).fill(7)): VkOpaqueFd {
  const fd = memfd(4 * 4 * 4);
  try {
    return VkOpaqueFd.create({
      fd,
      size: 64n,
      memoryTypeIndex: 0,
      offset: 0,
      dedicated: false,
      width: 4,
      height: 4,
      format: "RgbaU8",
      deviceUuid: deviceUuid.slice(),
    });
  } finally {
    close(fd);
  }
}

function isUnsupportedNamingLibcuda(e: unknown): boolean {
  return e instanceof UnsupportedError && e.code === "UNSUPPORTED" && e.field === "" &&
    e.message.includes("libcuda.so.1");
}

Deno.test({
  name: "CUDA entry points throw UnsupportedError naming libcuda.so.1 without the driver",
  ignore: !noCuda.includes("libcuda.so.1"),
  fn() {
    const handles = liveHandles(), fds = countOpenFds();
    for (let round = 0; round < 2; round++) { // the second answer comes from the cached failure
      assert.throws(() => cudaDeviceInfo(0), isUnsupportedNamingLibcuda);
      assert.throws(() => cudaCaps(0), isUnsupportedNamingLibcuda);
      assert.throws(() => CudaImporter.create(), isUnsupportedNamingLibcuda);
      assert.throws(
        () => CudaImporter.create({ device: 1, capacity: 3 }),
        isUnsupportedNamingLibcuda,
      );
    }
    // From C: a well-formed descriptor gets as far as the driver, and no importer comes back.
    const out = new BigUint64Array([0xdeadn]);
    assert.deepEqual(refusal(native().gpures_cuda_importer_create(importerDesc(), out)), {
      code: "UNSUPPORTED",
      field: "",
    });
    assert.equal(out[0], 0n, "the out pointer is cleared on failure");
    const count = new Uint32Array([99]);
    assert.equal(
      refusal(native().gpures_caps_cuda(0, new Uint8Array(32 * 64), 64, count)).code,
      "UNSUPPORTED",
    );
    assert.ok(liveHandles() <= handles, "no handle left");
    assert.ok(countOpenFds() <= fds, "no fd was left open");
  },
});

Deno.test("CudaImporter.create() refuses bad options before asking CUDA", () => {
  const bad: [Record<string, unknown>, string][] = [
    [{ device: -1 }, "device"],
    [{ device: 1.5 }, "device"],
    [{ device: 2 ** 31 }, "device"],
    [{ device: "0" }, "device"],
    [{ capacity: -1 }, "capacity"],
    [{ capacity: 2 ** 32 }, "capacity"],
    [{ context: "0x1" }, "context"],
    [{ context: -1n }, "context"],
  ];
  for (const [options, field] of bad) {
    assert.throws(
      () => CudaImporter.create(options as Parameters<typeof CudaImporter.create>[0]),
      (e: unknown) => e instanceof InvalidHandleError && e.field === field,
      `${JSON.stringify(options, (_, v) => typeof v === "bigint" ? `${v}n` : v)}`,
    );
  }
  for (const ordinal of [-1, 0.5, NaN, 2 ** 31]) {
    assert.throws(
      () => cudaCaps(ordinal),
      (e: unknown) => (e as GpuResourceError).field === "ordinal",
    );
    assert.throws(
      () => cudaDeviceInfo(ordinal),
      (e: unknown) => (e as GpuResourceError).field === "ordinal",
    );
  }
});

Deno.test("gpures_cuda_importer_create() refuses a bad descriptor by field, before CUDA", () => {
  const s = native();
  const out = new BigUint64Array(1);
  assert.deepEqual(refusal(s.gpures_cuda_importer_create(null, out)), {
    code: "NULL_POINTER",
    field: "desc",
  });
  assert.deepEqual(refusal(s.gpures_cuda_importer_create(importerDesc(), null)), {
    code: "NULL_POINTER",
    field: "outImporter",
  });
  assert.deepEqual(refusal(s.gpures_cuda_importer_create(importerDesc({ size: 0 }), out)), {
    code: "ABI_MISMATCH",
    field: "structSize",
  });
  assert.deepEqual(refusal(s.gpures_cuda_importer_create(importerDesc({ size: 4097 }), out)), {
    code: "ABI_MISMATCH",
    field: "structSize",
  });
  assert.deepEqual(refusal(s.gpures_cuda_importer_create(importerDesc({ flags: 1 }), out)), {
    code: "INVALID_VALUE",
    field: "flags",
  });
  // A longer struct from a newer caller: its extra bytes must be zero.
  const longer = new Uint8Array(DESC_SIZE + 8);
  longer.set(importerDesc({ size: DESC_SIZE + 8 }));
  longer[DESC_SIZE + 3] = 1;
  assert.deepEqual(refusal(s.gpures_cuda_importer_create(longer, out)), {
    code: "ABI_MISMATCH",
    field: "structSize",
  });
  assert.equal(out[0], 0n, "no importer came back");
});

Deno.test("gpures_cuda_import() refuses a null importer or out and leaves the frame alone", () => {
  const s = native();
  using frame = fakeExport();
  const out = new Uint8Array(IMPORTED_SIZE);
  new DataView(out.buffer).setUint32(0, IMPORTED_SIZE, true);
  assert.deepEqual(refusal(s.gpures_cuda_import(null, frame.unsafeHandle, out)), {
    code: "INVALID_VALUE",
    field: "importer",
  });
  assert.deepEqual(refusal(s.gpures_cuda_import(null, frame.unsafeHandle, null)), {
    code: "NULL_POINTER",
    field: "out",
  });
  assert.equal(frame.refcount, 1, "the frame's references are as they were");
  assert.deepEqual(refusal(s.gpures_caps_cuda(0, null, 0, null)), {
    code: "NULL_POINTER",
    field: "outCount",
  });
  assert.deepEqual(refusal(s.gpures_caps_cuda(0, null, 4, new Uint32Array(1))), {
    code: "NULL_POINTER",
    field: "out",
  });
  assert.deepEqual(refusal(s.gpures_cuda_device_info(0, null)), {
    code: "NULL_POINTER",
    field: "out",
  });
});

Deno.test({
  name: "cudaDeviceInfo() and cudaCaps() describe CUDA device 0",
  ignore: !!noCuda,
  fn() {
    const info = cudaDeviceInfo(0);
    assert.equal(info.id.kind, "cudaUuid");
    assert.equal(info.vendorId, 0x10de);
    assert.ok(info.name.length > 0);
    assert.ok(info.id.bytes.some((b) => b !== 0), "a UUID, not zeros");
    const caps = cudaCaps(0);
    // The same formats a pool makes (every one with a DRM fourcc), LINEAR, as opaque fds, and
    // as CUDA's own VMM fds (CudaFramePool) where the device has virtual memory management.
    assert.deepEqual(caps.map((c) => c.format), framePoolCaps().map((c) => c.format));
    for (const c of caps) {
      assert.equal(c.modifier, 0n);
      assert.equal(c.memory[0], "opaqueFd");
      assert.ok(c.memory.every((m) => m === "opaqueFd" || m === "cudaVmmFd"), `${c.memory}`);
      assert.ok(c.maxWidth >= 3840 && c.maxHeight >= 2160, "4K fits");
    }
    assert.throws(
      () => cudaDeviceInfo(1 << 30),
      (e: unknown) => e instanceof InvalidHandleError && e.field === "ordinal",
    );
    assert.throws(
      () => CudaImporter.create({ device: 1 << 30 }),
      (e: unknown) => e instanceof InvalidHandleError && e.field === "device",
    );
  },
});

Deno.test({
  name: "CudaImporter.import() of memory no driver exported: refused, nothing cached or leaked",
  ignore: !!noCuda,
  fn() {
    const handles = liveHandles(), fds = countOpenFds();
    const importer = CudaImporter.create();
    try {
      // It claims the importer's device, so the device check passes and CUDA is asked.
      const frame = fakeExport(importer.device.id.bytes);
      try {
        assert.throws(() => importer.import(frame), GpuResourceError);
        assert.deepEqual(importer.stats, { cached: 0, imports: 0, hits: 0, freed: 0, failed: 1 });
      } finally {
        frame.release();
      }
    } finally {
      importer.close();
    }
    assert.ok(liveHandles() <= handles, "no handle left");
    assert.ok(countOpenFds() <= fds, "the fd CUDA refused was closed");
  },
});
