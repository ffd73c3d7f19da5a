// What every kind that owns file descriptors can do besides the rest:
// duplicate an fd for an importer, and map the memory behind it.

import { mapHandle, type MapOptions, type Mapping, unmapMapping } from "./_mapping.ts";
import { GpuResource } from "./gpu_resource.ts";

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
