// Frames: pools that hand out DmaBufHandles over sealed memfds and wait
// (off the event loop) while every slot is held; metadata on any handle,
// shared by clones, carried to Workers and across channels. Sessions (frames
// through channels) are in frames_session_test.ts.

import assert from "node:assert/strict";
import {
  Channel,
  CpuBytes,
  DmaBufHandle,
  type FrameMeta,
  type FrameMetaInit,
  FramePool,
  InvalidHandleError,
  liveHandles,
  ReleasedError,
  TimeoutError,
  VkBufferHandle,
} from "../mod.ts";
import { SEAL, sealsOf } from "./_support/libc.ts";
import { paint, patternMeta, verify } from "./_support/frame_pattern.ts";

const linux = Deno.build.os === "linux";
const NV12 = 0x3231564e; // DRM_FORMAT_NV12
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function nv12(slots: number, width = 64, height = 32): FramePool {
  return FramePool.create({ format: "NV12", width, height, slots });
}

/** A test of pooled frames: their memory is sealed memfds, so it runs on Linux only. */
function poolTest(name: string, fn: () => void | Promise<void>): void {
  Deno.test({ name, ignore: !linux, fn });
}

/** A pool test that starts with every slot held: a one-slot pool and the frame holding it. */
function fullPoolTest(
  name: string,
  fn: (pool: FramePool, held: DmaBufHandle) => Promise<void>,
): void {
  poolTest(name, async () => {
    using pool = nv12(1);
    using held = await pool.acquire(); // released at the end unless the test released it
    await fn(pool, held);
  });
}

// ------------------------------------------------------------------ FramePool

poolTest(
  "FramePool hands out DmaBufHandles over sealed memfds in the pool's standard layout",
  async () => {
    using pool = FramePool.create({ format: "NV12", width: 100, height: 30, slots: 2 });
    using frame = await pool.acquire();
    assert.ok(frame instanceof DmaBufHandle);
    const d = frame.describe();
    assert.equal(d.fourcc, NV12);
    assert.equal(d.modifier, 0n);
    assert.deepEqual([d.width, d.height], [100, 30]);
    assert.deepEqual(
      d.planes.map((p) => ({ offset: p.offset, stride: p.stride })),
      pool.layout.planes.map((p) => ({ offset: p.offset, stride: p.stride })),
    );
    assert.equal(pool.layout.planes[0].stride, 128, "rows padded to the default rowAlign 64");
    const seals = sealsOf(d.fds[0]);
    for (const seal of [SEAL.SHRINK, SEAL.GROW, SEAL.SEAL]) {
      assert.ok(seals & seal, `seals ${seals}`);
    }
    assert.ok(pool.stats.bufferSize >= pool.layout.size);
    assert.deepEqual(pool.stats, { ...pool.stats, slots: 2, inUse: 1, acquired: 1, waits: 0 });
  },
);

poolTest("a pooled frame's bufferId is stable per slot and distinct across slots", async () => {
  using pool = nv12(3);
  const first = [await pool.acquire(), await pool.acquire(), await pool.acquire()];
  const ids = first.map((f) => f.bufferId);
  assert.ok(ids.every((id) => typeof id === "bigint"));
  assert.equal(new Set(ids).size, 3);
  const clone = first[1].clone();
  assert.equal(clone.bufferId, ids[1], "a clone is of the same buffer");
  clone.release();
  for (const f of first) f.release();
  for (let round = 0; round < 3; round++) {
    const again = [await pool.acquire(), await pool.acquire(), await pool.acquire()];
    assert.deepEqual(new Set(again.map((f) => f.bufferId)), new Set(ids));
    // The same slot's memory: one frame's bytes are seen by the next frame of its buffer.
    const id = again[0].bufferId;
    pool.planes(again[0])[0].data[0] = round;
    again[0].release();
    const next = await pool.acquire();
    assert.equal(next.bufferId, id);
    assert.equal(new Uint8Array(next.map())[0], round);
    next.release();
    for (const f of again.slice(1)) f.release();
  }
});

fullPoolTest(
  "acquire() waits while every slot is held, without blocking the event loop, and " +
    "resolves when one is released",
  async (pool, held) => {
    const id = held.bufferId;
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    let got: DmaBufHandle | undefined;
    const waiting = pool.acquire().then((f) => (got = f));
    await sleep(50);
    assert.equal(got, undefined, "still waiting: the only slot is held");
    assert.ok(ticks > 5, `timers ran while acquire() waited (${ticks})`);
    held.release();
    await waiting;
    clearInterval(timer);
    assert.equal(got!.bufferId, id);
    assert.equal(pool.stats.waits, 1);
    assert.equal(pool.stats.timeouts, 0, "it waited and got a frame: no timeout");
    got!.release();
    assert.equal(pool.stats.inUse, 0);
  },
);

fullPoolTest(
  "acquire({ timeout }) rejects with TimeoutError when no slot comes free, and counts it",
  async (pool) => {
    const t0 = performance.now();
    await assert.rejects(pool.acquire({ timeout: 60 }), (e: TimeoutError) => {
      assert.ok(e instanceof TimeoutError, String(e));
      assert.equal(e.code, "TIMED_OUT");
      assert.equal(e.field, "timeout");
      assert.match(e.message, /within 60 ms/, "its own timeout, not another call's message");
      return true;
    });
    assert.ok(performance.now() - t0 >= 50, "it waited for the timeout");
    assert.equal(pool.stats.timeouts, 1, "one acquire gave up: one timeout");
    assert.equal(pool.stats.inUse, 1);
  },
);

fullPoolTest(
  "acquire({ signal }) rejects with the signal's reason when it aborts, and takes no slot",
  async (pool, held) => {
    const controller = new AbortController();
    const reason = new Error("the consumer went away");
    setTimeout(() => controller.abort(reason), 20);
    await assert.rejects(pool.acquire({ signal: controller.signal }), (e) => e === reason);
    await assert.rejects(pool.acquire({ signal: controller.signal }), (e) => e === reason);
    assert.equal(pool.stats.inUse, 1);
    held.release();
    using again = await pool.acquire({ timeout: 1000 });
    assert.ok(again.bufferId);
  },
);

poolTest("tryAcquire() gives a frame while a slot is free and null when every slot is held", () => {
  using pool = nv12(2);
  const a = pool.tryAcquire(), b = pool.tryAcquire();
  assert.ok(a instanceof DmaBufHandle && b instanceof DmaBufHandle);
  assert.equal(pool.tryAcquire(), null);
  assert.equal(pool.stats.waits, 0, "a try is not a wait");
  const id = a.bufferId;
  a.release();
  const c = pool.tryAcquire();
  assert.equal(c?.bufferId, id);
  b.release();
  c!.release();
});

/** A Worker that makes the last release of each raw handle it is sent, up and answering. */
async function releasingWorker(
  script = "release_worker.ts",
): Promise<{ worker: Worker; released: () => Promise<void> }> {
  const worker = new Worker(new URL(`./_support/${script}`, import.meta.url), {
    type: "module",
  });
  const released = () => new Promise<void>((r) => worker.onmessage = () => r());
  const up = released();
  worker.postMessage(VkBufferHandle.create({ buffer: 1n, size: 64n }).intoRaw());
  await up;
  return { worker, released };
}

/**
 * tryAcquire() in a loop, with no turn of the event loop (so no event can be delivered meanwhile),
 * until another thread's release frees a slot; fails after 5 s.
 */
function spinUntilFree(pool: FramePool): DmaBufHandle {
  let next: DmaBufHandle | null = null;
  for (const until = performance.now() + 5000; !next && performance.now() < until;) {
    next = pool.tryAcquire();
  }
  assert.ok(next, "the Worker's release freed the slot");
  return next;
}

poolTest(
  "a slot is handed out again only after its last frame's keep-alive ran, even when " +
    "another thread made that frame's last release and this isolate has not yet heard",
  async () => {
    using pool = nv12(1);
    const { worker, released } = await releasingWorker();
    try {
      const order: string[] = [];
      const keepAlive = { release: () => order.push("keep-alive") };
      const frame = pool.tryAcquire({ keepAlive })!;
      const gone = released();
      worker.postMessage(frame.intoRaw()); // the Worker's release frees the slot
      const next = spinUntilFree(pool);
      order.push("acquired again");
      assert.deepEqual(order, ["keep-alive", "acquired again"]);
      next.release();
      await gone;
      await sleep(50); // the frame's RELEASED event arrives now: its keep-alive does not run again
      assert.deepEqual(order, ["keep-alive", "acquired again"]);
    } finally {
      worker.terminate();
    }
  },
);

poolTest(
  "a consumer's markConsumed() reaches the keep-alive before its release, even when the slot " +
    "is handed out again before this isolate heard of either",
  async () => {
    using pool = nv12(1);
    const { worker, released } = await releasingWorker("consume_worker.ts");
    try {
      const order: string[] = [];
      const keepAlive = {
        markConsumed: () => order.push("consumed"),
        release: () => order.push("released"),
      };
      const frame = pool.tryAcquire({ keepAlive })!;
      const gone = released();
      worker.postMessage(frame.intoRaw()); // the Worker marks it consumed, then releases it
      const next = spinUntilFree(pool);
      order.push("acquired again");
      assert.deepEqual(order, ["consumed", "released", "acquired again"]);
      next.release();
      await gone;
      await sleep(50);
      assert.deepEqual(order, ["consumed", "released", "acquired again"], "each ran once");
    } finally {
      worker.terminate();
    }
  },
);

// A regression guard: the pool posts SLOT_FREE before RELEASED, so both usually come in one
// batch and this order holds even without the early release; it pins the order down.
poolTest(
  "a waiting acquire() resolves only after the keep-alive of the frame whose release woke it",
  async () => {
    using pool = nv12(1);
    const { worker, released } = await releasingWorker();
    try {
      const order: string[] = [];
      const frame = pool.tryAcquire({ keepAlive: { release: () => order.push("keep-alive") } })!;
      const waiting = pool.acquire({ timeout: 5000 }).then((f) => (order.push("acquired"), f));
      const gone = released();
      worker.postMessage(frame.intoRaw());
      (await waiting).release();
      await gone;
      await sleep(50);
      assert.deepEqual(order, ["keep-alive", "acquired"]);
    } finally {
      worker.terminate();
    }
  },
);

poolTest(
  "FramePool.close(): waiting acquires reject with ReleasedError, held frames stay " +
    "readable, and every handle goes once they are released",
  async () => {
    const live = liveHandles();
    const pool = nv12(2);
    const a = await pool.acquire(), b = await pool.acquire();
    const views = pool.planes(a);
    const sum = paint(views, 7);
    const waiting = pool.acquire();
    await sleep(10);
    const counts = pool.stats;
    pool.close();
    pool.close(); // idempotent
    await assert.rejects(waiting, ReleasedError);
    await assert.rejects(pool.acquire(), ReleasedError);
    assert.throws(() => pool.tryAcquire(), ReleasedError);
    assert.deepEqual(pool.stats, counts, "stats keep the counts of the close");
    assert.equal(verify(views, patternMeta(7, sum) as FrameMeta), null, "the old views still read");
    assert.equal(verify(a.planes(), patternMeta(7, sum) as FrameMeta), null, "a new mapping too");
    a.release();
    b.release();
    assert.equal(liveHandles(), live);
  },
);

poolTest(
  "FramePool.close() right after a slot came back, while an acquire's wait has not yet " +
    "returned, rejects that acquire and frees the pool only after it",
  async () => {
    for (let round = 0; round < 50; round++) {
      const pool = nv12(1);
      const held = pool.tryAcquire()!;
      const waiting = pool.acquire(); // its wait starts on another thread
      held.release(); // the slot is free: the wait may return at any moment
      pool.close(); // the native pool must outlive the wait
      await assert.rejects(waiting, (e: ReleasedError) => e.field === "pool");
    }
  },
);

poolTest("FramePool.create() refuses bad options with InvalidHandleError naming the field", () => {
  const base = { format: "NV12", width: 64, height: 32, slots: 2 } as const;
  const bad: [Record<string, unknown>, string][] = [
    [{ format: "NV13" }, "format"],
    [{ format: "RgbaF32" }, "format"], // no DRM fourcc
    [{ slots: 0 }, "slots"],
    [{ slots: 257 }, "slots"],
    [{ width: 0 }, "width"],
    [{ height: 0 }, "height"],
    [{ rowAlign: 3 }, "rowAlign"],
    [{ rowAlign: 8192 }, "rowAlign"],
  ];
  for (const [options, field] of bad) {
    assert.throws(() => FramePool.create({ ...base, ...options } as never), (e) => {
      assert.ok(e instanceof InvalidHandleError, `${JSON.stringify(options)}: ${e}`);
      assert.equal(e.field, field, `${JSON.stringify(options)}: ${e.message}`);
      return true;
    });
  }
});

// ------------------------------------------------------------------- metadata

const nullGroups = {
  sequence: null,
  timing: null,
  visible: null,
  color: null,
  mastering: null,
  contentLight: null,
  userData: null,
};

const FULL: FrameMetaInit = {
  sequence: 2 ** 53 - 1,
  timing: { pts: -3003, duration: 3003, timebaseNum: 1, timebaseDen: 90000 },
  visible: { x: 2, y: 4, width: 60, height: 26 },
  color: { primaries: "bt2020", transfer: "pq", matrix: "bt2020-ncl", fullRange: true },
  mastering: {
    redX: 35400,
    redY: 14600,
    greenX: 8500,
    greenY: 39850,
    blueX: 6550,
    blueY: 2300,
    whiteX: 15635,
    whiteY: 16450,
    maxLuminance: 10_000_000,
    minLuminance: 50,
  },
  contentLight: { maxCll: 1000, maxFall: 400 },
  userData: new Uint8Array(16).map((_, i) => i * 17),
};

poolTest(
  "every metadata group round-trips through setMeta() and meta; absent groups read null",
  async () => {
    using pool = nv12(1);
    using frame = await pool.acquire();
    assert.equal(frame.meta, null, "a fresh frame has no metadata");
    frame.setMeta(FULL);
    assert.deepEqual(frame.meta, FULL);
    frame.setMeta({ sequence: 0 });
    assert.deepEqual(frame.meta, { ...nullGroups, sequence: 0 });
    // Any handle carries it, not only pooled frames.
    using cpu = CpuBytes.create({
      data: new Uint8Array(64 * 32 * 4),
      rowPitch: 256,
      format: "RgbaU8",
      width: 64,
      height: 32,
    });
    cpu.setMeta({ color: FULL.color });
    assert.deepEqual(cpu.meta?.color, FULL.color);
  },
);

poolTest("clones share metadata, and setMeta(null) clears it for all of them", async () => {
  using pool = nv12(1);
  using frame = await pool.acquire();
  using clone = frame.clone();
  frame.setMeta({ sequence: 5 });
  assert.equal(clone.meta?.sequence, 5);
  clone.setMeta(FULL);
  assert.deepEqual(frame.meta, FULL);
  clone.setMeta(null);
  assert.equal(frame.meta, null);
});

poolTest(
  "bad metadata throws InvalidHandleError naming the field and keeps what was there",
  async () => {
    using pool = nv12(1); // 64x32
    using frame = await pool.acquire();
    frame.setMeta({ sequence: 1 });
    const mastering = FULL.mastering!;
    const bad: [FrameMetaInit, string][] = [
      [{ visible: { x: 8, y: 0, width: 57, height: 32 } }, "visible.width"],
      [{ visible: { x: 0, y: 0, width: 64, height: 33 } }, "visible.height"],
      [{ color: { ...FULL.color!, primaries: "bt9999" as "bt709" } }, "color.primaries"],
      [{ timing: { ...FULL.timing!, timebaseDen: 0 } }, "timing.timebaseDen"],
      [{ timing: { ...FULL.timing!, duration: -1 } }, "timing.duration"],
      [{ sequence: 2 ** 53 }, "sequence"],
      [{ sequence: -1 }, "sequence"],
      [
        { mastering: { ...mastering, minLuminance: mastering.maxLuminance } },
        "mastering.minLuminance",
      ],
      [{ mastering: { ...mastering, redX: 50001 } }, "mastering.redX"],
      [{ contentLight: { maxCll: 100, maxFall: 101 } }, "contentLight.maxFall"],
    ];
    for (const [meta, field] of bad) {
      assert.throws(() => frame.setMeta(meta), (e) => {
        assert.ok(e instanceof InvalidHandleError, `${field}: ${e}`);
        assert.equal(e.field, field, e.message);
        return true;
      });
      assert.equal(frame.meta?.sequence, 1, `after ${field}: the old metadata stays`);
    }
  },
);

poolTest(
  "metadata crosses to a Worker with the raw handle, and what the Worker sets is seen here",
  async () => {
    using pool = nv12(1);
    using frame = await pool.acquire();
    frame.setMeta(FULL);
    const raw = frame.clone().intoRaw();
    const w = new Worker(new URL("./_support/meta_worker.ts", import.meta.url), { type: "module" });
    try {
      const seen = new Promise<{ meta: FrameMeta; bufferId: bigint }>((r) =>
        w.onmessage = (e) => r(e.data)
      );
      w.postMessage({ raw, after: { sequence: 99 } });
      const { meta, bufferId } = await seen;
      assert.deepEqual(meta, FULL);
      assert.equal(bufferId, frame.bufferId);
      assert.deepEqual(frame.meta, { ...nullGroups, sequence: 99 }, "the Worker's metadata");
    } finally {
      w.terminate();
    }
  },
);

poolTest(
  "metadata crosses a Channel exactly, per frame: a later frame of a buffer has its own",
  async () => {
    using pool = nv12(1);
    const [tx, rx] = Channel.pair();
    using _tx = tx, _rx = rx;
    for (
      const meta of [FULL, { sequence: 2, visible: { x: 0, y: 0, width: 8, height: 8 } }, null]
    ) {
      const frame = await pool.acquire({ timeout: 2000 });
      frame.setMeta(meta);
      await tx.send(frame);
      frame.release();
      using got = await rx.receive() as DmaBufHandle;
      assert.deepEqual(got.meta, meta === null ? null : { ...nullGroups, ...meta });
    }
    assert.equal(rx.stats.announced, 1);
    assert.equal(rx.stats.frames, 3);
  },
);
