// The receiving side of the hand-off benchmark: adopts raw handles and
// releases them, receives a frame's bytes (a structured-clone copy), or echoes.
/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
import { GpuResource } from "../mod.ts";

self.onmessage = (e: MessageEvent<unknown>) => {
  const data = e.data;
  if (typeof data === "bigint") {
    GpuResource.fromRaw(data).release();
    self.postMessage("released");
  } else if (data instanceof BigUint64Array) {
    for (const handle of data) GpuResource.fromRaw(handle).release();
    self.postMessage(`released ${data.length}`);
  } else if (data instanceof Uint8Array) {
    self.postMessage(data.length);
  } else {
    self.postMessage(data);
  }
};
