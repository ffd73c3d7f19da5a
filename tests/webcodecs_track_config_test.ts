// A demuxed track's WebCodecs codec string and description (trackCodec)
// against the W3C codec registry: exact strings from hand-built avcC, hvcC
// and av1C records and from FFmpeg's profile and level; the records and
// parameter sets real encoders (libx264, libx265, libvpx-vp9, an AV1 encoder)
// make through the ffmpeg CLI, read back by libavformat's MP4 muxer and by
// ffprobe; and hostile extradata, which may give undefined but never throws.
// Every string is one parseCodecString reads. The real-stream cases are
// skipped without the ffmpeg CLI or the encoder.

import assert from "node:assert/strict";
import { hasFfmpeg, runCommand } from "./_support/ffmpeg_cli.ts";
import { avcConfigurationRecord, nalUnits } from "../ffi/webcodecs/avc.ts";
import { parseCodecString } from "../ffi/webcodecs/codec_string.ts";
import { hevcConfigurationRecord } from "../ffi/webcodecs/hevc.ts";
import { trackCodec, type TrackFacts } from "../ffi/webcodecs/track_config.ts";

/** A track libavformat knows little of: 320x240 8-bit 4:2:0, colour unspecified. */
function facts(t: Partial<TrackFacts> & { codec: string }): TrackFacts {
  return {
    extradata: new Uint8Array(0),
    profile: -99,
    level: -99,
    bitDepth: 8,
    width: 320,
    height: 240,
    chroma: "420",
    primaries: 2,
    transfer: 2,
    matrix: 2,
    fullRange: false,
    ...t,
  };
}

const FAMILY: Record<string, string> = {
  h264: "avc",
  hevc: "hevc",
  vp8: "vp8",
  vp9: "vp9",
  av1: "av1",
};

/** trackCodec's string for `t`; a string it makes must be one parseCodecString reads as `t`'s codec. */
function codecOf(t: TrackFacts): string | undefined {
  const codec = trackCodec(t)?.codec;
  if (codec !== undefined) {
    assert.equal(parseCodecString(codec)?.family, FAMILY[t.codec], `parseCodecString(${codec})`);
  }
  return codec;
}

const bytes = (...b: number[]) => new Uint8Array(b);
const START = [0, 0, 0, 1];
/** NAL units as an Annex B stream, 4-byte start codes. */
const annexB = (units: Uint8Array[]) => new Uint8Array(units.flatMap((u) => [...START, ...u]));

// --- the ffmpeg CLI ---

const ENCODERS = hasFfmpeg()
  ? new TextDecoder().decode(
    new Deno.Command("ffmpeg", { args: ["-hide_banner", "-encoders"], stderr: "null" })
      .outputSync().stdout,
  )
  : "";
const hasEncoder = (name: string) => new RegExp(`^ V\\S* ${name} `, "m").test(ENCODERS);
const AV1_ENCODER = ["libaom-av1", "libsvtav1", "librav1e"].find(hasEncoder);

/** Two 320x240 frames of testsrc2 through `encoder` with `options`, in the container `format`. */
function encode(encoder: string, format: string, options: string[] = []): Promise<Uint8Array> {
  // delay_moov: the moov waits for the first packet, so a record an encoder
  // gives only then (libaom's av1C) is in it; empty_moov lets it go to a pipe.
  const mp4 = format === "mp4" ? ["-movflags", "frag_keyframe+empty_moov+delay_moov"] : [];
  return runCommand("ffmpeg", [
    "-hide_banner",
    "-loglevel",
    "error",
    "-nostdin",
    ...["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-frames:v", "2"],
    ...["-c:v", encoder, ...options, ...mp4, "-f", format, "pipe:1"],
  ]);
}

/** The payload of the first `type` box in an MP4 file (the muxer writes it once, in the moov). */
function box(file: Uint8Array, type: string): Uint8Array {
  const fourcc = new TextEncoder().encode(type);
  for (let i = 4; i + 4 <= file.length; i++) {
    if (fourcc.every((c, k) => file[i + k] === c)) {
      const size = new DataView(file.buffer, file.byteOffset).getUint32(i - 4);
      return file.slice(i + 4, i - 4 + size);
    }
  }
  throw new Error(`no ${type} box`);
}

/** What ffprobe (libavcodec's parsers) reads as the stream's level. */
async function probedLevel(file: Uint8Array): Promise<number> {
  const args = ["-v", "error", "-show_entries", "stream=level", "-of", "csv=p=0", "-"];
  return Number(new TextDecoder().decode(await runCommand("ffprobe", args, file)).trim());
}

/** A test that needs the ffmpeg CLI with `encoder`. */
function withEncoder(encoder: string | undefined, name: string, fn: () => Promise<void>): void {
  Deno.test({ name, ignore: encoder === undefined || !hasEncoder(encoder), fn });
}

// --- H.264 ---

/** An avcC of one 4-byte SPS and one 2-byte PPS, profile High, level 3.1. */
const AVCC = bytes(1, 0x64, 0x00, 0x1f, 0xff, 0xe1, 0, 4, 0x67, 0x64, 0, 0x1f, 1, 0, 2, 0x68, 0xee);

Deno.test("h264: an avcC gives avc1. and its bytes 1..3 in lower-case hex, and a copy of it as the description", () => {
  const extradata = AVCC.slice();
  const result = trackCodec(facts({ codec: "h264", extradata }));
  assert.equal(result?.codec, "avc1.64001f");
  assert.deepEqual(result?.description, AVCC);
  assert.notEqual(result?.description?.buffer, extradata.buffer);
  extradata[1] = 0x42;
  assert.equal(result?.description?.[1], 0x64, "a copy, not a view of the file's bytes");
  assert.equal(codecOf(facts({ codec: "h264", extradata: AVCC })), "avc1.64001f");
});

Deno.test("h264: an avcC wins over FFmpeg's profile and level, and may carry the High profiles' trailing fields", () => {
  const extradata = new Uint8Array([...AVCC, 0xfd, 0xf8, 0xf8, 0]);
  const result = trackCodec(facts({ codec: "h264", extradata, profile: 66, level: 10 }));
  assert.equal(result?.codec, "avc1.64001f");
  assert.deepEqual(result?.description, extradata);
});

withEncoder(
  "libx264",
  "h264: the avcC libavformat writes for libx264 High 3.1 gives avc1.64001f; so does the one made from its Annex B",
  async () => {
    const mp4 = await encode("libx264", "mp4", ["-profile:v", "high", "-level", "3.1"]);
    const avcC = box(mp4, "avcC");
    assert.equal(await probedLevel(mp4), 31);
    const fromMp4 = trackCodec(facts({ codec: "h264", extradata: avcC }));
    assert.equal(fromMp4?.codec, "avc1.64001f");
    assert.deepEqual(fromMp4?.description, avcC);

    const stream = await encode("libx264", "h264", ["-profile:v", "high", "-level", "3.1"]);
    const record = avcConfigurationRecord(stream)!;
    assert.equal(codecOf(facts({ codec: "h264", extradata: record })), "avc1.64001f");
  },
);

withEncoder(
  "libx264",
  "h264: Annex B extradata gives the first SPS's profile_idc, constraint flags and level_idc, and no description",
  async () => {
    for (
      const [profile, level, expected] of [
        ["baseline", "3.0", "avc1.42c01e"], // x264's Baseline is Constrained Baseline: set0 and set1
        ["main", "4.0", "avc1.4d4028"],
        ["high", "3.1", "avc1.64001f"],
      ]
    ) {
      const stream = await encode("libx264", "h264", ["-profile:v", profile, "-level", level]);
      const units = nalUnits(stream);
      const sps = units.find((u) => (u[0] & 0x1f) === 7)!;
      const pps = units.find((u) => (u[0] & 0x1f) === 8)!;
      assert.equal(
        `avc1.${[...sps.subarray(1, 4)].map((b) => b.toString(16).padStart(2, "0")).join("")}`,
        expected,
      );
      const result = trackCodec(facts({ codec: "h264", extradata: annexB([sps, pps]) }));
      assert.deepEqual(result, { codec: expected }, profile);
      assert.equal(
        codecOf(facts({ codec: "h264", extradata: stream })),
        expected,
        "the whole stream",
      );
    }
  },
);

Deno.test("h264: in Annex B the SPS is found past other units, after 3- or 4-byte start codes", () => {
  const sei = bytes(0x06, 0x05, 0x01, 0xaa, 0x80);
  const extradata = bytes(
    0,
    0,
    1,
    0x09,
    0xf0,
    0,
    0,
    1,
    ...sei,
    0,
    0,
    0,
    1,
    0x67,
    0x4d,
    0x40,
    0x1e,
    0xab,
  );
  assert.deepEqual(trackCodec(facts({ codec: "h264", extradata })), { codec: "avc1.4d401e" });
});

Deno.test("h264: without a record or an SPS, FFmpeg's profile and level, its Constrained and Intra bits back as constraint_set1 and set3", () => {
  const h264 = (profile: number, level: number, extradata = new Uint8Array(0)) =>
    codecOf(facts({ codec: "h264", profile, level, extradata }));
  assert.equal(h264(100, 40), "avc1.640028");
  assert.equal(h264(77, 31), "avc1.4d001f");
  assert.equal(h264(66, 30), "avc1.42001e");
  assert.equal(h264(66 | 1 << 9, 30), "avc1.42401e", "Constrained Baseline");
  assert.equal(h264(110 | 1 << 11, 40), "avc1.6e1028", "High 10 Intra");
  assert.equal(h264(244, 51), "avc1.f40033");
  assert.equal(h264(100, 40, annexB([bytes(0x68, 0xee)])), "avc1.640028", "Annex B without an SPS");
  assert.equal(h264(100, -99), undefined);
  assert.equal(h264(-99, 40), undefined);
  assert.equal(h264(-99, -99), undefined);
  assert.equal(h264(-99, -99, annexB([bytes(0x68, 0xee)])), undefined);
});

Deno.test("h264: a truncated, overrunning or wrong-version avcC is no record: FFmpeg's profile and level, else undefined", () => {
  const broken = [
    bytes(),
    bytes(1, 0x64, 0x00, 0x1f, 0xff, 0xe1), // no PPS count
    AVCC.slice(0, 10), // inside the SPS
    AVCC.slice(0, 12), // before the PPS count
    AVCC.slice(0, 16), // inside the PPS
    bytes(1, 0x64, 0, 0x1f, 0xff, 0xe1, 0xff, 0xff, 0x67), // an SPS of 65535 bytes in 9
    bytes(1, 0x64, 0, 0x1f, 0xff, 0xe0, 9, 0, 2, 0x68, 0xee), // 9 PPS, 1 there
    bytes(2, 0x64, 0, 0x1f, 0xff, 0xe0, 0), // version 2
    bytes(1, 0, 0, 0x1f, 0xff, 0xe0, 0), // profile_idc 0
    bytes(0, 0, 1, 0x67, 0, 0, 3, 0x1f), // an SPS whose profile_idc is 0
    bytes(0, 0, 1, 0x67, 0x64), // an SPS cut after its profile_idc
    bytes(0xde, 0xad, 0xbe, 0xef, 0, 0, 1, 0x67, 0x64, 0, 0x1f), // no start code first
  ];
  for (const extradata of broken) {
    assert.equal(trackCodec(facts({ codec: "h264", extradata })), undefined, `${extradata}`);
    assert.deepEqual(
      trackCodec(facts({ codec: "h264", extradata, profile: 77, level: 30 })),
      { codec: "avc1.4d001e" },
      `${extradata}`,
    );
  }
});

withEncoder("libx264", "h264: every proper prefix of a real avcC is no record", async () => {
  const record = avcConfigurationRecord(await encode("libx264", "h264"))!;
  assert.ok(trackCodec(facts({ codec: "h264", extradata: record }))?.description);
  for (let n = 0; n < record.length; n++) {
    assert.equal(
      trackCodec(facts({ codec: "h264", extradata: record.slice(0, n) })),
      undefined,
      `${n}`,
    );
  }
});

// --- H.265 ---

/** An hvcC's 23 fixed bytes and no arrays: the general profile_tier_level bytes, then the rest zero. */
function hvcC(
  profileByte: number,
  compat: number,
  constraints: number[],
  level: number,
): Uint8Array {
  const r = new Uint8Array(23);
  r[0] = 1;
  r[1] = profileByte;
  new DataView(r.buffer).setUint32(2, compat);
  r.set(constraints, 6);
  r[12] = level;
  r.set([0xf0, 0, 0xfc, 0xfd, 0xf8, 0xf8, 0, 0, 0x0f, 0], 13);
  return r;
}
/** general_profile_compatibility_flag[j] for each j, flag 0 in the top bit. */
const compatible = (...j: number[]) => j.reduce((v, k) => (v | (0x80000000 >>> k)) >>> 0, 0);

Deno.test("hevc: an hvcC gives hvc1. + profile, compatibility flags bit-reversed in hex, tier and level, and a copy as the description", () => {
  const main = hvcC(0x01, compatible(1, 2), [0xb0, 0, 0, 0, 0, 0], 93);
  const result = trackCodec(facts({ codec: "hevc", extradata: main }));
  assert.equal(result?.codec, "hvc1.1.6.L93.B0");
  assert.deepEqual(result?.description, main);
  assert.notEqual(result?.description?.buffer, main.buffer);
  const hevc = (extradata: Uint8Array) => codecOf(facts({ codec: "hevc", extradata }));
  assert.equal(hevc(main), "hvc1.1.6.L93.B0");
  assert.equal(hevc(hvcC(0x22, compatible(2), [0xb0, 0, 0, 0, 0, 0], 120)), "hvc1.2.4.H120.B0");
  assert.equal(hevc(hvcC(0x03, compatible(3), [0x90, 0, 0, 0, 0, 0], 186)), "hvc1.3.8.L186.90");
});

Deno.test("hevc: only trailing zero constraint bytes are dropped; all zero drops them all", () => {
  const hevc = (constraints: number[]) =>
    trackCodec(facts({ codec: "hevc", extradata: hvcC(1, compatible(1), constraints, 90) }))?.codec;
  assert.equal(hevc([0x90, 0, 0x08, 0, 0, 0]), "hvc1.1.2.L90.90.0.8");
  assert.equal(hevc([1, 2, 3, 4, 5, 0xff]), "hvc1.1.2.L90.1.2.3.4.5.FF");
  assert.equal(hevc([0, 0, 0, 0, 0, 0]), "hvc1.1.2.L90");
});

Deno.test("hevc: general_profile_space 1..3 is the letter A..C before the profile (a string parseCodecString does not take)", () => {
  const spaced = (space: number) =>
    trackCodec(facts({ codec: "hevc", extradata: hvcC(space << 6 | 1, 1, [], 93) }))?.codec;
  assert.deepEqual([1, 2, 3].map(spaced), [
    "hvc1.A1.80000000.L93",
    "hvc1.B1.80000000.L93",
    "hvc1.C1.80000000.L93",
  ]);
});

withEncoder(
  "libx265",
  "hevc: the hvcC libavformat writes for libx265 Main 3.1 gives hvc1.1.6.L93.90; so does the one made from its Annex B",
  async () => {
    const options = ["-x265-params", "level-idc=31:log-level=error"];
    const mp4 = await encode("libx265", "mp4", options);
    const record = box(mp4, "hvcC");
    assert.equal(await probedLevel(mp4), 93);
    const fromMp4 = trackCodec(facts({ codec: "hevc", extradata: record }));
    assert.equal(fromMp4?.codec, "hvc1.1.6.L93.90");
    assert.deepEqual(fromMp4?.description, record);

    const made = hevcConfigurationRecord(await encode("libx265", "hevc", options))!;
    assert.equal(codecOf(facts({ codec: "hevc", extradata: made })), "hvc1.1.6.L93.90");
  },
);

withEncoder(
  "libx265",
  "hevc: Annex B extradata gives hev1. and its SPS's profile, tier and level, and no description",
  async () => {
    const stream = await encode("libx265", "hevc", [
      "-x265-params",
      "level-idc=31:log-level=error",
    ]);
    const sets = nalUnits(stream).filter((u) => [32, 33, 34].includes((u[0] >> 1) & 0x3f));
    assert.deepEqual(trackCodec(facts({ codec: "hevc", extradata: annexB(sets) })), {
      codec: "hev1.1.6.L93.90",
    });
    assert.equal(codecOf(facts({ codec: "hevc", extradata: stream })), "hev1.1.6.L93.90");
    const main10 = await encode("libx265", "hevc", [
      ...["-pix_fmt", "yuv420p10le", "-x265-params", "level-idc=40:no-high-tier=1:log-level=error"],
    ]);
    assert.equal(codecOf(facts({ codec: "hevc", extradata: main10 })), "hev1.2.4.L120.90");
    // Main 4:2:2 10 is range extensions profile 4, its depth and chroma in the
    // constraint bytes: a registry string parseCodecString does not take yet.
    const rext = await encode("libx265", "hevc", [
      ...["-pix_fmt", "yuv422p10le", "-x265-params", "log-level=error"],
    ]);
    assert.equal(
      trackCodec(facts({ codec: "hevc", extradata: rext }))?.codec,
      "hev1.4.10.L60.9D.8",
    );
  },
);

withEncoder(
  "libx265",
  "hevc: every proper prefix of a real hvcC, and Annex B without all three parameter sets, is undefined",
  async () => {
    const stream = await encode("libx265", "hevc", ["-x265-params", "log-level=error"]);
    const record = hevcConfigurationRecord(stream)!;
    for (let n = 0; n < record.length; n++) {
      assert.equal(
        trackCodec(facts({ codec: "hevc", extradata: record.slice(0, n) })),
        undefined,
        `${n}`,
      );
    }
    const units = nalUnits(stream);
    for (const missing of [32, 33, 34]) {
      const rest = units.filter((u) => (u[0] >> 1 & 0x3f) !== missing);
      assert.equal(
        trackCodec(facts({ codec: "hevc", extradata: annexB(rest) })),
        undefined,
        `${missing}`,
      );
    }
  },
);

Deno.test("hevc: a record that does not hold together, or none, gives undefined whatever FFmpeg's profile", () => {
  const main = hvcC(1, compatible(1, 2), [0xb0], 93);
  const withArray = (array: number[]) => {
    const r = new Uint8Array([...main, ...array]);
    r[22] = 1;
    return r;
  };
  const broken = [
    bytes(),
    main.slice(0, 22),
    Object.assign(main.slice(), { 0: 0 }), // version 0
    Object.assign(main.slice(), { 22: 1 }), // an array that is not there
    withArray([0xa0, 0, 1, 0, 9, 0x40, 1]), // a VPS of 9 bytes in 2
    withArray([0xa0, 0, 2, 0, 2, 0x40, 1]), // 2 VPS, 1 there
    bytes(0, 0, 1, 0x40, 1, 0, 0, 1, 0x42, 1), // Annex B, VPS and a cut SPS
    bytes(0xff, 0xff, 0xff, 0xff),
  ];
  for (const extradata of broken) {
    assert.equal(trackCodec(facts({ codec: "hevc", extradata, profile: 1, level: 93 })), undefined);
  }
  assert.equal(
    codecOf(facts({ codec: "hevc", extradata: withArray([0xa0, 0, 1, 0, 2, 0x40, 1]) })),
    "hvc1.1.6.L93.B0",
  );
});

// --- VP8, VP9 ---

Deno.test("vp8: always vp8, without a description", () => {
  assert.deepEqual(trackCodec(facts({ codec: "vp8", extradata: bytes(1, 2, 3) })), {
    codec: "vp8",
  });
  assert.equal(codecOf(facts({ codec: "vp8" })), "vp8");
});

Deno.test("vp9: FFmpeg's profile, level and depth, the short form while 4:2:0 and colour are the defaults or unspecified", () => {
  const vp9 = (t: Partial<TrackFacts>) => codecOf(facts({ codec: "vp9", ...t }));
  assert.equal(vp9({ profile: 0, level: 31 }), "vp09.00.31.08");
  assert.equal(vp9({ profile: 2, level: 41, bitDepth: 10 }), "vp09.02.41.10");
  assert.equal(
    vp9({ profile: 0, level: 10, primaries: 1, transfer: 1, matrix: 1 }),
    "vp09.00.10.08",
  );
  assert.equal(vp9({ profile: 0, level: 52, chroma: undefined }), "vp09.00.52.08");
  assert.deepEqual(trackCodec(facts({ codec: "vp9", extradata: bytes(1, 2) })), {
    codec: "vp09.00.20.08",
  });
});

Deno.test("vp9: other chroma or colour gives every field: chroma 02/03, H.273 code points, unspecified written as 1, range 01", () => {
  const vp9 = (t: Partial<TrackFacts>) =>
    codecOf(facts({ codec: "vp9", profile: 1, level: 30, ...t }));
  assert.equal(vp9({ chroma: "422" }), "vp09.01.30.08.02.01.01.01.00");
  assert.equal(vp9({ chroma: "444", matrix: 0 }), "vp09.01.30.08.03.01.01.00.00");
  assert.equal(vp9({ chroma: "420", fullRange: true }), "vp09.01.30.08.01.01.01.01.01");
  assert.equal(
    vp9({ profile: 2, bitDepth: 10, primaries: 9, transfer: 16, matrix: 9 }),
    "vp09.02.30.10.01.09.16.09.00",
  );
  assert.equal(vp9({ primaries: 6, transfer: 2, matrix: 6 }), "vp09.01.30.08.01.06.01.06.00");
  assert.equal(
    vp9({ primaries: 1000, transfer: -1, matrix: NaN }),
    "vp09.01.30.08",
    "out of range: unknown",
  );
});

Deno.test("vp9: an unknown level is the smallest whose largest picture holds width × height", () => {
  const level = (width: number, height: number, l = -99) =>
    codecOf(facts({ codec: "vp9", profile: 0, level: l, width, height }))?.split(".")[2];
  assert.equal(level(256, 144), "10", "36864 exactly");
  assert.equal(level(257, 144), "11");
  assert.equal(level(320, 240), "20");
  assert.equal(level(640, 360), "21");
  assert.equal(level(854, 480), "30");
  assert.equal(level(1280, 720), "31");
  assert.equal(level(1920, 1080), "40");
  assert.equal(level(3840, 2160), "50");
  assert.equal(level(7680, 4320), "60");
  assert.equal(level(16384, 16384), "62", "past the table: its largest");
  assert.equal(level(0, 0), "10");
  assert.equal(level(NaN, -5), "10");
  assert.equal(level(1920, 1080, 12), "40", "12 is no VP9 level");
  assert.equal(level(1920, 1080, 0), "40");
  assert.equal(level(320, 240, 62), "62", "a known level wins over the size");
});

Deno.test("vp9: an unknown profile is the one depth and chroma need; a depth VP9 has no profile for is undefined", () => {
  const profile = (bitDepth: number, chroma: TrackFacts["chroma"], p = -99) =>
    codecOf(facts({ codec: "vp9", profile: p, level: 31, bitDepth, chroma }))?.split(".")[1];
  assert.equal(profile(8, "420"), "00");
  assert.equal(profile(8, undefined), "00");
  assert.equal(profile(8, "444"), "01");
  assert.equal(profile(10, "420"), "02");
  assert.equal(profile(12, "422"), "03");
  assert.equal(profile(8, "420", 7), "00", "7 is no VP9 profile");
  assert.equal(profile(9, "420"), undefined);
  assert.equal(profile(16, "420"), undefined);
});

withEncoder(
  "libvpx-vp9",
  "vp9: for libvpx-vp9 4:2:2 10-bit, the level, profile and depth agree with the vpcC libavformat writes",
  async () => {
    const vpcC = box(
      await encode("libvpx-vp9", "mp4", ["-pix_fmt", "yuv422p10le", "-deadline", "realtime"]),
      "vpcC",
    );
    // A FullBox: version 1 and flags, then profile, level, depth(4) chroma(3) range(1), colour.
    const [profile, level, packed, primaries, transfer, matrix] = vpcC.subarray(4, 10);
    assert.deepEqual([profile, level, packed >> 4, (packed >> 1) & 7], [3, 20, 10, 2]);
    const codec = codecOf(facts({
      codec: "vp9",
      bitDepth: 10,
      chroma: "422",
      primaries,
      transfer,
      matrix,
      fullRange: (packed & 1) === 1,
    }));
    assert.equal(codec, "vp09.03.20.10.02.01.01.01.00");
  },
);

// --- AV1 ---

const av1 = (extradata: Uint8Array, t: Partial<TrackFacts> = {}) =>
  trackCodec(facts({ codec: "av1", extradata, ...t }));

Deno.test("av1: an av1C gives av01.profile.level+tier.depth, and a copy of it as the description", () => {
  const record = bytes(0x81, 0x08, 0x0c, 0x00);
  const result = av1(record);
  assert.equal(result?.codec, "av01.0.08M.08");
  assert.deepEqual(result?.description, record);
  assert.notEqual(result?.description?.buffer, record.buffer);
  const string = (b1: number, b2: number) =>
    codecOf(facts({ codec: "av1", extradata: bytes(0x81, b1, b2, 0, 0x0a, 0x0b) }));
  assert.equal(string(0x00 | 13, 0x80 | 0x0c), "av01.0.13H.08");
  assert.equal(string(0x00 | 31, 0x40 | 0x0c), "av01.0.31M.10");
  assert.equal(string(0x40 | 5, 0x60 | 0x0c), "av01.2.05M.12", "twelve_bit counts in profile 2");
  assert.equal(string(0x00 | 5, 0x60 | 0x0c), "av01.0.05M.10", "and nowhere else");
});

Deno.test("av1: monochrome, other subsampling or sample position, or colour gives the long form; colour comes from FFmpeg", () => {
  const string = (b2: number, t: Partial<TrackFacts> = {}) =>
    codecOf(facts({ codec: "av1", extradata: bytes(0x81, 0x04, b2, 0), ...t }));
  assert.equal(
    string(0x4e, { primaries: 9, transfer: 16, matrix: 9 }),
    "av01.0.04M.10.0.112.09.16.09.0",
  );
  assert.equal(string(0x1c), "av01.0.04M.08.1.110.01.01.01.0");
  assert.equal(string(0x00), "av01.0.04M.08.0.000.01.01.01.0");
  assert.equal(string(0x08), "av01.0.04M.08.0.100.01.01.01.0");
  assert.equal(string(0x0d), "av01.0.04M.08.0.111.01.01.01.0");
  assert.equal(string(0x0c, { fullRange: true }), "av01.0.04M.08.0.110.01.01.01.1");
  assert.equal(
    string(0x0c, { primaries: 1, transfer: 13, matrix: 1 }),
    "av01.0.04M.08.0.110.01.13.01.0",
  );
  assert.equal(string(0x0c, { primaries: 1, transfer: 1, matrix: 1 }), "av01.0.04M.08");
});

withEncoder(
  AV1_ENCODER,
  `av1: the av1C libavformat writes for ${
    AV1_ENCODER ?? "an AV1 encoder"
  } gives the level ffprobe reads, main tier, 8 and 10 bits`,
  async () => {
    const speed = AV1_ENCODER === "libaom-av1" ? ["-cpu-used", "8"] : [];
    for (const [pixFmt, depth] of [["yuv420p", "08"], ["yuv420p10le", "10"]]) {
      const mp4 = await encode(AV1_ENCODER!, "mp4", [...speed, "-pix_fmt", pixFmt]);
      const record = box(mp4, "av1C");
      const level = String(await probedLevel(mp4)).padStart(2, "0");
      const result = av1(record);
      assert.equal(result?.codec, `av01.0.${level}M.${depth}`);
      assert.deepEqual(result?.description, record);
      assert.equal(
        codecOf(facts({ codec: "av1", extradata: record })),
        `av01.0.${level}M.${depth}`,
      );
    }
  },
);

Deno.test("av1: without a usable av1C, FFmpeg's profile, level and depth, main tier, subsampling from the pixel format", () => {
  const string = (t: Partial<TrackFacts>, extradata = new Uint8Array(0)) =>
    codecOf(facts({ codec: "av1", extradata, ...t }));
  assert.equal(string({ profile: 0, level: 8 }), "av01.0.08M.08");
  assert.equal(string({ profile: 0, level: 13, bitDepth: 10 }), "av01.0.13M.10");
  assert.equal(
    string({ profile: 2, level: 31, bitDepth: 12, chroma: "422" }),
    "av01.2.31M.12.0.100.01.01.01.0",
  );
  assert.equal(string({ profile: 1, level: 8, chroma: "444" }), "av01.1.08M.08.0.000.01.01.01.0");
  assert.equal(string({ profile: 0, level: 8, chroma: "400" }), "av01.0.08M.08.1.110.01.01.01.0");
  assert.equal(
    string({ profile: 0, level: 8, primaries: 9, transfer: 18, matrix: 9 }),
    "av01.0.08M.08.0.110.09.18.09.0",
  );
  const broken = [
    bytes(0x81, 0x08, 0x0c), // 3 bytes
    bytes(0x01, 0x08, 0x0c, 0), // marker bit clear
    bytes(0x82, 0x08, 0x0c, 0), // version 2
    bytes(0x81, 0x68, 0x0c, 0), // profile 3, reserved
    bytes(0x81, 0x18, 0x0c, 0), // seq_level_idx 24, reserved
  ];
  for (const extradata of broken) {
    assert.deepEqual(
      av1(extradata, { profile: 0, level: 5 }),
      { codec: "av01.0.05M.08" },
      `${extradata}`,
    );
    assert.equal(av1(extradata), undefined, `${extradata}`);
  }
  assert.equal(string({ profile: 0, level: -99 }), undefined);
  assert.equal(string({ profile: -99, level: 8 }), undefined);
  assert.equal(string({ profile: 3, level: 8 }), undefined);
  assert.equal(string({ profile: 0, level: 27 }), undefined);
  assert.equal(string({ profile: 0, level: 8, bitDepth: 9 }), undefined);
});

// --- the rest ---

Deno.test("codecs the registry has no string for give undefined", () => {
  for (const codec of ["mpeg4", "prores", "mjpeg", "theora", "", "H264", "avc1"]) {
    assert.equal(
      trackCodec(facts({ codec, profile: 1, level: 30, extradata: AVCC })),
      undefined,
      codec,
    );
  }
});

/** The shapes of the strings trackCodec makes. */
const REGISTRY_SHAPE = new RegExp(
  "^(?:avc1\\.[0-9a-f]{6}" +
    "|(?:hvc1|hev1)\\.[ABC]?\\d{1,2}\\.[0-9A-F]{1,8}\\.[LH]\\d{1,3}(?:\\.[0-9A-F]{1,2}){0,6}" +
    "|vp8|vp09\\.\\d\\d\\.\\d\\d\\.\\d\\d(?:(?:\\.\\d\\d){5})?" +
    "|av01\\.[012]\\.\\d\\d[MH]\\.(?:08|10|12)(?:\\.[01]\\.[01]{2}[0-3]\\.\\d\\d\\.\\d\\d\\.\\d\\d\\.[01])?)$",
);

Deno.test("hostile extradata and numbers never throw, and give undefined or a registry-shaped string", () => {
  let seed = 0x2545f491;
  const random = () => {
    seed ^= seed << 13, seed ^= seed >>> 17, seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
  const numbers = [-99, -1, 0, 1, 2, 3, 9, 10, 31, 93, 255, 256, 1e9, NaN, Infinity, 0.5];
  const heads = [[], [1], [0x81], [0, 0, 1], [0, 0, 0, 1], [1, 0x64, 0, 0x1f, 0xff, 0xe1]];
  let described = 0;
  for (let i = 0; i < 20_000; i++) {
    const tail = Array.from({ length: Math.floor(random() * 48) }, () =>
      // Mostly small bytes, so that lengths and counts often nearly fit.
      random() < 0.5 ? Math.floor(random() * 4) : Math.floor(random() * 256));
    const extradata = new Uint8Array([...pick(heads), ...tail]);
    const t = facts({
      codec: pick(["h264", "hevc", "vp8", "vp9", "av1"]),
      extradata,
      profile: pick(numbers),
      level: pick(numbers),
      bitDepth: pick([8, 10, 12, 9, 0, NaN]),
      width: pick(numbers),
      height: pick(numbers),
      chroma: pick(["420", "422", "444", "400", undefined] as const),
      primaries: pick(numbers),
      transfer: pick(numbers),
      matrix: pick(numbers),
      fullRange: random() < 0.5,
    });
    const result = trackCodec(t);
    if (result === undefined) continue;
    assert.match(result.codec, REGISTRY_SHAPE, `${t.codec} ${extradata}`);
    if (result.description) {
      described++;
      assert.deepEqual(result.description, extradata);
      assert.notEqual(result.description.buffer, extradata.buffer);
    }
  }
  assert.ok(described > 100, `only ${described} records were taken`);
});
