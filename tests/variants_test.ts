// The contract every kind keeps: create, describe, clone, release, JSON,
// rejection of bad descriptors, and platform gating. One Deno.test per
// (kind, behaviour), driven by the kind table and the fixtures of
// tools/fixtures.ts (the C tests run the same ones).

import assert from "node:assert/strict";
import { GpuResource, InvalidHandleError, liveHandles, UnsupportedPlatformError } from "../mod.ts";
import { KINDS } from "../ffi/gen/kinds.ts";
import {
  type Change,
  CLASSES,
  fixture,
  FIXTURES,
  type KindName,
  openWebGpu,
} from "./_support/fixtures.ts";

const wgpuMissing = await openWebGpu();

const NOT_ON_THIS_OS = (name: string) => !GpuResource.isSupported(name as never);

/** Inputs that describe() reports in another form (fds are duplicated, buffers become ptr + size). */
const RESHAPED = new Set(["fd", "fds", "data", "texture"]);

/** A value in one form for comparison; with `shape`, only the keys `shape` has. */
function comparable(v: unknown, shape: unknown = v): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === "number" || typeof v === "bigint") return String(v);
  if (v instanceof Uint8Array) return Array.from(v).join(",");
  if (Array.isArray(v)) return v.map((x, i) => comparable(x, (shape as unknown[])?.[i]));
  if (typeof v === "object") {
    if (Object.getPrototypeOf(v) === null || !(v.constructor === Object)) {
      return String(Deno.UnsafePointer.value(v as Deno.PointerObject));
    }
    const keys = Object.keys(shape as object).filter((k) => !RESHAPED.has(k));
    return Object.fromEntries(
      keys.map((
        k,
      ) => [
        k,
        comparable((v as Record<string, unknown>)[k], (shape as Record<string, unknown>)[k]),
      ]),
    );
  }
  return v;
}

function withFixture(
  name: KindName,
  body: (desc: Record<string, unknown>) => void,
  change?: Change,
): void {
  using f = fixture(name, { change });
  body(f.desc);
}

Deno.test("every kind of the library has a fixture and a class", () => {
  assert.deepEqual(Object.keys(FIXTURES), KINDS.map((k) => k.name));
  for (const k of KINDS) assert.equal(CLASSES[k.name as KindName].kindId, k.id);
});

for (const kind of KINDS) {
  const name = kind.name as KindName;
  const f = { cls: CLASSES[name] };
  const skip = kind.name === "WgpuTexture" && wgpuMissing !== "";
  if (skip) console.log(`WgpuTexture tests skip: ${wgpuMissing}`);

  if (NOT_ON_THIS_OS(kind.name)) {
    Deno.test(`${kind.name}.create() is refused on ${Deno.build.os} before validation`, () => {
      const before = liveHandles();
      assert.throws(
        () => f.cls.create({} as never),
        (e: unknown) =>
          e instanceof UnsupportedPlatformError && e.code === "UNSUPPORTED_PLATFORM" &&
          e.message.includes(Deno.build.os),
      );
      assert.equal(liveHandles(), before);
    });
    continue;
  }

  Deno.test({
    name: `${kind.name}.describe() reports what create() was given`,
    ignore: skip,
    fn: () =>
      withFixture(name, (desc) => {
        using r = f.cls.create(desc as never);
        const d = r.describe() as Record<string, unknown>;
        assert.equal(d.kind, kind.name);
        assert.equal(d.kindId, kind.id);
        assert.equal(d.refcount, 1);
        for (const [key, value] of Object.entries(desc)) {
          if (RESHAPED.has(key)) continue;
          assert.deepEqual(comparable(d[key], value), comparable(value), `field ${key}`);
        }
      }),
  });

  Deno.test({
    name: `${kind.name}.clone() shares the handle until the last release`,
    ignore: skip,
    fn: () =>
      withFixture(name, (desc) => {
        const before = liveHandles(kind.id);
        const a = f.cls.create(desc as never);
        const b = a.clone();
        assert.equal(b.unsafeHandle, a.unsafeHandle);
        assert.equal(a.refcount, 2);
        assert.equal(liveHandles(kind.id), before + 1);
        a.release();
        assert.equal(a.released, true);
        assert.equal(b.refcount, 1);
        a.release(); // idempotent
        b.release();
        assert.equal(liveHandles(kind.id), before);
      }),
  });

  Deno.test({
    name: `${kind.name}.toJSON() is the library's JSON with kind and kindId`,
    ignore: skip,
    fn: () =>
      withFixture(name, (desc) => {
        using r = f.cls.create(desc as never);
        const json = r.toJSON();
        assert.equal(json.kind, kind.name);
        assert.equal(json.kindId, kind.id);
        assert.equal(json.refcount, 1);
        assert.deepEqual(Object.keys(json).slice(0, 3), ["kind", "kindId", "refcount"]);
      }),
  });

  Deno.test({
    name:
      `${kind.name}.create() runs the keep-alive's release exactly once, after the last release`,
    ignore: skip,
    fn: () =>
      withFixture(name, (desc) => {
        let released = 0;
        const r = f.cls.create(desc as never, { keepAlive: { release: () => released++ } });
        const c = r.clone();
        r.release();
        assert.equal(released, 0);
        c.release();
        assert.equal(released, 1);
      }),
  });

  for (const change of FIXTURES[name].changes ?? []) {
    if (change.only === "c") continue;
    if (change.status === "OK") {
      Deno.test({
        name: `${kind.name}.create() accepts ${change.what}`,
        ignore: skip,
        fn: () =>
          withFixture(name, (desc) => {
            const before = liveHandles();
            f.cls.create(desc as never).release();
            assert.equal(liveHandles(), before);
          }, change),
      });
      continue;
    }
    Deno.test({
      name: `${kind.name}.create() rejects ${change.what}`,
      ignore: skip,
      fn: () =>
        withFixture(name, (desc) => {
          const before = liveHandles();
          assert.throws(
            () => f.cls.create(desc as never),
            (e: unknown) => {
              assert.ok(e instanceof InvalidHandleError, `${e}`);
              assert.equal(e.code, change.status);
              assert.equal(e.field, change.field);
              return true;
            },
          );
          assert.equal(liveHandles(), before);
        }, change),
    });
  }
}
