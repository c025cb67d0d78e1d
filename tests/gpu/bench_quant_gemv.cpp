// Speed of the decode GEMVs on quantized weights beside the bf16 one, printed (not asserted) so the
// GPU log shows it: the Llama-3-8B shapes (q/k/v, o, gate+up, down, the head), each timed over
// enough copies of the weights (>= 512 MiB) that every launch reads them from HBM, as decode does
// across 32 layers. GB/s counts the weight and scale bytes a launch reads.
// Run alone with: .carry/bin/gpu_tests --gtest_filter='CudaKernelsBench.QuantGemv*'
// (TT_QUANT_MMA_STEPS=2|3 forces the steps per batch, quant.cu). TT_GEMV_PROFILE=1 launches each
// shape once, on one copy, with no warm-up: the launches bench/profile_quant_gemv.sh hands to ncu
// (which flushes the caches before each, so they too read HBM).
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_check.h"
#include "backends/cuda/kernels/kernels.h"
#include "core/quant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace tt;

namespace {

struct Weights {  // one copy of a [rows, cols] matrix (or gate and up) on the device
    std::unique_ptr<cuda::Dev> w, s, w2, s2;
};

size_t weight_bytes(QuantScheme q, int rows, int cols) {
    if (q == QuantScheme::none) return size_t(rows) * cols * 2;  // bf16
    return size_t(rows) * (quant_row_bytes(q, cols) + quant_row_scales(q, cols, k_int4_default_group) * sizeof(float));
}

// The values do not change the time (no kernel skips zeros); a byte pattern fills gigabytes at
// device speed: bf16 0x3a3a ~ 7e-4, INT8 58, INT4 codes 3 and 10, f32 scales ~ 7e-4.
std::unique_ptr<cuda::Dev> filled(size_t n) {
    auto d = std::make_unique<cuda::Dev>(n);
    TT_CUDA_CHECK(cudaMemset(d->p, 0x3a, n));
    return d;
}

}  // namespace

TEST(CudaKernelsBench, QuantGemvSpeed) {
    struct Shape { const char* name; int rows, cols; bool gated, prenorm; };
    const Shape shapes[] = {{"q/k/v", 6144, 4096, false, true}, {"o", 4096, 4096, false, false},
                            {"gate+up", 14336, 4096, true, true}, {"down", 4096, 14336, false, false},
                            {"head", 128256, 4096, false, true}};
    std::mt19937 rng(3);
    const bool profile = std::getenv("TT_GEMV_PROFILE") != nullptr;
    for (const Shape& sh : shapes)
        for (QuantScheme q : {QuantScheme::none, QuantScheme::int8, QuantScheme::int4}) {
            const size_t bytes = weight_bytes(q, sh.rows, sh.cols) * (sh.gated ? 2 : 1);
            const int copies = profile ? 1 : int(std::max<size_t>(1, (size_t(512) << 20) / bytes + 1));
            const size_t row_bytes = q == QuantScheme::none ? size_t(sh.cols) * 2 : quant_row_bytes(q, sh.cols);
            const size_t n_scales = size_t(sh.rows) * quant_row_scales(q == QuantScheme::none ? QuantScheme::int8 : q, sh.cols,
                                                                       k_int4_default_group);
            std::vector<Weights> ws(static_cast<size_t>(copies));
            for (auto& w : ws) {
                w.w = filled(size_t(sh.rows) * row_bytes);
                w.s = filled(n_scales * sizeof(float));
                if (sh.gated) {
                    w.w2 = filled(size_t(sh.rows) * row_bytes);
                    w.s2 = filled(n_scales * sizeof(float));
                }
            }
            std::normal_distribution<float> nd(0.0f, 1.0f);
            std::vector<float> x(size_t(sh.cols)), nw(size_t(sh.cols), 1.0f);
            for (float& f : x) f = nd(rng);
            cuda::Dev dx(x), dnw(cuda::store(nw, DType::bf16)), dy(size_t(sh.rows) * sizeof(float));
            auto launch = [&](const Weights& w) {
                const float* sc = q == QuantScheme::none ? nullptr : w.s->as<float>();
                if (sh.gated) {
                    cuda::gemv_gated(w.w->p, w.w2->p, nullptr, nullptr, DType::bf16, sh.rows, sh.cols, dx.as<float>(), dnw.p, 0.0f,
                                     1e-5f, cuda::GateAct::silu, dy.as<float>(), nullptr, q, sc,
                                     q == QuantScheme::none ? nullptr : w.s2->as<float>(), k_int4_default_group);
                    return;
                }
                cuda::GemvArgs a{};
                a.n_seg = 1;
                a.seg[0] = {w.w->p, nullptr, dy.as<float>(), sh.rows, sc};
                a.cols = sh.cols;
                a.wdt = DType::bf16;
                a.x = dx.as<float>();
                a.norm_w = sh.prenorm ? dnw.p : nullptr;
                a.norm_offset = 0.0f;
                a.norm_eps = 1e-5f;
                a.quant = q;
                a.group_size = q == QuantScheme::int4 ? k_int4_default_group : 0;
                cuda::gemv(a, nullptr);
            };
            if (!profile)
                for (auto& w : ws) launch(w);  // warm-up: first-launch costs, the occupancy query
            const int reps = profile ? 1 : std::max(40, 2 * copies);
            const float ms = cuda::time_launches_ms(reps, [&](int i) { launch(ws[size_t(i % copies)]); });
            const double us = 1e3 * ms / reps, gbs = double(bytes) / (us * 1e-6) / 1e9;
            const std::string qn = q == QuantScheme::none ? "bf16" : std::string(quant_scheme_name(q));
            std::printf("[bench] gemv %-8s %-5s rows %6d cols %5d: %8.2f us  %7.1f GB/s  (%.1f MB per launch, %d copies)\n", sh.name,
                        qn.c_str(), sh.rows, sh.cols, us, gbs, double(bytes) / 1e6,
                        copies);
            const auto y = dy.get(size_t(sh.rows));
            EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float f) { return std::isfinite(f); })) << sh.name;
        }
}
