// What handing a GPU frame over as a gpures handle costs, against copying it
// device → host → device. Run on a machine with an NVIDIA GPU (tests/gpu/run.sh does):
//
//   deno run --allow-ffi --allow-read --allow-env bench/gpu/bench.ts
//
// For 1080p and 4K frames of RGBA and NV12, a producer owns a ring of 4
// slots of Vulkan device-local memory exported as opaque fds; a CUDA consumer
// takes each frame as a VkOpaqueFd handle. Timed, per frame:
//
//   copy:     no zero copy: cuMemcpyDtoH + cuMemcpyHtoD through pinned memory
//             (the frame lives in cuMemAlloc memory), synchronised each frame.
//   import:   every frame: VkOpaqueFd.create (gpures dups the producer's fd),
//             dupFd, cuImportExternalMemory + cuExternalMemoryGetMappedBuffer,
//             a CudaPtr2D over the mapping, then release, unmap, destroy.
//   cached:   steady state of the ring: the producer hands a clone of its
//             slot's handle; the consumer keys its cache on the handle's fd
//             identity (fstat st_dev:st_ino of describe().fd where each slot
//             has its own inode, else the handle's fd number), so per frame
//             it pays only gpures operations: clone, describe, fstat, a cached
//             CudaPtr2D's clone and release, slotRelease, release.
//   cached+dup: the same, keyed on the open file of a dupFd() (compared with
//             kcmp(KCMP_FILE) to an fd kept per cached import, then closed):
//             a key that holds even where the producer re-creates handles.
//
// Prints a table and, last, one line "BENCH_JSON {...}" with every figure.

import { CudaPtr2D, liveHandles, load, PixelFormat, VkOpaqueFd } from "../../mod.ts";
import { cudaVersionString, openProbe, type Probe, uuidString } from "../../tests/gpu/probe.ts";

const RING = 4;
const IMPORT_FRAMES = 200;
const CACHED_FRAMES = 20000;
const COPY_FRAMES = 50;

interface Config {
  label: string;
  width: number;
  height: number;
  format: "RgbaU8" | "NV12";
}

const configs: Config[] = [
  { label: "1080p RGBA", width: 1920, height: 1080, format: "RgbaU8" },
  { label: "1080p NV12", width: 1920, height: 1080, format: "NV12" },
  { label: "4K RGBA", width: 3840, height: 2160, format: "RgbaU8" },
  { label: "4K NV12", width: 3840, height: 2160, format: "NV12" },
];

interface Row {
  label: string;
  bytes: number;
  copyUs: number;
  copyD2hUs: number;
  copyH2dUs: number;
  d2dUs: number;
  importUs: number;
  importHandleUs: number;
  importMapUs: number;
  importTeardownUs: number;
  cachedUs: number;
  cachedDupUs: number | null;
  ratioCopyOverImport: number;
  ratioCopyOverCached: number;
  ratioCopyOverCachedDup: number | null;
  check: string;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function bench(probe: Probe, uuid: Uint8Array, c: Config): Row {
  const info = PixelFormat.info(c.format);
  const rowPitch = c.width * info.planes[0].bytesPerSample;
  const bytes = Number(PixelFormat.frameSize(c.format, c.width, c.height, rowPitch));
  const offsets = c.format === "NV12" ? [0, rowPitch * c.height] : [0];

  // ---- copy: the frame in plain CUDA memory, copied out and back in.
  const src = probe.cuAlloc(bytes), dst = probe.cuAlloc(bytes), pinned = probe.cuPinnedAlloc(bytes);
  probe.cuFill(src, bytes, 7);
  const copy = probe.cuBenchCopy(src, dst, pinned, bytes, COPY_FRAMES);
  const copyOk = probe.cuCheck(dst, bytes, 7) === 0n;
  probe.cuPinnedFree(pinned);
  probe.cuFree(src);
  probe.cuFree(dst);

  // ---- the producer's ring: device-local exported memory, one fd per slot.
  const slots = Array.from({ length: RING }, () => probe.vkExport(bytes, "device", true));
  const descOf = (i: number) => ({
    fd: slots[i].fd,
    size: slots[i].allocationSize,
    memoryTypeIndex: slots[i].memoryTypeIndex,
    offset: 0,
    dedicated: slots[i].dedicated,
    width: c.width,
    height: c.height,
    format: c.format,
    deviceUuid: uuid,
  });
  const ptr2d = (ptr: bigint) =>
    CudaPtr2D.create({
      ptr,
      rowPitch,
      planeByteOffsets: offsets,
      width: c.width,
      height: c.height,
      deviceUuid: uuid,
    });

  // ---- import: every frame is imported and mapped afresh.
  const handleNs: number[] = [],
    mapNs: number[] = [],
    teardownNs: number[] = [],
    totalNs: number[] = [];
  for (let i = -RING; i < IMPORT_FRAMES; i++) {
    const s = ((i % RING) + RING) % RING;
    const t0 = probe.now();
    const h = VkOpaqueFd.create(descOf(s)); // gpures dups the producer's fd
    const fd = h.dupFd();
    const d = h.describe();
    const t1 = probe.now();
    const m = probe.cuImportFd(fd, d.size, d.dedicated, d.offset, bytes);
    const t2 = probe.now();
    const frame = ptr2d(m.ptr);
    frame.release();
    h.release();
    const t3 = probe.now();
    probe.cuUnimport(m.ext, m.ptr);
    const t4 = probe.now();
    if (i < 0) continue; // warm-up
    handleNs.push(Number(t1 - t0 + t3 - t2));
    mapNs.push(Number(t2 - t1));
    teardownNs.push(Number(t4 - t3));
    totalNs.push(Number(t4 - t0));
  }

  // ---- cached: long-lived producer handles; the consumer caches imports by fd identity.
  const gates = new BigUint64Array(RING).fill(1n);
  const gateAt = (i: number) =>
    BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(gates))) + BigInt(8 * i);
  const producer = slots.map((_, i) =>
    VkOpaqueFd.create({ ...descOf(i), slotRelease: { gate: gateAt(i), value: 1n } }, {
      takeOwnership: true,
    })
  );
  const id = new BigUint64Array(4);
  const inodes = new Set(producer.map((h) => {
    probe.fdIdentityInto(h.describe().fd, id);
    return `${id[0]}:${id[1]}`;
  }));
  // fstat identifies a slot only where every exported fd is its own inode.
  const distinct = inodes.size === RING;
  let kcmpNote = "kcmp works";
  try {
    probe.fdSameFile(producer[0].describe().fd, producer[0].describe().fd);
  } catch (e) {
    kcmpNote = `kcmp unavailable: ${(e as Error).message}`;
  }
  interface Entry {
    ext: bigint;
    ptr: bigint;
    frame: CudaPtr2D; // what the next CUDA stage receives a clone of
    refFd: number; // a dupFd() kept open, for kcmp
    slot: number;
  }
  const byKey = new Map<string, Entry>();
  const entries: Entry[] = [];
  const importSlot = (h: VkOpaqueFd, slot: number, size: bigint, dedicated: boolean): Entry => {
    const m = probe.cuImportFd(h.dupFd(), size, dedicated, 0n, bytes);
    const e = { ...m, frame: ptr2d(m.ptr), refFd: h.dupFd(), slot };
    entries.push(e);
    return e;
  };
  // Key: fstat's st_dev:st_ino of the handle's fd where distinct, else the handle's fd number
  // (stable while the producer keeps its slot handles).
  const viaFd = (h: VkOpaqueFd, s: number): Entry => {
    const d = h.describe();
    probe.fdIdentityInto(d.fd, id);
    const key = distinct ? `${id[0]}:${id[1]}` : `fd${d.fd}`;
    let e = byKey.get(key);
    if (!e) byKey.set(key, e = importSlot(h, s, d.size, d.dedicated));
    return e;
  };
  // Key: the open file itself: a dupFd() compared (kcmp) with each cached import's fd.
  const viaDup = (h: VkOpaqueFd, s: number): Entry => {
    const fd = h.dupFd();
    try {
      for (const e of entries) if (probe.fdSameFile(fd, e.refFd)) return e;
    } finally {
      probe.fdClose(fd);
    }
    const d = h.describe();
    return importSlot(h, s, d.size, d.dedicated);
  };
  const runCached = (frames: number, find: (h: VkOpaqueFd, s: number) => Entry): number => {
    let t0 = 0n;
    for (let i = -RING; i < frames; i++) {
      if (i === 0) t0 = probe.now();
      const s = ((i % RING) + RING) % RING;
      // producer: its slot is free once the consumer released it; it hands over a clone
      if (gates[s] !== 1n) throw new Error(`slot ${s} was not released`);
      gates[s] = 0n;
      const h = producer[s].clone();
      // consumer
      const e = find(h, s);
      if (e.slot !== s) throw new Error(`frame of slot ${s} found the import of slot ${e.slot}`);
      const frame = e.frame.clone();
      frame.release();
      h.slotRelease();
      h.release();
    }
    return Number(probe.now() - t0) / frames / 1e3;
  };
  const cachedUs = runCached(CACHED_FRAMES, viaFd);
  const cachedDupUs = kcmpNote === "kcmp works" ? runCached(CACHED_FRAMES, viaDup) : null;
  if (entries.length !== RING) throw new Error(`${entries.length} imports, not ${RING}`);

  // Zero copy, checked once: Vulkan's queue writes slot 0, CUDA reads it through the cached import.
  probe.vkWrite(slots[0].slot, bytes, 0x3c, true);
  const slot0 = entries.find((e) => e.slot === 0)!;
  const zeroCopyOk = probe.cuCheck(slot0.ptr, bytes, 0x3c) === 0n &&
    probe.cuCheck(slot0.ptr, bytes, 0x3d) > 0n;

  for (const e of entries) {
    e.frame.release();
    probe.fdClose(e.refFd);
    probe.cuUnimport(e.ext, e.ptr);
  }
  for (const h of producer) h.release();
  for (const s of slots) probe.vkFree(s.slot);

  const copyUs = copy.roundTrip;
  const importUs = median(totalNs) / 1e3;
  return {
    label: c.label,
    bytes,
    copyUs,
    copyD2hUs: copy.d2h,
    copyH2dUs: copy.h2d,
    d2dUs: copy.d2d,
    importUs,
    importHandleUs: median(handleNs) / 1e3,
    importMapUs: median(mapNs) / 1e3,
    importTeardownUs: median(teardownNs) / 1e3,
    cachedUs,
    cachedDupUs,
    ratioCopyOverImport: copyUs / importUs,
    ratioCopyOverCached: copyUs / cachedUs,
    ratioCopyOverCachedDup: cachedDupUs === null ? null : copyUs / cachedDupUs,
    check: `${copyOk ? "copy ok" : "COPY WRONG"}, ${
      zeroCopyOk ? "zero copy ok" : "ZERO COPY WRONG"
    }; fstat ${
      distinct ? "st_ino distinct per slot" : `st_ino shared (${inodes.size} for ${RING} slots)`
    }; ${kcmpNote}`,
  };
}

function fmt(n: number | null, digits = 1, unit = ""): string {
  return n === null ? "n/a" : n.toFixed(digits) + unit;
}

function main(): number {
  const opened = openProbe();
  if (opened.probe === undefined) {
    console.log(`skipped: ${opened.reason}`);
    return 0;
  }
  const { probe, cuda } = opened;
  try {
    load();
    if (probe.vkOpen(cuda.uuid) !== 0) {
      console.log(`skipped: no usable Vulkan device: ${probe.lastError()}`);
      return 0;
    }
    const vk = probe.vkInfo();
    console.log(
      `bench: ${cuda.name}, CUDA driver API ${cudaVersionString(cuda.driverVersion)}, ` +
        `Vulkan ${vk.apiVersion} driver ${vk.driverVersion}, ${uuidString(cuda.uuid)}; ` +
        `ring of ${RING} slots; medians of ${IMPORT_FRAMES} imports, means of ${CACHED_FRAMES} ` +
        `cached frames and ${COPY_FRAMES} copies`,
    );
    const rows = configs.map((c) => bench(probe, vk.uuid, c));
    const head =
      "| frame | bytes | copy D→H→D µs | (D→H, H→D) | D→D µs | import/frame µs | (handle ops, import+map, unmap) | cached µs | cached+dup µs | copy ÷ import | copy ÷ cached | copy ÷ cached+dup | checks |";
    console.log(head);
    console.log(head.replace(/[^|]+/g, " --- "));
    for (const r of rows) {
      console.log(
        `| ${r.label} | ${r.bytes} | ${fmt(r.copyUs)} | (${fmt(r.copyD2hUs)}, ${
          fmt(r.copyH2dUs)
        }) | ${fmt(r.d2dUs)} | ${fmt(r.importUs)} | (${fmt(r.importHandleUs)}, ${
          fmt(r.importMapUs)
        }, ${fmt(r.importTeardownUs)}) | ${fmt(r.cachedUs, 2)} | ${fmt(r.cachedDupUs, 2)} | ${
          fmt(r.ratioCopyOverImport, 1, "x")
        } | ${fmt(r.ratioCopyOverCached, 0, "x")} | ${
          fmt(r.ratioCopyOverCachedDup, 0, "x")
        } | ${r.check} |`,
      );
    }
    console.log(`live handles after the benchmark: ${liveHandles()}`);
    console.log(`BENCH_JSON ${JSON.stringify({ device: cuda.name, rows })}`);
    return rows.every((r) => !/WRONG/.test(r.check)) ? 0 : 1;
  } finally {
    probe.close();
  }
}

if (import.meta.main) Deno.exit(main());
