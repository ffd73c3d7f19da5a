// The importer tests (EGL, Vulkan) each negotiate a dma-buf format with the consumer's caps and make a one-slot pool in it.

import assert from "node:assert/strict";
import { FramePool } from "../../mod.ts";
import {
  type FormatCap,
  framePoolCaps,
  negotiate,
  type Negotiated,
} from "../../ffi/interop/device.ts";

/** What a FramePool and `consumer` agree on at `extent`; it must come in a dma-buf. */
export function negotiateDmaBuf(
  consumer: readonly FormatCap[],
  extent: { width: number; height: number },
): Negotiated {
  const pick = negotiate(framePoolCaps(), consumer, extent);
  assert.equal(pick.memory, "dmaBuf");
  return pick;
}

/** A one-slot pool of `pick`'s format and size, its rows aligned to `rowAlign`. */
export function poolFor(pick: Negotiated, rowAlign: number = pick.rowAlign): FramePool {
  return FramePool.create({
    format: pick.format,
    width: pick.width,
    height: pick.height,
    rowAlign,
    slots: 1,
  });
}
