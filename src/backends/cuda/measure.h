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

// A copy from GPU `from`'s memory to GPU `to`'s (issue #22: what a layer split's hidden state and a
// tensor-parallel all-reduce cross): peer-to-peer when the two can reach each other
// (cudaDeviceCanAccessPeer, access enabled here), else staged through the host by the driver.
struct PeerCopy {
    bool p2p = false;         // direct access between the two
    double gbs = 0;           // `bytes` copied, GB/s (bytes, not read + written)
    double latency_us = 0;    // median of one 16 KB copy (a Llama-3-8B hidden state in f32), microseconds
};
PeerCopy measure_peer(int from, int to, size_t bytes = size_t(256) << 20);

}  // namespace tt::cuda
