// The machinery under Channel: socket fds with waits pending on the
// isolate's event queue, and socket paths as the C library takes them (NUL-ended
// bytes, `file:` URLs decoded).

import { type FdWait, whenFdReady } from "../events/fd_waits.ts";
import { lib } from "../load/load.ts";
import { GpuResourceError, InvalidHandleError, ReleasedError } from "../errors.ts";
import { Doorbell } from "./_doorbell.ts";

const READABLE = 1;
const bellOut = new Int32Array(1);

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

/**
 * A socket fd with waits pending on this isolate's event queue. The library
 * polls the fd only for those waits, so closing withdraws them first: the fd
 * is closed with nothing left to poll it.
 */
export class Socket {
  closed = false;
  /**
   * A session that owns the fd once opened (gpures_session_open); closing it
   * closes the fd. Null again once freed: read it only while not `closed`.
   */
  session: Deno.PointerValue = null;
  readonly #waits = new Set<FdWait>();
  /** The receiving session's doorbell: undefined until asked for, null when it has none. */
  #bell: Doorbell | null | undefined;

  constructor(readonly fd: number, readonly what: string) {}

  /** Throws ReleasedError naming the object ("channel", "listener") when closed here. */
  open(verb: string): number {
    if (this.closed) {
      throw new ReleasedError(`Cannot ${verb}: the ${this.what} is closed`, "STALE", this.what);
    }
    return this.fd;
  }

  /**
   * Waits, holding no thread, until `events` hold; returns at once when the
   * socket closes meanwhile (the caller's next use says so).
   */
  async wait(events: number): Promise<void> {
    const wait = whenFdReady(this.open("wait on"), events);
    this.#waits.add(wait);
    let status: number;
    try {
      status = await wait.done;
    } finally {
      this.#waits.delete(wait);
    }
    if (status !== 0 && !this.closed) throw this.#closedUnder();
  }

  /**
   * {@link Socket.wait} for at most `ms` milliseconds (Infinity: no limit):
   * false when the time ran out first, the wait withdrawn.
   */
  async waitFor(events: number, ms: number): Promise<boolean> {
    if (ms === Infinity) return await this.wait(events), true;
    const wait = whenFdReady(this.open("wait on"), events);
    this.#waits.add(wait);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
    let status: number | null;
    try {
      status = await Promise.race([wait.done, late]);
    } finally {
      clearTimeout(timer);
      this.#waits.delete(wait);
      wait.withdraw();
    }
    if (status === null) return false;
    if (status !== 0 && !this.closed) throw this.#closedUnder();
    return true;
  }

  /**
   * Gives the fd away (to a fan-out that now owns it): closed here, nothing
   * waits on it any more, and nothing here closes it.
   */
  detach(): number {
    this.closed = true;
    this.#bell?.close();
    this.#bell = null;
    for (const wait of this.#waits) wait.withdraw();
    this.#waits.clear();
    return this.fd;
  }

  /**
   * Waits, holding no thread, until a message may have come to the receiving
   * session: its doorbell once the sender rings it, the socket itself until
   * then (whichever comes first), and the socket alone without one.
   */
  async waitForMessage(): Promise<void> {
    const bell = this.#doorbell();
    if (bell === null || bell.ended) return await this.wait(READABLE);
    const ring = bell.next();
    if (bell.live) return await ring.rung; // close() ends it too
    let status = 0;
    const wait = whenFdReady(this.open("wait on"), READABLE);
    this.#waits.add(wait);
    try {
      await Promise.race([wait.done.then((s) => (status = s)), ring.rung]);
    } finally {
      this.#waits.delete(wait);
      wait.withdraw();
      ring.cancel();
    }
    if (status !== 0 && !this.closed) throw this.#closedUnder();
  }

  /** The session's doorbell, asked for once; null where it cannot be had (the channel goes on without). */
  #doorbell(): Doorbell | null {
    if (this.#bell !== undefined) return this.#bell;
    this.#bell = null;
    if (this.session === null || lib().gpures_session_bell(this.session, bellOut) !== 0) {
      return null;
    }
    try {
      this.#bell = new Doorbell(bellOut[0]);
    } catch {
      lib().gpures_channel_close(bellOut[0]); // node:net would not take it: poll the channel
    }
    return this.#bell;
  }

  #closedUnder(): GpuResourceError {
    return new GpuResourceError(
      `Cannot wait on ${this.what}: fd ${this.fd} was closed under the wait`,
      "OS_ERROR",
      "fd",
    );
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.#bell?.close(); // a wait on it settles; the next use says the channel is closed
    this.#bell = null;
    // A receiving session tells the sender which buffers it still holds before the end.
    if (this.session !== null) lib().gpures_session_shutdown(this.session);
    lib().gpures_channel_shutdown(this.fd); // the peer sees the end
    for (const wait of this.#waits) wait.withdraw(); // they settle; nothing polls the fd after
    this.#waits.clear();
    const session = this.session;
    // The session is freed now: nothing may reach it through this pointer again.
    this.session = null;
    if (session !== null) lib().gpures_session_close(session);
    else lib().gpures_channel_close(this.fd);
  }
}
