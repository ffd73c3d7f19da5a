// Fds that cannot back a frame (a pipe, a directory, a socket, a character
// device) are refused when the message arrives, not later at map() when the
// frame is already in use: a typed error naming the fd field, every fd the
// message carried closed, and the channel still carrying the next frame.

import assert from "node:assert/strict";
import { DmaBufHandle, InvalidHandleError, liveHandles } from "../../mod.ts";
import { countOpenFds } from "../_support/libc.ts";
import { linux, quiesce, UNFIT_FDS } from "./_peer_wire.ts";
import { withPeer } from "./_peers.ts";

Deno.test({
  name: "a peer's frame over a pipe, directory, socket or /dev/null is refused at receive, " +
    "naming fds[0], leaking no fd, and the next frame still arrives",
  ignore: !linux,
  async fn() {
    await withPeer(["unfit"], async (channel, peer) => {
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
    });
  },
});
