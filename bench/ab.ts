// Compares two checkouts of gpures in one process, so both share one FFI
// floor and one machine state: alternating blocks of 20000 operations, each
// side's best of 15. For a change whose cost is below the noise between runs.
//
//   deno run -A bench/ab.ts <before checkout> <after checkout>
//
// Each checkout is loaded with its own build (<checkout>/build/libgpures.so).

const [before, after] = Deno.args;
if (!before || !after) throw new Error("usage: deno run -A bench/ab.ts <before> <after>");
type Module = typeof import("../mod.ts");
async function open(root: string): Promise<Module> {
  const m: Module = await import(new URL(`file://${root}/mod.ts`).href);
  m.load({ path: `${root}/build/libgpures.so` });
  return m;
}
const A = await open(before), B = await open(after);
const pixels = new Uint8Array(64 * 64 * 4);
const uuid = new Uint8Array(16);
const cases: Record<string, (m: Module) => () => void> = {
  "clone().release()": (m) => {
    const h = m.VkBufferHandle.create({ buffer: 1n, size: 16n });
    return () => h.clone().release();
  },
  "VkBufferHandle create+describe+release": (m) => () => {
    const h = m.VkBufferHandle.create({ buffer: 1n, size: 16n });
    h.describe();
    h.release();
  },
  "GlTextureHandle create+describe+release": (m) => () => {
    const h = m.GlTextureHandle.create({ name: 3, target: "Texture2D", internalFormat: "Rgba8" });
    h.describe();
    h.release();
  },
  "VkImage create+describe+release": (m) => () => {
    const h = m.VkImage.create({
      image: 0x1234n,
      device: 0x10n,
      deviceUuid: uuid,
      rowPitch: 256,
      vkFormat: 37,
      width: 64,
      height: 64,
    });
    h.describe();
    h.release();
  },
  "VkImage naming its device by pointer objects": (m) => {
    // As a Vulkan binding hands them out: VkDevice, VkInstance, VkPhysicalDevice as pointers.
    const [device, instance, physicalDevice] = [1, 2, 3].map((i) =>
      Deno.UnsafePointer.create(BigInt(i) << 12n)
    );
    return () => {
      const h = m.VkImage.create({
        image: 0x1234n,
        device,
        instance,
        physicalDevice,
        rowPitch: 256,
      });
      h.describe();
      h.release();
    };
  },
  "CpuBytes create+describe+release": (m) => () => {
    const h = m.CpuBytes.create({ data: pixels, rowPitch: 256, format: "RgbaU8" });
    h.describe();
    h.release();
  },
  "describe()": (m) => {
    const h = m.VkBufferHandle.create({ buffer: 1n, size: 16n });
    return () => h.describe();
  },
};
function time(fn: () => void, n: number): number {
  const start = performance.now();
  for (let i = 0; i < n; i++) fn();
  return (performance.now() - start) * 1000 / n;
}
for (const [name, make] of Object.entries(cases)) {
  const a = make(A), b = make(B);
  time(a, 20000);
  time(b, 20000);
  let bestA = Infinity, bestB = Infinity;
  for (let r = 0; r < 15; r++) {
    bestA = Math.min(bestA, time(a, 20000));
    bestB = Math.min(bestB, time(b, 20000));
  }
  const change = ((bestB / bestA - 1) * 100).toFixed(0);
  console.log(`${name.padEnd(42)} ${bestA.toFixed(3)} µs -> ${bestB.toFixed(3)} µs (${change}%)`);
}
