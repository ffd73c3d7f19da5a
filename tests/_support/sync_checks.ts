// Checks the SyncPoint tests share.

import assert from "node:assert/strict";
import { pendingSyncWaits } from "../../mod.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every byte of `bytes` is `value`, or a message naming the first that is not. */
export function assertAll(bytes: Uint8Array, value: number, what: string): void {
  const at = bytes.findIndex((b) => b !== value);
  assert.equal(at, -1, `${what}: byte ${at} is ${bytes[at]}, expected ${value}`);
}

/**
 * pendingSyncWaits() once it is 0, or what it still is after 1 s. A wait
 * that a signal() here resolved is cancelled on the waiter thread, which lets
 * go of it on its next round: the count can lag the promise a little.
 */
export async function settledWaits(): Promise<number> {
  for (let i = 0; i < 100 && pendingSyncWaits() !== 0; i++) await sleep(10);
  return pendingSyncWaits();
}

/** Runs `fn`; the error it throws or rejects with (fails when it does neither). */
export async function failure(fn: () => unknown): Promise<Error> {
  try {
    await fn();
  } catch (e) {
    return e as Error;
  }
  assert.fail("expected an error");
}
