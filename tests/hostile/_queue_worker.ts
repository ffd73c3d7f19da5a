// One Worker lifetime that takes this isolate's native resources: a handle
// with a keep-alive opens the isolate's event queue. It reports, then waits
// to be terminated (or closes itself when asked).
import { VkBufferHandle } from "../../mod.ts";
import { valid } from "../_support/fixtures.ts";

self.onmessage = (e: MessageEvent) => {
  try {
    VkBufferHandle.create(valid("VkBufferHandle"), { keepAlive: {} }).release();
    self.postMessage("ok");
  } catch (error) {
    self.postMessage(String(error));
  }
  if (e.data === "close") self.close();
};
