// What Demuxer and Muxer take alike: a url, names and lists of names, and the
// C strings their descriptors point at while the create call copies them.

import { own, refuse, show } from "../table/values.ts";

/** A C string the call reads while it runs. */
export const cString = (s: string): Uint8Array => new TextEncoder().encode(s + "\0");

/** The address of bytes a call reads while it runs. */
export const addressOf = (b: Uint8Array): bigint =>
  BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(b)));

/** A url as libavformat reads it: a file: URL as its path, another URL as it is. */
export function urlOption(what: string, url: unknown): string {
  const path = url instanceof URL
    ? (url.protocol === "file:" ? decodeURIComponent(url.pathname) : url.href)
    : url;
  if (typeof path !== "string" || path === "") {
    refuse(what, "url", `${show(url)} is not a path or URL`);
  }
  return path as string;
}

/** An optional string option of the bag. */
export function stringOption(what: string, bag: object, field: string): string | undefined {
  const v = own(bag, field);
  if (v !== undefined && typeof v !== "string") refuse(what, field, `${show(v)} is not a string`);
  return v as string | undefined;
}

/** An optional list of names, as libavformat's comma-separated string. */
export function listOption(what: string, bag: object, field: string): string | undefined {
  const v = own(bag, field);
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.length === 0 || v.some((s) => typeof s !== "string" || s === "")) {
    refuse(what, field, `${show(v)} is not a list of names`);
  }
  return (v as string[]).join(",");
}

/**
 * A descriptor whose first pointers are `strings` (after struct_size and
 * flags), each a C string or NULL; `keep` holds the strings' bytes.
 */
export function descriptorOf(size: number, strings: (string | undefined)[]): {
  view: DataView;
  keep: (Uint8Array | undefined)[];
} {
  const keep = strings.map((s) => s === undefined ? undefined : cString(s));
  const view = new DataView(new ArrayBuffer(size));
  view.setUint32(0, size, true);
  keep.forEach((s, i) => view.setBigUint64(8 + 8 * i, s ? addressOf(s) : 0n, true));
  return { view, keep };
}
