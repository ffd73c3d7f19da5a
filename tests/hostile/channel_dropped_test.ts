// Nothing lost silently: a frame that arrives while the receiver has no free
// fd loses its fds in the kernel (recvmsg reports MSG_CTRUNC), and the
// receiver must say so: receive() rejects with a typed error that says the
// message was dropped and why (EMFILE), and the channel goes on. Run in a
// receiver process of its own, whose RLIMIT_NOFILE is lowered for the call.

import assert from "node:assert/strict";
import { linux, Peer, socketPath } from "./_peer_wire.ts";
import { abi, stop } from "./_peers.ts";

Deno.test({
  name: "a frame that arrives while the receiver is out of fds is reported as dropped " +
    "(OS_ERROR, field fds, EMFILE), and the next frame arrives",
  ignore: !linux,
  async fn() {
    const path = socketPath("dropped");
    const receiver = new Peer("./_peer_receiver.ts", ["dropped", path], [
      "--allow-ffi",
      "--allow-env=GPURES_LIB",
    ]);
    let peer: Peer | undefined;
    try {
      await receiver.out.expect("listening");
      peer = new Peer("./_peer_hostile.ts", ["frames", path, abi(), "2"]);
      await peer.out.expect("sent 2");
      await receiver.say("go");
      const result = JSON.parse((await receiver.out.next())!);
      const { dropped, next } = result;
      assert.equal(dropped.error, "GpuResourceError", JSON.stringify(dropped));
      assert.equal(dropped.code, "OS_ERROR", dropped.message);
      assert.equal(dropped.field, "fds", dropped.message);
      assert.match(dropped.message, /dropped/);
      assert.match(dropped.message, /EMFILE/);
      assert.deepEqual(next, { ok: "DmaBufHandle" }, "the channel goes on");
      assert.equal(result.fdsAfterDrop, result.fds, "no memfd of the dropped message stayed open");
      assert.equal(result.handlesLeaked, 0);
      const { status, stderr } = await receiver.done();
      assert.ok(status.success, stderr);
    } finally {
      await stop(receiver, peer);
    }
  },
});
