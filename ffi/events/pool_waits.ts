// Acquires that wait for a slot: the pool posts SLOT_FREE to this isolate's
// event queue when one comes free (gpures_pool_notify), so a waiting acquire
// holds no thread, however many wait. The keep-alive watcher's one wait on
// the queue hears them all.

import { eventQueue, eventToken, WAIT_EVENTS, WaitTable } from "./keep_alive.ts";
import { lastError, native } from "../load/native.ts";

const waits = new WaitTable<(status: number) => void>(
  WAIT_EVENTS.slotFree,
  (heard, status) => heard(status),
);

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
  const token = waits.add(heard);
  const full = eventToken(queue, token);
  const status = s.gpures_pool_notify(pool, queue, full);
  if (status !== 0) {
    waits.take(token);
    throw lastError(status);
  }
  return (why) => {
    if (waits.take(token)) s.gpures_pool_notify_cancel(pool, queue, full, why);
  };
}

/** Acquires of this isolate waiting on a pool's notice (tests, leak checks). */
export function pendingSlotWaits(): number {
  return waits.size;
}
