// The floor of the cross-process figures: a C program's one-way wake between
// two processes over SOCK_SEQPACKET (native/bench/wake_floor.c), measured in
// the same run as the figures it divides. Built by `deno task bench`, or:
//   cmake --build build --target gpures_wake_floor

/** One-way wake times of the C floor, in µs. */
export interface WakeFloor {
  rounds: number;
  p50: number;
  p90: number;
  p99: number;
}

function buildDir(): string {
  try {
    return Deno.env.get("GPURES_BUILD_DIR") ?? "build"; // as bench/run.ts builds it
  } catch {
    return "build"; // no --allow-env
  }
}
const root = new URL("../", import.meta.url);
const binary = new URL(`${buildDir()}/native/bench/gpures_wake_floor`, root).pathname;

/** Runs the floor once; null (and says why on stderr) when it is not built. */
export async function measureWakeFloor(rounds = 2000): Promise<WakeFloor | null> {
  try {
    const { code, stdout, stderr } = await new Deno.Command(binary, { args: [String(rounds)] })
      .output();
    if (code !== 0) throw new Error(new TextDecoder().decode(stderr));
    return JSON.parse(new TextDecoder().decode(stdout)) as WakeFloor;
  } catch (e) {
    console.error(
      `no C wake floor (${binary}: ${e instanceof Error ? e.message : e}); ` +
        "build it with: cmake --build build --target gpures_wake_floor",
    );
    return null;
  }
}
