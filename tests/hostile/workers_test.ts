// Every isolate that loads gpures takes native resources (its event queue).
// They must come back when the isolate ends, or Worker lifetimes exhaust the
// library's tables and the server can no longer create handles.

import assert from "node:assert/strict";
import { load, VkBufferHandle } from "../../mod.ts";
import { valid } from "../_support/fixtures.ts";

const QUEUES = 4096; // the library's table of event queues
const env = Deno.permissions.querySync({ name: "env", variable: "GPURES_WORKER_LIFETIMES" });
/** Lifetimes to run: a few past a nearly full table in CI, 5000 in the long reliability run. */
const LIFETIMES = Number(
  (env.state === "granted" && Deno.env.get("GPURES_WORKER_LIFETIMES")) || 0,
);

function queues() {
  return Deno.dlopen(load().path, {
    gpures_event_queue_open: { parameters: ["buffer"], result: "i32" },
    gpures_event_queue_close: { parameters: ["u32"], result: "i32" },
  });
}

/** Opens queues until `free` are left (or the table is full); returns their ids. */
function fill(lib: ReturnType<typeof queues>, free: number): number[] {
  const taken: number[] = [];
  const out = new Uint32Array(1);
  while (lib.symbols.gpures_event_queue_open(out) === 0) taken.push(out[0]);
  for (const id of taken.splice(taken.length - free, free)) {
    lib.symbols.gpures_event_queue_close(id);
  }
  return taken;
}

async function lifetime(mode: "terminate" | "close"): Promise<string> {
  const worker = new Worker(new URL("./_queue_worker.ts", import.meta.url), { type: "module" });
  const answer = new Promise<string>((resolve) => {
    worker.onmessage = (e) => resolve(e.data);
  });
  worker.postMessage(mode);
  const result = await answer;
  if (mode === "terminate") worker.terminate();
  return result;
}

/** Waits until a queue can be opened again (a Worker's thread ends a moment after it does). */
async function settle(lib: ReturnType<typeof queues>): Promise<void> {
  const out = new Uint32Array(1);
  for (let i = 0; i < 200; i++) {
    if (lib.symbols.gpures_event_queue_open(out) === 0) {
      lib.symbols.gpures_event_queue_close(out[0]);
      return;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("Worker lifetimes give their event queues back: more lifetimes than free queues", async () => {
  VkBufferHandle.create(valid("VkBufferHandle"), { keepAlive: {} }).release(); // main's own queue
  const lib = queues();
  const free = 4;
  const taken = fill(lib, free);
  try {
    assert.ok(taken.length >= QUEUES - 64, `the table was nearly filled (${taken.length})`);
    const runs = Math.max(LIFETIMES, 3 * free);
    for (let i = 0; i < runs; i++) {
      const answer = await lifetime(i % 2 ? "close" : "terminate");
      assert.equal(answer, "ok", `lifetime ${i + 1} of ${runs}`);
      await settle(lib);
    }
  } finally {
    for (const id of taken) lib.symbols.gpures_event_queue_close(id);
    lib.close();
  }
  using after = VkBufferHandle.create(valid("VkBufferHandle"), { keepAlive: {} });
  assert.equal(after.refcount, 1, "the main isolate still works");
});
