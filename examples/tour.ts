// A first tour of gpures: a producer makes frames, a consumer takes them as
// handles (never copies), and every handle is released exactly once.
//
//   deno task demo        (or: deno run --allow-ffi --allow-env examples/tour.ts)

import {
  CpuBytes,
  CpuPlanes,
  GlTextureHandle,
  type GpuResource,
  liveHandles,
  PixelFormat,
  ReleasedError,
  VkImage,
} from "../mod.ts";

const width = 1920, height = 1080;

// The producer: a decoded RGBA frame in a JS buffer. The handle aliases it.
const pixels = new Uint8Array(width * height * 4).fill(0x7f);
const frame = CpuBytes.create(
  { data: pixels, rowPitch: width * 4, format: "RgbaU8", width, height },
  { keepAlive: { release: () => console.log("producer: frame buffer may be reused now") } },
);
console.log("producer made", frame);

// The consumer takes its own reference; the producer drops its own.
function consume(resource: GpuResource<unknown>): GpuResource<unknown> {
  const mine = resource.clone();
  console.log(`consumer holds ${mine.kind}, refcount ${mine.refcount}`);
  return mine;
}
const held = consume(frame);
frame.release();
console.log("producer released; the consumer still reads", JSON.stringify(held));

// Same memory, no copy: the handle's address is the buffer's.
const address = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(pixels)));
console.log("aliased, not copied:", (held.describe() as { ptr: bigint }).ptr === address);
held.release();

// A two-plane NV12 frame, one buffer per plane, sized from the format table.
const nv12 = PixelFormat.info("NV12");
const planes = nv12.planes.map((_, i) => {
  const extent = PixelFormat.planeExtent("NV12", i, width, height);
  const rowPitch = extent.width * nv12.planes[i].bytesPerSample;
  return { data: new Uint8Array(rowPitch * extent.height), rowPitch };
});
{
  using yuv = CpuPlanes.create({ format: "NV12", planes });
  console.log(
    "NV12 planes:",
    yuv.describe().planes.map((p) => `${p.size} bytes, pitch ${p.rowPitch}`),
  );
}

// GPU handles are descriptions of native objects the producer keeps alive.
{
  using texture = GlTextureHandle.simple(3);
  using image = VkImage.create({ image: 0x1234n, rowPitch: width * 4, width, height });
  console.log(texture.toJSON(), image.toJSON());
}

// Misuse is an error, never undefined behaviour.
try {
  held.describe();
} catch (e) {
  console.log("use after release:", e instanceof ReleasedError, (e as Error).message);
}

console.log("live handles at exit:", liveHandles());
