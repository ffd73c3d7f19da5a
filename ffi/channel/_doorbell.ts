// A receiving session's doorbell (gpures_session_bell): a Unix stream socket
// the sender's library writes a byte to after each message it sends. Deno's
// event loop polls it itself (node:net over the fd), so a frame reaches a
// waiting receive() in one wake-up, the kernel's, where the channel's own
// socket would go through a thread that polls it. The sender rings once as
// soon as it has the doorbell; until then a wait polls the channel too, so
// a sender that never rings costs nothing but the faster path. node:net is
// imported with the module (about 5 ms of its load on a 2-core VM): fetched
// later, inside a wait, it left node:process's dlopen() half initialised.

import net from "node:net";

/** What this file uses of node:net's Socket. */
interface NetSocket {
  on(event: "data" | "end" | "close" | "error", listener: () => void): NetSocket;
  ref(): NetSocket;
  unref(): NetSocket;
  destroy(): void;
}
interface Net {
  Socket: new (options: { fd: number; readable: boolean; writable: boolean }) => NetSocket;
}

/** A doorbell over `fd`, which it owns from now on (closed by close(), or on failure). */
export class Doorbell {
  readonly #socket: NetSocket;
  #rung = false;
  #ended = false;
  #waiters: (() => void)[] = [];

  constructor(fd: number) {
    this.#socket = new (net as unknown as Net).Socket({ fd, readable: true, writable: false });
    // Only a pending wait holds the event loop open; a doorbell nobody waits on never does.
    this.#socket.unref();
    this.#socket.on("data", () => {
      this.#rung = true;
      this.#wake();
    });
    const end = () => {
      this.#ended = true;
      this.#wake();
    };
    this.#socket.on("end", end).on("close", end).on("error", end);
  }

  /** Whether it has rung and not ended: a wait for the next message may rely on it alone. */
  get live(): boolean {
    return this.#rung && !this.#ended;
  }

  /** Whether the sender let go of it (or it failed): waits must poll the channel again. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Settles at the next ring or at the doorbell's end; `cancel` lets go of it sooner. */
  next(): { rung: Promise<void>; cancel(): void } {
    const { promise, resolve } = Promise.withResolvers<void>();
    if (this.#ended) return (resolve(), { rung: promise, cancel() {} });
    if (this.#waiters.length === 0) this.#socket.ref();
    this.#waiters.push(resolve);
    return {
      rung: promise,
      cancel: () => {
        const at = this.#waiters.indexOf(resolve);
        if (at < 0) return;
        this.#waiters.splice(at, 1);
        if (this.#waiters.length === 0) this.#socket.unref();
        resolve();
      },
    };
  }

  #wake(): void {
    const waiters = this.#waiters;
    if (waiters.length === 0) return;
    this.#waiters = [];
    this.#socket.unref();
    for (const resolve of waiters) resolve();
  }

  /** Closes the fd; waits pending settle. */
  close(): void {
    this.#ended = true;
    this.#wake();
    this.#socket.destroy();
  }
}
