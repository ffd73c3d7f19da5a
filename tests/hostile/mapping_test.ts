// Mappings under attack: memory that shrinks under a mapping (SIGBUS), and
// mapped pages that outlive their mapping (SIGSEGV) or leak. Whatever could
// kill the process runs in a child, so a regression fails one test, not all.

import assert from "node:assert/strict";
import { DmaBufHandle, type InvalidHandleError, liveMappings } from "../../mod.ts";
import { close, memfd, SEAL, sealsOf, tmpfile, truncate } from "../_support/libc.ts";
import { describeChild, runChild } from "./_child.ts";

const linux = Deno.build.os === "linux";
const gc = (globalThis as { gc?: () => void }).gc;

/** One RgbaU8-sized object of `size` bytes as a DmaBufHandle (fd duplicated). */
function frameOver(fd: number, size = 4096): DmaBufHandle {
  return DmaBufHandle.create({
    fds: [fd],
    fourcc: 0x34324241, // AB24
    modifier: 0n,
    width: size / 64 / 4,
    height: 64,
    planes: [{ objectIndex: 0, offset: 0, stride: size / 64 }],
  });
}

async function collect(until: () => boolean): Promise<void> {
  for (let i = 0; i < 20 && !until(); i++) {
    gc!();
    await new Promise((r) => setTimeout(r, 10));
  }
}

// ------------------------------------------------------ memory that shrinks

Deno.test({
  name: "map() seals a sealable memfd, so a later truncate fails and reads stay safe",
  ignore: !linux,
  async fn() {
    const r = await runChild(`
      import { rgbaFrame } from "FIXTURES";
      import { memfd, truncate, close } from "LIBC";
      const fd = memfd(4096);
      const frame = rgbaFrame(fd);
      const pixels = new Uint8Array(frame.map());
      const shrunk = truncate(fd, 0); // whoever holds another fd of the object
      pixels[4095] = 7; // past the end of a shrunk file: SIGBUS
      console.log(shrunk ? "shrunk" : "refused", pixels[4095]);
      frame.release();
      close(fd);
    `);
    assert.equal(r.signal, null, describeChild(r));
    assert.equal(r.code, 0, describeChild(r));
    assert.equal(r.stdout.trim(), "refused 7");
  },
});

Deno.test({
  name: "map() leaves a memfd sealed against shrinking as it is and maps it",
  ignore: !linux,
  fn() {
    const fd = memfd(4096, { seals: SEAL.SHRINK | SEAL.SEAL });
    using frame = frameOver(fd);
    assert.equal(frame.map().byteLength, 4096);
    assert.equal(sealsOf(fd), SEAL.SHRINK | SEAL.SEAL);
    close(fd);
  },
});

Deno.test({
  name: "map() refuses a memfd that cannot be sealed, naming the fd field",
  ignore: !linux,
  fn() {
    const fd = memfd(4096, { sealable: false });
    using frame = frameOver(fd);
    const before = liveMappings();
    assert.throws(() => frame.map(), (e: InvalidHandleError) => {
      assert.equal(e.code, "INVALID_VALUE");
      assert.equal(e.field, "fds[0]");
      assert.match(
        e.message,
        /^Cannot map DmaBufHandle: fds\[0\] \(fd \d+\) is a memfd that is not sealed/,
      );
      return true;
    });
    assert.equal(liveMappings(), before);
    assert.ok(truncate(fd, 0), "nothing was sealed");
    close(fd);
  },
});

Deno.test({
  name: "map() refuses a regular file, which anyone who can write it can truncate",
  ignore: !linux,
  fn() {
    const fd = tmpfile(4096);
    using frame = frameOver(fd);
    assert.throws(() => frame.map(), (e: InvalidHandleError) => {
      assert.equal(e.field, "fds[0]");
      assert.match(
        e.message,
        /is a regular file, which any process that can write it can truncate/,
      );
      return true;
    });
    close(fd);
  },
});

Deno.test({
  name: "map({ allowUnsealed: true }) maps a trusted producer's file or unsealable memfd",
  ignore: !linux,
  fn() {
    for (const fd of [tmpfile(4096), memfd(4096, { sealable: false })]) {
      using frame = frameOver(fd);
      const pixels = new Uint8Array(frame.map(0, { allowUnsealed: true }));
      pixels[0] = 1;
      assert.equal(pixels.length, 4096);
      assert.ok(truncate(fd, 0), "a trusted object is left unsealed");
      close(fd);
    }
    const fd = memfd(4096);
    using frame = frameOver(fd);
    assert.throws(
      () => frame.map(0, { allowUnsealed: "yes" as unknown as boolean }),
      (e: InvalidHandleError) => e.field === "options.allowUnsealed",
    );
    const inherited = Object.create({ allowUnsealed: true });
    assert.equal(frame.map(0, inherited).byteLength, 4096, "an inherited option is not one");
    assert.equal(sealsOf(fd) & SEAL.SHRINK, SEAL.SHRINK, "so the memfd was sealed");
    close(fd);
  },
});

// ------------------------------------------ pages that outlive their mapping

const CHILD_FRAME = `
  import { liveMappings } from "MOD";
  import { rgbaFrame } from "FIXTURES";
  import { memfd, close } from "LIBC";
  const fd = memfd(4096);
  const frame = () => rgbaFrame(fd);
  const collect = async () => {
    for (let i = 0; i < 5; i++) { gc(); await new Promise((r) => setTimeout(r, 10)); }
  };
`;

Deno.test({
  name: "a map() buffer moved by transfer() outlives unmap(), release() and the wrapper's GC",
  ignore: !linux,
  async fn() {
    const r = await runChild(`${CHILD_FRAME}
      const released = frame();
      const a = new Uint8Array(released.map().transfer());
      released.unmap();
      released.release();
      const b = (() => new Uint8Array(frame().map().transfer()))(); // wrapper dropped unreleased
      await collect();
      a[1] = 1; // a use after munmap would be SIGSEGV
      b[2] = 2;
      console.log(a[1] + b[2], liveMappings());
      close(fd);
    `);
    assert.equal(r.signal, null, describeChild(r));
    assert.equal(r.stdout.trim(), "3 2", describeChild(r));
  },
});

Deno.test({
  name: "a map() buffer posted to a Worker with transfer stays mapped while the Worker uses it",
  ignore: !linux,
  async fn() {
    const worker = new URL("./_map_worker.ts", import.meta.url).href;
    const r = await runChild(`${CHILD_FRAME}
      const w = new Worker("${worker}", { type: "module" });
      (() => { // the wrapper is dropped unreleased, the other one released
        const kept = frame(), dropped = frame();
        const buffer = dropped.map(), other = kept.map();
        new Uint8Array(buffer)[7] = 70;
        new Uint8Array(other)[8] = 7;
        w.postMessage(buffer, [buffer]);
        w.postMessage(other, [other]);
        kept.release();
      })();
      await collect();
      w.postMessage("read");
      const sum = await new Promise((resolve) => { w.onmessage = (e) => resolve(e.data); });
      w.terminate();
      console.log(sum);
      close(fd);
    `);
    assert.equal(r.signal, null, describeChild(r));
    assert.equal(r.stdout.trim(), "154", describeChild(r));
  },
});

// Deno runs a Node-API finalizer only in the isolate that made the buffer: a
// mapping made in a Worker and moved to another isolate stays until the
// process ends (docs/reliability.md). It must still never fault.
Deno.test({
  name: "a map() buffer made in a Worker stays usable after that Worker ended",
  ignore: !linux,
  async fn() {
    const worker = new URL("./_map_source_worker.ts", import.meta.url).href;
    const r = await runChild(`${CHILD_FRAME}
      const w = new Worker("${worker}", { type: "module" });
      w.postMessage(fd);
      const bytes = new Uint8Array(await new Promise((r) => (w.onmessage = (e) => r(e.data))));
      w.terminate(); // its isolate, and the Node-API environment that made the buffer, end
      await collect();
      bytes[3] = 3;
      console.log(bytes[3], liveMappings());
      close(fd);
    `);
    assert.equal(r.signal, null, describeChild(r));
    assert.equal(r.stdout.trim(), "3 1", describeChild(r));
  },
});

Deno.test({
  name: "map(): a mapping lives exactly as long as the last buffer over it, wherever it went",
  ignore: !linux || !gc,
  async fn() {
    const fd = memfd(4096);
    const before = liveMappings();
    let moved: Uint8Array | undefined;
    {
      using frame = frameOver(fd);
      moved = new Uint8Array(frame.map().transfer());
      moved[0] = 9;
    }
    await collect(() => false);
    assert.equal(moved[0], 9);
    assert.equal(liveMappings(), before + 1, "the moved buffer holds the mapping");
    moved = undefined;
    await collect(() => liveMappings() === before);
    assert.equal(liveMappings(), before, "collected with its last buffer");
    close(fd);
  },
});

Deno.test({
  name: "map().transfer() in a loop leaks no mapping once the buffers are collected",
  ignore: !linux || !gc,
  async fn() {
    const fd = memfd(1 << 20);
    using frame = frameOver(fd, 1 << 20);
    const before = liveMappings();
    for (let i = 0; i < 200; i++) new Uint8Array(frame.map().transfer())[i] = 1;
    frame.unmap();
    await collect(() => liveMappings() === before);
    assert.equal(liveMappings(), before);
    close(fd);
  },
});

Deno.test({
  name: "map() after a BYOB read detached its buffer maps again; the old mapping is freed",
  ignore: !linux || !gc,
  async fn() {
    const fd = memfd(4096);
    using frame = frameOver(fd);
    const before = liveMappings();
    const stream = new ReadableStream({
      type: "bytes",
      pull(c) {
        c.byobRequest!.view!.set([1, 2, 3]);
        c.byobRequest!.respond(3);
      },
    });
    const reader = stream.getReader({ mode: "byob" });
    const { value } = await reader.read(new Uint8Array(frame.map()));
    assert.deepEqual([...value!.subarray(0, 3)], [1, 2, 3], "the read landed in the mapping");
    const again = new Uint8Array(frame.map());
    assert.equal(again.length, 4096, "map() does not hand out the detached buffer");
    assert.deepEqual([...again.subarray(0, 3)], [1, 2, 3]);
    frame.unmap();
    await reader.cancel();
    await collect(() => liveMappings() === before + 1);
    assert.equal(value![0], 1, "the read's view still works");
    assert.equal(liveMappings(), before + 1, "only the read's view holds a mapping");
    close(fd);
  },
});
