// The fit planner's small synthetic model, shared by its tests (test_plan.cpp, test_gpu_split.cpp):
// n_layers layers of 1 MiB each (a token reads each whole), hidden 256, 4 heads / 2 KV heads of 64,
// FFN 512, vocab 1000, bf16, context 64; blocks embed 2 MiB (a token reads one 512-byte row),
// layer.0 .. layer.N-1, output 2 MiB. The device copies 1 MiB per ms after the planner's
// efficiency, PCIe 0.5 MiB per ms; an 80 GiB GPU with 79 GiB free; no CPU layers.
#pragma once

#include "runtime/plan.h"

#include <string>

namespace tt::test {

// A decoder-only shape as the planner sees it: the spec's sizes and the blocks' bytes (each layer
// read whole per token, the embedding one row of `embed_read` bytes, the head whole).
struct TestShape {
    int n_layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0, context = 0;
    uint64_t layer_bytes = 0, embed_bytes = 0, embed_read = 0, output_bytes = 0;
};

inline PlanInput plan_input_of(const TestShape& t, DType weights) {
    PlanInput in;
    ModelSpec& s = in.spec;
    s.n_layers = t.n_layers;
    s.hidden_dim = t.hidden;
    s.n_heads = t.heads;
    s.n_kv_heads = t.kv_heads;
    s.head_dim = t.head_dim;
    s.ffn_dim = t.ffn;
    s.vocab_size = t.vocab;
    s.max_context = t.context;
    s.layers.assign(size_t(t.n_layers), LayerSpec{});
    in.weights = weights;
    in.context = t.context;
    uint64_t off = 4096;
    auto add = [&](const std::string& name, int layer, uint64_t bytes, uint64_t read) {
        in.blocks.push_back({name, layer, -1, off, bytes, read});
        off += bytes;
    };
    add("embed", -1, t.embed_bytes, t.embed_read);
    for (int i = 0; i < t.n_layers; ++i) add("layer." + std::to_string(i), i, t.layer_bytes, t.layer_bytes);
    add("output", -1, t.output_bytes, t.output_bytes);
    return in;
}

inline PlanInput small_plan_input(int n_layers) {
    constexpr uint64_t mib = uint64_t(1) << 20;
    // decode reads one embedding row of 256 bf16
    PlanInput in = plan_input_of({n_layers, 256, 4, 2, 64, 512, 1000, 64, mib, 2 * mib, 512, 2 * mib}, DType::bf16);
    in.device_total = 80ull << 30;
    in.device_free = 79ull << 30;
    in.ram_available = 64ull << 30;
    in.bw.h2d_pinned_gbs = 0.5 * double(mib) / 1e6;           // 0.5 MiB per ms
    in.bw.device_gbs = double(mib) / 1e6 / k_decode_efficiency;  // 1 MiB per ms after the efficiency
    in.bw.gemm_tflops = 100;
    in.cpu_layers = 0;  // the CPU as a third place has tests of its own (CpuLayers*)
    return in;
}

}  // namespace tt::test
