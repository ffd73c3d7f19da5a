// Frame pools in CUDA memory (CudaFramePool, native/src/interop/cuda_pool.c)
// where they cannot run: without NVIDIA's driver the pool says so by name and
// leaves nothing behind, and its options are refused by name before CUDA is
// asked. Its frames' kind, CudaVmmFd, works everywhere as a kind: it is
// created, described and sent like any frame, and a peer's CudaVmmFd whose fd
// is no memory is refused as it arrives. Pools on a real GPU, across
// processes, are tests/gpu/gpu_pool_cuda_vmm_test.ts's.

import assert from "node:assert/strict";
import { Channel, CudaFramePool, CudaVmmFd, liveHandles, UnsupportedError } from "../mod.ts";
import { cudaDeviceInfo } from "../ffi/interop/cuda.ts";
import { PixelFormat } from "../ffi/map/pixel_format.ts";
import { lastError, native } from "../ffi/load/native.ts";
import { InvalidHandleError } from "../ffi/errors.ts";
import { close, countOpenFds, eventFd, memfd, pipeReadEnd } from "./_support/libc.ts";

let noCuda = "";
try {
  cudaDeviceInfo(0);
} catch (e) {
  if (!(e instanceof UnsupportedError)) throw e;
  noCuda = e.message;
}

const DESC_SIZE = 40;
const UUID = new Uint8Array(16).fill(0x5a);

/** A CudaVmmFd over `fd` (duplicated; the caller's fd is closed here), shaped as a 16x16 RGBA frame. */
function vmmFrame(fd: number, extra: Partial<Parameters<typeof CudaVmmFd.create>[0]> = {}) {
  try {
    return CudaVmmFd.create({
      fd,
      size: 2n << 20n,
      offset: 0n,
      width: 16,
      height: 16,
      format: "RgbaU8",
      deviceUuid: UUID.slice(),
      rowPitch: 256,
      ...extra,
    });
  } finally {
    close(fd);
  }
}

/** gpures_cuda_pool_desc bytes: a valid 64x64 RGBA pool of 2 slots on device 0, `change` applied. */
function poolDesc(change: (view: DataView) => void): Uint8Array {
  const view = new DataView(new ArrayBuffer(DESC_SIZE));
  [DESC_SIZE, 0, PixelFormat.info("RgbaU8")!.id, 64, 64, 2, 0].forEach((v, i) =>
    view.setUint32(4 * i, v, true)
  );
  change(view);
  return new Uint8Array(view.buffer);
}

Deno.test({
  name:
    "without the driver a CudaFramePool throws UnsupportedError naming libcuda.so.1, leaving nothing",
  ignore: !noCuda.includes("libcuda.so.1"),
  fn() {
    const handles = liveHandles(), fds = countOpenFds();
    for (let round = 0; round < 2; round++) {
      assert.throws(
        () => CudaFramePool.create({ format: "NV12", width: 1920, height: 1080, slots: 4 }),
        (e) => e instanceof UnsupportedError && e.message.includes("libcuda.so.1"),
      );
    }
    assert.equal(liveHandles(), handles);
    assert.equal(countOpenFds(), fds);
  },
});

Deno.test("a CudaFramePool's options are refused by name before CUDA is asked", () => {
  const refused = (options: unknown, field: string) =>
    assert.throws(
      () => CudaFramePool.create(options as never),
      (e) => e instanceof InvalidHandleError && e.field === field,
      field,
    );
  const good = { format: "RgbaU8", width: 64, height: 64, slots: 2 };
  refused({ ...good, format: "Rgba" }, "format");
  refused({ ...good, width: 0 }, "width");
  refused({ ...good, slots: 0 }, "slots");
  refused({ ...good, slots: 257 }, "slots");
  refused({ ...good, rowAlign: 3 }, "rowAlign");
  refused({ ...good, device: -1 }, "device");
  refused({ ...good, device: 1.5 }, "device");
  refused(undefined, "options");
});

Deno.test("gpures_cuda_pool_create refuses a bad descriptor by its field before CUDA is asked", () => {
  const s = native();
  const out = new BigUint64Array(1);
  const refusal = (desc: Uint8Array | null) => {
    const status = s.gpures_cuda_pool_create(desc, out);
    assert.notEqual(status, 0);
    assert.equal(out[0], 0n, "no pool");
    return lastError(status).field;
  };
  assert.equal(refusal(poolDesc((v) => v.setUint32(4, 1, true))), "flags");
  assert.equal(refusal(poolDesc((v) => v.setUint32(20, 0, true))), "slots");
  assert.equal(refusal(poolDesc((v) => v.setUint32(24, 48, true))), "rowAlign");
  assert.equal(refusal(poolDesc((v) => v.setUint32(8, 0xffff, true))), "format");
  assert.equal(refusal(poolDesc((v) => v.setUint32(16, 0, true))), "height");
  assert.equal(refusal(poolDesc((v) => v.setUint32(0, 4, true))), "structSize");
  assert.equal(refusal(null), "desc");
});

Deno.test("a CudaVmmFd is a frame kind: it describes its shape, and crosses a channel with its fd", async () => {
  const fds = countOpenFds();
  {
    using frame = vmmFrame(memfd(2 << 20));
    const d = frame.describe();
    assert.equal(d.kind, "CudaVmmFd");
    assert.equal(d.width, 16);
    assert.equal(d.format, "RgbaU8");
    assert.deepEqual(new Uint8Array(d.deviceUuid), UUID);
    const [tx, rx] = Channel.pair();
    using _tx = tx;
    using _rx = rx;
    await tx.send(frame);
    using got = await rx.receive() as CudaVmmFd;
    assert.ok(got instanceof CudaVmmFd);
    const g = got.describe();
    assert.equal(g.size, 2n << 20n);
    assert.equal(g.rowPitch, 256);
    assert.notEqual(g.fd, d.fd, "the receiver holds its own fd");
  }
  assert.equal(countOpenFds(), fds, "no fd left");
});

Deno.test("a peer's CudaVmmFd whose fd is no memory (an eventfd, a pipe) is refused by name as it arrives", async () => {
  const fds = countOpenFds(), handles = liveHandles();
  {
    const [tx, rx] = Channel.pair();
    using _tx = tx;
    using _rx = rx;
    for (const [what, fd] of [["an eventfd", eventFd()], ["a pipe", pipeReadEnd()]] as const) {
      using frame = vmmFrame(fd);
      await tx.send(frame);
      await assert.rejects(
        rx.receive(),
        (e) => e instanceof InvalidHandleError && e.field === "fd",
        what,
      );
    }
    using frame = vmmFrame(memfd(2 << 20));
    await tx.send(frame);
    using after = await rx.receive(); // the channel goes on after a refusal
    assert.equal(after?.kind, "CudaVmmFd");
  }
  assert.equal(countOpenFds(), fds, "no fd left");
  assert.equal(liveHandles(), handles, "no handle left");
});
