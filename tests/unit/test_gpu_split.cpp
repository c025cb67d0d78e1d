// Several GPUs (runtime/gpu_split.h, issue #22): the layer split and tensor-parallel arithmetic
// against hand-computed numbers on a small synthetic model, and --gpus lists.
#include "core/error.h"
#include "runtime/gpu_split.h"
#include "plan_test_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace tt;

namespace {

constexpr uint64_t MiB = uint64_t(1) << 20;

// plan_test_model.h's model with 8 layers (test_plan.cpp's has 4): the same working set besides
// the KV cache, which is 2 x 64 positions x 128 x 2 B = 32 KiB a layer. Every GPU keeps
//   135,135,320 (test_plan.cpp's fixed lines) - 131,072 (its 4 layers' KV) + the CUDA context.
constexpr uint64_t k_layer_kv = 32768;
constexpr uint64_t k_gpu_fixed = 135135320 - 4 * k_layer_kv + k_cuda_context;

PlanInput model() { return test::small_plan_input(8); }

// Two GPUs with `free0` and `free1` bytes free (budgets: free minus the margin).
SplitInput two(uint64_t free0, uint64_t free1) {
    SplitInput in;
    in.one = model();
    for (int d = 0; d < 2; ++d) {
        SplitGpu g;
        g.device = d;
        g.name = "gpu" + std::to_string(d);
        g.device_total = g.device_free = (d == 0 ? free0 : free1);
        in.gpus.push_back(g);
    }
    return in;
}

uint64_t free_for(uint64_t budget) { return budget + k_vram_margin; }

}  // namespace

TEST(GpuSplit, GpuLists) {
    EXPECT_EQ(parse_gpu_list("0"), (std::vector<int>{0}));
    EXPECT_EQ(parse_gpu_list("1,0,3"), (std::vector<int>{1, 0, 3}));
    for (const char* bad : {"", "0,,1", "a", "-1", "0,0", "1,", "0 1", "99999"}) {
        try {
            parse_gpu_list(bad);
            FAIL() << "'" << bad << "': expected an error";
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()).rfind("--gpus", 0), 0u) << e.what();
        }
    }
}

TEST(GpuSplit, EqualGpusTakeHalfTheLayersEach) {
    // Budget F + 8 MiB each: room for 6 MiB of layers beside the embedding (GPU 0) or the head
    // (GPU 1). Each layer costs 1 MiB + 32 KiB of KV: 8.25 MiB in all, cut at half of it.
    const SplitPlan p = make_split_plan(two(free_for(k_gpu_fixed + 8 * MiB), free_for(k_gpu_fixed + 8 * MiB)));
    ASSERT_TRUE(p.fits);
    ASSERT_EQ(p.gpus.size(), 2u);
    const GpuShare &a = p.gpus[0], &b = p.gpus[1];
    EXPECT_EQ(a.first_layer, 0);
    EXPECT_EQ(a.end_layer, 4);
    EXPECT_EQ(b.first_layer, 4);
    EXPECT_EQ(b.end_layer, 8);
    EXPECT_TRUE(a.embed && !a.head && b.head && !b.embed);
    EXPECT_EQ(a.fixed, k_gpu_fixed);
    EXPECT_EQ(a.weights, 2 * MiB + 4 * MiB);
    EXPECT_EQ(b.weights, 4 * MiB + 2 * MiB);
    EXPECT_EQ(a.kv, 4 * k_layer_kv);
    EXPECT_EQ(a.used, k_gpu_fixed + 6 * MiB + 4 * k_layer_kv);
    EXPECT_LE(a.used, a.budget);
    EXPECT_EQ(a.decode_read, 512 + 4 * MiB);
    EXPECT_EQ(b.decode_read, 4 * MiB + 2 * MiB);
    // 1 MiB per ms; 29.2 us per layer; one hop of 1 KB at 50 GB/s + 8 us.
    const double a_s = (512.0 + 4 * MiB) / MiB * 1e-3 + 4 * k_decode_layer_overhead_s;
    const double b_s = 6e-3 + 4 * k_decode_layer_overhead_s;
    const double hop = 1024 / 50e9 + 8e-6;
    EXPECT_NEAR(a.compute_s, a_s, 1e-12);
    EXPECT_NEAR(p.hop_s, hop, 1e-15);
    EXPECT_NEAR(p.layer_split_tps, 1.0 / (a_s + b_s + hop), 1e-6);
    // One GPU of the same budget (the first) streams what does not fit; the split is resident.
    EXPECT_GT(p.one_gpu_tps, 0);
    EXPECT_LT(p.one_gpu_tps, p.layer_split_tps);
    EXPECT_NE(p.one_gpu_summary.find("streamed"), std::string::npos) << p.one_gpu_summary;
    EXPECT_NE(p.table().find("0..3"), std::string::npos) << p.table();
    EXPECT_EQ(p.to_json()["gpus"][1]["first_layer"], 4);
}

TEST(GpuSplit, EachGpuKeepsItsOwnContext) {
    // GPU 0's context read as 3 MiB under the assumed one (NVML), GPU 1's not read (assumed): GPU 0
    // has room for 9 MiB of layers, GPU 1 for 6, so the cut at 8.25 x 9 / 15 = 4.95 MiB gives GPU 0
    // five layers. Tensor parallelism needs the larger working set on each GPU.
    SplitInput in = two(free_for(k_gpu_fixed + 8 * MiB), free_for(k_gpu_fixed + 8 * MiB));
    in.gpus[0].context_bytes = k_cuda_context - 3 * MiB;
    const SplitPlan p = make_split_plan(in);
    ASSERT_TRUE(p.fits);
    EXPECT_EQ(p.gpus[0].fixed, k_gpu_fixed - 3 * MiB);
    EXPECT_EQ(p.gpus[1].fixed, k_gpu_fixed);
    EXPECT_EQ(p.gpus[0].end_layer, 5);
    EXPECT_EQ(p.gpus[1].first_layer, 5);
    EXPECT_EQ(p.tp_used_per_gpu, k_gpu_fixed + 6 * MiB + 4 * k_layer_kv);
    // The one-GPU comparison plans GPU 0 with its own context: 3 MiB more room, more layers resident.
    SplitInput assumed = in;
    assumed.gpus[0].context_bytes = 0;
    EXPECT_GT(p.one_gpu_tps, make_split_plan(assumed).one_gpu_tps);
}

TEST(GpuSplit, TheLargerGpuTakesMoreLayers) {
    // Room for 2 MiB of layers on GPU 0 and 10 MiB on GPU 1: the proportional cut at 8.25 x 2 / 12
    // = 1.375 MiB gives GPU 0 one layer (the second would end past the cut by more than half).
    const SplitPlan p = make_split_plan(two(free_for(k_gpu_fixed + 4 * MiB), free_for(k_gpu_fixed + 12 * MiB)));
    ASSERT_TRUE(p.fits);
    EXPECT_EQ(p.gpus[0].end_layer, 1);
    EXPECT_EQ(p.gpus[1].first_layer, 1);
    EXPECT_EQ(p.gpus[1].end_layer, 8);
    EXPECT_LE(p.gpus[1].used, p.gpus[1].budget);
}

TEST(GpuSplit, TooSmallSaysHowManyLayersFit) {
    const SplitPlan p = make_split_plan(two(free_for(k_gpu_fixed + 4 * MiB), free_for(k_gpu_fixed + 4 * MiB)));
    EXPECT_FALSE(p.fits);
    EXPECT_EQ(p.layers_placed, 2);  // one per GPU: 2 MiB of room, 1.03 MiB a layer
    EXPECT_EQ(p.layer_split_tps, 0);
    ASSERT_FALSE(p.warnings.empty());
    EXPECT_NE(p.warnings[0].find("2 of 8 found room"), std::string::npos) << p.warnings[0];
    EXPECT_NE(p.summary().find("layer split does not fit"), std::string::npos) << p.summary();
}

TEST(GpuSplit, TensorParallelism) {
    // Each GPU holds half of every matrix and of the KV cache, reads half a token's bytes, and
    // waits for 2 x 8 + 1 all-reduces of (8 us + 2 x 1/2 x 1 KB at 50 GB/s).
    SplitInput in = two(free_for(k_gpu_fixed + 8 * MiB), free_for(k_gpu_fixed + 8 * MiB));
    const SplitPlan p = make_split_plan(in);
    EXPECT_TRUE(p.tp_why.empty()) << p.tp_why;
    EXPECT_EQ(p.tp_used_per_gpu, k_gpu_fixed + 6 * MiB + 4 * k_layer_kv);
    const double ar = 8e-6 + 1024 / 50e9;
    EXPECT_NEAR(p.tp_allreduce_s, ar, 1e-15);
    const double tp_s = (512.0 + 10 * MiB) / 2 / MiB * 1e-3 + 8 * k_decode_layer_overhead_s + 17 * ar;
    EXPECT_NEAR(p.tensor_parallel_tps, 1.0 / tp_s, 1e-6);
    EXPECT_EQ(p.best, "tensor parallel");
    // Three GPUs do not divide 4 heads; a mixture of experts is not planned; no room is said.
    SplitInput three = in;
    three.gpus.push_back(three.gpus.back());
    three.gpus.back().device = 2;
    const SplitPlan p3 = make_split_plan(three);
    EXPECT_EQ(p3.tensor_parallel_tps, 0);
    EXPECT_NE(p3.tp_why.find("3 GPUs do not divide the 4 attention heads"), std::string::npos) << p3.tp_why;
    SplitInput small = two(free_for(k_gpu_fixed + 2 * MiB), free_for(k_gpu_fixed + 2 * MiB));
    EXPECT_NE(make_split_plan(small).tp_why.find("more than the smallest budget"), std::string::npos);
    // Faster links shrink the all-reduces: doctor's figures replace the assumed ones.
    in.peer_gbs = 400;
    in.peer_latency_s = 3e-6;
    EXPECT_GT(make_split_plan(in).tensor_parallel_tps, p.tensor_parallel_tps);
}

TEST(GpuSplit, RefusesWhatItCannotPlace) {
    SplitInput in = two(free_for(k_gpu_fixed + 8 * MiB), free_for(k_gpu_fixed + 8 * MiB));
    in.gpus.pop_back();
    EXPECT_THROW(make_split_plan(in), Error);  // one GPU
    SplitInput g4 = two(free_for(k_gpu_fixed + 8 * MiB), free_for(k_gpu_fixed + 8 * MiB));
    g4.one.spec.per_layer_dim = 16;
    g4.one.spec.hf_architecture = "Gemma4ForCausalLM";
    try {
        make_split_plan(g4);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("Gemma4ForCausalLM shares KV caches between layers"), std::string::npos) << e.what();
    }
}

TEST(GpuSplit, Llama3_8BShapeOnTwoH200s) {
    // The case with the H200's measured device copy (4216 GB/s), PCIe (55 GB/s) and host
    // read (93 GB/s) (docs/BENCHMARKS.md) and the assumed link: the shape's blocks (bf16: 436 MB a
    // layer, 1.05 GB embedding and head), context 4096. Printed for docs/STREAMING.md; held to what
    // the arithmetic must give.
    auto shape = [](DType dt, double bytes_per_weight) {
        const uint64_t layer = uint64_t((2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336) * bytes_per_weight);
        const uint64_t table = uint64_t(128256.0 * 4096 * 2), head = uint64_t(128256.0 * 4096 * bytes_per_weight);
        PlanInput in = test::plan_input_of({32, 4096, 32, 8, 128, 14336, 128256, 4096, layer, table, 4096 * 2, head}, dt);
        in.spec.max_context = 8192;
        if (bytes_per_weight < 2) in.dequant_scratch = k_dequant_scratch;
        in.device_total = in.device_free = 141ull << 30;
        in.ram_available = 100ull << 30;
        in.bw.device_gbs = 4216;
        in.bw.h2d_pinned_gbs = 55;
        in.bw.host_read_gbs = 93;  // the H200 host's (bench/results/2026-12-01-h200-cpu)
        in.cpu_layers = 0;
        return in;
    };
    auto on_two = [](PlanInput one, uint64_t budget) {
        SplitInput in;
        one.vram_budget = budget;
        in.one = one;
        for (int d = 0; d < 2; ++d) in.gpus.push_back({d, "H200", 141ull << 30, 140ull << 30, 4216});
        return make_split_plan(in);
    };
    const SplitPlan whole = on_two(shape(DType::bf16, 2), 0);
    const SplitPlan small = on_two(shape(DType::bf16, 2), 8ull << 30);
    const SplitPlan small8 = on_two(shape(DType::bf16, 1.0 + 4.0 / 4096), 8ull << 30);  // INT8: a byte and a scale per row
    std::printf("Llama-3-8B shape, 2 x H200 (link assumed %.0f GB/s, %.0f us): one GPU %.1f, layer split %.1f, tensor parallel %.1f "
                "tok/s (x%.2f); at 8 GiB per GPU: bf16 %s (%d of 32 layers), INT8 layer split %.1f tok/s, one GPU INT8 %.1f tok/s (%s)\n",
                SplitInput::k_assumed_peer_gbs, SplitInput::k_assumed_peer_latency_s * 1e6, whole.one_gpu_tps, whole.layer_split_tps,
                whole.tensor_parallel_tps, whole.tensor_parallel_tps / whole.one_gpu_tps, small.fits ? "fits" : "does not fit",
                small.layers_placed, small8.layer_split_tps, small8.one_gpu_tps, small8.one_gpu_summary.c_str());
    EXPECT_TRUE(whole.fits);
    EXPECT_LT(whole.layer_split_tps, whole.one_gpu_tps);  // a layer split adds hops, not bandwidth
    EXPECT_GT(whole.tensor_parallel_tps, 1.3 * whole.one_gpu_tps);
    EXPECT_LT(whole.tensor_parallel_tps, 2.0 * whole.one_gpu_tps);
    EXPECT_EQ(whole.best, "tensor parallel");
    EXPECT_FALSE(small.fits);                       // 15 GB of bf16 weights in 2 x 8 GiB less the working sets
    EXPECT_TRUE(small8.fits);
    EXPECT_GT(small8.layer_split_tps, 5 * small8.one_gpu_tps);  // resident across two instead of streamed over PCIe
}
