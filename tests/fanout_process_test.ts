// One producer, eight consumer processes (tests/_support/fanout_consumer.ts)
// under mixed policies, with a resolution switch 160x96 -> 320x192 -> 160x96
// mid-stream: every frame each consumer gets is intact and of the size its
// last "formatchange" announced; block consumers get every frame; one
// dropOldest consumer stopped with SIGSTOP for a second drops frames for
// itself only (the pool, sized by the rule, never makes the producer wait for
// a slot) and goes on after SIGCONT; a consumer killed mid-stream leaves and
// gives back what it held; a consumer that joins after 1,000 frames gets every
// frame from then on.

import assert from "node:assert/strict";
import { Channel, FrameFanout, FramePool } from "../mod.ts";
import { eventually, paint, patternMeta } from "./_support/frame_pattern.ts";
import { Peer } from "./hostile/_peer_wire.ts";

const linux = Deno.build.os === "linux";
const CONSUMER = "../_support/fanout_consumer.ts"; // relative to _peer_wire.ts
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Report {
  frames: number;
  intact: number;
  corrupt: number;
  first: string | null;
  last: number;
  gaps: number;
  backwards: number;
  formats: string[];
  sizeMismatch: number;
}

Deno.test({
  name:
    "8 consumer processes, mixed policies, one stopped, one killed, one joining after 1,000 frames, a resolution switch: " +
    "every frame intact and announced, block consumers get all, the stopped one drops and resumes, no slot waited for",
  ignore: !linux,
  sanitizeResources: false, // the consumers' pipes close when they exit, after the test's last await
  async fn() {
    const path = `@gpures-fanout-${Deno.pid}`;
    const FRAMES = 1200;
    const RATE = 300; // frames a second
    const SLOTS = 24; // reserve 1 + deepest queue 4 + 9 windows of 2 = 23
    const pools = [
      FramePool.create({ format: "NV12", width: 160, height: 96, slots: SLOTS }),
      FramePool.create({ format: "NV12", width: 320, height: 192, slots: SLOTS }),
    ];
    using fanout = FrameFanout.create({ slots: SLOTS });
    using listener = Channel.listen(path);
    const policies = [
      "block",
      "block",
      "block",
      "dropOldest",
      "dropOldest",
      "dropOldest",
      "latest",
      "latest",
    ];
    const peers = policies.map((p) =>
      new Peer(CONSUMER, [path, p], ["--allow-ffi", "--allow-env=GPURES_LIB"])
    );
    const ids = new Map<bigint, number>(); // consumer id -> peer index
    try {
      for (let i = 0; i < peers.length; i++) await fanout.join(await listener.accept());
      for (let i = 0; i < peers.length; i++) {
        ids.set(BigInt((await peers[i].out.expect("joined ")).trim()), i);
      }
      const stopped = peers[3], killed = peers[7];
      let late: Peer | undefined;
      const start = performance.now();
      let stoppedAt = 0, resumedAt = 0;
      for (let seq = 0; seq < FRAMES; seq++) {
        const pool = pools[seq >= 400 && seq < 800 ? 1 : 0];
        const frame = pool.tryAcquire();
        assert.ok(frame, `frame ${seq}: a slot is free (the pool covers what consumers may hold)`);
        frame.setMeta(patternMeta(seq, paint(pool.planes(frame), seq)));
        await fanout.publish(frame);
        frame.release();
        if (seq === 200) stopped.child.kill("SIGSTOP"), stoppedAt = performance.now();
        if (seq === 250) killed.kill();
        if (seq === 500) {
          // Paced frames catch up after a late one: the stop's length is held, not assumed.
          await sleep(stoppedAt + 1000 - performance.now());
          stopped.child.kill("SIGCONT"), resumedAt = performance.now();
        }
        if (seq === 1000) {
          late = new Peer(CONSUMER, [path, "block"], ["--allow-ffi", "--allow-env=GPURES_LIB"]);
          await fanout.join(await listener.accept());
          await late.out.expect("joined ");
        }
        await sleep(start + (seq + 1) * (1000 / RATE) - performance.now());
      }
      assert.ok(resumedAt - stoppedAt >= 950, `stopped for ${resumedAt - stoppedAt} ms`);
      await eventually(() => fanout.stats.consumers === 8, "the killed consumer left", 5000);
      const byPeer = new Map(fanout.consumers().map((c) => [ids.get(c.consumer), c]));
      assert.ok(
        (byPeer.get(3)?.dropped ?? 0) > 0,
        "the stopped consumer dropped frames for itself",
      );
      await fanout.flush(); // the block consumers' queued frames go first
      fanout.close(); // every consumer's stream ends
      const reports: Report[] = [];
      for (const p of [...peers.slice(0, 7), late!]) {
        reports.push(JSON.parse((await p.out.next())!));
        await p.done();
      }
      await killed.done();
      for (const [i, r] of reports.entries()) {
        const who = `consumer ${i} (${i < 7 ? policies[i] : "late block"})`;
        assert.equal(r.corrupt, 0, `${who}: ${r.first}`);
        assert.equal(r.sizeMismatch, 0, `${who}: a frame came before its formatchange`);
        assert.equal(r.backwards, 0, `${who}: a frame came out of order`);
        // Block consumers get the last frame (flush() waits for their queues); the others may
        // have had it queued still when close() let their queues go.
        if (i < 3 || i === 7) assert.equal(r.last, FRAMES - 1, `${who} got the last frame`);
      }
      for (const i of [0, 1, 2]) {
        assert.equal(reports[i].frames, FRAMES, `block consumer ${i} got every frame`);
        assert.deepEqual(reports[i].formats, ["160x96", "320x192", "160x96"]);
      }
      assert.equal(
        reports[7].frames,
        FRAMES - 1001,
        "the late consumer got every frame after it joined",
      );
      assert.deepEqual(reports[7].formats, ["160x96"]);
      assert.ok(
        reports[3].gaps > 0 && reports[3].frames < FRAMES,
        "the stopped consumer skipped what it dropped",
      );
      for (const pool of pools) {
        await eventually(() => pool.stats.inUse === 0, "every slot came home");
        assert.equal(pool.stats.waits, 0, "no acquire waited for a slot");
      }
    } finally {
      for (const p of peers) p.kill();
      for (const pool of pools) pool.close();
    }
  },
});
