// The gpures side of a hostile-peer test, in a process of its own: what it
// does could kill it (SIGBUS through a mapping of memory a peer shrank) or
// starve it (no free fds), and the test run must survive either. Started by
// tests/hostile/channel_*_test.ts:
//
//   deno run --allow-ffi --allow-env=GPURES_LIB _peer_receiver.ts <mode> <path>
//
//   shrink      listens at <path>, receives one frame and prints its seals;
//               on "read" from stdin maps it and reads every byte
//   dropped     listens at <path>; on "go" receives with no fd free (the
//               RLIMIT_NOFILE soft limit lowered to the lowest free fd), then
//               again with the limit restored; prints both outcomes as JSON
//   out-of-fds  with a listener at <path> and a connection waiting on it,
//               tries pair(), listen(), connect() and accept() with no fd free
//   eacces      tries listen() and connect() at <path>, as nobody when root
//
// Each result is one line of JSON on stdout.

import { Channel, DmaBufHandle, GpuResourceError, liveHandles } from "../../mod.ts";
import { countOpenMemfds, sealsOf } from "../_support/libc.ts";
import {
  closeFd,
  dropPrivileges,
  getuid,
  rawConnect,
  stdinLines,
  withoutFreeFds,
} from "./_peer_wire.ts";

const [mode, path] = Deno.args;

/** An error as the test compares it. */
function outcome(e: unknown) {
  if (e instanceof GpuResourceError) {
    return { error: e.constructor.name, code: e.code, field: e.field, message: e.message };
  }
  return { error: String(e) };
}

/** What a promise settles to, as JSON. */
async function settle(p: Promise<unknown>) {
  try {
    const value = await p;
    return { ok: value instanceof DmaBufHandle ? "DmaBufHandle" : String(value) };
  } catch (e) {
    return outcome(e);
  }
}

/** What a call gives, as JSON; a resource it makes is closed or released. */
function attempt(fn: () => unknown) {
  try {
    const value = fn();
    for (const v of [value].flat()) (v as { close?: () => void }).close?.();
    return { ok: true };
  } catch (e) {
    return outcome(e);
  }
}

const stdin = mode === "shrink" || mode === "dropped" ? stdinLines() : undefined;
const say = (value: unknown) => console.log(JSON.stringify(value));

if (mode === "shrink") {
  using listener = Channel.listen(path);
  console.log("listening");
  using channel = await listener.accept();
  const frame = await channel.receive();
  if (!(frame instanceof DmaBufHandle)) throw new Error(`received ${frame}`);
  say({ seals: sealsOf(frame.describe().fds[0]) });
  await stdin!.expect("read");
  try {
    const pixels = new Uint8Array(frame.map()); // SIGBUS here if the peer shrank the memfd
    let wrong = 0;
    for (let i = 0; i < pixels.length; i++) if (pixels[i] !== ((7 + i) & 0xff)) wrong++;
    say({ read: pixels.length, wrong });
  } catch (e) {
    say(outcome(e));
  }
  frame.release();
} else if (mode === "dropped") {
  using listener = Channel.listen(path);
  console.log("listening");
  using channel = await listener.accept();
  await stdin!.expect("go");
  const handles = liveHandles();
  const fds = countOpenMemfds(); // frames are memfds; the runtime's own fds come and go
  // The message is already queued: receive() takes it in its first, synchronous call.
  const first = withoutFreeFds(() => settle(channel.receive()));
  const dropped = await first;
  const fdsAfterDrop = countOpenMemfds();
  const next = await settle(channel.receive().then((f) => (f?.release(), f)));
  say({ dropped, next, fds, fdsAfterDrop, handlesLeaked: liveHandles() - handles });
} else if (mode === "out-of-fds") {
  using listener = Channel.listen(path);
  const waiting = rawConnect(path); // a connection for accept() to take
  // Each call's first step is synchronous, so it runs while no fd is free.
  const results = withoutFreeFds(() => ({
    pair: attempt(() => Channel.pair()),
    listen: attempt(() => Channel.listen(path + ".2")),
    connect: settle(Channel.connect(path)),
    accept: settle(listener.accept()),
  }));
  say({
    pair: results.pair,
    listen: results.listen,
    connect: await results.connect,
    accept: await results.accept,
  });
  closeFd(waiting);
} else if (mode === "eacces") {
  liveHandles(); // loads gpures before this process gives up its rights
  if (getuid() === 0) dropPrivileges();
  say({
    listen: attempt(() => Channel.listen(path)),
    connect: await settle(Channel.connect(path)),
  });
} else {
  throw new Error(`unknown mode ${mode}`);
}
