// clockUs(): one monotonic clock for every process, so stamps compare across them.

import assert from "node:assert/strict";
import { clockUs } from "../mod.ts";

Deno.test("clockUs() counts microseconds and never goes back", async () => {
  const a = clockUs();
  await new Promise((r) => setTimeout(r, 20));
  const b = clockUs();
  assert.ok(Number.isSafeInteger(a) && a > 0, `a stamp is a positive integer: ${a}`);
  assert.ok(b - a >= 19_000 && b - a < 5_000_000, `20 ms are about 20,000 µs: ${b - a}`);
  let last = clockUs();
  for (let i = 0; i < 10_000; i++) {
    const now = clockUs();
    assert.ok(now >= last, "monotonic");
    last = now;
  }
});

Deno.test("a stamp taken in another process falls between this process's stamps around it", async () => {
  const mod = new URL("../mod.ts", import.meta.url).href;
  const code = `import { clockUs } from ${JSON.stringify(mod)}; console.log(clockUs());`;
  const before = clockUs();
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", "--allow-ffi", "--allow-read", "--allow-env", code],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const after = clockUs();
  assert.ok(out.success, "the child ran");
  const theirs = Number(new TextDecoder().decode(out.stdout).trim());
  assert.ok(before <= theirs && theirs <= after, `${before} <= ${theirs} <= ${after}`);
});
