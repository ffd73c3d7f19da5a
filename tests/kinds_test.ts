// Every kind in the library's table has its class, generated or written by
// hand, and the classes share what their table rows say they can do.

import assert from "node:assert/strict";
import * as gpures from "../mod.ts";
import {
  FdResource,
  GpuResource,
  SyncPoint,
  VkBufferHandle,
  VkImage,
  VkOpaqueFd,
  WrongKindError,
} from "../mod.ts";
import { KINDS } from "../ffi/gen/kinds.ts";
import { fixture, valid, validDesc } from "./_support/fixtures.ts";
import { close, memfd } from "./_support/libc.ts";

const exported = gpures as unknown as Record<string, { kindId?: number; prototype?: unknown }>;

Deno.test("every kind of the library's table is a class exported from mod.ts, with its id", () => {
  for (const kind of KINDS) {
    const cls = exported[kind.name];
    assert.ok(cls, `${kind.name} is exported`);
    assert.equal(cls.kindId, kind.id, `${kind.name}.kindId`);
    assert.ok(cls.prototype instanceof GpuResource, `${kind.name} extends GpuResource`);
    const ownsFds = kind.ownership === 1;
    if (kind.family === 1) { // a SyncPoint: waited on, never mapped
      assert.ok(cls.prototype instanceof SyncPoint, `${kind.name} extends SyncPoint`);
      assert.equal(
        (cls as { ownsFds?: boolean }).ownsFds ?? false,
        ownsFds,
        `${kind.name}.ownsFds`,
      );
    } else {
      assert.equal(
        cls.prototype instanceof FdResource,
        ownsFds,
        `${kind.name} owns fds: ${ownsFds}`,
      );
    }
    const slot = kind.fields.some((f) => f.path === "slotRelease.gate");
    assert.equal(
      typeof (cls.prototype as { slotRelease?: unknown }).slotRelease === "function",
      slot,
    );
  }
});

Deno.test("only kinds that own fds have fd fields: the library takes and closes no other", () => {
  const FD = 8;
  for (const kind of KINDS) {
    const fdRows = kind.fields.filter((f) => f.type === FD).map((f) => f.path);
    if (kind.ownership !== 1) assert.deepEqual(fdRows, [], `${kind.name} is borrowed`);
    else assert.ok(fdRows.length > 0, `${kind.name} owns fds, so it names some`);
  }
});

Deno.test("GpuResource.fromRaw(raw) gives the kind's own class", () => {
  const raw = VkBufferHandle.create(valid("VkBufferHandle")).intoRaw();
  using back = GpuResource.fromRaw(raw);
  assert.ok(back instanceof VkBufferHandle);
});

Deno.test("GpuResource.fromRaw(raw, Kind) checks the kind; a refusal leaves the reference", () => {
  const desc = validDesc("VkImage") as unknown as gpures.VkImageDesc;
  using image = VkImage.create(desc);
  const raw = image.clone().intoRaw();
  assert.throws(() => GpuResource.fromRaw(raw, VkBufferHandle), WrongKindError);
  assert.throws(
    () => GpuResource.fromRaw(raw, { kindId: 4 } as unknown as typeof VkImage),
    (e: gpures.InvalidHandleError) => e.field === "kind",
  );
  assert.equal(image.refcount, 2, "both refusals left the reference with the caller");
  using adopted = GpuResource.fromRaw(raw, VkImage);
  assert.equal(adopted.describe().image, BigInt(desc.image));
  assert.equal(image.refcount, 2);
});

Deno.test({
  name: "VkOpaqueFd maps its memory like DmaBufHandle: map() is every fd kind's",
  ignore: Deno.build.os !== "linux",
  fn() {
    const fd = memfd(4096);
    using memory = VkOpaqueFd.create(fixture("VkOpaqueFd", { fds: [fd] }).desc as never);
    using alias = memory.clone();
    const a = new Uint8Array(memory.map());
    a[9] = 9;
    assert.equal(new Uint8Array(alias.map())[9], 9);
    memory.release();
    assert.equal(a.length, 0, "release() detached what this wrapper mapped");
    close(fd);
  },
});
