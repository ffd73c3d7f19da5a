// A local stand-in of the JSR registry on 127.0.0.1, serving this package
// exactly as `deno publish` would upload it: the files `deno publish
// --dry-run` lists, meta.json, <version>_meta.json (each file's size and
// sha256 in the manifest, the exports of deno.json) and the files themselves.
// Deno reads the registry's address from JSR_URL.
//
//   deno run --allow-net=127.0.0.1 --allow-read --allow-write --allow-run \
//     tools/jsr_stand_in.ts [--root DIR] [--port N] [--url-file FILE] [--log FILE]
//     [--wrong-checksum PATH]
//
// --url-file receives the registry's URL once it listens (for JSR_URL);
// --log receives one line per request ("GET /path 200"); --wrong-checksum PATH
// (e.g. /mod.ts) declares a wrong sha256 for that file, as a tampered registry
// or mirror would, to prove Deno checks the manifest. Stops on SIGTERM/SIGINT.

interface Options {
  root: string;
  port: number;
  urlFile?: string;
  log?: string;
  wrongChecksum?: string;
}

function parse(args: string[]): Options {
  const value = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  return {
    root: value("--root") ?? new URL("../", import.meta.url).pathname.replace(/\/$/, ""),
    port: Number(value("--port") ?? 0),
    urlFile: value("--url-file"),
    log: value("--log"),
    wrongChecksum: value("--wrong-checksum"),
  };
}

/** The files `deno publish` would upload, relative to root, from its dry run. */
export async function publishedFiles(root: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["publish", "--dry-run", "--allow-dirty"],
    cwd: root,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`deno publish --dry-run failed:\n${text}`);
  const prefix = new URL(`file://${root}/`).href;
  const files = [...text.matchAll(/^\s+(file:\/\/\S+) \(/gm)].map((m) => m[1])
    .filter((u) => u.startsWith(prefix)).map((u) => decodeURIComponent(u.slice(prefix.length)));
  if (!files.length) throw new Error(`deno publish --dry-run listed no files:\n${text}`);
  return files.sort();
}

async function sha256(bytes: Uint8Array): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function main(): Promise<void> {
  const options = parse(Deno.args);
  const config = JSON.parse(Deno.readTextFileSync(`${options.root}/deno.json`));
  const [scope, name] = (config.name as string).slice(1).split("/");
  const version: string = config.version;
  const files = new Map<string, Uint8Array>();
  const manifest: Record<string, { size: number; checksum: string }> = {};
  for (const path of await publishedFiles(options.root)) {
    const bytes = Deno.readFileSync(`${options.root}/${path}`);
    files.set(`/${path}`, bytes);
    manifest[`/${path}`] = { size: bytes.length, checksum: `sha256-${await sha256(bytes)}` };
  }
  if (options.wrongChecksum) {
    const entry = manifest[options.wrongChecksum];
    if (!entry) throw new Error(`--wrong-checksum: ${options.wrongChecksum} is not published`);
    entry.checksum = `sha256-${"0".repeat(64)}`;
  }
  const base = `/@${scope}/${name}`;
  const meta = { scope, name, latest: version, versions: { [version]: {} } };
  const versionMeta = { manifest, exports: config.exports };
  const log = options.log ? Deno.openSync(options.log, { append: true, create: true }) : undefined;
  const enc = new TextEncoder();
  const json = (v: unknown) =>
    new Response(JSON.stringify(v), { headers: { "content-type": "application/json" } });
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: options.port,
    onListen: ({ port }) => {
      const url = `http://127.0.0.1:${port}/`;
      console.error(
        `JSR stand-in for @${scope}/${name}@${version} (${files.size} files) at ${url}`,
      );
      if (options.urlFile) Deno.writeTextFileSync(options.urlFile, url);
    },
  }, (request) => {
    const path = decodeURIComponent(new URL(request.url).pathname);
    let response: Response;
    if (path === `${base}/meta.json`) response = json(meta);
    else if (path === `${base}/${version}_meta.json`) response = json(versionMeta);
    else if (path.startsWith(`${base}/${version}/`)) {
      const file = files.get(path.slice(`${base}/${version}`.length));
      response = file
        ? new Response(file as Uint8Array<ArrayBuffer>, {
          headers: {
            "content-type": path.endsWith(".ts") ? "text/typescript" : "application/octet-stream",
          },
        })
        : new Response("not found", { status: 404 });
    } else response = new Response("not found", { status: 404 });
    log?.writeSync(enc.encode(`${request.method} ${path} ${response.status}\n`));
    return response;
  });
  const stop = () => server.shutdown();
  Deno.addSignalListener("SIGTERM", stop);
  Deno.addSignalListener("SIGINT", stop);
  await server.finished;
  log?.close();
}

if (import.meta.main) await main();
