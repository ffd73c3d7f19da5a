// Interop without an API: which device each handle names, how two ids
// compare, and how a producer's and a consumer's capabilities meet. The
// importers themselves run on real APIs in interop_vulkan_test.ts,
// interop_egl_test.ts, interop_cuda_test.ts and interop_webgpu_test.ts.

import assert from "node:assert/strict";
import {
  compareDevices,
  CpuBytes,
  CudaBufferHandle,
  CudaEvent,
  type DeviceId,
  deviceIdString,
  deviceOf,
  DmaBufHandle,
  type FormatCap,
  FramePool,
  framePoolCaps,
  InvalidHandleError,
  MODIFIER_LINEAR,
  negotiate,
  ReleasedError,
  UnsupportedError,
  VkImage,
  VkOpaqueFd,
} from "../mod.ts";
import { fixture } from "./_support/fixtures.ts";

const linux = Deno.build.os === "linux";
const UUID_A = Uint8Array.from({ length: 16 }, (_, i) => 0xa0 + i);
const UUID_B = Uint8Array.from({ length: 16 }, (_, i) => 0xb0 + i);

function uuid(kind: "vulkanUuid" | "cudaUuid", bytes: Uint8Array): DeviceId {
  return { kind, bytes };
}

function cap(format: FormatCap["format"], more: Partial<FormatCap> = {}): FormatCap {
  return {
    format,
    modifier: MODIFIER_LINEAR,
    memory: ["dmaBuf"],
    maxWidth: 0,
    maxHeight: 0,
    rowAlign: 1,
    externalOnly: false,
    ...more,
  };
}

// ------------------------------------------------------------ device ids

Deno.test("a Vulkan image names its device by the UUID it carries", () => {
  using f = fixture("VkImage");
  using image = VkImage.create({ ...f.desc, deviceUuid: UUID_A } as never);
  const id = deviceOf(image);
  assert.equal(id.kind, "vulkanUuid");
  assert.deepEqual(id.bytes, UUID_A);
  assert.equal(deviceIdString(id), "uuid:a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
});

Deno.test("a handle without its optional UUID names no device", () => {
  using f = fixture("VkImage");
  using image = VkImage.create({ ...f.desc, deviceUuid: undefined } as never);
  assert.equal(deviceOf(image).kind, "none");
});

Deno.test("CUDA memory and a Vulkan image with one UUID are on the same device", () => {
  using fv = fixture("VkImage");
  using fc = fixture("CudaBufferHandle");
  if (!linux) return; // CUDA kinds exist on Linux and Windows only
  using image = VkImage.create({ ...fv.desc, deviceUuid: UUID_A } as never);
  using same = CudaBufferHandle.create({ ...fc.desc, deviceUuid: UUID_A } as never);
  using other = CudaBufferHandle.create({ ...fc.desc, deviceUuid: UUID_B } as never);
  assert.equal(deviceOf(same).kind, "cudaUuid");
  assert.equal(compareDevices(deviceOf(image), deviceOf(same)), "same");
  assert.equal(compareDevices(deviceOf(image), deviceOf(other)), "different");
});

Deno.test("SyncPoints name their device too", { ignore: !linux }, () => {
  using f = fixture("CudaEvent");
  using event = CudaEvent.create({ ...f.desc, deviceUuid: UUID_B } as never);
  assert.deepEqual(deviceOf(event), uuid("cudaUuid", UUID_B));
});

Deno.test(
  "CPU memory is on the CPU; a dma-buf is on none (any importer)",
  { ignore: !linux },
  () => {
    using fc = fixture("CpuBytes");
    using fd = fixture("DmaBufHandle");
    using bytes = CpuBytes.create(fc.desc as never);
    using dmaBuf = DmaBufHandle.create(fd.desc as never);
    assert.equal(deviceOf(bytes).kind, "cpu");
    assert.equal(deviceOf(dmaBuf).kind, "none");
  },
);

Deno.test(
  "an exported Vulkan memory fd names the device that exported it",
  { ignore: !linux },
  () => {
    using f = fixture("VkOpaqueFd");
    using memory = VkOpaqueFd.create({ ...f.desc, deviceUuid: UUID_B } as never);
    assert.deepEqual(deviceOf(memory), uuid("vulkanUuid", UUID_B));
  },
);

Deno.test("ids compare only in the same terms", () => {
  const cpu: DeviceId = { kind: "cpu", bytes: new Uint8Array(16) };
  const none: DeviceId = { kind: "none", bytes: new Uint8Array(16) };
  const luid: DeviceId = { kind: "dxgiLuid", bytes: UUID_A };
  assert.equal(compareDevices(cpu, cpu), "same");
  assert.equal(compareDevices(none, none), "unknown");
  assert.equal(compareDevices(luid, uuid("vulkanUuid", UUID_A)), "unknown");
  assert.equal(compareDevices(uuid("cudaUuid", UUID_A), uuid("vulkanUuid", UUID_A)), "same");
});

Deno.test("a malformed id or a released handle is refused", () => {
  assert.throws(
    () =>
      compareDevices({ kind: "vulkanUuid", bytes: new Uint8Array(15) }, uuid("cudaUuid", UUID_A)),
    (e) => e instanceof InvalidHandleError && e.field === "deviceId",
  );
  assert.throws(
    () => compareDevices({ kind: "gpu" as never, bytes: UUID_A }, uuid("cudaUuid", UUID_A)),
    InvalidHandleError,
  );
  using f = fixture("VkImage");
  const image = VkImage.create(f.desc as never);
  const stale = { unsafeHandle: image.unsafeHandle };
  image.release();
  assert.throws(() => deviceOf(stale), ReleasedError);
});

// ------------------------------------------------------------ negotiation

Deno.test("a frame pool makes every format with a DRM fourcc, LINEAR, as a dma-buf or mapped", () => {
  const caps = framePoolCaps();
  const nv12 = caps.find((c) => c.format === "NV12")!;
  assert.deepEqual(nv12.memory, ["dmaBuf", "host"]);
  assert.equal(nv12.modifier, MODIFIER_LINEAR);
  assert.ok(caps.some((c) => c.format === "P010LE"));
  assert.ok(caps.every((c) => c.modifier === MODIFIER_LINEAR));
});

Deno.test("negotiation picks the producer's first row the consumer takes", () => {
  const producer = [cap("P010LE"), cap("NV12"), cap("RgbaU8")];
  const consumer = [cap("RgbaU8"), cap("NV12", { rowAlign: 256 })];
  const pick = negotiate(producer, consumer, { width: 1920, height: 1080 });
  assert.equal(pick.format, "NV12");
  assert.equal(pick.producerIndex, 1);
  assert.equal(pick.consumerIndex, 1);
  assert.equal(pick.rowAlign, 256);
  assert.deepEqual(pick.planes.map((p) => [p.offset, p.stride, p.width, p.height]), [
    [0, 2048, 1920, 1080],
    [2048 * 1080, 2048, 960, 540],
  ]);
  assert.equal(pick.size, 2048 * 1080 * 3 / 2);
});

Deno.test("negotiation prefers the memory that copies least", () => {
  const producer = [cap("NV12", { memory: ["host", "opaqueFd", "dmaBuf"] })];
  assert.equal(
    negotiate(producer, [cap("NV12", { memory: ["host", "dmaBuf"] })], { width: 64, height: 64 })
      .memory,
    "dmaBuf",
  );
  assert.equal(
    negotiate(producer, [cap("NV12", { memory: ["host", "opaqueFd"] })], { width: 64, height: 64 })
      .memory,
    "opaqueFd",
  );
  const cuda = [cap("NV12", { memory: ["host", "cudaVmmFd", "opaqueFd"] })];
  assert.equal(
    negotiate(cuda, [cap("NV12", { memory: ["cudaVmmFd", "host"] })], { width: 64, height: 64 })
      .memory,
    "cudaVmmFd",
  );
  assert.equal(
    negotiate(cuda, [cap("NV12", { memory: ["cudaVmmFd", "opaqueFd"] })], { width: 64, height: 64 })
      .memory,
    "opaqueFd",
  );
  assert.equal(
    negotiate(producer, [cap("NV12", { memory: ["host"] })], { width: 64, height: 64 }).memory,
    "host",
  );
});

Deno.test("a tiled modifier is agreed on without a layout: the allocator lays it out", () => {
  const tiled = 0x0100000000000001n; // I915_FORMAT_MOD_X_TILED
  const pick = negotiate([cap("NV12", { modifier: tiled })], [cap("NV12", { modifier: tiled })], {
    width: 64,
    height: 64,
  });
  assert.equal(pick.modifier, tiled);
  assert.deepEqual(pick.planes, []);
  assert.throws(
    () => FramePool.fromNegotiated(pick, 2),
    (e) => e instanceof UnsupportedError && e.field === "modifier",
  );
});

Deno.test("when nothing fits, the error says why for each format", () => {
  const producer = [
    cap("NV12"),
    cap("NV12", { memory: ["host"] }),
    cap("P010LE"),
    cap("RgbaU8", { memory: ["host"] }),
  ];
  const consumer = [
    cap("NV12", { modifier: 0x0100000000000002n }),
    cap("RgbaU8"),
    cap("P010LE", { maxWidth: 1024, maxHeight: 1024 }),
  ];
  assert.throws(
    () => negotiate(producer, consumer, { width: 1920, height: 1080 }),
    (e) =>
      e instanceof UnsupportedError && e.field === "format" &&
      e.message.includes("NV12: the consumer takes modifier 0x100000000000002, not 0x0") &&
      e.message.includes("P010LE: the consumer takes at most 1024x1024") &&
      e.message.includes("RgbaU8: no memory kind in common") &&
      e.message.split("NV12").length === 2, // once per format
  );
  assert.throws(
    () => negotiate([], consumer, { width: 64, height: 64 }),
    /the producer offers none/,
  );
});

Deno.test("negotiation refuses malformed rows and extents, naming the field", () => {
  const ok = [cap("NV12")];
  const refuses = (
    producer: FormatCap[],
    extent: { width: number; height: number },
    field: string,
  ) =>
    assert.throws(
      () => negotiate(producer, ok, extent),
      (e) => e instanceof InvalidHandleError && e.field === field,
    );
  refuses([cap("NV12", { rowAlign: 3 })], { width: 64, height: 64 }, "producer");
  refuses([cap("NV12", { rowAlign: 8192 })], { width: 64, height: 64 }, "producer");
  refuses(
    [cap("NV12", { memory: ["vram" as never] })],
    { width: 64, height: 64 },
    "producer[0].memory",
  );
  refuses(ok, { width: 0, height: 64 }, "width");
  refuses(ok, { width: 64, height: 0 }, "height");
  assert.throws(
    () => negotiate([cap("Nv12" as never)], ok, { width: 64, height: 64 }),
    InvalidHandleError,
  );
});

Deno.test("a pool allocates what was agreed, and its frames have the agreed layout", {
  ignore: !linux,
}, () => {
  const pick = negotiate(framePoolCaps(), [cap("NV12", { rowAlign: 256 })], {
    width: 640,
    height: 360,
  });
  using pool = FramePool.fromNegotiated(pick, 2);
  using frame = pool.tryAcquire()!;
  const desc = frame.describe();
  assert.deepEqual(
    desc.planes.map((p) => [p.offset, p.stride]),
    pick.planes.map((p) => [p.offset, p.stride]),
  );
  assert.throws(
    () => FramePool.fromNegotiated({ ...pick, memory: "opaqueFd" }, 2),
    (e) => e instanceof UnsupportedError && e.field === "memory",
  );
});
