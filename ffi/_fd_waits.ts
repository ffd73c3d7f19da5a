// Channel waits: a socket that is full (or empty) is watched by this
// isolate's one wait on its event queue (gpures_event_queue_watch), which
// polls it along with the queue and posts FD_READY when it is ready. A
// pending receive, send or accept holds no thread, however many pend; a
// ref'd timer that never fires holds the event loop open while any pends (an
// awaited promise whose loop exits is an error).

import { eventQueue, fdWaitsChanged } from "./_keep_alive.ts";
import { lastError, native } from "./_native.ts";

const waits = new Map<number, (status: number) => void>();
let nextToken = 1;
let holder: ReturnType<typeof setInterval> | undefined;
const withdrawn = new Uint32Array(1);

function ready(token: number, status: number): void {
  const heard = waits.get(token);
  if (!heard) return; // withdrawn meanwhile: its event was posted already
  forget(token);
  heard(status);
}

function forget(token: number): void {
  waits.delete(token);
  if (waits.size === 0 && holder !== undefined) {
    clearInterval(holder);
    holder = undefined;
  }
  fdWaitsChanged(ready, -1);
}

/** A pending wait on an fd: the status it ends with, and its withdrawal. */
export interface FdWait {
  /** 0 once the fd is ready (or hung up: the next call says so), else a failed status. */
  readonly done: Promise<number>;
  /**
   * Ends the wait now with status 0, if it still pends; afterwards the
   * library no longer polls the fd for it, so the caller may close the fd.
   */
  withdraw(): void;
}

/**
 * Waits until `fd` has `events` (1: readable, 2: writable). Throws at once
 * what the library refuses (a closed fd: OS_ERROR naming "fd").
 */
export function whenFdReady(fd: number, events: number): FdWait {
  const s = native();
  const queue = eventQueue(s);
  const token = nextToken++ >>> 0 || nextToken++;
  const fullToken = (BigInt(queue) << 32n) | BigInt(token);
  const status = s.gpures_event_queue_watch(queue, fd, events, fullToken);
  if (status !== 0) throw lastError(status);
  const { promise, resolve } = Promise.withResolvers<number>();
  waits.set(token, resolve);
  if (holder === undefined) holder = setInterval(() => {}, 2 ** 30);
  fdWaitsChanged(ready, +1);
  return {
    done: promise,
    withdraw: () => {
      if (!waits.has(token)) return;
      s.gpures_event_queue_unwatch(queue, fullToken, withdrawn);
      forget(token);
      resolve(0);
    },
  };
}

/** Channel waits of this isolate (tests, leak checks). */
export function pendingFdWaits(): number {
  return waits.size;
}
