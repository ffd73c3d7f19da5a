// What every kind that owns file descriptors can do besides the rest:
// duplicate an fd for an importer, and map the memory behind it.

import { mapHandle, type MapOptions, type Mapping, unmapMapping } from "../map/mapping.ts";
import { GpuResource } from "./gpu_resource.ts";
import { InvalidHandleError, WrongKindError } from "../errors.ts";
import { formatOfFourcc } from "../map/pixel_format.ts";
import { type PlaneMemory, type PlaneView, viewsOf } from "../map/planes.ts";

/** What planes() reads of a description: a DmaBufHandle's layout. */
interface Layout {
  fourcc: number;
  modifier: bigint;
  width: number;
  height: number;
  planes: { objectIndex: number; offset: number; stride: number }[];
}

const DRM_FORMAT_MOD_LINEAR = 0n;
const DRM_FORMAT_MOD_INVALID = 0x00ff_ffff_ffff_ffffn;

/**
 * A resource whose handle owns file descriptors (DmaBufHandle, VkOpaqueFd):
 * the memory lives as long as any fd or mapping of it, in any process.
 */
export abstract class FdResource<Description = Record<string, unknown>>
  extends GpuResource<Description> {
  /** A new close-on-exec duplicate of fd `index`, for an importer to consume. */
  dupFd(index = 0): number {
    return this.dupFdOf(index);
  }

  #mappings?: Map<number, Mapping>;

  /**
   * CPU access to the memory of fd `index`: an ArrayBuffer over the whole
   * object, `mmap()`ed shared, no copy. Writes through it are the object's;
   * on a real dma-buf the mapping is one `DMA_BUF_IOCTL_SYNC` access window
   * (START here, END at unmap). Mapping the same index again returns the same
   * buffer while this wrapper still holds it.
   *
   * Only memory that cannot shrink under the mapping is mapped: a dma-buf, or
   * a memfd sealed against shrinking (one that allows sealing is sealed
   * here). Anything else is refused unless `options.allowUnsealed` vouches
   * for its producer. So no access through the buffer can raise SIGBUS.
   *
   * The mapping lives exactly as long as the last buffer over it.
   * {@link DmaBufHandle.unmap} and this wrapper's release (or `intoRaw()`)
   * detach the buffer and unmap at once. A buffer moved away first
   * (`transfer()`, `postMessage` with transfer, a BYOB read) takes the
   * mapping along: it ends when that buffer is collected, and `map()` here
   * makes a new one.
   *
   * @example
   * ```ts
   * import { DmaBufHandle } from "@gpures/gpures";
   * const libc = Deno.dlopen("libc.so.6", {
   *   memfd_create: { parameters: ["buffer", "u32"], result: "i32" },
   *   ftruncate: { parameters: ["i32", "i64"], result: "i32" },
   * });
   * const fd = libc.symbols.memfd_create(new TextEncoder().encode("frame\0"), 3); // sealable
   * libc.symbols.ftruncate(fd, 4096n);
   * const frame = DmaBufHandle.create({
   *   fds: [fd],
   *   fourcc: 0x34324241,
   *   modifier: 0n,
   *   width: 16,
   *   height: 64,
   *   planes: [{ objectIndex: 0, offset: 0, stride: 64 }],
   * }, { takeOwnership: true });
   * const pixels = new Uint8Array(frame.map());
   * pixels[0] = 255; // seen by every process that maps the same memory
   * frame.release(); // unmaps: pixels.length is now 0
   * console.log(pixels.length); // 0
   * libc.close();
   * ```
   */
  map(index = 0, options?: MapOptions): ArrayBuffer {
    const existing = this.#mappings?.get(index);
    if (existing && !existing.buffer.detached) return existing.buffer;
    const mapping = mapHandle(this.unsafeHandle, index, this.kind, options);
    (this.#mappings ??= new Map()).set(index, mapping);
    return mapping.buffer;
  }

  /**
   * Typed views of each plane of a linear DmaBufHandle of a known fourcc,
   * over {@link FdResource.map} of each object a plane lies in (so they end
   * with the mapping: at `unmap()` or release their length becomes 0).
   *
   * @example
   * ```ts
   * import { DmaBufHandle, PixelFormat } from "@gpures/gpures";
   * const libc = Deno.dlopen("libc.so.6", {
   *   memfd_create: { parameters: ["buffer", "u32"], result: "i32" },
   *   ftruncate: { parameters: ["i32", "i64"], result: "i32" },
   * });
   * const layout = PixelFormat.layout("P010LE", 64, 32);
   * const fd = libc.symbols.memfd_create(new TextEncoder().encode("frame\0"), 3); // sealable
   * libc.symbols.ftruncate(fd, BigInt(layout.size));
   * using frame = DmaBufHandle.create({
   *   fds: [fd],
   *   format: "P010LE",
   *   modifier: 0n,
   *   width: 64,
   *   height: 32,
   *   planes: layout.planes.map((p) => ({ objectIndex: 0, offset: p.offset, stride: p.stride })),
   * }, { takeOwnership: true });
   * const [y] = frame.planes();
   * y.data[0] = 940 << 6; // 10-bit white, in the high bits
   * console.log(y.data.constructor.name, y.stride); // Uint16Array 64
   * libc.close();
   * ```
   */
  planes(options?: MapOptions): PlaneView[] {
    const d = this.#layout();
    const formatOf = formatOfFourcc(d.fourcc);
    if (!formatOf) {
      throw new InvalidHandleError(
        `Cannot view planes of ${this.kind}: fourcc 0x${
          d.fourcc.toString(16)
        } is not one the pixel format table knows`,
        "INVALID_VALUE",
        "fourcc",
      );
    }
    const memories = d.planes.map((p): PlaneMemory => {
      const buffer = this.map(p.objectIndex, options);
      return { buffer, byteOffset: 0, byteLength: buffer.byteLength };
    });
    return viewsOf(memories, formatOf.id, d.planes, d.width, d.height);
  }

  /** The plane layout of a linear DmaBufHandle: what a CPU view can read. */
  #layout(): Layout {
    const d = this.describe() as Partial<Layout>;
    if (d.fourcc === undefined || !Array.isArray(d.planes)) {
      throw new WrongKindError(
        `Cannot view planes of ${this.kind}: it has no plane layout (a DmaBufHandle has)`,
        "WRONG_KIND",
      );
    }
    if (d.modifier !== DRM_FORMAT_MOD_LINEAR && d.modifier !== DRM_FORMAT_MOD_INVALID) {
      throw new InvalidHandleError(
        `Cannot view planes of ${this.kind}: modifier 0x${
          d.modifier?.toString(16)
        } is a tiled layout, whose rows are not where a stride says`,
        "INVALID_VALUE",
        "modifier",
      );
    }
    return d as Layout;
  }

  /** Ends what {@link DmaBufHandle.map} gave for `index`, or for every index. */
  unmap(index?: number): void {
    if (!this.#mappings) return;
    const errors: unknown[] = [];
    for (const [i, mapping] of [...this.#mappings]) {
      if (index !== undefined && i !== index) continue;
      this.#mappings.delete(i);
      try {
        unmapMapping(mapping);
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length) throw errors[0];
  }

  /** Unmaps what this wrapper mapped, then drops its reference. */
  override release(): void {
    try {
      this.unmap();
    } finally {
      super.release();
    }
  }

  /** Unmaps what this wrapper mapped, then gives the reference away. */
  override intoRaw(): bigint {
    const handle = super.intoRaw();
    this.unmap();
    return handle;
  }
}
