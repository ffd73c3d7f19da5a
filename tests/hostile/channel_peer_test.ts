// Hostile peers, each a process of its own that speaks the wire protocol by
// hand: truncated datagrams and lies about sizes and counts, a flood, a peer
// that dies half way or while the receiver waits. The receiver refuses each
// lie with a typed error naming the field, closes what the message carried,
// stays responsive, and sees the end of the channel as null, never a hang.

import assert from "node:assert/strict";
import { DmaBufHandle, GpuResourceError, liveHandles } from "../../mod.ts";
import { fdsOpenedSince, openFdSet, readAt } from "../_support/libc.ts";
import { LIES, linux, quiesce } from "./_peer_wire.ts";
import { withPeer } from "./_peers.ts";

/** Rejects when `p` has not settled within `ms`: a hang is a failure, not a stuck run. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

Deno.test({
  name: "a peer's truncated datagrams and lies about sizes and fd counts are each refused with " +
    "the field at fault, leak nothing, and the next frame arrives",
  ignore: !linux,
  async fn() {
    await withPeer(["lies"], async (channel, peer) => {
      await peer.out.expect(`sent ${LIES.length}`);
      await quiesce();
      const fds = openFdSet();
      const live = liveHandles();
      for (const lie of LIES) {
        await assert.rejects(channel.receive(), (e: GpuResourceError) => {
          assert.ok(e instanceof GpuResourceError, `${lie.what}: ${e}`);
          assert.equal(e.code, lie.code, `${lie.what}: ${e.message}`);
          assert.equal(e.field, lie.field, `${lie.what}: ${e.message}`);
          return true;
        });
        assert.deepEqual(fdsOpenedSince(fds), [], `${lie.what}: its fds were closed`);
        const next = await channel.receive();
        assert.ok(next instanceof DmaBufHandle, `after ${lie.what}, a good frame arrives`);
        next.release();
      }
      assert.equal(await channel.receive(), null);
      assert.deepEqual(fdsOpenedSince(fds), []);
      assert.equal(liveHandles(), live);
    });
  },
});

Deno.test({
  name: "a flood of junk and frames leaves the receiver responsive, every message accounted " +
    "for, and no fd or handle behind",
  ignore: !linux,
  async fn() {
    const COUNT = 4000;
    await quiesce();
    const fds = openFdSet();
    const live = liveHandles();
    await withPeer(["flood", String(COUNT)], async (channel) => {
      let ticks = 0;
      const timer = setInterval(() => ticks++, 1);
      let frames = 0, refused = 0;
      try {
        for (;;) {
          try {
            const f = await channel.receive();
            if (f === null) break;
            frames++;
            f.release();
          } catch (e) {
            assert.ok(e instanceof GpuResourceError, String(e));
            refused++;
          }
          if ((frames + refused) % 500 === 0) await new Promise((r) => setTimeout(r, 0));
        }
      } finally {
        clearInterval(timer);
      }
      assert.equal(frames, COUNT / 2);
      assert.equal(refused, COUNT / 2);
      assert.ok(ticks > 0, "timers ran during the flood");
    });
    assert.deepEqual(fdsOpenedSince(fds), []);
    assert.equal(liveHandles(), live);
  },
});

Deno.test({
  name: "a peer that sends half a message and dies: the half is refused, then the end (null)",
  ignore: !linux,
  async fn() {
    await quiesce();
    const fds = openFdSet();
    await withPeer(["die"], async (channel, peer) => {
      await peer.child.status;
      await assert.rejects(channel.receive(), (e: GpuResourceError) => e.field === "descSize");
      assert.equal(await within(channel.receive(), 5000, "receive after the peer died"), null);
    });
    assert.deepEqual(fdsOpenedSince(fds), []);
  },
});

Deno.test({
  name: "a peer killed while the receiver waits ends a pending receive() with null, no hang",
  ignore: !linux,
  async fn() {
    await withPeer(["hang"], async (channel, peer) => {
      await peer.out.expect("connected");
      const pending = channel.receive();
      setTimeout(() => peer.kill(), 30);
      assert.equal(await within(pending, 5000, "receive while the peer is killed"), null);
    });
  },
});

Deno.test({
  name: "a frame sent just before the peer exits still arrives whole, then the end",
  ignore: !linux,
  async fn() {
    await withPeer(["in-flight"], async (channel, peer) => {
      await peer.child.status;
      const f = await channel.receive();
      assert.ok(f instanceof DmaBufHandle);
      assert.deepEqual(readAt(f.describe().fds[0], 3, 0), new Uint8Array([9, 10, 11]));
      f.release();
      assert.equal(await channel.receive(), null);
    });
  },
});
