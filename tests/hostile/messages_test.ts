// Error messages a person can act on: they name the call that failed, say
// what was wrong with the value given, and list what would have been right.

import assert from "node:assert/strict";
import {
  Channel,
  CpuBytes,
  FramePool,
  GpuResourceError,
  InvalidHandleError,
  PixelFormat,
  VkBufferHandle,
} from "../../mod.ts";

const linux = Deno.build.os === "linux";

/** The message of what `f` throws, checked to be a GpuResourceError. */
function messageOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof GpuResourceError, `a GpuResourceError, not ${e}`);
    return e.message;
  }
  assert.fail("it did not throw");
}

const bytes = () =>
  CpuBytes.create({ data: new Uint8Array(64), rowPitch: 64, format: "R16U", width: 32, height: 1 });

Deno.test("setMeta() says it was setting metadata, and how many bytes userData had", () => {
  using frame = bytes();
  const message = messageOf(() => frame.setMeta({ userData: new Uint8Array(8) }));
  assert.match(message, /^Cannot set metadata: userData must be 16 bytes, not 8$/);
});

Deno.test("a UUID field of the wrong length says its length, not its type", () => {
  const message = messageOf(() =>
    VkBufferHandle.create({ buffer: 1n, size: 16n, deviceUuid: new Uint8Array(4) })
  );
  assert.equal(message, "Cannot create VkBufferHandle: deviceUuid must be 16 bytes, not 4");
});

Deno.test("an unknown format name lists the names, or suggests the one meant", () => {
  const nv12 = messageOf(() =>
    FramePool.create({ format: "nv12" as never, width: 16, height: 16, slots: 1 })
  );
  assert.match(nv12, /did you mean "NV12"\?/);
  const other = messageOf(() =>
    FramePool.create({ format: "H264" as never, width: 16, height: 16, slots: 1 })
  );
  assert.match(other, /NV12, NV21, P010LE/, "the valid names are listed");
  const desc = messageOf(() =>
    CpuBytes.create({ data: new Uint8Array(64), rowPitch: 64, format: "rgbau8" as never })
  );
  assert.match(desc, /did you mean "RgbaU8"\?/);
});

Deno.test("PixelFormat.info() of a DRM fourcc points to PixelFormat.fromFourcc()", () => {
  const NV12_FOURCC = 0x3231564e; // "NV12"
  const message = messageOf(() => PixelFormat.info(NV12_FOURCC));
  assert.match(message, /PixelFormat\.fromFourcc/);
  assert.match(message, /ids? .* names?|names? .* ids?/);
  assert.equal(PixelFormat.fromFourcc(NV12_FOURCC)?.name, "NV12");
  assert.equal(PixelFormat.fromFourcc(0x20202020), undefined);
  assert.throws(() => PixelFormat.fromFourcc(-1), InvalidHandleError);
});

Deno.test({
  name: "Channel.connect() with wait says that it waited, and how long",
  ignore: !linux,
  async fn() {
    const path = `@gpures-nobody-${Deno.pid}-${Date.now()}`; // abstract: no file to write
    await assert.rejects(Channel.connect(path, { wait: 50 }), (e: GpuResourceError) => {
      assert.match(e.message, /waited 50 ms|within 50 ms|for 50 ms/);
      return true;
    });
  },
});
