// The shape of a prebuilt/<target>.ts module: tools/prebuild.ts writes and
// checks them, ffi/load/_prebuilt.ts loads the running target's.

/** What a prebuilt/<target>.ts module exports. */
export interface PrebuiltModule {
  /** `<os>-<arch>`. */
  target: string;
  /** The library's file name. */
  fileName: string;
  /** Its size, uncompressed. */
  size: number;
  /** The sha256 of the uncompressed library, hex. */
  sha256: string;
  /** The sha256 of the C sources it was built from. */
  sourceHash: string;
  /** The gzip-compressed library, base64; "" when the build failed. */
  gzipBase64: string;
  /** Why there is no library (the build failed); "" when there is one. */
  buildError: string;
}
