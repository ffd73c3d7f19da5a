// OpenClEvent SyncPoints over real OpenCL (PoCL in CI), in its own `deno test`
// process like tests/isolated/opencl_test.ts (PoCL once aborted at exit when
// it shared a process with Vulkan and EGL).
//
// The helper (tests/gpu_helpers/opencl, build/test-helpers) gates a
// clEnqueueFillBuffer behind a user event: nothing is written until the test
// sets the user event's status after a delay. The fill's cl_event is wrapped
// as an OpenClEvent; before the gate opens a read through a second queue
// shows the old bytes and the point is not reached; after `await waitAsync()`
// the same read shows the final bytes. A gate set to a negative status fails
// the fill, and the wait rejects with DeviceLostError.
//
// Without the helper or an OpenCL device every test is skipped and says why. Run:
//   deno test --allow-ffi --allow-read --allow-env --allow-run tests/isolated/sync_opencl_test.ts

import assert from "node:assert/strict";
import { DeviceLostError, liveHandles, OpenClEvent, TimeoutError } from "../../mod.ts";
import { assertAll, failure, settledWaits } from "../_support/sync_checks.ts";
import { helperLib } from "../_support/helper_lib.ts";

const symbols = {
  gpures_test_cl_last_error: { parameters: [], result: "pointer" },
  gpures_test_cl_describe_platform: { parameters: [], result: "pointer" },
  gpures_test_cl_sync_open: { parameters: ["u64", "u32"], result: "pointer" },
  gpures_test_cl_sync_close: { parameters: ["pointer"], result: "void" },
  gpures_test_cl_sync_reset: { parameters: ["pointer"], result: "void" },
  gpures_test_cl_sync_gate_fill: { parameters: ["pointer", "u32"], result: "pointer" },
  gpures_test_cl_sync_gate: { parameters: ["pointer"], result: "pointer" },
  gpures_test_cl_sync_open_gate: { parameters: ["pointer", "i32"], result: "i32" },
  gpures_test_cl_sync_fill_status: { parameters: ["pointer"], result: "i32" },
  gpures_test_cl_sync_read: { parameters: ["pointer", "buffer", "u64"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;
type Cl = Deno.DynamicLibrary<typeof symbols>["symbols"];

const HELPER = helperLib("libgpures_test_opencl.so");

function cString(ptr: Deno.PointerValue): string {
  return ptr === null ? "" : Deno.UnsafePointerView.getCString(ptr);
}

function openCl(): { cl: Cl; skip: null } | { cl: null; skip: string } {
  let cl: Cl;
  try {
    cl = Deno.dlopen(HELPER, symbols).symbols;
  } catch (e) {
    return {
      cl: null,
      skip: `${decodeURIComponent(HELPER.pathname)} cannot be loaded ` +
        `(${(e as Error).message.split("\n")[0]}); build it with ` +
        "`cmake -S . -B build && cmake --build build` (needs the OpenCL headers and loader: " +
        "apt install ocl-icd-opencl-dev opencl-headers pocl-opencl-icd)",
    };
  }
  const platform = cString(cl.gpures_test_cl_describe_platform());
  if (platform === "") {
    return { cl: null, skip: `no OpenCL device: ${cString(cl.gpures_test_cl_last_error())}` };
  }
  console.log(`sync_opencl_test: ${platform}`);
  return { cl, skip: null };
}

const { cl, skip } = openCl();
if (skip) console.log(`sync_opencl_test: skipping the OpenCL tests: ${skip}`);

const SIZE = 256 * 1024;
const OLD = 0x21;
const NEW = 0x9e;
const CL_COMPLETE = 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function context(): { ctx: Deno.PointerObject } & Disposable {
  const ctx = cl!.gpures_test_cl_sync_open(BigInt(SIZE), OLD);
  if (ctx === null) {
    throw new Error(`gpures_test_cl_sync_open: ${cString(cl!.gpures_test_cl_last_error())}`);
  }
  return { ctx, [Symbol.dispose]: () => cl!.gpures_test_cl_sync_close(ctx) };
}

function read(ctx: Deno.PointerObject): Uint8Array {
  const out = new Uint8Array(SIZE);
  assert.equal(
    cl!.gpures_test_cl_sync_read(ctx, out, BigInt(SIZE)),
    0,
    cString(cl!.gpures_test_cl_last_error()),
  );
  return out;
}

Deno.test({
  name: "OpenClEvent: a gated fill is stale before the gate opens and final after waitAsync",
  ignore: skip !== null,
  async fn() {
    const before = liveHandles();
    using c = context();
    const event = cl!.gpures_test_cl_sync_gate_fill(c.ctx, NEW);
    assert.notEqual(event, null, cString(cl!.gpures_test_cl_last_error()));
    {
      using point = OpenClEvent.create({ event });
      assert.equal(point.describe().event, BigInt(Deno.UnsafePointer.value(event)));
      // Without the wait: old bytes, not reached, a bounded wait times out.
      await sleep(20);
      assert.equal(point.signaled, false);
      assertAll(read(c.ctx), OLD, "before the gate opens");
      const timedOut = await failure(() => point.wait(20));
      assert.ok(timedOut instanceof TimeoutError, `${timedOut}`);
      const asyncTimedOut = await failure(() => point.waitAsync({ timeout: 20 }));
      assert.ok(asyncTimedOut instanceof TimeoutError, `${asyncTimedOut}`);
      assertAll(read(c.ctx), OLD, "after the timeouts");

      // The producer's go after a delay; the consumer waits on the waiter thread.
      const waiting = point.waitAsync({ timeout: 10_000 });
      let reached = false;
      waiting.then(() => (reached = true));
      setTimeout(() => {
        assert.equal(cl!.gpures_test_cl_sync_open_gate(c.ctx, CL_COMPLETE), 0);
      }, 50);
      await sleep(10);
      assert.equal(reached, false, "resolved before the gate opened");
      await waiting;
      assert.equal(cl!.gpures_test_cl_sync_fill_status(c.ctx), CL_COMPLETE);
      assert.equal(point.signaled, true);
      point.wait(0);
      assertAll(read(c.ctx), NEW, "after the wait");
      assert.equal(await settledWaits(), 0);
    }
    assert.equal(liveHandles(), before);
  },
});

Deno.test({
  name: "OpenClEvent: a blocking wait returns once the gate opens on another task",
  ignore: skip !== null,
  async fn() {
    using c = context();
    const event = cl!.gpures_test_cl_sync_gate_fill(c.ctx, NEW);
    assert.notEqual(event, null, cString(cl!.gpures_test_cl_last_error()));
    using point = OpenClEvent.create({ event });
    assertAll(read(c.ctx), OLD, "before the gate opens");
    await sleep(10);
    assert.equal(cl!.gpures_test_cl_sync_open_gate(c.ctx, CL_COMPLETE), 0);
    point.wait(10_000); // polls clGetEventInfo on this thread
    assertAll(read(c.ctx), NEW, "after the blocking wait");
  },
});

Deno.test({
  name:
    "OpenClEvent: a user event failed with a negative status rejects the wait with DeviceLostError",
  ignore: skip !== null,
  async fn() {
    using c = context();
    const event = cl!.gpures_test_cl_sync_gate_fill(c.ctx, NEW);
    assert.notEqual(event, null, cString(cl!.gpures_test_cl_last_error()));
    using fill = OpenClEvent.create({ event });
    using gate = OpenClEvent.create({ event: cl!.gpures_test_cl_sync_gate(c.ctx) });
    const waits = [fill.waitAsync({ timeout: 10_000 }), gate.waitAsync({ timeout: 10_000 })];
    for (const w of waits) w.catch(() => {});
    setTimeout(() => cl!.gpures_test_cl_sync_open_gate(c.ctx, -5 /* CL_OUT_OF_RESOURCES */), 30);
    for (const [what, w] of [["the user event", waits[1]], ["the gated fill", waits[0]]] as const) {
      const e = await failure(() => w);
      assert.ok(e instanceof DeviceLostError, `${what}: ${e}`);
    }
    assert.ok(cl!.gpures_test_cl_sync_fill_status(c.ctx) < 0, "the fill failed");
    const blocking = await failure(() => fill.wait(100));
    assert.ok(blocking instanceof DeviceLostError, `${blocking}`);
    assert.equal((blocking as DeviceLostError).field, "event");
    assertAll(read(c.ctx), OLD, "a failed fill wrote nothing");
    assert.equal(await settledWaits(), 0);
  },
});
