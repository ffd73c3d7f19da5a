// A hostile channel peer: a process that speaks gpures's wire protocol by
// hand over a raw SOCK_SEQPACKET socket (libc through FFI, no gpures) and
// lies. Started by tests/hostile/channel_*_test.ts:
//
//   deno run --allow-ffi _peer_hostile.ts <mode> <socket path> <abi> [count]
//
// It connects to <socket path> (or, in "listen" mode, listens there) and
// prints a line when it has done its part; the tests read those lines.
//
//   unsealed  frames over memory it could shrink later: a DmaBufHandle and a
//             VkOpaqueFd over memfds made without MFD_ALLOW_SEALING, one over
//             a regular file; the same two again; then a sealable memfd
//   shrink    one frame over a sealable memfd; on "truncate" from stdin tries
//             ftruncate(fd, 0) and prints what the kernel said
//   unfit     one frame over each fd that cannot back one (pipe, directory,
//             socket, /dev/null), each followed by a good frame
//   lies      each entry of LIES, each followed by a good frame
//   flood     <count> messages as fast as the socket takes them: junk with
//             fds attached and good frames, alternately
//   die       the header of a message, then exits at once
//   in-flight one good frame, then exits at once
//   hang      connects and never sends anything (the test kills it)
//   listen    listens at the path itself (no gpures), accepts one connection
//   frames    <count> good frames, then waits for stdin to close

import {
  closeFd,
  dmaBufMessage,
  errnoName,
  FRAME_BYTES,
  LIES,
  memfd,
  rawAccept,
  rawConnect,
  rawListen,
  regularFile,
  sealsOf,
  sendRaw,
  stdinLines,
  truncate,
  UNFIT_FDS,
  vkOpaqueFdMessage,
} from "./_peer_wire.ts";

const [mode, path, abiText, countText] = Deno.args;
const abi = Number(abiText);
const count = Number(countText ?? 0);

function send(sock: number, bytes: Uint8Array, fds: number[]): void {
  const n = sendRaw(sock, bytes, fds);
  if (n !== bytes.length) throw new Error(`sendmsg: ${n < 0 ? errnoName(-n) : n}`);
}

/** Sends a good frame over a sealable memfd. */
function good(sock: number, seed = 0): void {
  const fd = memfd(FRAME_BYTES, { seed });
  send(sock, dmaBufMessage(abi), [fd]);
  closeFd(fd);
}

/** Sends `bytes` with `fds` attached, then closes this side's copies. */
function sendOnce(sock: number, bytes: Uint8Array, fds: number[]): void {
  send(sock, bytes, fds);
  fds.forEach(closeFd);
}

if (mode === "listen") {
  const listener = rawListen(path);
  console.log("listening");
  const conn = rawAccept(listener);
  console.log(conn >= 0 ? "accepted" : "accept failed");
  Deno.exit(0);
}

const sock = rawConnect(path);
switch (mode) {
  case "unsealed": {
    sendOnce(sock, dmaBufMessage(abi), [memfd(FRAME_BYTES, { sealable: false, seed: 1 })]);
    sendOnce(sock, vkOpaqueFdMessage(abi), [memfd(FRAME_BYTES, { sealable: false, seed: 2 })]);
    sendOnce(sock, dmaBufMessage(abi), [regularFile(FRAME_BYTES)]);
    sendOnce(sock, dmaBufMessage(abi), [memfd(FRAME_BYTES, { sealable: false, seed: 4 })]);
    sendOnce(sock, dmaBufMessage(abi), [regularFile(FRAME_BYTES)]);
    good(sock, 6);
    console.log("sent 6");
    break;
  }
  case "shrink": {
    const fd = memfd(FRAME_BYTES, { seed: 7 });
    send(sock, dmaBufMessage(abi), [fd]);
    console.log("sent");
    const stdin = stdinLines();
    await stdin.expect("truncate");
    const err = truncate(fd, 0);
    console.log(`truncate ${err === 0 ? "ok" : errnoName(err)} seals ${sealsOf(fd)}`);
    await stdin.next(); // until the test closes stdin
    break;
  }
  case "unfit": {
    for (const { open } of UNFIT_FDS) {
      const fds = open();
      send(sock, dmaBufMessage(abi), [fds[0]]);
      fds.forEach(closeFd);
      good(sock);
    }
    console.log(`sent ${UNFIT_FDS.length}`);
    break;
  }
  case "lies": {
    for (const lie of LIES) {
      const fds = Array.from({ length: lie.fds }, () => memfd(FRAME_BYTES));
      sendOnce(sock, lie.bytes(abi), fds);
      good(sock);
    }
    console.log(`sent ${LIES.length}`);
    break;
  }
  case "flood": {
    const fd = memfd(FRAME_BYTES);
    const junk = LIES.map((lie) => lie.bytes(abi));
    for (let i = 0; i < count; i++) {
      if (i % 2) send(sock, junk[i % junk.length], [fd, fd]);
      else send(sock, dmaBufMessage(abi), [fd]);
    }
    closeFd(fd);
    console.log(`sent ${count}`);
    break;
  }
  case "die": {
    const fd = memfd(FRAME_BYTES);
    send(sock, dmaBufMessage(abi).slice(0, 24), [fd]);
    Deno.exit(0); // the socket closes with the process
    break;
  }
  case "in-flight": {
    good(sock, 9);
    Deno.exit(0);
    break;
  }
  case "hang": {
    console.log("connected");
    setInterval(() => {}, 1000);
    break;
  }
  case "frames": {
    for (let i = 0; i < count; i++) good(sock, i);
    console.log(`sent ${count}`);
    await stdinLines().next();
    break;
  }
  default:
    throw new Error(`unknown mode ${mode}`);
}
