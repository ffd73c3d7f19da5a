// One Worker lifetime that takes this isolate's native resources: a handle
// with a keep-alive opens the isolate's event queue. It reports, then waits
// to be terminated (or closes itself when asked).
import { VkBufferHandle } from "../../mod.ts";

self.onmessage = (e: MessageEvent) => {
  try {
    VkBufferHandle.create({ buffer: 1n, size: 16n }, { keepAlive: {} }).release();
    self.postMessage("ok");
  } catch (error) {
    self.postMessage(String(error));
  }
  if (e.data === "close") self.close();
};
