// GL kinds: names in a context, with the model crate's simple() constructors.

import type * as T from "../gen/types.ts";
import { type CreateOptions, createResource, registerKind } from "./create.ts";
import { GpuResource } from "./gpu_resource.ts";

type Wire = Record<string, unknown>;
const wire = (desc: object): Wire => desc as Wire;

/** A GL texture name. */
export class GlTextureHandle extends GpuResource<T.GlTextureHandleDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 13;
  static {
    registerKind(this);
  }
  /** Wraps a texture name of a context (the current one when `context` is absent). */
  static create(desc: T.GlTextureHandleDesc, options?: CreateOptions): GlTextureHandle {
    return createResource(this, wire(desc), options);
  }
  /** A `Texture2D` of unspecified format in the current context, without keep-alive. */
  static simple(name: number): GlTextureHandle {
    return this.create({ name, target: "Texture2D", internalFormat: "Unspecified" });
  }
}

/** A GL buffer name. */
export class GlBufferHandle extends GpuResource<T.GlBufferHandleDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 14;
  static {
    registerKind(this);
  }
  /** Wraps a buffer name of a context. */
  static create(desc: T.GlBufferHandleDesc, options?: CreateOptions): GlBufferHandle {
    return createResource(this, wire(desc), options);
  }
  /** An `ArrayBuffer`-target buffer of `size` bytes in the current context. */
  static simple(name: number, size: number | bigint): GlBufferHandle {
    return this.create({ name, target: "ArrayBuffer", size });
  }
}
