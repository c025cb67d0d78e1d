// The fit planner: where each block of weights lives when the model is larger than the VRAM
// budget, what every byte of VRAM and pinned host RAM is for, how many bytes cross each link per
// token, and the decode / prefill speed that follows. Pure arithmetic: no CUDA, no I/O; the CUDA
// backend and `thintensor plan` feed it the same inputs and print the same result
// (docs/STREAMING.md explains the model).
//
// The unit is the archive's block ("embed", "layer.N", "output"; Gemma 4's "per_layer_embd" and
// "per_layer"): a block is one contiguous,
// 4 KiB-aligned byte range, so streaming it is one copy and its tensors keep their offsets.
#pragma once

#include "core/dtype.h"
#include "model/model_spec.h"
#include "runtime/device_buffers.h"
#include "runtime/profile.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tt {

class Archive;

// Where a block lives during a pass.
enum class Placement {
    vram,        // resident in VRAM, copied once at load
    host_mapped, // a row table (the token embedding, Gemma 4's per-layer table): stays in registered host
                 // memory, the kernel reads its rows over PCIe
    registered,  // streamed each pass from the archive's mapping, registered (pinned) with the driver
    bounce,      // streamed each pass: host threads copy the mapping into a pinned bounce buffer
    disk,        // streamed each pass: read from the file (O_DIRECT) into a pinned bounce buffer
    expert_cache,// an MoE expert: stays in registered host memory, copied into a VRAM cache slot when a token needs it
    cpu,         // a layer computed on the CPU from host memory during decode (host/host_layers.h); prefill
                 // streams it through the ring like a registered block, so it also has a stream index
};
const char* placement_name(Placement p);
inline bool is_streamed(Placement p) { return p == Placement::registered || p == Placement::bounce || p == Placement::disk; }

// Link speeds, GB/s (1e9 bytes/s). `source` says where they came from (doctor.json, measured now,
// or assumed defaults), because a prediction is only as good as them.
struct Bandwidths {
    double h2d_pinned_gbs = 25.0;   // host→device from page-locked memory (PCIe)
    double device_gbs = 1000.0;     // device copy, bytes read + written (doctor's d2d)
    double gemm_tflops = 100.0;     // bf16 GEMM rate
    double disk_gbs = 2.0;          // file read into pinned memory with O_DIRECT
    double host_copy_gbs = 8.0;     // memcpy from the (cached) mapping into pinned memory
    // The CPU side (doctor's "host" record, or measured now): what a decode layer on the CPU costs.
    double host_read_gbs = 20.0;    // the host's memory read bandwidth, all threads
    double cpu_gemv_gbs = 10.0;     // weight bytes per second of the host GEMV (host/gemv.h) with cpu_threads threads
    int cpu_threads = 0;            // the threads cpu_gemv_gbs was measured (or interpolated) for
    QuantScheme cpu_gemv_weights = QuantScheme::none;  // the rows it was measured on: float (bf16), INT8 or INT4
    std::string source = "assumed defaults";
};

struct PlanBlock {
    std::string name;          // "embed", "per_layer_embd", "per_layer", "layer.3", "output"
    int layer = -1;            // layer index for "layer.N" and "layer.N.expert.E", else -1
    int expert = -1;           // expert index for "layer.N.expert.E", else -1
    uint64_t offset = 0;       // file offset (4 KiB aligned)
    uint64_t bytes = 0;        // bytes to copy: the block's range
    uint64_t decode_read = 0;  // bytes a decode step reads from it (the embedding: one row, unless tied; the per-layer table: one row)
};

struct PlanInput {
    std::vector<PlanBlock> blocks;  // archive order: embed, [per_layer_embd, per_layer,] layer.0..N-1, output
    ModelSpec spec;
    DType weights = DType::bf16;    // the weights' dtype (the KV cache's follows: kv_cache_dtype)
    // The cache the backend stores (kv_cache_choice.h's cuda_kv_cache: --kv-cache and the profile;
    // int8: the 8-bit cache's bytes). Layers on the CPU keep theirs in host memory in the same format.
    KvCacheType kv_cache = KvCacheType::floating;
    int context = 0;                // KV-cache positions (of each sequence slot)
    int n_sequences = 1;            // sequence slots, each its own KV cache (serve --parallel)
    uint64_t vram_budget = 0;       // requested; 0 = free VRAM minus the margin
    uint64_t device_total = 0;      // the GPU's memory
    uint64_t device_free = 0;       // free now
    uint64_t ram_budget = 0;        // requested; 0 = available RAM minus the margin
    uint64_t ram_available = 0;     // MemAvailable now
    bool can_register = true;       // cudaHostRegister(ReadOnly) of the mapping works here
    int expert_slots = 0;           // MoE: > 0 = experts in host memory, at most this many cached in VRAM (--expert-slots)
    int cpu_layers = -1;            // layers computed on the CPU: -1 = as many as minimise decode time, else exactly this many (--cpu-layers)
    int ring_slots = 0;             // larger than VRAM: the streaming ring's slots, 1 or 2; 0 = the planner's choice (--ring-slots)
    // Quantized weights (docs/QUANTIZATION.md): the prefill's dequantization scratch, and with tied
    // embeddings the INT8 copy of the head the backend makes at load (0: none).
    uint64_t dequant_scratch = 0;
    uint64_t quant_head_copy = 0;
    // The scheme the body's weights run in (stored, or the profile's at load): layers on the CPU
    // read them at bw.cpu_gemv_gbs, which should be measured on the same rows (bw.cpu_gemv_weights).
    QuantScheme weights_quant = QuantScheme::none;
    // What nvidia-smi counts for this process beside its allocations (the CUDA context, kernel
    // images, cuBLAS's handle): measured through NVML when the GPU is there (device_plan_input),
    // else 0 for the assumed k_cuda_context.
    uint64_t context_bytes = 0;
    Bandwidths bw;
};

// Fixed costs the planner budgets beside the backend's own buffers (runtime/device_buffers.h): what
// cuBLAS, the CUDA graph and the allocator take on their own, and the margins left free.
inline constexpr uint64_t k_vram_margin = uint64_t(512) << 20;      // auto budget: free VRAM minus this
// Allocator rounding, the CUDA graph, events and kernel images loaded after the plan: on an H100
// (2026-12-06, INT4 8B at --vram-budget 4GiB, decoding) the process's allocations came within
// 10 MiB of the plan's other lines, where 256 MiB had been set aside; with a 512-token prefill
// within 20 MiB (2026-12-07, bench/results/2026-12-07-h100-session/vram-4g-prefill/). At 64 MiB
// the same run peaked at 4019 MiB in nvidia-smi, 44 MiB under the plan's lines, with one more
// layer resident (bench/results/2026-12-07-h100-alloc-slack/).
inline constexpr uint64_t k_alloc_slack = uint64_t(64) << 20;
inline constexpr uint64_t k_cublas_workspace = uint64_t(64) << 20;  // cuBLAS's own workspace (≤ 32 MiB on Hopper, ×2)
inline constexpr uint64_t k_ram_margin = uint64_t(2) << 30;         // auto RAM budget: available minus this
// What nvidia-smi counts for a process beside its allocations: the CUDA context, the kernel images
// and cuBLAS's handle (about 720 MiB measured on the H200 with CUDA 13, 2026-12-01; 527 MiB on an
// H100, 2026-12-06). An explicit --vram-budget is held to nvidia-smi's figure, so the plan spends
// this much of it on them when NVML cannot say (PlanInput::context_bytes).
inline constexpr uint64_t k_cuda_context = uint64_t(768) << 20;
// Prefill dequantizes a quantized matrix into bf16 rows for cuBLAS through a scratch of this size
// (larger matrices in row slices of it): 64 MiB keeps the GEMMs' row count in the thousands.
inline constexpr uint64_t k_dequant_scratch = uint64_t(64) << 20;
// Calibration on docs/BENCHMARKS.md's resident decode figures (H200, bf16, 2026-11-29 second run):
// the Llama-3-8B shape reads 15.02 GB/token at 198.6 tok/s against a 4216 GB/s device copy, the
// Qwen3-0.6B shape 1.20 GB/token at 871.1 tok/s against 4178 GB/s. Kernel time per token =
// bytes / (copy bandwidth x efficiency) + layers x per-layer cost fits both with 0.869 and 29.2 us.
// Prefill of 2,048 tokens runs the GEMMs at 56% of the measured bf16 peak.
inline constexpr double k_decode_efficiency = 0.869;
inline constexpr double k_decode_layer_overhead_s = 29.2e-6;
inline constexpr double k_prefill_efficiency = 0.55;
// The CPU side of a decode step (host/host_layers.h): a layer on the CPU costs its weight bytes at
// the measured host GEMV rate plus its thread-pool dispatches; each switch of the hidden state
// between GPU and CPU is a 16 KB copy each way plus a host node in the graph.
inline constexpr double k_cpu_layer_overhead_s = 40e-6;
inline constexpr double k_handoff_s = 30e-6;
// Calibration on the H200 host (bench/results/2026-12-01-h200-cpu: the Llama-3-8B shape at 8 GiB
// with 4, 9 and 14 layers on the CPU): the CPU layers read their weights at 0.57-0.68 of the GEMV
// rate doctor measures on a buffer of its own, so a CPU layer counts at 0.63 of it (a suspect, not
// yet measured apart: the host thread spin-waited on the stream, a 17th busy thread on the 16 cores
// the layers split their rows over; the step now waits sleeping). And the copy engine and
// the CPU together read host memory at ~80 GB/s, 0.86 of what the host reads alone (93 GB/s), not
// at the sum of their rates alone (55 + 59): they share the host's DRAM, so a token takes at least
// (PCIe bytes + CPU bytes) / (host read x 0.86).
inline constexpr double k_cpu_efficiency = 0.63;
inline constexpr double k_host_shared_efficiency = 0.86;

// One decode pass as a timeline: the steps (layers, then the head) run one after another on the
// GPU or the CPU, while the copy engine copies the streamed blocks in step order, each once the
// step that used its ring slot before it is done. The plan's decode prediction, and what it
// minimises when it places layers on the CPU.
struct PassStep {
    double compute_s = 0;  // kernel time on the GPU, or the layer's time on the CPU
    bool on_cpu = false;
    double copy_s = -1;    // >= 0: a streamed block, copied for this many seconds before it can run
    int slot_after = -1;   // a streamed block: the step whose completion frees its slot (-1: free at the start)
};
// Seconds from the pass's start to the end of its last step (handoff_s per GPU<->CPU switch; the
// pass starts and ends on the GPU).
double simulate_pass(const std::vector<PassStep>& steps, double handoff_s);

struct MemLine {
    std::string what;
    uint64_t bytes = 0;
};

struct BlockPlacement {
    std::string name;
    int layer = -1;
    uint64_t offset = 0, bytes = 0;
    Placement place = Placement::vram;
    int stream_index = -1;  // position among streamed blocks in (prefill) pass order; slot = stream_index % ring_slots
    int expert = -1;        // "layer.N.expert.E": E
    uint64_t decode_read = 0;  // PlanBlock::decode_read: what a decode step reads of it (a CPU layer's bytes)
};

struct Plan {
    std::vector<BlockPlacement> blocks;  // archive order
    std::vector<int> stream_order;       // indices into blocks, in the order a prefill pass uses them (CPU layers included)
    std::vector<int> decode_stream_order;// the same without the CPU layers: what a decode pass copies
    int ring_slots = 0;                  // 1 or 2 when streaming: a slot holds one streamed block (docs/STREAMING.md)
    uint64_t slot_bytes = 0;             // each slot holds the largest streamed block (4 KiB rounded)
    uint64_t bounce_bytes = 0;           // pinned bounce buffer (0 when every streamed block is registered)
    int prefill_chunk = 0;
    bool embed_host_mapped = false;
    // Gemma 4: the per-layer embedding table ("per_layer_embd") stays in registered host memory, its
    // rows read by the kernel through the device pointer the driver maps it at. The planner does this
    // whenever registration works and the RAM budget holds it (else it is resident, with a warning).
    bool per_layer_embd_host_mapped = false;
    // Mixture of experts larger than VRAM: experts stay in registered host memory and a pool of
    // VRAM slots shared by every layer caches them (least recently used out; docs/STREAMING.md).
    int expert_slots = 0;                // 0: every expert resident (or no experts)
    uint64_t expert_slot_bytes = 0;
    int n_experts_total = 0;             // expert blocks in the archive
    double expert_hit_rate = 0;          // predicted, for uniform routing: slots / experts
    uint64_t active_expert_bytes = 0;    // expert bytes one decode token reads (top_k per MoE layer)
    int n_layers = 0, n_resident_layers = 0;

    uint64_t vram_budget = 0;            // in effect (after clamping)
    std::string vram_budget_origin;      // "--vram-budget 8 GiB", "free VRAM 139.1 GiB minus 512 MiB"
    std::vector<MemLine> vram;           // what the budget is spent on
    uint64_t vram_used = 0;
    uint64_t min_vram = 0;               // the smallest budget that works (everything streamable streamed)
    uint64_t ram_budget = 0;
    std::vector<MemLine> ram;            // pinned/registered host memory
    uint64_t ram_used = 0;

    // Per decode token.
    uint64_t pcie_bytes = 0;             // host→device copies (every streamed block)
    uint64_t disk_bytes = 0;             // of which read from the file
    uint64_t host_copy_bytes = 0;        // of which memcpy'd through the bounce buffer from the mapping
    uint64_t decode_read_bytes = 0;      // bytes the decode kernels read from VRAM (and host-mapped rows)
    double decode_compute_s = 0;         // predicted kernel time per token
    double decode_copy_s = 0;            // copy-stream busy time per token
    double decode_tps = 0;               // predicted
    double pcie_bound_tps = 0;           // h2d_pinned / pcie_bytes (0 when nothing streams)
    // The CPU as a third place (Placement::cpu): layers computed from host memory during decode.
    // n_cpu_layers, cpu_bytes, handoffs, pcie_bytes and decode_stream_order describe the split in
    // use (set_decode_split); the predictions (decode_tps, decode_cpu_s, ...) are for the planner's.
    int n_cpu_layers = 0;
    int max_cpu_layers = 0;              // how many the split may put on the CPU (0: none can go there)
    int cpu_threads = 0;                 // the thread count the CPU rate is for
    uint64_t cpu_bytes = 0;              // weight bytes the CPU reads per decode token
    int handoffs = 0;                    // GPU <-> CPU switches of the hidden state per token
    double decode_cpu_s = 0;             // CPU busy time per token
    double combined_bound_tps = 0;       // (pcie_bytes + cpu_bytes) / (PCIe + host read bandwidth): both host paths busy
    double prefill_tps = 0;              // predicted for one full chunk
    Bandwidths bw;
    std::vector<std::string> warnings;   // printed by the caller (clamped budget, fallbacks)
    std::vector<std::string> notes;      // what the plan decided and why

    bool streaming() const { return !stream_order.empty(); }
    // "plan: 20 of 32 layers resident, 12 streamed from registered host memory, 5.2 GB/token over
    // PCIe, predicted 9.8 tok/s"
    std::string summary() const;
    std::string assumed_note() const;  // " from assumed bandwidths (...)" when bw.source says so, else ""
    std::string table() const;  // the full report of `thintensor plan`
    nlohmann::json to_json() const;
};

// Throws tt::Error when the budget is below the minimum working set, naming the flag, the budget,
// the minimum and what it is made of.
Plan make_plan(const PlanInput& in);

// Decode's split of the movable layers (streamed layers registered in host memory: the CPU reads
// them in place) between the CPU and the ring. The planner picks a count; the CUDA backend may
// move it later from measured token times (runtime/split_tuner.h). Placing `n_cpu` of them
// (0..max_cpu_layers) spreads them as the planner does, each run of CPU layers followed by a
// streamed one, and sets n_cpu_layers, decode_stream_order, cpu_bytes, pcie_bytes and handoffs.
std::vector<int> decode_movable_blocks(const Plan& p);  // block indices, in stream order
void set_decode_split(Plan& p, int n_cpu);

// The VRAM budget a GPU works within: --vram-budget `asked` (0: none), else, or when it is more
// than the GPU has (device_total) or has free (device_free; 0 total: unknown, taken as asked), the
// free VRAM less k_vram_margin, with a warning. `origin` gets where it came from; `gpu` names the
// GPU in the warnings ("" for the one GPU of a plan, "GPU 1" in a split).
uint64_t vram_budget_in_effect(uint64_t asked, uint64_t device_free, uint64_t device_total, const std::string& gpu,
                               std::string& origin, std::vector<std::string>& warnings);

// The archive's blocks with their decode read sizes, the spec and dtypes; the caller fills in the
// context, budgets, device memory and bandwidths.
PlanInput plan_input_from_archive(const Archive& a, const ModelSpec& spec);
// A quantized profile (runtime/profile.h) on `in`, made from archive `a` by plan_input_from_archive:
// a tied head's INT8 copy, and when `a` stores float weights that the backend quantizes at load,
// the dequantization scratch, the scheme, and each block's bytes and decode reads as quantized.
void apply_profile_quant(PlanInput& in, const Archive& a, Profile profile);

// The fixed working set's VRAM lines (KV cache, prefill workspace, decode activations, cuBLAS
// workspace, allocator slack) for `context` positions, in each of n_sequences slots (the KV cache
// and recurrent state per slot, the rest once): sums of the backend's buffer lists.
std::vector<MemLine> fixed_vram_lines(const ModelSpec& s, DType weights, int context, int n_sequences = 1,
                                      KvCacheType kv = KvCacheType::floating);
// Multiply-adds ×2 of a prefill of n tokens from an empty cache, logits of the last token only.
double prefill_flops(const ModelSpec& s, int n);

// MemAvailable from /proc/meminfo (0 when unknown).
uint64_t host_available_ram();

}  // namespace tt
