// Adopts a raw handle sent by the main isolate, describes it, and makes its last release here.
/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
import { GpuResource, WgpuTexture } from "../../mod.ts";

self.onmessage = (e: MessageEvent<bigint>) => {
  const resource = GpuResource.fromRaw(e.data);
  const reply: Record<string, unknown> = { kind: resource.kind, description: resource.toJSON() };
  if (resource instanceof WgpuTexture) {
    try {
      reply.texture = resource.texture;
    } catch (error) {
      reply.textureError = (error as { code: string }).code;
    }
  }
  resource.release();
  self.postMessage(reply);
};
