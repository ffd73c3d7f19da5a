// The protocol load_test and prebuilt_test share for a body run in a child Deno: the script that wraps it, and reading back what it returned or threw.

/** What a child run of {@link childScript} came to. */
export interface Outcome {
  /** Exit status of the child. */
  status: number;
  /** The JSON line the child printed: its result, or the error it caught. */
  result: {
    ok?: unknown;
    error?: string;
    code?: string;
    message?: string;
  };
  stderr: string;
}

/**
 * A module that runs `body` (statements that may `await`, ending with
 * `return value`) after `imports`, and prints as its last line what the body
 * returned, or the error it threw.
 */
export function childScript(imports: string, body: string): string {
  return `${imports}
let out;
try {
  out = { ok: await (async () => { ${body} })() };
} catch (e) {
  out = { error: e?.constructor?.name, code: e?.code, message: e?.message };
}
console.log(JSON.stringify(out));
`;
}

const decoder = new TextDecoder();

/** The outcome of a child that ran a {@link childScript}; throws when it printed no result. */
export function childOutcome(output: Deno.CommandOutput): Outcome {
  const { code, stdout, stderr } = output;
  const text = decoder.decode(stdout).trim();
  const errors = decoder.decode(stderr);
  let result: Outcome["result"];
  try {
    result = JSON.parse(text.split("\n").pop() ?? "");
  } catch {
    throw new Error(`child printed no result (status ${code}):\n${text}\n${errors}`);
  }
  return { status: code, result, stderr: errors };
}
