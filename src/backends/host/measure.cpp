#include "backends/host/measure.h"

#include "backends/host/gemv.h"
#include "backends/host/gemv_kernels.h"
#include "core/error.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace tt::host {

namespace {

// Written at the end of every measurement so that no read can be proven dead.
volatile uint64_t g_sink = 0;

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The baseline kernel (no AVX2): eight 16-byte accumulators (GCC / clang vector types, SSE2 on
// x86-64; 32-byte types there spill to the stack), two rounds per 256-byte block.
typedef uint64_t u64x2 __attribute__((vector_size(16), may_alias));

uint64_t sum_blocks_sse2(const uint8_t* p, size_t n_blocks) {
    const u64x2* v = reinterpret_cast<const u64x2*>(p);
    u64x2 a0{}, a1{}, a2{}, a3{}, a4{}, a5{}, a6{}, a7{};
    for (size_t i = 0; i < 2 * n_blocks; ++i, v += 8) {
        a0 += v[0];
        a1 += v[1];
        a2 += v[2];
        a3 += v[3];
        a4 += v[4];
        a5 += v[5];
        a6 += v[6];
        a7 += v[7];
    }
    const u64x2 s = (a0 + a1) + (a2 + a3) + (a4 + a5) + (a6 + a7);
    return s[0] ^ s[1];
}

// As wide as the GEMV's loads (best_isa()), so that the read bandwidth is its roofline.
uint64_t sum_blocks(const uint8_t* p, size_t n_blocks) {
    switch (best_isa()) {
    case Isa::avx512:
    case Isa::avx512vnni: return detail::sum_blocks_avx512(p, n_blocks);
    case Isa::avx2: return detail::sum_blocks_avx2(p, n_blocks);
    case Isa::scalar: break;
    }
    return sum_blocks_sse2(p, n_blocks);
}

constexpr size_t k_block = 256;  // bytes one block of sum_blocks reads

}  // namespace

size_t dram_test_bytes(size_t at_least) {
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);  // 0 or -1 when unknown
    const size_t twice_llc = l3 > 0 ? std::min(size_t(2) * size_t(l3), size_t(1) << 30) : 0;
    return std::max(at_least, twice_llc);
}

PageBuffer::PageBuffer(size_t bytes) : bytes_(bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("cannot map {} bytes of memory for a measurement: {}", bytes, std::strerror(errno));
    // note: no MADV_HUGEPAGE: the compaction it may start on first touch took a second for 512 MiB
    // on a 2-core VM (4 KiB pages: a quarter of that), and the archive's mapping that the CPU
    // layers read has 4 KiB pages too (huge pages read about 7% faster there).
    data_ = static_cast<uint8_t*>(p);
}

PageBuffer::~PageBuffer() {
    if (data_) ::munmap(data_, bytes_);
}

namespace {

// Thread i's part of `bytes` split over n_parts threads: [i * part, (i + 1) * part), whole blocks.
size_t part_bytes(size_t bytes, size_t n_parts) { return bytes / k_block / n_parts * k_block; }

}  // namespace

double measure_read_gbs(ThreadPool& pool, const PageBuffer& buf) {
    const size_t n_parts = size_t(pool.size());
    const size_t part = part_bytes(buf.size(), n_parts);
    TT_ASSERT(part > 0, "a {}-byte buffer is less than a block per thread", buf.size());
    std::vector<uint64_t> sums(n_parts);
    // note: parallel_for with n == pool.size() gives thread i index i every time.
    auto pass = [&] {
        pool.parallel_for(n_parts, [&](size_t i0, size_t i1) {
            for (size_t i = i0; i < i1; ++i) sums[i] = sum_blocks(buf.data() + i * part, part / k_block);
        });
    };
    pass();  // warm: page tables, the pool's threads awake
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        pass();
        best = std::min(best, seconds_since(t0));
    }
    uint64_t h = 0;
    for (uint64_t s : sums) h ^= s;
    g_sink = g_sink + h;
    return double(part * n_parts) / best / 1e9;
}

double measure_read_gbs(ThreadPool& pool, size_t bytes) {
    const size_t n_parts = size_t(pool.size());
    const size_t part = std::max(k_block, part_bytes(bytes, n_parts));
    PageBuffer buf(part * n_parts);
    // Each part first touched by the thread that reads it (the same index, see above).
    pool.parallel_for(n_parts, [&](size_t i0, size_t i1) {
        for (size_t i = i0; i < i1; ++i) std::memset(buf.data() + i * part, int(0x5a + i), part);
    });
    return measure_read_gbs(pool, buf);
}

namespace {

// Bytes one row of the bench matrix takes: its values, and a quantized row's f32 scales.
size_t bench_row_bytes(DType dt, QuantScheme scheme) {
    if (scheme == QuantScheme::none) return size_t(GemvBench::k_cols) * dtype_size(dt);
    return size_t(quant_row_bytes(scheme, GemvBench::k_cols)) +
           4 * size_t(quant_row_scales(scheme, GemvBench::k_cols, k_int4_default_group));
}

}  // namespace

GemvBench::GemvBench(ThreadPool& pool, DType dt, size_t bytes) : GemvBench(pool, dt, QuantScheme::none, bytes) {}

GemvBench::GemvBench(ThreadPool& pool, QuantScheme scheme, size_t bytes)
    : GemvBench(pool, scheme == QuantScheme::int8 ? DType::i8 : DType::u8, scheme, bytes) {
    TT_ASSERT(scheme != QuantScheme::none);
}

GemvBench::GemvBench(ThreadPool& pool, DType dt, QuantScheme scheme, size_t bytes)
    : w_(std::max<size_t>(16, bytes / bench_row_bytes(dt, scheme) / 16 * 16) * bench_row_bytes(dt, scheme)) {
    TT_ASSERT(scheme != QuantScheme::none || dt == DType::f32 || dt == DType::f16 || dt == DType::bf16);
    const int64_t rows = int64_t(w_.size() / bench_row_bytes(dt, scheme));
    const size_t row_bytes = scheme == QuantScheme::none ? size_t(k_cols) * dtype_size(dt) : size_t(quant_row_bytes(scheme, k_cols));
    const size_t n_scales = scheme == QuantScheme::none ? 0 : size_t(quant_row_scales(scheme, k_cols, k_int4_default_group));
    view_.name = "gemv bench";
    view_.dtype = dt;
    view_.shape = {rows, k_cols};
    view_.data = w_.data();
    view_.nbytes = uint64_t(rows) * row_bytes;  // the values; a quantized matrix's scales follow them
    view_.quant = scheme;
    view_.group_size = scheme == QuantScheme::int4 ? k_int4_default_group : 0;
    float* scales = reinterpret_cast<float*>(w_.data() + view_.nbytes);
    if (scheme != QuantScheme::none) view_.scales = scales;
    // Small finite weights (no denormals, no NaN): one row converted (or quantized) once, copied
    // into every row.
    std::vector<float> row_f32(static_cast<size_t>(k_cols));
    for (size_t c = 0; c < row_f32.size(); ++c) row_f32[c] = float(int(c % 7) - 3) * 0.01f;
    std::vector<uint8_t> row(row_bytes);
    std::vector<float> row_scales(n_scales);
    if (scheme == QuantScheme::none) convert_floats(row_f32.data(), DType::f32, row.data(), dt, row_f32.size());
    else quantize_row(scheme, view_.group_size, row_f32.data(), k_cols, row.data(), row_scales.data());
    const size_t blocks = size_t(rows / 16);  // the 16-row blocks gemv hands out
    pool.parallel_for(blocks, [&](size_t b0, size_t b1) {
        for (size_t r = b0 * 16; r < b1 * 16; ++r) {
            std::memcpy(w_.data() + r * row_bytes, row.data(), row_bytes);
            if (n_scales) std::memcpy(scales + r * n_scales, row_scales.data(), n_scales * 4);
        }
    });
    x_.assign(static_cast<size_t>(k_cols), 1.0f / float(k_cols));
    y_.assign(static_cast<size_t>(rows), 0.0f);
}

double GemvBench::gbs(ThreadPool& pool) {
    gemv(pool, view_, x_.data(), y_.data(), false);  // warm
    double best = 1e30, total = 0;
    for (int rep = 0; rep < 5 && !(rep >= 2 && total > 0.5); ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        gemv(pool, view_, x_.data(), y_.data(), false);
        const double s = seconds_since(t0);
        best = std::min(best, s);
        total += s;
    }
    uint32_t bits = 0;
    std::memcpy(&bits, &y_.back(), sizeof bits);
    g_sink = g_sink + bits;
    return double(w_.size()) / best / 1e9;  // values and scales: what a decode layer's bytes count
}

double measure_gemv_gbs(ThreadPool& pool, DType dt, size_t bytes) {
    GemvBench b(pool, dt, bytes);
    return b.gbs(pool);
}

std::vector<int> gemv_thread_counts(int n_hw) {
    std::vector<int> out;
    for (int n = 1; n < n_hw; n *= 2) out.push_back(n);
    out.push_back(std::max(1, n_hw));
    return out;
}

}  // namespace tt::host
