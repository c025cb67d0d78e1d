// Speed of the attention kernels, printed (not asserted) so the GPU log shows it. Prefill (flash):
// causal self-attention of n tokens, FLOPs = 4 * head_dim * heads * (visible query-key pairs).
// Run alone with: .carry/bin/gpu_tests --gtest_filter='CudaKernelsBench.*'
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_check.h"
#include "backends/cuda/kernels/kernels.h"
#include "core/dtype.h"
#include "runtime/device_buffers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

using namespace tt;

TEST(CudaKernelsBench, PrefillAttentionSpeed) {
    struct Shape { const char* name; int n, n_heads, n_kv, hd, window; };
    const Shape shapes[] = {{"llama3-8b", 2048, 32, 8, 128, 0}, {"llama3-8b", 4096, 32, 8, 128, 0},
                            {"llama3-8b", 16384, 32, 8, 128, 0}, {"hd64 16/4", 4096, 16, 4, 64, 0},
                            {"gemma hd256 8/4", 4096, 8, 4, 256, 0}, {"window 1024", 8192, 32, 8, 128, 1024}};
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (const Shape& sh : shapes) {
        const int Q = sh.n_heads * sh.hd, KV = sh.n_kv * sh.hd;
        std::vector<float> q(size_t(sh.n) * Q), k(size_t(sh.n) * KV), v(size_t(sh.n) * KV);
        for (auto* x : {&q, &k, &v})
            for (float& f : *x) f = nd(rng);
        cuda::Dev dq(cuda::store(q, DType::bf16)), dk(cuda::store(k, DType::bf16)), dv(cuda::store(v, DType::bf16));
        cuda::Dev dout(size_t(sh.n) * Q * 2);
        cuda::PrefillAttnArgs a{};
        a.q = dq.p; a.q_stride = Q; a.k_cache = dk.p; a.v_cache = dv.p; a.out = dout.p; a.out_stride = Q;
        a.dt = DType::bf16; a.n_q = sh.n; a.n_heads = sh.n_heads; a.n_kv_heads = sh.n_kv; a.head_dim = sh.hd;
        a.q_pos0 = 0; a.window = sh.window; a.scale = 1.0f / std::sqrt(float(sh.hd)); a.softcap = 0;
        for (int i = 0; i < 3; ++i) cuda::prefill_attention(a, nullptr);
        const int reps = 20;
        const float ms = cuda::time_launches_ms(reps, [&](int) { cuda::prefill_attention(a, nullptr); }) / reps;
        double pairs = 0;
        for (int i = 0; i < sh.n; ++i) pairs += sh.window > 0 ? std::min(i + 1, sh.window) : i + 1;
        const double tflops = 4.0 * sh.hd * sh.n_heads * pairs / (ms * 1e-3) / 1e12;
        std::printf("[bench] prefill attention bf16 %-16s n=%-6d heads %d/%d hd %d window %d: %8.3f ms  %6.1f TFLOP/s\n",
                    sh.name, sh.n, sh.n_heads, sh.n_kv, sh.hd, sh.window, ms, tflops);
        // Not a speed assertion; only that the timed launches produced numbers everywhere.
        const auto out = dout.get(size_t(sh.n) * Q, DType::bf16);
        size_t bad = 0;
        for (float f : out) bad += std::isfinite(f) ? 0 : 1;
        EXPECT_EQ(bad, 0u) << sh.name << " n=" << sh.n;
    }
}

// Speed of the decode attention (one token against a cache of len positions), printed: the
// microsecond per layer and the cache bytes read per second. Each launch reads another layer's
// cache (enough layers to exceed L2), as in a decode step where the weights' reads flush L2
// between two layers' attention.
TEST(CudaKernelsBench, DecodeAttentionSpeed) {
    struct Shape { const char* name; int n_heads, n_kv, hd, len; };
    const Shape shapes[] = {{"llama3-8b", 32, 8, 128, 128},   {"llama3-8b", 32, 8, 128, 4096},  {"llama3-8b", 32, 8, 128, 8192},
                            {"llama3-8b", 32, 8, 128, 16384}, {"llama3-8b", 32, 8, 128, 32768}, {"qwen3-0.6b", 16, 8, 128, 128},
                            {"qwen2.5-0.5b", 14, 2, 64, 128}, {"qwen2.5-0.5b", 14, 2, 64, 16384}};
    int sms = 0;
    TT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (const Shape& sh : shapes) {
        const size_t kv_dim = size_t(sh.n_kv) * sh.hd, layer_bytes = 2 * size_t(sh.len) * kv_dim * 2;
        const int layers = int(std::min<size_t>(32, std::max<size_t>(2, (size_t(256) << 20) / layer_bytes + 1)));
        std::vector<float> q(size_t(sh.n_heads) * sh.hd);
        for (float& f : q) f = nd(rng);
        cuda::Dev dq(q), dout(q.size() * 4), dpos(std::vector<int>{sh.len - 1});
        std::vector<std::unique_ptr<cuda::Dev>> kc, vc;
        for (int l = 0; l < layers; ++l) {
            kc.push_back(std::make_unique<cuda::Dev>(size_t(sh.len) * kv_dim * 2));
            vc.push_back(std::make_unique<cuda::Dev>(size_t(sh.len) * kv_dim * 2));
            TT_CUDA_CHECK(cudaMemset(kc.back()->p, 0x3c, size_t(sh.len) * kv_dim * 2));  // bf16 ~0.012: finite keys and values
            TT_CUDA_CHECK(cudaMemset(vc.back()->p, 0x3c, size_t(sh.len) * kv_dim * 2));
        }
        // The CUDA-core kernel at the runtime's split count, the tensor-core one at 1x, 1/2 and 2x it.
        const struct { bool cuda_cores; int mult, div; } runs[] = {{true, 1, 1}, {false, 1, 1}, {false, 1, 2}, {false, 2, 1}};
        for (const auto& run : runs) {
            const int splits = std::clamp(run.mult * cuda::decode_attention_splits(sh.n_kv, sms) / run.div, 1, k_max_decode_splits);
            cuda::Dev part(decode_attention_partial_floats(sh.n_heads, sh.hd, splits) * 4);
            cuda::Dev arrivals(std::vector<int>(size_t(sh.n_kv), 0));
            cuda::DecodeAttnArgs a{};
            a.q = dq.as<float>(); a.kv_dt = DType::bf16; a.out = dout.as<float>(); a.partial = part.as<float>();
            a.arrivals = arrivals.as<int>(); a.d_pos = dpos.as<int>(); a.n_heads = sh.n_heads; a.n_kv_heads = sh.n_kv;
            a.head_dim = sh.hd; a.n_ctx = sh.len; a.n_splits = splits; a.scale = 1.0f / std::sqrt(float(sh.hd));
            a.cuda_cores_only = run.cuda_cores;
            auto round = [&] {
                for (int l = 0; l < layers; ++l) {
                    a.k_cache = kc[size_t(l)]->p;
                    a.v_cache = vc[size_t(l)]->p;
                    cuda::decode_attention(a, nullptr);
                }
            };
            round();
            const int reps = 10;
            const float ms = cuda::time_launches_ms(reps, [&](int) { round(); });
            const double us = 1e3 * ms / (reps * layers);
            std::printf("[bench] decode attention bf16 %-13s heads %d/%d hd %d len %-6d %-12s splits %-3d: %8.2f us/layer  %7.1f GB/s\n",
                        sh.name, sh.n_heads, sh.n_kv, sh.hd, sh.len, run.cuda_cores ? "CUDA cores" : "tensor cores", splits, us,
                        double(layer_bytes) / (us * 1e-6) / 1e9);
            const auto out = dout.get(q.size());
            size_t bad = 0;
            for (float f : out) bad += std::isfinite(f) ? 0 : 1;
            EXPECT_EQ(bad, 0u) << sh.name << " len " << sh.len;
        }
    }
}
