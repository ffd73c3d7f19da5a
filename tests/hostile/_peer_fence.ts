// A hostile sender of a frame session, for session_fence_test.ts: over a raw
// SOCK_SEQPACKET socket (it never loads gpures) it announces buffer 7, then
// for each lie of FENCE_LIES sends that FENCE (an eventfd attached), the
// FRAME it names, and an honest FRAME after it; last an honest FENCE and its
// FRAME. Prints "sent" and waits for the end of stdin.
//
//   deno run --allow-ffi _peer_fence.ts <path> <abi>

import {
  closeFd,
  dmaBufMessage,
  eventfd,
  FENCE_LIES,
  fenceMessage,
  FRAME_BYTES,
  HEADER,
  KIND_DMA_BUF,
  memfd,
  rawConnect,
  sendRaw,
  sessionMessage,
  stdinLines,
  TYPE_FRAME,
} from "./_peer_wire.ts";

const [path, abiText] = Deno.args;
const abi = Number(abiText);
const sock = rawConnect(path);

function send(bytes: Uint8Array, fds: number[] = []): void {
  const n = sendRaw(sock, bytes, fds);
  if (n !== bytes.length) throw new Error(`sendmsg: ${n}`);
}
const frame = (serial: bigint) => sessionMessage(abi, TYPE_FRAME, KIND_DMA_BUF, 7n, serial);

const fd = memfd(FRAME_BYTES);
send(sessionMessage(abi, TYPE_FRAME, KIND_DMA_BUF, 7n, 1n, dmaBufMessage(abi).slice(HEADER), 1), [
  fd,
]);
closeFd(fd);
let serial = 1n;
for (const lie of [...FENCE_LIES, null]) {
  const named = ++serial;
  const fence = fenceMessage(abi, 7n, named);
  const efd = eventfd();
  send(lie ? lie.edit(fence) : fence, [efd]);
  closeFd(efd);
  send(frame(named));
  if (lie) send(frame(++serial));
}
console.log("sent");
const lines = stdinLines();
while (await lines.next() !== null) { /* until the test is done */ }
closeFd(sock);
