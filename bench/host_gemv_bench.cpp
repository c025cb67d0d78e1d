// The host decode path's GEMV (src/backends/host/gemv.h) on one decode-sized matrix: bf16, INT8
// and INT4 (groups of 32) rows, on each instruction set this CPU has, through the thread pool as
// decode calls it. Prints ms per product and the weight bytes read per second beside this
// machine's memory-read rate (host/measure.h), which bounds them all once the widening keeps up.
// The matrix (default 4096 x 4096) is re-read from memory each time: several copies, each larger
// than the last-level cache together. COPIES=1 with a small matrix times the kernels from cache
// instead: their compute rate, the bound once memory is not.
//
// Usage: host_gemv_bench [ROWS] [COLS] [THREADS] [COPIES]   (defaults: 4096 4096, every core, >= 256 MiB)
#include "backends/host/gemv.h"
#include "backends/host/measure.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "model/weight_quant.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <vector>

using namespace tt;

int main(int argc, char** argv) {
    const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 4096, cols = argc > 2 ? std::atoll(argv[2]) : 4096;
    const int threads = argc > 3 ? std::atoi(argv[3]) : 0;
    ThreadPool pool(threads);
    std::mt19937 rng(1);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> wf(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(cols)), y(static_cast<size_t>(rows));
    for (auto& v : wf) v = d(rng);
    for (auto& v : x) v = d(rng);
    const double read_gbs = host::measure_read_gbs(pool);
    fmt::print("host GEMV {} x {}, {} threads; memory read {:.1f} GB/s\n", rows, cols, pool.size(), read_gbs);

    struct Variant {
        const char* name;
        std::vector<QuantizedWeights> owned;  // quantized copies
        std::vector<std::vector<uint16_t>> bf16;  // bf16 copies
        std::vector<TensorView> views;
        size_t bytes = 0;  // read per product
    };
    std::vector<Variant> variants(3);
    const size_t bf16_bytes = size_t(rows * cols) * 2;
    const int copies = argc > 4 ? std::max(1, std::atoi(argv[4]))
                                : int(std::max<size_t>(2, (size_t(256) << 20) / (bf16_bytes / 4) + 1));  // >= 256 MiB of INT4
    variants[0].name = "bf16";
    variants[1].name = "int8";
    variants[2].name = "int4 g32";
    for (int k = 0; k < copies; ++k) {
        auto& b = variants[0].bf16.emplace_back(wf.size());
        for (size_t i = 0; i < wf.size(); ++i) b[i] = f32_to_bf16(wf[i]);
        TensorView v;
        v.dtype = DType::bf16;
        v.shape = {rows, cols};
        v.data = reinterpret_cast<const uint8_t*>(b.data());
        v.nbytes = bf16_bytes;
        variants[0].views.push_back(v);
        for (int q = 1; q <= 2; ++q) {
            const QuantScheme scheme = q == 1 ? QuantScheme::int8 : QuantScheme::int4;
            const int group = q == 1 ? 0 : k_int4_default_group;
            auto& owned = variants[size_t(q)].owned.emplace_back();
            variants[size_t(q)].views.push_back(
                *owned.add("w", Shape{rows, cols}, scheme, group, quantize_matrix(pool, wf.data(), DType::f32, rows, cols, scheme, group, "w")));
        }
    }
    variants[0].bytes = bf16_bytes;
    variants[1].bytes = size_t(rows) * (quant_row_bytes(QuantScheme::int8, cols) + 4);
    variants[2].bytes = size_t(rows) * (quant_row_bytes(QuantScheme::int4, cols) + 4 * quant_row_scales(QuantScheme::int4, cols, k_int4_default_group));
    for (host::Isa isa : {host::Isa::avx2, host::Isa::avx512, host::Isa::avx512vnni}) {
        if (!host::isa_supported(isa)) {
            fmt::print("{}: not on this CPU\n", host::isa_name(isa));
            continue;
        }
        for (Variant& v : variants) {
            for (const TensorView& w : v.views) host::gemv(pool, w, x.data(), y.data(), false, isa);  // warm-up
            const int reps = std::max(20, 4 * copies);
            const auto t0 = std::chrono::steady_clock::now();
            for (int r = 0; r < reps; ++r) host::gemv(pool, v.views[size_t(r % copies)], x.data(), y.data(), false, isa);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
            fmt::print("{:7} {:9}: {:7.3f} ms  {:6.1f} GB/s  ({:.0f}% of the read rate)\n", host::isa_name(isa), v.name, s * 1e3,
                       double(v.bytes) / s / 1e9, 100.0 * double(v.bytes) / s / 1e9 / read_gbs);
        }
    }
    return 0;
}
