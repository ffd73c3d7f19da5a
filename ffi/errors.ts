// The errors gpures throws. `code` is the C status name ("STALE",
// "INVALID_VALUE", ...); `field` names the offending descriptor field by path
// ("planes[1].offset"), or is "" when no field is to blame.

/** The base of every error gpures throws. */
export class GpuResourceError extends Error {
  /** The status name, as C's `gpures_status_name()` gives it. */
  readonly code: string;
  /** The field at fault, by path, or "". */
  readonly field: string;

  /**
   * Creates an error; gpures makes them, users match on them.
   *
   * @param message What failed and why.
   * @param code The status name.
   * @param field The field at fault, or "".
   * @param options `cause`, when wrapping another error.
   */
  constructor(message: string, code: string, field = "", options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.field = field;
  }
}

/** A null handle, null pointer, zero size or out-of-range value. */
export class InvalidHandleError extends GpuResourceError {}

/** The handle was released: it can no longer be used. */
export class ReleasedError extends GpuResourceError {}

/** The handle is of another kind than the operation needs. */
export class WrongKindError extends GpuResourceError {}

/** The kind does not exist on the running platform. */
export class UnsupportedPlatformError extends GpuResourceError {}

/** The native library could not be found, loaded or trusted. */
export class LibraryLoadError extends GpuResourceError {}

/** A wait ran out of time: no pool slot came free, no fence signalled. */
export class TimeoutError extends GpuResourceError {}

/** A wait was cancelled (an AbortSignal, a closed pool). */
export class CancelledError extends GpuResourceError {}

/** The device behind a SyncPoint was lost (VK_ERROR_DEVICE_LOST, a sticky CUDA error). */
export class DeviceLostError extends GpuResourceError {}

/** The operation does not apply to this object: a fence the host cannot wait on, an API not installed. */
export class UnsupportedError extends GpuResourceError {}

/** The object belongs to another device than the one importing it (compared by UUID, LUID, ...). */
export class DeviceMismatchError extends GpuResourceError {}

const classes: Record<string, typeof GpuResourceError> = {
  NULL_HANDLE: InvalidHandleError,
  NULL_POINTER: InvalidHandleError,
  ZERO_SIZE: InvalidHandleError,
  INVALID_VALUE: InvalidHandleError,
  WRONG_KIND: WrongKindError,
  STALE: ReleasedError,
  UNSUPPORTED_PLATFORM: UnsupportedPlatformError,
  ABI_MISMATCH: LibraryLoadError,
  TIMED_OUT: TimeoutError,
  CANCELLED: CancelledError,
  DEVICE_LOST: DeviceLostError,
  UNSUPPORTED: UnsupportedError,
  DEVICE_MISMATCH: DeviceMismatchError,
};

/** The error class for a status name. */
export function errorFor(code: string, message: string, field = ""): GpuResourceError {
  const Class = classes[code] ?? GpuResourceError;
  return new Class(message, code, field);
}
