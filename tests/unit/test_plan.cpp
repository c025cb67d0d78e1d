// The fit planner's arithmetic against hand-computed numbers on a small synthetic model.
#include "core/error.h"
#include "core/progress.h"
#include "runtime/plan.h"
#include "model/tensor_names.h"
#include "plan_test_model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

using namespace tt;

namespace {

constexpr uint64_t MiB = uint64_t(1) << 20;

// 4 layers, hidden 256, 4 heads / 2 KV heads of 64, FFN 512, vocab 1000, bf16, context 64
// (plan_test_model.h). Blocks: embed 2 MiB, layers 1 MiB each, output 2 MiB (sizes chosen for easy sums).
//
// Fixed working set by hand:
//   KV cache           2 * 4 layers * 64 positions * 128 kv_dim * 2 B          =    131,072
//   prefill workspace  T = K = 64: px 65536 + ph 32768 + pqkv 131072 + pqb 32768
//                      + att 32768 + gate/up 131072 + act 65536 + ids 256
//                      + logits 4000 (bf16, head_dim 64: flash attention, no
//                      score buffers; no sandwich norms, no tmp)              =    495,776
//   activations        (256 + 2*256 + 2*128 + 512 + 512 + 1000) * 4
//                      + partials 4 heads * 256 splits * 68 * 4
//                      + arrivals 2 * 4 + io 16                               =    290,744
//   cuBLAS 64 MiB + slack 64 MiB                                              = 134,217,728
//   total                                                                     = 135,135,320
constexpr uint64_t k_fixed = 135135320 + k_cuda_context;  // the fixed lines, and the CUDA context every plan counts

// The hand-computed placements below stream through a ring of 2 slots; RingOfOneSlot* cover the
// planner's own choice of 1.
PlanInput small_input() {
    PlanInput in = test::small_plan_input(4);
    in.ring_slots = 2;
    return in;
}

}  // namespace

uint64_t entry(const PrefillBuffers& l, PrefillBuf b) { return l[size_t(b)].bytes; }

TEST(Plan, PrefillBuffersByHand) {
    const ModelSpec s = small_input().spec;
    const PrefillBuffers bf16 = prefill_buffers(s, 64, 64, DType::bf16, 1);
    EXPECT_EQ(total_bytes(bf16), 495776u);
    EXPECT_EQ(entry(bf16, PrefillBuf::x), 65536u);
    EXPECT_EQ(entry(bf16, PrefillBuf::qkv), 131072u);
    EXPECT_EQ(entry(bf16, PrefillBuf::gate_up), 131072u);
    EXPECT_EQ(entry(bf16, PrefillBuf::logits), 4000u);
    EXPECT_EQ(entry(bf16, PrefillBuf::scores), 0u);  // the flash kernel covers bf16 with head_dim 64
    EXPECT_EQ(entry(bf16, PrefillBuf::proj), 0u);    // no sandwich norms
    EXPECT_EQ(total_bytes(prefill_buffers(s, 64, 64, DType::f16, 1)), 495776u);
    // All-position logits: one row of 1000 f32 per token.
    EXPECT_EQ(entry(prefill_buffers(s, 64, 64, DType::bf16, 64), PrefillBuf::logits), 64u * 4000u);
    // f32 weights keep an f32 KV cache, which has no flash kernel: every weights'/KV-dtype buffer
    // doubles and the scores and probabilities appear (4 heads * 64 queries * 64 keys * 4 B each).
    const PrefillBuffers f32 = prefill_buffers(s, 64, 64, DType::f32, 1);
    EXPECT_EQ(entry(f32, PrefillBuf::scores), 65536u);
    EXPECT_EQ(entry(f32, PrefillBuf::probs), 65536u);
    EXPECT_EQ(total_bytes(f32), 495776u + 32768u * 3 + 131072u + 65536u + 65536u * 2);  // = 921,760
    // Scores are materialized for at most 512 queries at a time, against every key.
    ModelSpec odd = s;
    odd.head_dim = 96;  // phi3's: no flash kernel
    EXPECT_EQ(entry(prefill_buffers(odd, 2048, 4096, DType::bf16, 1), PrefillBuf::scores), 4u * 512 * 4096 * 4);
    // Sandwich norms (Gemma) keep each projection in f32 before its post-norm: + 64 * 256 * 4.
    ModelSpec gemma = s;
    gemma.sandwich_norm = true;
    EXPECT_EQ(entry(prefill_buffers(gemma, 64, 64, DType::bf16, 1), PrefillBuf::proj), 65536u);
}

// A shared expert (Qwen2-MoE / Qwen3.5-MoE) runs through the dense MLP's gate/up and activation
// buffers, grown to its width, and keeps its output (and gate logit) apart until the combine.
TEST(Plan, SharedExpertBuffersByHand) {
    ModelSpec s = small_input().spec;  // hidden 256, ffn 512
    for (LayerSpec& l : s.layers) l.ffn = FfnKind::moe;
    s.moe.n_experts = 8;
    s.moe.top_k = 2;
    s.moe.expert_ffn_dim = 64;
    auto decode_entry = [](const DecodeBuffers& l, DecodeBuf b) { return l[size_t(b)].bytes; };
    const PrefillBuffers routed = prefill_buffers(s, 64, 64, DType::bf16, 1);
    EXPECT_EQ(entry(routed, PrefillBuf::shexp_y), 0u);
    EXPECT_EQ(entry(routed, PrefillBuf::shexp_logit), 0u);
    EXPECT_EQ(entry(routed, PrefillBuf::gate_up), 64u * 2 * 512 * 2);
    EXPECT_EQ(decode_entry(decode_buffers(s, 1), DecodeBuf::shexp_out), 0u);
    s.moe.shared_ffn_dim = 1024;  // wider than ffn_dim: gate_up and act grow to it
    s.moe.shared_gate = true;
    const PrefillBuffers p = prefill_buffers(s, 64, 64, DType::bf16, 1);
    EXPECT_EQ(entry(p, PrefillBuf::gate_up), 64u * 2 * 1024 * 2);
    EXPECT_EQ(entry(p, PrefillBuf::act), 64u * 1024 * 2);
    EXPECT_EQ(entry(p, PrefillBuf::shexp_y), 64u * 256 * 4);
    EXPECT_EQ(entry(p, PrefillBuf::shexp_logit), 64u * 4);
    EXPECT_EQ(total_bytes(p) - total_bytes(routed), 64u * 2 * 512 * 2 + 64u * 512 * 2 + 64u * 256 * 4 + 64u * 4);
    const DecodeBuffers d = decode_buffers(s, 1);
    EXPECT_EQ(decode_entry(d, DecodeBuf::shexp_act), 1024u * 4);
    EXPECT_EQ(decode_entry(d, DecodeBuf::shexp_out), 256u * 4);
    EXPECT_EQ(decode_entry(d, DecodeBuf::shexp_logit), 4u);
    s.moe.shared_gate = false;  // Qwen2-MoE-style without the sigmoid gate: no logits
    EXPECT_EQ(entry(prefill_buffers(s, 64, 64, DType::bf16, 1), PrefillBuf::shexp_logit), 0u);
    EXPECT_EQ(decode_entry(decode_buffers(s, 1), DecodeBuf::shexp_logit), 0u);
    EXPECT_EQ(decode_entry(decode_buffers(s, 1), DecodeBuf::shexp_out), 256u * 4);
}

TEST(Plan, DecodeBuffersAndKernelFacts) {
    const ModelSpec s = small_input().spec;
    EXPECT_EQ(total_bytes(decode_buffers(s, k_max_decode_splits)), 290744u);
    EXPECT_EQ(decode_buffers(s, 3)[size_t(DecodeBuf::partial)].bytes, 4u * 3 * 68 * 4);
    EXPECT_EQ(decode_buffers(s, 3)[size_t(DecodeBuf::io)].bytes, 16u);
    EXPECT_TRUE(flash_prefill_supported(DType::bf16, 128));
    EXPECT_TRUE(flash_prefill_supported(DType::f16, 256));
    EXPECT_FALSE(flash_prefill_supported(DType::f32, 64));
    EXPECT_FALSE(flash_prefill_supported(DType::bf16, 96));
    EXPECT_EQ(kv_cache_dtype(DType::bf16), DType::bf16);
    EXPECT_EQ(kv_cache_dtype(DType::f32), DType::f32);
    EXPECT_EQ(kv_cache_layer_bytes(s, 64, DType::bf16), 64u * 128 * 2);
    EXPECT_EQ(prefill_chunk_tokens(100), 100);
    EXPECT_EQ(prefill_chunk_tokens(100000), k_prefill_chunk);
    // Every entry is named (the plan and the backend's messages print them).
    for (const BufferSize& b : prefill_buffers(s, 1, 1, DType::bf16, 1)) EXPECT_TRUE(b.name && *b.name);
    for (const BufferSize& b : decode_buffers(s, 1)) EXPECT_TRUE(b.name && *b.name);
}

// The plan's fixed lines are sums of the very lists the CUDA backend allocates from.
TEST(Plan, FixedLinesSumTheBackendsBufferLists) {
    for (DType dt : {DType::bf16, DType::f32}) {
        PlanInput in = small_input();
        in.weights = dt;
        in.context = 64;
        const Plan p = make_plan(in);
        auto line = [&](const std::string& prefix) {
            for (const MemLine& l : p.vram)
                if (l.what.rfind(prefix, 0) == 0) return l.bytes;
            ADD_FAILURE() << "no VRAM line " << prefix;
            return uint64_t(0);
        };
        EXPECT_EQ(line("KV cache"), 2 * 4 * kv_cache_layer_bytes(in.spec, 64, dt));
        EXPECT_EQ(line("prefill workspace"), total_bytes(prefill_buffers(in.spec, 64, 64, dt, 1)));
        EXPECT_EQ(line("decode activations"), total_bytes(decode_buffers(in.spec, k_max_decode_splits)));
        EXPECT_EQ(line("cuBLAS workspace"), k_cublas_workspace);
    }
    EXPECT_EQ(fixed_vram_lines(small_input().spec, DType::bf16, 64).size(), 5u);
}

TEST(Plan, SequenceSlotsEachKeepAKvCache) {
    // serve --parallel N: N KV caches of `context` positions; the other fixed lines once.
    PlanInput in = small_input();
    const Plan one = make_plan(in);
    in.n_sequences = 4;
    const Plan four = make_plan(in);
    const uint64_t kv = kv_cache_bytes(in.spec, in.context, in.weights);
    auto line = [](const Plan& p, const std::string& prefix) {
        for (const MemLine& l : p.vram)
            if (l.what.rfind(prefix, 0) == 0) return l;
        ADD_FAILURE() << "no VRAM line " << prefix;
        return MemLine{};
    };
    EXPECT_EQ(line(one, "KV cache").bytes, kv);
    EXPECT_EQ(line(four, "KV cache").bytes, 4 * kv);
    EXPECT_NE(line(four, "KV cache").what.find("x 4 sequence slots"), std::string::npos) << line(four, "KV cache").what;
    EXPECT_EQ(line(four, "prefill workspace").bytes, line(one, "prefill workspace").bytes);
    EXPECT_EQ(four.vram_used, one.vram_used + 3 * kv);
}

TEST(Plan, EverythingFits) {
    PlanInput in = small_input();
    const Plan p = make_plan(in);  // automatic budget: 79 GiB free minus 512 MiB
    EXPECT_EQ(p.vram_budget, (79ull << 30) - k_vram_margin);
    EXPECT_FALSE(p.streaming());
    EXPECT_FALSE(p.embed_host_mapped);
    EXPECT_EQ(p.n_resident_layers, 4);
    EXPECT_EQ(p.vram_used, k_fixed + 8 * MiB);
    EXPECT_EQ(p.pcie_bytes, 0u);
    EXPECT_TRUE(p.warnings.empty());
    // Decode reads 512 B + 4 MiB + 2 MiB at 1 MiB/ms, plus the launch cost of 4 layers.
    EXPECT_NEAR(p.decode_compute_s, (512.0 / double(MiB) + 6) * 1e-3 + 4 * k_decode_layer_overhead_s, 1e-9);
    EXPECT_NEAR(p.decode_tps, 1.0 / p.decode_compute_s, 1e-6);
    EXPECT_NE(p.summary().find("all 4 layers resident"), std::string::npos) << p.summary();
}

TEST(Plan, StreamsTheLastLayersWithTheHeadResident) {
    PlanInput in = small_input();
    in.vram_budget = k_fixed + 5 * MiB;
    const Plan p = make_plan(in);
    // Embedding to host memory; output (2) + layer 0 (1) + ring 2 x 1 MiB = 5 MiB. Streaming the head
    // too would need a ring of 2 x 2 MiB and stream 5 MiB instead of 3.
    EXPECT_TRUE(p.embed_host_mapped);
    EXPECT_EQ(p.blocks[0].place, Placement::host_mapped);
    EXPECT_EQ(p.n_resident_layers, 1);
    EXPECT_EQ(p.blocks[1].place, Placement::vram);
    for (int i = 2; i <= 4; ++i) {
        EXPECT_EQ(p.blocks[size_t(i)].place, Placement::registered);
        EXPECT_EQ(p.blocks[size_t(i)].stream_index, i - 2);
    }
    EXPECT_EQ(p.blocks[5].place, Placement::vram);
    EXPECT_EQ(p.ring_slots, 2);
    EXPECT_EQ(p.slot_bytes, MiB);
    EXPECT_EQ(p.vram_used, k_fixed + 5 * MiB);
    EXPECT_EQ(p.pcie_bytes, 3 * MiB);
    EXPECT_EQ(p.ram_used, 5 * MiB);  // embedding 2 + streamed layers 3, registered
    // Copies: 3 MiB at 0.5 MiB/ms = 6 ms, then layer 3 and the head (3 MiB at 1 MiB/ms, one layer's
    // launch cost) run after the last copy: 9 ms + 33.6 us per token, above the kernels' ~6.1 ms.
    EXPECT_NEAR(p.decode_copy_s, 6e-3, 1e-9);
    EXPECT_NEAR(p.decode_tps, 1.0 / (9e-3 + k_decode_layer_overhead_s), 1e-6);
    EXPECT_NEAR(p.pcie_bound_tps, 1.0 / 6e-3, 1e-6);
    EXPECT_NE(p.summary().find("1 of 4 layers resident (embedding in host memory), 3 blocks streamed (3 from registered host memory)"),
              std::string::npos)
        << p.summary();
}

// The context's line is what NVML measured for the process when the backend says (context_bytes),
// else the assumed k_cuda_context: at the same budget a smaller measured context keeps more
// layers resident.
TEST(Plan, MeasuredContextReplacesTheAssumedOne) {
    PlanInput in = small_input();
    in.vram_budget = k_fixed + 5 * MiB;  // the assumed context: 1 layer resident (above)
    EXPECT_EQ(make_plan(in).n_resident_layers, 1);
    in.context_bytes = k_cuda_context - MiB;  // 1 MiB less: no ring, every layer resident (the embedding stays in host memory)
    const Plan p = make_plan(in);
    EXPECT_EQ(p.n_resident_layers, 4);
    EXPECT_FALSE(p.streaming());
    EXPECT_TRUE(p.embed_host_mapped);
    EXPECT_EQ(p.vram_used, k_fixed - MiB + 6 * MiB);
    auto line = [&](const std::string& what) {
        for (const auto& l : p.vram)
            if (l.what.find(what) != std::string::npos) return l.bytes;
        return uint64_t(0);
    };
    EXPECT_EQ(line("this process in nvidia-smi, by NVML"), k_cuda_context - MiB) << p.table();
    EXPECT_EQ(line("assumed"), 0u) << p.table();
}

TEST(Plan, TooSmallBudgetNamesTheMinimum) {
    PlanInput in = small_input();
    // The smallest candidate: head resident (2 MiB), every layer streamed through 2 x 1 MiB.
    in.vram_budget = k_fixed + 4 * MiB - 1;
    try {
        make_plan(in);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("--vram-budget"), std::string::npos) << msg;
        EXPECT_NE(msg.find("below the minimum working set of " + format_bytes(double(k_fixed + 4 * MiB))), std::string::npos) << msg;
        EXPECT_NE(msg.find("ring 2 x 1.00 MiB"), std::string::npos) << msg;
    }
    in.vram_budget = k_fixed + 4 * MiB;
    const Plan p = make_plan(in);
    EXPECT_EQ(p.min_vram, k_fixed + 4 * MiB);
    EXPECT_EQ(p.n_resident_layers, 0);
    EXPECT_EQ(p.pcie_bytes, 4 * MiB);
}

TEST(Plan, BudgetAboveTheGpuIsClampedWithAWarning) {
    PlanInput in = small_input();
    in.vram_budget = 100ull << 30;
    const Plan p = make_plan(in);
    EXPECT_EQ(p.vram_budget, (79ull << 30) - k_vram_margin);
    ASSERT_EQ(p.warnings.size(), 1u);
    EXPECT_NE(p.warnings[0].find("more than the GPU's 80.00 GiB"), std::string::npos) << p.warnings[0];
}

TEST(Plan, ShortRamReadsTheRestFromDisk) {
    PlanInput in = small_input();
    in.vram_budget = k_fixed + 5 * MiB;
    in.ram_budget = 4 * MiB;  // embedding 2 + bounce buffer 1 + one registered layer 1
    const Plan p = make_plan(in);
    EXPECT_EQ(p.bounce_bytes, MiB);
    EXPECT_EQ(p.blocks[2].place, Placement::registered);
    EXPECT_EQ(p.blocks[3].place, Placement::disk);
    EXPECT_EQ(p.blocks[4].place, Placement::disk);
    EXPECT_EQ(p.disk_bytes, 2 * MiB);
    EXPECT_EQ(p.ram_used, 4 * MiB);
    in.ram_budget = 2 * MiB + MiB - 1;  // not even the bounce buffer beside the embedding
    EXPECT_THROW(make_plan(in), Error);
}

TEST(Plan, NoRegistrationKeepsTheEmbeddingResidentAndBounces) {
    PlanInput in = small_input();
    in.can_register = false;
    in.vram_budget = k_fixed + 7 * MiB;  // embed 2 + output 2 + layer 0 + ring 2 x 1
    const Plan p = make_plan(in);
    EXPECT_FALSE(p.embed_host_mapped);
    EXPECT_EQ(p.blocks[0].place, Placement::vram);
    EXPECT_EQ(p.n_resident_layers, 1);
    for (int i = 2; i <= 4; ++i) EXPECT_EQ(p.blocks[size_t(i)].place, Placement::bounce);
    EXPECT_EQ(p.host_copy_bytes, 3 * MiB);
    EXPECT_EQ(p.bounce_bytes, MiB);
}

TEST(Plan, TiedEmbeddingIsTheHead) {
    PlanInput in = small_input();
    in.spec.tied_embeddings = true;
    in.blocks[0].decode_read = 2 * MiB;  // the head reads it all
    in.blocks[5].bytes = in.blocks[5].decode_read = 4096;  // output: the final norm only
    // Everything but the blocks: embed 2 + 4 layers + norm block 4 KiB. Give 4 MiB + 4 KiB:
    // head resident (2 MiB + 4 KiB) + ring 2 x 1 MiB with every layer streamed.
    in.vram_budget = k_fixed + 4 * MiB + 4096;
    const Plan p = make_plan(in);
    EXPECT_FALSE(p.embed_host_mapped);
    EXPECT_EQ(p.blocks[0].place, Placement::vram);
    EXPECT_EQ(p.n_resident_layers, 0);
    EXPECT_EQ(p.pcie_bytes, 4 * MiB);
}

// ---- mixture of experts: every expert resident when they fit, else a VRAM expert cache ----

namespace {
// small_input()'s dense part with every layer a mixture of 8 experts (top 2), each expert a
// 256 KiB block; the MoE fixed lines differ from k_fixed (the routing buffers), so they are summed.
PlanInput moe_input() {
    PlanInput in = small_input();
    ModelSpec& s = in.spec;
    for (auto& l : s.layers) l.ffn = FfnKind::moe;
    s.moe = {8, 2, 128, true, 0, false};
    in.blocks.clear();
    uint64_t off = 4096;
    auto add = [&](const std::string& name, int layer, int expert, uint64_t bytes, uint64_t read) {
        in.blocks.push_back({name, layer, expert, off, bytes, read});
        off += bytes;
    };
    add("embed", -1, -1, 2 * MiB, 512);
    for (int i = 0; i < 4; ++i) {
        add("layer." + std::to_string(i), i, -1, MiB, MiB);
        for (int e = 0; e < 8; ++e) add(expert_block_name(i, e), i, e, 256 * 1024, 64 * 1024);  // read 2 of 8
    }
    add("output", -1, -1, 2 * MiB, 2 * MiB);
    return in;
}
uint64_t moe_fixed(const PlanInput& in) {
    uint64_t f = k_cuda_context;
    for (const auto& l : fixed_vram_lines(in.spec, in.weights, in.context)) f += l.bytes;
    return f;
}
}  // namespace

TEST(Plan, MixtureOfExpertsResidentOrCached) {
    PlanInput in = moe_input();
    const uint64_t fixed = moe_fixed(in);
    Plan p = make_plan(in);
    EXPECT_FALSE(p.streaming());
    EXPECT_EQ(p.expert_slots, 0);
    EXPECT_EQ(p.vram_used, fixed + 8 * MiB + 32 * 256 * 1024);
    // The smallest budget: dense blocks resident but the embedding (host-mapped), one slot per MoE layer.
    EXPECT_EQ(p.min_vram, fixed + 6 * MiB + 4 * 256 * 1024);
    // Between: the dense part first, the rest as slots.
    in.vram_budget = fixed + 6 * MiB + 10 * 256 * 1024 + 1000;
    p = make_plan(in);
    EXPECT_EQ(p.expert_slots, 10);
    EXPECT_EQ(p.n_experts_total, 32);
    EXPECT_TRUE(p.embed_host_mapped);
    EXPECT_LE(p.vram_used, p.vram_budget);
    EXPECT_EQ(p.active_expert_bytes, 4u * 2 * 256 * 1024);
    EXPECT_EQ(p.pcie_bytes, uint64_t((1.0 - 10.0 / 32) * 4 * 2 * 256 * 1024));
    for (const auto& b : p.blocks) EXPECT_EQ(b.place == Placement::expert_cache, b.expert >= 0) << b.name;
    EXPECT_NE(p.table().find("expert cache: 10 slots"), std::string::npos) << p.table();
    EXPECT_NE(p.summary().find("10 of 32 experts cached in VRAM"), std::string::npos) << p.summary();
    // --expert-slots caps the cache even when everything would fit, and has a floor.
    in.vram_budget = 0;
    in.expert_slots = 6;
    EXPECT_EQ(make_plan(in).expert_slots, 6);
    in.expert_slots = 3;
    try {
        make_plan(in);
        ADD_FAILURE() << "3 slots for 4 MoE layers planned";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--expert-slots 3 is below the minimum of 4"), std::string::npos) << e.what();
    }
    // Below the dense part plus one slot per layer: an error naming the minimum.
    in.expert_slots = 0;
    in.vram_budget = fixed + 6 * MiB + 3 * 256 * 1024;
    try {
        make_plan(in);
        ADD_FAILURE() << "a budget below the minimum planned";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("below the minimum working set of " + format_bytes(double(fixed + 6 * MiB + 4 * 256 * 1024)) +
                           " for this mixture-of-experts model"), std::string::npos) << msg;
        EXPECT_NE(msg.find("4 expert slots"), std::string::npos) << msg;
    }
}

TEST(Plan, SimulatePassByHand) {
    // One ring slot: the second streamed block's copy waits until the first block's step is done.
    std::vector<PassStep> steps(3);
    steps[0] = {1e-3, false, -1, -1};   // resident, 1 ms
    steps[1] = {1e-3, false, 2e-3, -1}; // copy 0..2 ms, runs 2..3
    steps[2] = {1e-3, false, 2e-3, 1};  // copy starts at 3 (slot freed), 3..5, runs 5..6
    EXPECT_NEAR(simulate_pass(steps, 0), 6e-3, 1e-12);
    // A CPU step between: two handoffs, and the copy overlaps it.
    steps.insert(steps.begin() + 1, PassStep{4e-3, true, -1, -1});
    steps[3].slot_after = 2;
    // 0..1 resident, handoff 1..1.1, CPU 1.1..5.1, handoff ..5.2, block 1 copied 0..2 runs 5.2..6.2,
    // block 2 copied 6.2..8.2 runs 8.2..9.2.
    EXPECT_NEAR(simulate_pass(steps, 0.1e-3), 9.2e-3, 1e-12);
    // Ending on the CPU hands the state back.
    EXPECT_NEAR(simulate_pass({PassStep{1e-3, true, -1, -1}}, 0.1e-3), 1.2e-3, 1e-12);
}

TEST(Plan, CpuLayersBesideTheStream) {
    // The streaming plan above (layer 0 and the head resident, layers 1..3 streamed), with a CPU that
    // reads at the PCIe rate, 0.5 MiB/ms: a CPU layer costs 2 ms + overhead, a copy 2 ms.
    PlanInput in = small_input();
    in.vram_budget = k_fixed + 5 * MiB;
    in.cpu_layers = -1;
    in.bw.cpu_gemv_gbs = in.bw.host_read_gbs = in.bw.h2d_pinned_gbs;
    in.bw.cpu_threads = 8;
    const Plan p = make_plan(in);
    const double gpu_ms = 1.0 + k_decode_layer_overhead_s * 1e3, h = k_handoff_s * 1e3;
    const double cpu_ms = 2.0 / k_cpu_efficiency + k_cpu_layer_overhead_s * 1e3;  // 3.21 ms
    // By hand, per count of CPU layers (the streamed ones end the group): 0: 9.03 ms (above);
    // 1 (layer 1 on the CPU; layers 2, 3 copied 0..2 and 2..4 meanwhile): layer 0 ends at 1.03,
    // the CPU layer at 1.03 + h + cpu, layers 2 and 3 follow on the GPU with their copies done,
    // then the head (2 ms): 8.36 ms; 2: 10.55 ms; 3: 12.73 ms. One CPU layer wins. The shared
    // host memory bound (3 MiB at 0.5 x 0.86 MiB/ms = 6.98 ms) is below all of them.
    const double embed_ms = 512.0 / double(MiB);
    const double t1 = embed_ms + gpu_ms + h + cpu_ms + h + 2 * gpu_ms + 2.0;
    EXPECT_EQ(p.n_cpu_layers, 1);
    EXPECT_EQ(p.blocks[2].place, Placement::cpu);
    EXPECT_EQ(p.blocks[3].place, Placement::registered);
    EXPECT_EQ(p.blocks[4].place, Placement::registered);
    ASSERT_EQ(p.stream_order.size(), 3u);         // prefill streams all three
    ASSERT_EQ(p.decode_stream_order.size(), 2u);  // decode copies two
    EXPECT_EQ(p.decode_stream_order[0], 3);
    EXPECT_EQ(p.pcie_bytes, 2 * MiB);
    EXPECT_EQ(p.cpu_bytes, MiB);
    EXPECT_EQ(p.handoffs, 2);
    EXPECT_EQ(p.cpu_threads, 8);
    EXPECT_NEAR(p.decode_tps, 1e3 / t1, 1e-6);
    // Both host paths at 0.5 MiB/ms for the 3 MiB not resident: 1/3 token per ms.
    EXPECT_NEAR(p.combined_bound_tps, 1e3 / 3.0, 1e-6);
    // The CPU layer's KV cache lives in host memory: 2 x 64 positions x 128 x 2 bytes.
    EXPECT_EQ(p.ram_used, 5 * MiB + 32768);
    EXPECT_NE(p.summary().find("2 streamed over PCIe, 1 computed on the CPU (8 threads)"), std::string::npos) << p.summary();
    EXPECT_NE(p.table().find("read by the CPU"), std::string::npos);
    EXPECT_EQ(p.to_json()["n_cpu_layers"], 1);
    // Prefill still streams the CPU layer: three copies per chunk, as without the CPU.
    PlanInput none = in;
    none.cpu_layers = 0;
    EXPECT_NEAR(make_plan(none).prefill_tps, p.prefill_tps, 1e-9);
}

TEST(Plan, CpuLayersForcedAndRefused) {
    PlanInput in = small_input();
    in.vram_budget = k_fixed + 5 * MiB;
    in.cpu_layers = 3;
    const Plan all = make_plan(in);
    EXPECT_EQ(all.n_cpu_layers, 3);
    EXPECT_TRUE(all.decode_stream_order.empty());
    EXPECT_EQ(all.pcie_bytes, 0u);
    EXPECT_EQ(all.handoffs, 2);  // one run of CPU layers
    in.cpu_layers = 4;
    try {
        make_plan(in);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--cpu-layers 4: at most 3 layers"), std::string::npos) << e.what();
    }
    // Everything resident: nothing to move.
    PlanInput fits = small_input();
    fits.cpu_layers = -1;
    EXPECT_EQ(make_plan(fits).n_cpu_layers, 0);
    // A slow CPU earns no layer.
    PlanInput slow = small_input();
    slow.vram_budget = k_fixed + 5 * MiB;
    slow.cpu_layers = -1;
    slow.bw.cpu_gemv_gbs = slow.bw.host_read_gbs = slow.bw.h2d_pinned_gbs / 10;
    EXPECT_EQ(make_plan(slow).n_cpu_layers, 0);
    // Quantized weights: the CPU layers read them at the rate measured on the same rows. At the
    // float rate above, one INT4 layer on the CPU wins as before; at a tenth of it, none does, and
    // a rate measured on other rows than the weights' is said to misprice them.
    PlanInput q = small_input();
    q.vram_budget = k_fixed + 5 * MiB;
    q.cpu_layers = -1;
    q.bw.cpu_gemv_gbs = q.bw.host_read_gbs = q.bw.h2d_pinned_gbs;
    q.weights_quant = q.bw.cpu_gemv_weights = QuantScheme::int4;
    const Plan one = make_plan(q);
    EXPECT_EQ(one.n_cpu_layers, 1);
    EXPECT_EQ(one.blocks[2].place, Placement::cpu);
    EXPECT_TRUE(one.warnings.empty());
    EXPECT_NE(one.table().find("CPU GEMV 0.5 GB/s of INT4 weights"), std::string::npos) << one.table();
    EXPECT_EQ(one.to_json()["bandwidths"]["cpu_gemv_weights"], "INT4");
    PlanInput q_slow = q;
    q_slow.bw.cpu_gemv_gbs = q.bw.h2d_pinned_gbs / 10;
    const Plan streamed = make_plan(q_slow);
    EXPECT_EQ(streamed.n_cpu_layers, 0);
    EXPECT_EQ(streamed.decode_stream_order.size(), 3u);
    q.bw.cpu_gemv_weights = QuantScheme::none;  // a bf16 rate for INT4 layers
    const Plan guessed = make_plan(q);
    ASSERT_EQ(guessed.warnings.size(), 1u);
    EXPECT_NE(guessed.warnings[0].find("the CPU GEMV rate is of bf16 rows, but the layers the CPU may compute hold INT4 weights"),
              std::string::npos) << guessed.warnings[0];
    PlanInput resident = small_input();  // nothing streams: no CPU layer to price, no warning
    resident.weights_quant = QuantScheme::int8;
    EXPECT_TRUE(make_plan(resident).warnings.empty());
}

TEST(Plan, DecodeSplitSetLaterPlacesWhatThePlannerWould) {
    // The CUDA backend moves the split from measured token times (split_tuner.h) by calling
    // set_decode_split on the plan it loaded. For every count it must place exactly what the
    // planner places when asked for that count. 8 layers: layer 0 and the head resident, 7 streamed.
    PlanInput in = test::small_plan_input(8);
    in.vram_budget = k_fixed + 4 * 32768 + 5 * MiB;
    in.cpu_layers = 0;
    in.ring_slots = 2;
    const Plan base = make_plan(in);
    ASSERT_EQ(decode_movable_blocks(base).size(), 7u);
    ASSERT_EQ(base.max_cpu_layers, 7);
    Plan moved = base;
    for (int c : {3, 7, 1, 5, 0, 2, 6, 4}) {
        PlanInput forced = in;
        forced.cpu_layers = c;
        const Plan want = make_plan(forced);
        set_decode_split(moved, c);
        for (size_t i = 0; i < want.blocks.size(); ++i) EXPECT_EQ(moved.blocks[i].place, want.blocks[i].place) << c << " " << i;
        EXPECT_EQ(moved.decode_stream_order, want.decode_stream_order) << c;
        EXPECT_EQ(moved.stream_order, want.stream_order) << c;
        EXPECT_EQ(moved.n_cpu_layers, c);
        EXPECT_EQ(moved.cpu_bytes, want.cpu_bytes) << c;
        EXPECT_EQ(moved.pcie_bytes, want.pcie_bytes) << c;
        EXPECT_EQ(moved.handoffs, want.handoffs) << c;
    }
    // 3 of 7: streamed ones spread among them, each run of CPU layers ended by one.
    set_decode_split(moved, 3);
    EXPECT_EQ(moved.handoffs, 6);
}

TEST(Plan, CpuLayersShareTheHostsMemory) {
    // A GPU so fast that its layers cost only their launch: with one CPU layer the pass's timeline
    // is ~4 ms, but the copy engine and the CPU read 3 MiB from a host that reads 0.6 MiB/ms alone
    // (x 0.86 when both share it): at least 5.81 ms.
    PlanInput in = small_input();
    in.vram_budget = k_fixed + 5 * MiB;
    in.cpu_layers = 1;
    in.bw.device_gbs = 1e6;
    in.bw.host_read_gbs = in.bw.cpu_gemv_gbs = 1.2 * in.bw.h2d_pinned_gbs;
    const Plan p = make_plan(in);
    const double shared_s = double(3 * MiB) / (in.bw.host_read_gbs * 1e9 * k_host_shared_efficiency);
    EXPECT_EQ(p.n_cpu_layers, 1);
    EXPECT_NEAR(p.decode_tps, 1.0 / shared_s, 1e-6);
}

// The 8-bit KV cache beside layers on the CPU (the CUDA backend copies each row's scales with the
// row, copy_cpu_kv): CpuLayersBesideTheStream's placement again, the CPU layer's host cache now
// its 8-bit rows and their scales. Layers whose KV widths differ keep every layer on the GPU (the
// host keeps one model-wide row width), and --cpu-layers then says why.
TEST(Plan, CpuLayersWithThe8BitKvCache) {
    PlanInput in = small_input();
    in.kv_cache = KvCacheType::int8;
    uint64_t fixed = k_cuda_context;
    for (const MemLine& l : fixed_vram_lines(in.spec, in.weights, in.context, 1, KvCacheType::int8)) fixed += l.bytes;
    in.vram_budget = fixed + 5 * MiB;
    in.cpu_layers = -1;
    in.bw.cpu_gemv_gbs = in.bw.host_read_gbs = in.bw.h2d_pinned_gbs;
    in.bw.cpu_threads = 8;
    const Plan p = make_plan(in);
    EXPECT_EQ(p.n_cpu_layers, 1);
    EXPECT_EQ(p.blocks[2].place, Placement::cpu);
    EXPECT_TRUE(p.warnings.empty());
    // K and V of 64 positions: 128 INT8 values and 2 KV heads' f32 scales a row (the float
    // cache's 2 x 64 x 128 x 2 bytes were 32768).
    EXPECT_EQ(p.ram_used, 5 * MiB + 2 * 64 * (128 + 2 * 4));
    PlanInput forced = in;
    forced.cpu_layers = 3;
    EXPECT_EQ(make_plan(forced).n_cpu_layers, 3);

    // Layer 2 with head_dim 32: its rows are half as wide as the others'.
    for (KvCacheType kv : {KvCacheType::int8, KvCacheType::floating}) {
        PlanInput mixed = in;
        mixed.kv_cache = kv;
        mixed.spec.layers[2].head_dim = 32;
        EXPECT_EQ(make_plan(mixed).n_cpu_layers, 0) << kv_cache_type_name(kv);
        mixed.cpu_layers = 1;
        try {
            make_plan(mixed);
            FAIL() << "expected an error";
        } catch (const Error& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find("--cpu-layers 1: at most 0 layers can run on the CPU with this plan"), std::string::npos) << msg;
            EXPECT_NE(msg.find(fmt::format("; the CPU layers' {}KV caches need every layer's rows 2 heads x 64 wide, but layer 2 has "
                                           "2 x 32: every layer stays on the GPU)",
                                           kv == KvCacheType::int8 ? "8-bit " : "")),
                      std::string::npos)
                << msg;
        }
    }
}

// ---- Gemma 4's per-layer inputs: the table in registered host memory, the projection resident ----

namespace {
// small_input() as a tied model with per-layer inputs (P = 16: a row of 4 x 16 bf16 = 128 B).
// Blocks in archive order: embed 2 MiB (the head too: read whole), per_layer_embd 8 MiB (one row
// read), per_layer 256 KiB (read whole before layer 0), layers 1 MiB, output 4 KiB (the final norm).
PlanInput per_layer_input() {
    PlanInput in = small_input();
    ModelSpec& s = in.spec;
    s.tied_embeddings = true;
    s.per_layer_dim = 16;
    s.per_layer_vocab = 1000;
    in.blocks.clear();
    uint64_t off = 4096;
    auto add = [&](const std::string& name, int layer, uint64_t bytes, uint64_t read) {
        in.blocks.push_back({name, layer, -1, off, bytes, read});
        off += bytes;
    };
    add("embed", -1, 2 * MiB, 2 * MiB);
    add("per_layer_embd", -1, 8 * MiB, 128);
    add("per_layer", -1, 256 * 1024, 256 * 1024);
    for (int i = 0; i < 4; ++i) add("layer." + std::to_string(i), i, MiB, MiB);
    add("output", -1, 4096, 4096);
    return in;
}
uint64_t fixed_of(const PlanInput& in) {
    uint64_t f = k_cuda_context;
    for (const auto& l : fixed_vram_lines(in.spec, in.weights, in.context)) f += l.bytes;
    return f;
}
const MemLine* ram_line(const Plan& p, const std::string& prefix) {
    for (const MemLine& l : p.ram)
        if (l.what.rfind(prefix, 0) == 0) return &l;
    return nullptr;
}
bool has(const std::vector<std::string>& v, const std::string& needle) {
    for (const auto& s : v)
        if (s.find(needle) != std::string::npos) return true;
    return false;
}
}  // namespace

TEST(Plan, PerLayerTableInHostMemoryEvenWhenEverythingFits) {
    const PlanInput in = per_layer_input();
    const Plan p = make_plan(in);
    const uint64_t fixed = fixed_of(in);
    EXPECT_FALSE(p.streaming());
    EXPECT_TRUE(p.per_layer_embd_host_mapped);
    EXPECT_FALSE(p.embed_host_mapped);  // tied: the head, resident
    EXPECT_EQ(p.blocks[0].place, Placement::vram);
    EXPECT_EQ(p.blocks[1].place, Placement::host_mapped);
    EXPECT_EQ(p.blocks[2].place, Placement::vram);
    EXPECT_EQ(p.n_resident_layers, 4);
    // Resident: embed 2 MiB + per_layer 256 KiB + 4 layers + the norm block; not the 8 MiB table.
    EXPECT_EQ(p.vram_used, fixed + 6 * MiB + 256 * 1024 + 4096);
    const MemLine* table = ram_line(p, "per-layer embedding table (registered, rows read by the kernel)");
    ASSERT_NE(table, nullptr) << p.table();
    EXPECT_EQ(table->bytes, 8 * MiB);
    EXPECT_EQ(p.ram_used, 8 * MiB);
    // A decode token reads the table's row (host-mapped) and the whole projection.
    EXPECT_EQ(p.decode_read_bytes, 2 * MiB + 128 + 256 * 1024 + 4 * MiB + 4096);
    EXPECT_EQ(p.pcie_bytes, 0u);
    EXPECT_TRUE(p.warnings.empty());
    EXPECT_TRUE(has(p.notes, "per-layer embedding table (8.00 MiB) stays in registered host memory")) << p.table();
    EXPECT_NE(p.summary().find("all 4 layers resident in VRAM (per-layer table in host memory)"), std::string::npos) << p.summary();
    const nlohmann::json j = p.to_json();
    EXPECT_EQ(j["per_layer_embd_host_mapped"], true);
    EXPECT_EQ(j["blocks"][1]["name"], "per_layer_embd");
    EXPECT_EQ(j["blocks"][1]["placement"], "host-mapped");
}

TEST(Plan, PerLayerProjectionStaysResidentWhenLayersAndTheHeadStream) {
    PlanInput in = per_layer_input();
    const uint64_t fixed = fixed_of(in);
    // The smallest candidate: every layer and the head (output and the tied embedding) streamed
    // through 2 slots of 2 MiB, only the 256 KiB projection resident; the head resident instead
    // would need 4 KiB more.
    in.vram_budget = fixed + 4 * MiB + 256 * 1024;
    const Plan p = make_plan(in);
    EXPECT_EQ(p.min_vram, in.vram_budget);
    EXPECT_EQ(p.vram_used, in.vram_budget);
    EXPECT_EQ(p.n_resident_layers, 0);
    EXPECT_EQ(p.blocks[1].place, Placement::host_mapped);
    EXPECT_EQ(p.blocks[2].place, Placement::vram);
    EXPECT_EQ(p.blocks[1].stream_index, -1);
    EXPECT_EQ(p.blocks[2].stream_index, -1);
    for (int i : p.stream_order) EXPECT_TRUE(i != 1 && i != 2) << p.blocks[size_t(i)].name;
    EXPECT_EQ(p.stream_order.size(), 6u);  // 4 layers, output, embed
    EXPECT_EQ(p.slot_bytes, 2 * MiB);
    EXPECT_EQ(p.pcie_bytes, 4 * MiB + 4096 + 2 * MiB);  // the table crosses no copy engine
    // RAM: the table, the (tied, streamed) embedding, the streamed blocks.
    ASSERT_NE(ram_line(p, "per-layer embedding table"), nullptr) << p.table();
    EXPECT_EQ(p.ram_used, 8 * MiB + 2 * MiB + 4 * MiB + 4096);
    EXPECT_NE(p.summary().find("0 of 4 layers resident (embedding and per-layer table in host memory), 6 blocks streamed"),
              std::string::npos)
        << p.summary();
    // A RAM budget that holds the table but not every streamed block: the rest come from disk; the
    // table is subtracted first (table 8 + embedding 2 + bounce 2 = 12 MiB, then 1 MiB of layers).
    in.ram_budget = 13 * MiB;
    const Plan short_ram = make_plan(in);
    EXPECT_EQ(short_ram.blocks[1].place, Placement::host_mapped);
    EXPECT_EQ(short_ram.bounce_bytes, 2 * MiB);
    EXPECT_EQ(short_ram.blocks[3].place, Placement::registered);
    EXPECT_EQ(short_ram.blocks[4].place, Placement::disk);
    EXPECT_LE(short_ram.ram_used, 13 * MiB);
}

TEST(Plan, PerLayerTableStaysResidentWhenItCannotBeRegistered) {
    PlanInput in = per_layer_input();
    const uint64_t fixed = fixed_of(in);
    in.can_register = false;
    Plan p = make_plan(in);
    EXPECT_FALSE(p.per_layer_embd_host_mapped);
    EXPECT_EQ(p.blocks[1].place, Placement::vram);
    EXPECT_EQ(p.vram_used, fixed + 14 * MiB + 256 * 1024 + 4096);
    EXPECT_EQ(ram_line(p, "per-layer embedding table"), nullptr);
    EXPECT_TRUE(has(p.warnings, "the per-layer embedding table (8.00 MiB) stays resident in VRAM: the host memory cannot be "
                                "registered with the driver here"))
        << p.table();
    EXPECT_NE(p.summary().find("all 4 layers resident in VRAM ("), std::string::npos) << p.summary();
    EXPECT_EQ(p.summary().find("per-layer table in host memory"), std::string::npos) << p.summary();
    // Below the minimum the error says why the table takes VRAM.
    in.vram_budget = fixed + 4 * MiB;
    try {
        make_plan(in);
        ADD_FAILURE() << "a budget below the minimum planned";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("the per-layer embedding table stays resident because the host memory cannot be "
                                             "registered"),
                  std::string::npos)
            << e.what();
    }
    // Registration works but --ram-budget is below the table.
    in = per_layer_input();
    in.ram_budget = 4 * MiB;
    p = make_plan(in);
    EXPECT_EQ(p.blocks[1].place, Placement::vram);
    EXPECT_TRUE(has(p.warnings, "stays resident in VRAM: the host RAM budget of 4.00 MiB is below its 8.00 MiB (raise --ram-budget)"))
        << p.table();
}

TEST(Plan, PerLayerBlocksInTheExpertCachePlan) {
    // No published model has both, but the expert-cache plan treats the blocks as the dense one does.
    PlanInput in = moe_input();
    in.spec.per_layer_dim = 16;
    in.spec.per_layer_vocab = 1000;
    const uint64_t off = in.blocks.back().offset + in.blocks.back().bytes;
    in.blocks.insert(in.blocks.begin() + 1, {"per_layer_embd", -1, -1, off, 8 * MiB, 128});
    in.blocks.insert(in.blocks.begin() + 2, {"per_layer", -1, -1, off + 8 * MiB, 256 * 1024, 256 * 1024});
    const uint64_t fixed = moe_fixed(in);
    in.vram_budget = fixed + 6 * MiB + 256 * 1024 + 10 * 256 * 1024 + 1000;
    const Plan p = make_plan(in);
    EXPECT_EQ(p.expert_slots, 10);
    EXPECT_EQ(p.blocks[1].place, Placement::host_mapped);
    EXPECT_EQ(p.blocks[2].place, Placement::vram);
    EXPECT_EQ(p.min_vram, fixed + 6 * MiB + 256 * 1024 + 4 * 256 * 1024);
    ASSERT_NE(ram_line(p, "per-layer embedding table"), nullptr) << p.table();
    EXPECT_EQ(p.ram_used, 8 * MiB + 2 * MiB + 32 * 256 * 1024);  // the table, the embedding, the experts
    EXPECT_NE(p.summary().find("dense weights resident (embedding and per-layer table in host memory)"), std::string::npos)
        << p.summary();
}

TEST(Plan, PerLayerTablesInTheEmbedBlockAreAnOlderArchive) {
    // An archive converted before the per-layer blocks existed: one embed block holds them all.
    PlanInput in = per_layer_input();
    in.blocks[0].bytes += 8 * MiB + 256 * 1024;
    in.blocks.erase(in.blocks.begin() + 1, in.blocks.begin() + 3);
    try {
        make_plan(in);
        ADD_FAILURE() << "an archive with the per-layer tables in its embed block planned";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("plan: this Gemma 4 archive keeps its per-layer tables in the embed block (written by an older "
                           "ThinTensor)"),
                  std::string::npos)
            << msg;
        EXPECT_NE(msg.find("re-convert it"), std::string::npos) << msg;
    }
    // And a model without per-layer inputs has no such blocks.
    PlanInput plain = small_input();
    plain.blocks.insert(plain.blocks.begin() + 1, {"per_layer", -1, -1, 0, 4096, 4096});
    try {
        make_plan(plain);
        ADD_FAILURE() << "a per_layer block planned for a model without per-layer inputs";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("unexpected block 'per_layer'"), std::string::npos) << e.what();
    }
}

TEST(Plan, RingOfOneSlotKeepsOneMoreLayerResident) {
    // The budget of StreamsTheLastLayersWithTheHeadResident: output (2) + layer 0 (1) + a ring of
    // 2 x 1 MiB. A slot is a layer's size, so one slot less holds layer 1 too: 2 blocks streamed
    // instead of 3, which the planner prefers unless --ring-slots 2 asks for the overlap.
    PlanInput in = small_input();
    in.vram_budget = k_fixed + 5 * MiB;
    in.ring_slots = 0;
    in.cpu_layers = 0;  // every streamed block copied in decode too: decode_copy_s is a pass's copies
    const Plan one = make_plan(in);
    EXPECT_EQ(one.ring_slots, 1);
    EXPECT_EQ(one.n_resident_layers, 2);
    EXPECT_EQ(one.vram_used, k_fixed + 5 * MiB);
    EXPECT_EQ(one.pcie_bytes, 2 * MiB);
    EXPECT_EQ(one.blocks[3].stream_index, 0);
    EXPECT_EQ(one.blocks[4].stream_index, 1);
    EXPECT_NE(one.table().find("ring: 1 slot x"), std::string::npos) << one.table();
    const bool said = std::any_of(one.notes.begin(), one.notes.end(), [](const std::string& n) {
        return n.find("through a ring of 1 slot, a layer's VRAM less than 2") != std::string::npos;
    });
    EXPECT_TRUE(said);
    in.ring_slots = 2;
    const Plan two = make_plan(in);
    EXPECT_EQ(two.ring_slots, 2);
    EXPECT_EQ(two.n_resident_layers, 1);
    EXPECT_EQ(two.pcie_bytes, 3 * MiB);
    // Decode: one copy fewer a token, each copy after the kernels of the layer before (microseconds).
    EXPECT_GT(one.decode_tps, two.decode_tps);
    // Prefill: the copies and the GEMMs add up with one slot; with two the longer of them counts.
    const double gemm_s = one.prefill_chunk / one.prefill_tps - one.decode_copy_s;
    EXPECT_GT(gemm_s, 0);
    EXPECT_NEAR(two.prefill_chunk / two.prefill_tps, std::max(gemm_s, two.decode_copy_s), 1e-9);
    // The minimum working set: everything streamed through one slot instead of two.
    EXPECT_LT(one.min_vram, two.min_vram);
}

