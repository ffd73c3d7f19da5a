// Maps a frame over the fd it is given and sends the buffer away with
// transfer, releasing its own handle: the mapping must go with the buffer.
import { rgbaFrame } from "../_support/fixtures.ts";

self.onmessage = (e: MessageEvent<number>) => {
  const frame = rgbaFrame(e.data);
  const buffer = frame.map();
  self.postMessage(buffer, [buffer]);
  frame.release();
};
