// The machinery under Channel: socket fds with waits that may be pending on
// other threads, and socket paths as the C library takes them (NUL-ended
// bytes, `file:` URLs decoded).

import { lib } from "./_load.ts";
import { check } from "./_native.ts";
import { GpuResourceError, InvalidHandleError, ReleasedError } from "./errors.ts";

/** How long one wait lasts before it looks again (shutdown ends it sooner on Linux). */
const WAIT_SLICE_MS = 1000;
const encoder = new TextEncoder();

function badPath(verb: string, why: string): InvalidHandleError {
  return new InvalidHandleError(`Cannot ${verb}: ${why}`, "INVALID_VALUE", "path");
}

/**
 * The bytes of a `file:` URL's path: percent-escapes decoded to the bytes
 * they stand for (a socket path is bytes, not necessarily UTF-8).
 */
function fileUrlPath(url: URL, verb: string): Uint8Array {
  if (url.protocol !== "file:") {
    throw badPath(verb, `path is a ${url.protocol} URL; only a file: URL names a socket path`);
  }
  if (url.hostname !== "" && url.hostname !== "localhost") {
    throw badPath(verb, `path is a file: URL of host "${url.hostname}"; sockets are local`);
  }
  const raw = encoder.encode(url.pathname);
  const out: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    const hex = raw[i] === 0x25 ? String.fromCharCode(raw[i + 1], raw[i + 2]) : "";
    if (/^[0-9a-fA-F]{2}$/.test(hex)) {
      out.push(parseInt(hex, 16));
      i += 2;
    } else {
      out.push(raw[i]);
    }
  }
  return new Uint8Array(out);
}

/** A NUL-terminated path for C: a string as given, a `file:` URL decoded. */
export function cPath(path: string | URL, verb: string): Uint8Array {
  let bytes: Uint8Array;
  if (path instanceof URL) {
    bytes = fileUrlPath(path, verb);
  } else if (typeof path === "string") {
    bytes = encoder.encode(path);
  } else {
    throw badPath(verb, `path must be a string or a file: URL, not ${typeof path}`);
  }
  if (bytes.length === 0) {
    throw badPath(
      verb,
      'path is empty; give a socket file path, or "@name" (Linux\'s abstract namespace)',
    );
  }
  if (bytes.includes(0)) throw badPath(verb, `path ${JSON.stringify(String(path))} contains NUL`);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

/** A socket fd with waits that may be pending on other threads. */
export class Socket {
  closed = false;
  /**
   * A session that owns the fd once opened (gpures_session_open); closing it
   * closes the fd. Null again once freed: read it only while not `closed`.
   */
  session: Deno.PointerValue = null;
  #waits = 0;
  #fdClosed = false;

  constructor(readonly fd: number, readonly what: string) {}

  /** Throws ReleasedError naming the object ("channel", "listener") when closed here. */
  open(verb: string): number {
    if (this.closed) {
      throw new ReleasedError(`Cannot ${verb}: the ${this.what} is closed`, "STALE", this.what);
    }
    return this.fd;
  }

  /** Waits off the isolate's thread until `events` hold (or a slice passes). */
  async wait(events: number): Promise<void> {
    this.#waits++;
    const ready = new Uint32Array(1);
    let status: number;
    try {
      // No out-buffer: an isolate that ends mid-wait frees its memory; the caller tries again.
      status = await lib().gpures_channel_wait(this.fd, events, WAIT_SLICE_MS, null);
    } finally {
      this.#waits--;
      if (this.closed && this.#waits === 0) this.#closeFd();
    }
    if (status !== 0 && !this.closed) {
      // The message is in the waiting thread's last error; ask again here to read it.
      check(lib().channel_wait_now(this.fd, events, 0, ready));
      throw new GpuResourceError(`Cannot wait on ${this.what}: status ${status}`, "OS_ERROR");
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    // A receiving session tells the sender which buffers it still holds before the end.
    if (this.session !== null) lib().gpures_session_shutdown(this.session);
    lib().gpures_channel_shutdown(this.fd); // wakes waits here, ends the peer's
    if (this.#waits === 0) this.#closeFd();
  }

  #closeFd(): void {
    if (this.#fdClosed) return;
    this.#fdClosed = true;
    const session = this.session;
    // The session is freed now: nothing may reach it through this pointer again.
    this.session = null;
    if (session !== null) lib().gpures_session_close(session);
    else lib().gpures_channel_close(this.fd);
  }
}
