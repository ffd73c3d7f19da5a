// Errors a person can act on: every OS failure of a channel call names the
// errno symbol and the object (the path, quoted), an empty path is refused
// as invalid before any OS call, and a URL is a file: URL whose path is
// decoded, or is refused.

import assert from "node:assert/strict";
import { Channel, type GpuResourceError, InvalidHandleError } from "../../mod.ts";
import { linux, mkdirPath, Peer, rmdirPath, socketPath } from "./_peer_wire.ts";

const RECEIVER_FLAGS = ["--allow-ffi", "--allow-env=GPURES_LIB"];

/** What a child receiver printed as its one line of JSON; it must have exited cleanly. */
async function childResult(args: string[]) {
  const child = new Peer("./_peer_receiver.ts", args, RECEIVER_FLAGS);
  try {
    const line = await child.out.next();
    const { status, stderr } = await child.done();
    assert.ok(status.success && line, `the child failed: ${stderr}`);
    return JSON.parse(line);
  } finally {
    child.kill();
    await child.done();
  }
}

function osError(e: { code: string; field: string; message: string }, field: string, re: RegExp) {
  assert.equal(e.code, "OS_ERROR", e.message);
  assert.equal(e.field, field, e.message);
  assert.match(e.message, re);
}

Deno.test({
  name: "listen() and connect() where the process may not create or reach a socket fail with " +
    'Cannot listen on "<path>": EACCES',
  ignore: !linux,
  async fn() {
    const dir = socketPath("eacces").replace(/\.sock$/, "");
    assert.ok(mkdirPath(dir, 0o500), "a directory nobody may write");
    try {
      const path = `${dir}/x.sock`;
      const quoted = path.replace(/[.]/g, "[.]");
      const result = await childResult(["eacces", path]); // as nobody when root
      osError(result.listen, "path", new RegExp(`^Cannot listen on "${quoted}": EACCES \\(`));
      osError(result.connect, "path", new RegExp(`^Cannot connect to "${quoted}": .*EACCES`));
    } finally {
      rmdirPath(dir);
    }
  },
});

Deno.test({
  name: 'listen() in a directory that does not exist says Cannot listen on "<path>": ENOENT',
  ignore: !linux,
  fn() {
    const path = `/tmp/gpures-no-such-dir-${Deno.pid}/x.sock`;
    assert.throws(() => Channel.listen(path), (e: GpuResourceError) => {
      osError(e, "path", /^Cannot listen on "\/tmp\/gpures-no-such-dir-\d+\/x\.sock": ENOENT \(/);
      return true;
    });
  },
});

Deno.test({
  name: "out of fds, pair(), listen(), connect() and accept() fail with EMFILE, naming the path",
  ignore: !linux,
  async fn() {
    const path = socketPath("emfile");
    const r = await childResult(["out-of-fds", path]);
    osError(r.pair, "", /^Cannot make channel pair: EMFILE \(/);
    osError(r.listen, "", new RegExp(`^Cannot listen on "${path}[.]2": EMFILE \\(`));
    osError(r.connect, "", new RegExp(`^Cannot connect to "${path}": EMFILE \\(`));
    osError(r.accept, "", /^Cannot accept on fd \d+: EMFILE \(/);
  },
});

Deno.test({
  name: "an empty path is refused as invalid, naming path, and the message says it is empty",
  ignore: !linux,
  async fn() {
    const empty = (e: InvalidHandleError) => {
      assert.ok(e instanceof InvalidHandleError, String(e));
      assert.equal(e.code, "INVALID_VALUE");
      assert.equal(e.field, "path");
      assert.match(e.message, /path is empty/);
      return true;
    };
    assert.throws(() => Channel.listen(""), empty);
    await assert.rejects(Channel.connect(""), empty);
  },
});

Deno.test({
  name: "a file: URL names the socket at its decoded path; any other URL is refused, naming path",
  ignore: !linux,
  async fn() {
    const name = `gpures hostile ${Deno.pid} \u00fc%.sock`;
    const path = `/tmp/${name}`;
    const url = new URL(`file:///tmp/${encodeURIComponent(name)}`);
    assert.ok(url.pathname.includes("%20"), "the URL's path is percent-encoded");
    const listener = Channel.listen(url);
    try {
      assert.equal(listener.path, path);
      assert.ok(Deno.lstatSync(path).isSocket, "the socket file has the decoded name");
      const client = await Channel.connect(path);
      (await listener.accept()).close();
      client.close();
    } finally {
      listener.close();
    }
    assert.throws(() => Deno.lstatSync(path), Deno.errors.NotFound);

    for (const other of ["http://example.com/tmp/x.sock", "data:,x", "file://elsewhere/tmp/x"]) {
      const refused = (e: InvalidHandleError) => {
        assert.ok(e instanceof InvalidHandleError, `${other}: ${e}`);
        assert.equal(e.field, "path");
        return true;
      };
      assert.throws(() => Channel.listen(new URL(other)), refused);
      await assert.rejects(Channel.connect(new URL(other)), refused);
    }
  },
});
