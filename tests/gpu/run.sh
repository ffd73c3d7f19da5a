#!/usr/bin/env bash
# GPU validation of gpures, on a Linux machine with an NVIDIA GPU: builds the
# gpures library and the GPU probe (tests/gpu_helpers/probe: gpu_probe.c,
# kernels.cu), runs the GPU tests (gpu_test.ts, whose "cuda-import" checks
# print PASS/FAIL lines), the
# CUDA importer's own tests (tests/interop_cuda_test.ts) and the benchmark
# (bench/gpu/bench.ts), and prints everything.
# Without a GPU it prints one line "skipped: <reason>" and exits 0.
#
#   bash tests/gpu/run.sh
#   GPURES_GPU_ONLY=cuda-pools bash tests/gpu/run.sh   # builds, then only that step
#   (steps: tests, importer, vulkan-pools, cuda-pools, bench)
#
# Needs: gcc, cmake, deno, the NVIDIA driver (libcuda.so.1 at run time) and
# CUDA's cuda.h (types only; set CUDA_INCLUDE to its folder if it is not in
# /usr/local/cuda/include). nvcc, if present, builds the kernels; without it
# the probe uploads its patterns instead. Vulkan and GL checks need
# libvulkan.so.1 and libEGL.so.1 with NVIDIA's ICDs; without them those
# checks are skipped with the reason. The "sync:" checks (SyncPoints, issue
# 16) also need VK_KHR_external_semaphore_fd and timeline semaphores (else
# skipped, with the reason); the sync-fd one needs SYNC_FD semaphore export. Exit status: 0 when every check passed
# or was skipped, 1 otherwise.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
out="$here/build"
probe="$root/tests/gpu_helpers/probe"
export NO_COLOR=1 # plain output, to be saved as docs/gpu-last-run.txt

skip() {
  echo "skipped: $*"
  exit 0
}

has_libcuda() {
  ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' && return 0
  local d
  for d in ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }} /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib/aarch64-linux-gnu \
    /usr/local/nvidia/lib64 /usr/lib/wsl/lib; do
    [ -e "$d/libcuda.so.1" ] && return 0
  done
  return 1
}

[ "$(uname -s)" = Linux ] || skip "not Linux ($(uname -s)): the GPU probe needs Linux"
if ! has_libcuda; then
  # The loader may still find it (an unusual path): nvidia-smi seeing a GPU says so.
  nvidia-smi -L >/dev/null 2>&1 || skip "no NVIDIA driver here (libcuda.so.1 not found)"
fi
if command -v nvidia-smi >/dev/null && ! nvidia-smi -L >/dev/null 2>&1; then
  skip "nvidia-smi lists no GPU"
fi
cuda_inc=""
for d in ${CUDA_INCLUDE:-} /usr/local/cuda/include /usr/local/cuda-*/include /usr/include; do
  if [ -f "$d/cuda.h" ]; then cuda_inc=$d; break; fi
done
[ -n "$cuda_inc" ] || skip "cuda.h not found (install CUDA's headers or set CUDA_INCLUDE)"
command -v gcc >/dev/null || skip "gcc not found"
command -v cmake >/dev/null || skip "cmake not found"
command -v deno >/dev/null || skip "deno not found"

echo "=== environment"
echo "date:   $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "host:   $(uname -srm)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,uuid --format=csv,noheader
  nvidia-smi | sed -n 3p
fi
command -v nvcc >/dev/null && nvcc --version | tail -n 2 | head -n 1
echo "cuda.h: $cuda_inc/cuda.h ($(grep -m1 '#define CUDA_VERSION' "$cuda_inc/cuda.h"))"
deno --version | head -n 1
echo "libcuda:       $(ldconfig -p | grep -m1 -o 'libcuda\.so\.1 .*' || echo 'not in the ldconfig cache')"
echo "vulkan loader: $(ldconfig -p | grep -m1 -o 'libvulkan\.so\.1 .*' || echo none)"
echo "egl loader:    $(ldconfig -p | grep -m1 -o 'libEGL\.so\.1 .*' || echo none)"

echo
echo "=== build"
mkdir -p "$out"
# gpures itself, in its own build folder so a developer's build/ is left alone.
if ! { cmake -S . -B "$out/gpures" -DCMAKE_BUILD_TYPE=Release -DGPURES_BUILD_TESTS=OFF \
  -DGPURES_BUILD_TEST_HELPERS=ON >"$out/cmake.log" 2>&1 &&
  cmake --build "$out/gpures" --target gpures -j >>"$out/cmake.log" 2>&1; }; then
  cat "$out/cmake.log"
  echo "FAILED: building gpures"
  exit 1
fi
export GPURES_LIB="$out/gpures/libgpures.so"
echo "gpures: $GPURES_LIB"
# The Vulkan test helper beside it (test-helpers/, where the tests look): the Vulkan pool's step.
if cmake --build "$out/gpures" --target gpures_test_vulkan -j >>"$out/cmake.log" 2>&1; then
  echo "vulkan helper: $out/gpures/test-helpers/libgpures_test_vulkan.so"
else
  echo "vulkan helper: not built (no Vulkan loader?); the Vulkan pool step skips"
fi
# gpures.h for the types of the few gpures calls the probe makes itself (sync checks);
# native/src/interop for khronos/, the Vulkan, EGL and GL declarations gpures uses too.
if ! gcc -std=gnu11 -O2 -Wall -Wextra -fPIC -shared -fvisibility=hidden -I"$cuda_inc" \
  -I"$root/native/include" -I"$root/native/src/interop" -o "$out/libgpuprobe.so" \
  "$probe/gpu_probe.c" -ldl; then
  echo "FAILED: building the GPU probe"
  exit 1
fi
echo "probe:  $out/libgpuprobe.so"
rm -f "$out/kernels.fatbin"
if command -v nvcc >/dev/null; then
  # The GPU's own architecture, plus PTX any newer GPU can compile.
  if nvcc -fatbin -arch=native -o "$out/kernels.fatbin" "$probe/kernels.cu" 2>"$out/nvcc.log" ||
    nvcc -fatbin -gencode arch=compute_75,code=compute_75 -o "$out/kernels.fatbin" \
      "$probe/kernels.cu" 2>>"$out/nvcc.log"; then
    echo "kernels: $out/kernels.fatbin"
  else
    cat "$out/nvcc.log"
    echo "kernels: nvcc failed; the probe uploads its patterns instead"
  fi
else
  echo "kernels: no nvcc; the probe uploads its patterns instead"
fi

# Whether step $1 runs: every step, or only GPURES_GPU_ONLY's (the others count as passed).
step() { [ -z "${GPURES_GPU_ONLY:-}" ] || [ "$GPURES_GPU_ONLY" = "$1" ]; }
tests_rc=0 importer_rc=0 pool_rc=0 cuda_pool_rc=0 bench_rc=0

if step tests; then
  echo
  echo "=== tests (deno test tests/gpu/gpu_test.ts)"
  deno test --allow-ffi --allow-read --allow-env "$here/gpu_test.ts"
  tests_rc=$?
fi

if step importer; then
  echo
  echo "=== the CUDA importer's own checks (deno test tests/interop_cuda_test.ts)"
  deno test --allow-ffi --allow-read --allow-env "$root/tests/interop_cuda_test.ts"
  importer_rc=$?
fi

if step vulkan-pools; then
  echo
  echo "=== Vulkan pools into CUDA across processes (deno test tests/gpu/gpu_pool_cuda_test.ts)"
  # Needs the Vulkan test helper (built above, beside GPURES_LIB); skipped with the reason without it.
  deno test --allow-ffi --allow-read --allow-env --allow-run "$here/gpu_pool_cuda_test.ts"
  pool_rc=$?
fi

if step cuda-pools; then
  echo
  echo "=== CUDA pools across processes, fences only (tests/gpu/gpu_pool_cuda_vmm_test.ts, tests/gpu_pool_cuda_test.ts)"
  deno test --allow-ffi --allow-read --allow-env --allow-run "$here/gpu_pool_cuda_vmm_test.ts" \
    "$root/tests/gpu_pool_cuda_test.ts"
  cuda_pool_rc=$?
fi

if step bench; then
  echo
  echo "=== benchmark (deno run bench/gpu/bench.ts)"
  deno run --allow-ffi --allow-read --allow-env "$root/bench/gpu/bench.ts"
  bench_rc=$?
fi

echo
echo "=== result: tests $([ $tests_rc -eq 0 ] && echo passed || echo FAILED), importer checks $(
  [ $importer_rc -eq 0 ] && echo passed || echo FAILED
), pools into CUDA $([ $pool_rc -eq 0 ] && echo passed || echo FAILED), CUDA pools $(
  [ $cuda_pool_rc -eq 0 ] && echo passed || echo FAILED
), benchmark $([ $bench_rc -eq 0 ] && echo ran || echo FAILED)"
[ $tests_rc -eq 0 ] && [ $importer_rc -eq 0 ] && [ $pool_rc -eq 0 ] && [ $cuda_pool_rc -eq 0 ] &&
  [ $bench_rc -eq 0 ]
