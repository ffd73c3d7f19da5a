// What the hostile channel tests share with their peer processes: libc
// through FFI (raw SOCK_SEQPACKET sockets, sendmsg with SCM_RIGHTS, memfds,
// pipes, rlimits), gpures's wire format written by hand, the list of lies a
// peer tells, and a line reader for a child's stdout.
//
// The peers never load gpures: they speak the protocol themselves, as a
// process that wants to crash or exhaust its receiver would. Layouts are
// Linux x86-64/arm64 (struct msghdr, sockaddr_un, struct rlimit).

export const linux = Deno.build.os === "linux";

// The tests' libc (tests/_support/libc.ts), loaded only where it exists.
const libc = linux ? (await import("../_support/libc.ts")).libc : undefined;

function c(): NonNullable<typeof libc> {
  if (!libc) throw new Error("the hostile channel peers need Linux");
  return libc;
}

const cstr = (s: string) => new TextEncoder().encode(s + "\0");

/** errno of the last failed libc call on this thread. */
export function errno(): number {
  return new Deno.UnsafePointerView(c().__errno_location()!).getInt32();
}

const ERRNO_NAMES: Record<number, string> = {
  1: "EPERM",
  2: "ENOENT",
  9: "EBADF",
  13: "EACCES",
  22: "EINVAL",
  24: "EMFILE",
  32: "EPIPE",
  111: "ECONNREFUSED",
};
/** "EPERM" for 1, else "errno N". */
export const errnoName = (e: number): string => ERRNO_NAMES[e] ?? `errno ${e}`;

// ------------------------------------------------------------- raw sockets

const AF_UNIX = 1;
const SOCK_SEQPACKET = 5;
const SOCK_CLOEXEC = 0o2000000;

function sockaddr(path: string): Uint8Array {
  const bytes = new TextEncoder().encode(path);
  const sa = new Uint8Array(2 + 108);
  sa[0] = AF_UNIX;
  sa.set(bytes, 2);
  if (path.startsWith("@")) sa[2] = 0; // Linux's abstract namespace
  return sa.subarray(0, 2 + bytes.length + (path.startsWith("@") ? 0 : 1));
}

/** A blocking SOCK_SEQPACKET socket connected to `path`, made without gpures. */
export function rawConnect(path: string): number {
  const fd = c().socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  const sa = sockaddr(path);
  if (fd < 0 || c().connect(fd, sa, sa.length) !== 0) {
    throw new Error(`connect to ${path}: ${errnoName(errno())}`);
  }
  return fd;
}

/** A blocking SOCK_SEQPACKET listener at `path`, made without gpures. */
export function rawListen(path: string): number {
  const fd = c().socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  const sa = sockaddr(path);
  if (fd < 0 || c().bind(fd, sa, sa.length) !== 0 || c().listen(fd, 8) !== 0) {
    throw new Error(`listen at ${path}: ${errnoName(errno())}`);
  }
  return fd;
}

/** accept(2), blocking. */
export function rawAccept(fd: number): number {
  return c().accept(fd, null, null);
}

/** A connected SOCK_SEQPACKET pair, made without gpures. */
export function rawPair(): [number, number] {
  const fds = new Int32Array(2);
  if (c().socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) !== 0) {
    throw new Error(`socketpair: ${errnoName(errno())}`);
  }
  return [fds[0], fds[1]];
}

/**
 * sendmsg(2) of `bytes` with `fds` attached (SCM_RIGHTS), blocking; the
 * number of bytes sent, or -errno.
 */
export function sendRaw(sock: number, bytes: Uint8Array, fds: number[] = []): number {
  const data = bytes.length ? bytes : new Uint8Array(1);
  const iov = new BigUint64Array([
    BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(data))),
    BigInt(bytes.length),
  ]);
  const control = new Uint8Array(16 + 8 * Math.ceil(fds.length / 2));
  const view = new DataView(control.buffer);
  view.setBigUint64(0, BigInt(16 + 4 * fds.length), true); // cmsg_len
  view.setInt32(8, 1, true); // SOL_SOCKET
  view.setInt32(12, 1, true); // SCM_RIGHTS
  fds.forEach((f, i) => view.setInt32(16 + 4 * i, f, true));
  const hdr = new BigUint64Array(7); // name, namelen, iov, iovlen, control, controllen, flags
  hdr[2] = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(iov)));
  hdr[3] = 1n;
  if (fds.length) {
    hdr[4] = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(control)));
    hdr[5] = BigInt(control.length);
  }
  const n = Number(c().sendmsg(sock, new Uint8Array(hdr.buffer), 0x4000 /* MSG_NOSIGNAL */));
  return n < 0 ? -errno() : n;
}

/** recv(2) of one datagram, blocking: its length, 0 at the end, or -errno. */
export function recvRaw(sock: number): number {
  const n = Number(c().recv(sock, new Uint8Array(4096), 4096n, 0));
  return n < 0 ? -errno() : n;
}

export function closeFd(fd: number): boolean {
  return c().close(fd) === 0;
}

// ------------------------------------------------------------ fds of kinds

const MFD_CLOEXEC = 1;
const MFD_ALLOW_SEALING = 2;
export const F_ADD_SEALS = 1033;
export const F_GET_SEALS = 1034;
export const SEAL_SHRINK = 2;

/** A memfd of `size` bytes whose byte i is (seed + i) & 0xff. */
export function memfd(size: number, { sealable = true, seed = 0 } = {}): number {
  const fd = c().memfd_create(
    cstr("gpures-peer"),
    MFD_CLOEXEC | (sealable ? MFD_ALLOW_SEALING : 0),
  );
  if (fd < 0 || c().ftruncate(fd, BigInt(size)) !== 0) throw new Error("memfd_create failed");
  const bytes = new Uint8Array(size).map((_, i) => (seed + i) & 0xff);
  if (Number(c().pwrite(fd, bytes, BigInt(size), 0n)) !== size) throw new Error("pwrite failed");
  return fd;
}

/** ftruncate(2): 0, or the errno that refused it. */
export function truncate(fd: number, size: number): number {
  return c().ftruncate(fd, BigInt(size)) === 0 ? 0 : errno();
}

export function sealsOf(fd: number): number {
  return c().fcntl(fd, F_GET_SEALS, 0);
}

/** A regular file of `size` bytes in /tmp, already unlinked: only the fd names it. */
export function regularFile(size: number): number {
  const path = `/tmp/gpures-peer-file-${Deno.pid}-${Math.random().toString(36).slice(2)}`;
  const fd = c().open(cstr(path), 0o2 | 0o100 | 0o200 | 0o2000000, 0o600); // RDWR CREAT EXCL CLOEXEC
  if (fd < 0) throw new Error(`open ${path}: ${errnoName(errno())}`);
  c().unlink(cstr(path));
  if (c().ftruncate(fd, BigInt(size)) !== 0) throw new Error("ftruncate failed");
  return fd;
}

/** Opens `path` read-only (a directory or /dev/null too). */
export function openPath(path: string): number {
  const fd = c().open(cstr(path), 0o2000000, 0);
  if (fd < 0) throw new Error(`open ${path}: ${errnoName(errno())}`);
  return fd;
}

export function pipe(): [number, number] {
  const fds = new Int32Array(2);
  if (c().pipe2(fds, 0o2000000) !== 0) throw new Error("pipe2 failed");
  return [fds[0], fds[1]];
}

/** The fds a frame must never be: each opened fresh, with the field name it is refused under. */
export const UNFIT_FDS: { what: string; open: () => number[] }[] = [
  { what: "a pipe", open: () => pipe() },
  { what: "a directory", open: () => [openPath("/tmp")] },
  { what: "a socket", open: () => rawPair() },
  { what: "a character device", open: () => [openPath("/dev/null")] },
];

export function unlinkPath(path: string): boolean {
  return c().unlink(cstr(path)) === 0;
}

export function mkdirPath(path: string, mode: number): boolean {
  return c().mkdir(cstr(path), mode) === 0;
}

export function rmdirPath(path: string): boolean {
  return c().rmdir(cstr(path)) === 0;
}

export function getuid(): number {
  return c().getuid();
}

/** Becomes `nobody` (root only): permission checks then apply to this process. */
export function dropPrivileges(): void {
  if (c().setgid(65534) !== 0 || c().setuid(65534) !== 0) {
    throw new Error(`setuid: ${errnoName(errno())}`);
  }
}

// ---------------------------------------------------------------- rlimits

const RLIMIT_NOFILE = 7;

/** The RLIMIT_NOFILE soft and hard limits. */
export function fdLimits(): BigUint64Array {
  const r = new BigUint64Array(2);
  if (c().getrlimit(RLIMIT_NOFILE, r) !== 0) throw new Error("getrlimit failed");
  return r;
}

/** Sets the RLIMIT_NOFILE soft limit. */
export function setFdLimit(soft: bigint, hard: bigint): void {
  if (c().setrlimit(RLIMIT_NOFILE, new BigUint64Array([soft, hard])) !== 0) {
    throw new Error(`setrlimit: ${errnoName(errno())}`);
  }
}

/** The lowest fd number not open: the next fd this process would get. */
export function lowestFreeFd(): number {
  const fd = c().fcntl(0, 1030, /* F_DUPFD_CLOEXEC */ 0);
  if (fd < 0) throw new Error(`F_DUPFD: ${errnoName(errno())}`);
  c().close(fd);
  return fd;
}

/**
 * Runs `fn` with no fd free: the soft limit lowered to the lowest free fd
 * number, so every fd this process would open fails with EMFILE. Restored
 * afterwards, whatever happens.
 */
export function withoutFreeFds<T>(fn: () => T): T {
  const [soft, hard] = fdLimits();
  setFdLimit(BigInt(lowestFreeFd()), hard);
  try {
    return fn();
  } finally {
    setFdLimit(soft, hard);
  }
}

// ------------------------------------------------------------ the wire format

export const MAGIC = 0x63727067;
export const HEADER = 24;
export const KIND_DMA_BUF = 15;
export const KIND_VK_OPAQUE_FD = 6;
export const KIND_CPU_BYTES = 1;
export const DMA_BUF_DESC = 104; // sizeof(gpures_dma_buf_handle_desc)
export const VK_OPAQUE_FD_DESC = 80; // sizeof(gpures_vk_opaque_fd_desc)
export const FRAME_BYTES = 32 * 32 * 4;

/** What a header says; each field can be a lie. */
export interface Header {
  magic?: number;
  abi: number;
  headerSize?: number;
  kind: number;
  descSize: number;
  numFds: number;
}

function header(v: DataView, h: Header): void {
  v.setUint32(0, h.magic ?? MAGIC, true);
  v.setUint32(4, h.abi, true);
  v.setUint32(8, h.headerSize ?? HEADER, true);
  v.setUint32(12, h.kind, true);
  v.setUint32(16, h.descSize, true);
  v.setUint32(20, h.numFds, true);
}

/**
 * A DmaBufHandle message as gpures sends one: a 32x32 RGBA frame ("AB24",
 * linear) in `numFds` objects, fd fields 0, 1, ... (positions of attached fds).
 */
export function dmaBufMessage(abi: number, numFds = 1): Uint8Array {
  const m = new Uint8Array(HEADER + DMA_BUF_DESC);
  const v = new DataView(m.buffer);
  header(v, { abi, kind: KIND_DMA_BUF, descSize: DMA_BUF_DESC, numFds });
  const d = HEADER;
  v.setUint32(d + 0, DMA_BUF_DESC, true); // struct_size
  v.setUint32(d + 8, numFds, true); // num_fds
  for (let i = 0; i < numFds; i++) v.setInt32(d + 12 + 4 * i, i, true); // fds[i]
  v.setUint32(d + 28, 0x34324241, true); // fourcc "AB24"
  v.setUint32(d + 40, 32, true); // width
  v.setUint32(d + 44, 32, true); // height
  v.setUint32(d + 48, 1, true); // num_planes
  v.setUint32(d + 52 + 8, 128, true); // planes[0]: object 0, offset 0, stride 128
  return m;
}

/** A VkOpaqueFd message: 4096 bytes of RgbaU8 32x32 memory in one fd. */
export function vkOpaqueFdMessage(abi: number): Uint8Array {
  const m = new Uint8Array(HEADER + VK_OPAQUE_FD_DESC);
  const v = new DataView(m.buffer);
  header(v, { abi, kind: KIND_VK_OPAQUE_FD, descSize: VK_OPAQUE_FD_DESC, numFds: 1 });
  const d = HEADER;
  v.setUint32(d + 0, VK_OPAQUE_FD_DESC, true);
  v.setInt32(d + 8, 0, true); // fd: position 0
  v.setBigUint64(d + 16, BigInt(FRAME_BYTES), true); // size
  v.setUint32(d + 36, 32, true); // width
  v.setUint32(d + 40, 32, true); // height
  v.setUint32(d + 44, 34, true); // format RgbaU8
  return m;
}

/** One lie a peer tells: the bytes, how many sealable memfds go with them, and the refusal. */
export interface Lie {
  what: string;
  bytes: (abi: number) => Uint8Array;
  fds: number;
  code: string;
  field: string;
}

function edited(abi: number, edit: (v: DataView, m: Uint8Array) => Uint8Array | void): Uint8Array {
  const m = dmaBufMessage(abi);
  return edit(new DataView(m.buffer), m) ?? m;
}

/** A good DmaBufHandle message with the u32 at byte `offset` replaced. */
const withU32 = (offset: number, value: number) => (abi: number) =>
  edited(abi, (v) => v.setUint32(offset, value >>> 0, true));

function lie(
  what: string,
  fds: number,
  field: string,
  bytes: (abi: number) => Uint8Array,
  code = "INVALID_VALUE",
): Lie {
  return { what, bytes, fds, code, field };
}

const D = HEADER; // where the descriptor starts

/** Truncated datagrams and lies about sizes and counts; each with its refusal. */
export const LIES: Lie[] = [
  lie("an empty datagram", 0, "message", () => new Uint8Array(0)),
  lie("an empty datagram with an fd", 1, "message", () => new Uint8Array(0)),
  lie("10 bytes: less than a header", 1, "message", (a) => dmaBufMessage(a).slice(0, 10)),
  lie("the header alone", 1, "descSize", (a) => dmaBufMessage(a).slice(0, HEADER)),
  lie("a descriptor cut short", 1, "descSize", (a) => dmaBufMessage(a).slice(0, D + 40)),
  lie("8000 bytes: longer than any message", 1, "message", (a) => {
    const m = new Uint8Array(8000);
    m.set(dmaBufMessage(a));
    return m;
  }),
  lie("another magic", 1, "message", withU32(0, 0xdeadbeef)),
  lie("another major ABI", 1, "abi", (a) => withU32(4, a + 0x10000)(a)),
  lie("headerSize 16", 1, "headerSize", withU32(8, 16)),
  lie("headerSize 0xffffffff", 1, "headerSize", withU32(8, 0xffffffff)),
  lie("a kind that does not exist", 1, "kind", withU32(12, 999)),
  lie("a process-local kind (CpuBytes)", 1, "kind", withU32(12, KIND_CPU_BYTES), "WRONG_KIND"),
  lie("descSize larger than what came", 1, "descSize", withU32(16, DMA_BUF_DESC + 8)),
  lie("descSize 0xffffffff", 1, "descSize", withU32(16, 0xffffffff)),
  lie("structSize larger than descSize", 1, "structSize", withU32(D, DMA_BUF_DESC + 64)),
  lie("structSize and descSize 4", 1, "structSize", (a) =>
    edited(a, (v, m) => {
      v.setUint32(16, 4, true);
      v.setUint32(D, 4, true);
      return m.slice(0, D + 4);
    })),
  lie("numFds 2, one fd attached", 1, "fds", withU32(20, 2)),
  lie("numFds 1, none attached", 0, "fds", (a) => dmaBufMessage(a)),
  lie("numFds 1, three attached", 3, "fds", (a) => dmaBufMessage(a)),
  lie("three fds attached and announced, one named", 3, "fds", withU32(20, 3)),
  lie("20 fds attached", 20, "fds", withU32(20, 20)),
  lie("num_fds 9 in the descriptor", 1, "fds", withU32(D + 8, 9)),
  lie("fds[0] naming the receiver's stderr", 1, "fds[0]", withU32(D + 12, 2)),
  lie("fds[0] = -1", 1, "fds[0]", withU32(D + 12, -1)),
  lie("two fds named in the wrong order", 2, "fds[0]", (a) => {
    const m = dmaBufMessage(a, 2);
    new DataView(m.buffer).setInt32(D + 12, 1, true);
    new DataView(m.buffer).setInt32(D + 16, 0, true);
    return m;
  }),
  lie("width 0", 1, "width", withU32(D + 40, 0), "ZERO_SIZE"),
  lie("a plane offset its stride cannot have", 1, "planes[0].offset", withU32(D + 56, 64)),
];

// ------------------------------------------------------- session messages

export const WIRE_HEADER = 48; // the session header: magic .. meta_size, buffer, serial
export const TYPE_FRAME = 1;
export const TYPE_FENCE = 5;
export const KIND_CPU_FENCE = 33;
const CPU_FENCE_DESC = 16; // sizeof(gpures_cpu_fence_desc): struct_size, flags, fd, reserved

/** A close-on-exec eventfd: what a CpuFence is. */
export function eventfd(): number {
  const fd = c().eventfd(0, 0o2000000);
  if (fd < 0) throw new Error(`eventfd: ${errnoName(errno())}`);
  return fd;
}

/** A session datagram: the 48-byte header, then `body`. */
export function sessionMessage(
  abi: number,
  type: number,
  kind: number,
  buffer: bigint,
  serial: bigint,
  body: Uint8Array = new Uint8Array(0),
  numFds = 0,
): Uint8Array {
  const m = new Uint8Array(WIRE_HEADER + body.length);
  const v = new DataView(m.buffer);
  v.setUint32(0, MAGIC, true);
  v.setUint32(4, abi, true);
  v.setUint32(8, WIRE_HEADER, true);
  v.setUint32(12, kind, true);
  v.setUint32(16, type === TYPE_FRAME && numFds === 0 ? 0 : body.length, true); // desc_size
  v.setUint32(20, numFds, true);
  v.setUint32(24, type, true);
  v.setBigUint64(32, buffer, true);
  v.setBigUint64(40, serial, true);
  m.set(body, WIRE_HEADER);
  return m;
}

/** A FENCE as gpures sends one: a CpuFence naming (buffer, serial), its eventfd attached as fd 0. */
export function fenceMessage(abi: number, buffer: bigint, serial: bigint): Uint8Array {
  const desc = new Uint8Array(CPU_FENCE_DESC);
  new DataView(desc.buffer).setUint32(0, CPU_FENCE_DESC, true); // struct_size; fd 0: position 0
  return sessionMessage(abi, TYPE_FENCE, KIND_CPU_FENCE, buffer, serial, desc, 1);
}

/** A FENCE a receiver cannot read, and the field its refusal names. */
export interface FenceLie {
  what: string;
  field: string;
  edit: (m: Uint8Array) => Uint8Array;
}

const u32At = (offset: number, value: number) => (m: Uint8Array) => {
  new DataView(m.buffer).setUint32(offset, value, true);
  return m;
};

export const FENCE_LIES: FenceLie[] = [
  {
    what: "a kind this receiver does not know (a newer sender's)",
    field: "kind",
    edit: u32At(12, 38),
  },
  { what: "a headerSize of 40", field: "headerSize", edit: u32At(8, 40) },
  { what: "a descSize larger than what came", field: "descSize", edit: u32At(16, 24) },
  { what: "a body cut short", field: "descSize", edit: (m) => m.slice(0, m.length - 8) },
  { what: "a header cut after its type", field: "descSize", edit: (m) => m.slice(0, 30) },
];

// ------------------------------------------------------------- child processes

/** Reads a child's stdout line by line. */
export class Lines {
  #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** The next line, or null at the end. */
  async next(): Promise<string | null> {
    for (;;) {
      const at = this.#buffer.indexOf("\n");
      if (at >= 0) {
        const line = this.#buffer.slice(0, at);
        this.#buffer = this.#buffer.slice(at + 1);
        return line;
      }
      const { value, done } = await this.#reader.read();
      if (done) {
        const rest = this.#buffer;
        this.#buffer = "";
        return rest || null;
      }
      this.#buffer += value;
    }
  }

  /** The next line, which must be `want` (or start with it); the rest of the line. */
  async expect(want: string): Promise<string> {
    const line = await this.next();
    if (line === null || !line.startsWith(want)) {
      throw new Error(`expected "${want}" from the child, got ${JSON.stringify(line)}`);
    }
    return line.slice(want.length).trim();
  }

  async cancel(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }
}

/** A child running one of the peer scripts next to this file, with pipes for all three streams. */
export class Peer {
  readonly child: Deno.ChildProcess;
  readonly out: Lines;
  #stdin: WritableStreamDefaultWriter<Uint8Array>;
  #stderr: Promise<string>;

  constructor(script: string, args: string[], flags: string[] = ["--allow-ffi"]) {
    this.child = new Deno.Command(Deno.execPath(), {
      args: ["run", ...flags, new URL(script, import.meta.url).pathname, ...args],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.out = new Lines(this.child.stdout);
    this.#stdin = this.child.stdin.getWriter();
    this.#stderr = new Response(this.child.stderr).text();
  }

  /** Writes one line to the child's stdin. */
  async say(line: string): Promise<void> {
    await this.#stdin.write(new TextEncoder().encode(line + "\n"));
  }

  /** Waits for the exit; the status and everything the child wrote to stderr. */
  async done(): Promise<{ status: Deno.CommandStatus; stderr: string }> {
    await this.#stdin.close().catch(() => {});
    const status = await this.child.status;
    await this.out.cancel();
    return { status, stderr: await this.#stderr };
  }

  kill(): void {
    try {
      this.child.kill("SIGKILL");
    } catch { /* already gone */ }
  }
}

/** A stdin line reader for the peer scripts. */
export function stdinLines(): Lines {
  return new Lines(Deno.stdin.readable);
}

let serial = 0;
/** A socket path of this process's own in /tmp. */
export function socketPath(tag: string): string {
  return `/tmp/gpures-hostile-${tag}-${Deno.pid}-${serial++}.sock`;
}

/**
 * Lets handles and channels that earlier tests dropped be collected and
 * finalized (their fds closed) before this test counts fds or handles, so
 * the counts move only with what the test itself does. Needs --expose-gc to
 * do anything.
 */
export async function quiesce(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < 3; i++) {
    gc?.();
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
