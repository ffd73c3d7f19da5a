// A small synchronous gunzip (RFC 1952 around RFC 1951 DEFLATE), so that the
// synchronous loader can unpack a prebuilt library on first use:
// DecompressionStream is asynchronous, and node:zlib costs ~40 ms to import.
// Damaged input throws an Error; it never reads or writes out of bounds (the
// output size is the gzip trailer's, and every write is checked against it).
// tests/prebuilt_test.ts compares it with DecompressionStream.

const LENGTH_BASE = [
  3,
  4,
  5,
  6,
  7,
  8,
  9,
  10,
  11,
  13,
  15,
  17,
  19,
  23,
  27,
  31,
  35,
  43,
  51,
  59,
  67,
  83,
  99,
  115,
  131,
  163,
  195,
  227,
  258,
];
const LENGTH_EXTRA = [
  0,
  0,
  0,
  0,
  0,
  0,
  0,
  0,
  1,
  1,
  1,
  1,
  2,
  2,
  2,
  2,
  3,
  3,
  3,
  3,
  4,
  4,
  4,
  4,
  5,
  5,
  5,
  5,
  0,
];
const DIST_BASE = [
  1,
  2,
  3,
  4,
  5,
  7,
  9,
  13,
  17,
  25,
  33,
  49,
  65,
  97,
  129,
  193,
  257,
  385,
  513,
  769,
  1025,
  1537,
  2049,
  3073,
  4097,
  6145,
  8193,
  12289,
  16385,
  24577,
];
const DIST_EXTRA = [
  0,
  0,
  0,
  0,
  1,
  1,
  2,
  2,
  3,
  3,
  4,
  4,
  5,
  5,
  6,
  6,
  7,
  7,
  8,
  8,
  9,
  9,
  10,
  10,
  11,
  11,
  12,
  12,
  13,
  13,
];
const CODE_LENGTH_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

/**
 * A canonical Huffman code as a lookup table indexed by the next `bits` input
 * bits (least significant first): entry = symbol << 4 | code length, 0 for
 * no code.
 */
interface Table {
  entries: Int32Array;
  bits: number;
}

function table(lengths: ArrayLike<number>): Table {
  let maxLen = 0;
  const counts = new Uint16Array(16);
  for (let i = 0; i < lengths.length; i++) {
    counts[lengths[i]]++;
    if (lengths[i] > maxLen) maxLen = lengths[i];
  }
  counts[0] = 0;
  const bits = Math.max(maxLen, 1);
  const entries = new Int32Array(1 << bits);
  const next = new Uint16Array(16);
  for (let len = 1, code = 0; len < 16; len++) {
    code = (code + counts[len - 1]) << 1;
    next[len] = code;
  }
  for (let sym = 0; sym < lengths.length; sym++) {
    const len = lengths[sym];
    if (!len) continue;
    const code = next[len]++;
    if (code >= 1 << len) throw new Error("over-subscribed Huffman code");
    let rev = 0;
    for (let i = 0; i < len; i++) rev |= ((code >> i) & 1) << (len - 1 - i);
    for (let i = rev; i < entries.length; i += 1 << len) entries[i] = (sym << 4) | len;
  }
  return { entries, bits };
}

const FIXED_LITERALS = table(
  Array.from({ length: 288 }, (_, i) => (i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8)),
);
const FIXED_DISTANCES = table(new Array(30).fill(5));

/** The input, read least significant bit first. */
class Bits {
  buf = 0;
  count = 0;
  pos: number;
  constructor(readonly input: Uint8Array, start: number) {
    this.pos = start;
  }
  /** Makes sure n (<= 24) bits are buffered; past the end it reads zeros (checked per block). */
  need(n: number): void {
    while (this.count < n) {
      this.buf |= (this.pos < this.input.length ? this.input[this.pos] : 0) << this.count;
      this.pos++;
      this.count += 8;
    }
  }
  take(n: number): number {
    this.need(n);
    const v = this.buf & ((1 << n) - 1);
    this.buf >>>= n;
    this.count -= n;
    return v;
  }
  decode(t: Table): number {
    this.need(t.bits);
    const e = t.entries[this.buf & ((1 << t.bits) - 1)];
    const len = e & 15;
    if (!len) throw new Error("bad Huffman code");
    this.buf >>>= len;
    this.count -= len;
    return e >> 4;
  }
}

/** Inflates raw DEFLATE data from `input[start..]` into exactly `out.length` bytes. */
function inflateInto(input: Uint8Array, start: number, out: Uint8Array): void {
  const r = new Bits(input, start);
  const inLen = input.length, outLen = out.length;
  let outPos = 0;
  for (;;) {
    const last = r.take(1);
    const type = r.take(2);
    if (type === 0) {
      // Drop to a byte boundary; whole bytes still buffered go back to the input.
      let pos = r.pos - (r.count >> 3);
      r.buf = 0;
      r.count = 0;
      if (pos + 4 > inLen) throw new Error("stored block ends early");
      const len = input[pos] | (input[pos + 1] << 8);
      const nlen = input[pos + 2] | (input[pos + 3] << 8);
      if ((len ^ 0xffff) !== nlen) throw new Error("bad stored block length");
      pos += 4;
      if (pos + len > inLen || outPos + len > outLen) throw new Error("stored block out of bounds");
      out.set(input.subarray(pos, pos + len), outPos);
      r.pos = pos + len;
      outPos += len;
    } else if (type === 1 || type === 2) {
      let literals = FIXED_LITERALS, distances = FIXED_DISTANCES;
      if (type === 2) {
        const hlit = r.take(5) + 257, hdist = r.take(5) + 1, hclen = r.take(4) + 4;
        const clLengths = new Uint8Array(19);
        for (let i = 0; i < hclen; i++) clLengths[CODE_LENGTH_ORDER[i]] = r.take(3);
        const cl = table(clLengths);
        const lengths = new Uint8Array(hlit + hdist);
        for (let i = 0; i < hlit + hdist;) {
          const sym = r.decode(cl);
          if (sym < 16) {
            lengths[i++] = sym;
            continue;
          }
          let repeat: number, value = 0;
          if (sym === 16) {
            if (i === 0) throw new Error("repeat with no previous length");
            value = lengths[i - 1];
            repeat = 3 + r.take(2);
          } else if (sym === 17) repeat = 3 + r.take(3);
          else repeat = 11 + r.take(7);
          if (i + repeat > lengths.length) throw new Error("too many code lengths");
          lengths.fill(value, i, i + repeat);
          i += repeat;
        }
        literals = table(lengths.subarray(0, hlit));
        distances = table(lengths.subarray(hlit));
      }
      for (;;) {
        const sym = r.decode(literals);
        if (sym < 256) {
          if (outPos >= outLen) throw new Error("more data than the gzip trailer declares");
          out[outPos++] = sym;
        } else if (sym === 256) break;
        else {
          const l = sym - 257;
          if (l >= 29) throw new Error("bad length symbol");
          const length = LENGTH_BASE[l] + r.take(LENGTH_EXTRA[l]);
          const d = r.decode(distances);
          if (d >= 30) throw new Error("bad distance symbol");
          const dist = DIST_BASE[d] + r.take(DIST_EXTRA[d]);
          if (dist > outPos) throw new Error("distance before the start of the data");
          if (outPos + length > outLen) {
            throw new Error("more data than the gzip trailer declares");
          }
          if (dist >= length) out.copyWithin(outPos, outPos - dist, outPos - dist + length);
          else for (let k = 0; k < length; k++) out[outPos + k] = out[outPos + k - dist];
          outPos += length;
        }
      }
    } else throw new Error("bad block type");
    if (r.pos - (r.count >> 3) > inLen) throw new Error("deflate data ends early");
    if (last) break;
  }
  if (outPos !== outLen) throw new Error("less data than the gzip trailer declares");
}

/** Decompresses a gzip member synchronously. Throws on damaged input. */
export function gunzipSync(data: Uint8Array, maxSize = 64 << 20): Uint8Array {
  if (data.length < 18 || data[0] !== 0x1f || data[1] !== 0x8b || data[2] !== 8) {
    throw new Error("not gzip data");
  }
  const flags = data[3];
  let pos = 10;
  if (flags & 4) pos += 2 + (data[pos] | (data[pos + 1] << 8)); // FEXTRA
  if (flags & 8) { while (pos < data.length && data[pos++] !== 0); // FNAME
   }
  if (flags & 16) { while (pos < data.length && data[pos++] !== 0); // FCOMMENT
   }
  if (flags & 2) pos += 2; // FHCRC
  if (pos >= data.length - 8) throw new Error("gzip header runs past the data");
  const end = data.length;
  const size = (data[end - 4] | (data[end - 3] << 8) | (data[end - 2] << 16) |
    (data[end - 1] << 24)) >>> 0;
  if (size > maxSize) throw new Error(`gzip trailer declares ${size} bytes, more than allowed`);
  const out = new Uint8Array(size);
  inflateInto(data.subarray(0, end - 8), pos, out);
  return out;
}

/** Decodes base64 (standard alphabet, padded). */
export function fromBase64(text: string): Uint8Array {
  const native = (Uint8Array as unknown as { fromBase64?: (s: string) => Uint8Array }).fromBase64;
  if (native) return native(text);
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
