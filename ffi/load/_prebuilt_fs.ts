// The file operations the prebuilt library needs, done through FFI calls to
// the C library (Linux, macOS) or kernel32 (Windows): with only --allow-ffi,
// Deno's own file and environment APIs are not permitted, while FFI is.

/** What opening a prebuilt library needs from the OS. */
export interface FileOps {
  /** An environment variable, or undefined when unset or empty. */
  env(name: string): string | undefined;
  /** Creates a folder and its parents; fine when it exists. */
  mkdirp(path: string): void;
  /**
   * The whole file, or undefined when it does not exist; at most `limit`
   * bytes plus one (a longer file is refused by its size). A FIFO is never
   * waited on, and a symlink is not followed unless `follow` (the
   * /proc/self/fd/N of an fd of this process's own).
   */
  read(path: string, limit?: number, follow?: boolean): Uint8Array | undefined;
  /** Writes a new file (replacing one of that name). */
  write(path: string, bytes: Uint8Array): void;
  /** Renames, replacing the target atomically. */
  rename(from: string, to: string): void;
  /** Removes a file; fine when it is gone. */
  remove(path: string): void;
  /** Whether a path exists. */
  exists(path: string): boolean;
  /**
   * Linux only: an anonymous in-memory file holding `bytes`, as a file
   * descriptor; undefined where memfd_create is missing. `close` closes it.
   */
  memfd?(name: string, bytes: Uint8Array): number | undefined;
  /**
   * Linux only: the open file descriptors of this process that are memfds
   * named `name` and sealed against writing, shrinking and growing (what
   * another isolate of this process made), lowest first. Reads `fdDir`.
   */
  findMemfds?(name: string, fdDir: string): number[];
  /**
   * Linux only: holds a lock that every isolate of this process contends for
   * (flock on each one's own open of /proc/self/exe), until the returned
   * function runs; undefined when it cannot be had.
   */
  lockProcess?(): (() => void) | undefined;
  /** Closes a file descriptor from {@link FileOps.memfd}. */
  close?(fd: number): void;
  /** Releases the C library handle. */
  dispose(): void;
}

const enc = new TextEncoder();
const cstr = (s: string) => enc.encode(`${s}\0`);

/** The chunks a read loop collected, `total` bytes in all, as one array. */
function concat(chunks: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

const POSIX = {
  getenv: { parameters: ["buffer"], result: "pointer" },
  mkdir: { parameters: ["buffer", "u32"], result: "i32" },
  // open() is variadic; only the two-argument form is used (read-only), and
  // creat() creates, so no variadic call crosses the FFI (arm64 macOS passes
  // variadic arguments on the stack).
  open: { parameters: ["buffer", "i32"], result: "i32" },
  creat: { parameters: ["buffer", "u32"], result: "i32" },
  read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  write: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  close: { parameters: ["i32"], result: "i32" },
  rename: { parameters: ["buffer", "buffer"], result: "i32" },
  unlink: { parameters: ["buffer"], result: "i32" },
  access: { parameters: ["buffer", "i32"], result: "i32" },
  strerror: { parameters: ["i32"], result: "pointer" },
  memfd_create: { parameters: ["buffer", "u32"], result: "i32", optional: true },
  opendir: { parameters: ["buffer"], result: "pointer" },
  readdir: { parameters: ["pointer"], result: "pointer" },
  closedir: { parameters: ["pointer"], result: "i32" },
  readlink: { parameters: ["buffer", "buffer", "usize"], result: "isize" },
  // Linux only (memfd seals, the isolates' lock): fcntl's third argument is an int there.
  fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" },
  flock: { parameters: ["i32", "i32"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer", optional: true },
  __error: { parameters: [], result: "pointer", optional: true },
} as const;

const ENOENT = 2;
const EEXIST = 17;
const O_RDONLY = 0;
const O_CLOEXEC_LINUX = 0x80000;
/** O_NONBLOCK | O_NOFOLLOW: a FIFO does not block open(), a symlink is not followed. */
const O_SAFE: Record<string, number> = { linux: 0x800 | 0x20000, darwin: 0x4 | 0x100 };
const O_NOFOLLOW: Record<string, number> = { linux: 0x20000, darwin: 0x100 };
const MFD_CLOEXEC = 1;
const MFD_ALLOW_SEALING = 2;
const F_ADD_SEALS = 1033;
const F_GET_SEALS = 1034;
const SEALED = 1 | 2 | 4 | 8; // F_SEAL_SEAL | SHRINK | GROW | WRITE
const LOCK_EX = 2, LOCK_UN = 8;

/** FileOps over the C library: libc.so.6 on Linux, libSystem on macOS. */
export function posixOps(os: string = Deno.build.os): FileOps {
  const name = os === "darwin" ? "/usr/lib/libSystem.B.dylib" : "libc.so.6";
  const lib = Deno.dlopen(name, POSIX);
  const c = lib.symbols;
  const errno = (): number => {
    const p = c.__errno_location ? c.__errno_location() : c.__error ? c.__error() : null;
    return p ? new Deno.UnsafePointerView(p).getInt32() : 0;
  };
  const fail = (what: string, path: string, code = errno()): never => {
    const text = c.strerror(code);
    const reason = text ? Deno.UnsafePointerView.getCString(text) : `errno ${code}`;
    throw Object.assign(new Error(`${what} "${path}": ${reason}`), { errno: code });
  };
  const writeAll = (fd: number, bytes: Uint8Array, path: string) => {
    let at = 0;
    while (at < bytes.length) {
      const n = Number(c.write(fd, bytes.subarray(at), BigInt(bytes.length - at)));
      if (n <= 0) {
        const code = errno();
        c.close(fd);
        fail("cannot write", path, code);
      }
      at += n;
    }
  };
  return {
    env(key) {
      const p = c.getenv(cstr(key));
      const value = p ? Deno.UnsafePointerView.getCString(p) : "";
      return value || undefined;
    },
    mkdirp(path) {
      const parts = path.split("/");
      for (let i = 1; i <= parts.length; i++) {
        const prefix = parts.slice(0, i).join("/");
        if (!prefix) continue;
        if (c.mkdir(cstr(prefix), 0o755) !== 0) {
          const code = errno();
          if (code !== EEXIST) fail("cannot create the folder", prefix, code);
        }
      }
    },
    read(path, limit = Infinity, follow = false) {
      const safe = O_SAFE[os] ?? 0;
      const flags = O_RDONLY | (os === "linux" ? O_CLOEXEC_LINUX : 0) |
        (follow ? safe & ~O_NOFOLLOW[os] : safe);
      const fd = c.open(cstr(path), flags);
      if (fd < 0) {
        const code = errno();
        if (code === ENOENT) return undefined;
        fail("cannot open", path, code);
      }
      const chunks: Uint8Array[] = [];
      let total = 0;
      for (;;) {
        const buf = new Uint8Array(1 << 16);
        const n = Number(c.read(fd, buf, BigInt(buf.length)));
        if (n < 0) {
          const code = errno();
          c.close(fd);
          fail("cannot read", path, code);
        }
        if (n === 0) break;
        chunks.push(buf.subarray(0, n));
        total += n;
        if (total > limit) break; /* longer than it may be: its size refuses it */
      }
      c.close(fd);
      return concat(chunks, total);
    },
    write(path, bytes) {
      const fd = c.creat(cstr(path), 0o755);
      if (fd < 0) fail("cannot create", path);
      writeAll(fd, bytes, path);
      if (c.close(fd) !== 0) fail("cannot write", path);
    },
    rename(from, to) {
      if (c.rename(cstr(from), cstr(to)) !== 0) fail("cannot rename", `${from}" to "${to}`);
    },
    remove(path) {
      if (c.unlink(cstr(path)) !== 0 && errno() !== ENOENT) fail("cannot remove", path);
    },
    exists(path) {
      return c.access(cstr(path), 0) === 0;
    },
    memfd: os === "linux"
      ? (label, bytes) => {
        if (!c.memfd_create) return undefined;
        const fd = c.memfd_create(cstr(label), MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0) fail("memfd_create failed for", label);
        writeAll(fd, bytes, `memfd ${label}`);
        // Sealed once whole: nobody (another isolate, a stray write) changes it after its check.
        if (c.fcntl(fd, F_ADD_SEALS, SEALED) !== 0) {
          const code = errno();
          c.close(fd);
          fail("cannot seal", `memfd ${label}`, code);
        }
        return fd;
      }
      : undefined,
    lockProcess: os === "linux"
      ? () => {
        const fd = c.open(cstr("/proc/self/exe"), O_RDONLY | O_CLOEXEC_LINUX);
        if (fd < 0) return undefined;
        if (c.flock(fd, LOCK_EX) !== 0) {
          c.close(fd);
          return undefined;
        }
        return () => {
          c.flock(fd, LOCK_UN);
          c.close(fd);
        };
      }
      : undefined,
    findMemfds: os === "linux"
      ? (label, fdDir) => {
        const dir = c.opendir(cstr(fdDir));
        if (!dir) return [];
        const want = `/memfd:${label} (deleted)`;
        const buf = new Uint8Array(want.length + 2);
        const found: number[] = [];
        try {
          for (let entry = c.readdir(dir); entry; entry = c.readdir(dir)) {
            // glibc's struct dirent on 64-bit Linux: d_ino, d_off (8 bytes each), d_reclen (2),
            // d_type (1), then d_name.
            const name = new Deno.UnsafePointerView(entry).getCString(19);
            if (!/^\d+$/.test(name)) continue;
            const n = Number(c.readlink(cstr(`${fdDir}/${name}`), buf, BigInt(buf.length)));
            if (n !== want.length || new TextDecoder().decode(buf.subarray(0, n)) !== want) {
              continue;
            }
            const fd = Number(name);
            if ((c.fcntl(fd, F_GET_SEALS, 0) & SEALED) === SEALED) found.push(fd);
          }
        } finally {
          c.closedir(dir);
        }
        return found.sort((a, b) => a - b);
      }
      : undefined,
    close(fd) {
      c.close(fd);
    },
    dispose() {
      lib.close();
    },
  };
}

const KERNEL32 = {
  GetEnvironmentVariableW: { parameters: ["buffer", "buffer", "u32"], result: "u32" },
  CreateDirectoryW: { parameters: ["buffer", "pointer"], result: "i32" },
  CreateFileW: {
    parameters: ["buffer", "u32", "u32", "pointer", "u32", "u32", "pointer"],
    result: "pointer",
  },
  ReadFile: { parameters: ["pointer", "buffer", "u32", "buffer", "pointer"], result: "i32" },
  WriteFile: { parameters: ["pointer", "buffer", "u32", "buffer", "pointer"], result: "i32" },
  CloseHandle: { parameters: ["pointer"], result: "i32" },
  MoveFileExW: { parameters: ["buffer", "buffer", "u32"], result: "i32" },
  DeleteFileW: { parameters: ["buffer"], result: "i32" },
  GetFileAttributesW: { parameters: ["buffer"], result: "u32" },
  GetLastError: { parameters: [], result: "u32" },
} as const;

/** A NUL-terminated UTF-16 string. */
function wide(s: string): Uint16Array {
  const out = new Uint16Array(s.length + 1);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** FileOps over kernel32.dll. */
export function windowsOps(): FileOps {
  const lib = Deno.dlopen("kernel32.dll", KERNEL32);
  const k = lib.symbols;
  const GENERIC_READ = 0x80000000, GENERIC_WRITE = 0x40000000;
  const CREATE_ALWAYS = 2, OPEN_EXISTING = 3, FILE_SHARE_READ = 1;
  const ERROR_FILE_NOT_FOUND = 2, ERROR_PATH_NOT_FOUND = 3, ERROR_ALREADY_EXISTS = 183;
  const MOVEFILE_REPLACE_EXISTING = 1, MOVEFILE_WRITE_THROUGH = 8;
  const INVALID = 0xffffffffffffffffn;
  const isInvalid = (h: Deno.PointerValue) => h === null || Deno.UnsafePointer.value(h) === INVALID;
  const fail = (what: string, path: string, code = k.GetLastError()): never => {
    throw Object.assign(new Error(`${what} "${path}": Windows error ${code}`), { errno: code });
  };
  const win = (p: string) => wide(p.replaceAll("/", "\\"));
  return {
    env(key) {
      const buf = new Uint16Array(32768);
      const n = k.GetEnvironmentVariableW(wide(key), buf, buf.length);
      if (n === 0 || n >= buf.length) return undefined;
      return String.fromCharCode(...buf.subarray(0, n));
    },
    mkdirp(path) {
      const parts = path.replaceAll("\\", "/").split("/");
      for (let i = 2; i <= parts.length; i++) { // parts[0] is the drive
        const prefix = parts.slice(0, i).join("/");
        if (k.CreateDirectoryW(win(prefix), null) === 0) {
          const code = k.GetLastError();
          if (code !== ERROR_ALREADY_EXISTS) fail("cannot create the folder", prefix, code);
        }
      }
    },
    read(path) {
      const h = k.CreateFileW(
        win(path),
        GENERIC_READ,
        FILE_SHARE_READ,
        null,
        OPEN_EXISTING,
        0,
        null,
      );
      if (isInvalid(h)) {
        const code = k.GetLastError();
        if (code === ERROR_FILE_NOT_FOUND || code === ERROR_PATH_NOT_FOUND) return undefined;
        fail("cannot open", path, code);
      }
      const chunks: Uint8Array[] = [];
      let total = 0;
      const got = new Uint32Array(1);
      for (;;) {
        const buf = new Uint8Array(1 << 16);
        if (k.ReadFile(h, buf, buf.length, got, null) === 0) {
          const code = k.GetLastError();
          k.CloseHandle(h);
          fail("cannot read", path, code);
        }
        if (got[0] === 0) break;
        chunks.push(buf.subarray(0, got[0]));
        total += got[0];
      }
      k.CloseHandle(h);
      return concat(chunks, total);
    },
    write(path, bytes) {
      const h = k.CreateFileW(win(path), GENERIC_WRITE, 0, null, CREATE_ALWAYS, 0, null);
      if (isInvalid(h)) fail("cannot create", path);
      const wrote = new Uint32Array(1);
      let at = 0;
      while (at < bytes.length) {
        const part = bytes.subarray(at, at + (1 << 24));
        if (k.WriteFile(h, part, part.length, wrote, null) === 0 || wrote[0] === 0) {
          const code = k.GetLastError();
          k.CloseHandle(h);
          fail("cannot write", path, code);
        }
        at += wrote[0];
      }
      k.CloseHandle(h);
    },
    rename(from, to) {
      if (
        k.MoveFileExW(win(from), win(to), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH) === 0
      ) {
        fail("cannot rename", `${from}" to "${to}`);
      }
    },
    remove(path) {
      if (k.DeleteFileW(win(path)) === 0) {
        const code = k.GetLastError();
        if (code !== ERROR_FILE_NOT_FOUND) fail("cannot remove", path, code);
      }
    },
    exists(path) {
      return k.GetFileAttributesW(win(path)) !== 0xffffffff;
    },
    dispose() {
      lib.close();
    },
  };
}

/** The FileOps of the running OS. */
export function fileOps(os: string = Deno.build.os): FileOps {
  return os === "windows" ? windowsOps() : posixOps(os);
}
