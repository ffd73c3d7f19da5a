// memfds for the DmaBufHandle benchmark, straight from libc (Linux).

const libc = Deno.build.os === "linux"
  ? Deno.dlopen("libc.so.6", {
    memfd_create: { parameters: ["buffer", "u32"], result: "i32" },
    ftruncate: { parameters: ["i32", "i64"], result: "i32" },
    close: { parameters: ["i32"], result: "i32" },
  }).symbols
  : undefined;

/** A new close-on-exec memfd of `size` bytes, or -1 where there is none. */
export function memfd(size: number): number {
  if (!libc) return -1;
  const fd = libc.memfd_create(
    new TextEncoder().encode("gpures-bench\0"),
    3, /* MFD_CLOEXEC | MFD_ALLOW_SEALING: gpures seals it against shrinking */
  );
  if (fd < 0 || libc.ftruncate(fd, BigInt(size)) !== 0) throw new Error("memfd_create failed");
  return fd;
}

/** Closes an fd memfd() made. */
export function closeFd(fd: number): void {
  if (libc && fd >= 0) libc.close(fd);
}
