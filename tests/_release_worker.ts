// Adopts a raw handle sent by the main isolate, describes it, and makes its last release here.
/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
import { GpuResource } from "../mod.ts";

self.onmessage = (e: MessageEvent<bigint>) => {
  const resource = GpuResource.fromRaw(e.data);
  const kind = resource.kind;
  resource.release();
  self.postMessage(kind);
};
