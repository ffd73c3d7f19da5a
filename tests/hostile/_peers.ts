// What the hostile channel tests (not their peers) share: the ABI argument a
// hostile peer writes into its headers, a listener with a hostile peer
// connected to it, and stopping peer processes whatever happened.

import { Channel, load } from "../../mod.ts";
import { Peer, socketPath } from "./_peer_wire.ts";

/** The library's ABI version as a hostile peer's argument (major << 16 | minor). */
export function abi(): string {
  const [major, minor] = load().abiVersion.split(".").map(Number);
  return String((major << 16) | minor);
}

/** Kills the peers that were started and waits for them; what each wrote to stderr. */
export async function stop(...peers: (Peer | undefined)[]): Promise<string[]> {
  for (const peer of peers) peer?.kill();
  const stderr: string[] = [];
  for (const peer of peers) stderr.push(peer ? (await peer.done()).stderr : "");
  return stderr;
}

/**
 * A listener at a new path, a hostile peer (_peer_hostile.ts) told to do
 * `args[0]` there (with the ABI and the rest of `args`), and the accepted
 * channel, for `fn`; the peer is stopped at the end. Returns what the peer
 * wrote to stderr.
 */
export async function withPeer(
  args: string[],
  fn: (channel: Channel, peer: Peer) => Promise<void>,
): Promise<string> {
  const path = socketPath(args[0]);
  using listener = Channel.listen(path);
  const peer = new Peer("./_peer_hostile.ts", [args[0], path, abi(), ...args.slice(1)]);
  let stderr = "";
  try {
    using channel = await listener.accept();
    await fn(channel, peer);
  } finally {
    [stderr] = await stop(peer);
  }
  return stderr;
}
