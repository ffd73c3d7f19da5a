// The module's import graph has no cycle (type imports count) and uses a
// folder's "_" files only inside it; tools/check_imports.ts says so in CI.

import assert from "node:assert/strict";
import { importProblems, importsOf, moduleImports } from "../tools/check_imports.ts";

const root = new URL("../", import.meta.url);

Deno.test("mod.ts, build.ts and ffi/ import without cycles, private files from their own folder", () => {
  const edges = moduleImports(root);
  assert.ok(edges.length > 100, `read ${edges.length} imports: the walk found the tree`);
  assert.deepEqual(importProblems(edges), []);
});

Deno.test("imports are read from every form, comments skipped, paths resolved", () => {
  const text = `
    import { a } from "./a.ts";
    import type { B } from "../table/b.ts";
    export * from "./c.ts";
    export { type D } from "./d.ts";
    import "./side_effect.ts";
    const lazy = await import("./lazy.ts");
    // import { gone } from "./commented.ts";
    /* import { gone } from "./block.ts"; */
    import { x } from "node:process";
  `;
  assert.deepEqual(
    importsOf("ffi/kinds/k.ts", text).map((e) => `${e.to}${e.typeOnly ? " (type)" : ""}`),
    [
      "ffi/kinds/a.ts",
      "ffi/table/b.ts (type)",
      "ffi/kinds/c.ts",
      "ffi/kinds/d.ts",
      "ffi/kinds/side_effect.ts",
      "ffi/kinds/lazy.ts",
    ],
  );
});

Deno.test("a cycle through a type import is reported, with every file in it", () => {
  const edges = [
    ...importsOf("ffi/kinds/gpu.ts", `import type { Any } from "../gen/variants.ts";`),
    ...importsOf("ffi/gen/variants.ts", `import { Gpu } from "../kinds/gpu.ts";`),
    ...importsOf("ffi/kinds/cpu.ts", `import { Gpu } from "./gpu.ts";`),
  ];
  assert.deepEqual(importProblems(edges), [
    "import cycle: ffi/gen/variants.ts -> ffi/kinds/gpu.ts",
  ]);
});

Deno.test("a file importing itself is a cycle", () => {
  assert.deepEqual(importProblems(importsOf("ffi/a.ts", `export * from "./a.ts";`)), [
    "import cycle: ffi/a.ts",
  ]);
});

Deno.test("a '_' file imported from another folder is reported", () => {
  const edges = [
    ...importsOf("ffi/load/load.ts", `import { p } from "./_prebuilt.ts";`),
    ...importsOf("ffi/kinds/cpu.ts", `import { p } from "../load/_prebuilt.ts";`),
    ...importsOf("build.ts", `import { s } from "./ffi/channel/_socket.ts";`),
  ];
  assert.deepEqual(importProblems(edges), [
    "ffi/kinds/cpu.ts imports ffi/load/_prebuilt.ts, private to ffi/load/",
    "build.ts imports ffi/channel/_socket.ts, private to ffi/channel/",
  ]);
});
