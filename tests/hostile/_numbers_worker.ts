// The blocking waits of tests/hostile/numbers_test.ts, in a Worker so that a
// wait that never ends (a NaN read as "forever") blocks this thread, not the
// test's: the test wakes it (a frame, a signal) after a while and reports it.
import { FrameQueue, GpuResource, type SyncPoint } from "../../mod.ts";

interface Call {
  op: "popBlocking" | "wait" | "beginAccess";
  /** The queue's buffer, or the raw handle of a point or a frame (this isolate's reference). */
  target: SharedArrayBuffer | bigint;
  value: unknown;
}

self.onmessage = ({ data }: MessageEvent<Call>) => {
  const started = performance.now();
  try {
    let result: string;
    if (data.op === "popBlocking") {
      const got = FrameQueue.from(data.target as SharedArrayBuffer).popBlocking(
        data.value as number,
      );
      result = got === null ? "null" : got === undefined ? "timed out" : "frame";
      got?.release();
    } else {
      using handle = GpuResource.fromRaw(data.target as bigint);
      if (data.op === "wait") (handle as unknown as SyncPoint).wait(data.value as number);
      else handle.beginAccess(data.value as number);
      result = "reached";
    }
    self.postMessage({ result, ms: performance.now() - started });
  } catch (e) {
    const error = e as { name: string; field?: string; message: string };
    self.postMessage({
      result: error.name === "TimeoutError" ? "timed out" : "error",
      name: error.name,
      field: error.field,
      message: error.message,
      ms: performance.now() - started,
    });
  }
};
