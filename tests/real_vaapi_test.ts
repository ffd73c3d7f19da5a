// VA-API: a VaapiSurface of a real surface, when a VA driver and a render
// node exist. Neither exists on CPU-only machines (no software VA driver is
// packaged), so there the test prints why it skips.

import assert from "node:assert/strict";
import { liveHandles, VaapiSurface } from "../mod.ts";
import { libc } from "./_support/libc.ts";

const RENDER_NODE = "/dev/dri/renderD128";

interface Found {
  reason: string;
  va?: Deno.DynamicLibrary<typeof vaSymbols>;
  fd?: number;
  display?: Deno.PointerValue;
}

function probe(): Found {
  try {
    Deno.statSync(RENDER_NODE);
  } catch {
    return { reason: `no DRM render node (${RENDER_NODE})` };
  }
  try {
    const va = Deno.dlopen("libva-drm.so.2", vaSymbols);
    const fd = libc.open(new TextEncoder().encode(`${RENDER_NODE}\0`), 2, /* O_RDWR */ 0);
    if (fd < 0) return { reason: `${RENDER_NODE} cannot be opened` };
    const display = va.symbols.vaGetDisplayDRM(fd);
    const version = new Int32Array(2);
    const status = va.symbols.vaInitialize(display, version.subarray(0, 1), version.subarray(1));
    if (status !== 0) return { reason: `vaInitialize failed (${status}): no usable VA driver` };
    return { reason: "", va, fd, display };
  } catch (e) {
    return { reason: `libva-drm.so.2 is missing (${(e as Error).message.split("\n")[0]})` };
  }
}

const vaSymbols = {
  vaGetDisplayDRM: { parameters: ["i32"], result: "pointer" },
  vaInitialize: { parameters: ["pointer", "buffer", "buffer"], result: "i32" },
  vaCreateSurfaces: {
    parameters: ["pointer", "u32", "u32", "u32", "buffer", "u32", "pointer", "u32"],
    result: "i32",
  },
  vaDestroySurfaces: { parameters: ["pointer", "buffer", "i32"], result: "i32" },
  vaTerminate: { parameters: ["pointer"], result: "i32" },
} as const;

const found = probe();
if (found.reason) console.log(`VA-API test skips: ${found.reason}`);

Deno.test({
  name: "VaapiSurface wraps a real VA surface and its display",
  ignore: Boolean(found.reason),
  fn() {
    const va = found.va!.symbols;
    const display = found.display!;
    const surfaces = new Uint32Array(1);
    assert.equal(va.vaCreateSurfaces(display, 1, /* YUV420 */ 64, 64, surfaces, 1, null, 0), 0);
    const before = liveHandles();
    const handle = VaapiSurface.create({ surface: surfaces[0], display });
    const d = handle.describe();
    assert.equal(d.surface, surfaces[0]);
    assert.equal(d.display, BigInt(Deno.UnsafePointer.value(display)));
    handle.release();
    assert.equal(liveHandles(), before);
    va.vaDestroySurfaces(display, surfaces, 1);
    va.vaTerminate(display);
    libc.close(found.fd!);
  },
});
