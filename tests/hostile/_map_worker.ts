// Receives map() buffers by transfer, and sums them when asked: their
// mappings must still be there, whatever the sender did meanwhile.
const received: Uint8Array[] = [];
self.onmessage = (e: MessageEvent) => {
  if (e.data instanceof ArrayBuffer) received.push(new Uint8Array(e.data));
  else self.postMessage(received.reduce((sum, b) => sum + b.reduce((a, x) => a + x, 0), 0));
};
