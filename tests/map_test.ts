// DmaBufHandle.map(): CPU access to the memory behind the handle's fd, with
// no copy (memfds stand in for dma-bufs here: no dma-buf exporter exists on a
// machine without a GPU; the DMA_BUF_IOCTL_SYNC path answers ENOTTY on them,
// which map() takes for "not a dma-buf", not for an error).

import assert from "node:assert/strict";
import { DmaBufHandle, GpuResource, type InvalidHandleError, liveMappings } from "../mod.ts";
import { fixture } from "./_support/fixtures.ts";
import { close, memfd, readAt, writeAt } from "./_support/libc.ts";

const linux = Deno.build.os === "linux";
const gc = (globalThis as { gc?: () => void }).gc;

/** The DmaBufHandle fixture: NV12 64x32, luma in fds[0] (2048 bytes), chroma in fds[1] (1024). */
function nv12(luma: number, chroma: number): Parameters<typeof DmaBufHandle.create>[0] {
  return fixture("DmaBufHandle", { fds: [luma, chroma] }).desc as never;
}

function withFrame(fn: (frame: DmaBufHandle, luma: number, chroma: number) => void): void {
  const luma = memfd(2048), chroma = memfd(1024);
  try {
    fn(DmaBufHandle.create(nv12(luma, chroma)), luma, chroma);
  } finally {
    close(luma);
    close(chroma);
  }
}

Deno.test({
  name: "DmaBufHandle.map(): writes through the mapping are the memfd's, and back",
  ignore: !linux,
  fn() {
    withFrame((frame, luma, chroma) => {
      const before = liveMappings();
      const y = new Uint8Array(frame.map(0));
      const uv = new Uint8Array(frame.map(1));
      assert.equal(y.length, 2048);
      assert.equal(uv.length, 1024);
      assert.equal(liveMappings(), before + 2);
      y.set([1, 2, 3], 10); // through the mapping ...
      assert.deepEqual(readAt(luma, 3, 10), new Uint8Array([1, 2, 3])); // ... seen in the file
      writeAt(chroma, new Uint8Array([9, 8, 7]), 500); // through the file ...
      assert.deepEqual([...uv.subarray(500, 503)], [9, 8, 7]); // ... seen in the mapping
      assert.equal(frame.map(0), y.buffer, "mapping an index again gives the same buffer");
      frame.release();
      assert.equal(y.length, 0, "release() detached the buffers before unmapping");
      assert.equal(uv.length, 0);
      assert.equal(liveMappings(), before);
    });
  },
});

Deno.test({
  name: "DmaBufHandle.map(): no copy, the mapping is the object's memory at every access",
  ignore: !linux,
  fn() {
    withFrame((frame, luma) => {
      using _f = frame;
      const y = new Uint8Array(frame.map());
      for (let i = 0; i < 3; i++) {
        writeAt(luma, new Uint8Array([i + 40]), 2047);
        assert.equal(y[2047], i + 40);
      }
    });
  },
});

Deno.test({
  name: "DmaBufHandle.unmap() ends one mapping or all; intoRaw() and clones map apart",
  ignore: !linux,
  fn() {
    withFrame((frame) => {
      const before = liveMappings();
      const clone = frame.clone();
      const a = new Uint8Array(frame.map(0));
      const b = new Uint8Array(clone.map(0));
      a[0] = 0x42;
      assert.equal(b[0], 0x42, "two mappings of one object share its memory");
      frame.unmap(0);
      assert.equal(a.length, 0);
      assert.equal(b.length, 2048, "the clone's mapping is its own");
      frame.unmap(); // nothing left: a no-op
      const again = new Uint8Array(frame.map(0));
      assert.equal(again[0], 0x42);
      const raw = frame.intoRaw();
      assert.equal(again.length, 0, "intoRaw() gives the reference away and unmaps");
      clone.release();
      assert.equal(liveMappings(), before);
      GpuResource.fromRaw(raw).release();
    });
  },
});

Deno.test({
  name: "DmaBufHandle.map() refuses an index past its fds and a released handle",
  ignore: !linux,
  fn() {
    withFrame((frame) => {
      assert.throws(() => frame.map(2), (e: InvalidHandleError) => {
        assert.equal(e.code, "INVALID_VALUE");
        assert.equal(e.field, "index");
        assert.match(e.message, /^Cannot map DmaBufHandle: index 2 is out of range/);
        return true;
      });
      assert.throws(() => frame.map(-1), (e: InvalidHandleError) => e.field === "index");
      frame.release();
      assert.throws(() => frame.map(0), (e: InvalidHandleError) => e.code === "STALE");
      frame.unmap(); // harmless once released
    });
  },
});

Deno.test({
  name: "DmaBufHandle.map(): a wrapper collected unreleased leaves its buffer mapped until it goes",
  ignore: !linux || !gc,
  async fn() {
    const before = liveMappings();
    let kept: Uint8Array | undefined;
    withFrame((frame) => {
      kept = new Uint8Array(frame.map());
      kept[5] = 5;
    }); // the wrapper is dropped unreleased
    for (let i = 0; i < 5; i++) {
      gc!();
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(kept![5], 5, "the buffer is still mapped while it is reachable");
    assert.equal(liveMappings(), before + 1);
    kept = undefined;
    for (let i = 0; i < 10 && liveMappings() > before; i++) {
      gc!();
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(liveMappings(), before, "collected with its buffer, then unmapped");
  },
});
