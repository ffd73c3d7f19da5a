// Kernels of the GPU probe, built by run.sh with nvcc into kernels.fatbin and
// loaded at run time with cuModuleLoad (the probe never links CUDA).
// The patterns are the ones gpu_probe.c checks on the host (pattern.h).

#include <stdint.h>

#include "pattern.h"

extern "C" __global__ void fill_bytes(uint8_t *p, unsigned long long n, uint32_t seed) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    p[i] = gp_pattern_byte(i, seed);
  }
}

// Counts bytes that differ from the pattern: how CUDA reads memory another API wrote.
extern "C" __global__ void check_bytes(const uint8_t *p, unsigned long long n, uint32_t seed,
                                       unsigned long long *mismatches) {
  unsigned long long bad = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    bad += p[i] != gp_pattern_byte(i, seed);
  }
  if (bad) atomicAdd(mismatches, bad);
}

// Writes `rows` rows of `row_bytes` bytes at `pitch` bytes apart: one plane of a pitched frame.
extern "C" __global__ void fill_2d(uint8_t *base, unsigned long long pitch, uint32_t row_bytes,
                                   uint32_t rows, uint32_t seed) {
  uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < row_bytes && y < rows) base[(unsigned long long)y * pitch + x] = gp_pattern_2d(x, y, seed);
}

// Writes RGBA8 texels through a surface object.
extern "C" __global__ void fill_surface(unsigned long long surface, uint32_t width, uint32_t height,
                                        uint32_t seed) {
  uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  uint32_t b = x * 4;
  uchar4 texel = make_uchar4(gp_pattern_2d(b, y, seed), gp_pattern_2d(b + 1, y, seed),
                             gp_pattern_2d(b + 2, y, seed), gp_pattern_2d(b + 3, y, seed));
  surf2Dwrite(texel, (cudaSurfaceObject_t)surface, (int)b, (int)y);
}
