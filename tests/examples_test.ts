// The README's media-server demo (examples/frame_server.ts) keeps working:
// a producer process and a consumer process, every frame checked end to end,
// nothing left behind. Short runs; the demo's own defaults are longer.

import assert from "node:assert/strict";

const linux = Deno.build.os === "linux";
const demo = new URL("../examples/frame_server.ts", import.meta.url).pathname;

async function hasFfmpeg(): Promise<boolean> {
  try {
    return (await new Deno.Command("ffmpeg", { args: ["-version"], stdout: "null" }).output())
      .success;
  } catch {
    return false;
  }
}
const ffmpeg = linux && await hasFfmpeg();

/** Runs the demo with `args` and --json; its report (the last line of stdout). */
async function run(...args: string[]): Promise<Record<string, unknown>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--expose-gc", demo, "--json", ...args],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).output();
  const text = new TextDecoder();
  const stdout = text.decode(out.stdout).trim();
  assert.equal(out.code, 0, `the demo failed:\n${stdout}\n${text.decode(out.stderr)}`);
  return JSON.parse(stdout.slice(stdout.lastIndexOf("\n") + 1));
}

/** Runs examples/<name> with `args` and --json; its report (the last line of stdout). */
async function runExample(name: string, ...args: string[]): Promise<Record<string, unknown>> {
  const example = new URL(`../examples/${name}`, import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", example, "--json", ...args],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).output();
  const stdout = new TextDecoder().decode(out.stdout).trim();
  assert.equal(out.code, 0, `${name} failed:\n${stdout}\n${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(stdout.slice(stdout.lastIndexOf("\n") + 1));
}

function assertClean(report: Record<string, unknown>, frames: number): void {
  assert.equal(report.received, frames);
  assert.equal(report.intact, frames, "every frame's checksum matches on the other side");
  assert.equal(report.dropped, 0);
  assert.equal(report.handlesAfter, 0, "no handle is left in the producer");
  assert.equal(report.consumerHandlesAfter, 0, "nor in the consumer");
  assert.equal(report.mappingsAfter, 0, "the pool's mappings go with it");
}

Deno.test({
  name: "the frame server moves NV12 frames to another process intact, and leaves nothing behind",
  ignore: !linux,
  async fn() {
    assertClean(await run("--frames", "30", "--size", "320x240"), 30);
  },
});

Deno.test({
  name: "the frame server's producer waits for a slow consumer instead of overwriting (P010)",
  ignore: !linux,
  async fn() {
    const report = await run(
      "--frames",
      "16",
      "--size",
      "160x96",
      "--format",
      "P010",
      "--slots",
      "2",
      "--slow-consumer-ms",
      "10",
    );
    assertClean(report, 16);
    assert.ok((report.poolWaits as number) > 0, "the producer had to wait for its slots");
  },
});

Deno.test({
  name: "the frame server decodes a real stream with ffmpeg into the pool and encodes it back",
  // Needs ffmpeg on PATH: `apt-get install ffmpeg` (.ci/run installs it).
  ignore: !ffmpeg,
  async fn() {
    const report = await run("--frames", "12", "--size", "320x240", "--ffmpeg");
    assertClean(report, 12);
    assert.ok(report.encoded, "the consumer's output was encoded");
  },
});

Deno.test({
  name: "the transcode example decodes in one process and encodes in another, copying no byte",
  ignore: !ffmpeg,
  async fn() {
    const out = await Deno.makeTempFile({ suffix: ".mkv" });
    const report = await runExample(
      "transcode.ts",
      "--frames",
      "20",
      "--size",
      "320x240",
      "--out",
      out,
    );
    const probe = await new Deno.Command("ffprobe", {
      args: [
        "-v",
        "error",
        "-count_frames",
        "-show_entries",
        "stream=codec_name,nb_read_frames",
        "-of",
        "csv=p=0",
        out,
      ],
      stdout: "piped",
    }).output();
    await Deno.remove(out);
    assert.equal(
      new TextDecoder().decode(probe.stdout).trim(),
      "h264,20",
      "the muxed file holds every frame",
    );
    assert.equal(report.decoded, 20);
    assert.equal(report.received, 20, "every decoded frame crossed as a handle");
    assert.equal(report.encoded, 20);
    assert.ok((report.bytes as number) > 0);
    assert.equal(report.decoderCopiedBytes, 0);
    assert.equal(report.encoderCopiedBytes, 0);
    assert.equal(report.handlesAfter, 0);
    assert.equal(report.encoderHandlesAfter, 0);
  },
});

Deno.test({
  name:
    "the fan-out example serves a recorder, an inference process and a preview at their own paces",
  ignore: !linux,
  async fn() {
    const report = await runExample("fan_out.ts", "--frames", "120", "--size", "320x240");
    const [recorder, inference, preview] = report.consumers as Record<string, number>[];
    assert.equal(recorder.frames, 120, "the block consumer got every frame");
    assert.ok(recorder.wrong === 0 && inference.wrong === 0 && preview.wrong === 0);
    assert.ok(
      preview.frames < 120 && preview.dropped > 0,
      "the slow preview got the newest frames only",
    );
    assert.equal(report.slotWaits, 0, "the producer never waited for a slot");
  },
});
