// Real file descriptors for tests, straight from libc: memfds to hand to
// DmaBufHandle and VkOpaqueFd, and the calls that show who owns an fd. Also
// the one libc the tests, the hostile peers and the benchmarks open: `libc`
// has every call they make (Linux layouts and glibc names).

/** libc's functions, for calls the helpers below do not wrap. */
export const libc = Deno.dlopen(Deno.build.os === "darwin" ? "libc.dylib" : "libc.so.6", {
  memfd_create: { parameters: ["buffer", "u32"], result: "i32" },
  open: { parameters: ["buffer", "i32", "u32"], result: "i32" },
  ftruncate: { parameters: ["i32", "i64"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
  fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" },
  pwrite: { parameters: ["i32", "buffer", "usize", "i64"], result: "isize" },
  pread: { parameters: ["i32", "buffer", "usize", "i64"], result: "isize" },
  pipe2: { parameters: ["buffer", "i32"], result: "i32" },
  eventfd: { parameters: ["u32", "i32"], result: "i32" },
  write: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  readlink: { parameters: ["buffer", "buffer", "usize"], result: "isize" },
  unlink: { parameters: ["buffer"], result: "i32" },
  mkdir: { parameters: ["buffer", "u32"], result: "i32" },
  rmdir: { parameters: ["buffer"], result: "i32" },
  // sockets: raw SOCK_SEQPACKET peers, SCM_RIGHTS by hand
  socket: { parameters: ["i32", "i32", "i32"], result: "i32" },
  socketpair: { parameters: ["i32", "i32", "i32", "buffer"], result: "i32" },
  connect: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  bind: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  listen: { parameters: ["i32", "i32"], result: "i32" },
  accept: { parameters: ["i32", "pointer", "pointer"], result: "i32" },
  sendmsg: { parameters: ["i32", "buffer", "i32"], result: "isize" },
  recvmsg: { parameters: ["i32", "buffer", "i32"], result: "isize" },
  recv: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize" },
  // on a thread of Deno's blocking pool: bench/wake_paths.ts weighs it against other wake paths
  recvNonblocking: {
    name: "recv",
    parameters: ["i32", "buffer", "usize", "i32"],
    result: "isize",
    nonblocking: true,
  },
  send: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize" },
  // the process: its clock (to the nanosecond, where clockUs() gives whole microseconds)
  clock_gettime: { parameters: ["i32", "buffer"], result: "i32" },
  setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"], result: "i32" },
  // the process: limits, identity, errno
  getrlimit: { parameters: ["i32", "buffer"], result: "i32" },
  setrlimit: { parameters: ["i32", "buffer"], result: "i32" },
  getuid: { parameters: [], result: "u32" },
  setgid: { parameters: ["u32"], result: "i32" },
  setuid: { parameters: ["u32"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer" },
}).symbols;

const F_GETFD = 1;
const F_SETFD = 2;
const FD_CLOEXEC = 1;
const MFD_CLOEXEC = 1;
const MFD_ALLOW_SEALING = 2;
const F_ADD_SEALS = 1033;
const F_GET_SEALS = 1034;
/** memfd seals (fcntl F_ADD_SEALS / F_GET_SEALS). */
export const SEAL = { SEAL: 1, SHRINK: 2, GROW: 4, WRITE: 8 } as const;

/** What {@link memfd} makes. */
export interface MemfdOptions {
  /** false: without FD_CLOEXEC (to see gpures set it). */
  cloexec?: boolean;
  /** false: made without MFD_ALLOW_SEALING, so nobody can seal it. */
  sealable?: boolean;
  /** Seals to add after sizing it (SEAL bits), e.g. SEAL.SHRINK. */
  seals?: number;
}

/**
 * A new memfd of `size` bytes. By default it allows sealing and is not
 * sealed: gpures seals it against shrinking when it maps or receives it.
 */
export function memfd(
  size: number,
  { cloexec = true, sealable = true, seals = 0 }: MemfdOptions = {},
): number {
  const fd = libc.memfd_create(
    new TextEncoder().encode("gpures-test\0"),
    (cloexec ? MFD_CLOEXEC : 0) | (sealable ? MFD_ALLOW_SEALING : 0),
  );
  if (fd < 0) throw new Error("memfd_create failed");
  if (libc.ftruncate(fd, BigInt(size)) !== 0) throw new Error("ftruncate failed");
  if (seals && libc.fcntl(fd, F_ADD_SEALS, seals) !== 0) throw new Error("F_ADD_SEALS failed");
  return fd;
}

/** A new close-on-exec eventfd (Linux): a real CPU fence. */
export function eventFd(): number {
  const fd = libc.eventfd(0, 0o2000000 /* EFD_CLOEXEC */);
  if (fd < 0) throw new Error("eventfd failed");
  return fd;
}

/** Adds 1 to an eventfd: what signalling a CpuFence does, done behind gpures's back. */
export function eventFdSignal(fd: number): void {
  if (libc.write(fd, new BigUint64Array([1n]), 8n) !== 8n) throw new Error("write(eventfd) failed");
}

/** The read end of a new pipe whose write end is closed: an fd whose size cannot be read. */
export function pipeReadEnd(): number {
  const ends = new Int32Array(2);
  if (libc.pipe2(ends, 0o2000000 /* O_CLOEXEC */) !== 0) throw new Error("pipe2 failed");
  libc.close(ends[1]);
  return ends[0];
}

/** An unnamed regular file of `size` bytes in /tmp (O_TMPFILE), open for reading and writing. */
export function tmpfile(size: number): number {
  const O_RDWR = 2, O_TMPFILE = 0o20200000, O_CLOEXEC = 0o2000000;
  const fd = libc.open(new TextEncoder().encode("/tmp\0"), O_RDWR | O_TMPFILE | O_CLOEXEC, 0o600);
  if (fd < 0) throw new Error("open(O_TMPFILE) failed");
  if (libc.ftruncate(fd, BigInt(size)) !== 0) throw new Error("ftruncate failed");
  return fd;
}

/** The seals of a memfd (SEAL bits), or -1 for another file. */
export function sealsOf(fd: number): number {
  return libc.fcntl(fd, F_GET_SEALS, 0);
}

/** Resizes the file fd names; false when the kernel refused (a seal). */
export function truncate(fd: number, size: number): boolean {
  return libc.ftruncate(fd, BigInt(size)) === 0;
}

/** Whether fd names an open file. */
export function isOpen(fd: number): boolean {
  return libc.fcntl(fd, F_GETFD, 0) >= 0;
}

/** Whether fd is close-on-exec. */
export function isCloexec(fd: number): boolean {
  return (libc.fcntl(fd, F_GETFD, 0) & FD_CLOEXEC) !== 0;
}

/** Clears FD_CLOEXEC (to see gpures set it). */
export function clearCloexec(fd: number): void {
  libc.fcntl(fd, F_SETFD, 0);
}

/** Closes fd; true when it was open. */
export function close(fd: number): boolean {
  return libc.close(fd) === 0;
}

/** Writes bytes at an offset of the file fd names. */
export function writeAt(fd: number, bytes: Uint8Array, offset: number): void {
  if (Number(libc.pwrite(fd, bytes, BigInt(bytes.length), BigInt(offset))) !== bytes.length) {
    throw new Error("pwrite failed");
  }
}

/** Reads `length` bytes at an offset of the file fd names. */
export function readAt(fd: number, length: number, offset: number): Uint8Array {
  const out = new Uint8Array(length);
  if (Number(libc.pread(fd, out, BigInt(length), BigInt(offset))) !== length) {
    throw new Error("pread failed");
  }
  return out;
}

/** Open fds of this process (Linux: entries of /proc/self/fd). */
export function openFdCount(): number {
  let n = 0;
  for (const _ of Deno.readDirSync("/proc/self/fd")) n++;
  return n;
}

// Reading /proc/self/fd needs --allow-all in Deno 2, so the counts below ask
// libc instead: every fd below the RLIMIT_NOFILE soft limit, probed with fcntl.

const RLIMIT_NOFILE = Deno.build.os === "darwin" ? 8 : 7;

/** The highest fd number this process may open, plus one (capped at 2^20). */
export function fdLimit(): number {
  const rlimit = new BigUint64Array(2); // { rlim_cur, rlim_max }
  if (libc.getrlimit(RLIMIT_NOFILE, rlimit) !== 0) throw new Error("getrlimit failed");
  return Number(rlimit[0] < 1n << 20n ? rlimit[0] : 1n << 20n);
}

/**
 * Open memfds of this process (what frames are made of), through libc: unlike
 * the count of every fd, the runtime's own files do not come and go in it.
 */
export function countOpenMemfds(): number {
  const link = new Uint8Array(64);
  let n = 0;
  for (let fd = 0, end = fdLimit(); fd < end; fd++) {
    const got = Number(libc.readlink(new TextEncoder().encode(`/proc/self/fd/${fd}\0`), link, 64n));
    if (got > 8 && new TextDecoder().decode(link.subarray(0, 8)) === "/memfd:") n++;
  }
  return n;
}

/**
 * The fds this process has open that were not open in `before` (each as
 * "fd -> what it is"), pipes left out as in countOpenFds(). Unlike a count,
 * an fd that something else closed meanwhile (another test file's isolate
 * ending, and its waits with it) cannot hide a leak or fake one.
 */
export function fdsOpenedSince(before: Set<string>): string[] {
  return [...openFdSet()].filter((fd) => !before.has(fd));
}

/** This process's open fds but pipes, each as "fd -> what it is" (readlink of /proc/self/fd). */
export function openFdSet(): Set<string> {
  const link = new Uint8Array(256);
  const out = new Set<string>();
  for (let fd = 0, end = fdLimit(); fd < end; fd++) {
    if (!isOpen(fd)) continue;
    const got = Number(
      libc.readlink(new TextEncoder().encode(`/proc/self/fd/${fd}\0`), link, 256n),
    );
    const what = got > 0 ? new TextDecoder().decode(link.subarray(0, got)) : "?";
    if (!what.startsWith("pipe:")) out.add(`${fd} -> ${what}`);
  }
  return out;
}

/**
 * Open fds of this process but pipes, counted through libc (needs only
 * --allow-ffi). Pipes are left out: an isolate that waits on a channel gets
 * the library's wake pipe for as long as the isolate lives, and `deno test`
 * ends a file's isolate while the next file runs. Every fd a handle, a
 * channel or a pool owns is a memfd, a socket, an eventfd or a file.
 */
export function countOpenFds(): number {
  const link = new Uint8Array(8);
  let n = 0;
  for (let fd = 0, end = fdLimit(); fd < end; fd++) {
    if (!isOpen(fd)) continue;
    const got = Number(libc.readlink(new TextEncoder().encode(`/proc/self/fd/${fd}\0`), link, 8n));
    if (got >= 5 && new TextDecoder().decode(link.subarray(0, 5)) === "pipe:") continue;
    n++;
  }
  return n;
}

/** The process's threads (Linux: the Threads line of /proc/self/status, read through libc). */
export function threadCount(): number {
  const fd = libc.open(new TextEncoder().encode("/proc/self/status\0"), 0, 0);
  if (fd < 0) throw new Error("/proc/self/status does not open");
  const bytes = new Uint8Array(8192);
  const n = Number(libc.pread(fd, bytes, BigInt(bytes.length), 0n));
  libc.close(fd);
  const line = /^Threads:\s+(\d+)$/m.exec(new TextDecoder().decode(bytes.subarray(0, n)));
  if (!line) throw new Error("/proc/self/status has no Threads line");
  return Number(line[1]);
}
