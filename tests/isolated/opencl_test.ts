// Real OpenCL memory through the public API, in its own `deno test` process
// (PoCL once aborted at exit when it shared a process with Vulkan and EGL).
//
// A test-only C library (tests/gpu_helpers/opencl, built into build/test-helpers)
// makes a real context, queue and cl_mem objects (PoCL in CI) filled with known
// patterns. This file wraps them as OpenClMem exactly as a user would and hands
// the helper's consumer nothing but `resource.unsafeHandle`: it finds the mem
// and the queue through gpures's C API and reads the bytes back through them.
//
// Without the helper or an OpenCL platform, every test is skipped and the
// reason printed. Run:
//   deno test --allow-ffi --allow-read --allow-env --allow-run tests/isolated/opencl_test.ts

import assert from "node:assert/strict";
import { GpuResource, liveHandles, OpenClMem } from "../../mod.ts";
import { helperLib } from "../_support/helper_lib.ts";

const symbols = {
  gpures_test_cl_last_error: { parameters: [], result: "pointer" },
  gpures_test_cl_describe_platform: { parameters: [], result: "pointer" },
  gpures_test_cl_image_support: { parameters: [], result: "i32" },
  gpures_test_cl_handle_kind: { parameters: ["u64"], result: "u32" },
  gpures_test_cl_create_context: { parameters: [], result: "pointer" },
  gpures_test_cl_create_queue: { parameters: ["pointer"], result: "pointer" },
  gpures_test_cl_make_buffer: {
    parameters: ["pointer", "pointer", "u64", "u32"],
    result: "pointer",
  },
  gpures_test_cl_make_image: {
    parameters: ["pointer", "pointer", "u32", "u32", "u32"],
    result: "pointer",
  },
  gpures_test_cl_mem_refcount: { parameters: ["pointer", "u32", "u32"], result: "u32" },
  gpures_test_cl_queue_refcount: { parameters: ["pointer", "u32", "u32"], result: "u32" },
  gpures_test_cl_release_mem: { parameters: ["pointer"], result: "i32" },
  gpures_test_cl_release_queue: { parameters: ["pointer"], result: "i32" },
  gpures_test_cl_release_context: { parameters: ["pointer"], result: "i32" },
  gpures_test_cl_read: { parameters: ["u64", "buffer", "u64", "buffer"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

type Cl = Deno.DynamicLibrary<typeof symbols>["symbols"];

const LIB_FILE = { windows: "gpures_test_opencl.dll", darwin: "libgpures_test_opencl.dylib" }[
  Deno.build.os as string
] ?? "libgpures_test_opencl.so";
const HELPER = helperLib(LIB_FILE);

function cString(ptr: Deno.PointerValue): string {
  return ptr === null ? "" : Deno.UnsafePointerView.getCString(ptr);
}

/** The helper, with an OpenCL device to run on, or why the tests cannot run here. */
function openCl(): { cl: Cl; skip: null } | { cl: null; skip: string } {
  const path = decodeURIComponent(HELPER.pathname);
  try {
    Deno.statSync(HELPER);
  } catch {
    return {
      cl: null,
      skip: `${path} is missing; build it with \`cmake -S . -B build && cmake --build build\` ` +
        "(needs the OpenCL headers and loader: apt install ocl-icd-opencl-dev opencl-headers)",
    };
  }
  let lib: Deno.DynamicLibrary<typeof symbols>;
  try {
    lib = Deno.dlopen(HELPER, symbols);
  } catch (e) {
    return { cl: null, skip: `cannot load ${path}: ${(e as Error).message}` };
  }
  const cl = lib.symbols;
  if (cString(cl.gpures_test_cl_describe_platform()) === "") {
    const why = cString(cl.gpures_test_cl_last_error());
    lib.close();
    return { cl: null, skip: `no OpenCL device: ${why}` };
  }
  // The helper must reach the same handle table as this module.
  const probe = OpenClMem.create({ mem: 1n, queue: 1n, rowPitch: 0 });
  const kind = cl.gpures_test_cl_handle_kind(probe.unsafeHandle);
  probe.release();
  if (kind !== 10) {
    return {
      cl: null,
      skip: `${path} links another libgpures than the one this module loaded ` +
        "(is GPURES_LIB set to a different build?)",
    };
  }
  return { cl, skip: null };
}

const { cl, skip } = openCl();
const clOrSkip = (): Cl => cl!;
if (skip) console.log(`opencl_test: skipping the OpenCL tests: ${skip}`);
else console.log(`opencl_test: ${cString(cl!.gpures_test_cl_describe_platform())}`);
const imageSkip = skip ??
  (cl!.gpures_test_cl_image_support() ? null : "the OpenCL device has no image support");
if (!skip && imageSkip) console.log(`opencl_test: skipping the image test: ${imageSkip}`);

/** The helper's last failure, as an Error to throw. */
function helperError(what: string): Error {
  return new Error(`${what}: ${cString(clOrSkip().gpures_test_cl_last_error())}`);
}

/** The buffer pattern the helper's producer writes (see gpures_test_opencl.c). */
function bufferPattern(size: number, seed: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = 7 * i + 13 * (i >> 8) + seed;
  return out;
}

/** The image pattern the helper's producer writes, rows `pitch` bytes apart (padding 0). */
function imagePattern(width: number, height: number, pitch: number, seed: number): Uint8Array {
  const out = new Uint8Array(pitch * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * pitch + x * 4;
      out[i] = 4 * x + seed;
      out[i + 1] = 4 * y + 3 * seed;
      out[i + 2] = x * y + 5 * seed;
      out[i + 3] = 255 - ((x + y + seed) & 127);
    }
  }
  return out;
}

/** Equal bytes, or a message naming the first difference. */
function assertBytes(actual: Uint8Array, expected: Uint8Array, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  const at = actual.findIndex((v, i) => v !== expected[i]);
  assert.equal(at, -1, `${what}: byte ${at} is ${actual[at]}, expected ${expected[at]}`);
}

/** What the helper's consumer reads, given only a raw OpenClMem handle. */
function consume(handle: bigint, capacity: number): Uint8Array {
  const out = new Uint8Array(capacity);
  const length = new BigUint64Array(1);
  if (clOrSkip().gpures_test_cl_read(handle, out, BigInt(capacity), length) !== 0) {
    throw helperError("read");
  }
  return out.subarray(0, Number(length[0]));
}

// PoCL drops its own references to a queue and a mem on a worker thread a moment after a
// command finishes, so reference counts are read once they settle (or this long has passed).
const SETTLE_MS = 2000;

/** A context and a queue for one test, released when it ends. */
function withQueue(fn: (context: Deno.PointerObject, queue: Deno.PointerObject) => void): void {
  const cl = clOrSkip();
  const context = cl.gpures_test_cl_create_context();
  if (context === null) throw helperError("context");
  try {
    const queue = cl.gpures_test_cl_create_queue(context);
    if (queue === null) throw helperError("queue");
    try {
      fn(context, queue);
      assert.equal(
        cl.gpures_test_cl_queue_refcount(queue, 1, SETTLE_MS),
        1,
        "no reference to the queue leaked",
      );
    } finally {
      assert.equal(cl.gpures_test_cl_release_queue(queue), 0);
    }
  } finally {
    assert.equal(cl.gpures_test_cl_release_context(context), 0);
  }
}

Deno.test({
  name: "OpenCL: OpenClMem of a real cl_mem buffer; a consumer reads it through the handle alone",
  ignore: skip !== null,
  fn() {
    const cl = clOrSkip();
    const start = liveHandles();
    withQueue((context, queue) => {
      const size = 65536 + 77;
      const mem = cl.gpures_test_cl_make_buffer(context, queue, BigInt(size), 42);
      if (mem === null) throw helperError("make buffer");
      let released = 0;
      const buffer = OpenClMem.create({ mem, queue, rowPitch: 0 }, {
        keepAlive: {
          release() {
            assert.equal(cl.gpures_test_cl_release_mem(mem), 0);
            released++;
          },
        },
      });
      try {
        const d = buffer.describe();
        assert.equal(d.kind, "OpenClMem");
        assert.equal(d.kindId, 10);
        assert.equal(d.refcount, 1);
        assert.equal(d.mem, Deno.UnsafePointer.value(mem));
        assert.equal(d.queue, Deno.UnsafePointer.value(queue));
        assert.equal(d.rowPitch, 0);
        const json = buffer.toJSON();
        assert.equal(json.kind, "OpenClMem");
        assert.equal(BigInt(json.mem as string), Deno.UnsafePointer.value(mem)); // "0x…"

        assertBytes(consume(buffer.unsafeHandle, size), bufferPattern(size, 42), "buffer");
        assert.equal(
          cl.gpures_test_cl_mem_refcount(mem, 1, SETTLE_MS),
          1,
          "the consumer retained nothing",
        );

        // Through a raw handle given away and adopted back, as native code would pass it.
        const raw = buffer.clone().intoRaw();
        assert.equal(buffer.refcount, 2);
        assertBytes(consume(raw, size), bufferPattern(size, 42), "buffer through a raw handle");
        GpuResource.fromRaw(raw).release();
        assert.equal(released, 0, "a clone's release leaves the producer's mem");
      } finally {
        buffer.release();
      }
      assert.equal(released, 1, "the last release ran the keep-alive once");
    });
    assert.equal(liveHandles(), start);
  },
});

Deno.test({
  name: "OpenCL: OpenClMem of a real 64x64 RGBA8 image; a consumer reads it with the row pitch",
  ignore: imageSkip !== null,
  fn() {
    const cl = clOrSkip();
    const start = liveHandles();
    withQueue((context, queue) => {
      const mem = cl.gpures_test_cl_make_image(context, queue, 64, 64, 17);
      if (mem === null) throw helperError("make image");
      try {
        for (const rowPitch of [256, 320]) { // packed, then with 64 bytes of padding per row
          using image = OpenClMem.create({ mem, queue, rowPitch });
          assert.equal(image.describe().rowPitch, rowPitch);
          assertBytes(
            consume(image.unsafeHandle, rowPitch * 64),
            imagePattern(64, 64, rowPitch, 17),
            `image read with row pitch ${rowPitch}`,
          );
        }
        assert.equal(
          cl.gpures_test_cl_mem_refcount(mem, 1, SETTLE_MS),
          1,
          "the consumer retained nothing",
        );
      } finally {
        assert.equal(cl.gpures_test_cl_release_mem(mem), 0);
      }
    });
    assert.equal(liveHandles(), start);
  },
});

Deno.test({
  name: "OpenCL: a consumer given a released OpenClMem gets STALE and never reaches OpenCL",
  ignore: skip !== null,
  fn() {
    const cl = clOrSkip();
    const start = liveHandles();
    withQueue((context, queue) => {
      const mem = cl.gpures_test_cl_make_buffer(context, queue, 256n, 1);
      if (mem === null) throw helperError("make buffer");
      try {
        const buffer = OpenClMem.create({ mem, queue, rowPitch: 0 });
        const stale = buffer.unsafeHandle;
        buffer.release();
        const out = new Uint8Array(256);
        assert.equal(cl.gpures_test_cl_read(stale, out, 256n, null), -1);
        assert.match(cString(cl.gpures_test_cl_last_error()), /STALE/);
      } finally {
        assert.equal(cl.gpures_test_cl_release_mem(mem), 0);
      }
    });
    assert.equal(liveHandles(), start);
  },
});
