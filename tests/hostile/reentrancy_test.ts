// User code that runs inside gpures's own calls (getters and proxies on a
// descriptor) and calls back into gpures must not share scratch memory with
// the outer call; what describe() hands out must stay the caller's.

import assert from "node:assert/strict";
import { DmaBufHandle, liveHandles, VkBufferHandle } from "../../mod.ts";
import { RGBA_FRAME_BYTES, rgbaDesc, rgbaFrame } from "../_support/fixtures.ts";
import { isOpen, memfd } from "../_support/libc.ts";

const linux = Deno.build.os === "linux";

Deno.test({
  name: "create() re-entered from a descriptor getter: each handle adopts only its own fd",
  ignore: !linux,
  fn() {
    const a = memfd(RGBA_FRAME_BYTES), b = memfd(RGBA_FRAME_BYTES);
    let inner: DmaBufHandle | undefined;
    const { planes, ...desc } = rgbaDesc(a);
    const outer = DmaBufHandle.create({
      ...desc,
      get planes() {
        inner = rgbaFrame(b, { takeOwnership: true });
        return planes;
      },
    }, { takeOwnership: true });
    assert.deepEqual(outer.describe().fds, [a], "the outer handle owns the fd it was given");
    assert.deepEqual(inner!.describe().fds, [b]);
    outer.release();
    assert.ok(!isOpen(a));
    assert.ok(isOpen(b), "releasing one handle closed only its own fd");
    inner!.release();
    assert.ok(!isOpen(b));
  },
});

Deno.test("create() re-entered by a describe() of the same kind keeps the outer descriptor", () => {
  using other = VkBufferHandle.create({ buffer: 99n, size: 4096n });
  using made = VkBufferHandle.create({
    buffer: 1n,
    get size() {
      other.describe();
      return 16n;
    },
  });
  const d = made.describe();
  assert.equal(d.buffer, 1n);
  assert.equal(d.size, 16n);
});

Deno.test("create() re-entered through a Proxy descriptor, many levels deep, stays exact", () => {
  const before = liveHandles();
  const made: VkBufferHandle[] = [];
  function nested(depth: number): VkBufferHandle {
    const target = { buffer: BigInt(depth + 1), size: 64n };
    return VkBufferHandle.create(
      new Proxy(target, {
        get(t, key) {
          if (key === "size" && depth < 5) made.push(nested(depth + 1));
          return t[key as keyof typeof t];
        },
      }),
    );
  }
  made.push(nested(0));
  assert.deepEqual(made.map((r) => r.describe().buffer).sort(), [1n, 2n, 3n, 4n, 5n, 6n]);
  for (const r of made) r.release();
  assert.equal(liveHandles(), before);
});

Deno.test("describe(): a deviceUuid stays as described: no later describe or transfer breaks it", () => {
  const uuid = (n: number) => new Uint8Array(16).fill(n);
  using a = VkBufferHandle.create({ buffer: 1n, size: 16n, deviceUuid: uuid(1) });
  using b = VkBufferHandle.create({ buffer: 2n, size: 16n, deviceUuid: uuid(2) });
  const first = a.describe().deviceUuid!;
  const second = b.describe().deviceUuid!;
  for (let i = 0; i < 1000; i++) b.describe(); // more than a pool's worth
  assert.deepEqual([...first], [...uuid(1)], "later describes did not change it");
  assert.throws(() => (first.buffer as ArrayBuffer).transfer(), TypeError, "nobody can detach it");
  assert.throws(() => structuredClone(first, { transfer: [first.buffer as ArrayBuffer] }));
  assert.deepEqual([...second], [...uuid(2)], "so no other UUID was detached with it");
  assert.deepEqual([...b.describe().deviceUuid!], [...uuid(2)], "and describe() still works");
});
