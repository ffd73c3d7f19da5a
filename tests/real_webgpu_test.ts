// Deno's own WebGPU as a producer and a consumer: a WgpuTexture of a real
// GPUTexture, and a CpuBytes frame uploaded with queue.writeTexture straight
// from the memory the handle aliases.

import assert from "node:assert/strict";
import { CpuBytes, GpuResource, liveHandles, WgpuTexture } from "../mod.ts";

const adapter = await navigator.gpu?.requestAdapter().catch(() => null);
const device = await adapter?.requestDevice().catch(() => undefined);
const missing = device ? "" : "no WebGPU adapter";
if (missing) console.log(`WebGPU tests skip: ${missing}`);

const W = 64, H = 32;

function texture(usage: number): GPUTexture {
  return device!.createTexture({ size: [W, H], format: "rgba8unorm", usage });
}

async function readBack(tex: GPUTexture): Promise<Uint8Array> {
  const buffer = device!.createBuffer({
    size: W * 4 * H,
    usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ,
  });
  const encoder = device!.createCommandEncoder();
  encoder.copyTextureToBuffer({ texture: tex }, { buffer, bytesPerRow: W * 4 }, [W, H]);
  device!.queue.submit([encoder.finish()]);
  await buffer.mapAsync(GPUMapMode.READ);
  const bytes = new Uint8Array(buffer.getMappedRange()).slice();
  buffer.unmap();
  buffer.destroy();
  return bytes;
}

Deno.test({
  name: "WgpuTexture describes a real GPUTexture and holds it until the last release",
  ignore: Boolean(missing),
  fn() {
    const tex = texture(GPUTextureUsage.COPY_DST | GPUTextureUsage.COPY_SRC);
    const before = liveHandles();
    const handle = WgpuTexture.create({ texture: tex });
    const d = handle.describe();
    assert.equal(d.width, W);
    assert.equal(d.height, H);
    assert.equal(d.depthOrArrayLayers, 1);
    assert.equal(d.mipLevelCount, 1);
    assert.equal(d.sampleCount, 1);
    assert.equal(d.dimension, "2d");
    assert.equal(d.format, "rgba8unorm");
    assert.equal(d.usage, tex.usage);
    assert.equal(handle.texture, tex);
    const clone = handle.clone();
    handle.release();
    assert.equal(clone.texture, tex);
    clone.release();
    assert.equal(liveHandles(), before);
    tex.destroy();
  },
});

Deno.test({
  name: "WgpuTexture adopted from a raw handle still finds its texture in this isolate",
  ignore: Boolean(missing),
  fn() {
    const tex = texture(GPUTextureUsage.COPY_DST);
    const raw = WgpuTexture.create({ texture: tex }).intoRaw();
    const back = GpuResource.fromRaw(raw) as WgpuTexture;
    assert.equal(back.texture, tex);
    back.release();
    tex.destroy();
  },
});

Deno.test({
  name: "CpuBytes uploads to WebGPU straight from the memory it aliases",
  ignore: Boolean(missing),
  async fn() {
    const pixels = new Uint8Array(W * 4 * H).map((_, i) => (i * 7 + 3) & 0xff);
    using frame = CpuBytes.create({
      data: pixels,
      rowPitch: W * 4,
      format: "RgbaU8",
      width: W,
      height: H,
    });
    // The consumer knows only the handle: it reads the memory through the handle's address.
    const { ptr, size, rowPitch } = frame.describe();
    const aliased = Deno.UnsafePointerView.getArrayBuffer(
      Deno.UnsafePointer.create(ptr)!,
      Number(size),
    );
    const tex = texture(GPUTextureUsage.COPY_DST | GPUTextureUsage.COPY_SRC);
    device!.queue.writeTexture({ texture: tex }, aliased, { bytesPerRow: rowPitch }, [W, H]);
    assert.deepEqual(await readBack(tex), pixels);
    tex.destroy();
  },
});

Deno.test({
  name: "WgpuTexture adopted in a Worker is described there but yields no GPUTexture",
  ignore: Boolean(missing),
  async fn() {
    const tex = texture(GPUTextureUsage.COPY_DST);
    let released = 0;
    const { promise, resolve } = Promise.withResolvers<void>();
    const handle = WgpuTexture.create({ texture: tex }, {
      keepAlive: { release: () => (released++, resolve()) },
    });
    const worker = new Worker(new URL("./_support/release_worker.ts", import.meta.url), {
      type: "module",
    });
    const reply = new Promise<MessageEvent>((r) => (worker.onmessage = r));
    worker.postMessage(handle.intoRaw());
    const { data } = await reply;
    await promise;
    worker.terminate();
    assert.equal(data.kind, "WgpuTexture");
    assert.equal(data.description.width, W);
    assert.equal(data.textureError, "UNAVAILABLE");
    assert.equal(released, 1);
    tex.destroy();
  },
});
