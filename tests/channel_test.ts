// Handles across processes: Channel over Unix domain sockets with the fds
// attached, a real second process (Deno.Command running tests/_support/channel_peer.ts),
// the process-local kinds refused, a tampered message refused with its fds
// closed, and the event loop free while a channel waits.

import assert from "node:assert/strict";
import {
  Channel,
  CpuBytes,
  DmaBufHandle,
  type FormatChangeEvent,
  type GpuResource,
  InvalidHandleError,
  liveHandles,
  liveMappings,
  ReleasedError,
  VkImage,
  VkOpaqueFd,
  type VkOpaqueFdDesc,
  WrongKindError,
} from "../mod.ts";
import { close, countOpenFds, libc, memfd, readAt } from "./_support/libc.ts";
import { fixture, patternedFrame, RGBA_FRAME_BYTES, valid } from "./_support/fixtures.ts";

const linux = Deno.build.os === "linux";
const SIZE = RGBA_FRAME_BYTES;
const PEER = new URL("./_support/channel_peer.ts", import.meta.url).pathname;

const frame = patternedFrame;

let serial = 0;
function socketPath(): string {
  return `/tmp/gpures-deno-test-${Deno.pid}-${serial++}.sock`;
}

function peer(mode: string, path: string, ...args: string[]): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-ffi", "--allow-env=GPURES_LIB", PEER, mode, path, ...args],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

async function finished(child: Deno.ChildProcess): Promise<string> {
  const { code, stdout, stderr } = await child.output();
  const text = new TextDecoder().decode(stdout);
  assert.equal(code, 0, `the peer failed: ${new TextDecoder().decode(stderr)}`);
  return text;
}

// ------------------------------------------------------------- in one process

Deno.test({
  name: "Channel.pair() moves a DmaBufHandle: new fds of the same memory, the same layout",
  ignore: !linux,
  async fn() {
    const fds = countOpenFds();
    const live = liveHandles();
    const [a, b] = Channel.pair();
    using mine = frame(7);
    await a.send(mine);
    const theirs = await b.receive();
    assert.ok(theirs instanceof DmaBufHandle);
    const sent = mine.describe(), got = theirs.describe();
    assert.equal(got.refcount, 1);
    assert.notEqual(got.fds[0], sent.fds[0]);
    assert.deepEqual({ ...got, fds: [], refcount: 0 }, { ...sent, fds: [], refcount: 0 });
    assert.deepEqual(readAt(got.fds[0], 4, 0), new Uint8Array([7, 8, 9, 10]));
    // The same memory, zero-copy: a write through one mapping is seen through the other.
    new Uint8Array(theirs.map())[100] = 0xee;
    assert.equal(new Uint8Array(mine.map())[100], 0xee);
    theirs.release();
    mine.release();
    a.close();
    b.close();
    assert.equal(liveHandles(), live);
    assert.equal(countOpenFds(), fds);
  },
});

Deno.test({
  name: "Channel moves a VkOpaqueFd and leaves its slot release behind",
  ignore: !linux,
  async fn() {
    const fd = memfd(65536);
    const desc = fixture("VkOpaqueFd", { fds: [fd] }).desc as unknown as VkOpaqueFdDesc;
    assert.ok(desc.slotRelease, "the fixture has a slot release");
    using memory = VkOpaqueFd.create(desc);
    close(fd);
    const [x, y] = Channel.pair();
    using _x = x, _y = y;
    const formats: FormatChangeEvent[] = [];
    y.addEventListener("formatchange", (e) => formats.push(e as FormatChangeEvent));
    await x.send(memory);
    using got = await y.receive() as VkOpaqueFd;
    assert.ok(got instanceof VkOpaqueFd);
    const d = got.describe();
    assert.deepEqual( // its first frame's format, read from its descriptor
      formats.map((f) => [f.resourceKind, f.width, f.height, f.format]),
      [["VkOpaqueFd", d.width, d.height, d.format]],
    );
    assert.equal(d.slotRelease, null);
    assert.equal(d.size, BigInt(desc.size));
    assert.deepEqual(d.deviceUuid, desc.deviceUuid);
  },
});

Deno.test({
  name: "Channel.send() refuses the process-local kinds with WrongKindError, field resource",
  ignore: !linux,
  async fn() {
    const [a, b] = Channel.pair();
    using _a = a, _b = b;
    using cpu = CpuBytes.create(valid("CpuBytes"));
    using image = VkImage.create(valid("VkImage"));
    for (const r of [cpu, image]) {
      const e = await a.send(r).then(() => undefined, (e) => e);
      assert.ok(e instanceof WrongKindError, String(e));
      assert.equal(e.code, "WRONG_KIND");
      assert.equal(e.field, "resource");
      assert.match(e.message, /is process-local/);
    }
    const released = frame(1);
    released.release();
    await assert.rejects(a.send(released), (e: ReleasedError) => e.field === "resource");
    await assert.rejects(a.send({} as GpuResource), InvalidHandleError);
  },
});

Deno.test({
  name: "Channel: receive() gives null at the end; close() ends pending calls here",
  ignore: !linux,
  async fn() {
    const [a, b] = Channel.pair();
    using f = frame(0);
    await a.send(f);
    a.close();
    a.close(); // idempotent
    const got = await b.receive(); // sent before the end: still delivered
    assert.ok(got);
    got.release();
    assert.equal(await b.receive(), null);
    await assert.rejects(a.send(f), ReleasedError);
    b.close();

    const [c, d] = Channel.pair();
    const pending = d.receive();
    setTimeout(() => d.close(), 20);
    await assert.rejects(pending, (e: ReleasedError) => e instanceof ReleasedError);
    await assert.rejects(d.receive(), ReleasedError);
    c.close();
  },
});

Deno.test({
  name: "Channel.send() waits for room without blocking, and may outlive the caller's reference",
  ignore: !linux,
  async fn() {
    const live = liveHandles();
    const [a, b] = Channel.pair();
    const f = frame(3);
    // Fill the channel: sends past its capacity wait for the receiver.
    let done = 0;
    const sends: Promise<void>[] = [];
    for (let i = 0; i < 400; i++) sends.push(a.send(f).then(() => void done++));
    f.release(); // the waiting sends hold references of their own
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(done < 400, "the channel filled up, so some sends are waiting");
    assert.ok(liveHandles() > live, "and they hold the handle");
    let received = 0;
    while (received < 400) {
      const r = await b.receive();
      assert.ok(r);
      r.release();
      received++;
    }
    await Promise.all(sends);
    a.close();
    b.close();
    assert.equal(liveHandles(), live);
  },
});

// -------------------------------------------------------- a hostile peer

/** struct msghdr with one iovec over `data` and room for 8 fds of control (Linux x86-64/arm64). */
function msghdr(data: Uint8Array, control: Uint8Array, controlLength: number) {
  const iov = new BigUint64Array([
    BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(data))),
    BigInt(data.length),
  ]);
  const hdr = new BigUint64Array(7); // name, namelen, iov, iovlen, control, controllen, flags
  hdr[2] = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(iov)));
  hdr[3] = 1n;
  hdr[4] = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(control)));
  hdr[5] = BigInt(controlLength);
  return { hdr, iov };
}

/** Takes one message off a channel's socket as raw bytes and fds. */
function recvRaw(fd: number): { bytes: Uint8Array; fds: number[] } {
  const data = new Uint8Array(1024);
  const control = new Uint8Array(16 + 8 * 4);
  const { hdr, iov } = msghdr(data, control, control.length);
  const n = Number(libc.recvmsg(fd, new Uint8Array(hdr.buffer), 0));
  assert.ok(n > 0 && iov.length === 2);
  const view = new DataView(control.buffer);
  const count = (Number(view.getBigUint64(0, true)) - 16) / 4;
  const fds = Array.from({ length: count }, (_, i) => view.getInt32(16 + 4 * i, true));
  return { bytes: data.slice(0, n), fds };
}

/** Sends raw bytes with fds attached (SOL_SOCKET = SCM_RIGHTS = 1). */
function sendRaw(fd: number, bytes: Uint8Array, fds: number[]): void {
  const control = new Uint8Array(16 + 8 * Math.ceil(fds.length / 2));
  const view = new DataView(control.buffer);
  view.setBigUint64(0, BigInt(16 + 4 * fds.length), true);
  view.setInt32(8, 1, true);
  view.setInt32(12, 1, true);
  fds.forEach((f, i) => view.setInt32(16 + 4 * i, f, true));
  const { hdr } = msghdr(bytes, control, fds.length ? control.length : 0);
  assert.equal(Number(libc.sendmsg(fd, new Uint8Array(hdr.buffer), 0x4000)), bytes.length);
}

Deno.test({
  name: "Channel.receive() refuses a tampered message, closes its fds, and stays usable",
  ignore: !linux,
  async fn() {
    const [a, b] = Channel.pair(); // where real messages are captured
    const [c, d] = Channel.pair(); // where the tampered ones are injected
    using _a = a, _b = b, _c = c, _d = d;
    using f = frame(9);
    // The descriptor follows the header, whose size the header says (24 for a plain handle).
    const at = (v: DataView) => v.getUint32(8, true);
    const tamper: [string, (v: DataView) => void, string, string][] = [
      [
        "struct_size",
        (v) => v.setUint32(at(v), v.getUint32(at(v), true) + 8, true),
        "INVALID_VALUE",
        "structSize",
      ],
      ["fds[0] naming stderr", (v) => v.setInt32(at(v) + 12, 2, true), "INVALID_VALUE", "fds[0]"],
      ["kind", (v) => v.setUint32(12, 17, true), "WRONG_KIND", "kind"],
      ["fd count", (v) => v.setUint32(20, 2, true), "INVALID_VALUE", "fds"],
      ["width 0", (v) => v.setUint32(at(v) + 40, 0, true), "ZERO_SIZE", "width"],
    ];
    for (const [what, mutate, code, field] of tamper) {
      const before = countOpenFds();
      await a.send(f);
      const { bytes, fds } = recvRaw(b.fd);
      mutate(new DataView(bytes.buffer));
      sendRaw(c.fd, bytes, fds);
      fds.forEach(close);
      await assert.rejects(d.receive(), (e: InvalidHandleError) => {
        assert.equal(e.code, code, `${what}: ${e.message}`);
        assert.equal(e.field, field, `${what}: ${e.message}`);
        return true;
      });
      assert.equal(countOpenFds(), before, `${what}: the message's fds were closed`);
      // The channel still carries good messages.
      await c.send(f);
      (await d.receive())!.release();
    }
  },
});

// ------------------------------------------------------ another process

Deno.test({
  name: "Channel: a producer process sends frames; their pixels arrive without a copy",
  ignore: !linux,
  async fn() {
    const fds = countOpenFds();
    const live = liveHandles();
    const path = socketPath();
    using listener = Channel.listen(path);
    assert.ok(Deno.statSync(path).isSocket);
    const child = peer("produce", path, "3");
    // The event loop keeps running while accept() and receive() wait.
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    using channel = await listener.accept();
    const seen: number[] = [];
    for await (const f of channel) {
      assert.ok(f instanceof DmaBufHandle);
      const pixels = new Uint8Array(f.map());
      const seed = pixels[0];
      assert.ok(pixels.every((p, i) => p === ((seed + i) & 0xff)));
      seen.push(seed);
      f.release();
      assert.equal(pixels.length, 0, "release() unmapped and detached the buffer");
    }
    clearInterval(timer);
    await finished(child);
    assert.deepEqual(seen, [0, 1, 2]);
    assert.ok(ticks > 0, "timers ran while the channel waited");
    channel.close();
    listener.close();
    assert.throws(() => Deno.statSync(path), Deno.errors.NotFound);
    assert.equal(liveHandles(), live);
    assert.equal(liveMappings(), 0);
    assert.equal(countOpenFds(), fds);
  },
});

Deno.test({
  name: "Channel: a consumer process reads frames and writes into the same memory",
  ignore: !linux,
  async fn() {
    const path = `@gpures-deno-test-${Deno.pid}-${serial++}`; // Linux's abstract namespace
    using listener = Channel.listen(path);
    const child = peer("mark", path);
    using channel = await listener.accept();
    const frames = [frame(0), frame(1), frame(2)];
    for (const f of frames) await channel.send(f);
    channel.close(); // the consumer's for-await ends once it has them all
    assert.equal((await finished(child)).trim(), "checked 3");
    frames.forEach((f, i) => {
      // The consumer's write, through its own mapping in its own process, is here.
      assert.equal(new Uint8Array(f.map())[SIZE - 1], 0xc0 + i);
      f.release();
    });
  },
});

Deno.test({
  name: "Channel: a consumer that exits holding a frame leaves nothing open here",
  ignore: !linux,
  async fn() {
    const fds = countOpenFds();
    const path = socketPath();
    using listener = Channel.listen(path);
    const child = peer("hold", path);
    using channel = await listener.accept();
    using f = frame(4);
    await channel.send(f);
    await finished(child);
    assert.equal(await channel.receive(), null); // the end
    f.release();
    channel.close();
    listener.close();
    assert.equal(countOpenFds(), fds);
  },
});

Deno.test({
  name: "Channel.connect() to a path nobody listens on fails with OS_ERROR, field path",
  ignore: !linux,
  async fn() {
    await assert.rejects(Channel.connect(socketPath()), (e: InvalidHandleError) => {
      assert.equal(e.code, "OS_ERROR");
      assert.equal(e.field, "path");
      assert.match(e.message, /nobody listens/);
      return true;
    });
    assert.throws(() => Channel.listen(""), (e: InvalidHandleError) => e.field === "path");
  },
});

Deno.test({
  name: "ChannelListener.close() ends a pending accept() and iteration",
  ignore: !linux,
  async fn() {
    const listener = Channel.listen(socketPath());
    const pending = listener.accept();
    const iteration = (async () => {
      for await (const c of listener) c.close();
      return "ended";
    })();
    setTimeout(() => listener.close(), 20);
    await assert.rejects(pending, ReleasedError);
    assert.equal(await iteration, "ended");
  },
});
