// Publishes that wait for a fan-out's BLOCK consumers: the fan-out posts ROOM
// to this isolate's event queue once a publish may go (gpures_fanout_notify),
// so a waiting publish holds no thread. The keep-alive watcher's one wait on
// the queue hears them all.

import { eventQueue, eventToken, WAIT_EVENTS, WaitTable } from "./keep_alive.ts";
import { lastError, native } from "../load/native.ts";

const waits = new WaitTable<(status: number) => void>(
  WAIT_EVENTS.room,
  (heard, status) => heard(status),
);

/**
 * Asks `fanout` to tell this isolate, once, that a publish may go (or, with
 * a failed status, that the fan-out closed): `heard` runs then. Returns the
 * withdrawal, a no-op once heard; call it only while the fan-out is open.
 */
export function whenRoom(fanout: Deno.PointerValue, heard: (status: number) => void): () => void {
  const s = native();
  const queue = eventQueue(s);
  const token = waits.add(heard);
  const full = eventToken(queue, token);
  const status = s.gpures_fanout_notify(fanout, queue, full);
  if (status !== 0) {
    waits.take(token);
    throw lastError(status);
  }
  return () => {
    if (waits.take(token)) s.gpures_fanout_notify_cancel(fanout, queue, full);
  };
}
