// Where a GPU pool's frames keep their planes (native/src/interop/vulkan_pool.c
// and cuda_pool.c lay slots out the same way), known before the pool exists.

import type { PixelFormatName } from "../gen/types.ts";
import { type FrameLayout, PixelFormat, type PlaneLayout } from "../map/pixel_format.ts";

/**
 * The layout of a GPU pool's frames (VkOpaqueFd, CudaVmmFd), as the library
 * lays slots out: plane 0's rows padded to `rowAlign`, planes after each
 * other, each plane's pitch plane 0's scaled by its row bytes.
 */
export function opaqueLayout(
  format: PixelFormatName,
  width: number,
  height: number,
  rowAlign: number,
): FrameLayout {
  const row = PixelFormat.layout(format, width, 1, { rowAlign: 1 }).planes[0].stride;
  const rowPitch = Math.ceil(row / rowAlign) * rowAlign;
  const info = PixelFormat.info(format)!;
  const p0 = info.planes[0];
  let offset = 0;
  const planes: PlaneLayout[] = info.planes.map((p, i) => {
    const extent = PixelFormat.planeExtent(format, i, width, height);
    const stride = Math.ceil(
      (rowPitch * p.bytesPerSample * p0.hsub) / (p0.bytesPerSample * p.hsub),
    );
    const plane = {
      offset,
      stride,
      width: extent.width,
      height: extent.height,
      size: stride * extent.height,
    };
    offset += plane.size;
    return plane;
  });
  return { size: offset, planes };
}
