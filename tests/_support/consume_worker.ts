// Adopts each raw handle the main isolate sends, marks it consumed, makes its last release here.
/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
import { GpuResource } from "../../mod.ts";

self.onmessage = (e: MessageEvent<bigint>) => {
  const resource = GpuResource.fromRaw(e.data);
  resource.markConsumed();
  resource.release();
  self.postMessage("released");
};
