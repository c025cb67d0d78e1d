// The host's measured ceilings for the fit planner (issue #16: decode layers on the CPU): how fast
// every thread together reads memory, and how many weight bytes per second the host GEMV
// (host/gemv.h) gets through with a given pool. `thintensor doctor` records both in doctor.json
// (at several thread counts); the planner measures them on the spot when there is no record
// (host_plan.h). Buffers are larger than the last-level cache, so the figures are DRAM's.
//
// note: the GPU machine is a Firecracker VM whose memory grows on first touch (about 3 s per
// 8 GiB), so every buffer is written once by the threads that later read it (which also puts its
// pages on their NUMA node) before anything is timed, and the sizes stay at or below 1 GiB.
#pragma once

#include "core/dtype.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "format/tensor.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tt::host {

// The doctor's buffers: 512 MiB (or dram_test_bytes of it), a few tenths of a second per figure.
inline constexpr size_t k_measure_bytes = size_t(512) << 20;
// `at_least`, or twice the last-level cache when that is larger (at most 1 GiB): a pass over the
// buffer then evicts what the next pass reads first, so it measures DRAM, not the cache.
size_t dram_test_bytes(size_t at_least);

// Anonymous memory (page-aligned), not touched until written.
class PageBuffer {
public:
    explicit PageBuffer(size_t bytes);  // throws tt::Error when the mapping fails
    ~PageBuffer();
    PageBuffer(const PageBuffer&) = delete;
    PageBuffer& operator=(const PageBuffer&) = delete;
    uint8_t* data() const { return data_; }
    size_t size() const { return bytes_; }

private:
    uint8_t* data_ = nullptr;
    size_t bytes_ = 0;
};

// Memory read bandwidth, GB/s (1e9 bytes/s): every thread of `pool` sums its own part of a
// `bytes` buffer (whole 256-byte blocks, at least one per thread), written first by the same
// thread, with loads as wide as the GEMV's; the best of 5 timed passes after an untimed one.
double measure_read_gbs(ThreadPool& pool, size_t bytes = k_measure_bytes);
// The same over a buffer already written (GemvBench::matrix(): the read bandwidth of the very bytes
// the GEMV reads, without touching a second buffer).
double measure_read_gbs(ThreadPool& pool, const PageBuffer& buf);

// A [rows, 4096] weight matrix of `dt` (f32, f16, bf16), or of INT8 / INT4 rows (groups of
// k_int4_default_group) with their f32 scales after them, of about `bytes` in all (rows a multiple
// of 16, at least 16), with its x and y vectors, for timing host::gemv with one pool or several.
// A quantized profile's layers on the CPU read such rows, at a rate of their own: the INT4 kernel
// widens nibbles, which can bound it below the memory (docs/QUANTIZATION.md).
class GemvBench {
public:
    static constexpr int64_t k_cols = 4096;
    // The matrix is written (first touch) by `pool`'s threads, rows split as gemv splits them.
    GemvBench(ThreadPool& pool, DType dt, size_t bytes);
    GemvBench(ThreadPool& pool, QuantScheme scheme, size_t bytes);  // scheme int8 or int4
    // Weight bytes (values and scales) per second / 1e9 of host::gemv (best_isa()) with `pool`:
    // one untimed call, then the best of 5 timed calls (fewer when they pass half a second).
    double gbs(ThreadPool& pool);
    size_t bytes() const { return w_.size(); }
    const PageBuffer& matrix() const { return w_; }

private:
    // Rows of `row_bytes` values, then (quantized) `row_scales` f32 scales per row.
    GemvBench(ThreadPool& pool, DType dt, QuantScheme scheme, size_t bytes);
    PageBuffer w_;
    TensorView view_;
    std::vector<float> x_, y_;
};

// host::gemv's rate over a `dt` matrix of about `bytes` with `pool` (GemvBench, GB/s).
double measure_gemv_gbs(ThreadPool& pool, DType dt, size_t bytes = k_measure_bytes);

// The thread counts the doctor measures the GEMV at: 1, 2, 4, ... below n_hw, and n_hw.
std::vector<int> gemv_thread_counts(int n_hw);

}  // namespace tt::host
