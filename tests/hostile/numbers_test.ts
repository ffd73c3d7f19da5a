// Numbers a careless or hostile caller can give to every public parameter
// that takes a timeout, a count or a size. One rule holds for all of them
// (docs/reliability.md, "Timeouts, counts and sizes"):
//
// - a timeout is a number of milliseconds, 0 or more: fractions count (the
//   wait is rounded up, never down), and Infinity or anything past what the
//   native wait can count (2^63 ns, about 292 years) means no limit;
// - a count or a size is an integer, a number or a bigint, in its range;
// - anything else (NaN, a negative timeout, a string, a bigint timeout, a
//   fraction or an out-of-range count) is InvalidHandleError naming the field.
//
// Never an untyped error, never a wait that wraps to a few milliseconds, never
// a wait that hangs.

import assert from "node:assert/strict";
import {
  Channel,
  CpuBytes,
  CpuFence,
  CudaImporter,
  FramePool,
  FrameQueue,
  GpuResourceError,
  InvalidHandleError,
  PixelFormat,
  TimeoutError,
} from "../../mod.ts";
import { close, memfd } from "../_support/libc.ts";
import { rgbaFrame } from "../_support/fixtures.ts";
import { eglImporter, vulkanImporter, webGpuUploader } from "../_support/no_device.ts";
import { assertRefusal } from "../_support/refusal.ts";

const linux = Deno.build.os === "linux";

const HOSTILE: readonly unknown[] = [
  NaN,
  Infinity,
  -Infinity,
  0,
  -0,
  -1,
  0.5,
  1.5,
  2 ** 31,
  2 ** 32,
  2 ** 53,
  2 ** 64,
  1e300,
  Number.MAX_VALUE,
  "4",
  4n,
  null,
];

/** How long a wait may run before the test wakes it: it honoured a long timeout. */
const WAKE_AFTER_MS = 150;

type Verdict = "refused" | "at once" | "short" | "long";

/** What the rule says of `v` as a timeout. */
function timeoutVerdict(v: unknown): Verdict {
  if (typeof v !== "number" || Number.isNaN(v) || v < 0) return "refused";
  return v === 0 ? "at once" : v < WAKE_AFTER_MS ? "short" : "long";
}

/** `where` with the value `v`, as the messages name a case. */
function labelled(where: string, v: unknown): string {
  return `${where} with ${typeof v === "bigint" ? `${v}n` : Object.is(v, -0) ? "-0" : String(v)}`;
}

/** What the rule says of `v` as a count or size from `min` to `max`. */
function countHonoured(v: unknown, min: number, max: number): boolean {
  if (typeof v === "bigint") return v >= BigInt(min) && v <= BigInt(max);
  return typeof v === "number" && Number.isInteger(v) && v >= min && v <= max;
}

/** How a wait ended: it timed out, the test woke it, or it threw. */
type Outcome = { ended: "timed out" | "woken" } | { ended: "threw"; error: unknown };

/** Runs `wait`; if it has not settled after WAKE_AFTER_MS, calls `wake` and sees how it ends. */
async function outcomeOf(
  wait: () => Promise<unknown>,
  wake: () => void,
  timedOut: (e: unknown) => boolean,
): Promise<Outcome> {
  let settled = false;
  let woken = false;
  const result = (async () => {
    try {
      await wait();
      return { ended: woken ? "woken" : "at once?" };
    } catch (error) {
      if (timedOut(error)) return { ended: "timed out" };
      return { ended: "threw", error };
    } finally {
      settled = true;
    }
  })();
  await new Promise((r) => setTimeout(r, WAKE_AFTER_MS));
  if (!settled) {
    woken = true;
    wake();
  }
  return await result as Outcome;
}

/** Asserts that the outcome of a wait given timeout `v` is what the rule says. */
function assertTimeoutRule(where: string, field: string, v: unknown, outcome: Outcome): void {
  const label = labelled(where, v);
  const verdict = timeoutVerdict(v);
  if (outcome.ended === "threw") {
    assertRefusal(outcome.error, field, label);
    assert.equal(verdict, "refused", `${label} was refused, but the rule honours it`);
    return;
  }
  assert.notEqual(verdict, "refused", `${label} was taken, but the rule refuses it`);
  const expected = verdict === "long" ? "woken" : "timed out";
  assert.equal(outcome.ended, expected, `${label}: ${outcome.ended}, not ${expected}`);
}

/** A Worker running the blocking waits (tests/hostile/_numbers_worker.ts). */
function blockingWaits() {
  const worker = new Worker(new URL("./_numbers_worker.ts", import.meta.url), { type: "module" });
  return {
    call(op: string, target: unknown, value: unknown): Promise<Record<string, unknown>> {
      const { promise, resolve } = Promise.withResolvers<Record<string, unknown>>();
      worker.onmessage = (e) => resolve(e.data);
      worker.postMessage({ op, target, value });
      return promise;
    },
    [Symbol.dispose]: () => worker.terminate(),
  };
}

/** The Worker's reply as an Outcome (a refusal as the error it names). */
function replied(reply: Record<string, unknown>): Outcome {
  if (reply.result === "timed out") return { ended: "timed out" };
  if (reply.result === "error") {
    const error = reply.name === "InvalidHandleError"
      ? new InvalidHandleError(reply.message as string, "INVALID_VALUE", reply.field as string)
      : new Error(`${reply.name}: ${reply.message}`);
    return { ended: "threw", error };
  }
  return { ended: "woken" };
}

Deno.test({
  name: "every timeout follows the rule: acquire(), waitAsync(), Channel.connect()",
  ignore: !linux,
  sanitizeOps: false,
  async fn() {
    using pool = FramePool.create({ format: "RgbaU8", width: 16, height: 16, slots: 1 });
    let held = await pool.acquire();
    for (const v of HOSTILE) {
      const outcome = await outcomeOf(
        async () => (await pool.acquire({ timeout: v as number })).release(),
        () => held.release(),
        (e) => e instanceof TimeoutError,
      );
      assertTimeoutRule("acquire({ timeout })", "timeout", v, outcome);
      if (held.released) held = await pool.acquire();
    }
    held.release();

    for (const v of HOSTILE) {
      using fence = CpuFence.create();
      const outcome = await outcomeOf(
        () => fence.waitAsync({ timeout: v as number }),
        () => fence.signal(),
        (e) => e instanceof TimeoutError,
      );
      assertTimeoutRule("waitAsync({ timeout })", "timeout", v, outcome);
    }

    {
      for (const [i, v] of HOSTILE.entries()) {
        const path = `@gpures-numbers-${Deno.pid}-${i}`; // abstract: no file to write or remove
        let listener: ReturnType<typeof Channel.listen> | undefined;
        const outcome = await outcomeOf(
          async () => (await Channel.connect(path, { wait: v as number })).close(),
          () => listener = Channel.listen(path),
          (e) => e instanceof GpuResourceError && !(e instanceof InvalidHandleError),
        );
        listener?.close();
        assertTimeoutRule("Channel.connect(path, { wait })", "wait", v, outcome);
      }
    }
  },
});

Deno.test({
  name: "every blocking timeout follows the rule, and none blocks its thread forever: " +
    "wait(), beginAccess(), FrameQueue.popBlocking()",
  ignore: !linux,
  async fn() {
    using waits = blockingWaits();
    for (const v of HOSTILE) {
      using fence = CpuFence.create();
      const reply = waits.call("wait", fence.clone().intoRaw(), v);
      const outcome = await outcomeOf(() => reply, () => fence.signal(), () => false);
      assertTimeoutRule("SyncPoint.wait(timeout)", "timeout", v, replied(await reply));
      void outcome;
    }
    for (const v of HOSTILE) {
      using fence = CpuFence.create();
      using frame = rgbaFrame(memfd(32 * 32 * 4), { takeOwnership: true });
      frame.setFences({ acquire: fence });
      const reply = waits.call("beginAccess", frame.clone().intoRaw(), v);
      await outcomeOf(() => reply, () => fence.signal(), () => false);
      assertTimeoutRule("beginAccess(timeout)", "timeout", v, replied(await reply));
    }
    const queue = new FrameQueue(2);
    for (const v of HOSTILE) {
      const reply = waits.call("popBlocking", queue.buffer, v);
      const frame = () =>
        CpuBytes.create({
          data: new Uint8Array(64),
          rowPitch: 64,
          format: "R16U",
          width: 32,
          height: 1,
        });
      await outcomeOf(() => reply, () => queue.push(frame()), () => false);
      assertTimeoutRule("FrameQueue.popBlocking(timeoutMs)", "timeoutMs", v, replied(await reply));
    }
  },
});

/**
 * Asserts that `f(v)` takes `v` as given when the rule honours it (it returns,
 * or fails with a typed error for what `v` asks) and otherwise refuses it
 * with InvalidHandleError naming `field`.
 */
function assertCountRule(
  where: string,
  field: string,
  min: number,
  max: number,
  f: (v: unknown) => unknown,
): void {
  for (const v of HOSTILE) {
    const label = labelled(where, v);
    const honoured = countHonoured(v, min, max);
    let error: unknown;
    try {
      const made = f(v) as { close?(): void; release?(): void } | undefined;
      made?.close?.();
    } catch (e) {
      error = e;
    }
    if (honoured) {
      // Taken as given: made, or refused for what it asks (a frame too large), with a typed error.
      if (error !== undefined) {
        assert.ok(error instanceof GpuResourceError, `${label}: a typed error, not ${error}`);
      }
    } else {
      assertRefusal(error, field, label);
    }
  }
}

const U32_MAX = 2 ** 32 - 1;

Deno.test({
  name: "every count and size follows the rule",
  ignore: !linux,
  fn() {
    const pool = (change: Record<string, unknown>) => () =>
      FramePool.create({ format: "RgbaU8", width: 16, height: 16, slots: 2, ...change } as never);
    assertCountRule("FramePool.create width", "width", 1, U32_MAX, (v) => pool({ width: v })());
    assertCountRule("FramePool.create height", "height", 1, U32_MAX, (v) => pool({ height: v })());
    assertCountRule("FramePool.create slots", "slots", 1, 256, (v) => pool({ slots: v })());
    assertCountRule(
      "FramePool.create rowAlign",
      "rowAlign",
      1,
      4096,
      (v) => pool({ rowAlign: v })(),
    );
    assertCountRule("new FrameQueue", "capacity", 1, 4096, (v) => new FrameQueue(v as number));
    assertCountRule(
      "PixelFormat.layout width",
      "width",
      0,
      U32_MAX,
      (v) => PixelFormat.layout("RgbaU8", v as number, 16),
    );
    assertCountRule(
      "PixelFormat.layout rowAlign",
      "rowAlign",
      0,
      U32_MAX,
      (v) => PixelFormat.layout("RgbaU8", 16, 16, { rowAlign: v as number }),
    );
    assertCountRule(
      "PixelFormat.planeExtent plane",
      "plane",
      0,
      0,
      (v) => PixelFormat.planeExtent("RgbaU8", v as number, 16, 16),
    );
    assertCountRule(
      "PixelFormat.planeExtent height",
      "height",
      0,
      U32_MAX,
      (v) => PixelFormat.planeExtent("RgbaU8", 0, 16, v as number),
    );
    assertCountRule(
      "PixelFormat.frameSize rowPitch",
      "rowPitch",
      0,
      U32_MAX,
      (v) => PixelFormat.frameSize("RgbaU8", 16, 16, v as number),
    );
    using frame = rgbaFrame(memfd(32 * 32 * 4), { takeOwnership: true });
    assertCountRule("dupFd index", "index", 0, 0, (v) => {
      const fd = frame.dupFd(v as number);
      close(fd);
    });
    assertCountRule(
      "new WebGpuFrameUploader maxShapes",
      "maxShapes",
      1,
      U32_MAX,
      (v) => webGpuUploader({ maxShapes: v as number }),
    );
    assertCountRule(
      "VulkanImporter.create capacity",
      "capacity",
      0,
      U32_MAX,
      (v) => vulkanImporter({ capacity: v as number }),
    );
    assertCountRule(
      "EglImporter.create capacity",
      "capacity",
      0,
      U32_MAX,
      (v) => eglImporter({ capacity: v as number }),
    );
    assertCountRule(
      "CudaImporter.create device",
      "device",
      0,
      2 ** 31 - 1,
      (v) => CudaImporter.create({ device: v as number }),
    );
  },
});
