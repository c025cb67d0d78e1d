// Several GPUs in one machine (issue #22): the arithmetic of running one model across them, for
// `thintensor plan --gpus`. Two ways, both predicted from the same per-GPU figures the one-GPU
// planner uses (plan.h's calibration):
//
//   layer split (llama.cpp's --split-mode layer): GPU g holds a run of consecutive layers, the first
//     also the embedding, the last also the head; a decode token runs them one GPU after another,
//     the hidden state crossing each boundary peer to peer. It adds no bandwidth (one GPU works at
//     a time) but fits a model no single budget holds: resident across the GPUs instead of
//     streamed over PCIe.
//   tensor parallelism (vLLM's): every GPU holds 1/G of each layer (attention heads, FFN columns,
//     the head's rows) and reads only that, so G GPUs read a token's weights G times as fast; each
//     layer then needs two all-reduces of the hidden state (after attention, after the FFN), whose
//     latency is what can eat the gain on a small model.
//
// Pure arithmetic: no CUDA, no I/O. The backend does not run either yet (docs/STREAMING.md,
// "Several GPUs").
#pragma once

#include "runtime/plan.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tt {

// One GPU of the set, in the order layers are placed on them.
struct SplitGpu {
    int device = 0;
    std::string name;           // "NVIDIA H200", or "a GPU with 8.00 GiB (--device-memory)"
    uint64_t device_total = 0;  // its memory
    uint64_t device_free = 0;   // free now
    double device_gbs = 0;      // its device copy bandwidth (doctor's d2d; plan.h's default when unknown)
    // What nvidia-smi counts for this process on it beside its allocations (the CUDA context, kernel
    // images, cuBLAS), read through NVML as for one GPU (PlanInput::context_bytes); 0: assumed
    // k_cuda_context (a GPU that is not here).
    uint64_t context_bytes = 0;
};

struct SplitInput {
    // The model as for one GPU (plan_input_from_archive + apply_profile_quant): blocks, spec,
    // dtypes, context, sequence slots; vram_budget (0 = automatic) applies to each GPU; bw holds the
    // GEMM rate and the one-GPU figures.
    PlanInput one;
    std::vector<SplitGpu> gpus;  // at least two
    // The GPU<->GPU link: copy bandwidth (GB/s) and the latency of one small transfer or all-reduce
    // step inside a captured decode graph. `link_source` says where they come from.
    double peer_gbs = k_assumed_peer_gbs;
    double peer_latency_s = k_assumed_peer_latency_s;
    std::string link_source = "assumed";

    // Assumed link figures: NVLink 4's ~450 GB/s per direction is the H100/H200 class; PCIe 5.0 x16
    // peer copies reach ~50. The latency is a few microseconds per hop for a copy or an NCCL
    // all-reduce step of a few KB (small messages are latency-bound).
    static constexpr double k_assumed_peer_gbs = 50.0;
    static constexpr double k_assumed_peer_latency_s = 8e-6;
};

// One GPU's part of the layer split.
struct GpuShare {
    int device = 0;
    std::string name;
    uint64_t budget = 0;        // its VRAM budget in effect
    std::string budget_origin;  // "--vram-budget 8.00 GiB", "free VRAM ... minus ..."
    int first_layer = 0, end_layer = 0;  // layers [first_layer, end_layer)
    bool embed = false, head = false;    // holds the token embedding / the output head
    uint64_t weights = 0;       // resident weight bytes (4 KiB-aligned blocks)
    uint64_t kv = 0;            // its layers' KV cache and recurrent state
    uint64_t fixed = 0;         // this GPU's working set (its CUDA context, workspaces, activations)
    uint64_t used = 0;          // weights + kv + fixed
    uint64_t decode_read = 0;   // bytes a decode token reads from its VRAM
    double compute_s = 0;       // its kernel time per decode token (predicted)
};

struct SplitPlan {
    int n_gpus = 0, n_layers = 0;
    std::vector<GpuShare> gpus;
    bool fits = false;           // every layer resident across the GPUs
    int layers_placed = 0;       // when it does not fit: the layers that found room
    uint64_t hidden_bytes = 0;   // the hidden state one hop carries (f32)
    double hop_s = 0;            // one boundary crossing per token
    double layer_split_tps = 0;  // predicted decode, when it fits
    // Tensor parallelism over the same GPUs: each holds 1/G of every layer; 0 with tp_why saying
    // why it is not planned (a head or column count G does not divide, mixture of experts, no room).
    double tensor_parallel_tps = 0;
    uint64_t tp_used_per_gpu = 0;      // VRAM each GPU would need
    double tp_allreduce_s = 0;         // one all-reduce of the hidden state
    std::string tp_why;
    // The one-GPU plan of the first GPU for comparison: resident, streamed or with CPU layers.
    double one_gpu_tps = 0;
    std::string one_gpu_summary;
    std::string best;            // "one GPU", "layer split", "tensor parallel": the fastest that fits
    Bandwidths bw;
    double peer_gbs = 0, peer_latency_s = 0;
    std::string link_source;
    std::vector<std::string> warnings, notes;

    std::string table() const;  // `thintensor plan --gpus`'s report
    std::string summary() const;
    nlohmann::json to_json() const;
};

// Throws tt::Error naming --gpus when fewer than two GPUs are given.
SplitPlan make_split_plan(const SplitInput& in);

// "0,1,3" -> {0, 1, 3}. Throws tt::Error naming --gpus on an empty list or item, a non-number, a
// negative index or one given twice.
std::vector<int> parse_gpu_list(const std::string& s);

}  // namespace tt
