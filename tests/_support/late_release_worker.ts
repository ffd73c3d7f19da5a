// Adopts raw frame handles from the main isolate and makes their last release
// here, a little later each: the frames' buffers end on this thread while the
// main thread goes on importing others.
/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
import { GpuResource } from "../../mod.ts";

let released = 0;
self.onmessage = (e: MessageEvent<bigint | "count">) => {
  if (e.data === "count") return self.postMessage(released);
  const frame = GpuResource.fromRaw(e.data);
  setTimeout(() => {
    frame.release();
    released++;
  }, Math.random() * 2);
};
