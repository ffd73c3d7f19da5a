// docs/architecture.md's folder table is the map a newcomer reads first: it
// names every folder of the root, native/, native/src/, ffi/ and tests/, and
// only folders that exist.

import assert from "node:assert/strict";

const root = new URL("../", import.meta.url);

/** The folders the table's first column names, as "native/src/core/". */
export function tableFolders(markdown: string): string[] {
  const start = markdown.indexOf("<!-- folders:");
  const end = markdown.indexOf("<!-- /folders -->");
  assert.ok(start >= 0 && end > start, "docs/architecture.md has the folders markers");
  const folders: string[] = [];
  for (const line of markdown.slice(start, end).split("\n")) {
    const cell = /^\| `([^`]+\/)` +\|/.exec(line);
    if (cell) folders.push(cell[1]);
  }
  return folders;
}

/** The tracked folders the table must name: the root's and those directly in each parent. */
function foldersOf(parents: readonly string[]): string[] {
  const found: string[] = [];
  for (const parent of parents) {
    for (const e of Deno.readDirSync(new URL(parent || ".", root))) {
      if (!e.isDirectory) continue;
      const path = `${parent}${e.name}/`;
      if (ignored(path)) continue;
      found.push(path);
    }
  }
  return found.sort();
}

/** Build outputs and tool caches: folders git does not track. */
function ignored(path: string): boolean {
  const { success } = new Deno.Command("git", {
    args: ["check-ignore", "-q", path],
    cwd: root,
    stdout: "null",
    stderr: "null",
  }).outputSync();
  return success || path === ".git/";
}

const PARENTS = ["", "native/", "native/src/", "ffi/", "tests/"];
const EXCEPT = new Set(["native/", "ffi/", "native/src/"]); // their rows are their children's

Deno.test("the architecture's folder table names every folder, and only folders that exist", () => {
  const listed = tableFolders(Deno.readTextFileSync(new URL("docs/architecture.md", root)));
  const wanted = foldersOf(PARENTS).filter((f) => !EXCEPT.has(f));
  assert.deepEqual(wanted.filter((f) => !listed.includes(f)), [], "folders the table lacks");
  const gone = listed.filter((f) => {
    try {
      return !Deno.statSync(new URL(f, root)).isDirectory;
    } catch {
      return true;
    }
  });
  assert.deepEqual(gone, [], "rows naming a folder that is not there");
  assert.equal(new Set(listed).size, listed.length, "a folder listed twice");
});

Deno.test("the table reader finds the first column's folders only", () => {
  const text = [
    "<!-- folders: x -->",
    "| folder | holds |",
    "| ------ | ----- |",
    "| `a/b/` | one `c/` in prose |",
    "| `d/`   | two |",
    "<!-- /folders -->",
    "| `e/` | after the table |",
  ].join("\n");
  assert.deepEqual(tableFolders(text), ["a/b/", "d/"]);
});
