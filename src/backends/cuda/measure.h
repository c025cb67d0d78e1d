// Measured ceilings of the GPU the benchmarks and the planner compare against: copy bandwidths
// (device, host to device pinned / pageable, device to host) and the bf16 GEMM rate. Each figure
// is the median of several timed repetitions after a warm-up, on random data.
#pragma once

#include <cstddef>

namespace tt::cuda {

// Device-to-device copy, counting bytes read plus bytes written (GB/s = 1e9 bytes/s).
double measure_d2d_gbs(int device, size_t bytes = size_t(1) << 30);
// Host-to-device copy from pinned (page-locked) or pageable memory.
double measure_h2d_gbs(int device, bool pinned, size_t bytes = size_t(512) << 20);
// Device-to-host copy into pinned memory.
double measure_d2h_gbs(int device, size_t bytes = size_t(512) << 20);
// bf16 x bf16 -> f32-accumulate GEMM of n x n x n through cuBLAS, TFLOP/s.
double measure_gemm_tflops(int device, int n = 8192);

}  // namespace tt::cuda
