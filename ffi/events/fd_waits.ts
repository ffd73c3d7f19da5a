// Channel waits: a socket that is full (or empty) is watched by this
// isolate's one wait on its event queue (gpures_event_queue_watch), which
// polls it along with the queue and posts FD_READY when it is ready. A
// pending receive, send or accept holds no thread, however many pend.

import { eventQueue, eventToken, WAIT_EVENTS, WaitTable } from "./keep_alive.ts";
import { lastError, native } from "../load/native.ts";

const waits = new WaitTable<(status: number) => void>(
  WAIT_EVENTS.fdReady,
  (resolve, status) => resolve(status),
);
const withdrawn = new Uint32Array(1);

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
  const { promise, resolve } = Promise.withResolvers<number>();
  const token = waits.add(resolve);
  const full = eventToken(queue, token);
  const status = s.gpures_event_queue_watch(queue, fd, events, full);
  if (status !== 0) {
    waits.take(token);
    throw lastError(status);
  }
  return {
    done: promise,
    withdraw: () => {
      if (!waits.take(token)) return;
      s.gpures_event_queue_unwatch(queue, full, withdrawn);
      resolve(0);
    },
  };
}

/** Channel waits of this isolate (tests, leak checks). */
export function pendingFdWaits(): number {
  return waits.size;
}
