// The consumer of examples/frame_server.ts, in a process of its own:
// receives pooled frames, checks each against the seal the producer put in
// its metadata (FNV-1a on the CPU, plane 0's sum on the GPU through Deno's
// WebGPU, or on the CPU without an adapter), optionally hands what it checked
// to an ffmpeg encoder, and releases it, which gives the slot back to the
// producer's pool. Its report is the last line of its stdout.
//
//   (spawned by frame_server.ts) _frame_consumer.ts PATH FORMAT W H SLOW_MS ffmpeg|no-ffmpeg

import {
  Channel,
  type DmaBufHandle,
  liveHandles,
  liveMappings,
  type PixelFormatName,
  type PlaneView,
} from "../mod.ts";
import {
  clockUs,
  collectGarbage,
  type ConsumerReport,
  decodeSeal,
  FFMPEG_PIX_FMT,
  fnv1a,
  planeSum,
} from "./frame_server.ts";

/** Sums plane 0 of each frame. */
interface Summer {
  readonly name: string;
  sum(plane: PlaneView): Promise<number>;
}

const cpuSummer: Summer = { name: "CPU check", sum: (p) => Promise.resolve(planeSum(p)) };

/** Texel formats that hold plane 0's samples as integers, and the channels to add. */
const TEXTURES: Partial<Record<PixelFormatName, [GPUTextureFormat, string]>> = {
  NV12: ["r8uint", "t.r"],
  P010LE: ["r16uint", "t.r"],
  RgbaU8: ["rgba8uint", "t.r + t.g + t.b + t.a"],
};

/**
 * Uploads plane 0 into a texture straight from the received mapping (its
 * stride as bytesPerRow: no repacking) and sums it in a compute pass: one
 * workgroup-local sum per 16x16 tile, one global atomic per tile.
 */
class GpuSummer implements Summer {
  readonly name: string;
  readonly #texture: GPUTexture;
  readonly #total: GPUBuffer;
  readonly #readback: GPUBuffer;
  readonly #pipeline: GPUComputePipeline;
  readonly #bindGroup: GPUBindGroup;

  constructor(
    readonly device: GPUDevice,
    adapter: string,
    format: PixelFormatName,
    w: number,
    h: number,
  ) {
    const [texel, channels] = TEXTURES[format]!;
    this.name = `WebGPU (${adapter}): plane 0 as ${texel}, summed in a compute pass`;
    this.#texture = device.createTexture({
      size: [w, h],
      format: texel,
      usage: GPUTextureUsage.COPY_DST | GPUTextureUsage.TEXTURE_BINDING,
    });
    this.#total = device.createBuffer({
      size: 4,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    this.#readback = device.createBuffer({
      size: 4,
      usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ,
    });
    this.#pipeline = device.createComputePipeline({
      layout: "auto",
      compute: {
        module: device.createShaderModule({ code: shader(channels) }),
        entryPoint: "main",
      },
    });
    this.#bindGroup = device.createBindGroup({
      layout: this.#pipeline.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: this.#texture.createView() },
        { binding: 1, resource: { buffer: this.#total } },
      ],
    });
  }

  static async open(format: PixelFormatName, w: number, h: number): Promise<GpuSummer | null> {
    const adapter = await navigator.gpu?.requestAdapter().catch(() => null);
    const device = await adapter?.requestDevice().catch(() => null);
    if (!adapter || !device || !TEXTURES[format]) return null;
    return new GpuSummer(
      device,
      adapter.info.description || adapter.info.vendor || "an adapter",
      format,
      w,
      h,
    );
  }

  async sum(p: PlaneView): Promise<number> {
    const { device } = this;
    const strideBytes = p.stride * p.data.BYTES_PER_ELEMENT;
    device.queue.writeTexture({ texture: this.#texture }, p.data as Uint8Array<ArrayBuffer>, {
      bytesPerRow: strideBytes,
    }, [
      p.width,
      p.height,
    ]);
    const encoder = device.createCommandEncoder();
    encoder.clearBuffer(this.#total);
    const pass = encoder.beginComputePass();
    pass.setPipeline(this.#pipeline);
    pass.setBindGroup(0, this.#bindGroup);
    pass.dispatchWorkgroups(Math.ceil(p.width / 16), Math.ceil(p.height / 16));
    pass.end();
    encoder.copyBufferToBuffer(this.#total, 0, this.#readback, 0, 4);
    device.queue.submit([encoder.finish()]);
    await this.#readback.mapAsync(GPUMapMode.READ);
    const total = new Uint32Array(this.#readback.getMappedRange())[0];
    this.#readback.unmap();
    return total;
  }
}

function shader(channels: string): string {
  return `
@group(0) @binding(0) var plane: texture_2d<u32>;
@group(0) @binding(1) var<storage, read_write> total: atomic<u32>;
var<workgroup> tile: atomic<u32>;
@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(local_invocation_index) i: u32) {
  let size = textureDimensions(plane);
  if (id.x < size.x && id.y < size.y) {
    let t = textureLoad(plane, vec2<i32>(id.xy), 0);
    atomicAdd(&tile, ${channels});
  }
  workgroupBarrier();
  if (i == 0u) { atomicAdd(&total, atomicLoad(&tile)); }
}`;
}

/** An ffmpeg that encodes the frames the consumer checked (visible rows, packed). */
class Encoder {
  readonly output: string;
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;

  constructor(format: PixelFormatName, w: number, h: number) {
    this.output = `/tmp/gpures-frame-server-${Deno.pid}.mkv`;
    this.#child = new Deno.Command("ffmpeg", {
      args: [
        ...["-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo"],
        ...["-pix_fmt", FFMPEG_PIX_FMT[format]!, "-s", `${w}x${h}`, "-r", "30", "-i", "-"],
        ...["-c:v", "ffv1", this.output],
      ],
      stdin: "piped",
      stdout: "null",
      stderr: "inherit",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
  }

  /** Packs the visible rows into one new buffer: the pipe may read it after the frame went back. */
  async write(planes: PlaneView[]): Promise<void> {
    const rows = planes.flatMap((p) => {
      const bytes = new Uint8Array(p.data.buffer, p.data.byteOffset, p.data.byteLength);
      const strideBytes = p.stride * p.data.BYTES_PER_ELEMENT;
      return Array.from(
        { length: p.height },
        (_, y) => bytes.subarray(y * strideBytes, y * strideBytes + p.bytesPerRow),
      );
    });
    const packed = new Uint8Array(rows.reduce((n, row) => n + row.length, 0));
    let at = 0;
    for (const row of rows) packed.set(row, (at += row.length) - row.length);
    await this.#writer.write(packed);
  }

  async close(): Promise<void> {
    await this.#writer.close();
    const status = await this.#child.status;
    if (!status.success) throw new Error(`the encoder failed (exit code ${status.code})`);
  }
}

interface Check {
  intact: boolean;
  sequence: number;
}

/** Checks one frame against its seal; records when the consumer held its views. */
async function check(
  frame: DmaBufHandle,
  planes: PlaneView[],
  summer: Summer,
  heldUs: number,
  readyUs: number,
  report: ConsumerReport,
): Promise<Check> {
  const meta = frame.meta;
  if (!meta?.userData || meta.sequence === null) throw new Error("a frame came without its seal");
  const seal = decodeSeal(meta.userData);
  report.handoffUs.push(heldUs - Math.max(seal.sentUs, readyUs));
  report.latencyUs.push(heldUs - seal.sentUs);
  const intact = fnv1a(planes) === seal.fnv && (await summer.sum(planes[0])) === seal.sum;
  return { intact, sequence: meta.sequence };
}

async function consume(args: string[]): Promise<ConsumerReport> {
  const [path, format, w, h, slowMs, ffmpeg] = args;
  const [width, height] = [Number(w), Number(h)];
  const gpu = await GpuSummer.open(format as PixelFormatName, width, height);
  const summer = gpu ?? cpuSummer;
  const encoder = ffmpeg === "ffmpeg"
    ? new Encoder(format as PixelFormatName, width, height)
    : null;
  const report: ConsumerReport = {
    renderer: summer.name,
    received: 0,
    intact: 0,
    notIntact: [],
    missing: 0,
    handoffUs: [],
    latencyUs: [],
    releasedUs: {},
    encoded: encoder?.output ?? null,
    mappingsAfter: 0,
    handlesAfter: 0,
  };
  const channel = await Channel.connect(path, { wait: 10_000 });
  let expected = 0;
  for (;;) {
    const readyUs = clockUs(); // a frame that waited for the consumer was queued, not in transit
    const frame = await channel.receive() as DmaBufHandle | null;
    if (frame === null) break;
    try {
      const planes = channel.planes(frame);
      const { intact, sequence } = await check(frame, planes, summer, clockUs(), readyUs, report);
      report.received++;
      if (intact) report.intact++;
      else report.notIntact.push(sequence);
      report.missing += Math.max(0, sequence - expected); // frames skipped in the stream
      expected = sequence + 1;
      await encoder?.write(planes);
      if (Number(slowMs) > 0) await new Promise((resolve) => setTimeout(resolve, Number(slowMs)));
      report.releasedUs[sequence] = clockUs();
    } finally {
      frame.release(); // the slot goes back to the producer's pool
    }
  }
  channel.close();
  await encoder?.close();
  gpu?.device.destroy();
  await collectGarbage();
  report.mappingsAfter = liveMappings();
  report.handlesAfter = liveHandles();
  return report;
}

console.log(JSON.stringify(await consume(Deno.args)));
