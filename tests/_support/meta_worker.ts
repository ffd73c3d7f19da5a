// Adopts a raw handle sent by the main isolate, reads its metadata and buffer
// id, and sends them back; then sets new metadata ("after") if told to, and
// releases the handle.
/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
import { type FrameMetaInit, GpuResource } from "../../mod.ts";

self.onmessage = (e: MessageEvent<{ raw: bigint; after?: FrameMetaInit }>) => {
  const resource = GpuResource.fromRaw(e.data.raw);
  const seen = { meta: resource.meta, bufferId: resource.bufferId };
  if (e.data.after) resource.setMeta(e.data.after);
  resource.release();
  self.postMessage(seen);
};
