// The targets that ship a prebuilt native library (tools/prebuild.ts builds
// them with zig cc; ffi/load/_prebuilt.ts loads the running one).

/** One target with a prebuilt library. */
export interface PrebuiltTarget {
  /** `<Deno.build.os>-<Deno.build.arch>`, and the module's name under prebuilt/. */
  name: string;
  /** Deno.build.os. */
  os: string;
  /** The zig cc target: glibc 2.17 for Linux, so old distributions load it. */
  zigTarget: string;
  /** The library's file name. */
  fileName: string;
}

/** Every target with a prebuilt library, in the order the README lists them. */
export const PREBUILT_TARGETS: readonly PrebuiltTarget[] = [
  {
    name: "linux-x86_64",
    os: "linux",
    zigTarget: "x86_64-linux-gnu.2.17",
    fileName: "libgpures.so",
  },
  {
    name: "linux-aarch64",
    os: "linux",
    zigTarget: "aarch64-linux-gnu.2.17",
    fileName: "libgpures.so",
  },
  {
    name: "darwin-x86_64",
    os: "darwin",
    zigTarget: "x86_64-macos.10.15",
    fileName: "libgpures.dylib",
  },
  {
    name: "darwin-aarch64",
    os: "darwin",
    zigTarget: "aarch64-macos.11.0",
    fileName: "libgpures.dylib",
  },
  {
    name: "windows-x86_64",
    os: "windows",
    zigTarget: "x86_64-windows-gnu",
    fileName: "gpures.dll",
  },
  {
    name: "windows-aarch64",
    os: "windows",
    zigTarget: "aarch64-windows-gnu",
    fileName: "gpures.dll",
  },
];
