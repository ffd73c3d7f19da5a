// WgpuTexture: a GPUTexture of Deno's WebGPU, which exposes no native
// pointer: the handle records the texture's description and this isolate
// holds the texture under the handle's token.

import type * as T from "../gen/types.ts";
import { own } from "../table/values.ts";
import { type CreateOptions, createResource, registerKind, TOKEN } from "./create.ts";
import { holdingsOf } from "../events/keep_alive.ts";
import { GpuResourceError, InvalidHandleError } from "../errors.ts";
import { GpuResource } from "./gpu_resource.ts";

/** {@link WgpuTexture.create}'s descriptor. */
export interface WgpuTextureCreateDesc {
  /** A texture of Deno's WebGPU; held until the last release. */
  texture: GPUTexture;
}

type TextureShape = Pick<
  GPUTexture,
  | "width"
  | "height"
  | "depthOrArrayLayers"
  | "mipLevelCount"
  | "sampleCount"
  | "dimension"
  | "format"
  | "usage"
>;

function readShape(t: GPUTexture): TextureShape {
  return {
    width: t.width,
    height: t.height,
    depthOrArrayLayers: t.depthOrArrayLayers,
    mipLevelCount: t.mipLevelCount,
    sampleCount: t.sampleCount,
    dimension: t.dimension,
    format: t.format,
    usage: t.usage,
  };
}

/**
 * A GPUTexture's attributes, read once per texture: they never change, and
 * each read crosses into the runtime (eight of them cost more than a create).
 */
const shapes = new WeakMap<GPUTexture, TextureShape>();
function shapeOf(texture: GPUTexture): TextureShape {
  let shape = shapes.get(texture);
  if (!shape) shapes.set(texture, shape = readShape(texture));
  return shape;
}

/**
 * A texture of Deno's WebGPU. WebGPU exposes no native pointer, so the handle
 * records the texture's description and this isolate holds the texture.
 */
export class WgpuTexture extends GpuResource<T.WgpuTextureDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 20;
  static {
    registerKind(this);
  }
  /** Wraps a `GPUTexture`. */
  static create(desc: WgpuTextureCreateDesc, options?: CreateOptions): WgpuTexture {
    const texture =
      (desc !== null && typeof desc === "object" ? own(desc, "texture") : undefined) as GPUTexture;
    const GPUTextureClass =
      (globalThis as { GPUTexture?: abstract new () => GPUTexture }).GPUTexture;
    if (GPUTextureClass && !(texture instanceof GPUTextureClass)) {
      throw new InvalidHandleError(
        "Cannot create WgpuTexture: texture must be a GPUTexture",
        "INVALID_VALUE",
        "texture",
      );
    }
    const shape = GPUTextureClass ? shapeOf(texture) : readShape(texture);
    return createResource(
      this,
      {
        token: TOKEN,
        width: shape.width,
        height: shape.height,
        depthOrArrayLayers: shape.depthOrArrayLayers,
        mipLevelCount: shape.mipLevelCount,
        sampleCount: shape.sampleCount,
        dimension: shape.dimension,
        format: shape.format,
        usage: shape.usage,
      },
      options,
      [texture],
      undefined,
      true,
    );
  }

  /** The `GPUTexture`; only in the isolate that created the handle. */
  get texture(): GPUTexture {
    const holds = holdingsOf(this.describe().token);
    if (!holds) {
      throw new GpuResourceError(
        "Cannot read texture of WgpuTexture: the GPUTexture lives in the isolate that created the handle",
        "UNAVAILABLE",
        "texture",
      );
    }
    return holds[0] as GPUTexture;
  }
}
