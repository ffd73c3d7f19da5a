// Ownership and lifetime seen from JavaScript: keep-alives, aliasing of JS
// buffers, raw handles, Workers, finalization and `using`.

import assert from "node:assert/strict";
import {
  CpuBytes,
  GpuResource,
  liveHandles,
  ReleasedError,
  VkBufferHandle,
  VkImage,
} from "../mod.ts";
import { valid } from "./_support/fixtures.ts";

const gc = (globalThis as { gc?: () => void }).gc;
/** A valid VkBufferHandle descriptor (tools/fixtures.ts). */
const buffer = () => valid("VkBufferHandle");
const rgba = (bytes = 64 * 64 * 4) => ({
  data: new Uint8Array(bytes),
  rowPitch: 256,
  format: "RgbaU8" as const,
});

async function collect(): Promise<void> {
  for (let i = 0; i < 10; i++) {
    gc!();
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("GpuResource.markConsumed() reaches the producer's keep-alive each time", () => {
  let marks = 0;
  using r = VkBufferHandle.create(buffer(), {
    keepAlive: { markConsumed: () => marks++ },
  });
  assert.equal(r.markConsumed(), true, "someone heard it");
  using c = r.clone();
  c.markConsumed();
  assert.equal(marks, 2);
});

Deno.test("GpuResource.markConsumed() says when it meant nothing: no keep-alive listens", () => {
  using bare = VkBufferHandle.create(buffer());
  assert.equal(bare.markConsumed(), false, "no keep-alive at all");
  let released = 0;
  using deaf = VkBufferHandle.create(buffer(), { keepAlive: { release: () => released++ } });
  assert.equal(deaf.markConsumed(), false, "a keep-alive that only waits for the release");
  deaf.release();
  assert.equal(released, 1, "which it still gets");
});

Deno.test("a keep-alive's release that throws is reported as an uncaught error, after the release", async () => {
  const before = liveHandles();
  const reported: unknown[] = [];
  const onError = (e: ErrorEvent) => {
    e.preventDefault();
    reported.push(e.error);
  };
  globalThis.addEventListener("error", onError);
  try {
    const r = VkBufferHandle.create(buffer(), {
      keepAlive: {
        release: () => {
          throw new Error("producer failed");
        },
      },
    });
    r.release(); // does not throw: the failure is the producer's
    assert.equal(r.released, true);
    assert.equal(liveHandles(), before);
    await Promise.resolve();
    assert.equal(reported.length, 1);
    assert.match(String(reported[0]), /producer failed/);
  } finally {
    globalThis.removeEventListener("error", onError);
  }
});

Deno.test("a keep-alive can be any object, without methods", () => {
  using r = VkBufferHandle.create(buffer(), { keepAlive: "a plain value" });
  assert.equal(r.refcount, 1);
});

Deno.test("CpuBytes aliases its buffer: the handle's memory is the buffer's", () => {
  const bytes = new Uint8Array(64 * 64 * 4);
  using frame = CpuBytes.create({ data: bytes, rowPitch: 256, format: "RgbaU8" });
  const { ptr, size } = frame.describe();
  assert.equal(size, BigInt(bytes.byteLength));
  bytes[1000] = 0xab; // written after create, seen through the handle's address
  const view = new Deno.UnsafePointerView(Deno.UnsafePointer.create(ptr)!);
  assert.equal(view.getUint8(1000), 0xab);
});

Deno.test("CpuBytes aliases a typed array's window, not its whole buffer", () => {
  const buffer = new ArrayBuffer(4096);
  using frame = CpuBytes.create({
    data: new Uint8Array(buffer, 1024, 1024),
    rowPitch: 64,
    format: "R16U",
  });
  const whole = Deno.UnsafePointer.value(Deno.UnsafePointer.of(buffer));
  assert.equal(frame.describe().ptr, BigInt(whole) + 1024n);
  assert.equal(frame.describe().size, 1024n);
});

Deno.test({
  name: "CpuBytes keeps its buffer alive until the last release",
  ignore: !gc,
  async fn() {
    let frame: CpuBytes | undefined;
    let clone: CpuBytes | undefined;
    const ref = (() => {
      const data = new Uint8Array(1 << 20);
      frame = CpuBytes.create({ data, rowPitch: 4096, format: "RgbaU8" });
      return new WeakRef(data);
    })();
    clone = frame!.clone();
    frame!.release();
    await collect();
    assert.ok(ref.deref(), "buffer collected while a clone lives");
    clone.release();
    clone = frame = undefined;
    await collect();
    assert.equal(ref.deref(), undefined);
  },
});

Deno.test({
  name: "GpuResource wrappers collected without release() are released",
  ignore: !gc,
  async fn() {
    const before = liveHandles();
    (() => {
      for (let i = 0; i < 100; i++) VkBufferHandle.create(buffer());
    })();
    assert.equal(liveHandles(), before + 100);
    await collect();
    assert.equal(liveHandles(), before);
  },
});

Deno.test("GpuResource.intoRaw() gives the reference away and fromRaw() adopts it", () => {
  const image = VkImage.create(valid("VkImage"));
  const raw = image.intoRaw();
  assert.equal(image.released, true);
  assert.throws(() => image.describe(), ReleasedError);
  const back = GpuResource.fromRaw(raw);
  assert.ok(back instanceof VkImage);
  assert.equal(back.unsafeHandle, raw);
  assert.equal(back.refcount, 1);
  back.release();
  assert.throws(() => GpuResource.fromRaw(raw), ReleasedError);
});

Deno.test("GpuResource works with using: released at the end of the block", () => {
  const before = liveHandles();
  {
    using _r = VkBufferHandle.create(buffer());
    assert.equal(liveHandles(), before + 1);
  }
  assert.equal(liveHandles(), before);
});

Deno.test("VkImage.slotRelease() stores the value into the producer's gate", () => {
  const gate = new BigUint64Array(1);
  using image = VkImage.create({
    image: 7n,
    rowPitch: 256,
    slotRelease: { gate: Deno.UnsafePointer.of(gate), value: 42n },
  });
  assert.equal(gate[0], 0n);
  image.slotRelease();
  assert.equal(gate[0], 42n);
});

Deno.test("GpuResource has a custom inspect that shows its fields or that it was released", () => {
  const r = VkBufferHandle.create(buffer());
  assert.match(Deno.inspect(r), new RegExp(`^VkBufferHandle .*size: ${buffer().size}n`, "s"));
  r.release();
  assert.equal(Deno.inspect(r), "VkBufferHandle { released }");
});

Deno.test("a keep-alive made here is released once when a Worker makes the last release", async () => {
  let released = 0;
  const { promise, resolve } = Promise.withResolvers<void>();
  const frame = CpuBytes.create(rgba(), {
    keepAlive: {
      release: () => {
        released++;
        resolve();
      },
    },
  });
  const worker = new Worker(new URL("./_support/release_worker.ts", import.meta.url), {
    type: "module",
  });
  const done = new Promise((r) => (worker.onmessage = r));
  worker.postMessage(frame.intoRaw());
  await done;
  await promise; // the main isolate learns of the release by polling
  worker.terminate();
  assert.equal(released, 1);
});

Deno.test("a keep-alive whose release releases another handle: both run exactly once", () => {
  const ran: string[] = [];
  const inner = VkBufferHandle.create(buffer(), {
    keepAlive: { release: () => ran.push("inner") },
  });
  const outer = VkBufferHandle.create(buffer(), {
    keepAlive: {
      release: () => {
        ran.push("outer");
        inner.release();
      },
    },
  });
  outer.release();
  assert.deepEqual(ran, ["outer", "inner"]);
});

Deno.test("create() refuses a takeOwnership that is not a boolean", () => {
  assert.throws(
    () => VkBufferHandle.create(buffer(), { takeOwnership: "false" } as never),
    { code: "INVALID_VALUE", field: "options.takeOwnership" },
  );
});
