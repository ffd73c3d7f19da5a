// Decompressing and hashing what the package carries, synchronously (the
// loader runs inside the first create()). Deno's built-in node:zlib and
// node:crypto are synchronous and need no permission; they are fetched on
// first use, so a process that loads the library from a path never pays for
// them. Measured on a 2-core VM: node:zlib 12-19 ms the first time, node:crypto
// 1-4 ms, then under a millisecond for a 500 KB library either way.

import process from "node:process";

interface Zlib {
  gunzipSync(data: Uint8Array, options: { maxOutputLength: number }): Uint8Array;
}
interface Crypto {
  createHash(algorithm: "sha256"): {
    update(data: Uint8Array): { digest(encoding: "hex"): string };
  };
}

const builtin = <T>(name: string) =>
  (process as unknown as { getBuiltinModule(name: string): T }).getBuiltinModule(name);

/** The bytes a base64 string holds; throws a SyntaxError on a character base64 has not. */
export function fromBase64(text: string): Uint8Array {
  return (Uint8Array as unknown as { fromBase64(text: string): Uint8Array }).fromBase64(text);
}

/**
 * The data of a gzip stream. Throws an Error (never crashes) on a damaged or
 * truncated stream, and on one that would inflate past `maxSize` bytes.
 */
export function gunzip(data: Uint8Array, maxSize: number = 64 << 20): Uint8Array {
  const out = builtin<Zlib>("node:zlib").gunzipSync(data, { maxOutputLength: maxSize });
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/** The SHA-256 of `bytes`, as 64 lowercase hex digits. */
export function sha256HexSync(bytes: Uint8Array): string {
  return builtin<Crypto>("node:crypto").createHash("sha256").update(bytes).digest("hex");
}
