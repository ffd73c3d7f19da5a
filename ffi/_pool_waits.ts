// Acquires that wait for a slot: the pool posts SLOT_FREE to this isolate's
// event queue when one comes free (gpures_pool_notify), so a waiting acquire
// holds no thread, however many wait. The keep-alive watcher's one wait on
// the queue hears them all; a ref'd timer that never fires holds the event
// loop open while any pends (an awaited promise whose loop exits is an error).

import { eventQueue, slotWaitsChanged } from "./_keep_alive.ts";
import { lastError, native } from "./_native.ts";

const waits = new Map<number, (status: number) => void>();
let nextToken = 1;
let holder: ReturnType<typeof setInterval> | undefined;

function slotFree(token: number, status: number): void {
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
  slotWaitsChanged(slotFree, -1);
}

/**
 * Asks `pool` to tell this isolate, once, that a slot is free (or, with a
 * failed status, that the pool closed): `heard` runs then. Returns the
 * withdrawal, a no-op once heard; call it only while the native pool is open.
 * Throws at once what the library refuses.
 */
export function whenSlotFree(
  pool: Deno.PointerValue,
  heard: (status: number) => void,
): (why: number) => void {
  const s = native();
  const queue = eventQueue(s);
  const token = nextToken++ >>> 0 || nextToken++;
  const fullToken = (BigInt(queue) << 32n) | BigInt(token);
  waits.set(token, heard);
  if (holder === undefined) holder = setInterval(() => {}, 2 ** 30);
  slotWaitsChanged(slotFree, +1);
  const status = s.gpures_pool_notify(pool, queue, fullToken);
  if (status !== 0) {
    forget(token);
    throw lastError(status);
  }
  return (why) => {
    if (!waits.has(token)) return;
    forget(token);
    s.gpures_pool_notify_cancel(pool, queue, fullToken, why);
  };
}

/** Acquires of this isolate waiting on a pool's notice (tests, leak checks). */
export function pendingSlotWaits(): number {
  return waits.size;
}
