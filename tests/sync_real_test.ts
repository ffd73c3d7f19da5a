// SyncPoints over real APIs: a producer writes after a delay, the consumer
// waits on the SyncPoint and must see the final bytes; where the API allows
// it, a read made before the point is reached shows the old bytes.
//
//   Vulkan (lavapipe): a timeline VkSemaphore; a queue submission waits on
//     value 1, fills a host-visible buffer and signals value 2.
//   GL (llvmpipe, EGL surfaceless): a GlSync fence after a clear.
//   WebGPU (Deno's navigator.gpu): a WgpuSubmission of a queue's work, waited
//     on from a Worker (blocking) and from this thread (async).
// OpenCL runs in its own process: tests/isolated/sync_opencl_test.ts.
//
// The helpers are build/test-helpers/libgpures_test_{vulkan,gl}.so
// (tests/gpu_helpers); without a helper, a device or an API each test skips and
// says why. Run:
//   deno test --allow-ffi --allow-read --allow-env --allow-run --v8-flags=--expose-gc tests/sync_real_test.ts

import assert from "node:assert/strict";
import {
  GlSync,
  GpuResource,
  InvalidHandleError,
  liveHandles,
  TimeoutError,
  UnsupportedError,
  VkSemaphore,
  WgpuSubmission,
} from "../mod.ts";
import { assertAll, failure, settledWaits } from "./_support/sync_checks.ts";
import { helperLib } from "./_support/helper_lib.ts";

function cString(ptr: Deno.PointerValue): string {
  return ptr === null ? "" : Deno.UnsafePointerView.getCString(ptr);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `promise`, or a rejection naming `what` after `ms` (a hang fails the test instead). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not end in ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// ------------------------------------------------------------------- Vulkan

const VK_HELPER = helperLib("libgpures_test_vulkan.so");
const VK_SYMBOLS = {
  gvk_last_error: { parameters: [], result: "pointer" },
  gvk_sync_open: { parameters: ["u64", "u32"], result: "pointer" },
  gvk_sync_close: { parameters: ["pointer"], result: "void" },
  gvk_sync_device_name: { parameters: ["pointer"], result: "pointer" },
  gvk_sync_device: { parameters: ["pointer"], result: "pointer" },
  gvk_sync_map: { parameters: ["pointer"], result: "pointer" },
  gvk_sync_timeline: { parameters: ["pointer"], result: "u64" },
  gvk_sync_binary: { parameters: ["pointer"], result: "u64" },
  gvk_sync_counter: { parameters: ["pointer"], result: "u64" },
  gvk_sync_signal: { parameters: ["pointer", "u64"], result: "i32" },
  gvk_sync_submit_fill: { parameters: ["pointer", "u64", "u32", "u64"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;
type Vk = Deno.DynamicLibrary<typeof VK_SYMBOLS>["symbols"];

const VK_SIZE = 64 * 1024;
const OLD = 0x11;
const NEW = 0xc3;

function openVulkan(): { vk: Vk; skip: null } | { vk: null; skip: string } {
  let vk: Vk;
  try {
    vk = Deno.dlopen(VK_HELPER, VK_SYMBOLS).symbols;
  } catch (e) {
    return {
      vk: null,
      skip: `${decodeURIComponent(VK_HELPER.pathname)} cannot be loaded ` +
        `(${(e as Error).message.split("\n")[0]}); install libvulkan-dev mesa-vulkan-drivers ` +
        "and build it: cmake -S . -B build && cmake --build build",
    };
  }
  const ctx = vk.gvk_sync_open(16n, 0);
  if (ctx === null) {
    return { vk: null, skip: `no Vulkan timeline semaphores: ${cString(vk.gvk_last_error())}` };
  }
  console.log(`sync_real_test: Vulkan on ${cString(vk.gvk_sync_device_name(ctx))}`);
  vk.gvk_sync_close(ctx);
  return { vk, skip: null };
}
const vulkan = openVulkan();
if (vulkan.skip) console.log(`sync_real_test: skipping the Vulkan tests: ${vulkan.skip}`);

/** A sync context of the helper; closed (and its GPU work ended) by the returned disposer. */
function vkContext(): { vk: Vk; ctx: Deno.PointerObject; mapped: Uint8Array } & Disposable {
  const vk = vulkan.vk!;
  const ctx = vk.gvk_sync_open(BigInt(VK_SIZE), OLD);
  if (ctx === null) throw new Error(`gvk_sync_open: ${cString(vk.gvk_last_error())}`);
  const mapped = new Uint8Array(
    Deno.UnsafePointerView.getArrayBuffer(vk.gvk_sync_map(ctx)!, VK_SIZE),
  );
  return { vk, ctx, mapped, [Symbol.dispose]: () => vk.gvk_sync_close(ctx) };
}

Deno.test({
  name: "VkSemaphore timeline: a queue's fill is seen only once waitAsync resolves",
  ignore: vulkan.skip !== null,
  async fn() {
    const before = liveHandles();
    using c = vkContext();
    const { vk, ctx, mapped } = c;
    const semaphore = vk.gvk_sync_timeline(ctx);
    const device = vk.gvk_sync_device(ctx);
    // The GPU waits for 1, fills, signals 2.
    assert.equal(
      vk.gvk_sync_submit_fill(ctx, 1n, NEW * 0x01010101, 2n),
      0,
      cString(vk.gvk_last_error()),
    );
    using done = VkSemaphore.create({ semaphore, device, semaphoreType: "timeline", value: 2n });
    using gate = VkSemaphore.create({ semaphore, device, semaphoreType: "timeline", value: 1n });
    assert.equal(done.describe().value, 2n);

    // Without the wait: the bytes are stale, and the point says so.
    await sleep(30);
    assertAll(mapped, OLD, "before the gate opens");
    assert.equal(done.signaled, false);
    assert.equal(gate.signaled, false);
    const timedOut = await failure(() => done.wait(20));
    assert.ok(timedOut instanceof TimeoutError, `${timedOut}`);
    const asyncTimedOut = await failure(() => done.waitAsync({ timeout: 20 }));
    assert.ok(asyncTimedOut instanceof TimeoutError, `${asyncTimedOut}`);

    // The producer's go, after a delay, through vkSignalSemaphore.
    const waiting = done.waitAsync({ timeout: 5000 });
    let reached = false;
    waiting.then(() => (reached = true));
    setTimeout(() => gate.signal(), 50);
    await sleep(10);
    assert.equal(reached, false, "the wait resolved before the GPU could have written");
    await waiting;
    assert.equal(vk.gvk_sync_counter(ctx), 2n);
    assertAll(mapped, NEW, "after the wait");
    assert.equal(done.signaled, true);
    done.wait(0); // blocking, already reached: returns at once
    assert.equal(await settledWaits(), 0);

    // Reached points: signalling again would move the timeline back.
    for (const point of [gate, done]) {
      const e = await failure(() => point.signal());
      assert.ok(e instanceof InvalidHandleError, `${e}`);
      assert.equal((e as InvalidHandleError).field, "value");
    }
    assert.equal(vk.gvk_sync_counter(ctx), 2n);
    done.release();
    gate.release();
    assert.equal(liveHandles(), before);
  },
});

Deno.test({
  name: "VkSemaphore timeline: a blocking wait returns when the helper signals from the host",
  ignore: vulkan.skip !== null,
  fn() {
    using c = vkContext();
    const { vk, ctx, mapped } = c;
    const semaphore = vk.gvk_sync_timeline(ctx);
    const device = vk.gvk_sync_device(ctx);
    assert.equal(vk.gvk_sync_submit_fill(ctx, 5n, NEW * 0x01010101, 6n), 0);
    using done = VkSemaphore.create({ semaphore, device, semaphoreType: "timeline", value: 6n });
    assertAll(mapped, OLD, "before the gate opens");
    // A second point on the same timeline, signalled by C code (not gpures).
    assert.equal(vk.gvk_sync_signal(ctx, 5n), 0, cString(vk.gvk_last_error()));
    done.wait(5000);
    assertAll(mapped, NEW, "after the blocking wait");
  },
});

Deno.test({
  name:
    "VkSemaphore: binary semaphores and points without a device cannot be waited on by the host",
  ignore: vulkan.skip !== null,
  async fn() {
    using c = vkContext();
    const { vk, ctx } = c;
    const device = vk.gvk_sync_device(ctx);
    using binary = VkSemaphore.create({
      semaphore: vk.gvk_sync_binary(ctx),
      device,
      semaphoreType: "binary",
      value: 0n,
    });
    for (const attempt of [() => binary.wait(10), () => binary.waitAsync({ timeout: 10 })]) {
      const e = await failure(attempt);
      assert.ok(e instanceof UnsupportedError, `${e}`);
    }
    using deviceless = VkSemaphore.create({
      semaphore: vk.gvk_sync_timeline(ctx),
      semaphoreType: "timeline",
      value: 1n,
    });
    for (
      const attempt of [
        () => deviceless.wait(10),
        () => deviceless.signaled,
        () => deviceless.waitAsync({ timeout: 10 }),
      ]
    ) {
      const e = await failure(attempt);
      assert.ok(e instanceof UnsupportedError, `${e}`);
      assert.equal((e as UnsupportedError).field, "device", `${e}`);
    }
    assert.equal(await settledWaits(), 0);
  },
});

// ----------------------------------------------------------------------- GL

const GL_LIB = helperLib("libgpures_test_gl.so");
const GL_SYMBOLS = {
  gpures_test_gl_last_error: { parameters: [], result: "pointer" },
  gpures_test_gl_init: { parameters: [], result: "i32" },
  gpures_test_gl_context: { parameters: [], result: "pointer" },
  gpures_test_gl_renderer: { parameters: [], result: "pointer" },
  gpures_test_gl_sync_begin: { parameters: ["u32", "u32", "u32"], result: "i32" },
  gpures_test_gl_sync_clear_fence: { parameters: ["u32"], result: "pointer" },
  gpures_test_gl_sync_status: { parameters: ["pointer"], result: "i32" },
  gpures_test_gl_sync_delete: { parameters: ["pointer"], result: "void" },
  gpures_test_gl_sync_read: { parameters: ["buffer", "u64"], result: "i32" },
  gpures_test_gl_sync_end: { parameters: [], result: "void" },
  gpures_test_gl_release_current: { parameters: [], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;
type Gl = Deno.DynamicLibrary<typeof GL_SYMBOLS>["symbols"];

function openGl(): { gl: Gl; skip: null } | { gl: null; skip: string } {
  let gl: Gl;
  try {
    gl = Deno.dlopen(GL_LIB, GL_SYMBOLS).symbols;
  } catch (e) {
    return {
      gl: null,
      skip: `${decodeURIComponent(GL_LIB.pathname)} cannot be loaded ` +
        `(${(e as Error).message.split("\n")[0]}); install libegl-dev libgles-dev ` +
        "libegl-mesa0 and build it: cmake -S . -B build && cmake --build build",
    };
  }
  if (gl.gpures_test_gl_init() !== 0) {
    return {
      gl: null,
      skip: `no EGL surfaceless GLES 3 context: ${cString(gl.gpures_test_gl_last_error())}`,
    };
  }
  console.log(`sync_real_test: GL on ${cString(gl.gpures_test_gl_renderer())}`);
  return { gl, skip: null };
}
const glOpened = openGl();
if (glOpened.skip) console.log(`sync_real_test: skipping the GL tests: ${glOpened.skip}`);

const GL_W = 32, GL_H = 16;
const RED = 0xff0000ff; // bytes ff 00 00 ff
const TEAL = 0xff808000; // bytes 00 80 80 ff

function glRead(gl: Gl): Uint8Array {
  const out = new Uint8Array(GL_W * GL_H * 4);
  assert.equal(
    gl.gpures_test_gl_sync_read(out, BigInt(out.length)),
    0,
    cString(gl.gpures_test_gl_last_error()),
  );
  return out;
}

function assertPixels(bytes: Uint8Array, rgba: number, what: string): void {
  const want = [rgba & 0xff, (rgba >>> 8) & 0xff, (rgba >>> 16) & 0xff, rgba >>> 24];
  const at = bytes.findIndex((b, i) => b !== want[i % 4]);
  assert.equal(at, -1, `${what}: byte ${at} is ${bytes[at]}, expected ${want[at % 4]}`);
}

Deno.test({
  name: "GlSync: wait() and waitAsync() on a fence after a clear, then the pixels are final",
  ignore: glOpened.skip !== null,
  async fn() {
    const gl = glOpened.gl!;
    const before = liveHandles();
    // Current again: Deno's WebGPU (wgpu probing EGL) may have changed this thread's context.
    assert.equal(gl.gpures_test_gl_init(), 0, cString(gl.gpures_test_gl_last_error()));
    assert.equal(
      gl.gpures_test_gl_sync_begin(GL_W, GL_H, RED),
      0,
      cString(gl.gpures_test_gl_last_error()),
    );
    try {
      assertPixels(glRead(gl), RED, "before the clear");
      // The producer clears after a delay and fences; the consumer waits on the fence.
      await sleep(20);
      const sync = gl.gpures_test_gl_sync_clear_fence(TEAL);
      assert.notEqual(sync, null, cString(gl.gpures_test_gl_last_error()));
      const context = gl.gpures_test_gl_context();
      {
        using point = GlSync.create({ sync, context });
        assert.equal(point.describe().sync, BigInt(Deno.UnsafePointer.value(sync)));
        point.wait(5000); // glClientWaitSync here, where the context is current
        assert.equal(point.signaled, true);
        assert.equal(gl.gpures_test_gl_sync_status(sync), 1, "GL says the fence is signalled");
        await point.waitAsync({ timeout: 1000 });
        assertPixels(glRead(gl), TEAL, "after the wait");
      }
      gl.gpures_test_gl_sync_delete(sync);

      // A second fence, waited on only asynchronously (polled on this thread).
      const sync2 = gl.gpures_test_gl_sync_clear_fence(RED);
      {
        using point = GlSync.create({ sync: sync2 });
        await point.waitAsync({ timeout: 5000 });
        assert.equal(gl.gpures_test_gl_sync_status(sync2), 1);
        assertPixels(glRead(gl), RED, "after waitAsync");
      }
      gl.gpures_test_gl_sync_delete(sync2);
    } finally {
      gl.gpures_test_gl_sync_end();
    }
    assert.equal(liveHandles(), before);
  },
});

Deno.test({
  name: "GlSync: without a current context a wait is UnsupportedError naming the context",
  ignore: glOpened.skip !== null,
  async fn() {
    const gl = glOpened.gl!;
    // Current again: Deno's WebGPU (wgpu probing EGL) may have changed this thread's context.
    assert.equal(gl.gpures_test_gl_init(), 0, cString(gl.gpures_test_gl_last_error()));
    assert.equal(
      gl.gpures_test_gl_sync_begin(GL_W, GL_H, RED),
      0,
      cString(gl.gpures_test_gl_last_error()),
    );
    const sync = gl.gpures_test_gl_sync_clear_fence(TEAL);
    assert.notEqual(sync, null);
    using point = GlSync.create({ sync });
    assert.equal(gl.gpures_test_gl_release_current(), 0, cString(gl.gpures_test_gl_last_error()));
    try {
      for (
        const attempt of [
          () => point.wait(100),
          () => point.signaled,
          () => point.waitAsync({ timeout: 100 }),
        ]
      ) {
        const e = await failure(attempt);
        assert.ok(e instanceof UnsupportedError, `${e}`);
        assert.equal((e as UnsupportedError).field, "context", `${e}`);
      }
      // With the context current again the same point is waited on.
      assert.equal(gl.gpures_test_gl_init(), 0, cString(gl.gpures_test_gl_last_error()));
      point.wait(5000);
      assert.equal(gl.gpures_test_gl_sync_status(sync), 1);
      assertPixels(glRead(gl), TEAL, "after the wait");
    } finally {
      assert.equal(gl.gpures_test_gl_init(), 0, cString(gl.gpures_test_gl_last_error()));
      gl.gpures_test_gl_sync_delete(sync);
      gl.gpures_test_gl_sync_end();
    }
  },
});

// ------------------------------------------------------------------- WebGPU

const adapter = await navigator.gpu?.requestAdapter().catch(() => null);
const gpuDevice = await adapter?.requestDevice().catch(() => undefined);
const gpuSkip = gpuDevice
  ? null
  : "no WebGPU adapter (Deno's navigator.gpu needs a Vulkan driver: apt install mesa-vulkan-drivers)";
if (gpuSkip) console.log(`sync_real_test: skipping the WebGPU tests: ${gpuSkip}`);

/** A Worker that adopts a raw SyncPoint, waits on it with the blocking wait() and replies. */
function waitingWorker(): Worker {
  const mod = new URL("../mod.ts", import.meta.url).href;
  const source = `
    import { GpuResource } from ${JSON.stringify(mod)};
    self.onmessage = (e) => {
      const point = GpuResource.fromRaw(e.data.raw);
      const t0 = performance.now();
      let error = null;
      try { point.wait(e.data.timeout); } catch (err) { error = err.name + ": " + err.message; }
      const reply = { kind: point.kind, error, waitedMs: performance.now() - t0 };
      point.release();
      self.postMessage(reply);
    };
    self.postMessage("ready");`;
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  return new Worker(url, { type: "module" });
}

const GPU_SIZE = 256 * 1024;

Deno.test({
  name:
    "WgpuSubmission: a Worker's blocking wait and this thread's waitAsync see the queue's copy done",
  ignore: gpuSkip !== null,
  sanitizeResources: false, // the GPU device lives for the whole file
  async fn() {
    const device = gpuDevice!;
    const src = device.createBuffer({
      size: GPU_SIZE,
      usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    const dst = device.createBuffer({
      size: GPU_SIZE,
      usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ,
    });
    const final = new Uint8Array(GPU_SIZE).map((_, i) => (i * 31 + 7) & 0xff);
    // The Worker waits before the work is even submitted: the point is the producer's.
    const worker = waitingWorker();
    try {
      const messages: MessageEvent[] = [];
      let arrived = () => {};
      worker.onmessage = (e) => (messages.push(e), arrived());
      const next = (what: string) =>
        within(
          new Promise<MessageEvent>((r, j) => {
            arrived = () => r(messages.shift()!);
            worker.onerror = (e) => (e.preventDefault(), j(new Error(`worker: ${e.message}`)));
            if (messages.length) arrived();
          }),
          30_000,
          what,
        );
      assert.equal((await next("the Worker's start")).data, "ready");
      await sleep(30); // the producer starts late
      device.queue.writeBuffer(src, 0, final);
      const encoder = device.createCommandEncoder();
      encoder.copyBufferToBuffer(src, 0, dst, 0, GPU_SIZE);
      device.queue.submit([encoder.finish()]);
      using point = WgpuSubmission.fromQueue(device.queue, 1n);
      assert.equal(point.describe().submission, 1n);
      worker.postMessage({ raw: point.clone().intoRaw(), timeout: 10_000 });
      await point.waitAsync({ timeout: 10_000 });
      assert.equal(point.signaled, true);
      const { data } = await next("the Worker's reply");
      assert.equal(data.error, null, data.error);
      assert.equal(data.kind, "WgpuSubmission");
      // The queue's work is done: mapping reads the final bytes at once.
      await within(dst.mapAsync(GPUMapMode.READ), 10_000, "mapAsync");
      const bytes = new Uint8Array(dst.getMappedRange()).slice();
      dst.unmap();
      const at = bytes.findIndex((b, i) => b !== final[i]);
      assert.equal(at, -1, `byte ${at} is ${bytes[at]}, expected ${final[at]}`);
    } finally {
      worker.terminate();
      src.destroy();
      dst.destroy();
    }
  },
});

Deno.test({
  name: "WgpuSubmission: reached through a raw handle and through a dup of its eventfd",
  ignore: gpuSkip !== null,
  sanitizeResources: false,
  async fn() {
    const device = gpuDevice!;
    // No work submitted: onSubmittedWorkDone resolves (and signals the point) at once.
    using point = WgpuSubmission.fromQueue(device.queue);
    const raw = point.clone().intoRaw();
    using again = GpuResource.fromRaw(raw) as WgpuSubmission;
    assert.equal(again.kind, "WgpuSubmission");
    await point.waitAsync({ timeout: 10_000 });
    again.wait(0);
    // A point over a dup of its eventfd is the same fence.
    using never = WgpuSubmission.create({ fd: point.dupFd(), submission: 9n });
    assert.equal(never.signaled, true, "the dup shares the signalled eventfd");
  },
});
