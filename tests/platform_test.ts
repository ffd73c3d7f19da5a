// Platform gating: which kinds exist on which OS, answered before any native
// call, and the same answer in TypeScript and in C.

import assert from "node:assert/strict";
import { DmaBufHandle, GpuResource, UnsupportedPlatformError } from "../mod.ts";
import { KINDS } from "../ffi/gen/kinds.ts";
import { lib } from "../ffi/load/load.ts";
import { libraryFileName } from "../ffi/load/load.ts";
import { setOsForTesting } from "../ffi/table/platform.ts";

// SECTION 3 of the contract, written out independently of the generated table.
const ALL = "linux windows darwin android freebsd netbsd openbsd aix solaris illumos".split(" ");
const NOT_WINDOWS = ALL.filter((os) => os !== "windows");
const EXPECTED: Record<string, string[]> = {
  D3D11Texture: ["windows"],
  D3D12Resource: ["windows"],
  D3D12BufferHandle: ["windows"],
  VkImage: ALL,
  VkBufferHandle: ALL,
  VkOpaqueFd: NOT_WINDOWS,
  CudaPtr2D: ["linux", "windows"],
  CudaBufferHandle: ["linux", "windows"],
  CudaSurface: ["linux", "windows"],
  OpenClMem: ALL,
  MetalTextureHandle: ["darwin"],
  MetalBufferHandle: ["darwin"],
  GlTextureHandle: ALL,
  GlBufferHandle: ALL,
  DmaBufHandle: ["linux", "android"],
  VaapiSurface: ["linux"],
  CpuBytes: ALL,
  CpuPlanes: ALL,
  CpuSharedSlot: ALL,
  WgpuTexture: ALL,
};

function onOs<T>(os: string, body: () => T): T {
  setOsForTesting(os);
  try {
    return body();
  } finally {
    setOsForTesting(undefined);
  }
}

Deno.test("GpuResource.isSupported() agrees with the C library's gpures_kind_supported for every kind", () => {
  const s = lib();
  for (const kind of KINDS) {
    const wgpuOnly = kind.name === "WgpuTexture" && !("gpu" in navigator);
    if (wgpuOnly) continue;
    assert.equal(
      GpuResource.isSupported(kind.id),
      s.gpures_kind_supported(kind.id) === 1,
      kind.name,
    );
  }
});

for (const os of ALL) {
  Deno.test(`GpuResource.isSupported() follows the platform table on "${os}"`, () => {
    for (const [name, platforms] of Object.entries(EXPECTED)) {
      const expected = platforms.includes(os) && (name !== "WgpuTexture" || "gpu" in navigator);
      assert.equal(
        onOs(os, () => GpuResource.isSupported(name as never)),
        expected,
        `${name} on ${os}`,
      );
    }
  });
}

Deno.test("GpuResource.isSupported() takes a kind id or a name", () => {
  assert.equal(GpuResource.isSupported(17), GpuResource.isSupported("CpuBytes"));
  assert.throws(() => GpuResource.isSupported("NoSuchKind" as never), {
    code: "INVALID_VALUE",
    field: "kind",
  });
});

Deno.test("DmaBufHandle.create() on Windows names the OS and where the kind exists", () => {
  onOs("windows", () =>
    assert.throws(
      () => DmaBufHandle.create({} as never),
      (e: unknown) => {
        assert.ok(e instanceof UnsupportedPlatformError);
        assert.equal(e.code, "UNSUPPORTED_PLATFORM");
        assert.match(
          e.message,
          /DmaBufHandle does not exist on "windows"; it exists on "linux", "android"/,
        );
        return true;
      },
    ));
});

Deno.test("the library's file name follows the OS", () => {
  assert.equal(libraryFileName("linux"), "libgpures.so");
  assert.equal(libraryFileName("android"), "libgpures.so");
  assert.equal(libraryFileName("freebsd"), "libgpures.so");
  assert.equal(libraryFileName("darwin"), "libgpures.dylib");
  assert.equal(libraryFileName("windows"), "gpures.dll");
});
