// Nothing removed that is not yours: a listener records the socket file it
// made (device and inode) and closing it removes that file only while the
// path still names it. Closing an old listener must not cut off a newer one
// that listens at the same path, in another process or in this one.

import assert from "node:assert/strict";
import { Channel } from "../../mod.ts";
import {
  closeFd,
  linux,
  mkdirPath,
  Peer,
  rawConnect,
  rmdirPath,
  socketPath,
  unlinkPath,
} from "./_peer_wire.ts";

const isSocket = (path: string) => Deno.lstatSync(path).isSocket;

Deno.test({
  name: "closing a listener leaves alone the socket of a newer listener, in another process, " +
    "at the same path",
  ignore: !linux,
  async fn() {
    const path = socketPath("listener");
    const old = Channel.listen(path);
    unlinkPath(path); // the path is free again, and another process takes it
    const newer = new Peer("./_peer_hostile.ts", ["listen", path, "0"]);
    try {
      await newer.out.expect("listening");
      old.close();
      assert.ok(isSocket(path), "the newer listener's socket file is still there");
      const conn = rawConnect(path); // and it still accepts
      await newer.out.expect("accepted");
      closeFd(conn);
    } finally {
      newer.kill();
      await newer.done();
      unlinkPath(path); // the peer's, left behind when it was killed
    }
  },
});

Deno.test({
  name: "closing a listener removes its own socket file, but not the file of a newer listener " +
    "in this process that replaced it",
  ignore: !linux,
  async fn() {
    const path = socketPath("listener");
    const a = Channel.listen(path);
    unlinkPath(path);
    const b = Channel.listen(path);
    a.close();
    assert.ok(isSocket(path), "a.close() left b's socket file");
    const client = await Channel.connect(path);
    const server = await b.accept();
    client.close();
    server.close();
    b.close();
    assert.throws(() => Deno.lstatSync(path), Deno.errors.NotFound, "b.close() removed its own");

    // A file that replaced the socket (not a socket at all) is left alone too.
    const c = Channel.listen(path);
    unlinkPath(path);
    assert.ok(mkdirPath(path, 0o700));
    try {
      c.close();
      assert.ok(Deno.lstatSync(path).isDirectory);
    } finally {
      rmdirPath(path);
    }
  },
});
