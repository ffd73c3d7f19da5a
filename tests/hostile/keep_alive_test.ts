// Keep-alives are user code run when a handle's last release happens: one
// that throws, or whose `release` is a getter that throws, must not stop the
// others in the same batch, nor keep the process alive.

import assert from "node:assert/strict";
import { load, VkBufferHandle } from "../../mod.ts";
import { describeChild, runChild } from "./_child.ts";
import { valid } from "../_support/fixtures.ts";

/** Releases raw handles the way native code or another thread would: not through a wrapper. */
function nativeRelease(...raws: bigint[]): void {
  const lib = Deno.dlopen(load().path, { gpures_release: { parameters: ["u64"], result: "i32" } });
  for (const raw of raws) assert.equal(lib.symbols.gpures_release(raw), 0);
  lib.close();
}

/** Collects what reaches globalThis as uncaught errors while `fn` runs. */
async function uncaught(fn: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const onError = (e: ErrorEvent) => {
    e.preventDefault();
    seen.push(e.error);
  };
  globalThis.addEventListener("error", onError);
  try {
    await fn();
  } finally {
    globalThis.removeEventListener("error", onError);
  }
  return seen;
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("a keep-alive whose release getter throws does not stop the rest of its batch", async () => {
  const ran: string[] = [];
  const errors = await uncaught(async () => {
    const bad = VkBufferHandle.create(valid("VkBufferHandle"), {
      keepAlive: {
        get release() {
          throw new Error("getter failed");
        },
      },
    });
    const thrower = VkBufferHandle.create(valid("VkBufferHandle"), {
      keepAlive: {
        release() {
          throw new Error("release failed");
        },
      },
    });
    const good = VkBufferHandle.create(valid("VkBufferHandle"), {
      keepAlive: { release: () => ran.push("good") },
    });
    // Released elsewhere, all three reach this isolate in one poll.
    nativeRelease(bad.intoRaw(), thrower.intoRaw(), good.intoRaw());
    for (let i = 0; i < 20 && ran.length === 0; i++) await tick(10);
    await tick(0);
  });
  assert.deepEqual(ran, ["good"]);
  assert.deepEqual(errors.map((e) => (e as Error).message).sort(), [
    "getter failed",
    "release failed",
  ]);
});

const CHILD = `
  import { load, VkBufferHandle } from "MOD";
  import { valid } from "FIXTURES";
  const lib = Deno.dlopen(load().path, { gpures_release: { parameters: ["u64"], result: "i32" } });
  const a = VkBufferHandle.create(valid("VkBufferHandle"), {
    keepAlive: { get release() { throw new Error("getter failed"); } },
  });
  const b = VkBufferHandle.create(valid("VkBufferHandle"), {
    keepAlive: { release() { console.log("b released"); } },
  });
  lib.symbols.gpures_release(a.intoRaw()); // released elsewhere: delivered by the poll
  lib.symbols.gpures_release(b.intoRaw());
  setTimeout(() => {}, 200); // long enough for the poll to deliver both
`;

Deno.test("a throwing keep-alive is reported as an uncaught error once its batch ran", async () => {
  const r = await runChild(CHILD, 20_000);
  assert.equal(r.signal, null, describeChild(r));
  assert.equal(r.code, 1, describeChild(r));
  assert.equal(r.stdout.trim(), "b released");
  assert.match(r.stderr, /Uncaught Error: getter failed/);
});

Deno.test("a handled keep-alive error leaves no timer behind: the process ends by itself", async () => {
  const r = await runChild(
    `addEventListener("error", (e) => { e.preventDefault(); console.log("handled"); });
    ${CHILD}`,
    20_000,
  );
  assert.equal(r.signal, null, describeChild(r));
  assert.equal(r.code, 0, describeChild(r));
  assert.deepEqual(r.stdout.trim().split("\n").sort(), ["b released", "handled"]);
});
