/* The byte patterns the GPU probe writes and checks, shared by the host (C) and the kernels (CUDA). */
#ifndef GPURES_GPU_PATTERN_H
#define GPURES_GPU_PATTERN_H

#include <stdint.h>

#ifdef __CUDACC__
#define GP_FN static __host__ __device__ __forceinline__
#else
#define GP_FN static inline
#endif

/* Byte i of a linear buffer: no period a misplaced offset could hide in. */
GP_FN uint8_t gp_pattern_byte(unsigned long long i, uint32_t seed) {
  uint32_t v = (uint32_t)i * 2654435761u ^ (uint32_t)(i >> 32) ^ seed;
  return (uint8_t)(v ^ (v >> 13) ^ (v >> 24));
}

/* Byte x of row y of a plane. */
GP_FN uint8_t gp_pattern_2d(uint32_t x, uint32_t y, uint32_t seed) {
  uint32_t v = x * 2654435761u ^ y * 40503u ^ seed;
  return (uint8_t)(v ^ (v >> 13) ^ (v >> 24));
}

#endif
