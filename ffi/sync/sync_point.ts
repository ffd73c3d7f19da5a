// SyncPoint: "the work before this point is finished", in one API's terms.
// Every sync kind's class extends it; waiting is the same for all of them.

import { type Fence, GpuResource } from "../kinds/gpu_resource.ts";
import { check, native } from "../load/native.ts";
import { lib } from "../load/load.ts";
import { reachedHere, waitOnThread, type WaitOptions } from "../events/sync_waits.ts";
import { UnsupportedError, WrongKindError } from "../errors.ts";
import { optionsBag, own, timeoutNanos, timeoutOption } from "../table/values.ts";

const reached = new Uint32Array(1);
let reachedAt: Deno.PointerValue = null;
const GL_SYNC = 30;

/** A timeout option (the module's one rule, ffi/table/values.ts) as the library's nanoseconds. */
function nanos(what: string, ms: unknown): bigint {
  return timeoutNanos(timeoutOption(what, "timeout", ms, Infinity));
}

/**
 * A point in some API's work: a fence, a semaphore and the value that means
 * "finished", an event. Wait on it before touching what that work wrote
 * (an acquire fence) or before reusing what it read (a release fence).
 *
 * `wait()` blocks the calling thread (for Workers and native callers);
 * `await waitAsync()` never blocks the event loop: the library's one waiter
 * thread parks on the point (poll() on its fd, or its API asked with
 * backoff) and wakes this isolate when it is reached.
 *
 * @example
 * ```ts
 * import { CpuFence } from "@gpures/gpures";
 * using fence = CpuFence.create();
 * setTimeout(() => fence.signal(), 1);
 * await fence.waitAsync({ timeout: 1000 });
 * ```
 */
export abstract class SyncPoint<Description = Record<string, unknown>>
  extends GpuResource<Description>
  implements Fence {
  /** Whether the point is reached now (never blocks). */
  get signaled(): boolean {
    const s = native();
    reachedAt ??= Deno.UnsafePointer.of(reached);
    check(s.gpures_sync_poll(this.unsafeHandle, reachedAt));
    return reached[0] === 1;
  }

  /**
   * Blocks this thread until the point is reached, up to `timeout`
   * milliseconds (TimeoutError; the same rule as {@link WaitOptions.timeout}). For Workers and scripts; on a server's main
   * thread use {@link SyncPoint.waitAsync}.
   */
  wait(timeout?: number): void {
    check(lib().gpures_sync_wait(this.unsafeHandle, nanos(`wait on ${this.kind}`, timeout)));
  }

  /** Resolves when the point is reached; rejects with TimeoutError, the signal's reason, DeviceLostError. */
  waitAsync(options: WaitOptions = {}): Promise<void> {
    try {
      const what = `wait on ${this.kind}`;
      optionsBag(what, options);
      const signal = own(options, "signal") as AbortSignal | undefined;
      const timeoutNs = nanos(what, own(options, "timeout"));
      signal?.throwIfAborted();
      if (this.kindId === GL_SYNC) return this.#pollHere(timeoutNs, signal);
      return waitOnThread(this.unsafeHandle, timeoutNs, this.kind, signal, () => this.#why());
    } catch (e) {
      return Promise.reject(e); // refused at once (released, unsupported, a bad timeout): still a rejection
    }
  }

  /**
   * Why an async wait failed, with its field: the waiter thread's message is
   * not this thread's to read, so the point is asked again here (a lost device
   * or a failed command stays failed). undefined when it now answers.
   */
  #why(): Error | undefined {
    if (this.released) return undefined;
    try {
      void this.signaled;
    } catch (e) {
      return e as Error;
    }
    return undefined;
  }

  /**
   * A GL sync is asked where its context is current (this thread), so it is
   * polled here between tasks: 0.1 ms doubling to 4 ms.
   */
  async #pollHere(timeoutNs: bigint, signal?: AbortSignal): Promise<void> {
    const deadline = timeoutNs < 0n ? Infinity : performance.now() + Number(timeoutNs) / 1e6;
    for (let nap = 0.1; !this.signaled; nap = Math.min(nap * 2, 4)) {
      signal?.throwIfAborted();
      if (performance.now() >= deadline) this.wait(0); // throws TimeoutError, named as C names it
      await new Promise((r) => setTimeout(r, nap));
    }
  }

  /**
   * Reaches the point from the CPU: CpuFence and the WebGPU points (their
   * host signals them), and a VkSemaphore timeline (vkSignalSemaphore).
   * Others throw UnsupportedError: their producer's API signals them.
   */
  signal(): void {
    const handle = this.unsafeHandle;
    check(lib().gpures_sync_signal(handle));
    reachedHere(handle);
  }

  /** A new close-on-exec duplicate of the point's fd (the fd-backed kinds), for an importer. */
  dupFd(): number {
    void this.unsafeHandle; // a released point says so first
    if (!(this.constructor as { ownsFds?: boolean }).ownsFds) {
      throw new WrongKindError(`${this.kind} has no fd`, "WRONG_KIND", "index");
    }
    return this.dupFdOf(0);
  }
}

/** Thrown by waits on points the host cannot wait on; re-exported for matching. */
export { UnsupportedError };
export type { WaitOptions };
