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

/** How a notice is asked for and withdrawn: a pool's own calls, or a decoder's over its pool. */
export interface SlotNotices {
  /** gpures_pool_notify() or the like: a status. */
  ask(queue: number, token: bigint): number;
  /** gpures_pool_notify_cancel() or the like. */
  withdraw(queue: number, token: bigint, why: number): void;
}

/** A pool's notices. */
const poolNotices = (pool: Deno.PointerValue): SlotNotices => {
  const s = native();
  return {
    ask: (queue, token) => s.gpures_pool_notify(pool, queue, token),
    withdraw: (queue, token, why) => void s.gpures_pool_notify_cancel(pool, queue, token, why),
  };
};

/**
 * Asks `pool` (a native pool, or any {@link SlotNotices}) to tell this
 * isolate, once, that a slot is free (or, with a failed status, that the pool
 * closed): `heard` runs then. Returns the withdrawal, a no-op once heard; call
 * it only while the native pool is open. Throws at once what the library
 * refuses.
 */
export function whenSlotFree(
  pool: Deno.PointerValue | SlotNotices,
  heard: (status: number) => void,
): (why: number) => void {
  const notices = pool !== null && typeof pool === "object" && "ask" in pool
    ? pool
    : poolNotices(pool as Deno.PointerValue);
  const queue = eventQueue(native());
  const token = waits.add(heard);
  const full = eventToken(queue, token);
  const status = notices.ask(queue, full);
  if (status !== 0) {
    waits.take(token);
    throw lastError(status);
  }
  return (why) => {
    if (waits.take(token)) notices.withdraw(queue, full, why);
  };
}

/** Acquires of this isolate waiting on a pool's notice (tests, leak checks). */
export function pendingSlotWaits(): number {
  return waits.size;
}
