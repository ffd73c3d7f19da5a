// Memory that shrinks under a mapping, channel side. A peer that keeps an fd
// of a frame it sent can truncate it, and any access of a mapping past the
// new end kills the receiver with SIGBUS. So the receiver takes only memory
// that cannot shrink: it seals a sealable memfd on receipt, refuses an
// unsealable memfd or a regular file (naming the fd field) unless told to
// trust the peer, and the peer's ftruncate() then fails in the peer.

import assert from "node:assert/strict";
import { DmaBufHandle, InvalidHandleError, liveHandles } from "../../mod.ts";
import { countOpenFds, readAt, SEAL, sealsOf } from "../_support/libc.ts";
import { linux, Peer, quiesce, socketPath } from "./_peer_wire.ts";
import { abi, stop, withPeer } from "./_peers.ts";

const RECEIVER_FLAGS = ["--allow-ffi", "--allow-env=GPURES_LIB"];

function refusedAs(field: string, pattern: RegExp) {
  return (e: InvalidHandleError) => {
    assert.ok(e instanceof InvalidHandleError, String(e));
    assert.equal(e.code, "INVALID_VALUE", e.message);
    assert.equal(e.field, field, e.message);
    assert.match(e.message, pattern);
    return true;
  };
}

Deno.test({
  name: "a peer's frame over an unsealable memfd or a file is refused, naming the fd field, " +
    "unless the receiver passes allowUnsealed",
  ignore: !linux,
  async fn() {
    const stderr = await withPeer(["unsealed"], async (channel, peer) => {
      await peer.out.expect("sent 6");
      await quiesce();
      const fds = countOpenFds();
      const live = liveHandles();

      await assert.rejects(channel.receive(), refusedAs("fds[0]", /cannot be sealed/));
      await assert.rejects(channel.receive(), refusedAs("fd", /cannot be sealed/)); // VkOpaqueFd
      await assert.rejects(channel.receive(), refusedAs("fds[0]", /regular file/));
      assert.equal(countOpenFds(), fds, "the refused messages' fds were closed");
      assert.equal(liveHandles(), live);

      // The receiver's explicit trust: the same two kinds of memory are accepted.
      const trusted = await channel.receive({ allowUnsealed: true });
      assert.ok(trusted instanceof DmaBufHandle);
      assert.deepEqual(readAt(trusted.describe().fds[0], 4, 0), new Uint8Array([4, 5, 6, 7]));
      trusted.release();
      const file = await channel.receive({ allowUnsealed: true });
      assert.ok(file instanceof DmaBufHandle);
      file.release();

      // A sealable memfd needs no trust: it is sealed against shrinking on receipt.
      const sealed = await channel.receive();
      assert.ok(sealed instanceof DmaBufHandle);
      assert.ok(sealsOf(sealed.describe().fds[0]) & SEAL.SHRINK);
      sealed.release();

      assert.equal(await channel.receive(), null);
      assert.equal(countOpenFds(), fds);
      assert.equal(liveHandles(), live);
    });
    assert.equal(stderr.trim(), "", "the peer ran without errors");
  },
});

Deno.test({
  name: "a peer cannot shrink a frame it sent: the memfd is sealed on receipt, the peer's " +
    "ftruncate() fails, and the receiver reads every byte through a mapping",
  ignore: !linux,
  async fn() {
    const path = socketPath("shrink");
    // The receiver is a process of its own: on a library without the seal, its read would SIGBUS.
    const receiver = new Peer("./_peer_receiver.ts", ["shrink", path], RECEIVER_FLAGS);
    let peer: Peer | undefined;
    try {
      await receiver.out.expect("listening");
      peer = new Peer("./_peer_hostile.ts", ["shrink", path, abi()]);
      await peer.out.expect("sent");
      const { seals } = JSON.parse((await receiver.out.next())!);
      assert.ok(seals & SEAL.SHRINK, `the received memfd is sealed against shrinking (${seals})`);

      await peer.say("truncate");
      const truncated = await peer.out.expect("truncate");
      assert.match(truncated, /^EPERM /, "the kernel refused the peer's ftruncate()");

      await receiver.say("read");
      const read = JSON.parse((await receiver.out.next())!);
      assert.deepEqual(read, { read: 32 * 32 * 4, wrong: 0 });
      const { status, stderr } = await receiver.done();
      assert.ok(status.success && status.signal === null, `the receiver survived: ${stderr}`);
    } finally {
      await stop(receiver, peer);
    }
  },
});
