// Making a handle from a JS descriptor: platform gating, the keep-alive
// token, encoding (ffi/table/codec.ts), the create call, and the wrapper of the
// kind's class. Every kind's create() ends here.

import { codecOf } from "../table/codec.ts";
import { own } from "../table/values.ts";
import { addRecord, dropToken, eventQueue, takeToken } from "../events/keep_alive.ts";
import { KINDS } from "../gen/kinds.ts";
import { check, native, optionsAt, optionView, scratchAt, u64Out } from "../load/native.ts";
import { currentOs, existsOn, platformsOf, webGpuAvailable } from "../table/platform.ts";
import { InvalidHandleError, UnsupportedPlatformError } from "../errors.ts";

/** Options every `create` takes. */
export interface CreateOptions {
  /**
   * Held until the handle's last release, wherever it happens (another clone,
   * native code, a Worker). Its `release()` then runs exactly once; its
   * `markConsumed()` runs each time a consumer calls
   * the handle's `markConsumed()`.
   */
  keepAlive?: unknown;
}

/** Options of the kinds that own file descriptors. */
export interface FdCreateOptions extends CreateOptions {
  /**
   * true: the handle adopts the fds and closes them on its last release.
   * false (the default): the handle duplicates them and the caller keeps its own.
   * On failure the fds stay the caller's either way.
   */
  takeOwnership?: boolean;
}

/** The key only gpures's own code holds: wrappers are made here, or by clone()/fromRaw(). */
export const INTERNAL: unique symbol = Symbol("gpures.internal");
/** Stands for the keep-alive token in a wire descriptor; createResource fills it in. */
export const TOKEN: unique symbol = Symbol("gpures.token");

/** JS buffers a handle aliases, with the descriptor field each came from. */
export interface Aliases {
  /** The ArrayBuffers (not views) whose memory the handle names. */
  buffers: readonly unknown[];
  fields: readonly string[];
}

/**
 * A kind's class as create and fromRaw() see it. It names no GpuResource, so
 * that this file sits below gpu_resource.ts, whose classes it constructs.
 */
export type ResourceClass<R extends object = object> = {
  new (key: symbol, handle: bigint, posts?: boolean, aliases?: Aliases): R;
  readonly kindId: number;
};
const classes: (ResourceClass | undefined)[] = [];

/** Called once by each kind's class so fromRaw() can find it. */
export function registerKind(cls: ResourceClass): void {
  classes[cls.kindId] = cls;
}

/** The class of a kind id, once its module was loaded. */
export function classOf(kindId: number): ResourceClass | undefined {
  return classes[kindId];
}

function unsupported(name: string, detail: string): UnsupportedPlatformError {
  return new UnsupportedPlatformError(
    `Cannot create ${name}: ${detail}`,
    "UNSUPPORTED_PLATFORM",
  );
}

/** The OS each kind was last found to exist on, so the table is read once per OS. */
const existsOnCache: (string | undefined)[] = [];

/** Refuses a kind that cannot exist here, before any native call. */
export function assertSupported(kindId: number): void {
  const kind = KINDS[kindId - 1];
  const os = currentOs();
  if (existsOnCache[kindId] !== os && !existsOn(kind, os)) {
    throw unsupported(
      kind.name,
      `${kind.name} does not exist on "${currentOs()}"; it exists on ${
        platformsOf(kind).map((os) => `"${os}"`).join(", ")
      }`,
    );
  }
  existsOnCache[kindId] = os;
  if (kind.name === "WgpuTexture" && !webGpuAvailable()) {
    throw unsupported(kind.name, "WebGPU is not available (navigator.gpu is missing)");
  }
}

const NO_HOLDS: unknown[] = [];

/**
 * Creates a handle of `cls`'s kind from a wire descriptor (field names as
 * the C table has them). `holds` are objects the handle aliases; they stay
 * referenced until the last release. `aliases` are the JS buffers whose
 * memory the handle names, so that one detached later is caught.
 * `built`: the class made `desc` itself from the caller's own properties.
 */
export function createResource<R extends object>(
  cls: ResourceClass<R>,
  desc: Record<string, unknown>,
  options: FdCreateOptions | undefined,
  holds: unknown[] = NO_HOLDS,
  aliases?: Aliases,
  built = false,
): R {
  assertSupported(cls.kindId);
  if (typeof desc !== "object" || desc === null || Array.isArray(desc)) {
    throw new InvalidHandleError(
      `Cannot create ${KINDS[cls.kindId - 1].name}: the descriptor must be an object, not ${
        desc === null ? "null" : Array.isArray(desc) ? "an array" : typeof desc
      }`,
      "INVALID_VALUE",
      "desc",
    );
  }
  const keepAlive = own(options, "keepAlive");
  const token = keepAlive !== undefined || holds.length ? takeToken() : 0;
  const codec = codecOf(cls.kindId);
  const bytes = codec.begin();
  try {
    // A kind whose descriptor names its host object (WgpuTexture) stores the token itself.
    // Only this module's own descriptor objects carry TOKEN, so it is filled in place.
    // Its high half is this isolate's queue, so no other isolate mistakes it for one of its own.
    const s = native();
    if ("token" in desc && desc.token === TOKEN) {
      desc.token = (BigInt(eventQueue(s)) << 32n) | BigInt(token);
    }
    codec.encode(desc, bytes, built);
    const adopt = own(options, "takeOwnership");
    if (adopt !== undefined && typeof adopt !== "boolean") {
      throw new InvalidHandleError(
        `Cannot create ${
          KINDS[cls.kindId - 1].name
        }: options.takeOwnership must be a boolean, not ${typeof adopt}`,
        "INVALID_VALUE",
        "options.takeOwnership",
      );
    }
    const takeOwnership = adopt ? 1 : 0;
    let optionsPointer: Deno.PointerValue = null; // none: no keep-alive, fds duplicated
    if (token || takeOwnership) {
      optionView.setUint32(4, takeOwnership | consumedFlag(keepAlive), true);
      const queue = token ? eventQueue(s) : 0;
      optionView.setUint32(32, queue, true);
      optionView.setUint32(40, token, true);
      optionView.setUint32(44, queue, true); // the isolate's mark, as in the token above
      optionsPointer = optionsAt;
    }
    check(s.gpures_create_at(cls.kindId, codec.pointerOf(bytes), optionsPointer, scratchAt!));
  } catch (e) {
    if (token) dropToken(token);
    throw e;
  } finally {
    codec.end(bytes);
  }
  if (token) addRecord(token, keepAlive, holds);
  return new cls(INTERNAL, u64Out[0], token !== 0, aliases);
}

/**
 * GPURES_CREATE_NO_CONSUMED_EVENTS unless the keep-alive listens for
 * markConsumed: then a consumer's markConsumed() can tell it reached nobody.
 */
export function consumedFlag(keepAlive: unknown): number {
  const listens = typeof (keepAlive as { markConsumed?: unknown } | null)?.markConsumed ===
    "function";
  return listens ? 0 : 2;
}

/** The field of the first aliased buffer that was detached since create, or undefined. */
export function detachedField(aliases: Aliases): string | undefined {
  for (let i = 0; i < aliases.fields.length; i++) {
    if ((aliases.buffers[i] as ArrayBuffer).detached) return aliases.fields[i];
  }
  return undefined;
}
