// One Worker lifetime that leaves a wait pending when it is terminated: a
// SyncPoint wait without timeout, a pool acquire with every slot held, a
// channel receive on an idle channel, or a keep-alive whose handle the main
// isolate releases later. It reports once the wait is handed over.
import { Channel, CpuFence, FramePool, VkBufferHandle } from "../../mod.ts";
import { valid } from "../_support/fixtures.ts";

/** What this isolate must keep reachable: its collector must never close what it wraps. */
const kept: unknown[] = [];

self.onmessage = (e: MessageEvent) => {
  const { mode, pool, options } = e.data;
  try {
    if (mode === "sync") {
      const fence = CpuFence.create();
      kept.push(fence.waitAsync()); // no timeout: only the isolate's end can end it
      fence.release(); // the wait's own reference is the fence's last
    } else if (mode === "pool") {
      // FramePool does not cross isolates; this wraps the main isolate's native pool so
      // that the pool outlives the Worker and the test can look at it and close it.
      const Ctor = FramePool as unknown as new (p: Deno.PointerValue, o: unknown) => FramePool;
      const wrapped = new Ctor(Deno.UnsafePointer.create(pool), options);
      kept.push(wrapped, wrapped.acquire().catch(() => {}));
    } else if (mode === "channel") {
      const [a, b] = Channel.pair();
      kept.push(a, b, a.receive().catch(() => {}));
    } else if (mode === "keepalive") {
      const handle = VkBufferHandle.create(valid("VkBufferHandle"), { keepAlive: {} });
      self.postMessage({ raw: handle.intoRaw() });
      return;
    }
    self.postMessage({ ok: true });
  } catch (error) {
    self.postMessage({ error: String(error) });
  }
};
