// DmaBufHandle: the generated class, plus a pixel format name in place of a
// DRM fourcc (the C descriptor keeps the fourcc; the name is converted here
// through the library's format table).

import type * as T from "../gen/types.ts";
import { createResource, type FdCreateOptions, registerKind } from "./create.ts";
import { own } from "../table/values.ts";
import { InvalidHandleError } from "../errors.ts";
import { FdResource } from "./fd_resource.ts";
import { PixelFormat } from "../map/pixel_format.ts";

/** {@link DmaBufHandle.create}'s descriptor: a DRM `fourcc`, or a pixel `format` name. */
export type DmaBufHandleCreateDesc =
  & Omit<T.DmaBufHandleDesc, "fourcc">
  & ({ fourcc: number; format?: undefined } | {
    /** A pixel format with a DRM fourcc ("NV12", "P010LE", "RgbaU8", ...). */
    format: T.PixelFormatName | number;
    fourcc?: undefined;
  });

/** 1..4 owned fds and a DRM layout. */
export class DmaBufHandle extends FdResource<T.DmaBufHandleDescription> {
  /** The kind's stable id. */
  static override readonly kindId = 15;
  static {
    registerKind(this);
  }
  /**
   * Makes a handle; it duplicates `desc`'s fds, or adopts them with
   * `takeOwnership: true`. A fourcc the pixel format table knows (given, or
   * from `format`) is held to its format: plane count, strides, planes inside
   * their objects and apart from each other.
   */
  static create(desc: DmaBufHandleCreateDesc, options?: FdCreateOptions): DmaBufHandle {
    const format = own(desc, "format");
    if (format === undefined) {
      return createResource(this, desc as unknown as Record<string, unknown>, options);
    }
    return createResource(this, withFourcc(desc, format), options);
  }
}

/** The descriptor with `format` replaced by its DRM fourcc. */
function withFourcc(desc: object, format: unknown): Record<string, unknown> {
  if (own(desc, "fourcc") !== undefined) {
    throw refused("give fourcc or format, not both");
  }
  if (typeof format !== "string" && typeof format !== "number") {
    throw refused(`format must be a pixel format name, not ${typeof format}`);
  }
  const info = PixelFormat.info(format as T.PixelFormatName); // names "format" when unknown
  if (!info.drmFourcc) throw refused(`${info.name} has no DRM fourcc`);
  const field = (key: string) => own(desc, key);
  return {
    fds: field("fds"),
    fourcc: info.drmFourcc,
    modifier: field("modifier"),
    width: field("width"),
    height: field("height"),
    planes: field("planes"),
  };
}

function refused(why: string): InvalidHandleError {
  return new InvalidHandleError(`Cannot create DmaBufHandle: ${why}`, "INVALID_VALUE", "format");
}
