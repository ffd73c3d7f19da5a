// Inputs a careless or hostile caller can give: inherited properties, views
// over detached buffers, array-likes far longer than anything real.

import assert from "node:assert/strict";
import {
  CpuBytes,
  CpuPlanes,
  DmaBufHandle,
  GpuResource,
  type InvalidHandleError,
  liveHandles,
  VkBufferHandle,
} from "../../mod.ts";
import { RGBA_FRAME_BYTES, rgbaFrame, valid } from "../_support/fixtures.ts";
import { close, isOpen, memfd } from "../_support/libc.ts";

const linux = Deno.build.os === "linux";

Deno.test({
  name: "an inherited takeOwnership: true does not adopt the caller's fd",
  ignore: !linux,
  fn() {
    const fd = memfd(RGBA_FRAME_BYTES);
    const options = Object.create({ takeOwnership: true });
    const frame = rgbaFrame(fd, options);
    assert.notEqual(frame.describe().fds[0], fd, "the fd was duplicated");
    frame.release();
    assert.ok(isOpen(fd), "the caller's fd is still the caller's");
    close(fd);
  },
});

Deno.test("only a descriptor's own properties count, at every level", () => {
  const before = liveHandles();
  const inherited = Object.create({ buffer: 1n, size: 16n });
  assert.throws(
    () => VkBufferHandle.create(inherited),
    (e: InvalidHandleError) => e.field === "buffer" && /is missing/.test(e.message),
  );
  assert.throws(
    () =>
      CpuPlanes.create({
        format: "NV12",
        planes: [Object.create({ data: new Uint8Array(16), rowPitch: 4 }), {
          data: new Uint8Array(8),
          rowPitch: 4,
        }],
      }),
    (e: InvalidHandleError) => e.field.startsWith("planes[0]"),
  );
  assert.equal(liveHandles(), before);
});

Deno.test("a sparse planes array of length 2^32-1 is refused before it is walked", () => {
  const planes = [] as unknown[];
  planes.length = 2 ** 32 - 1;
  assert.throws(
    () => CpuPlanes.create({ format: "NV12", planes: planes as never }),
    (e: InvalidHandleError) => {
      assert.equal(e.field, "planes");
      assert.match(e.message, /planes has 4294967295 entries; at most 4 are allowed/);
      return true;
    },
  );
  if (linux) {
    assert.throws(
      () =>
        DmaBufHandle.create({
          fds: planes as never,
          fourcc: 1,
          modifier: 0n,
          width: 1,
          height: 1,
          planes: [],
        }),
      (e: InvalidHandleError) => e.field === "fds" && /at most 4 are allowed/.test(e.message),
    );
  }
});

Deno.test("a typed array or DataView over a detached buffer is an InvalidHandleError", () => {
  const buffer = new ArrayBuffer(64);
  const views = [new Uint8Array(buffer), new DataView(buffer), new Float32Array(buffer)];
  const uuid = new Uint8Array(buffer, 0, 16);
  buffer.transfer();
  for (const data of views) {
    assert.throws(
      () => CpuBytes.create({ data, rowPitch: 16, format: "RgbaU8" }),
      (e: InvalidHandleError) => e.name === "InvalidHandleError" && e.field === "data",
    );
  }
  assert.throws(
    () => VkBufferHandle.create({ buffer: 1n, size: 16n, deviceUuid: uuid }),
    (e: InvalidHandleError) => e.name === "InvalidHandleError" && e.field === "deviceUuid",
  );
});

Deno.test("GpuResource.fromRaw() prints the value it refused", () => {
  const stale = (() => {
    const r = VkBufferHandle.create(valid("VkBufferHandle"));
    const raw = r.unsafeHandle;
    r.release();
    return raw;
  })();
  assert.throws(
    () => GpuResource.fromRaw(stale),
    (e: InvalidHandleError) => e.message.includes(stale.toString(16)),
  );
});

Deno.test("a polluted Object.prototype does not fill a plain descriptor's missing field", () => {
  const proto = Object.prototype as Record<string, unknown>;
  proto.size = 16n;
  try {
    assert.throws(
      () => VkBufferHandle.create({ buffer: 1n } as never),
      (e: InvalidHandleError) => e.field === "size" && /is missing/.test(e.message),
    );
  } finally {
    delete proto.size;
  }
  using after = VkBufferHandle.create({ buffer: 1n, size: 16n });
  assert.equal(after.describe().size, 16n, "and a plain descriptor still works after");
});
