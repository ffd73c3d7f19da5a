// Maps a frame over the fd it is given and sends the buffer away with
// transfer, releasing its own handle: the mapping must go with the buffer.
import { DmaBufHandle } from "../../mod.ts";

self.onmessage = (e: MessageEvent<number>) => {
  const frame = DmaBufHandle.create({
    fds: [e.data],
    fourcc: 0x34324241,
    modifier: 0n,
    width: 16,
    height: 64,
    planes: [{ objectIndex: 0, offset: 0, stride: 64 }],
  });
  const buffer = frame.map();
  self.postMessage(buffer, [buffer]);
  frame.release();
};
