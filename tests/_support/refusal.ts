// What a refused argument looks like to a test: an InvalidHandleError naming the field, the one
// answer gpures gives a value it will not take (docs/reliability.md).

import assert from "node:assert/strict";
import { InvalidHandleError } from "../../mod.ts";

/** Asserts `e` is an InvalidHandleError naming `field`; `label`, if given, leads each message. */
export function assertRefusal(
  e: unknown,
  field: string,
  label?: string,
): asserts e is InvalidHandleError {
  const at = label === undefined ? "" : `${label}: `;
  assert.ok(e instanceof InvalidHandleError, `${at}InvalidHandleError, not ${e}`);
  assert.equal(e.field, field, `${at}${e.message}`);
}

/** Asserts `f` throws InvalidHandleError naming `field`, with a message matching `why` if given. */
export function refused(f: () => unknown, field: string, why?: RegExp): void {
  assert.throws(f, (e: unknown) => {
    assertRefusal(e, field);
    if (why) assert.match(e.message, why);
    return true;
  });
}
