// tools/check_links.ts: the anchors it derives are GitHub's, it finds links
// only in prose, and it reports each kind of dead link; and the project's own
// docs have none.

import assert from "node:assert/strict";
import {
  anchorsOf,
  checkLinks,
  diskFiles,
  type Files,
  linksOf,
  normalize,
  slug,
} from "../tools/check_links.ts";

/** Files held in memory: a path that is a prefix folder of one exists too. */
function memoryFiles(files: Record<string, string>): Files {
  return {
    read: (path) => files[path],
    exists: (path) => path in files || Object.keys(files).some((f) => f.startsWith(`${path}/`)),
  };
}

Deno.test("slug() gives GitHub's anchors", () => {
  assert.equal(slug("From C and C++"), "from-c-and-c");
  assert.equal(slug("Sync: fences and SyncPoints"), "sync-fences-and-syncpoints");
  assert.equal(slug("`deno task bench` figures"), "deno-task-bench-figures");
  assert.equal(
    slug("Where the demo's 95 µs per frame went"),
    "where-the-demos-95-µs-per-frame-went",
  );
  assert.equal(slug("A - B"), "a---b");
  assert.equal(slug("See [the guide](guide.md)"), "see-the-guide");
});

Deno.test("anchorsOf() numbers repeated headings and skips code fences", () => {
  const text = "# Top\n## Targets\n```sh\n# not a heading\n```\n### Targets\n";
  assert.deepEqual([...anchorsOf(text)], ["top", "targets", "targets-1"]);
});

Deno.test("linksOf() finds inline links and images outside code, with their lines", () => {
  const text = [
    'See [a](a.md) and ![b](img/b.png "title").',
    "`[not](code.md)` in a span",
    "```md",
    "[not](fenced.md)",
    "```",
    "[c](<c d.md>)",
  ].join("\n");
  assert.deepEqual(linksOf(text), [
    { line: 1, target: "a.md" },
    { line: 1, target: "img/b.png" },
    { line: 6, target: "c d.md" },
  ]);
});

Deno.test("normalize() resolves . and .. segments", () => {
  assert.equal(normalize("docs/../README.md"), "README.md");
  assert.equal(normalize("./docs/./guide.md"), "docs/guide.md");
  assert.equal(normalize("../x.md"), "../x.md");
  assert.equal(normalize("/work/docs/../README.md"), "/work/README.md");
});

Deno.test("checkLinks() reports missing files, missing headings and fragments of non-Markdown", () => {
  const files = memoryFiles({
    "README.md": [
      "# Read me",
      "[ok](docs/guide.md#loading) [ok](#read-me) [site](https://example.com/x#y)",
      "[folder](examples) [gone](docs/gone.md) [anchor](docs/guide.md#nowhere)",
      "[self](#nowhere) [code](examples/a.ts#L1)",
    ].join("\n"),
    "docs/guide.md": "# Guide\n## Loading\n[back](../README.md#read-me)\n",
    "examples/a.ts": "",
  });
  const problems = checkLinks(["README.md", "docs/guide.md"], files);
  assert.deepEqual(
    problems.map((p) => `${p.file}:${p.line} ${p.target}: ${p.why}`),
    [
      "README.md:3 docs/gone.md: docs/gone.md does not exist",
      "README.md:3 docs/guide.md#nowhere: docs/guide.md has no heading #nowhere",
      "README.md:4 #nowhere: README.md has no heading #nowhere",
      "README.md:4 examples/a.ts#L1: #L1: examples/a.ts has no headings",
    ],
  );
});

Deno.test("the README and docs/ have no dead links", () => {
  const root = new URL("../", import.meta.url).pathname;
  const docs = [...Deno.readDirSync(`${root}docs`)]
    .filter((e) => e.isFile && e.name.endsWith(".md"))
    .map((e) => `${root}docs/${e.name}`);
  const problems = checkLinks([`${root}README.md`, ...docs], diskFiles);
  assert.deepEqual(problems, []);
});
