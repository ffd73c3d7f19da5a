// The ffmpeg CLI, for tests that check gpures' codecs and containers against
// it: whether it is here, and a run of any command that must succeed.

import assert from "node:assert/strict";

/** Whether the ffmpeg CLI is on PATH. */
export function hasFfmpeg(): boolean {
  try {
    return new Deno.Command("ffmpeg", { args: ["-version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

/** A command's stdout with `input` on its stdin; it must succeed (its log's end says why not). */
export async function runCommand(
  cmd: string,
  args: string[],
  input?: Uint8Array,
): Promise<Uint8Array> {
  const child = new Deno.Command(cmd, {
    args,
    stdin: input ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (input) {
    const writer = child.stdin.getWriter();
    await writer.write(input);
    await writer.close();
  }
  const out = await child.output();
  const log = new TextDecoder().decode(out.stderr).slice(-2000);
  assert.ok(out.success, `${cmd} ${args.join(" ")} failed:\n${log}`);
  return out.stdout;
}
