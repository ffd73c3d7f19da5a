// Which kinds exist where. Answers from the generated kind table, before the
// native library is loaded, so a kind that cannot exist fails without FFI.

import { KINDS, OS_NAMES } from "../gen/kinds.ts";
import type { KindRow } from "./tables.ts";
import { InvalidHandleError } from "../errors.ts";

let osOverride: string | undefined;

/** The OS gating decides for: Deno.build.os unless a test injected another. */
export function currentOs(): string {
  return osOverride ?? Deno.build.os;
}

/** Makes gating answer as if running on `os` (tests only); undefined restores. */
export function setOsForTesting(os: string | undefined): void {
  osOverride = os;
}

/** The Deno.build.os names a kind exists on. */
export function platformsOf(kind: KindRow): string[] {
  return OS_NAMES.filter((_, bit) => kind.platforms & (1 << bit));
}

/** A kind by id or name, or undefined. */
export function kindRow(kind: number | string): KindRow | undefined {
  return typeof kind === "number" ? KINDS[kind - 1] : KINDS.find((k) => k.name === kind);
}

/** A kind by id or name; InvalidHandleError (field "kind") for one that does not exist. */
export function knownKind(kind: number | string): KindRow {
  const row = kindRow(kind);
  if (row) return row;
  throw new InvalidHandleError(
    `Unknown kind ${typeof kind === "string" ? JSON.stringify(kind) : String(kind)}`,
    "INVALID_VALUE",
    "kind",
  );
}

/** Whether the kind's platform table includes `os`. */
export function existsOn(kind: KindRow, os: string = currentOs()): boolean {
  return platformsOf(kind).includes(os);
}

/** WebGPU is a platform of its own: WgpuTexture needs navigator.gpu too. */
export function webGpuAvailable(): boolean {
  return typeof navigator !== "undefined" && "gpu" in navigator && Boolean(navigator.gpu);
}
