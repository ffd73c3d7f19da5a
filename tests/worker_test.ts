// Handles sent to Workers (SPEC 4.6): a raw handle is adopted there, and a
// Worker that exits or is terminated without releasing leaks nothing its
// owner cannot reclaim.
//
// The rule these tests pin: a raw handle belongs to whoever adopts it. A
// Worker's isolate ends without finalizers, so a reference it held is not
// released by its end; the handle stays live (liveHandles() counts it) and its
// keep-alive waits. The sender keeps the raw value until the Worker says it
// released it; once the Worker is gone (it closed itself, or terminate()),
// GpuResource.fromRaw(raw).release() reclaims the reference, and the
// keep-alive runs then, exactly once. Reclaiming a handle the Worker did
// release is harmless: the value is stale, fromRaw() throws ReleasedError.

import assert from "node:assert/strict";
import { CpuBytes, GpuResource, liveHandles, ReleasedError } from "../mod.ts";
import { countOpenFds, memfd } from "./_support/libc.ts";
import { rgbaFrame } from "./_support/fixtures.ts";

const WORKER = new URL("./_support/adopt_worker.ts", import.meta.url);

function worker(): { w: Worker; next: () => Promise<string> } {
  const w = new Worker(WORKER, { type: "module" });
  const queue: string[] = [];
  let wake: (() => void) | undefined;
  w.onmessage = (e) => {
    queue.push(e.data);
    wake?.();
  };
  const next = async () => {
    while (!queue.length) await new Promise<void>((r) => (wake = r));
    return queue.shift()!;
  };
  return { w, next };
}

/** A frame whose keep-alive counts its releases. */
function frame(): { frame: CpuBytes; releases: () => number } {
  let n = 0;
  const f = CpuBytes.create(
    { data: new Uint8Array(64 * 64 * 4), rowPitch: 256, format: "RgbaU8" },
    { keepAlive: { release: () => n++ } },
  );
  return { frame: f, releases: () => n };
}

const settle = () => new Promise((r) => setTimeout(r, 60));

Deno.test("a Worker that closes itself holding a handle: the owner reclaims it, keep-alive once", async () => {
  const before = liveHandles();
  const { frame: f, releases } = frame();
  const raw = f.intoRaw();
  const { w, next } = worker();
  w.postMessage({ raw, then: "exit" });
  assert.equal(await next(), "adopted");
  await settle(); // the Worker is gone; nothing released the handle
  assert.equal(liveHandles(), before + 1, "the handle outlives the Worker that held it");
  assert.equal(releases(), 0);
  GpuResource.fromRaw(raw).release(); // the owner reclaims it
  assert.equal(releases(), 1);
  assert.equal(liveHandles(), before);
  w.terminate();
});

Deno.test("a Worker terminated holding a handle: the owner reclaims it, keep-alive once", async () => {
  const before = liveHandles();
  const { frame: f, releases } = frame();
  const raw = f.intoRaw();
  const { w, next } = worker();
  w.postMessage({ raw, then: "hold" });
  assert.equal(await next(), "adopted");
  w.terminate();
  await settle();
  assert.equal(liveHandles(), before + 1);
  GpuResource.fromRaw(raw).release();
  assert.equal(releases(), 1);
  assert.equal(liveHandles(), before);
  await settle();
  assert.equal(releases(), 1, "and never again");
});

Deno.test("reclaiming a handle the Worker released is harmless: ReleasedError, keep-alive once", async () => {
  const before = liveHandles();
  const { frame: f, releases } = frame();
  const raw = f.intoRaw();
  const { w, next } = worker();
  w.postMessage({ raw, then: "release" });
  assert.equal(await next(), "released");
  w.terminate();
  for (let i = 0; i < 50 && releases() === 0; i++) await settle(); // learnt by polling
  assert.equal(releases(), 1);
  assert.throws(() => GpuResource.fromRaw(raw), ReleasedError);
  assert.equal(releases(), 1);
  assert.equal(liveHandles(), before);
});

Deno.test({
  name: "a Worker that exits holding a DmaBufHandle keeps its fds open until the owner reclaims it",
  ignore: Deno.build.os !== "linux",
  async fn() {
    // Earlier tests' unreleased pools and channels close their fds when collected: first.
    (globalThis as { gc?: () => void }).gc?.();
    await settle();
    const fds = countOpenFds();
    const fd = memfd(4096);
    const raw = rgbaFrame(fd, { takeOwnership: true }).intoRaw();
    const { w, next } = worker();
    w.postMessage({ raw, then: "exit" });
    assert.equal(await next(), "adopted");
    await settle();
    assert.equal(countOpenFds(), fds + 1, "the handle's fd is still open, not leaked: reclaimable");
    GpuResource.fromRaw(raw).release();
    assert.equal(countOpenFds(), fds);
    assert.throws(() => GpuResource.fromRaw(raw), ReleasedError);
    w.terminate();
  },
});
