// Fds that cannot back a frame (a pipe, a directory, a socket, a character
// device) are refused when the message arrives, not later at map() when the
// frame is already in use: a typed error naming the fd field, every fd the
// message carried closed, and the channel still carrying the next frame.

import assert from "node:assert/strict";
import { Channel, DmaBufHandle, InvalidHandleError, liveHandles, load } from "../../mod.ts";
import { countOpenFds } from "../_libc.ts";
import { linux, Peer, quiesce, socketPath, UNFIT_FDS } from "./_peer_wire.ts";

function abi(): string {
  const [major, minor] = load().abiVersion.split(".").map(Number);
  return String((major << 16) | minor);
}

Deno.test({
  name: "a peer's frame over a pipe, directory, socket or /dev/null is refused at receive, " +
    "naming fds[0], leaking no fd, and the next frame still arrives",
  ignore: !linux,
  async fn() {
    const path = socketPath("unfit");
    using listener = Channel.listen(path);
    const peer = new Peer("./_peer_hostile.ts", ["unfit", path, abi()]);
    try {
      using channel = await listener.accept();
      await peer.out.expect(`sent ${UNFIT_FDS.length}`);
      await quiesce();
      const fds = countOpenFds();
      const live = liveHandles();
      for (const { what } of UNFIT_FDS) {
        await assert.rejects(channel.receive(), (e: InvalidHandleError) => {
          assert.ok(e instanceof InvalidHandleError, `${what}: ${e}`);
          assert.equal(e.code, "INVALID_VALUE", `${what}: ${e.message}`);
          assert.equal(e.field, "fds[0]", `${what}: ${e.message}`);
          assert.ok(e.message.includes(what), `${what}: ${e.message}`);
          return true;
        });
        assert.equal(countOpenFds(), fds, `${what}: the message's fds were closed`);
        const next = await channel.receive();
        assert.ok(next instanceof DmaBufHandle, `after ${what}, a good frame arrives`);
        next.release();
      }
      assert.equal(await channel.receive(), null);
      assert.equal(countOpenFds(), fds);
      assert.equal(liveHandles(), live);
    } finally {
      peer.kill();
      await peer.done();
    }
  },
});
