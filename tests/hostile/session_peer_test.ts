// A hand-written peer speaking the session wire (48-byte gpures__wire_header:
// magic, abi, header_size, kind, desc_size, num_fds, type, meta_size, buffer,
// serial) to a Channel, over a raw SOCK_SEQPACKET socket of this process.
// To a receiving Channel it names buffers it never announced, announces one
// twice and sends metadata out of range: each is refused with the field at
// fault and counted, nothing leaks, and the next good frame arrives. To a
// sending Channel it sends releases that are not its to send: each is
// counted and ignored, and the pool's slots stay held.

import assert from "node:assert/strict";
import {
  Channel,
  type DmaBufHandle,
  FramePool,
  type GpuResourceError,
  InvalidHandleError,
  liveHandles,
} from "../../mod.ts";
import { countOpenFds } from "../_support/libc.ts";
import {
  closeFd,
  dmaBufMessage,
  FRAME_BYTES,
  HEADER,
  KIND_DMA_BUF,
  linux,
  memfd,
  quiesce,
  rawConnect,
  sendRaw,
} from "./_peer_wire.ts";
import { abi } from "./_peers.ts";
import { eventually } from "../_support/frame_pattern.ts";

const WIRE_HEADER = 48;
const META_SIZE = 136; // sizeof(gpures_frame_meta)
const TYPE = { HANDLE: 0, FRAME: 1, RELEASE: 2, FORGET: 3 } as const;
const HAS = { SEQUENCE: 1, TIMING: 2, VISIBLE: 4, COLOR: 8, MASTERING: 16 } as const;

interface Message {
  type: number;
  buffer: bigint;
  serial: bigint;
  /** A DmaBufHandle descriptor (32x32 RGBA, one fd) follows: an announcement. */
  announce?: boolean;
  meta?: Uint8Array;
  magic?: number;
}

/** A session datagram, as gpures writes one. */
function message(m: Message): Uint8Array {
  const desc = m.announce ? dmaBufMessage(Number(abi())).slice(HEADER) : new Uint8Array(0);
  const meta = m.meta ?? new Uint8Array(0);
  const out = new Uint8Array(WIRE_HEADER + desc.length + meta.length);
  const v = new DataView(out.buffer);
  v.setUint32(0, m.magic ?? 0x63727067, true);
  v.setUint32(4, Number(abi()), true);
  v.setUint32(8, WIRE_HEADER, true);
  v.setUint32(12, m.type === TYPE.FRAME ? KIND_DMA_BUF : 0, true);
  v.setUint32(16, desc.length, true);
  v.setUint32(20, m.announce ? 1 : 0, true);
  v.setUint32(24, m.type, true);
  v.setUint32(28, meta.length, true);
  v.setBigUint64(32, m.buffer, true);
  v.setBigUint64(40, m.serial, true);
  out.set(desc, WIRE_HEADER);
  out.set(meta, WIRE_HEADER + desc.length);
  return out;
}

/** gpures_frame_meta bytes: `flags`, then `edit` writes the fields (byte offsets of the C struct). */
function meta(flags: number, edit: (v: DataView) => void): Uint8Array {
  const bytes = new Uint8Array(META_SIZE);
  const v = new DataView(bytes.buffer);
  v.setUint32(0, META_SIZE, true);
  v.setUint32(4, flags, true);
  edit(v);
  return bytes;
}

const sequence = (n: bigint) => meta(HAS.SEQUENCE, (v) => v.setBigInt64(8, n, true));

/** Sends `m` from the raw socket, with a fresh memfd when it announces a buffer. */
function send(sock: number, m: Message, fds: number[] = []): void {
  const fd = m.announce ? [memfd(FRAME_BYTES)] : [];
  const n = sendRaw(sock, message(m), [...fd, ...fds]);
  fd.forEach(closeFd);
  assert.equal(n, message(m).length, "the datagram went");
}

let serial = 0;
/** A Channel accepted from a listener, and the raw socket connected to it. */
async function rawPeer(): Promise<{ channel: Channel; sock: number }> {
  const path = `@gpures-session-peer-${Deno.pid}-${serial++}`;
  using listener = Channel.listen(path);
  const sock = rawConnect(path); // the listener's backlog takes it at once
  return { channel: await listener.accept(), sock };
}

/**
 * The first sending session starts the service thread, and with it a wake pipe that
 * lives as long as the process: start it before counting fds.
 */
async function startService(): Promise<void> {
  using pool = FramePool.create({ format: "RgbaU8", width: 32, height: 32, slots: 1 });
  const [a, b] = Channel.pair();
  using _a = a, _b = b, frame = pool.tryAcquire()!;
  await a.send(frame);
}

const LIES: { what: string; m: Message; fds?: () => number[]; field: string }[] = [
  { what: "a frame of a buffer never announced", field: "buffer", m: frame(999n) },
  {
    what: "a second announcement of a buffer",
    field: "buffer",
    m: { ...frame(7n), announce: true },
  },
  {
    what: "a visible rectangle past the frame's width",
    field: "visible.width",
    m: frame(
      7n,
      meta(HAS.VISIBLE, (v) => [0, 0, 33, 8].forEach((x, i) => v.setUint32(40 + 4 * i, x, true))),
    ),
  },
  {
    what: "colour primaries no name stands for",
    field: "color.primaries",
    m: frame(
      7n,
      meta(HAS.COLOR, (v) => [3, 1, 1, 0].forEach((x, i) => v.setUint32(56 + 4 * i, x, true))),
    ),
  },
  {
    what: "a timebase of 1/0",
    field: "timing.timebaseDen",
    m: frame(7n, meta(HAS.TIMING, (v) => v.setUint32(32, 1, true))),
  },
  { what: "a negative sequence", field: "sequence", m: frame(7n, sequence(-1n)) },
  { what: "a sequence beyond 2^53", field: "sequence", m: frame(7n, sequence(1n << 60n)) },
  {
    what: "a mastering display whose min luminance is its max",
    field: "mastering.minLuminance",
    m: frame(
      7n,
      meta(HAS.MASTERING, (v) => (v.setUint32(104, 100, true), v.setUint32(108, 100, true))),
    ),
  },
  {
    what: "metadata whose structSize is not what came",
    field: "meta.structSize",
    m: frame(7n, meta(HAS.SEQUENCE, (v) => v.setUint32(0, 128, true))),
  },
  {
    what: "a release sent to the receiving side",
    field: "type",
    m: { type: TYPE.RELEASE, buffer: 7n, serial: 1n },
  },
  {
    what: "a message type that does not exist",
    field: "type",
    m: { type: 99, buffer: 7n, serial: 1n },
  },
  {
    what: "a fan-out's refusal to a session that never subscribed",
    field: "type",
    m: { type: 9, buffer: 0n, serial: 0n },
  },
  {
    what: "a frame by id with an fd attached",
    field: "fds",
    m: frame(7n),
    fds: () => [memfd(4096)],
  },
];

function frame(buffer: bigint, m?: Uint8Array): Message {
  return { type: TYPE.FRAME, buffer, serial: 1000n, meta: m };
}

Deno.test({
  name: "a session peer's lies (unknown buffers, a second announcement, metadata out of range) " +
    "are each refused naming the field, counted, leak nothing, and the next frame arrives",
  ignore: !linux,
  async fn() {
    await quiesce();
    const fds = countOpenFds(), live = liveHandles();
    const { channel, sock } = await rawPeer();
    try {
      send(sock, { type: TYPE.FRAME, buffer: 7n, serial: 1n, announce: true, meta: sequence(0n) });
      const first = await channel.receive() as DmaBufHandle;
      assert.equal(first.meta?.sequence, 0);
      first.release();
      const baseline = countOpenFds(); // the announced buffer is kept (its fd) for later frames
      let n = 1;
      for (const lie of LIES) {
        const extra = lie.fds?.() ?? [];
        send(sock, lie.m, extra);
        extra.forEach(closeFd);
        await assert.rejects(channel.receive(), (e: GpuResourceError) => {
          assert.ok(e instanceof InvalidHandleError, `${lie.what}: ${e}`);
          assert.equal(e.field, lie.field, `${lie.what}: ${e.message}`);
          return true;
        });
        assert.equal(channel.stats.refused, n, `${lie.what}: counted`);
        assert.equal(countOpenFds(), baseline, `${lie.what}: its fds were closed`);
        send(sock, {
          type: TYPE.FRAME,
          buffer: 7n,
          serial: BigInt(++n),
          meta: sequence(BigInt(n)),
        });
        const next = await channel.receive() as DmaBufHandle;
        assert.equal(next?.meta?.sequence, n, `after ${lie.what}, the next frame arrives`);
        next.release();
      }
      assert.equal(channel.stats.announced, 1);
      assert.equal(channel.stats.frames, LIES.length + 1);
    } finally {
      channel.close();
      closeFd(sock);
    }
    assert.equal(countOpenFds(), fds);
    assert.equal(liveHandles(), live);
  },
});

Deno.test({
  name: "releases a hostile peer had no frame for (an unknown serial, a replay, 5000 bogus) " +
    "are counted as refused and return no slot; the session keeps working",
  ignore: !linux,
  async fn() {
    await startService();
    await quiesce();
    const fds = countOpenFds();
    using pool = FramePool.create({ format: "RgbaU8", width: 32, height: 32, slots: 3 });
    const { channel, sock } = await rawPeer();
    try {
      const ids: bigint[] = [];
      for (let i = 0; i < 2; i++) {
        using f = await pool.acquire({ timeout: 1000 });
        ids.push(f.bufferId!);
        await channel.send(f); // serials 1 and 2
      }
      assert.equal(pool.stats.inUse, 2);
      const release = (buffer: bigint, serial: bigint) => ({ type: TYPE.RELEASE, buffer, serial });
      send(sock, release(ids[0], 99n)); // a serial never sent
      send(sock, release(ids[1], 1n)); // serial 1 is not of this buffer
      send(sock, release(12345n, 1n)); // a buffer that does not exist
      send(sock, { ...release(ids[0], 1n), magic: 0xdeadbeef }); // not a gpures message
      send(sock, { type: TYPE.FRAME, buffer: ids[0], serial: 1n }); // not a release
      const before = 5;
      await eventually(() => channel.stats.refused === before, "the lies counted");
      for (let i = 0; i < 5000; i++) send(sock, release(ids[i % 2] + 100n, BigInt(1000 + i)));
      await eventually(
        () => channel.stats.refused === before + 5000,
        "5000 bogus releases counted",
      );
      assert.equal(pool.stats.inUse, 2, "no slot came back");
      assert.equal(channel.stats.inFlight, 2);
      assert.equal(channel.stats.returned, 0);

      send(sock, release(ids[0], 1n)); // the real one
      await eventually(() => pool.stats.inUse === 1, "the released slot came back");
      send(sock, release(ids[0], 1n)); // and again: a replay
      await eventually(() => channel.stats.refused === before + 5001, "the replay counted");
      assert.equal(pool.stats.inUse, 1);
      assert.equal(channel.stats.returned, 1);

      using f = await pool.acquire({ timeout: 1000 });
      await channel.send(f); // the session still sends
      assert.equal(channel.stats.inFlight, 2);
    } finally {
      closeFd(sock); // the peer goes: what it held comes back
    }
    await eventually(() => pool.stats.inUse === 0, "every slot back once the peer is gone");
    channel.close();
    pool.close();
    assert.equal(countOpenFds(), fds);
  },
});
