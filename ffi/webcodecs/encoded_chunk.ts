// EncodedVideoChunk: immutable compressed bytes with their type and timing.
// The bytes are the chunk's own (copied in, or moved in by `transfer`), so
// nothing the caller does afterwards changes what a decoder reads.

import {
  bufferSource,
  detachAll,
  enforceRange,
  enumMember,
  optionalRange,
  requiredDictionary,
  transferList,
} from "./webidl.ts";

/** Whether a chunk can be decoded on its own. */
export type EncodedVideoChunkType = "key" | "delta";

/** {@link EncodedVideoChunk}'s constructor argument. */
export interface EncodedVideoChunkInit {
  /** "key" or "delta". */
  type: EncodedVideoChunkType;
  /** Presentation time, microseconds. */
  timestamp: number;
  /** Microseconds. */
  duration?: number;
  /** The compressed bytes. */
  data: ArrayBuffer | ArrayBufferView;
  /** Buffers to detach: one holding exactly `data` is taken over, not copied. */
  transfer?: ArrayBuffer[];
}

/** What {@link chunkBytes} reads: the chunk's own bytes. */
let bytesOf: (chunk: EncodedVideoChunk) => Uint8Array;

/** A chunk of a compressed video stream (WebCodecs' EncodedVideoChunk). */
export class EncodedVideoChunk {
  /** "key" or "delta". */
  readonly type: EncodedVideoChunkType;
  /** Presentation time, microseconds. */
  readonly timestamp: number;
  /** Microseconds, or null when not known. */
  readonly duration: number | null;
  readonly #data: Uint8Array;

  static {
    bytesOf = (chunk) => chunk.#data;
  }

  /** TypeError for a bad member, DataCloneError for a bad transfer list. */
  constructor(init: EncodedVideoChunkInit) {
    const what = "construct an EncodedVideoChunk";
    const d = requiredDictionary<EncodedVideoChunkInit>(what, "init", init);
    this.type = enumMember(what, "type", d.type, ["key", "delta"] as const);
    this.timestamp = enforceRange(what, "timestamp", d.timestamp);
    this.duration = optionalRange(what, "duration", d.duration, 0) ?? null;
    const data = bufferSource(what, "data", d.data);
    const transfer = transferList(what, d.transfer);
    const whole = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
    if (whole && transfer.includes(data.buffer as ArrayBuffer)) {
      const moved = (data.buffer as ArrayBuffer).transfer(); // the chunk's now: no copy
      detachAll(transfer.filter((b) => b !== data.buffer));
      this.#data = new Uint8Array(moved);
    } else {
      this.#data = data.slice();
      detachAll(transfer);
    }
  }

  /** Bytes of the chunk. */
  get byteLength(): number {
    return this.#data.byteLength;
  }

  /** Copies the bytes into `destination`; TypeError when it is too small. */
  copyTo(destination: ArrayBuffer | ArrayBufferView): void {
    const to = bufferSource("copy an EncodedVideoChunk", "destination", destination);
    if (to.byteLength < this.#data.byteLength) {
      throw new TypeError(
        `Cannot copy an EncodedVideoChunk: destination has ${to.byteLength} bytes, the chunk ${this.#data.byteLength}`,
      );
    }
    to.set(this.#data);
  }
}

/** A chunk's own bytes, for the decoder to copy into its packet (never handed to users). */
export function chunkBytes(chunk: EncodedVideoChunk): Uint8Array {
  return bytesOf(chunk);
}

/** A chunk over bytes gpures made (an encoder's packet): taken as they are. */
export function chunkOf(
  type: EncodedVideoChunkType,
  timestamp: number,
  duration: number | null,
  data: Uint8Array,
): EncodedVideoChunk {
  const init: EncodedVideoChunkInit = { type, timestamp, data, transfer: [] };
  if (duration !== null) init.duration = duration;
  if (data.byteOffset === 0 && data.byteLength === data.buffer.byteLength) {
    init.transfer = [data.buffer as ArrayBuffer];
  }
  return new EncodedVideoChunk(init);
}
