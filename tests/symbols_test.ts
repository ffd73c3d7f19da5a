// ffi/gen/symbols.ts is what tools/gen_symbols.ts makes of gpures.h today, and
// every entry of tools/symbols_overlay.ts still names something gpures.h
// declares. Both need the C preprocessor.

import assert from "node:assert/strict";
import { compiler, readHeader } from "../tools/c_header.ts";
import { overlayProblems, symbolsFile } from "../tools/gen_symbols.ts";

const root = new URL("../", import.meta.url);

function hasCompiler(): boolean {
  try {
    return new Deno.Command(compiler(), { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

const noCompiler = !hasCompiler();

Deno.test({
  name: "ffi/gen/symbols.ts is up to date with gpures.h (else: deno task gen)",
  ignore: noCompiler, // no C preprocessor on PATH ($CC or cc)
  async fn() {
    const onDisk = await Deno.readTextFile(new URL("ffi/gen/symbols.ts", root));
    assert.equal(await symbolsFile(root), onDisk);
  },
});

Deno.test({
  name: "the symbol overlay names only functions and parameters gpures.h declares",
  ignore: noCompiler, // no C preprocessor on PATH ($CC or cc)
  async fn() {
    assert.deepEqual(overlayProblems(await readHeader(root)), []);
  },
});

Deno.test({
  name: "a stale overlay entry is reported",
  ignore: noCompiler, // no C preprocessor on PATH ($CC or cc)
  async fn() {
    const header = await readHeader(root);
    const problems = overlayProblems(header, {
      gpures_gone: { omit: true, why: "removed from gpures.h" },
      gpures_gone_at: { of: "gpures_gone", addresses: true, why: "a second row of it" },
      gpures_create_again: { of: "gpures_create", pass: { handle: "pointer" }, why: "renamed" },
    });
    assert.deepEqual(problems, [
      "gpures_gone: gpures.h declares no gpures_gone",
      "gpures_gone_at: gpures.h declares no gpures_gone",
      "gpures_create_again: gpures_create has no parameter handle",
    ]);
  },
});
