// The empty FFI call every bench file measures as its floor, defined once so each file's figure is the same bench.

import { lib } from "../ffi/load/load.ts";

/** Registers "empty FFI call: gpures_abi_version() [x1000]" as the baseline of `group`. */
export function benchFfiFloor(group: string, permissions?: Deno.PermissionOptions): void {
  const s = lib();
  Deno.bench({
    name: "empty FFI call: gpures_abi_version() [x1000]",
    group,
    baseline: true,
    ...(permissions === undefined ? {} : { permissions }),
    fn() {
      let acc = 0;
      for (let i = 0; i < 1000; i++) acc += s.gpures_abi_version();
      if (acc === 0) throw new Error("unreachable");
    },
  });
}
