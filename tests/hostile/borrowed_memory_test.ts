// CpuBytes and CpuPlanes alias JS memory. A buffer detached after create
// (transfer(), postMessage with transfer, a BYOB read) takes that memory away:
// the handle must never hand out its address again.

import assert from "node:assert/strict";
import { CpuBytes, CpuPlanes, type InvalidHandleError, liveHandles } from "../../mod.ts";

function refusedDetached(field: string) {
  return (e: InvalidHandleError) => {
    assert.equal(e.name, "InvalidHandleError");
    assert.equal(e.code, "INVALID_VALUE");
    assert.equal(e.field, field);
    assert.match(e.message, /was detached \(transferred away\) after create/);
    return true;
  };
}

Deno.test("CpuBytes whose buffer was transferred away refuses every use but release()", () => {
  const before = liveHandles();
  const pixels = new Uint8Array(64 * 64 * 4);
  const frame = CpuBytes.create({ data: pixels, rowPitch: 256, format: "RgbaU8" });
  const clone = frame.clone();
  pixels.buffer.transfer();
  for (const r of [frame, clone]) {
    assert.throws(() => r.describe(), refusedDetached("data"));
    assert.throws(() => r.toJSON(), refusedDetached("data"));
    assert.throws(() => r.clone(), refusedDetached("data"));
    assert.throws(() => r.unsafeHandle, refusedDetached("data"));
    assert.throws(() => r.intoRaw(), refusedDetached("data"));
    assert.match(Deno.inspect(r), /CpuBytes \{ data detached \}/);
  }
  frame.release();
  clone.release();
  assert.equal(liveHandles(), before);
});

Deno.test("CpuPlanes names the plane whose buffer was transferred away", () => {
  const y = new Uint8Array(64 * 64), uv = new Uint8Array(64 * 32);
  using frame = CpuPlanes.create({
    format: "NV12",
    planes: [{ data: y, rowPitch: 64 }, { data: uv, rowPitch: 64 }],
  });
  assert.equal(frame.describe().planes.length, 2);
  structuredClone(uv.buffer, { transfer: [uv.buffer] });
  assert.throws(() => frame.describe(), refusedDetached("planes[1].data"));
});

Deno.test("CpuBytes over a buffer detached before create is refused as detached", () => {
  const buffer = new ArrayBuffer(1024);
  const view = new Uint8Array(buffer, 16, 256);
  buffer.transfer();
  for (const data of [buffer, view]) {
    assert.throws(
      () => CpuBytes.create({ data, rowPitch: 16, format: "RgbaU8" }),
      (e: InvalidHandleError) => e.field === "data" && /is detached/.test(e.message),
    );
  }
});
