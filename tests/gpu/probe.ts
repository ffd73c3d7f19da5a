// Deno bindings of the GPU probe (tests/gpu_helpers/probe/gpu_probe.c, built
// by run.sh into tests/gpu/build/libgpuprobe.so): real CUDA, Vulkan and GL objects for the GPU tests
// and the benchmark. openProbe() never throws: without the built probe, a
// CUDA driver or a GPU it returns the reason to skip.

/** The probe's C functions (tests/gpu_helpers/probe/gpu_probe.c). */
export const symbols = {
  gp_last_error: { parameters: [], result: "pointer" },
  gp_now_ns: { parameters: [], result: "u64" },
  gp_cuda_open: { parameters: ["buffer", "i32"], result: "i32" },
  gp_kernel_note: { parameters: [], result: "pointer" },
  gp_cuda_info: { parameters: ["buffer", "u32", "buffer", "buffer"], result: "i32" },
  gp_cu_alloc: { parameters: ["u64", "buffer"], result: "i32" },
  gp_cu_free: { parameters: ["u64"], result: "i32" },
  gp_cu_alloc_pitch: { parameters: ["u64", "u64", "u32", "buffer"], result: "i32" },
  gp_cu_pointer_info: { parameters: ["u64", "buffer", "buffer"], result: "i32" },
  gp_cu_fill: { parameters: ["u64", "u64", "u32"], result: "i32" },
  gp_cu_check: { parameters: ["u64", "u64", "u32", "buffer"], result: "i32" },
  gp_cu_check_host: { parameters: ["u64", "u64", "u32", "buffer"], result: "i32" },
  gp_cu_fill_2d: { parameters: ["u64", "u64", "u32", "u32", "u32"], result: "i32" },
  gp_cu_check_2d_host: {
    parameters: ["u64", "u64", "u32", "u32", "u32", "buffer"],
    result: "i32",
  },
  gp_cu_surface_create: { parameters: ["u32", "u32", "buffer"], result: "i32" },
  gp_cu_surface_query: { parameters: ["u64", "buffer", "buffer"], result: "i32" },
  gp_cu_surface_fill: { parameters: ["u64", "u32", "u32", "u32"], result: "i32" },
  gp_cu_array_check: { parameters: ["u64", "u32", "u32", "u32", "buffer"], result: "i32" },
  gp_cu_surface_destroy: { parameters: ["u64", "u64"], result: "i32" },
  gp_cu_import_fd: { parameters: ["i32", "u64", "u32", "u64", "u64", "buffer"], result: "i32" },
  gp_cu_unimport: { parameters: ["u64", "u64"], result: "i32" },
  gp_cu_pinned_alloc: { parameters: ["u64", "buffer"], result: "i32" },
  gp_cu_pinned_free: { parameters: ["u64"], result: "i32" },
  gp_cu_bench_copy: { parameters: ["u64", "u64", "u64", "u64", "u32", "buffer"], result: "i32" },
  gp_fd_identity: { parameters: ["i32", "buffer", "buffer", "u32"], result: "i32" },
  gp_fd_is_open: { parameters: ["i32"], result: "i32" },
  gp_fd_close: { parameters: ["i32"], result: "i32" },
  gp_vk_open: { parameters: ["buffer"], result: "i32" },
  gp_vk_info: { parameters: ["buffer", "u32", "buffer", "buffer"], result: "i32" },
  gp_vk_export: { parameters: ["u64", "u32", "u32", "buffer"], result: "i32" },
  gp_vk_free: { parameters: ["u32"], result: "i32" },
  gp_vk_host_flush: { parameters: [], result: "i32" },
  gp_cu_evict_l2: { parameters: [], result: "i32" },
  gp_fd_same_file: { parameters: ["i32", "i32"], result: "i32" },
  gp_vk_write: { parameters: ["u32", "u64", "u32", "u32"], result: "i32" },
  gp_vk_check: { parameters: ["u32", "u64", "u32", "u32", "buffer"], result: "i32" },
  gp_vk_image: { parameters: ["u32", "u32", "u32", "buffer"], result: "i32" },
  gp_vk_image_check: {
    parameters: ["u64", "u64", "u64", "u32", "u32", "u32", "buffer"],
    result: "i32",
  },
  gp_vk_image_destroy: { parameters: ["u64", "u64"], result: "i32" },
  gp_gl_open: { parameters: ["buffer", "u32", "buffer"], result: "i32" },
  gp_gl_texture: { parameters: ["u32", "u32", "u32", "buffer"], result: "i32" },
  gp_gl_texture_query: { parameters: ["u32", "buffer"], result: "i32" },
  gp_gl_texture_check: { parameters: ["u32", "u32", "u32", "u32", "buffer"], result: "i32" },
  gp_gl_texture_delete: { parameters: ["u32"], result: "i32" },
  gp_cu_gl_access: {
    parameters: ["u32", "u32", "u32", "u32", "u32", "u32", "buffer"],
    result: "i32",
  },
  gp_sync_note: { parameters: [], result: "pointer" },
  gp_vk_semaphore_props: { parameters: ["u32", "u32", "buffer"], result: "i32" },
  gp_vk_semaphore_create: { parameters: ["u32", "u32", "u64", "buffer"], result: "i32" },
  gp_vk_semaphore_export: { parameters: ["u64", "u32", "buffer"], result: "i32" },
  gp_vk_semaphore_value: { parameters: ["u64", "buffer"], result: "i32" },
  gp_vk_semaphore_destroy: { parameters: ["u64"], result: "i32" },
  gp_cu_semaphore_import: { parameters: ["i32", "u32", "buffer"], result: "i32" },
  gp_cu_semaphore_destroy: { parameters: ["u64"], result: "i32" },
  gp_sync_source: { parameters: ["u64", "u32"], result: "i32" },
  gp_sync_vk_to_cuda: {
    parameters: ["u32", "u64", "u64", "u32", "u32", "u64", "u64", "u64", "u32", "u32", "buffer"],
    result: "i32",
  },
  gp_sync_cuda_to_vk: {
    parameters: ["u32", "u64", "u64", "u32", "u64", "u64", "u64", "u64", "buffer"],
    result: "i32",
  },
  gp_sync_read_check: { parameters: ["u64", "u32", "buffer"], result: "i32" },
  gp_cu_event_after_work: { parameters: ["u64", "u32", "buffer"], result: "i32" },
  gp_cu_event_query: { parameters: ["u64"], result: "i32" },
  gp_cu_event_destroy: { parameters: ["u64"], result: "i32" },
  gp_vk_sync_fd_export: { parameters: ["u32", "u64", "u32", "buffer"], result: "i32" },
  gp_vk_queue_idle: { parameters: [], result: "i32" },
  gp_gpures_open: { parameters: ["buffer"], result: "i32" },
  gp_gpures_async_wait: { parameters: ["u64", "i64", "buffer"], result: "i32" },
  gp_gpures_bench: { parameters: ["i32", "u64", "u32", "buffer"], result: "i32" },
  gp_gpures_cuda_bench: { parameters: ["buffer", "u32", "u32", "u32", "buffer"], result: "i32" },
  gp_pool_fill_signal: { parameters: ["u64", "u64", "u32", "u64", "u64"], result: "i32" },
  gp_pool_wait_check: {
    parameters: ["u64", "u64", "u32", "u64", "u64", "u32", "buffer"],
    result: "i32",
  },
  gp_pool_counts: { parameters: ["u32", "buffer"], result: "i32" },
  gp_cu_mem_info: { parameters: ["buffer"], result: "i32" },
  gp_cu_ipc_handle: { parameters: ["u64", "buffer"], result: "i32" },
  gp_cu_ipc_open_check: { parameters: ["buffer", "u64", "u32", "buffer"], result: "i32" },
  gp_close_all: { parameters: [], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

type ProbeSymbols = Deno.DynamicLibrary<typeof symbols>["symbols"];

/** Where run.sh puts the probe library and the kernels. */
export const PROBE_LIB: URL = new URL("./build/libgpuprobe.so", import.meta.url);
export const KERNELS: URL = new URL("./build/kernels.fatbin", import.meta.url);

/** A probe call that failed, with the probe's message (a CUDA, Vulkan or GL error). */
export class ProbeError extends Error {
  constructor(readonly fn: string, readonly rc: number, message: string) {
    super(`${fn} failed (${rc}): ${message}`);
  }
}

/** What CUDA says about its device. */
export interface CudaInfo {
  name: string;
  driverVersion: number;
  deviceCount: number;
  computeCapability: string;
  kernelsLoaded: boolean;
  /** "loaded <path>", or why the kernels did not load. */
  kernelNote: string;
  totalMiB: number;
  glInteropEntryPoint: boolean;
  uuid: Uint8Array;
}

/** What Vulkan says about the device it opened. */
export interface VkInfo {
  name: string;
  instance: bigint;
  physicalDevice: bigint;
  device: bigint;
  vendorId: number;
  apiVersion: string;
  driverVersion: string;
  dmaBufExtension: boolean;
  uuid: Uint8Array;
}

/** Which Vulkan memory an exported buffer lives in. */
export type ExportMemory = "device" | "host" | "sysmem";

/** One exported Vulkan buffer. */
export interface VkExport {
  slot: number;
  fd: number;
  memoryTypeIndex: number;
  allocationSize: bigint;
  buffer: bigint;
  memory: bigint;
  propertyFlags: number;
  dedicated: boolean;
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const cstr = (b: Uint8Array) => dec.decode(b.subarray(0, Math.max(0, b.indexOf(0))));
const u64 = (n: bigint | number) => BigInt(n);

const cstr0 = (p: Deno.PointerValue) => p === null ? "" : Deno.UnsafePointerView.getCString(p);

function vkVersion(v: number): string {
  return `${v >>> 22}.${(v >>> 12) & 0x3ff}.${v & 0xfff}`;
}

/** The probe library, opened. Every method throws ProbeError on failure. */
export class Probe {
  readonly #s: ProbeSymbols;
  readonly #lib: Deno.DynamicLibrary<typeof symbols>;

  constructor(lib: Deno.DynamicLibrary<typeof symbols>) {
    this.#lib = lib;
    this.#s = lib.symbols;
  }

  #check(fn: string, rc: number): void {
    if (rc !== 0) {
      const p = this.#s.gp_last_error();
      throw new ProbeError(fn, rc, p === null ? "" : Deno.UnsafePointerView.getCString(p));
    }
  }

  /** The probe's last error message. */
  lastError(): string {
    const p = this.#s.gp_last_error();
    return p === null ? "" : Deno.UnsafePointerView.getCString(p);
  }

  /** CLOCK_MONOTONIC in nanoseconds. */
  now(): bigint {
    return this.#s.gp_now_ns();
  }

  /** Opens CUDA; returns the probe's status (-1: no libcuda.so.1, -2: no device). */
  cudaOpen(kernels: string, ordinal = 0): number {
    return this.#s.gp_cuda_open(enc.encode(kernels + "\0"), ordinal);
  }

  cudaInfo(): CudaInfo {
    const name = new Uint8Array(256), out = new Int32Array(8), uuid = new Uint8Array(16);
    this.#check("gp_cuda_info", this.#s.gp_cuda_info(name, name.length, out, uuid));
    return {
      name: cstr(name),
      driverVersion: out[0],
      deviceCount: out[1],
      computeCapability: `${out[2]}.${out[3]}`,
      kernelsLoaded: out[4] === 1,
      kernelNote: cstr0(this.#s.gp_kernel_note()),
      totalMiB: out[5],
      glInteropEntryPoint: out[6] === 1,
      uuid,
    };
  }

  cuAlloc(size: bigint | number): bigint {
    const out = new BigUint64Array(1);
    this.#check("gp_cu_alloc", this.#s.gp_cu_alloc(u64(size), out));
    return out[0];
  }

  cuFree(ptr: bigint): void {
    this.#check("gp_cu_free", this.#s.gp_cu_free(ptr));
  }

  /** cuMemAllocPitch: the allocation and its pitch. */
  cuAllocPitch(rowBytes: number, rows: number, elementBytes = 4): { ptr: bigint; pitch: bigint } {
    const out = new BigUint64Array(2);
    this.#check(
      "gp_cu_alloc_pitch",
      this.#s.gp_cu_alloc_pitch(u64(rowBytes), u64(rows), elementBytes, out),
    );
    return { ptr: out[0], pitch: out[1] };
  }

  /** cuMemGetAddressRange and the owning device's UUID. */
  cuPointerInfo(ptr: bigint): { base: bigint; size: bigint; uuid: Uint8Array } {
    const out = new BigUint64Array(2), uuid = new Uint8Array(16);
    this.#check("gp_cu_pointer_info", this.#s.gp_cu_pointer_info(ptr, out, uuid));
    return { base: out[0], size: out[1], uuid };
  }

  /** Whether CUDA still knows the address (cuMemGetAddressRange succeeds). */
  cuIsAllocated(ptr: bigint): boolean {
    const out = new BigUint64Array(2), uuid = new Uint8Array(16);
    return this.#s.gp_cu_pointer_info(ptr, out, uuid) === 0;
  }

  /** A CUDA kernel writes the linear pattern. */
  cuFill(ptr: bigint, n: bigint | number, seed: number): void {
    this.#check("gp_cu_fill", this.#s.gp_cu_fill(ptr, u64(n), seed));
  }

  /** A CUDA kernel counts bytes unlike the linear pattern. */
  cuCheck(ptr: bigint, n: bigint | number, seed: number): bigint {
    const out = new BigUint64Array(1);
    this.#check("gp_cu_check", this.#s.gp_cu_check(ptr, u64(n), seed, out));
    return out[0];
  }

  /** cuMemcpyDtoH, then the host counts bytes unlike the linear pattern. */
  cuCheckHost(ptr: bigint, n: bigint | number, seed: number): bigint {
    const out = new BigUint64Array(1);
    this.#check("gp_cu_check_host", this.#s.gp_cu_check_host(ptr, u64(n), seed, out));
    return out[0];
  }

  /** A CUDA kernel writes one plane of the 2D pattern at `pitch`. */
  cuFill2D(ptr: bigint, pitch: bigint | number, rowBytes: number, rows: number, seed: number) {
    this.#check("gp_cu_fill_2d", this.#s.gp_cu_fill_2d(ptr, u64(pitch), rowBytes, rows, seed));
  }

  /** cuMemcpy2D of one plane at `pitch` to the host, checked there. */
  cuCheck2D(
    ptr: bigint,
    pitch: bigint | number,
    rowBytes: number,
    rows: number,
    seed: number,
  ): bigint {
    const out = new BigUint64Array(1);
    this.#check(
      "gp_cu_check_2d_host",
      this.#s.gp_cu_check_2d_host(ptr, u64(pitch), rowBytes, rows, seed, out),
    );
    return out[0];
  }

  /** An RGBA8 CUDA array with a surface object. */
  cuSurfaceCreate(width: number, height: number): { surface: bigint; array: bigint } {
    const out = new BigUint64Array(2);
    this.#check("gp_cu_surface_create", this.#s.gp_cu_surface_create(width, height, out));
    return { surface: out[0], array: out[1] };
  }

  /** cuSurfObjectGetResourceDesc + cuArray3DGetDescriptor. */
  cuSurfaceQuery(surface: bigint): {
    resourceType: number;
    width: number;
    height: number;
    arrayFormat: number;
    channels: number;
    flags: number;
    array: bigint;
  } {
    const out = new Uint32Array(6), arr = new BigUint64Array(1);
    this.#check("gp_cu_surface_query", this.#s.gp_cu_surface_query(surface, out, arr));
    return {
      resourceType: out[0],
      width: out[1],
      height: out[2],
      arrayFormat: out[3],
      channels: out[4],
      flags: out[5],
      array: arr[0],
    };
  }

  cuSurfaceFill(surface: bigint, width: number, height: number, seed: number): void {
    this.#check("gp_cu_surface_fill", this.#s.gp_cu_surface_fill(surface, width, height, seed));
  }

  cuArrayCheck(array: bigint, width: number, height: number, seed: number): bigint {
    const out = new BigUint64Array(1);
    this.#check("gp_cu_array_check", this.#s.gp_cu_array_check(array, width, height, seed, out));
    return out[0];
  }

  cuSurfaceDestroy(surface: bigint, array: bigint): void {
    this.#check("gp_cu_surface_destroy", this.#s.gp_cu_surface_destroy(surface, array));
  }

  /** cuImportExternalMemory(OPAQUE_FD) + cuExternalMemoryGetMappedBuffer; CUDA takes the fd. */
  cuImportFd(
    fd: number,
    size: bigint,
    dedicated: boolean,
    offset: bigint,
    mapSize: bigint | number,
  ): { ext: bigint; ptr: bigint } {
    const out = new BigUint64Array(2);
    this.#check(
      "gp_cu_import_fd",
      this.#s.gp_cu_import_fd(fd, size, dedicated ? 1 : 0, offset, u64(mapSize), out),
    );
    return { ext: out[0], ptr: out[1] };
  }

  cuUnimport(ext: bigint, ptr: bigint): void {
    this.#check("gp_cu_unimport", this.#s.gp_cu_unimport(ext, ptr));
  }

  cuPinnedAlloc(size: bigint | number): bigint {
    const out = new BigUint64Array(1);
    this.#check("gp_cu_pinned_alloc", this.#s.gp_cu_pinned_alloc(u64(size), out));
    return out[0];
  }

  cuPinnedFree(p: bigint): void {
    this.#check("gp_cu_pinned_free", this.#s.gp_cu_pinned_free(p));
  }

  /** µs per frame: device→host→device through pinned memory, its halves, and device→device. */
  cuBenchCopy(
    src: bigint,
    dst: bigint,
    pinned: bigint,
    n: number,
    iters: number,
  ): { roundTrip: number; d2h: number; h2d: number; d2d: number } {
    const out = new Float64Array(4);
    this.#check("gp_cu_bench_copy", this.#s.gp_cu_bench_copy(src, dst, pinned, u64(n), iters, out));
    return { roundTrip: out[0], d2h: out[1], h2d: out[2], d2d: out[3] };
  }

  /** fstat of an fd and what /proc/self/fd says it is. */
  fdIdentity(fd: number): { dev: bigint; ino: bigint; mode: number; link: string } {
    const out = new BigUint64Array(4), link = new Uint8Array(256);
    this.#check("gp_fd_identity", this.#s.gp_fd_identity(fd, out, link, link.length));
    return { dev: out[0], ino: out[1], mode: Number(out[2]), link: cstr(link) };
  }

  /** Fast fd identity for the benchmark: writes [dev, ino] into `out`. */
  fdIdentityInto(fd: number, out: BigUint64Array): void {
    this.#check("gp_fd_identity", this.#s.gp_fd_identity(fd, out, null, 0));
  }

  fdIsOpen(fd: number): boolean {
    return this.#s.gp_fd_is_open(fd) === 1;
  }

  fdClose(fd: number): void {
    this.#check("gp_fd_close", this.#s.gp_fd_close(fd));
  }

  /** Opens Vulkan on the device whose UUID is `uuid`; returns the probe's status. */
  vkOpen(uuid: Uint8Array): number {
    return this.#s.gp_vk_open(uuid);
  }

  vkInfo(): VkInfo {
    const name = new Uint8Array(256), out = new BigUint64Array(8), uuid = new Uint8Array(16);
    this.#check("gp_vk_info", this.#s.gp_vk_info(name, name.length, out, uuid));
    const dv = Number(out[5]);
    return {
      name: cstr(name),
      instance: out[0],
      physicalDevice: out[1],
      device: out[2],
      vendorId: Number(out[3]),
      apiVersion: vkVersion(Number(out[4])),
      // NVIDIA packs the driver version as 10.8.8.6 bits.
      driverVersion: `${dv >>> 22}.${(dv >>> 14) & 0xff}.${(dv >>> 6) & 0xff}`,
      dmaBufExtension: out[6] === 1n,
      uuid,
    };
  }

  /**
   * A VkBuffer in exportable memory and its opaque fd (the caller owns the fd).
   * memory: "device" (device-local, not mappable), "host" (host-visible,
   * device-local where the driver offers it), "sysmem" (host-visible system memory).
   */
  vkExport(size: bigint | number, memory: ExportMemory, dedicated: boolean): VkExport {
    const out = new BigUint64Array(8);
    const kind = { device: 0, host: 1, sysmem: 2 }[memory];
    this.#check("gp_vk_export", this.#s.gp_vk_export(u64(size), kind, dedicated ? 1 : 0, out));
    return {
      slot: Number(out[0]),
      fd: Number(out[1]),
      memoryTypeIndex: Number(out[2]),
      allocationSize: out[3],
      buffer: out[4],
      memory: out[5],
      propertyFlags: Number(out[6]),
      dedicated: out[7] === 1n,
    };
  }

  vkFree(slot: number): void {
    this.#check("gp_vk_free", this.#s.gp_vk_free(slot));
  }

  /** An empty Vulkan submission whose barrier makes host writes available to the device. */
  vkHostFlush(): void {
    this.#check("gp_vk_host_flush", this.#s.gp_vk_host_flush());
  }

  /** Writes 512 MiB of scratch memory, so nothing else stays in the GPU's L2. */
  cuEvictL2(): void {
    this.#check("gp_cu_evict_l2", this.#s.gp_cu_evict_l2());
  }

  // ------------------------------------------------------------ CUDA pools

  /** Queued on the probe's stream: the fill kernel writes `seed`, then `cuSemaphore` is signalled to `value`. */
  poolFillSignal(ptr: bigint, n: number, seed: number, cuSemaphore: bigint, value: bigint): void {
    this.#check(
      "gp_pool_fill_signal",
      this.#s.gp_pool_fill_signal(ptr, u64(n), seed, cuSemaphore, value),
    );
  }

  /**
   * Queued on the probe's stream: a wait for `value` on `cuSemaphore`, the check
   * kernel counting into frame `index`'s count, and a CUevent recorded after
   * (one of a ring of 64 the probe owns): the frame's release fence.
   */
  poolWaitCheck(a: {
    ptr: bigint;
    n: number;
    seed: number;
    cuSemaphore: bigint;
    value: bigint;
    index: number;
  }): { event: bigint; context: bigint; device: number } {
    const out = new BigUint64Array(3);
    this.#check(
      "gp_pool_wait_check",
      this.#s.gp_pool_wait_check(a.ptr, u64(a.n), a.seed, a.cuSemaphore, a.value, a.index, out),
    );
    return { event: out[0], context: out[1], device: Number(out[2]) };
  }

  /** Waits for the probe's stream, then the per-frame mismatch counts of frames 0 .. count-1. */
  poolCounts(count: number): BigUint64Array {
    const out = new BigUint64Array(count);
    this.#check("gp_pool_counts", this.#s.gp_pool_counts(count, out));
    return out;
  }

  /** cuMemGetInfo. */
  cuMemInfo(): { free: number; total: number } {
    const out = new BigUint64Array(2);
    this.#check("gp_cu_mem_info", this.#s.gp_cu_mem_info(out));
    return { free: Number(out[0]), total: Number(out[1]) };
  }

  /** cuIpcGetMemHandle of a cuMemAlloc pointer (64 bytes). */
  cuIpcHandle(ptr: bigint): Uint8Array {
    const out = new Uint8Array(64);
    this.#check("gp_cu_ipc_handle", this.#s.gp_cu_ipc_handle(ptr, out));
    return out;
  }

  /** cuIpcOpenMemHandle timed, a check kernel over `n` bytes, cuIpcCloseMemHandle timed. */
  cuIpcOpenCheck(handle: Uint8Array, n: number, seed: number): {
    openNs: number;
    closeNs: number;
    mismatches: bigint;
  } {
    const out = new BigUint64Array(3);
    this.#check("gp_cu_ipc_open_check", this.#s.gp_cu_ipc_open_check(handle, u64(n), seed, out));
    return { openNs: Number(out[0]), closeNs: Number(out[1]), mismatches: out[2] };
  }

  /** Whether two fds name the same open file (kcmp); throws where the kernel refuses kcmp. */
  fdSameFile(a: number, b: number): boolean {
    const r = this.#s.gp_fd_same_file(a, b);
    if (r < 0) this.#check("gp_fd_same_file", r);
    return r === 1;
  }

  /** Vulkan writes the linear pattern: on its queue (viaGpu) or through the mapping. */
  vkWrite(slot: number, n: bigint | number, seed: number, viaGpu: boolean): void {
    this.#check("gp_vk_write", this.#s.gp_vk_write(slot, u64(n), seed, viaGpu ? 1 : 0));
  }

  /** Vulkan reads the memory (on its queue, or through the mapping) and counts mismatches. */
  vkCheck(slot: number, n: bigint | number, seed: number, viaGpu: boolean): bigint {
    const out = new BigUint64Array(1);
    this.#check("gp_vk_check", this.#s.gp_vk_check(slot, u64(n), seed, viaGpu ? 1 : 0, out));
    return out[0];
  }

  /** A linear RGBA8 VkImage filled with the 2D pattern. */
  vkImage(width: number, height: number, seed: number): {
    image: bigint;
    rowPitch: bigint;
    memory: bigint;
    vkFormat: number;
    offset: bigint;
    size: bigint;
  } {
    const out = new BigUint64Array(6);
    this.#check("gp_vk_image", this.#s.gp_vk_image(width, height, seed, out));
    return {
      image: out[0],
      rowPitch: out[1],
      memory: out[2],
      vkFormat: Number(out[3]),
      offset: out[4],
      size: out[5],
    };
  }

  vkImageCheck(
    memory: bigint,
    offset: bigint,
    rowPitch: bigint | number,
    width: number,
    height: number,
    seed: number,
  ): bigint {
    const out = new BigUint64Array(1);
    this.#check(
      "gp_vk_image_check",
      this.#s.gp_vk_image_check(memory, offset, u64(rowPitch), width, height, seed, out),
    );
    return out[0];
  }

  vkImageDestroy(image: bigint, memory: bigint): void {
    this.#check("gp_vk_image_destroy", this.#s.gp_vk_image_destroy(image, memory));
  }

  /** Opens EGL on the NVIDIA device with a current OpenGL context; returns the probe's status. */
  glOpen(): {
    rc: number;
    renderer: string;
    display: bigint;
    context: bigint;
    cudaOrdinal: number;
  } {
    const name = new Uint8Array(512), out = new BigInt64Array(4);
    const rc = this.#s.gp_gl_open(name, name.length, out);
    return {
      rc,
      renderer: cstr(name),
      display: BigInt.asUintN(64, out[0]),
      context: BigInt.asUintN(64, out[1]),
      cudaOrdinal: Number(out[2]),
    };
  }

  glTexture(width: number, height: number, seed: number): number {
    const out = new Uint32Array(1);
    this.#check("gp_gl_texture", this.#s.gp_gl_texture(width, height, seed, out));
    return out[0];
  }

  glTextureQuery(name: number): { width: number; height: number; internalFormat: number } {
    const out = new Int32Array(3);
    this.#check("gp_gl_texture_query", this.#s.gp_gl_texture_query(name, out));
    return { width: out[0], height: out[1], internalFormat: out[2] };
  }

  glTextureCheck(name: number, width: number, height: number, seed: number): bigint {
    const out = new BigUint64Array(1);
    this.#check("gp_gl_texture_check", this.#s.gp_gl_texture_check(name, width, height, seed, out));
    return out[0];
  }

  glTextureDelete(name: number): void {
    this.#check("gp_gl_texture_delete", this.#s.gp_gl_texture_delete(name));
  }

  /** CUDA-GL interop: registers the texture and reads (checks) or writes the 2D pattern. */
  cuGlAccess(
    name: number,
    target: number,
    width: number,
    height: number,
    seed: number,
    write: boolean,
  ): bigint {
    const out = new BigUint64Array(1);
    this.#check(
      "gp_cu_gl_access",
      this.#s.gp_cu_gl_access(name, target, width, height, seed, write ? 1 : 0, out),
    );
    return out[0];
  }

  // ------------------------------------------------------------- SyncPoints

  /** Why the semaphore checks cannot run on this Vulkan device ("" when they can). */
  syncNote(): string {
    return cstr0(this.#s.gp_sync_note());
  }

  /**
   * vkGetPhysicalDeviceExternalSemaphoreProperties for a handle type (1 opaque
   * fd, 16 sync fd), timeline or binary.
   */
  vkSemaphoreProps(
    handleType: number,
    timeline: boolean,
  ): { compatible: number; exportable: boolean; importable: boolean } {
    const out = new Uint32Array(3);
    this.#check(
      "gp_vk_semaphore_props",
      this.#s.gp_vk_semaphore_props(handleType, timeline ? 1 : 0, out),
    );
    return { compatible: out[0], exportable: (out[1] & 1) !== 0, importable: (out[1] & 2) !== 0 };
  }

  /** A VkSemaphore: timeline (from `initial`) or binary, exportable as `handleTypes` (0: not). */
  vkSemaphoreCreate(timeline: boolean, handleTypes: number, initial = 0n): bigint {
    const out = new BigUint64Array(1);
    this.#check(
      "gp_vk_semaphore_create",
      this.#s.gp_vk_semaphore_create(timeline ? 1 : 0, handleTypes, initial, out),
    );
    return out[0];
  }

  /** vkGetSemaphoreFdKHR (1 opaque fd, 16 sync fd); the caller owns the fd. */
  vkSemaphoreExport(semaphore: bigint, handleType: number): number {
    const out = new Int32Array(1);
    this.#check(
      "gp_vk_semaphore_export",
      this.#s.gp_vk_semaphore_export(semaphore, handleType, out),
    );
    return out[0];
  }

  /** vkGetSemaphoreCounterValue. */
  vkSemaphoreValue(semaphore: bigint): bigint {
    const out = new BigUint64Array(1);
    this.#check("gp_vk_semaphore_value", this.#s.gp_vk_semaphore_value(semaphore, out));
    return out[0];
  }

  /** Waits for the queue, then vkDestroySemaphore. */
  vkSemaphoreDestroy(semaphore: bigint): void {
    this.#check("gp_vk_semaphore_destroy", this.#s.gp_vk_semaphore_destroy(semaphore));
  }

  /** cuImportExternalSemaphore (TIMELINE_SEMAPHORE_FD, or OPAQUE_FD); CUDA takes the fd. */
  cuSemaphoreImport(fd: number, timeline: boolean): bigint {
    const out = new BigUint64Array(1);
    this.#check(
      "gp_cu_semaphore_import",
      this.#s.gp_cu_semaphore_import(fd, timeline ? 1 : 0, out),
    );
    return out[0];
  }

  cuSemaphoreDestroy(ext: bigint): void {
    this.#check("gp_cu_semaphore_destroy", this.#s.gp_cu_semaphore_destroy(ext));
  }

  /** The new frame's pattern in device-local Vulkan memory (the source of the hand-offs). */
  syncSource(n: number, seed: number): void {
    this.#check("gp_sync_source", this.#s.gp_sync_source(u64(n), seed));
  }

  /**
   * Vulkan copies the new frame into the exported slot and signals `value`;
   * the CUDA stream waits on the imported semaphore for it (when `wait`), then
   * reads the frame (gp_sync_vk_to_cuda).
   */
  syncVkToCuda(a: {
    slot: number;
    ptr: bigint;
    n: number;
    oldSeed: number;
    seed: number;
    semaphore: bigint;
    cuSemaphore: bigint;
    value: bigint;
    wait: boolean;
    repeats: number;
  }): {
    kernelMismatches: bigint | null;
    copiedMismatches: bigint;
    roundTripNs: number;
    valueWhenQueued: bigint;
    queueNs: number;
    valueAtEnd: bigint;
  } {
    const out = new BigUint64Array(6);
    this.#check(
      "gp_sync_vk_to_cuda",
      this.#s.gp_sync_vk_to_cuda(
        a.slot,
        a.ptr,
        u64(a.n),
        a.oldSeed,
        a.seed,
        a.semaphore,
        a.cuSemaphore,
        a.value,
        a.wait ? 1 : 0,
        a.repeats,
        out,
      ),
    );
    return {
      kernelMismatches: out[0] === 0xffffffffffffffffn ? null : out[0],
      copiedMismatches: out[1],
      roundTripNs: Number(out[2]),
      valueWhenQueued: out[3],
      queueNs: Number(out[4]),
      valueAtEnd: out[5],
    };
  }

  /**
   * A CUDA kernel writes the frame and signals `cuValue`; a Vulkan submission
   * waits for it, copies the frame to host-visible memory and signals `vkValue`.
   * Nothing waits here (gp_sync_cuda_to_vk).
   */
  syncCudaToVk(a: {
    slot: number;
    ptr: bigint;
    n: number;
    seed: number;
    semaphore: bigint;
    cuSemaphore: bigint;
    cuValue: bigint;
    vkValue: bigint;
  }): { valueAfterSubmit: bigint; callNs: number; cudaBusyAtReturn: boolean } {
    const out = new BigUint64Array(3);
    this.#check(
      "gp_sync_cuda_to_vk",
      this.#s.gp_sync_cuda_to_vk(
        a.slot,
        a.ptr,
        u64(a.n),
        a.seed,
        a.semaphore,
        a.cuSemaphore,
        a.cuValue,
        a.vkValue,
        out,
      ),
    );
    return { valueAfterSubmit: out[0], callNs: Number(out[1]), cudaBusyAtReturn: out[2] === 1n };
  }

  /** The host counts the bytes Vulkan copied back that are unlike the pattern. */
  syncReadCheck(n: number, seed: number): bigint {
    const out = new BigUint64Array(1);
    this.#check("gp_sync_read_check", this.#s.gp_sync_read_check(u64(n), seed, out));
    return out[0];
  }

  /** A CUevent recorded after `passes` memsets of `bytes` on the probe's stream. */
  cuEventAfterWork(bytes: number, passes: number): {
    event: bigint;
    context: bigint;
    device: number;
    queryAtRecord: number;
    queueNs: number;
  } {
    const out = new BigUint64Array(5);
    this.#check(
      "gp_cu_event_after_work",
      this.#s.gp_cu_event_after_work(u64(bytes), passes, out),
    );
    return {
      event: out[0],
      context: out[1],
      device: Number(out[2]),
      queryAtRecord: Number(out[3]),
      queueNs: Number(out[4]),
    };
  }

  /** cuEventQuery: 0 reached, 600 not ready. */
  cuEventQuery(event: bigint): number {
    return this.#s.gp_cu_event_query(event);
  }

  cuEventDestroy(event: bigint): void {
    this.#check("gp_cu_event_destroy", this.#s.gp_cu_event_destroy(event));
  }

  /**
   * A binary semaphore signalled by a submission still running, exported as a
   * sync fd (-1 when the driver says it had already completed); the caller owns the fd.
   */
  vkSyncFdExport(slot: number, n: number, repeats: number): {
    fd: number;
    semaphore: bigint;
    ns: number;
  } {
    const out = new BigInt64Array(3);
    this.#check("gp_vk_sync_fd_export", this.#s.gp_vk_sync_fd_export(slot, u64(n), repeats, out));
    return { fd: Number(out[0]), semaphore: BigInt.asUintN(64, out[1]), ns: Number(out[2]) };
  }

  vkQueueIdle(): void {
    this.#check("gp_vk_queue_idle", this.#s.gp_vk_queue_idle());
  }

  /** Opens the gpures library at `path` in the probe (the one the tests loaded); returns the probe's status. */
  gpuresOpen(path: string): number {
    return this.#s.gp_gpures_open(enc.encode(path + "\0"));
  }

  /**
   * From C: gpures_sync_wait_async on a new event queue, then
   * gpures_event_queue_wait and gpures_event_queue_poll.
   */
  gpuresAsyncWait(sync: bigint, timeoutNs: bigint): {
    type: number;
    status: number;
    tokenMatches: boolean;
    ns: number;
    events: number;
    reachedBefore: boolean;
  } {
    const out = new BigUint64Array(6);
    this.#check("gp_gpures_async_wait", this.#s.gp_gpures_async_wait(sync, timeoutNs, out));
    return {
      type: Number(out[0]),
      status: Number(out[1]),
      tokenMatches: out[2] === 1n,
      ns: Number(out[3]),
      events: Number(out[4]),
      reachedBefore: out[5] === 1n,
    };
  }

  /** From C, ns per frame: VkSemaphoreFd create+clone+2 releases; sync_poll and sync_wait(0) on a VkSemaphore. */
  gpuresBench(fd: number, vkSemaphore: bigint, iters: number): {
    semaphoreFdHandoff: number;
    poll: number;
    waitReached: number;
  } {
    const out = new Float64Array(3);
    this.#check("gp_gpures_bench", this.#s.gp_gpures_bench(fd, vkSemaphore, iters, out));
    return { semaphoreFdHandoff: out[0], poll: out[1], waitReached: out[2] };
  }

  /**
   * From C, a new CUDA importer takes `iters` frames cycling over `frames`
   * (raw VkOpaqueFd handles), then `uncached` imports each after a forget
   * (gp_gpures_cuda_bench). Times in ns; stats as read before its destroy.
   */
  gpuresCudaBench(frames: bigint[], iters: number, uncached: number): {
    cachedMedian: number;
    cachedP99: number;
    cachedWithReleaseMedian: number;
    uncachedMedian: number;
    stats: { imports: number; hits: number; freed: number; cached: number; failed: number };
    wrongCachedFlags: number;
  } {
    const out = new Float64Array(10);
    this.#check(
      "gp_gpures_cuda_bench",
      this.#s.gp_gpures_cuda_bench(
        new BigUint64Array(frames),
        frames.length,
        iters,
        uncached,
        out,
      ),
    );
    return {
      cachedMedian: out[0],
      cachedP99: out[1],
      cachedWithReleaseMedian: out[2],
      uncachedMedian: out[3],
      stats: { imports: out[4], hits: out[5], freed: out[6], cached: out[7], failed: out[8] },
      wrongCachedFlags: out[9],
    };
  }

  /** Frees everything the probe made and closes the library. */
  close(): void {
    this.#s.gp_close_all();
    this.#lib.close();
  }
}

/** The probe with CUDA open, or why the GPU checks must be skipped. */
export type Opened = { probe: Probe; cuda: CudaInfo; reason?: undefined } | {
  probe?: undefined;
  cuda?: undefined;
  reason: string;
};

function pathOf(url: URL): string {
  return decodeURIComponent(url.pathname);
}

/** Opens the probe and CUDA; never throws. */
export function openProbe(): Opened {
  if (Deno.build.os !== "linux") {
    return { reason: `the GPU probe is Linux-only (${Deno.build.os})` };
  }
  try {
    Deno.statSync(PROBE_LIB);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      return {
        reason:
          "tests/gpu/build/libgpuprobe.so is not built (tests/gpu/run.sh builds it on a machine with an NVIDIA GPU)",
      };
    }
    return { reason: `cannot look for the GPU probe: ${(e as Error).message.split("\n")[0]}` };
  }
  let lib: Deno.DynamicLibrary<typeof symbols>;
  try {
    lib = Deno.dlopen(PROBE_LIB, symbols);
  } catch (e) {
    return { reason: `cannot open the GPU probe: ${(e as Error).message.split("\n")[0]}` };
  }
  const probe = new Probe(lib);
  let kernels = "";
  try {
    Deno.statSync(KERNELS);
    kernels = pathOf(KERNELS);
  } catch {
    // no kernels.fatbin (no nvcc): the probe uploads patterns instead of running kernels
  }
  const rc = probe.cudaOpen(kernels);
  if (rc !== 0) {
    const why = probe.lastError();
    probe.close();
    if (rc === -1) return { reason: `no CUDA driver: ${why}` };
    if (rc === -2) return { reason: `no CUDA GPU: ${why}` };
    return { reason: `CUDA did not open: ${why}` };
  }
  try {
    return { probe, cuda: probe.cudaInfo() };
  } catch (e) {
    probe.close();
    return { reason: `CUDA did not answer: ${(e as Error).message}` };
  }
}

/** "GPU-xxxxxxxx-xxxx-..." as nvidia-smi prints a UUID. */
export function uuidString(u: Uint8Array): string {
  const h = [...u].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${
    h.slice(20)
  }`;
}

/** CUDA's driver version number as "13.0". */
export function cudaVersionString(v: number): string {
  return `${Math.floor(v / 1000)}.${(v % 1000) / 10}`;
}
