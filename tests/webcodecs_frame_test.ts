// WebCodecs' VideoFrame, EncodedVideoChunk and VideoColorSpace behave as the
// W3C spec and web-platform-tests say: frames built from bytes in every
// format gpures lays out (odd sizes included) or from other frames, with the
// spec's TypeError, DataCloneError, InvalidStateError and NotSupportedError
// cases; copyTo() and allocationSize() give the exact layouts and bytes, and
// convert I420 to RGB within 2 of BT.601 / BT.709. gpures' own additions: a
// VideoFrame over a pool's DmaBufHandle takes its timing from the handle's
// metadata and holds a clone of it. Pool memory is memfds: Linux only.

import assert from "node:assert/strict";
import {
  type DmaBufHandle,
  EncodedVideoChunk,
  type EncodedVideoChunkInit,
  FramePool,
  VideoColorSpace,
  type VideoColorSpaceInit,
  VideoFrame,
  type VideoFrameBufferInit,
  type VideoFrameCopyToOptions,
  type VideoFrameInit,
  type VideoPixelFormat,
} from "../mod.ts";

const linux = Deno.build.os === "linux";
/** Frames a test made, closed when it ends. */
const open: VideoFrame[] = [];

function frameTest(name: string, fn: () => void | Promise<void>): void {
  const closing = () => open.splice(0).forEach((f) => f.close());
  Deno.test({ name, ignore: !linux, fn: () => Promise.resolve().then(fn).finally(closing) });
}

const dom = (name: string) => (e: unknown) => e instanceof DOMException && e.name === name;
const typeError = (e: unknown) => e instanceof TypeError;
const seq = (n: number, from = 1) => Array.from({ length: n }, (_, i) => from + i);
const L = (offset: number, stride: number) => ({ offset, stride });
const R = (x: number, y: number, width: number, height: number) => ({ x, y, width, height });
const rectOf = (r: DOMRectReadOnly | null) => r && R(r.x, r.y, r.width, r.height);
const REC709 = { primaries: "bt709", transfer: "bt709", matrix: "bt709", fullRange: false };
const SRGB = { primaries: "bt709", transfer: "iec61966-2-1", matrix: "rgb", fullRange: true };
const NULLS = { primaries: null, transfer: null, matrix: null, fullRange: null };

type Rest = Partial<VideoFrameBufferInit>;
/** A buffer init: format, coded size, timestamp 0 and the rest given. */
const init = (format: VideoPixelFormat, w: number, h: number, rest: Rest = {}) =>
  ({ format, codedWidth: w, codedHeight: h, timestamp: 0, ...rest }) as VideoFrameBufferInit;
/** "I420:12 NV12:12": formats, each with the bytes of its packed 4x2 frame. */
const sized = (list: string) =>
  list.split(" ").map((s) => s.split(":")).map(([f, n]) => [f as VideoPixelFormat, +n] as const);

/** Frames closed at the end of the test: over bytes, over another frame. */
const keep = (frame: VideoFrame) => (open.push(frame), frame);
const make = (data: ArrayBuffer | ArrayBufferView, init: VideoFrameBufferInit) =>
  keep(new VideoFrame(data, init));
const from = (base: VideoFrame, init?: VideoFrameInit) => keep(new VideoFrame(base, init));
/** WPT's I420 4x2 of the copyTo tests: Y 1..8, U 9 10, V 11 12. */
const i420 = (rest: Rest = {}) => make(new Uint8Array(seq(12)), init("I420", 4, 2, rest));
const nv12 = () => make(new Uint8Array(seq(12)), init("NV12", 4, 2));
const pattern = (n: number) => new Uint8Array(n).map((_, i) => (i * 7 + 3) & 0xff);
const rgb = (format: VideoPixelFormat, w: number, h: number, data = pattern(w * h * 4)) =>
  make(data, init(format, w, h));

/** copyTo into a fresh zeroed buffer of allocationSize: the bytes and the layout. */
async function copied(frame: VideoFrame, options: VideoFrameCopyToOptions = {}) {
  const out = new Uint8Array(frame.allocationSize(options));
  const layout = await frame.copyTo(out, options);
  return { bytes: [...out], layout };
}
/** That copyTo(options) writes `bytes` and returns `layout`. */
async function copies(f: VideoFrame, o: VideoFrameCopyToOptions, bytes: number[], layout: unknown) {
  assert.deepEqual(await copied(f, o), { bytes, layout });
}

// ------------------------------------------------------- construction from bytes

frameTest("an I420 frame from bytes echoes its init and defaults to REC 709", async () => {
  const data = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 1, 2]);
  const frame = make(data, init("I420", 4, 2, { timestamp: -5 }));
  assert.equal(frame.format, "I420");
  const f = frame;
  assert.deepEqual([f.codedWidth, f.codedHeight, f.displayWidth, f.displayHeight], [4, 2, 4, 2]);
  assert.deepEqual([rectOf(f.visibleRect), rectOf(f.codedRect)], [R(0, 0, 4, 2), R(0, 0, 4, 2)]);
  assert.deepEqual([f.timestamp, f.duration, f.rotation, f.flip], [-5, null, 0, false]);
  assert.deepEqual(frame.colorSpace.toJSON(), REC709);
  assert.deepEqual(nv12().colorSpace.toJSON(), REC709);
  assert.deepEqual((await copied(frame)).bytes, [...data]);
});

frameTest("RGB frames from bytes default to sRGB; data may be a Uint32Array or SAB", async () => {
  for (const format of ["RGBA", "RGBX", "BGRA", "BGRX"] as const) {
    const frame = make(new Uint32Array([0x04030201, 0x08070605]), init(format, 2, 1));
    assert.equal(frame.format, format);
    assert.deepEqual(frame.colorSpace.toJSON(), SRGB);
    assert.deepEqual((await copied(frame)).bytes, seq(8));
  }
  const sab = new SharedArrayBuffer(16);
  new Uint8Array(sab).set(seq(16));
  for (const data of [sab, new Uint8Array(sab)]) {
    const frame = make(data as unknown as ArrayBuffer, init("RGBA", 2, 2));
    assert.deepEqual((await copied(frame)).bytes, seq(16));
  }
});

frameTest("a given colorSpace is kept as given: unset members stay null", () => {
  const cs = i420({ colorSpace: { primaries: "smpte170m", matrix: "bt470bg" } }).colorSpace;
  assert.deepEqual(cs.toJSON(), { ...NULLS, primaries: "smpte170m", matrix: "bt470bg" });
  assert.deepEqual(i420({ colorSpace: NULLS }).colorSpace.toJSON(), NULLS);
});

frameTest("every YUV format gpures lays out constructs at 4x2 from packed bytes", () => {
  const list = "I420:12 I420P10:24 I420P12:24 I422:16 I422P10:32 I422P12:32 I444:24 " +
    "I444P10:48 I444P12:48 I444AP10:64 I444AP12:64 NV12:12";
  for (const [format, size] of sized(list)) {
    const frame = make(new Uint8Array(size), init(format, 4, 2));
    assert.equal(frame.format, format);
    assert.equal(frame.allocationSize(), size, format);
    const short = () => new VideoFrame(new Uint8Array(size - 1), init(format, 4, 2));
    assert.throws(short, typeError, format);
  }
});

frameTest("alpha YUV formats with no gpures layout throw NotSupportedError", () => {
  const list = "I420A:20 I420AP10:40 I420AP12:40 I422A:24 I422AP10:48 I422AP12:48 I444A:32";
  for (const [format, size] of sized(list)) {
    const make = () => new VideoFrame(new Uint8Array(size), init(format, 4, 2));
    assert.throws(make, dom("NotSupportedError"), format);
  }
});

frameTest("odd sizes construct: I420 and NV12 3x3 from 17 bytes, chroma rounded up", async () => {
  const frame = make(new Uint8Array(seq(17)), init("I420", 3, 3));
  assert.deepEqual(rectOf(frame.visibleRect), R(0, 0, 3, 3));
  await copies(frame, {}, seq(17), [L(0, 3), L(9, 2), L(13, 2)]);
  const nv12 = make(new Uint8Array(seq(17)), init("NV12", 3, 3)); // UV: 2 pairs x 2 rows
  await copies(nv12, {}, seq(17), [L(0, 3), L(9, 4)]);
  const small = i420({ visibleRect: R(0, 0, 1, 1) });
  assert.deepEqual(rectOf(small.visibleRect), R(0, 0, 1, 1));
  assert.deepEqual([small.displayWidth, small.displayHeight], [1, 1]);
  assert.equal(small.allocationSize(), 3);
});

frameTest("invalid buffer inits throw TypeError synchronously", () => {
  const data = new Uint8Array(seq(12));
  const rects = [R(100, 100, 1, 1), R(0, 0, 0, 2), R(0, 0, 4, 0), R(0, 0, -100, -100)];
  const bad: Record<string, unknown>[] = [
    ...[{ format: "ABCD" }, { format: undefined }, { timestamp: undefined }, { timestamp: NaN }],
    ...[{ codedWidth: undefined }, { codedHeight: undefined }, { codedWidth: 0 }],
    ...[{ codedHeight: 0 }, { codedWidth: 2 ** 32 - 1, codedHeight: 2 ** 32 - 1 }],
    ...[{ duration: -1 }, { duration: Infinity }, { rotation: NaN }],
    ...[...rects, R(1, 0, 2, 2), R(0, 1, 2, 1)].map((visibleRect) => ({ visibleRect })),
    ...[{ displayWidth: 2 ** 32 }, { displayWidth: 4 }, { displayWidth: 0, displayHeight: 2 }],
    { displayWidth: 2 ** 32 - 1, displayHeight: 2 ** 32 },
    ...[[L(0, 1), L(8, 2), L(10, 2)], [L(0, 4), L(8, 1), L(10, 2)]].map((layout) => ({ layout })),
    ...[[L(0, 4), L(8, 2), L(10, 1)], [L(0, 4), L(4, 2), L(10, 2)]].map((layout) => ({ layout })),
    { colorSpace: { matrix: "bogus" } },
  ];
  for (const over of bad) {
    const i = { ...init("I420", 4, 2), ...over } as VideoFrameBufferInit;
    assert.throws(() => new VideoFrame(data, i), typeError, JSON.stringify(over));
  }
  assert.throws(() => new VideoFrame(data.slice(0, 8), init("I420", 4, 2)), typeError);
  assert.throws(() => new VideoFrame(data.slice(0, 8), init("NV12", 4, 2)), typeError);
  for (const layout of [[L(0, 1), L(8, 4)], [L(0, 4), L(8, 1)]]) {
    assert.throws(() => new VideoFrame(data, init("NV12", 4, 2, { layout })), typeError);
  }
  const dup = init("I420", 4, 2, { transfer: [data.buffer, data.buffer] }); // size checked first
  assert.throws(() => new VideoFrame(data.slice(0, 8), dup), typeError);
});

frameTest("transfer detaches every listed buffer once the bytes are taken", async () => {
  const data = new Uint8Array(seq(16));
  const unused = new ArrayBuffer(123);
  const frame = make(data, init("RGBA", 2, 2, { transfer: [data.buffer, unused] }));
  assert.deepEqual([data.length, unused.byteLength], [0, 0]);
  assert.deepEqual((await copied(frame)).bytes, seq(16));
  const ab = new Uint8Array(seq(22, 0)).buffer;
  const offset = make(new Uint8Array(ab, 6), init("RGBA", 2, 2, { transfer: [ab] }));
  assert.equal(ab.byteLength, 0);
  assert.deepEqual((await copied(offset)).bytes, seq(16, 6));
});

frameTest("a detached or repeated transfer buffer throws DataCloneError, data intact", () => {
  const data = new Uint8Array(seq(16));
  const detached = new ArrayBuffer(4);
  detached.transfer();
  for (const transfer of [[data.buffer, detached], [data.buffer, data.buffer]]) {
    const make = () => new VideoFrame(data, init("RGBA", 2, 2, { transfer }));
    assert.throws(make, dom("DataCloneError"));
    assert.equal(data.length, 16);
  }
});

frameTest("rotation rounds to the nearest 90 (ties up) and turns the display size", () => {
  const frame = make(new Uint8Array(32), init("RGBX", 4, 2, { rotation: -315, flip: true }));
  assert.deepEqual([frame.rotation, frame.flip], [90, true]);
  assert.deepEqual(rectOf(frame.visibleRect), R(0, 0, 4, 2));
  assert.deepEqual([frame.displayWidth, frame.displayHeight], [2, 4]);
  const parsed = [[44, 0], [45, 90], [-45, 0], [-46, 270], [-135, 270], [405, 90], [180, 180]];
  for (const [given, want] of parsed) {
    const f = make(new Uint8Array(4), init("RGBX", 1, 1, { rotation: given }));
    assert.equal(f.rotation, want, `rotation ${given}`);
  }
});

// ------------------------------------------------------- construction from a frame

frameTest("a frame from a frame copies everything without an init", () => {
  const colorSpace = { primaries: "bt470bg", matrix: "smpte170m", fullRange: true } as const;
  const base = i420({ timestamp: 10, duration: 15, displayWidth: 8, displayHeight: 4, colorSpace });
  const copy = from(base);
  assert.equal(copy.format, "I420");
  assert.deepEqual([copy.timestamp, copy.duration], [10, 15]);
  assert.deepEqual([copy.codedWidth, copy.codedHeight], [4, 2]);
  assert.deepEqual([copy.displayWidth, copy.displayHeight], [8, 4]);
  assert.deepEqual(copy.colorSpace.toJSON(), { ...NULLS, ...colorSpace });
  const longer = from(base, { duration: 1234 });
  assert.deepEqual([longer.timestamp, longer.duration], [10, 1234]);
  const both = from(base, { timestamp: 1234, duration: 456 });
  assert.deepEqual([both.timestamp, both.duration], [1234, 456]);
});

frameTest("a visibleRect crop keeps the coded size and scales the display size", async () => {
  const base = i420();
  const crop = from(base, { visibleRect: R(0, 0, 2, 2) });
  assert.deepEqual([crop.codedWidth, crop.codedHeight], [4, 2]);
  assert.deepEqual(rectOf(crop.visibleRect), R(0, 0, 2, 2));
  assert.deepEqual([crop.displayWidth, crop.displayHeight], [2, 2]);
  const right = R(2, 0, 2, 2);
  const wide = from(i420({ displayWidth: 8, displayHeight: 2 }), { visibleRect: right });
  assert.deepEqual([wide.displayWidth, wide.displayHeight], [4, 2]);
  const tall = from(i420({ displayWidth: 8, displayHeight: 4 }), { visibleRect: right });
  assert.deepEqual([tall.displayWidth, tall.displayHeight], [4, 4]);
  const given = from(base, { visibleRect: right, displayWidth: 10, displayHeight: 20 });
  assert.deepEqual([given.displayWidth, given.displayHeight], [10, 20]);
  assert.deepEqual((await copied(wide)).bytes, [3, 4, 7, 8, 10, 12]);
  // a turned base: its display 2x8 is 8x2 unturned, so a 2x2 crop shows 4x2, turned 2x4
  const turnedInit = init("RGBX", 4, 2, { rotation: 90, displayWidth: 2, displayHeight: 8 });
  const turnedCrop = from(make(new Uint8Array(32), turnedInit), { visibleRect: right });
  assert.deepEqual([turnedCrop.displayWidth, turnedCrop.displayHeight], [2, 4]);
});

frameTest("invalid VideoFrameInit over a frame throws TypeError", () => {
  const base = make(new Uint8Array(32 * 16 * 3 / 2), init("I420", 32, 16));
  const rects = [R(1, 0, 2, 2), R(0, 1, 2, 2), R(-2, 0, 2, 2), R(0, 0, -10, 2), R(0, 0, 2, 0)];
  const outside = [R(0, Infinity, 2, 2), R(0, 0, 2, Infinity), R(0, 0, 64, 32), R(2, 2, 32, 16)];
  const bad: VideoFrameInit[] = [
    ...[...rects, ...outside].map((visibleRect) => ({ visibleRect })),
    ...[{ displayHeight: 4 }, { displayWidth: 4 }],
    ...[{ displayWidth: 0, displayHeight: 4 }, { displayWidth: 4, displayHeight: 0 }],
  ];
  for (const i of bad) assert.throws(() => new VideoFrame(base, i), typeError, JSON.stringify(i));
});

frameTest("alpha 'discard' drops RGBA's and BGRA's alpha; 'keep' keeps the format", async () => {
  for (const [format, opaque] of [["RGBA", "RGBX"], ["BGRA", "BGRX"], ["I420", "I420"]] as const) {
    const base = format === "I420" ? i420() : rgb(format, 2, 2);
    assert.equal(from(base, { alpha: "discard" }).format, opaque);
    assert.equal(from(base, { alpha: "keep" }).format, format);
    assert.equal(from(base).format, format);
  }
  const translucent = rgb("RGBA", 1, 1, new Uint8Array([1, 2, 3, 4]));
  const discarded = from(translucent, { alpha: "discard" });
  assert.deepEqual((await copied(discarded, { format: "RGBA" })).bytes, [1, 2, 3, 255]);
});

frameTest("rotation and flip compose with the base frame's for every combination", () => {
  for (const baseRotation of [0, 90, 180, 270]) {
    for (const baseFlip of [false, true]) {
      const rest = { rotation: baseRotation, flip: baseFlip };
      const base = make(new Uint8Array(32), init("RGBX", 4, 2, rest));
      for (const rotation of [0, 90, 180, 270]) {
        for (const flip of [false, true]) {
          const frame = from(base, { rotation, flip });
          const want = (baseRotation + (baseFlip ? 360 - rotation : rotation)) % 360;
          const at = `${baseRotation}/${baseFlip} + ${rotation}/${flip}`;
          assert.deepEqual([frame.rotation, frame.flip], [want, baseFlip !== flip], at);
          const display = want % 180 ? [2, 4] : [4, 2];
          assert.deepEqual([frame.displayWidth, frame.displayHeight], display, at);
        }
      }
    }
  }
});

// ------------------------------------------------------- close and clone

frameTest("a closed frame reports empty attributes, keeps its timing and refuses use", async () => {
  const frame = i420({ timestamp: 10, duration: 15, rotation: 90, flip: true });
  frame.close();
  const { format, codedWidth, codedHeight, codedRect, visibleRect } = frame;
  const sizes = [codedWidth, codedHeight, codedRect, visibleRect];
  assert.deepEqual([format, ...sizes], [null, 0, 0, null, null]);
  const { displayWidth, displayHeight, timestamp, duration, rotation, flip } = frame;
  assert.deepEqual([displayWidth, displayHeight, rotation, flip], [0, 0, 0, false]);
  assert.deepEqual([timestamp, duration], [10, 15]);
  assert.deepEqual(frame.colorSpace.toJSON(), NULLS);
  assert.throws(() => frame.clone(), dom("InvalidStateError"));
  assert.throws(() => new VideoFrame(frame), dom("InvalidStateError"));
  assert.throws(() => frame.allocationSize(), dom("InvalidStateError"));
  assert.throws(() => frame.allocationSize({ rect: { width: 0 } }), dom("InvalidStateError"));
  assert.throws(() => frame.metadata(), dom("InvalidStateError"));
  await assert.rejects(frame.copyTo(new Uint8Array(12)), dom("InvalidStateError"));
  frame.close(); // a no-op
  assert.deepEqual([frame.format, frame.timestamp], [null, 10]);
});

frameTest("a clone copies timing and visibleRect and outlives the original", async () => {
  const frame = i420({ timestamp: 10, duration: 15, visibleRect: R(2, 0, 2, 2) });
  const clone = keep(frame.clone());
  assert.deepEqual([clone.timestamp, clone.duration], [10, 15]);
  assert.deepEqual(rectOf(clone.visibleRect), R(2, 0, 2, 2));
  frame.close();
  assert.deepEqual([clone.format, clone.timestamp], ["I420", 10]);
  assert.deepEqual((await copied(clone)).bytes, [3, 4, 7, 8, 10, 12]);
  const original = i420();
  original.clone().close();
  assert.deepEqual((await copied(original)).bytes, seq(12));
});

// ------------------------------------------------------- allocationSize and copyTo

frameTest("copyTo packs the planes by default and returns the layout", async () => {
  const frame = i420();
  const want = [L(0, 4), L(8, 2), L(10, 2)];
  assert.equal(frame.allocationSize(), 12);
  await copies(frame, {}, seq(12), want);
  await copies(frame, { rect: frame.codedRect! }, seq(12), want);
  const ab = new ArrayBuffer(12);
  assert.deepEqual(await frame.copyTo(ab), want);
  assert.deepEqual([...new Uint8Array(ab)], seq(12));
  const rgba = rgb("RGBA", 2, 2);
  assert.deepEqual([rgba.allocationSize(), (await copied(rgba)).layout], [16, [L(0, 8)]]);
  await copies(nv12(), {}, seq(12), [L(0, 4), L(8, 4)]);
});

frameTest("copyTo's rect crops every plane by its subsampling", async () => {
  const frame = i420();
  const left = { rect: R(2, 0, 2, 2) };
  assert.equal(frame.allocationSize(left), 6);
  await copies(frame, left, [3, 4, 7, 8, 10, 12], [L(0, 2), L(4, 1), L(5, 1)]);
  const row = { rect: R(0, 0, 4, 1) }; // odd height is allowed
  await copies(frame, row, [1, 2, 3, 4, 9, 10, 11, 12], [L(0, 4), L(4, 2), L(6, 2)]);
  const rgba = from(rgb("RGBA", 4, 2), { visibleRect: R(1, 1, 2, 1) }); // RGB: any offset
  await copies(rgba, {}, [...pattern(32).subarray(20, 28)], [L(0, 8)]);
});

frameTest("custom layouts are returned as given and padding is left untouched", async () => {
  const frame = i420();
  const swapped = [L(4, 4), L(0, 2), L(2, 2)];
  assert.equal(frame.allocationSize({ layout: swapped }), 12);
  await copies(frame, { layout: swapped }, [9, 10, 11, 12, ...seq(8)], swapped);
  const padded = [L(9, 5), L(1, 3), L(5, 3)];
  assert.equal(frame.allocationSize({ layout: padded }), 19);
  const paddedBytes = [0, 9, 10, 0, 0, 11, 12, 0, 0, 1, 2, 3, 4, 0, 5, 6, 7, 8, 0];
  await copies(frame, { layout: padded }, paddedBytes, padded);
  const uvFirst = [L(4, 4), L(0, 4)];
  await copies(nv12(), { layout: uvFirst }, [9, 10, 11, 12, ...seq(8)], uvFirst);
});

frameTest("bad rects and layouts: allocationSize throws, copyTo rejects TypeError", async () => {
  const frame = i420();
  const layouts = [[L(0, 4)], [L(0, 1), L(8, 2), L(10, 2)], [L(0, 4), L(8, 2), L(2 ** 32 - 2, 2)]];
  const rects = [R(0, 0, 4, 0), R(0, 0, 4, 4), R(1, 0, 2, 2), R(0, 0, NaN, 2)];
  const bad: VideoFrameCopyToOptions[] = [
    ...layouts.map((layout) => ({ layout })),
    { layout: [L(0, 4), L(6, 2), L(10, 2)] }, // U overlaps Y
    ...rects.map((rect) => ({ rect })),
    { format: "RGBA", layout: [L(0, 16), L(32, 2), L(40, 2)] },
  ];
  for (const options of bad) {
    assert.throws(() => frame.allocationSize(options), typeError, JSON.stringify(options));
    await assert.rejects(frame.copyTo(new Uint8Array(1 << 12), options), typeError);
  }
  await assert.rejects(frame.copyTo(new Uint8Array(11)), typeError);
  await assert.rejects(frame.copyTo(new ArrayBuffer(11)), typeError);
});

frameTest("copyTo's checks run in the spec's order", async () => {
  const frame = i420();
  const badRect = R(0, 0, 4, 4);
  assert.throws(() => frame.allocationSize({ rect: badRect, format: "I420" }), typeError);
  const notRgb = () => frame.allocationSize({ format: "NV12", layout: [L(0, 1)] });
  assert.throws(notRgb, dom("NotSupportedError"));
  const i420To = frame.copyTo(new Uint8Array(1), { format: "I420" });
  await assert.rejects(i420To, dom("NotSupportedError"));
});

// ------------------------------------------------------- copyTo RGB conversion

const clamp8 = (v: number) => Math.max(0, Math.min(255, Math.round(v)));
/** Limited-range YCbCr to RGB with the textbook coefficients. */
function reference(matrix: "601" | "709", y: number, u: number, v: number): number[] {
  const c = 1.164 * (y - 16), d = u - 128, e = v - 128;
  const rgb = matrix === "601"
    ? [c + 1.596 * e, c - 0.392 * d - 0.813 * e, c + 2.017 * d]
    : [c + 1.793 * e, c - 0.213 * d - 0.533 * e, c + 2.112 * d];
  return rgb.map(clamp8);
}
/** An I420 4x4: a luma ramp, a different chroma pair in each 2x2 block. */
const YUV = { y: seq(16).map((i) => 20 + i * 13), u: [90, 54, 240, 128], v: [240, 34, 110, 128] };
function assertNear(got: number[], want: number[], at: string): void {
  assert.equal(got.length, want.length, at);
  got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) <= 2, `${at}[${i}]: ${g} vs ${want[i]}`));
}

frameTest("I420 to RGB follows the matrix: BT.601 for smpte170m and null, else 709", async () => {
  const cases: [VideoColorSpaceInit | undefined, "601" | "709"][] = [
    [{ matrix: "smpte170m" }, "601"],
    [NULLS, "601"],
    [{ matrix: "bt709" }, "709"],
    [undefined, "709"], // REC 709 by default
  ];
  for (const [colorSpace, matrix] of cases) {
    const data = new Uint8Array([...YUV.y, ...YUV.u, ...YUV.v]);
    const frame = make(data, init("I420", 4, 4, { colorSpace }));
    const want: number[] = [];
    for (let y = 0; y < 4; y++) {
      for (let x = 0; x < 4; x++) {
        const c = (y >> 1) * 2 + (x >> 1);
        want.push(...reference(matrix, YUV.y[y * 4 + x], YUV.u[c], YUV.v[c]), 255);
      }
    }
    const at = JSON.stringify(colorSpace);
    const { bytes, layout } = await copied(frame, { format: "RGBA", colorSpace: "srgb" });
    assert.deepEqual(layout, [L(0, 16)], at);
    assertNear(bytes, want, at);
    const bgrx = await copied(frame, { format: "BGRX" });
    const swapped = want.flatMap((_, i) => i % 4 ? [] : [want[i + 2], want[i + 1], want[i], 255]);
    assertNear(bgrx.bytes, swapped, `${at} BGRX`);
    const rect = R(2, 2, 2, 2);
    const crop = await copied(frame, { format: "RGBX", colorSpace: "display-p3", rect });
    assert.deepEqual(crop.layout, [L(0, 8)]);
    const pick = [10, 11, 14, 15].flatMap((p) => want.slice(p * 4, p * 4 + 4));
    assertNear(crop.bytes, pick, `${at} rect`);
  }
});

frameTest("RGB copyTo writes rows at a custom layout and leaves the margins alone", async () => {
  const frame = rgb("RGBA", 4, 4);
  const layout = [L(5, 40)];
  const out = new Uint8Array(frame.allocationSize({ format: "RGBA", layout }));
  assert.equal(out.length, 165);
  assert.deepEqual(await frame.copyTo(out, { format: "RGBA", layout }), layout);
  const src = pattern(64), want = new Uint8Array(165);
  for (let row = 0; row < 4; row++) want.set(src.subarray(row * 16, row * 16 + 16), 5 + row * 40);
  assert.deepEqual(out, want);
});

frameTest("RGB swizzles keep B, G, R in place and write alpha 0xFF for X formats", async () => {
  const pairs = [["BGRX", "BGRA"], ["RGBX", "RGBA"], ["BGRA", "BGRX"], ["RGBA", "RGBX"]] as const;
  for (const [w, h] of [[8, 4], [100, 100], [90, 50], [7, 3]]) {
    for (const [source, target] of pairs) {
      const frame = rgb(source, w, h);
      const out = new Uint8Array(w * h * 4).fill(0xde);
      assert.deepEqual(await frame.copyTo(out, { format: target }), [L(0, w * 4)]);
      const want = pattern(w * h * 4).map((b, i) => (i % 4 === 3 ? 0xff : b));
      assert.deepEqual(out, want, `${source}->${target} ${w}x${h}`);
      frame.close();
    }
  }
  const rgba = rgb("RGBA", 1, 1, new Uint8Array([1, 2, 3, 4]));
  assert.deepEqual((await copied(rgba, { format: "BGRA" })).bytes, [3, 2, 1, 4]);
});

frameTest("copyTo to a non-RGB format throws or rejects NotSupportedError", async () => {
  const frame = rgb("RGBX", 4, 4);
  const formats = ["I420", "I420P10", "I420P12", "I420A", "I422", "I422A", "I444", "I444A", "NV12"];
  for (const format of formats as VideoPixelFormat[]) {
    assert.throws(() => frame.allocationSize({ format }), dom("NotSupportedError"), format);
    const copy = frame.copyTo(new Uint8Array(1 << 10), { format });
    await assert.rejects(copy, dom("NotSupportedError"));
  }
  assert.throws(() => i420().allocationSize({ format: "I420" }), dom("NotSupportedError"));
  const bogus = { format: "RGBA", colorSpace: "bogus" } as unknown as VideoFrameCopyToOptions;
  assert.throws(() => frame.allocationSize(bogus), typeError);
});

// ------------------------------------------------------- gpures: frames over handles

/** A 4x2 YUV420P slot holding Y 1..8, U 9 10, V 11 12. */
function filled(pool: FramePool): DmaBufHandle {
  const handle = pool.tryAcquire();
  assert.ok(handle);
  let n = 1;
  for (const plane of handle.planes()) {
    for (let y = 0; y < plane.height; y++) {
      for (let x = 0; x < plane.width; x++) plane.data[y * plane.stride + x] = n++;
    }
  }
  return handle;
}
const pool4x2 = () => FramePool.create({ format: "YUV420P", width: 4, height: 2, slots: 2 });
const adopt = (handle: DmaBufHandle, i?: VideoFrameInit) => keep(new VideoFrame(handle, i));

frameTest("new VideoFrame(handle, init) wraps a pool's DmaBufHandle as I420", async () => {
  using pool = pool4x2();
  const handle = filled(pool);
  const frame = adopt(handle, { timestamp: 7 });
  assert.equal(frame.format, "I420");
  assert.deepEqual([frame.codedWidth, frame.codedHeight, frame.timestamp], [4, 2, 7]);
  assert.equal(frame.duration, null);
  assert.deepEqual([frame.displayWidth, frame.displayHeight], [4, 2]);
  assert.deepEqual(frame.colorSpace.toJSON(), REC709);
  assert.equal(frame.resource?.kind, "DmaBufHandle");
  assert.notEqual(frame.resource, handle); // the frame's own clone
  handle.release(); // the caller's reference goes; the frame's stays
  await copies(frame, {}, seq(12), [L(0, 4), L(8, 2), L(10, 2)]);
  frame.close();
  assert.equal(frame.resource, null);
});

frameTest("closing a VideoFrame over a handle leaves the caller's handle usable", () => {
  using pool = pool4x2();
  using handle = filled(pool);
  new VideoFrame(handle, { timestamp: 0 }).close();
  assert.equal(handle.planes()[0].data[3], 4);
  assert.equal(handle.describe().width, 4);
});

frameTest("a handle's metadata timing gives the timestamp in microseconds", () => {
  using pool = pool4x2();
  using handle = filled(pool);
  assert.throws(() => new VideoFrame(handle), typeError);
  assert.throws(() => new VideoFrame(handle, {}), typeError);
  handle.setMeta({ timing: { pts: 40, duration: 20, timebaseNum: 1, timebaseDen: 1000 } });
  const frame = adopt(handle);
  assert.deepEqual([frame.timestamp, frame.duration], [40_000, 20_000]);
  assert.equal(adopt(handle, { timestamp: 3 }).timestamp, 3);
});

frameTest("bytes land in a DmaBufHandle where gpures has a DMA-BUF layout, else CpuPlanes", () => {
  assert.equal(i420().resource?.kind, "DmaBufHandle");
  const p10 = make(new Uint16Array(12), init("I420P10", 4, 2));
  assert.equal(p10.resource?.kind, "CpuPlanes");
});

frameTest("a handle in a layout WebCodecs does not name has format null", () => {
  using pool = FramePool.create({ format: "P010LE", width: 4, height: 2, slots: 1 });
  using handle = pool.tryAcquire()!;
  const frame = adopt(handle, { timestamp: 0 });
  assert.deepEqual([frame.format, frame.codedWidth], [null, 4]);
  const bad = { rect: R(0, 0, 0, 0) }; // the format is checked first
  assert.throws(() => frame.allocationSize(bad), dom("NotSupportedError"));
});

// ------------------------------------------------------- EncodedVideoChunk

/** A key chunk at timestamp 0 over `data`, with the rest of the init given. */
const key = (data: unknown, rest: Partial<EncodedVideoChunkInit> = {}) =>
  new EncodedVideoChunk({ type: "key", timestamp: 0, data, ...rest } as EncodedVideoChunkInit);

frameTest("an EncodedVideoChunk echoes its init and copies its bytes out", () => {
  const data = new Uint8Array([0x0a, 0x0b, 0x0c]);
  const chunk = new EncodedVideoChunk({ type: "key", timestamp: 10, duration: 300, data });
  const echoed = [chunk.type, chunk.timestamp, chunk.duration, chunk.byteLength];
  assert.deepEqual(echoed, ["key", 10, 300, 3]);
  const out = new Uint8Array(3);
  chunk.copyTo(out);
  assert.deepEqual([...out], [0x0a, 0x0b, 0x0c]);
  const delta = new EncodedVideoChunk({ type: "delta", timestamp: 100, data: new Uint8Array(2) });
  assert.deepEqual([delta.type, delta.duration, delta.byteLength], ["delta", null, 2]);
  assert.equal(key(new ArrayBuffer(0)).byteLength, 0);
});

frameTest("EncodedVideoChunk.copyTo throws TypeError for a small or detached destination", () => {
  const chunk = key(new Uint8Array(3));
  assert.throws(() => chunk.copyTo(new Uint8Array(2)), typeError);
  const ab = new ArrayBuffer(3);
  const view = new Uint8Array(ab);
  ab.transfer();
  assert.throws(() => chunk.copyTo(view), typeError);
  assert.throws(() => chunk.copyTo(ab), typeError);
});

frameTest("EncodedVideoChunk takes and fills SharedArrayBuffers", () => {
  const sab = new SharedArrayBuffer(3);
  new Uint8Array(sab).set([1, 2, 3]);
  for (const data of [sab, new Uint8Array(sab)]) {
    const chunk = key(data);
    assert.equal(chunk.byteLength, 3);
    const out = new SharedArrayBuffer(3);
    chunk.copyTo(out as unknown as ArrayBuffer);
    assert.deepEqual([...new Uint8Array(out)], [1, 2, 3]);
    const view = new Uint8Array(new SharedArrayBuffer(3));
    chunk.copyTo(view);
    assert.deepEqual([...view], [1, 2, 3]);
  }
});

frameTest("EncodedVideoChunk transfer detaches the buffers; bad lists throw DataCloneError", () => {
  const data = new Uint8Array([1, 2, 3, 4]);
  const unused = new ArrayBuffer(8);
  const chunk = key(data, { transfer: [data.buffer, unused] });
  assert.deepEqual([data.length, unused.byteLength], [0, 0]);
  const out = new Uint8Array(4);
  chunk.copyTo(out);
  assert.deepEqual([chunk.byteLength, ...out], [4, 1, 2, 3, 4]);
  const kept = new Uint8Array(4);
  const detached = new ArrayBuffer(1);
  detached.transfer();
  for (const transfer of [[kept.buffer, kept.buffer], [kept.buffer, detached]]) {
    assert.throws(() => key(kept, { transfer }), dom("DataCloneError"));
    assert.equal(kept.length, 4);
  }
});

frameTest("EncodedVideoChunk's IDL checks throw TypeError", () => {
  const bad: Record<string, unknown>[] = [
    ...[{ type: undefined }, { type: "other" }, { timestamp: undefined }, { timestamp: NaN }],
    ...[{ timestamp: Infinity }, { duration: -1 }, { duration: Infinity }],
    ...[{ data: undefined }, { data: [1, 2] }],
  ];
  for (const over of bad) {
    const make = () => key(new Uint8Array(1), over);
    assert.throws(make, typeError, JSON.stringify(over));
  }
});

// ------------------------------------------------------- VideoColorSpace

frameTest("VideoColorSpace keeps every combination of members and nulls the rest", () => {
  const primaries = [undefined, "bt709", "bt470bg", "smpte170m", "bt2020", "smpte432"];
  const transfers = [undefined, "bt709", "smpte170m", "iec61966-2-1", "linear", "pq", "hlg"];
  const matrices = [undefined, "rgb", "bt709", "bt470bg", "smpte170m", "bt2020-ncl"];
  let count = 0;
  for (const primaries_ of primaries) {
    for (const transfer of transfers) {
      for (const matrix of matrices) {
        for (const fullRange of [undefined, true, false]) {
          const given = { primaries: primaries_, transfer, matrix, fullRange };
          const cs = new VideoColorSpace(given as VideoColorSpaceInit);
          const want = { ...NULLS, ...JSON.parse(JSON.stringify(given)) };
          assert.deepEqual(cs.toJSON(), want);
          const members = [cs.primaries, cs.transfer, cs.matrix, cs.fullRange];
          assert.deepEqual(members, Object.values(want));
          count++;
        }
      }
    }
  }
  assert.equal(count, 6 * 7 * 6 * 3);
});

frameTest("new VideoColorSpace() is all null; an invalid enum value throws TypeError", () => {
  assert.deepEqual(new VideoColorSpace().toJSON(), NULLS);
  assert.equal(new VideoColorSpace().primaries, null);
  for (const bad of [{ primaries: "bt601" }, { transfer: "srgb" }, { matrix: "BT709" }]) {
    assert.throws(() => new VideoColorSpace(bad as VideoColorSpaceInit), typeError);
  }
});
