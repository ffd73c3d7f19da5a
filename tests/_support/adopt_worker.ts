// Adopts a raw handle sent by the main isolate, then, as told:
//   "release": releases it and says "released";
//   "hold":    says "adopted" and keeps it;
//   "exit":    says "adopted" and closes itself without releasing it.
/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
import { GpuResource } from "../../mod.ts";

const held: GpuResource<unknown>[] = [];

self.onmessage = (e: MessageEvent<{ raw: bigint; then: "release" | "hold" | "exit" }>) => {
  const resource = GpuResource.fromRaw(e.data.raw);
  if (e.data.then === "release") {
    resource.release();
    self.postMessage("released");
    return;
  }
  held.push(resource);
  self.postMessage("adopted");
  if (e.data.then === "exit") self.close();
};
