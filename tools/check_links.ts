// Checks the links of Markdown files: every relative link names a file or
// folder that exists, and every #fragment a heading of its target (GitHub's
// anchors), so a renamed heading or a moved doc fails CI instead of leaving a
// dead link.
//
//   deno run --allow-read tools/check_links.ts README.md docs/*.md
//
// Links to other sites (http:, https:, mailto:) are not fetched: CI runs
// offline.

/** A link that leads nowhere: where it is and why. */
export interface LinkProblem {
  file: string;
  line: number;
  target: string;
  why: string;
}

/** What the checker needs of the file system, so a test can give it files of its own. */
export interface Files {
  /** The file's text, or undefined when it is not a readable file. */
  read(path: string): string | undefined;
  /** Whether a file or folder exists at the path. */
  exists(path: string): boolean;
}

const FENCE = /^\s*(```|~~~)/;

/** The lines of a Markdown text that are prose: those inside code fences become empty. */
function proseLines(text: string): string[] {
  let fenced = false;
  return text.split("\n").map((line) => {
    if (FENCE.test(line)) {
      fenced = !fenced;
      return "";
    }
    return fenced ? "" : line;
  });
}

/** GitHub's anchor for a heading's text: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .replace(/`/g, "")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1") // a link in a heading anchors by its text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .trim()
    .replace(/\s/g, "-");
}

/** The anchors a Markdown text's headings give, a repeated one numbered as GitHub does. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Every inline link's target (`[text](target)`, images too), with its line, outside code. */
export function linksOf(text: string): { line: number; target: string }[] {
  const links: { line: number; target: string }[] = [];
  proseLines(text).forEach((line, i) => {
    const prose = line.replace(/`[^`]*`/g, ""); // code spans are not links
    for (const m of prose.matchAll(/\]\(\s*(?:<([^>]+)>|([^)\s]+))(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ line: i + 1, target: m[1] ?? m[2] });
    }
  });
  return links;
}

/** The folder part of a path ("" for a bare name), with its trailing slash. */
function folderOf(path: string): string {
  const at = path.lastIndexOf("/");
  return at < 0 ? "" : path.slice(0, at + 1);
}

/** `a/b/../c` as `a/c`; a path that climbs above its start keeps its leading `..`. */
export function normalize(path: string): string {
  const root = path.startsWith("/") ? "/" : "";
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === ".." && out.length && out[out.length - 1] !== "..") out.pop();
    else out.push(part);
  }
  return root + out.join("/") || ".";
}

/** Why a link of `file` to `target` leads nowhere, or undefined when it resolves. */
function problemOf(file: string, text: string, target: string, files: Files): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // another site: not fetched offline
  const hash = target.indexOf("#");
  const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const fragment = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const path = pathPart === "" ? file : normalize(folderOf(file) + pathPart);
  if (pathPart !== "" && !files.exists(path)) return `${path} does not exist`;
  if (fragment === undefined) return undefined;
  const body = pathPart === "" ? text : files.read(path);
  if (body === undefined || !path.endsWith(".md")) return `#${fragment}: ${path} has no headings`;
  return anchorsOf(body).has(fragment) ? undefined : `${path} has no heading #${fragment}`;
}

/** Every link of the given Markdown files that leads nowhere. */
export function checkLinks(paths: string[], files: Files): LinkProblem[] {
  const problems: LinkProblem[] = [];
  for (const file of paths) {
    const text = files.read(file);
    if (text === undefined) {
      problems.push({ file, line: 0, target: file, why: "cannot be read" });
      continue;
    }
    for (const { line, target } of linksOf(text)) {
      const why = problemOf(file, text, target, files);
      if (why) problems.push({ file, line, target, why });
    }
  }
  return problems;
}

/** The real file system, paths relative to the working folder. */
export const diskFiles: Files = {
  read(path) {
    try {
      return Deno.readTextFileSync(path);
    } catch {
      return undefined;
    }
  },
  exists(path) {
    try {
      Deno.statSync(path);
      return true;
    } catch {
      return false;
    }
  },
};

if (import.meta.main) {
  const paths = Deno.args.map(normalize);
  if (!paths.length) {
    console.error("usage: deno run --allow-read tools/check_links.ts FILE.md...");
    Deno.exit(2);
  }
  const problems = checkLinks(paths, diskFiles);
  for (const p of problems) console.error(`${p.file}:${p.line}: (${p.target}) ${p.why}`);
  if (problems.length) Deno.exit(1);
  console.log(`links of ${paths.length} files resolve`);
}
