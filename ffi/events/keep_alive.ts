// Keep-alives: what a handle's producer holds until the last release,
// wherever it happens. The library posts each last release (and each
// consumer's markConsumed) to this isolate's event queue, on any thread;
// this file delivers them to the objects it holds under each handle's token.

import { check, eventsAt, eventView, native, u32At, u32Out } from "../load/native.ts";
import { lastError } from "../load/native.ts";
import type { Symbols } from "../gen/symbols.ts";

/** What a handle's producer holds under its token. */
export interface KeepAliveRecord {
  keepAlive: unknown;
  /** What the handle aliases (buffers, a GPUTexture): held, never called. */
  holds: unknown[];
  /** Runs once the keep-alive has run (its RELEASED event, or releaseEarly). */
  ended?: () => void;
}

// The records by token: token t is slot t - 1 of `records`, a slot reused
// once its record is gone (an array and a free list cost a fraction of a Map).
// Reuse is safe: a handle's RELEASED event is the last event with its token
// (each MARK_CONSUMED is posted while the handle is pinned, so before it) and
// the queue is first in, first out.
const records: (KeepAliveRecord | undefined)[] = [];
const freeRecords: number[] = [];
/** Records held: while 0, no event can be this isolate's to deliver (a live binding). */
export let liveRecords = 0;
let queue = 0;
let timer: ReturnType<typeof setInterval> | undefined;
const EVENT_RELEASED = 1;
const EVENT_SYNC_DONE = 3;
const EVENT_SLOT_FREE = 4;
const EVENT_FD_READY = 5;
const EVENT_ROOM = 6;

/**
 * Listeners of wait events by type: SYNC_DONE (ffi/events/sync_waits.ts), SLOT_FREE
 * (ffi/events/pool_waits.ts), FD_READY (ffi/events/fd_waits.ts), ROOM (ffi/events/room_waits.ts).
 */
type WaitListener = (token: number, status: number) => void;
const waitListeners = new Map<number, WaitListener>();
/** Waits pending on this isolate's queue, of every type. */
let pendingWaits = 0;

/**
 * Routes this isolate's events of `type` to `listener` and counts `delta`
 * more (or fewer) pending waits; while any pends, the watcher runs.
 */
function waitsChanged(type: number, listener: WaitListener, delta: number): void {
  waitListeners.set(type, listener);
  pendingWaits += delta;
  if (pendingWaits > 0) startPolling();
}

/** The kinds of wait whose ends reach this isolate as events of their own type. */
export const WAIT_EVENTS = {
  /** SyncPoint waits on the waiter thread (gpures_sync_wait_async). */
  syncDone: EVENT_SYNC_DONE,
  /** Acquires waiting on a pool's notice (gpures_pool_notify). */
  slotFree: EVENT_SLOT_FREE,
  /** Channel fds this isolate's wait watches (gpures_event_queue_watch). */
  fdReady: EVENT_FD_READY,
  /** Publishes waiting for a fan-out's BLOCK consumers (gpures_fanout_notify). */
  room: EVENT_ROOM,
} as const;

/**
 * The pending waits of one event type, by token. While any pends, the
 * watcher runs and a ref'd timer that never fires holds the event loop open
 * (an awaited promise whose loop exits is an error); the watcher's own wait
 * is unref'd. Each wait ends once: by its event (`ended` runs) or by `take`.
 */
export class WaitTable<T> {
  readonly #waits = new Map<number, T>();
  readonly #listener: WaitListener;
  #next = 1;
  #holder: ReturnType<typeof setInterval> | undefined;

  constructor(readonly type: number, ended: (wait: T, status: number) => void) {
    this.#listener = (token, status) => {
      const wait = this.take(token);
      if (wait !== undefined) ended(wait, status); // else withdrawn meanwhile: a stale event
    };
  }

  /** Adds a wait under a new token (never 0), which its event will carry. */
  add(wait: T): number {
    const token = this.#next++ >>> 0 || this.#next++;
    this.#waits.set(token, wait);
    this.#holder ??= setInterval(() => {}, 2 ** 30);
    waitsChanged(this.type, this.#listener, +1);
    return token;
  }

  /** Ends the wait with `token` without its event; what it was, if it still pended. */
  take(token: number): T | undefined {
    const wait = this.#waits.get(token);
    if (wait === undefined) return undefined;
    this.#waits.delete(token);
    if (this.#waits.size === 0 && this.#holder !== undefined) {
      clearInterval(this.#holder);
      this.#holder = undefined;
    }
    waitsChanged(this.type, this.#listener, -1);
    return wait;
  }

  get size(): number {
    return this.#waits.size;
  }
}

/** The event token of `token` on `queue`: only that queue's isolate receives it. */
export function eventToken(queue: number, token: number): bigint {
  return (BigInt(queue) << 32n) | BigInt(token);
}
const NO_ERRORS: unknown[] = [];
const NO_HOLDS: unknown[] = [];

/** A token for a new record; give it back with dropToken if the record is never added. */
export function takeToken(): number {
  return (freeRecords.length ? freeRecords.pop()! : records.push(undefined) - 1) + 1;
}

/** Gives back a token whose record was never added. */
export function dropToken(token: number): void {
  records[token - 1] = undefined;
  freeRecords.push(token - 1);
}

/** Holds `keepAlive` and `holds` under `token` until its RELEASED event. */
export function addRecord(token: number, keepAlive: unknown, holds: unknown[]): KeepAliveRecord {
  const record = { keepAlive, holds };
  records[token - 1] = record;
  liveRecords++;
  return record;
}

/**
 * Runs `record`'s release now, when it is still the record under `token`:
 * its handle's last release has happened (a pool handed its slot out again)
 * and the RELEASED event is on its way. The token stays taken until that
 * event, which then finds nothing left to run. Returns what the call threw.
 */
export function releaseEarly(token: number, record: KeepAliveRecord): unknown[] {
  if (records[token - 1] !== record || record.keepAlive === undefined) return NO_ERRORS;
  const errors: unknown[] = [];
  const keepAlive = record.keepAlive;
  record.keepAlive = undefined;
  call(keepAlive, "release", errors);
  finish(record);
  return errors;
}

/** Lets go of what a record held once its keep-alive ran, and tells whoever asked. */
function finish(record: KeepAliveRecord): void {
  record.keepAlive = undefined; // a pool may still name the record
  record.holds = NO_HOLDS;
  const ended = record.ended;
  record.ended = undefined;
  ended?.();
}

function removeRecord(token: number): KeepAliveRecord | undefined {
  const record = token >= 1 ? records[token - 1] : undefined;
  if (record) {
    dropToken(token);
    liveRecords--;
  }
  return record;
}

/**
 * This isolate's event queue, opened on first use. It closes itself when the
 * isolate's thread ends (a Worker that finishes or is terminated), so Worker
 * lifetimes never exhaust the library's table of queues.
 */
export function eventQueue(s: Symbols): number {
  if (!queue) {
    check(s.gpures_event_queue_open(u32Out));
    const opened = u32Out[0];
    const status = s.gpures_event_queue_close_on_thread_exit(opened);
    if (status !== 0) {
      const error = lastError(status);
      s.gpures_event_queue_close(opened);
      throw error;
    }
    queue = opened;
  }
  return queue;
}

/** Calls a keep-alive's method; what its getter or body throws is collected, never thrown. */
function call(target: unknown, method: "release" | "markConsumed", errors: unknown[]): void {
  try {
    const fn = (target as Record<string, unknown> | null)?.[method];
    if (typeof fn === "function") fn.call(target);
  } catch (e) {
    errors.push(e);
  }
}

let draining = false;

/**
 * Delivers the events the library queued for this isolate: last releases and
 * consumer marks, made on any thread. Returns what the callbacks threw.
 */
export function drain(): unknown[] {
  // A callback that releases another handle lands here again: the outer loop
  // polls until the queue is empty, so the nested call leaves its events to it
  // rather than overwriting the batch being delivered.
  if (!queue || draining) return NO_ERRORS;
  draining = true;
  try {
    return deliver();
  } finally {
    draining = false;
  }
}

function deliver(): unknown[] {
  const errors: unknown[] = [];
  const s = native();
  for (let n = 1; n > 0;) { // until empty: callbacks may have released more
    check(s.gpures_event_queue_poll_at(queue, eventsAt, 64, u32At));
    n = u32Out[0];
    for (let i = 0; i < n; i++) {
      // Tokens are (queue << 32) | slot: only this isolate's queue receives them.
      const token = eventView.getUint32(i * 16, true);
      if (eventView.getUint32(i * 16 + 4, true) !== queue) continue;
      const type = eventView.getUint32(i * 16 + 8, true);
      const listener = waitListeners.get(type);
      if (listener) {
        listener(token, eventView.getUint32(i * 16 + 12, true));
      } else if (type === EVENT_RELEASED) {
        const record = removeRecord(token);
        if (record) {
          call(record.keepAlive, "release", errors);
          finish(record);
        }
      } else {
        const record = token >= 1 ? records[token - 1] : undefined;
        if (record) call(record.keepAlive, "markConsumed", errors);
      }
    }
  }
  if (liveRecords === 0 && pendingWaits === 0 && timer !== undefined) {
    clearInterval(timer);
    timer = undefined;
  }
  return errors;
}

/**
 * Reports what keep-alive callbacks threw the way the runtime reports an
 * uncaught error (an "error" event on globalThis, then exit unless it is
 * handled). It happens after the whole batch ran and the current call
 * returned: a callback's failure is the producer's, not the caller's.
 */
export function report(errors: unknown[]): void {
  for (const e of errors) queueMicrotask(() => reportError(e));
}

/**
 * Releases made elsewhere (a Worker, native code) reach this isolate through
 * a wait: gpures_event_queue_wait runs on a thread of Deno's and returns as
 * soon as such a release is queued, so the keep-alive runs at once. The same
 * thread polls the channel fds this isolate waits on: whatever an isolate
 * waits for, it holds one thread of Deno's. The wait
 * must not keep the process alive (a handle that native code holds forever
 * would hang the exit), which only Deno's op scheduler can grant
 * (`unrefOpPromise`, an internal); without it a 20 ms poll does the job.
 * Either runs only while a keep-alive waits on a reference this isolate gave
 * away or no longer holds; releases made here are delivered at once.
 */
export function startPolling(): void {
  if (liveRecords === 0 && pendingWaits === 0) return;
  if (unrefOp) {
    if (!waiting) void waitForReleases();
    return;
  }
  if (timer !== undefined) return;
  const id = setInterval(() => {
    if (queue) native().gpures_event_queue_wait(queue, 0, null); // the watched fds, once
    report(drain());
  }, 20);
  Deno.unrefTimer(id);
  timer = id;
}

type Core = { unrefOpPromise?: (p: Promise<unknown>) => void };
const core = (Deno as unknown as Record<symbol, { core?: Core } | undefined>)[
  (Deno as unknown as { internal: symbol }).internal
]?.core;
const unrefOp = typeof core?.unrefOpPromise === "function"
  ? core.unrefOpPromise.bind(core)
  : undefined;
let waiting = false;
const WAIT_SLICE_MS = 1000;

async function waitForReleases(): Promise<void> {
  waiting = true;
  try {
    while ((liveRecords > 0 || pendingWaits > 0) && queue) {
      // No out-buffer: the isolate may end while the wait runs, and its memory with it.
      const wait = native().gpures_event_queue_wait_async(queue, WAIT_SLICE_MS, null);
      unrefOp!(wait);
      if (await wait !== 0) return; // the queue closed: the isolate is ending
      report(drain());
    }
  } finally {
    waiting = false;
  }
}

/** What this isolate holds under a handle's token, if the token is this isolate's. */
export function holdingsOf(token: bigint): unknown[] | undefined {
  if (!queue || token >> 32n !== BigInt(queue)) return undefined; // another isolate's token
  const slot = token & 0xffff_ffffn;
  return slot >= 1n && slot <= BigInt(records.length)
    ? records[Number(slot) - 1]?.holds
    : undefined;
}
