// The few WebIDL conversions the WebCodecs classes need: TypeError for a
// value the IDL type refuses, as the browser's bindings throw.

/** `[EnforceRange] long long` (or `unsigned long long` with min 0): finite, truncated, in range. */
export function enforceRange(
  what: string,
  field: string,
  v: unknown,
  min = -Number.MAX_SAFE_INTEGER,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const n = Number(v);
  if (typeof v === "bigint" || typeof v === "symbol" || !Number.isFinite(n)) {
    throw new TypeError(`Cannot ${what}: ${field} is ${String(v)}, not a finite number`);
  }
  const t = Math.trunc(n);
  if (t < min || t > max) {
    throw new TypeError(`Cannot ${what}: ${field} is ${t}, outside ${min}..${max}`);
  }
  return t === 0 ? 0 : t; // no -0
}

/** A dictionary member that may be absent: undefined stays undefined. */
export function optionalRange(
  what: string,
  field: string,
  v: unknown,
  min?: number,
  max?: number,
): number | undefined {
  return v === undefined ? undefined : enforceRange(what, field, v, min, max);
}

/** A dictionary argument: undefined and null are an empty one; anything else must be an object. */
export function dictionary<T extends object>(what: string, field: string, v: unknown): Partial<T> {
  if (v === undefined || v === null) return {};
  if (typeof v !== "object" && typeof v !== "function") {
    throw new TypeError(`Cannot ${what}: ${field} is not an object`);
  }
  return v as Partial<T>;
}

/** A required dictionary argument. */
export function requiredDictionary<T extends object>(what: string, field: string, v: unknown): T {
  if (v === undefined || v === null) throw new TypeError(`Cannot ${what}: ${field} is missing`);
  return dictionary<T>(what, field, v) as T;
}

/** One of an enum's strings. */
export function enumMember<T extends string>(
  what: string,
  field: string,
  v: unknown,
  names: readonly T[],
): T {
  const s = String(v);
  if (!names.includes(s as T)) {
    throw new TypeError(
      `Cannot ${what}: ${field} is ${JSON.stringify(s)}, not one of ${names.join(", ")}`,
    );
  }
  return s as T;
}

/** A BufferSource as bytes (a view over it, not a copy); TypeError for anything else. */
export function bufferSource(what: string, field: string, v: unknown): Uint8Array {
  if (v instanceof ArrayBuffer || v instanceof SharedArrayBuffer) {
    if ((v as ArrayBuffer).detached) throw new TypeError(`Cannot ${what}: ${field} is detached`);
    return new Uint8Array(v);
  }
  if (ArrayBuffer.isView(v)) {
    if ((v.buffer as ArrayBuffer).detached) {
      throw new TypeError(`Cannot ${what}: ${field} is detached`);
    }
    return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  }
  throw new TypeError(`Cannot ${what}: ${field} is not an ArrayBuffer or a view of one`);
}

/**
 * The buffers of a `transfer` list, checked as structured transfer does
 * (DataCloneError for a duplicate or a detached one), to detach once the
 * constructor took what it needs.
 */
export function transferList(what: string, v: unknown): ArrayBuffer[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new TypeError(`Cannot ${what}: transfer is not a sequence`);
  const seen = new Set<ArrayBuffer>();
  for (const b of v) {
    if (!(b instanceof ArrayBuffer)) {
      throw new TypeError(`Cannot ${what}: transfer holds something not an ArrayBuffer`);
    }
    if (seen.has(b) || b.detached) {
      throw new DOMException(
        `Cannot ${what}: transfer lists a buffer ${b.detached ? "already detached" : "twice"}`,
        "DataCloneError",
      );
    }
    seen.add(b);
  }
  return [...seen];
}

/** Detaches every buffer of a transfer list. */
export function detachAll(buffers: ArrayBuffer[]): void {
  for (const b of buffers) b.transfer();
}
