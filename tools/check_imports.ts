// Checks the module's import graph (mod.ts, build.ts and everything under
// ffi/): no cycles, type-only imports included, so that each folder is a layer
// that can be read without the ones above it; and a file whose name begins
// with "_" is imported only from its own folder.
//
//   deno run --allow-read tools/check_imports.ts
//
// Prints one line per problem and exits 1 when there is any.

/** One import or re-export of a relative module. */
export interface ImportEdge {
  from: string;
  to: string;
  typeOnly: boolean;
}

const SPECIFIER =
  /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^"';]*?\s+from\s+)?["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

/** The relative imports of one file's text, resolved against its path (root-relative, "/"-separated). */
export function importsOf(path: string, text: string): ImportEdge[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/[^\n]*/g, "$1");
  const edges: ImportEdge[] = [];
  for (const m of code.matchAll(SPECIFIER)) {
    const spec = m[3] ?? m[4];
    edges.push({ from: path, to: join(path, spec), typeOnly: m[2] !== undefined });
  }
  return edges;
}

function join(from: string, spec: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const p of spec.split("/")) {
    if (p === "..") parts.pop();
    else if (p !== ".") parts.push(p);
  }
  return parts.join("/");
}

const folderOf = (path: string) => path.slice(0, path.lastIndexOf("/") + 1);
const baseOf = (path: string) => path.slice(path.lastIndexOf("/") + 1);

/** Every cycle's files, one strongly connected component each (Tarjan's algorithm). */
export function cyclesOf(edges: readonly ImportEdge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) {
    if (!next.has(e.from)) next.set(e.from, []);
    if (!next.has(e.to)) next.set(e.to, []);
    next.get(e.from)!.push(e.to);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = ""; w !== v;) {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    }
    const selfLoop = next.get(v)!.includes(v);
    if (component.length > 1 || selfLoop) cycles.push(component.sort());
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return cycles;
}

/** What is wrong with a graph: cycles, and "_" files reached from another folder. */
export function importProblems(edges: readonly ImportEdge[]): string[] {
  const problems = cyclesOf(edges).map((c) => `import cycle: ${c.join(" -> ")}`);
  for (const e of edges) {
    if (baseOf(e.to).startsWith("_") && folderOf(e.to) !== folderOf(e.from)) {
      problems.push(`${e.from} imports ${e.to}, private to ${folderOf(e.to) || "the root"}`);
    }
  }
  return problems;
}

/** The edges of mod.ts, build.ts and every .ts file under ffi/, from a checkout at root. */
export function moduleImports(root: URL): ImportEdge[] {
  const files = ["mod.ts", "build.ts"];
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(new URL(dir, root))) {
      if (e.isDirectory) walk(`${dir}${e.name}/`);
      else if (e.name.endsWith(".ts")) files.push(dir + e.name);
    }
  };
  walk("ffi/");
  return files.flatMap((f) =>
    importsOf(f, Deno.readTextFileSync(new URL(f, root)))
      .filter((e) => e.to.startsWith("ffi/") || e.to === "mod.ts" || e.to === "build.ts")
  );
}

if (import.meta.main) {
  const problems = importProblems(moduleImports(new URL("../", import.meta.url)));
  for (const p of problems) console.error(p);
  if (problems.length) Deno.exit(1);
  console.log("imports: no cycles, private files used only in their folders");
}
