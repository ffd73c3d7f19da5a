// Where a library built from the published sources lives: one folder per
// package version, so upgrading never loads a stale binary.

/** The package version; a test keeps it equal to deno.json's. */
export const VERSION = "0.1.0";

function env(name: string): string | undefined {
  // Ask first: reading an env var without permission would prompt or throw.
  const state = Deno.permissions.querySync?.({ name: "env", variable: name }).state;
  return state === "granted" ? Deno.env.get(name) || undefined : undefined;
}

/**
 * The per-version cache folder: GPURES_CACHE_DIR if set, else the OS's user
 * cache folder + "gpures/<version>"; undefined when none can be read.
 * `getEnv` reads a variable (by default through Deno.env, when permitted; the
 * prebuilt loader passes one that reads it through FFI).
 */
export function cacheDir(
  os: string = Deno.build.os,
  getEnv: (name: string) => string | undefined = env,
): string | undefined {
  const explicit = getEnv("GPURES_CACHE_DIR");
  if (explicit) return `${explicit}/${VERSION}`;
  let base: string | undefined;
  if (os === "windows") base = getEnv("LOCALAPPDATA");
  else if (os === "darwin") base = getEnv("HOME") && `${getEnv("HOME")}/Library/Caches`;
  else base = getEnv("XDG_CACHE_HOME") ?? (getEnv("HOME") && `${getEnv("HOME")}/.cache`);
  return base ? `${base}/gpures/${VERSION}` : undefined;
}
