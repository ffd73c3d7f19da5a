// The second process of the CUDA IPC comparison in gpu_pool_cuda_vmm_test.ts:
// opens a cuIpcMemHandle (hex, argv[0]) with cuIpcOpenMemHandle, timed, has
// a kernel check its `bytes` (argv[1]) against seed 77, and prints
// {"openNs","closeNs","mismatches"}.
//
//   deno run --allow-ffi --allow-read --allow-env <this> <handle hex> <bytes>

import { openProbe } from "./probe.ts";

const [hex, bytesText] = Deno.args;
const opened = openProbe();
if (!opened.probe) throw new Error(opened.reason);
const handle = new Uint8Array(hex.match(/../g)!.map((h) => parseInt(h, 16)));
const r = opened.probe.cuIpcOpenCheck(handle, Number(bytesText), 77);
console.log(
  JSON.stringify({ openNs: r.openNs, closeNs: r.closeNs, mismatches: Number(r.mismatches) }),
);
opened.probe.close();
