// DmaBufHandle frames as EGLImages and GL textures of the
// application's EGL context (EGL_EXT_image_dma_buf_import), cached by buffer
// (native/src/interop/egl.c), and what an EGL display can import.

import { integerOption, optionsBag, own, refuse } from "../table/values.ts";
import { check, native } from "../load/native.ts";
import type { DmaBufHandle } from "../kinds/dma_buf.ts";
import type { FormatCap, PointerArg } from "./device.ts";
import { Importer, importerOut, pointerArg, queryCaps } from "./device.ts";

/** What {@link EglImporter.create} takes. */
export interface EglImporterOptions {
  /** An initialized EGLDisplay with EGL_EXT_image_dma_buf_import; its context must be current. */
  display: Deno.PointerValue | bigint | number;
  /** eglGetProcAddress of the EGL the application uses (default: the system libEGL.so.1's). */
  getProcAddress?: Deno.PointerValue | bigint | number;
  /** Imports cached at most, the least recently used freed first (default 64). */
  capacity?: number;
}

/** One frame's import: the importer's, valid while the frame is held. Do not delete them. */
export interface EglImport {
  /** GL texture name, in the importer's context, whose storage is the frame's memory. */
  texture: number;
  /** "texture2d": GL_TEXTURE_2D (RGB formats); "external": GL_TEXTURE_EXTERNAL_OES (YUV, sampled as RGB). */
  target: "texture2d" | "external";
  /** The EGLImage. */
  image: Deno.PointerValue;
  /** True when it came from the cache (the frame's buffer was imported before). */
  cached: boolean;
}

const GL_TEXTURE_2D = 0x0de1;
const IMPORTED_SIZE = 24;
const DESC_SIZE = 32;

function capacityArg(capacity: unknown): number {
  return integerOption("create an EglImporter", "capacity", capacity, 0xffff_ffff);
}

/**
 * Turns DmaBufHandle frames into EGLImages bound to GL textures of the EGL
 * context that was current when it was made; every call needs that context
 * current on the calling thread (else UnsupportedError naming "context").
 * An import is made once per buffer: a {@link FramePool}'s frames reuse their
 * slot's import, which is freed when the slot gets new memory or the pool
 * closes (at the next call) or when the importer closes.
 *
 * @example
 * ```ts ignore
 * using importer = EglImporter.create({ display });
 * const { texture, target } = importer.import(frame);
 * gl.bindTexture(target === "external" ? GL_TEXTURE_EXTERNAL_OES : GL_TEXTURE_2D, texture);
 * ```
 */
export class EglImporter extends Importer {
  readonly #out = new Uint8Array(IMPORTED_SIZE);
  readonly #view = new DataView(this.#out.buffer);

  private constructor(pointer: Deno.PointerObject) {
    super(pointer);
  }

  /** Throws UnsupportedError when no context of `display` is current, or it cannot import. */
  static create(options: EglImporterOptions): EglImporter {
    const what = "create an EglImporter";
    if (optionsBag(what, options) === undefined) refuse(what, "options", "is missing");
    const capacity = capacityArg(own(options, "capacity"));
    const display = pointerArg(own(options, "display") as PointerArg, "display");
    const getProcAddress = pointerArg(
      own(options, "getProcAddress") as PointerArg,
      "getProcAddress",
    );
    const desc = new Uint8Array(DESC_SIZE);
    const view = new DataView(desc.buffer);
    view.setUint32(0, DESC_SIZE, true);
    view.setBigUint64(8, BigInt(Deno.UnsafePointer.value(display)), true);
    view.setBigUint64(16, BigInt(Deno.UnsafePointer.value(getProcAddress)), true);
    view.setUint32(24, capacity, true);
    const out = new BigUint64Array(1);
    return new EglImporter(importerOut(native().gpures_egl_importer_create(desc, out), out));
  }

  /**
   * The frame's texture: imported now, or from the cache. Throws WrongKindError
   * for a frame that is not a DmaBufHandle, UnsupportedError naming "format" or
   * "modifier" for one the display does not import, InvalidHandleError naming
   * the field EGL refused ("planes[0].stride").
   */
  import(frame: DmaBufHandle): EglImport {
    const out = this.#out;
    const view = this.#view;
    view.setUint32(0, IMPORTED_SIZE, true);
    check(native().gpures_egl_import(this.pointer, frame.unsafeHandle, out));
    return {
      texture: view.getUint32(8, true),
      target: view.getUint32(12, true) === GL_TEXTURE_2D ? "texture2d" : "external",
      image: Deno.UnsafePointer.create(view.getBigUint64(16, true)),
      cached: view.getUint32(4, true) !== 0,
    };
  }
}

/**
 * What an EGL display imports (eglQueryDmaBufFormatsEXT, eglQueryDmaBufModifiersEXT):
 * a row per format gpures names and modifier, in dmaBuf memory; `externalOnly`
 * rows are sampled as GL_TEXTURE_EXTERNAL_OES only. maxWidth/maxHeight are
 * GL_MAX_TEXTURE_SIZE when a context of the display is current, else 0.
 */
export function eglCaps(display: Deno.PointerValue | bigint | number): FormatCap[] {
  const pointer = pointerArg(display, "display");
  const s = native();
  return queryCaps((out, capacity, count) => s.gpures_caps_egl(pointer, out, capacity, count));
}
