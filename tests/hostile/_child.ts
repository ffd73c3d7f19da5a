// Runs code in a child Deno process, so that a test can show a failure that
// is a signal (SIGBUS, SIGSEGV) without taking the test run down with it.

/** How a child process ended. */
export interface ChildResult {
  code: number;
  signal: Deno.Signal | null;
  stdout: string;
  stderr: string;
}

const mod = new URL("../../mod.ts", import.meta.url).href;
const libc = new URL("../_support/libc.ts", import.meta.url).href;
const fixtures = new URL("../_support/fixtures.ts", import.meta.url).href;

/**
 * Runs `body` as a module in a child `deno eval` (all permissions, --expose-gc).
 * `MOD`, `LIBC` and `FIXTURES` in the body are replaced by the URLs of the
 * module, the tests' libc and the tests' fixtures.
 * A child still running after `timeoutMs` is killed (SIGTERM): a hang shows
 * as that signal.
 */
export async function runChild(body: string, timeoutMs = 60_000): Promise<ChildResult> {
  const code = body.replaceAll("MOD", mod).replaceAll("LIBC", libc).replaceAll(
    "FIXTURES",
    fixtures,
  );
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--v8-flags=--expose-gc", code],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(timeoutMs),
  }).output();
  const text = new TextDecoder();
  return {
    code: out.code,
    signal: out.signal,
    stdout: text.decode(out.stdout),
    stderr: text.decode(out.stderr),
  };
}

/** A message for assert when a child did not end cleanly. */
export function describeChild(r: ChildResult): string {
  return `child ended with ${r.signal ? `signal ${r.signal}` : `code ${r.code}`}\n${r.stderr}`;
}
