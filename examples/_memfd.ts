// memfds for the examples, straight from libc (Linux): the stand-in for a
// dma-buf exporter on machines without a GPU driver. A real pipeline gets
// its fds from a decoder, a camera (V4L2) or a GPU API instead.

const libc = Deno.build.os === "linux"
  ? Deno.dlopen("libc.so.6", {
    memfd_create: { parameters: ["buffer", "u32"], result: "i32" },
    ftruncate: { parameters: ["i32", "i64"], result: "i32" },
  }).symbols
  : undefined;

/** A new close-on-exec memfd of `size` bytes. Linux only. */
export function memfd(size: number, name = "gpures-example"): number {
  if (!libc) throw new Error(`memfds exist on Linux, not on ${Deno.build.os}`);
  const fd = libc.memfd_create(
    new TextEncoder().encode(name + "\0"),
    3, /* MFD_CLOEXEC | MFD_ALLOW_SEALING: gpures seals it against shrinking */
  );
  if (fd < 0 || libc.ftruncate(fd, BigInt(size)) !== 0) throw new Error("memfd_create failed");
  return fd;
}

/** DRM_FORMAT_ABGR8888 ("AB24"): RGBA bytes in memory, the DRM name of RgbaU8. */
export const AB24 = 0x34324241;
