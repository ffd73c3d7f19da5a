// The fd-owning kinds (DmaBufHandle, VkOpaqueFd) with real memfds: who owns
// which fd, when it is closed, and that every fd gpures holds is close-on-exec.

import assert from "node:assert/strict";
import {
  DmaBufHandle,
  type DmaBufHandleDesc,
  InvalidHandleError,
  liveHandles,
  VkOpaqueFd,
  type VkOpaqueFdDesc,
} from "../mod.ts";
import {
  clearCloexec,
  close,
  countOpenFds,
  isCloexec,
  isOpen,
  memfd,
  readAt,
  writeAt,
} from "./_support/libc.ts";
import { fixture } from "./_support/fixtures.ts";

// The frames and memory of tools/fixtures.ts: NV12 64x32, luma 2048 bytes then chroma 1024.
const NV12 = 0x3231564e; // DRM_FORMAT_NV12, "NV12"
const WIDTH = 64;
const HEIGHT = 32;
const LUMA_BYTES = WIDTH * HEIGHT; // 2048
const CHROMA_BYTES = WIDTH * (HEIGHT / 2); // 1024

/** The NV12 frame with both planes in the object of `fd` (the fixture's "oneObject"). */
function nv12(fd: number): DmaBufHandleDesc {
  return fixture("DmaBufHandle", { shape: "oneObject", fds: [fd] }).desc as never;
}

/** The NV12 frame with its planes in two objects (the DmaBufHandle fixture). */
function nv12In(luma: number, chroma: number): DmaBufHandleDesc {
  return fixture("DmaBufHandle", { fds: [luma, chroma] }).desc as never;
}

/** The VkOpaqueFd fixture's memory in the object of `fd` (4096 bytes from offset 256). */
function opaque(fd: number): VkOpaqueFdDesc {
  return fixture("VkOpaqueFd", { fds: [fd] }).desc as never;
}

function bytes(n: number, seed: number): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
}

// ------------------------------------------------------------ duplicate (default)

Deno.test("DmaBufHandle.create() duplicates the fds by default", () => {
  const fd = memfd(4096);
  try {
    using frame = DmaBufHandle.create(nv12(fd));
    const own = frame.describe().fds[0];
    assert.notEqual(own, fd);
    assert.ok(isOpen(own));
    frame.release();
    assert.ok(isOpen(fd), "the caller's fd stays open after the handle's last release");
    assert.ok(!isOpen(own), "the handle's duplicate is closed by its last release");
  } finally {
    close(fd);
  }
});

Deno.test("VkOpaqueFd.create() duplicates the fd by default", () => {
  const fd = memfd(65536);
  try {
    using memory = VkOpaqueFd.create(opaque(fd));
    const own = memory.describe().fd;
    assert.notEqual(own, fd);
    assert.ok(isOpen(own));
    memory.release();
    assert.ok(isOpen(fd), "the caller's fd stays open after the handle's last release");
    assert.ok(!isOpen(own), "the handle's duplicate is closed by its last release");
  } finally {
    close(fd);
  }
});

Deno.test("DmaBufHandle.create() with takeOwnership: false duplicates like the default", () => {
  const fd = memfd(4096);
  try {
    using frame = DmaBufHandle.create(nv12(fd), { takeOwnership: false });
    assert.notEqual(frame.describe().fds[0], fd);
    frame.release();
    assert.ok(isOpen(fd));
  } finally {
    close(fd);
  }
});

Deno.test("DmaBufHandle.create() duplicating leaves the caller's fd flags alone", () => {
  const fd = memfd(4096, { cloexec: false });
  try {
    using frame = DmaBufHandle.create(nv12(fd));
    assert.ok(isCloexec(frame.describe().fds[0]), "the duplicate is close-on-exec");
    assert.ok(!isCloexec(fd), "the caller's own fd keeps its flags");
  } finally {
    close(fd);
  }
});

// ------------------------------------------------------------------- adoption

Deno.test("DmaBufHandle.create() with takeOwnership: true adopts the caller's fd", () => {
  const fd = memfd(4096);
  using frame = DmaBufHandle.create(nv12(fd), { takeOwnership: true });
  assert.equal(frame.describe().fds[0], fd);
  frame.release();
  assert.ok(!isOpen(fd), "the last release closes the adopted fd");
});

Deno.test("VkOpaqueFd.create() with takeOwnership: true adopts the caller's fd", () => {
  const fd = memfd(65536);
  using memory = VkOpaqueFd.create(opaque(fd), { takeOwnership: true });
  assert.equal(memory.describe().fd, fd);
  memory.release();
  assert.ok(!isOpen(fd), "the last release closes the adopted fd");
});

Deno.test("DmaBufHandle: an adopted fd stays open while a clone lives", () => {
  const fd = memfd(4096);
  using frame = DmaBufHandle.create(nv12(fd), { takeOwnership: true });
  using copy = frame.clone();
  frame.release();
  assert.ok(isOpen(fd), "not closed before the last release");
  assert.equal(copy.describe().fds[0], fd);
  copy.release();
  assert.ok(!isOpen(fd), "closed by the last release");
});

Deno.test("VkOpaqueFd: an adopted fd stays open while a clone lives", () => {
  const fd = memfd(65536);
  using memory = VkOpaqueFd.create(opaque(fd), { takeOwnership: true });
  using copy = memory.clone();
  memory.release();
  assert.ok(isOpen(fd), "not closed before the last release");
  copy.release();
  assert.ok(!isOpen(fd), "closed by the last release");
});

Deno.test("DmaBufHandle: an adopted fd without FD_CLOEXEC becomes close-on-exec", () => {
  const fd = memfd(4096, { cloexec: false });
  assert.ok(!isCloexec(fd));
  using frame = DmaBufHandle.create(nv12(fd), { takeOwnership: true });
  assert.ok(isCloexec(fd));
  frame.release();
  assert.ok(!isOpen(fd));
});

Deno.test("VkOpaqueFd: an adopted fd without FD_CLOEXEC becomes close-on-exec", () => {
  const fd = memfd(65536);
  clearCloexec(fd);
  assert.ok(!isCloexec(fd));
  using memory = VkOpaqueFd.create(opaque(fd), { takeOwnership: true });
  assert.ok(isCloexec(fd));
  memory.release();
  assert.ok(!isOpen(fd));
});

Deno.test("DmaBufHandle: adopting one fd named twice adopts it once and duplicates the repeat", () => {
  const fd = memfd(4096);
  const desc: DmaBufHandleDesc = {
    ...nv12(fd),
    fds: [fd, fd],
    planes: [
      { objectIndex: 0, offset: 0, stride: WIDTH },
      { objectIndex: 1, offset: LUMA_BYTES, stride: WIDTH },
    ],
  };
  using frame = DmaBufHandle.create(desc, { takeOwnership: true });
  const [first, second] = frame.describe().fds;
  assert.equal(first, fd);
  assert.notEqual(second, fd);
  assert.ok(isCloexec(second));
  frame.release();
  assert.ok(!isOpen(first));
  assert.ok(!isOpen(second));
});

// -------------------------------------------------------------------- cloexec

Deno.test("DmaBufHandle: every fd the handle holds is close-on-exec", () => {
  const a = memfd(LUMA_BYTES, { cloexec: false });
  const b = memfd(CHROMA_BYTES, { cloexec: false });
  try {
    using frame = DmaBufHandle.create(nv12In(a, b));
    const fds = frame.describe().fds;
    assert.equal(fds.length, 2);
    for (const fd of fds) assert.ok(isCloexec(fd), `fd ${fd} is close-on-exec`);
  } finally {
    close(a);
    close(b);
  }
});

Deno.test("VkOpaqueFd: the fd the handle holds is close-on-exec", () => {
  const fd = memfd(65536, { cloexec: false });
  try {
    using memory = VkOpaqueFd.create(opaque(fd));
    assert.ok(isCloexec(memory.describe().fd));
  } finally {
    close(fd);
  }
});

// --------------------------------------------------------------------- dupFd

Deno.test("DmaBufHandle.dupFd() gives a new close-on-exec fd of the same memory", () => {
  const fd = memfd(4096);
  try {
    using frame = DmaBufHandle.create(nv12(fd));
    const dup = frame.dupFd(0);
    try {
      assert.notEqual(dup, fd);
      assert.notEqual(dup, frame.describe().fds[0]);
      assert.ok(isCloexec(dup));
      writeAt(fd, bytes(256, 1), 100);
      assert.deepEqual(readAt(dup, 256, 100), bytes(256, 1));
      writeAt(dup, bytes(64, 9), 3000);
      assert.deepEqual(readAt(fd, 64, 3000), bytes(64, 9));
    } finally {
      assert.ok(close(dup), "the caller owns the duplicate and must close it");
    }
  } finally {
    close(fd);
  }
});

Deno.test("VkOpaqueFd.dupFd() gives a new close-on-exec fd of the same memory", () => {
  const fd = memfd(65536);
  using memory = VkOpaqueFd.create(opaque(fd), { takeOwnership: true });
  const dup = memory.dupFd();
  try {
    assert.notEqual(dup, fd);
    assert.ok(isCloexec(dup));
    writeAt(dup, bytes(128, 5), 60000);
    assert.deepEqual(readAt(fd, 128, 60000), bytes(128, 5));
  } finally {
    close(dup);
  }
});

Deno.test("DmaBufHandle.dupFd() gives a fd that outlives the handle", () => {
  const fd = memfd(4096);
  writeAt(fd, bytes(32, 3), 0);
  using frame = DmaBufHandle.create(nv12(fd), { takeOwnership: true });
  const dup = frame.dupFd(0);
  try {
    frame.release();
    assert.ok(!isOpen(fd));
    assert.ok(isOpen(dup), "releasing the handle does not close the importer's fd");
    assert.deepEqual(readAt(dup, 32, 0), bytes(32, 3));
  } finally {
    close(dup);
  }
});

Deno.test("DmaBufHandle.dupFd() releases nothing: the caller's duplicate is its own", () => {
  const fd = memfd(4096);
  try {
    using frame = DmaBufHandle.create(nv12(fd));
    const own = frame.describe().fds[0];
    close(frame.dupFd(0));
    assert.ok(isOpen(own), "closing a duplicate leaves the handle's fd open");
    assert.equal(frame.refcount, 1);
  } finally {
    close(fd);
  }
});

Deno.test("DmaBufHandle.dupFd() out of range throws InvalidHandleError on index", () => {
  const fd = memfd(4096);
  try {
    using frame = DmaBufHandle.create(nv12(fd));
    for (const index of [1, 4, 2 ** 32 - 1, -1, 0.5, NaN, 2 ** 32]) {
      assert.throws(() => frame.dupFd(index), (e: unknown) => {
        assert.ok(e instanceof InvalidHandleError, `index ${index}: ${e}`);
        assert.equal(e.code, "INVALID_VALUE");
        assert.equal(e.field, "index");
        return true;
      });
    }
  } finally {
    close(fd);
  }
});

Deno.test("VkOpaqueFd.dupFd(1) throws InvalidHandleError on index", () => {
  const fd = memfd(65536);
  try {
    using memory = VkOpaqueFd.create(opaque(fd));
    assert.throws(() => memory.dupFd(1), (e: unknown) => {
      assert.ok(e instanceof InvalidHandleError);
      assert.equal(e.code, "INVALID_VALUE");
      assert.equal(e.field, "index");
      return true;
    });
  } finally {
    close(fd);
  }
});

// ------------------------------------------------------------ failing creates

Deno.test("DmaBufHandle.create() that fails with takeOwnership leaves the caller's fds open", () => {
  const a = memfd(LUMA_BYTES, { cloexec: false });
  const b = memfd(16); // too small for the chroma plane
  const before = liveHandles();
  try {
    assert.throws(
      () => DmaBufHandle.create(nv12In(a, b), { takeOwnership: true }),
      InvalidHandleError,
    );
    assert.ok(isOpen(a));
    assert.ok(isOpen(b));
    assert.ok(!isCloexec(a), "a failed create does not touch the caller's fds");
    assert.equal(liveHandles(), before);
  } finally {
    close(a);
    close(b);
  }
});

Deno.test("DmaBufHandle.create() that fails on a closed fd leaves the caller's other fds open", () => {
  const a = memfd(LUMA_BYTES);
  const gone = memfd(CHROMA_BYTES);
  close(gone);
  try {
    assert.throws(
      () => DmaBufHandle.create(nv12In(a, gone), { takeOwnership: true }),
      (e: unknown) => e instanceof InvalidHandleError && e.field === "fds[1]",
    );
    assert.ok(isOpen(a));
  } finally {
    close(a);
  }
});

Deno.test("VkOpaqueFd.create() that fails with takeOwnership leaves the caller's fd open", () => {
  const fd = memfd(65536);
  try {
    assert.throws(
      () => VkOpaqueFd.create({ ...opaque(fd), offset: 65536n }, { takeOwnership: true }),
      (e: unknown) => e instanceof InvalidHandleError && e.field === "offset",
    );
    assert.ok(isOpen(fd));
  } finally {
    close(fd);
  }
});

Deno.test("DmaBufHandle.create() refuses a plane that does not fit its memfd, on planes[1].offset", () => {
  const fd = memfd(4096);
  try {
    const desc = nv12(fd);
    desc.planes[1].offset = 3584; // 16 rows of 64 bytes from here end at 4608
    assert.throws(() => DmaBufHandle.create(desc), (e: unknown) => {
      assert.ok(e instanceof InvalidHandleError);
      assert.equal(e.code, "INVALID_VALUE");
      assert.equal(e.field, "planes[1].offset");
      return true;
    });
  } finally {
    close(fd);
  }
});

Deno.test("DmaBufHandle.create() accepts a plane that ends exactly at the end of its memfd", () => {
  const fd = memfd(LUMA_BYTES + CHROMA_BYTES);
  try {
    using frame = DmaBufHandle.create(nv12(fd));
    assert.equal(frame.describe().planes[1].offset, LUMA_BYTES);
  } finally {
    close(fd);
  }
});

Deno.test("DmaBufHandle.create() refuses a closed fd, on fds[0]", () => {
  const fd = memfd(4096);
  close(fd);
  assert.throws(() => DmaBufHandle.create(nv12(fd)), (e: unknown) => {
    assert.ok(e instanceof InvalidHandleError);
    assert.equal(e.code, "INVALID_VALUE");
    assert.equal(e.field, "fds[0]");
    return true;
  });
});

Deno.test("DmaBufHandle.create() refuses a negative fd, on fds[0]", () => {
  assert.throws(() => DmaBufHandle.create(nv12(-1)), (e: unknown) => {
    assert.ok(e instanceof InvalidHandleError);
    assert.equal(e.code, "INVALID_VALUE");
    assert.equal(e.field, "fds[0]");
    return true;
  });
});

Deno.test("VkOpaqueFd.create() refuses a closed fd, on fd", () => {
  const fd = memfd(65536);
  close(fd);
  assert.throws(() => VkOpaqueFd.create(opaque(fd)), (e: unknown) => {
    assert.ok(e instanceof InvalidHandleError);
    assert.equal(e.code, "INVALID_VALUE");
    assert.equal(e.field, "fd");
    return true;
  });
});

// ------------------------------------------------------------------- layouts

Deno.test("DmaBufHandle holds NV12 with its planes in two objects", () => {
  const luma = memfd(LUMA_BYTES);
  const chroma = memfd(CHROMA_BYTES);
  try {
    writeAt(chroma, bytes(64, 42), 0);
    using frame = DmaBufHandle.create(nv12In(luma, chroma));
    const d = frame.describe();
    assert.equal(d.fds.length, 2);
    assert.notEqual(d.fds[0], luma);
    assert.notEqual(d.fds[1], chroma);
    assert.deepEqual(d.planes, [
      { objectIndex: 0, offset: 0, stride: WIDTH },
      { objectIndex: 1, offset: 0, stride: WIDTH },
    ]);
    const dup = frame.dupFd(1);
    try {
      assert.deepEqual(readAt(dup, 64, 0), bytes(64, 42), "dupFd(1) is the chroma object");
    } finally {
      close(dup);
    }
    const own = d.fds;
    frame.release();
    assert.ok(!isOpen(own[0]) && !isOpen(own[1]), "the last release closes both duplicates");
    assert.ok(isOpen(luma) && isOpen(chroma));
  } finally {
    close(luma);
    close(chroma);
  }
});

Deno.test("DmaBufHandle holds NV12 with both planes in one object", () => {
  const fd = memfd(LUMA_BYTES + CHROMA_BYTES);
  try {
    using frame = DmaBufHandle.create(nv12(fd));
    const d = frame.describe();
    assert.equal(d.fds.length, 1);
    assert.equal(d.fourcc, NV12);
    assert.equal(d.modifier, 0n);
    assert.equal(d.width, WIDTH);
    assert.equal(d.height, HEIGHT);
    assert.deepEqual(d.planes, [
      { objectIndex: 0, offset: 0, stride: WIDTH },
      { objectIndex: 0, offset: LUMA_BYTES, stride: WIDTH },
    ]);
  } finally {
    close(fd);
  }
});

// ---------------------------------------------------------------------- leaks

const CYCLES = 10_000;

Deno.test("10k DmaBufHandle create/release cycles (duplicating) leak no fd", () => {
  const fd = memfd(4096);
  try {
    const fds = countOpenFds();
    const live = liveHandles();
    const desc = nv12(fd);
    for (let i = 0; i < CYCLES; i++) DmaBufHandle.create(desc).release();
    assert.equal(countOpenFds(), fds);
    assert.equal(liveHandles(), live);
  } finally {
    close(fd);
  }
});

Deno.test("10k DmaBufHandle create/release cycles (adopting) leak no fd", () => {
  const fds = countOpenFds();
  const live = liveHandles();
  for (let i = 0; i < CYCLES; i++) {
    DmaBufHandle.create(nv12(memfd(4096)), { takeOwnership: true }).release();
  }
  assert.equal(countOpenFds(), fds);
  assert.equal(liveHandles(), live);
});

Deno.test("10k VkOpaqueFd create/release cycles (duplicating) leak no fd", () => {
  const fd = memfd(65536);
  try {
    const fds = countOpenFds();
    const live = liveHandles();
    const desc = opaque(fd);
    for (let i = 0; i < CYCLES; i++) VkOpaqueFd.create(desc).release();
    assert.equal(countOpenFds(), fds);
    assert.equal(liveHandles(), live);
  } finally {
    close(fd);
  }
});

Deno.test("10k VkOpaqueFd create/release cycles (adopting) leak no fd", () => {
  const fds = countOpenFds();
  const live = liveHandles();
  for (let i = 0; i < CYCLES; i++) {
    VkOpaqueFd.create(opaque(memfd(65536)), { takeOwnership: true }).release();
  }
  assert.equal(countOpenFds(), fds);
  assert.equal(liveHandles(), live);
});

Deno.test("10k failing DmaBufHandle creates leak no fd", () => {
  const fd = memfd(16); // too small for the frame
  try {
    const fds = countOpenFds();
    const desc = nv12(fd);
    for (let i = 0; i < CYCLES; i++) {
      try {
        DmaBufHandle.create(desc);
        assert.fail("create should have thrown");
      } catch (e) {
        if (!(e instanceof InvalidHandleError)) throw e;
      }
    }
    assert.equal(countOpenFds(), fds);
  } finally {
    close(fd);
  }
});

Deno.test("10k dupFd() calls whose fds are closed leak no fd", () => {
  const fd = memfd(4096);
  try {
    using frame = DmaBufHandle.create(nv12(fd));
    const fds = countOpenFds();
    for (let i = 0; i < CYCLES; i++) assert.ok(close(frame.dupFd(0)));
    assert.equal(countOpenFds(), fds);
  } finally {
    close(fd);
  }
});
