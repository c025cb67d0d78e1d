// The fit planner's small synthetic model, shared by its tests (test_plan.cpp, test_gpu_split.cpp):
// n_layers layers of 1 MiB each (a token reads each whole), hidden 256, 4 heads / 2 KV heads of 64,
// FFN 512, vocab 1000, bf16, context 64; blocks embed 2 MiB (a token reads one 512-byte row),
// layer.0 .. layer.N-1, output 2 MiB. The device copies 1 MiB per ms after the planner's
// efficiency, PCIe 0.5 MiB per ms; an 80 GiB GPU with 79 GiB free; no CPU layers.
#pragma once

#include "runtime/plan.h"

#include <string>

namespace tt::test {

inline PlanInput small_plan_input(int n_layers) {
    constexpr uint64_t mib = uint64_t(1) << 20;
    PlanInput in;
    ModelSpec& s = in.spec;
    s.n_layers = n_layers;
    s.hidden_dim = 256;
    s.n_heads = 4;
    s.n_kv_heads = 2;
    s.head_dim = 64;
    s.ffn_dim = 512;
    s.vocab_size = 1000;
    s.max_context = 64;
    s.layers.assign(size_t(n_layers), LayerSpec{});
    in.weights = DType::bf16;
    in.context = 64;
    uint64_t off = 4096;
    auto add = [&](const std::string& name, int layer, uint64_t bytes, uint64_t read) {
        in.blocks.push_back({name, layer, -1, off, bytes, read});
        off += bytes;
    };
    add("embed", -1, 2 * mib, 512);  // decode reads one row of 256 bf16
    for (int i = 0; i < n_layers; ++i) add("layer." + std::to_string(i), i, mib, mib);
    add("output", -1, 2 * mib, 2 * mib);
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
