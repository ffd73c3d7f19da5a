// A decoder -> renderer -> encoder pipeline whose stages pass frames as
// gpures handles. The decoder writes into a ring of CPU slots; the renderer
// (Deno's WebGPU) uploads straight from the memory the handle aliases and
// renders into a texture it hands on as a WgpuTexture (without WebGPU, a CPU
// renderer hands on CpuBytes of its own ring instead); the encoder reads
// that texture back into its own ring and "encodes" it (a checksum). Every
// hand-off is a handle: the frame's memory is never copied between stages,
// which the demo shows by the identity of the addresses.
//
//   deno task demo     (or: deno run --allow-ffi --allow-env examples/pipeline.ts)

import { CpuBytes, type GpuResource, liveHandles, load, WgpuTexture } from "../mod.ts";

const W = 1280, H = 720, FRAMES = 60, SLOTS = 3;
const bytesPerRow = W * 4;

// ------------------------------------------------------------------ decoder
/** Decodes into a ring of slots; a slot is reused only after its frame's last release. */
class Decoder {
  readonly slots = Array.from({ length: SLOTS }, () => new Uint8Array(bytesPerRow * H));
  readonly free = [...this.slots.keys()];
  readonly addresses = this.slots.map((s) =>
    BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(s)))
  );

  decode(n: number): CpuBytes {
    const index = this.free.shift();
    if (index === undefined) throw new Error("decoder: every slot is still in use downstream");
    const slot = this.slots[index];
    const words = new Uint32Array(slot.buffer);
    for (let y = 0; y < H; y++) {
      words.fill(0xff000000 | ((y + n * 4) & 0xff) << 8 | (n * 3) & 0xff, y * W, (y + 1) * W);
    }
    const t = performance.now();
    const frame = CpuBytes.create(
      { data: slot, rowPitch: bytesPerRow, format: "RgbaU8", width: W, height: H },
      { keepAlive: { release: () => this.free.push(index) } },
    );
    handleNs += (performance.now() - t) * 1e6;
    return frame;
  }
}

/** The decoder's handle calls (create with a keep-alive, describe, release), warm, in µs. */
function hotHandleUs(): number {
  const slot = new Uint8Array(bytesPerRow * H);
  const once = () => {
    const f = CpuBytes.create(
      { data: slot, rowPitch: bytesPerRow, format: "RgbaU8", width: W, height: H },
      { keepAlive: { release() {} } },
    );
    f.describe();
    f.release();
  };
  for (let i = 0; i < 2000; i++) once(); // past V8's tiers
  const t = performance.now();
  for (let i = 0; i < 2000; i++) once();
  return (performance.now() - t) * 1000 / 2000 * 2; // two hand-offs a frame
}

// ----------------------------------------------------------------- renderer
const SHADER = `
@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var dst: texture_storage_2d<rgba8unorm, write>;
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x >= ${W}u || id.y >= ${H}u) { return; }
  let c = textureLoad(src, vec2<i32>(id.xy), 0);
  textureStore(dst, vec2<i32>(id.xy), vec4<f32>(1.0 - c.rgb, 1.0));
}`;

/** A renderer takes a frame handle and hands on a handle of what it drew. */
interface Renderer {
  readonly api: string;
  render(frame: CpuBytes): GpuResource<unknown>;
}

/** An encoder takes a rendered handle and "encodes" it (a checksum stands in for a codec). */
interface Encoder {
  encode(rendered: GpuResource<unknown>): Promise<number>;
}

/** Renders with WebGPU: inverts the colours of each frame into a texture of its own. */
class WebGpuRenderer implements Renderer {
  readonly api = "WebGPU";
  readonly input: GPUTexture;
  readonly outputs: GPUTexture[];
  readonly pipeline: GPUComputePipeline;
  next = 0;

  constructor(readonly device: GPUDevice) {
    this.input = device.createTexture({
      size: [W, H],
      format: "rgba8unorm",
      usage: GPUTextureUsage.COPY_DST | GPUTextureUsage.TEXTURE_BINDING,
    });
    this.outputs = Array.from({ length: SLOTS }, () =>
      device.createTexture({
        size: [W, H],
        format: "rgba8unorm",
        usage: GPUTextureUsage.STORAGE_BINDING | GPUTextureUsage.COPY_SRC,
      }));
    this.pipeline = device.createComputePipeline({
      layout: "auto",
      compute: { module: device.createShaderModule({ code: SHADER }), entryPoint: "main" },
    });
  }

  render(frame: CpuBytes): WgpuTexture {
    // The renderer knows only the handle: it reads the frame where the handle points.
    const { ptr, size, rowPitch } = frame.describe();
    const memory = Deno.UnsafePointerView.getArrayBuffer(
      Deno.UnsafePointer.create(ptr)!,
      Number(size),
    );
    this.device.queue.writeTexture({ texture: this.input }, memory, { bytesPerRow: rowPitch }, [
      W,
      H,
    ]);
    const output = this.outputs[this.next++ % SLOTS];
    const encoder = this.device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(this.pipeline);
    pass.setBindGroup(
      0,
      this.device.createBindGroup({
        layout: this.pipeline.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: this.input.createView() },
          { binding: 1, resource: output.createView() },
        ],
      }),
    );
    pass.dispatchWorkgroups(Math.ceil(W / 8), Math.ceil(H / 8));
    pass.end();
    this.device.queue.submit([encoder.finish()]);
    return WgpuTexture.create({ texture: output });
  }
}

// ------------------------------------------------------------------ encoder
/** Reads rendered textures back and checksums them. */
class WebGpuEncoder implements Encoder {
  readonly staging: GPUBuffer;
  constructor(readonly device: GPUDevice) {
    this.staging = device.createBuffer({
      size: bytesPerRow * H,
      usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ,
    });
  }

  async encode(rendered: GpuResource<unknown>): Promise<number> {
    const encoder = this.device.createCommandEncoder();
    encoder.copyTextureToBuffer({ texture: (rendered as WgpuTexture).texture }, {
      buffer: this.staging,
      bytesPerRow,
    }, [W, H]);
    this.device.queue.submit([encoder.finish()]);
    await this.staging.mapAsync(GPUMapMode.READ);
    const sum = checksum(new Uint32Array(this.staging.getMappedRange()));
    this.staging.unmap();
    return sum;
  }
}

function checksum(words: Uint32Array): number {
  let sum = 0;
  for (let i = 0; i < words.length; i += 97) sum = (sum * 31 + words[i]) >>> 0;
  return sum;
}

/** The words of CPU memory a handle names, read through the handle alone. */
function wordsOf(resource: GpuResource<unknown>): Uint32Array {
  const { ptr, size } = resource.describe() as { ptr: bigint; size: bigint };
  return new Uint32Array(
    Deno.UnsafePointerView.getArrayBuffer(Deno.UnsafePointer.create(ptr)!, Number(size)),
  );
}

/** The CPU fallback when there is no WebGPU: the same work into a ring of CPU buffers. */
class CpuRenderer implements Renderer {
  readonly api = "CPU";
  readonly outputs = Array.from({ length: SLOTS }, () => new Uint32Array(W * H));
  next = 0;

  render(frame: CpuBytes): CpuBytes {
    const input = wordsOf(frame), output = this.outputs[this.next++ % SLOTS];
    for (let i = 0; i < input.length; i++) output[i] = 0xff000000 | ~input[i] & 0xffffff;
    return CpuBytes.create({
      data: output,
      rowPitch: bytesPerRow,
      format: "RgbaU8",
      width: W,
      height: H,
    });
  }
}

class CpuEncoder implements Encoder {
  encode(rendered: GpuResource<unknown>): Promise<number> {
    return Promise.resolve(checksum(wordsOf(rendered)));
  }
}

// ------------------------------------------------------------------ the run
const adapter = await navigator.gpu?.requestAdapter().catch(() => null);
const device = await adapter?.requestDevice().catch(() => undefined);
const renderer: Renderer = device ? new WebGpuRenderer(device) : new CpuRenderer();
const encoder: Encoder = device ? new WebGpuEncoder(device) : new CpuEncoder();
console.log(
  `pipeline: ${W}x${H} RGBA, ${FRAMES} frames, ${SLOTS} decoder slots, rendering with ${renderer.api}${
    device ? ` on ${adapter!.info.description || "an adapter"}` : " (no WebGPU adapter here)"
  }`,
);

load(); // once, up front, so the first frame does not pay for finding the library
let handleNs = 0; // time spent in gpures calls during the current frame
const perFrameNs: number[] = [];
const decoder = new Decoder();
const start = performance.now();
for (let n = 0; n < FRAMES; n++) {
  const frame = decoder.decode(n); // stage 1 hands on a CpuBytes handle
  const address = frame.describe().ptr;
  if (!decoder.addresses.includes(address)) throw new Error("the frame was copied");
  const rendered = renderer.render(frame); // stage 2 takes it, hands on a WgpuTexture
  let t = performance.now();
  frame.release(); // the decoder's slot returns to its ring
  handleNs += (performance.now() - t) * 1e6;
  const checksum = await encoder.encode(rendered); // stage 3 takes it
  const renderedFormat = (rendered.describe() as { format: string }).format;
  t = performance.now();
  rendered.release();
  handleNs += (performance.now() - t) * 1e6;
  perFrameNs.push(handleNs);
  handleNs = 0;
  if (n < 3 || n === FRAMES - 1) {
    console.log(
      `frame ${String(n).padStart(2)}: decoder slot 0x${
        address.toString(16)
      } (same memory, no copy)` +
        ` -> ${rendered.kind} ${renderedFormat} -> checksum ${checksum.toString(16)}`,
    );
  }
}
const ms = performance.now() - start;
const median = perFrameNs.sort((a, b) => a - b)[FRAMES >> 1];
console.log(
  `per frame: ${(ms / FRAMES).toFixed(2)} ms end to end; gpures handle work (create, describe ` +
    `and release at both hand-offs) ${(median / 1000).toFixed(1)} µs (median)`,
);
console.log(
  `  the same calls in a warm loop: ${hotHandleUs().toFixed(1)} µs a frame; the figure above ` +
    `pays for re-warming V8 and the caches after each frame's rendering (docs/benchmarks.md)`,
);
console.log(
  `a copy of each frame between stages would move ${
    (bytesPerRow * H / 1e6).toFixed(1)
  } MB per hand-off; the handles moved 8 bytes`,
);
console.log(
  `live handles at the end: ${liveHandles()}, free decoder slots: ${decoder.free.length}/${SLOTS}`,
);
device?.destroy();
