// A deadline for a promise a test awaits: a hang becomes a failure that says what hung.

/** Resolves with `p`'s value, or rejects naming `what` if it takes longer than `ms`. */
export function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took more than ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
