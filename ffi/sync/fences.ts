// The sync kinds whose class makes its own primitive: CpuFence (an eventfd
// gpures opens) and WgpuSubmission (signalled when a GPUQueue's work is done).

import type * as T from "../gen/types.ts";
import {
  assertSupported,
  createResource,
  type FdCreateOptions,
  registerKind,
} from "../kinds/create.ts";
import { check, native } from "../load/native.ts";
import { GpuResource } from "../kinds/gpu_resource.ts";
import { SyncPoint } from "./sync_point.ts";

type Wire = Record<string, unknown>;
const wire = (desc: object): Wire => desc as Wire;
const out = new BigUint64Array(1);

/**
 * A fence that CPU code signals: an eventfd, so it crosses processes with a
 * frame (linux, android). `create()` with no descriptor opens a new one.
 */
export class CpuFence extends SyncPoint<T.CpuFenceDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 33;
  /** Its handle owns an fd (dupFd() gives a copy). */
  static readonly ownsFds = true;
  static {
    registerKind(this);
  }
  /** A new fence over a new eventfd; or, given `desc.fd`, over that eventfd (duplicated unless `takeOwnership`). */
  static create(desc?: T.CpuFenceDesc, options?: FdCreateOptions): CpuFence {
    if (desc !== undefined) return createResource(this, wire(desc), options);
    assertSupported(this.kindId); // UnsupportedPlatformError off Linux, before any native call
    check(native().gpures_cpu_fence_new(out));
    return GpuResource.fromRaw(out[0], this);
  }
}

/**
 * A WebGPU queue's submitted work (linux, android): `fromQueue()` makes a
 * point that is reached when `queue.onSubmittedWorkDone()` resolves, so code
 * that never touches WebGPU (a Worker, native code, another process) can wait
 * for the GPU's work.
 */
export class WgpuSubmission extends SyncPoint<T.WgpuSubmissionDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 31;
  /** Its handle owns an fd (dupFd() gives a copy). */
  static readonly ownsFds = true;
  static {
    registerKind(this);
  }
  /** Wraps an eventfd that its host signals (duplicated unless `takeOwnership`). */
  static create(desc: T.WgpuSubmissionDesc, options?: FdCreateOptions): WgpuSubmission {
    return createResource(this, wire(desc), options);
  }
  /** The work submitted to `queue` so far; `submission` is the caller's count of it. */
  static fromQueue(queue: GPUQueue, submission: number | bigint = 0n): WgpuSubmission {
    using fence = CpuFence.create();
    const point = this.create({ fd: fence.dupFd(), submission: BigInt(submission) }, {
      takeOwnership: true,
    });
    // The signal needs a reference of its own: the caller may release theirs before the GPU ends.
    const held = point.clone();
    queue.onSubmittedWorkDone().then(
      () => held.signal(),
      () => {}, // a lost device never signals: waiters time out, as they would on the GPU
    ).finally(() => held.release());
    return point;
  }
}
