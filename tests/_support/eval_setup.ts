// Setup steps that need permissions the test process may lack: run in a child
// `deno eval` with every permission.

const decoder = new TextDecoder();

/** Runs `code` with every permission, `input` as JSON on its stdin; returns its stdout. */
export async function setup(code: string, input: unknown = null): Promise<string> {
  const p = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", code],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  const w = p.stdin.getWriter();
  await w.write(new TextEncoder().encode(JSON.stringify(input)));
  await w.close();
  const { code: status, stdout, stderr } = await p.output();
  if (status !== 0) throw new Error(`setup failed: ${decoder.decode(stderr)}`);
  return decoder.decode(stdout).trim();
}
