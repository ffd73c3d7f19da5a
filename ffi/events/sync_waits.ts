// Async waits on SyncPoints: the library's waiter thread holds each one and
// posts SYNC_DONE to this isolate's event queue, which the keep-alive
// watcher waits on (ffi/events/keep_alive.ts's WaitTable holds the loop open).

import { eventQueue, eventToken, WAIT_EVENTS, WaitTable } from "./keep_alive.ts";
import { cString, lastError, native } from "../load/native.ts";
import { errorFor, type GpuResourceError, TimeoutError } from "../errors.ts";

/** Options of a SyncPoint's `waitAsync()`. */
export interface WaitOptions {
  /**
   * Milliseconds before the wait fails with TimeoutError: 0 or more (fractions
   * count); Infinity, absent, or past about 285 years: no limit. NaN,
   * negatives and non-numbers are refused (InvalidHandleError, "timeout").
   */
  timeout?: number;
  /** Ends the wait, rejecting with the signal's reason. */
  signal?: AbortSignal;
}

interface PendingWait {
  /** The point's handle: a signal() made here resolves its waits at once. */
  handle: bigint;
  token: number;
  resolve(): void;
  reject(error: unknown): void;
  /** Builds the error of a failed status; the message is made where the wait began. */
  fail(status: number): unknown;
}

const waits = new WaitTable<PendingWait>(WAIT_EVENTS.syncDone, done);
/** The tokens of this isolate's pending waits, by the point's handle. */
const byHandle = new Map<bigint, Set<number>>();
const TIMED_OUT = 12;

function done(wait: PendingWait, status: number): void {
  const same = byHandle.get(wait.handle);
  same?.delete(wait.token);
  if (same?.size === 0) byHandle.delete(wait.handle);
  if (status === 0) wait.resolve();
  else wait.reject(wait.fail(status));
}

/**
 * Hands the wait on `handle` to the waiter thread. `describe` names the
 * point in messages; `signal` cancels. Throws at once what the library
 * refuses (a point the host cannot wait on, a released handle).
 */
export function waitOnThread(
  handle: bigint,
  timeoutNs: bigint,
  describe: string,
  signal?: AbortSignal,
  why?: () => Error | undefined,
): Promise<void> {
  const s = native();
  const queue = eventQueue(s);
  const { promise, resolve, reject } = Promise.withResolvers<void>();
  const wait: PendingWait = {
    handle,
    token: 0,
    resolve,
    reject,
    fail: (code) => {
      if (code === 13 && signal?.aborted) return signal.reason;
      if (code === TIMED_OUT) {
        return new TimeoutError(`${describe} was not reached in time`, "TIMED_OUT");
      }
      return why?.() ?? lastErrorFor(code, describe);
    },
  };
  const token = wait.token = waits.add(wait);
  const fullToken = eventToken(queue, token);
  const status = s.gpures_sync_wait_async(handle, timeoutNs, queue, fullToken);
  if (status !== 0) {
    waits.take(token);
    throw lastError(status);
  }
  let same = byHandle.get(handle);
  if (!same) byHandle.set(handle, same = new Set());
  same.add(token);
  if (signal) {
    const abort = () => s.gpures_sync_cancel(queue, fullToken);
    if (signal.aborted) abort();
    else signal.addEventListener("abort", abort, { once: true });
    promise.finally(() => signal.removeEventListener("abort", abort)).catch(() => {});
  }
  return promise;
}

/** The status as an error; the waiter thread's message is not this thread's to read. */
function lastErrorFor(code: number, describe: string): GpuResourceError {
  const s = native();
  const name = cString(s.gpures_status_name(code)) || `STATUS_${code}`;
  return errorFor(name, `Cannot wait on ${describe}: ${cString(s.gpures_status_message(code))}`);
}

/**
 * The point `handle` was signalled from this isolate: its waits here are
 * reached now, a microtask away instead of a trip through the waiter thread
 * and back. Their waits on the thread are cancelled (their CANCELLED events
 * find no token and are dropped).
 */
export function reachedHere(handle: bigint): void {
  const tokens = byHandle.get(handle);
  if (!tokens) return;
  const s = native();
  const queue = eventQueue(s);
  for (const token of [...tokens]) {
    const wait = waits.take(token);
    if (wait) done(wait, 0);
    s.gpures_sync_cancel(queue, eventToken(queue, token));
  }
}

/** Async waits the waiter thread holds for every isolate (tests, leak checks). */
export function pendingSyncWaits(): number {
  return native().gpures_sync_pending();
}
