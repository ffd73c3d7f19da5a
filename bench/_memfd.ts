// memfds for the DmaBufHandle benchmark: the tests' libc helper
// (tests/_support/libc.ts), loaded only on Linux, where memfds exist.

const libc = Deno.build.os === "linux" ? await import("../tests/_support/libc.ts") : undefined;

/** A new close-on-exec memfd of `size` bytes, or -1 where there is none. */
export function memfd(size: number): number {
  return libc ? libc.memfd(size) : -1;
}

/** Closes an fd memfd() made. */
export function closeFd(fd: number): void {
  if (libc && fd >= 0) libc.close(fd);
}
