// A FENCE the receiver cannot read must not let its frame through
// unsynchronised. A hostile sender process (tests/hostile/_peer_fence.ts,
// which speaks the wire by hand) sends FENCEs of a kind this receiver does not
// know, with a lying header or descriptor size, with a cut body or header,
// each followed by the FRAME it names: the FENCE is refused naming its field,
// the FRAME is refused naming "acquire", no fd stays open, and the next
// honest frame arrives. An honest FENCE still leads its frame.

import assert from "node:assert/strict";
import {
  Channel,
  type DmaBufHandle,
  type GpuResourceError,
  InvalidHandleError,
} from "../../mod.ts";
import { countOpenFds } from "../_support/libc.ts";
import { FENCE_LIES, linux, Peer, quiesce, socketPath } from "./_peer_wire.ts";
import { abi, stop } from "./_peers.ts";

async function refused(channel: Channel, field: string, what: string): Promise<void> {
  await assert.rejects(channel.receive(), (e: GpuResourceError) => {
    assert.ok(e instanceof InvalidHandleError, `${what}: ${e}`);
    assert.equal(e.field, field, `${what}: ${e.message}`);
    return true;
  });
}

Deno.test({
  name: "a frame whose FENCE could not be read (an unknown kind, a lying headerSize or " +
    "descSize, a cut body or header) is refused naming acquire; the next frame arrives",
  ignore: !linux,
  async fn() {
    await quiesce();
    const path = socketPath("fence");
    using listener = Channel.listen(path);
    const peer = new Peer("./_peer_fence.ts", [path, abi()]);
    try {
      using channel = await listener.accept();
      await peer.out.expect("sent");
      const first = (await channel.receive()) as DmaBufHandle; // the announcement
      first.release();
      const fds = countOpenFds();
      for (const lie of FENCE_LIES) {
        await refused(channel, lie.field, `the FENCE with ${lie.what}`);
        await refused(channel, "acquire", `the frame after a FENCE with ${lie.what}`);
        assert.equal(countOpenFds(), fds, `${lie.what}: the fence's eventfd was closed`);
        using next = (await channel.receive()) as DmaBufHandle;
        assert.equal(next.fences.acquire, undefined, `after ${lie.what}, an honest frame`);
      }
      using fenced = (await channel.receive()) as DmaBufHandle;
      using acquire = fenced.fences.acquire;
      assert.ok(acquire, "an honest FENCE leads its frame");
      assert.equal(channel.stats.refused, 2 * FENCE_LIES.length);
    } finally {
      await stop(peer);
    }
  },
});
