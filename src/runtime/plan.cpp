// The fit planner (see plan.h and docs/STREAMING.md).
//
// VRAM is spent, in this order of priority, on the fixed working set (KV cache, prefill workspace,
// decode activations, cuBLAS workspace, allocator slack), then on weights. When every block fits,
// all are resident. Otherwise:
//   1. the token embedding (unless it is also the output head) moves to registered host memory:
//      decode reads one row of it per token, so it costs nothing on the bus;
//      (Gemma 4's per-layer embedding table, a block of its own, is there whenever it can be,
//      even when everything would fit: it is read one row per token too, and large);
//   2. the output head stays resident and the LAST layers are streamed through a ring of 2 slots
//      of the largest streamed block, keeping as many first layers resident as fit: at the start of
//      a token the copy engine prefetches the first streamed layers while the resident ones compute;
//      a ring of 1 slot instead whenever two blocks or more stream, since the slot it frees holds
//      one more layer (decode then waits for each streamed layer's kernels before the next copy,
//      microseconds against the copy's milliseconds; prefill's GEMMs no longer overlap the copies);
//   3. only when the head and a ring do not fit together is the head streamed too.
// Streamed blocks are registered (pinned) in place in the archive's mapping while the RAM budget
// allows; the rest are read from the file into a pinned bounce buffer.
#include "runtime/plan.h"

#include "core/dtype.h"
#include "core/error.h"
#include "core/progress.h"
#include "format/archive.h"
#include "model/tensor_names.h"
#include "model/weight_quant.h"
#include "runtime/backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <fstream>
#include <sstream>

namespace tt {

const char* placement_name(Placement p) {
    switch (p) {
    case Placement::vram: return "vram";
    case Placement::host_mapped: return "host-mapped";
    case Placement::registered: return "registered";
    case Placement::bounce: return "bounce";
    case Placement::disk: return "disk";
    case Placement::expert_cache: return "expert-cache";
    case Placement::cpu: return "cpu";
    }
    return "?";
}

namespace {

// The rows a CPU GEMV rate is of: "bf16" (float weights), "INT8", "INT4".
std::string gemv_weights_name(QuantScheme q) { return q == QuantScheme::none ? "bf16" : std::string(quant_scheme_label(q)); }

std::string gb(double bytes) { return fmt::format("{:.2f} GB", bytes / 1e9); }

// Whether movable layer k of n decodes on the CPU when c of them do: the n - c streamed ones
// evenly spread, each run of CPU layers followed by one, so the copy engine fills the next slot
// while the CPU works.
bool cpu_at(int k, int n, int c) {
    const int64_t n_stream = n - c;
    return (int64_t(k + 1) * n_stream) / n == (int64_t(k) * n_stream) / n;
}

}  // namespace

std::vector<MemLine> fixed_vram_lines(const ModelSpec& s, DType weights, int context, int n_sequences, KvCacheType kv_type) {
    // The backend's own buffers, from the lists it allocates from, then what cuBLAS, the graph and
    // the allocator take beside them.
    const int chunk = prefill_chunk_tokens(context);
    // Attention layers keep a KV cache; linear-attention layers a fixed-size recurrent state instead
    // (resident: it is read and written every token); Gemma 4's KV-shared layers read another
    // layer's cache and keep nothing.
    int n_kv = 0, n_state = 0, n_shared = 0;
    for (int il = 0; il < s.n_layers; ++il) (s.has_kv(il) ? n_kv : s.is_delta_net(il) ? n_state : n_shared)++;
    const uint64_t slots = uint64_t(std::max(1, n_sequences));
    const uint64_t kv = kv_cache_bytes(s, context, weights, kv_type) * slots;
    std::vector<MemLine> lines = {{fmt::format("KV cache ({}{} positions{}{}{})", kv_type == KvCacheType::int8 ? "8-bit, " : "", context,
                                               slots > 1 ? fmt::format(" x {} sequence slots", slots) : "",
                                               n_state ? fmt::format(", {} attention layers", n_kv) : "",
                                               n_shared ? fmt::format(", {} layers, {} sharing another's", n_kv, n_shared) : ""),
                                   kv}};
    if (n_state)
        lines.push_back({fmt::format("recurrent state ({} linear-attention layers)", n_state),
                         uint64_t(n_state) * s.delta_net.state_bytes() * slots});
    lines.insert(lines.end(), {
        {fmt::format("prefill workspace ({}-token chunks)", chunk), total_bytes(prefill_buffers(s, chunk, context, weights, 1, kv_type))},
        {"decode activations", total_bytes(decode_buffers(s, k_max_decode_splits))},
        {"cuBLAS workspace", k_cublas_workspace},
        {"allocator slack (graph, events)", k_alloc_slack},
    });
    return lines;
}

double prefill_flops(const ModelSpec& s, int n) {
    const double vh = double(s.vocab_size) * s.hidden_dim;
    // Weights used by every token: all but the embedding table and the head (and, in a mixture of
    // experts, only the top_k experts of each layer), and Gemma 4's per-layer table (a row lookup,
    // like the embedding: 2.35 B of E2B's 4.63 B parameters).
    const double ple = double(s.per_layer_vocab) * s.n_layers * s.per_layer_dim;
    const double per_token = double(s.n_active_params()) - vh * (s.tied_embeddings ? 1 : 2) - ple;
    double f = 2.0 * per_token * n + 2.0 * vh;  // the head for the last token only
    for (int il = 0; il < s.n_layers; ++il) {
        double vis = 0;  // sum over queries of visible keys
        const int w = s.sliding(il) ? s.sliding_window : 0;
        for (int i = 0; i < n; ++i) vis += w > 0 ? std::min(i + 1, w) : i + 1;
        f += 4.0 * s.layer_q_dim(il) * vis;  // QK^T and PV
    }
    return f;
}

uint64_t vram_budget_in_effect(uint64_t asked, uint64_t device_free, uint64_t device_total, const std::string& gpu,
                               std::string& origin, std::vector<std::string>& warnings) {
    const uint64_t avail = device_free > k_vram_margin ? device_free - k_vram_margin : 0;
    const std::string avail_text =
        fmt::format("free VRAM {} minus a {} margin", format_bytes(double(device_free)), format_bytes(double(k_vram_margin)));
    const std::string which = gpu.empty() ? "the GPU" : gpu;
    if (asked > 0 && device_total > 0 && asked > device_total)
        warnings.push_back(fmt::format("--vram-budget {} is more than {}'s {}; using {} ({})", format_bytes(double(asked)), which,
                                       format_bytes(double(device_total)), format_bytes(double(avail)), avail_text));
    else if (asked > 0 && device_total > 0 && asked > avail)
        warnings.push_back(fmt::format("--vram-budget {} is more than the VRAM free now{}; using {} ({})", format_bytes(double(asked)),
                                       gpu.empty() ? "" : " on " + gpu, format_bytes(double(avail)), avail_text));
    else if (asked > 0) {
        origin = fmt::format("--vram-budget {}", format_bytes(double(asked)));
        return asked;
    }
    origin = avail_text;
    return avail;
}

double simulate_pass(const std::vector<PassStep>& steps, double handoff_s) {
    double t = 0, engine = 0;  // the end of the chain of steps so far; when the copy engine is next free
    std::vector<double> done(steps.size(), 0.0);
    bool on_cpu = false;
    for (size_t i = 0; i < steps.size(); ++i) {
        const PassStep& st = steps[i];
        if (st.on_cpu != on_cpu) t += handoff_s;
        on_cpu = st.on_cpu;
        if (st.copy_s >= 0) {
            TT_ASSERT(st.slot_after < int(i));
            engine = std::max(engine, st.slot_after >= 0 ? done[size_t(st.slot_after)] : 0.0) + st.copy_s;
            t = std::max(t, engine);
        }
        t += st.compute_s;
        done[i] = t;
    }
    return t + (on_cpu ? handoff_s : 0.0);
}

uint64_t host_available_ram() {
    std::ifstream f("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (f >> key >> kib >> unit)
        if (key == "MemAvailable:") return kib * 1024;
    return 0;
}

PlanInput plan_input_from_archive(const Archive& a, const ModelSpec& spec) {
    PlanInput in;
    in.spec = spec;
    in.weights = a.tensors().front().view.dtype;
    for (const auto& b : a.blocks()) {
        PlanBlock pb;
        pb.name = b.name;
        pb.offset = b.offset;
        pb.bytes = b.nbytes;
        if (b.name.rfind("layer.", 0) == 0) {
            pb.layer = std::stoi(b.name.substr(6));
            const auto pos = b.name.find(".expert.");
            if (pos != std::string::npos) pb.expert = std::stoi(b.name.substr(pos + 8));
        }
        in.blocks.push_back(pb);
    }
    for (const auto& t : a.tensors()) {
        auto it = std::find_if(in.blocks.begin(), in.blocks.end(), [&](const PlanBlock& b) { return b.name == t.block; });
        if (it == in.blocks.end()) continue;
        // Row lookups: a decode token reads one row (Gemma 4's per-layer table always is one).
        if (t.view.name == tensor_name(Role::token_embd) && !spec.tied_embeddings) it->decode_read += t.view.nbytes / uint64_t(spec.vocab_size);
        else if (t.view.name == tensor_name(Role::per_layer_token_embd)) it->decode_read += t.view.nbytes / uint64_t(spec.per_layer_vocab);
        else it->decode_read += t.view.nbytes;
    }
    if (archive_quant_scheme(a) != QuantScheme::none) {
        in.dequant_scratch = k_dequant_scratch;
        in.weights_quant = archive_quant_scheme(a);
    }
    // An expert is read by a decode token with probability top_k / n_experts (uniform routing).
    for (auto& b : in.blocks)
        if (b.expert >= 0) b.decode_read = b.decode_read * uint64_t(spec.moe.top_k) / uint64_t(spec.moe.n_experts);
    return in;
}

void apply_profile_quant(PlanInput& in, const Archive& a, Profile profile) {
    const QuantScheme body = profile_weight_scheme(profile);
    if (body == QuantScheme::none) return;
    const ModelSpec& spec = in.spec;
    if (spec.tied_embeddings) in.quant_head_copy = uint64_t(spec.vocab_size) * (uint64_t(spec.hidden_dim) + 4);
    // A stored quantized archive: plan_input_from_archive counted its bytes, scratch and scheme
    // (a profile of the other scheme is refused at load).
    if (in.weights_quant != QuantScheme::none) return;
    in.dequant_scratch = k_dequant_scratch;
    in.weights_quant = body;
    // A float archive the backend quantizes at load: each block shrinks to its tensors' quantized
    // bytes (values and scales, each 4 KiB aligned as the archive writer lays them out), and its
    // decode reads to their unaligned sum.
    struct Shrink {
        uint64_t bytes = 0, decode_read = 0;
    };
    std::map<std::string, Shrink, std::less<>> shrink;  // by block
    const auto roles = tensor_roles(spec);
    for (const auto& t : a.tensors()) {
        const auto it = roles.find(t.view.name);
        const QuantScheme q = it == roles.end() ? QuantScheme::none : role_quant_scheme(it->second, body);
        if (q == QuantScheme::none) continue;
        const uint64_t rows = uint64_t(t.view.shape[0]), cols = uint64_t(t.view.shape[1]);
        const uint64_t values = rows * quant_row_bytes(q, int64_t(cols));
        const uint64_t scales = rows * 4 * uint64_t(quant_row_scales(q, int64_t(cols), k_int4_default_group));
        const uint64_t stored = round_up(t.view.nbytes, 4096), run = round_up(values, 4096) + round_up(scales, 4096);
        Shrink& sh = shrink[t.block];
        sh.bytes += stored > run ? stored - run : 0;
        sh.decode_read += t.view.nbytes > values + scales ? t.view.nbytes - (values + scales) : 0;
    }
    for (auto& b : in.blocks)
        if (auto it = shrink.find(b.name); it != shrink.end()) {
            b.bytes -= std::min(b.bytes, it->second.bytes);
            b.decode_read -= std::min(b.decode_read, it->second.decode_read);
        }
}

namespace {

// The sizes an expert-cache plan is made of.
struct ExpertCacheSizes {
    bool embed_host = false;     // the token embedding in registered host memory
    uint64_t dense = 0;          // resident: every block but the experts (and the host-mapped tables)
    uint64_t expert_total = 0, slot = 0;
    int n_experts = 0, min_slots = 0;
    uint64_t min_vram = 0;       // fixed + dense + min_slots slots
};
// The row tables a plan may leave in registered host memory (block indices, -1 when absent).
struct HostTables {
    int embed = -1;
    bool embed_can_leave = false;  // untied, registrable, within the RAM budget
    int ple = -1;                  // Gemma 4's per-layer table ("per_layer_embd")
    bool ple_host = false;         // it is host-mapped (registrable, within the RAM budget)
};

// Gemma 4's per-layer table in registered host memory: its placement and its RAM line (both plans).
void place_per_layer_table_in_host(Plan& p, int ple, uint64_t bytes) {
    p.per_layer_embd_host_mapped = true;
    p.blocks[size_t(ple)].place = Placement::host_mapped;
    p.ram.push_back({"per-layer embedding table (registered, rows read by the kernel)", bytes});
}

ExpertCacheSizes expert_cache_sizes(const PlanInput& in, uint64_t fixed, const HostTables& ht) {
    const ModelSpec& s = in.spec;
    ExpertCacheSizes z;
    z.embed_host = !s.tied_embeddings && ht.embed_can_leave;
    for (size_t i = 0; i < in.blocks.size(); ++i) {
        const PlanBlock& b = in.blocks[i];
        if (b.expert >= 0) {
            z.slot = std::max(z.slot, round_up(b.bytes, k_thin_align));
            z.expert_total += b.bytes;
            ++z.n_experts;
        } else if (!(z.embed_host && int(i) == ht.embed) && !(ht.ple_host && int(i) == ht.ple)) {
            z.dense += round_up(b.bytes, k_thin_align);
        }
    }
    // One slot per MoE layer, and at least top_k: one layer's chosen experts at once.
    z.min_slots = std::max(s.moe.top_k, s.n_moe_layers());
    z.min_vram = fixed + z.dense + uint64_t(z.min_slots) * z.slot;
    return z;
}

// A mixture-of-experts model that does not fit: every dense block resident (the token embedding
// in registered host memory when it can be), the experts in registered host memory, and the
// VRAM left over as a pool of expert slots shared by all layers. A decode token reads top_k
// experts per MoE layer; a miss is fetched within its layer, so its bytes add to the step.
Plan make_expert_cache_plan(const PlanInput& in, Plan p, const std::vector<MemLine>& fixed_lines, const HostTables& ht) {
    const ModelSpec& s = in.spec;
    const int embed = ht.embed;
    uint64_t fixed = 0;
    for (const auto& l : fixed_lines) fixed += l.bytes;
    const auto [embed_host, dense, expert_total, slot, n_experts, min_slots, min_vram] = expert_cache_sizes(in, fixed, ht);
    p.min_vram = min_vram;
    if (p.vram_budget < p.min_vram) {
        std::string parts = fmt::format("dense weights {}, {} expert slots (one per MoE layer, at least top_k) x {}",
                                        format_bytes(double(dense)), min_slots, format_bytes(double(slot)));
        for (const auto& l : fixed_lines) parts += fmt::format(", {} {}", l.what, format_bytes(double(l.bytes)));
        fail("{} is below the minimum working set of {} for this mixture-of-experts model at a context of {} tokens ({}); "
             "raise the budget or lower --context",
             p.vram_budget_origin, format_bytes(double(p.min_vram)), in.context, parts);
    }
    p.expert_slots = int(std::min<uint64_t>(uint64_t(n_experts), (p.vram_budget - fixed - dense) / slot));
    if (in.expert_slots > 0) {
        if (in.expert_slots < min_slots)
            fail("--expert-slots {} is below the minimum of {} for this model (one per mixture-of-experts layer, and at least "
                 "num_experts_per_tok {})", in.expert_slots, min_slots, s.moe.top_k);
        p.expert_slots = std::min(p.expert_slots, in.expert_slots);
    }
    p.expert_slot_bytes = slot;
    p.n_experts_total = n_experts;
    p.expert_hit_rate = double(p.expert_slots) / double(n_experts);

    // Host side: the experts (and the embedding, and a per-layer table) stay registered in place in the mapping.
    const uint64_t ple_bytes = ht.ple_host ? in.blocks[size_t(ht.ple)].bytes : 0;
    uint64_t ram_need = expert_total + (embed_host ? in.blocks[size_t(embed)].bytes : 0) + ple_bytes;
    if (!in.can_register)
        fail("this mixture-of-experts model needs its experts registered in host memory (cudaHostRegister), which this "
             "machine refuses; it does not fit {} otherwise", p.vram_budget_origin);
    if (ram_need > p.ram_budget)
        fail("--ram-budget: {} of host memory is below the {} the experts (and the row tables) take registered in place",
             format_bytes(double(p.ram_budget)), format_bytes(double(ram_need)));
    for (const auto& b : in.blocks) {
        Placement place = b.expert >= 0 ? Placement::expert_cache : Placement::vram;
        p.blocks.push_back({b.name, b.layer, b.offset, b.bytes, place, -1, b.expert, b.decode_read});
    }
    if (ht.ple_host) place_per_layer_table_in_host(p, ht.ple, ple_bytes);
    if (embed_host) {
        p.embed_host_mapped = true;
        p.blocks[size_t(embed)].place = Placement::host_mapped;
        p.ram.push_back({"token embedding (registered, rows read by the kernel)", in.blocks[size_t(embed)].bytes});
    }
    p.ram.push_back({fmt::format("{} experts (registered in place, read-only)", n_experts), expert_total});
    for (const auto& l : p.ram) p.ram_used += l.bytes;
    p.vram.push_back({"resident dense weights", dense});
    p.vram.push_back({fmt::format("expert cache ({} of {} experts, {} each)", p.expert_slots, n_experts, format_bytes(double(slot))),
                      uint64_t(p.expert_slots) * slot});
    p.vram.insert(p.vram.end(), fixed_lines.begin(), fixed_lines.end());
    for (const auto& l : p.vram) p.vram_used += l.bytes;
    p.n_resident_layers = s.n_layers;  // every layer's dense part

    // Per decode token: the dense reads, top_k experts per MoE layer, the misses over PCIe.
    const double h2d = in.bw.h2d_pinned_gbs * 1e9, eff_dev = in.bw.device_gbs * 1e9 * k_decode_efficiency;
    const uint64_t expert_bytes = expert_total / uint64_t(n_experts);
    p.active_expert_bytes = uint64_t(s.n_moe_layers()) * uint64_t(s.moe.top_k) * expert_bytes;
    for (const auto& b : in.blocks)
        if (b.expert < 0) p.decode_read_bytes += b.decode_read;
    p.decode_read_bytes += p.active_expert_bytes;
    p.pcie_bytes = uint64_t((1.0 - p.expert_hit_rate) * double(p.active_expert_bytes));
    p.decode_compute_s = double(p.decode_read_bytes) / eff_dev + s.n_layers * k_decode_layer_overhead_s;
    p.decode_copy_s = double(p.pcie_bytes) / h2d;
    // note: a miss is fetched inside its layer, before that layer's expert GEMVs: the copy time adds.
    const double token_s = p.decode_compute_s + p.decode_copy_s;
    p.decode_tps = 1.0 / token_s;
    p.pcie_bound_tps = p.pcie_bytes ? h2d / double(p.pcie_bytes) : 0;
    // Prefill: a chunk routes its tokens to (nearly) every expert, streamed through the slots.
    const double rate = in.bw.gemm_tflops * 1e12 * k_prefill_efficiency / (in.weights == DType::f32 ? 16.0 : 1.0);
    const double prefill_s = std::max(prefill_flops(s, p.prefill_chunk) / rate, double(expert_total) / h2d);
    p.prefill_tps = p.prefill_chunk / prefill_s;
    p.notes.push_back(fmt::format("experts stay in registered host memory; {} VRAM slots (shared by all {} MoE layers, least "
                                  "recently used out) cache {:.1f}% of them: with uniform routing a decode token finds about "
                                  "that share of its {} experts per layer in VRAM and fetches the rest ({} per token) over PCIe",
                                  p.expert_slots, s.n_moe_layers(), 100.0 * p.expert_hit_rate, s.moe.top_k, gb(double(p.pcie_bytes))));
    p.notes.push_back("prefill streams the experts each chunk uses through the same slots (copy engine), then keeps the last ones cached");
    if (p.embed_host_mapped)
        p.notes.push_back("token embedding stays in registered host memory: decode reads one row per token through its device pointer");
    if (p.per_layer_embd_host_mapped)
        p.notes.push_back("the per-layer embedding table stays in registered host memory: decode reads one row per token through "
                          "its device pointer");
    return p;
}

}  // namespace

Plan make_plan(const PlanInput& in) {
    const ModelSpec& s = in.spec;
    Plan p;
    p.bw = in.bw;
    p.n_layers = s.n_layers;
    TT_ASSERT(in.context > 0);

    // ---- budgets ----
    p.vram_budget = vram_budget_in_effect(in.vram_budget, in.device_free, in.device_total, "", p.vram_budget_origin, p.warnings);
    const uint64_t ram_avail = in.ram_available > k_ram_margin ? in.ram_available - k_ram_margin : 0;
    if (in.ram_budget == 0) {
        p.ram_budget = ram_avail;
    } else if (in.ram_available > 0 && in.ram_budget > in.ram_available) {
        p.ram_budget = ram_avail;
        p.warnings.push_back(fmt::format("--ram-budget {} is more than the memory available now ({}); using {}",
                                         format_bytes(double(in.ram_budget)), format_bytes(double(in.ram_available)),
                                         format_bytes(double(ram_avail))));
    } else {
        p.ram_budget = in.ram_budget;
    }

    // ---- the fixed working set ----
    p.prefill_chunk = prefill_chunk_tokens(in.context);
    std::vector<MemLine> fixed_lines = fixed_vram_lines(s, in.weights, in.context, in.n_sequences, in.kv_cache);
    // note: budgets are what nvidia-smi shows for the process; an automatic one (the VRAM free once
    // this process's context exists) is conservative by this line.
    fixed_lines.push_back(in.context_bytes ? MemLine{"CUDA context, kernel images, cuBLAS (this process in nvidia-smi, by NVML)", in.context_bytes}
                                           : MemLine{"CUDA context and kernel images (assumed; counted by nvidia-smi)", k_cuda_context});
    if (in.dequant_scratch) fixed_lines.push_back({"dequantization scratch (prefill)", in.dequant_scratch});
    if (in.quant_head_copy) fixed_lines.push_back({"INT8 copy of the tied head", in.quant_head_copy});
    uint64_t fixed = 0;
    for (const auto& l : fixed_lines) fixed += l.bytes;

    // ---- which blocks are which ----
    int embed = -1, output = -1, ple = -1, per_layer = -1;
    std::vector<int> layers(size_t(s.n_layers), -1);
    const bool has_per_layer = s.per_layer_dim > 0;
    for (size_t i = 0; i < in.blocks.size(); ++i) {
        const PlanBlock& b = in.blocks[i];
        if (b.name == "embed") embed = int(i);
        else if (b.name == "output") output = int(i);
        else if (has_per_layer && b.name == k_per_layer_embd_block) ple = int(i);
        else if (has_per_layer && b.name == k_per_layer_block) per_layer = int(i);
        else if (b.expert >= 0 && b.layer >= 0 && b.layer < s.n_layers) continue;  // placed below (expert cache)
        else if (b.layer >= 0 && b.layer < s.n_layers) layers[size_t(b.layer)] = int(i);
        else fail("plan: unexpected block '{}' in the archive", b.name);
    }
    if (embed < 0 || output < 0 || std::count(layers.begin(), layers.end(), -1) > 0)
        fail("plan: the archive lacks an embed, output or layer block");
    // note: archives converted before the per-layer blocks existed hold these tensors in "embed"
    // (and bind_weights refuses them too); placing such an embed block would move the table with the head.
    if (has_per_layer && (ple < 0 || per_layer < 0))
        fail("plan: this Gemma 4 archive keeps its per-layer tables in the embed block (written by an older ThinTensor) "
             "instead of the '{}' and '{}' blocks; re-convert it with `thintensor convert`",
             k_per_layer_embd_block, k_per_layer_block);
    const bool tied = s.tied_embeddings;
    auto bytes_of = [&](int i) { return in.blocks[size_t(i)].bytes; };
    // A candidate: the blocks streamed (pass order) and the ones resident; returns VRAM needed.
    struct Candidate {
        std::vector<int> streamed;  // pass order
        bool embed_host = false;
        int ring = 0;
        uint64_t slot = 0, need = 0;
    };
    // Gemma 4's per-layer table: a decode token reads one row of it (n_layers x per_layer_dim
    // elements, ~18 KB for Gemma-4-E2B in bf16) and the table is large (4.7 GB there), so it stays
    // in registered host memory whenever it can, in every candidate; it is never streamed. Its
    // projection and norm ("per_layer") are read whole every token before layer 0: resident.
    const bool ple_host = ple >= 0 && in.can_register && bytes_of(ple) <= p.ram_budget;
    const uint64_t ram_after_ple = p.ram_budget - (ple_host ? bytes_of(ple) : 0);
    std::string ple_resident_why;
    if (ple >= 0 && !ple_host)
        ple_resident_why = !in.can_register
            ? "the host memory cannot be registered with the driver here"
            : fmt::format("the host RAM budget of {} is below its {} (raise --ram-budget)", format_bytes(double(p.ram_budget)),
                          format_bytes(double(bytes_of(ple))));
    if (!ple_resident_why.empty())
        p.warnings.push_back(fmt::format("the per-layer embedding table ({}) stays resident in VRAM: {}",
                                         format_bytes(double(bytes_of(ple))), ple_resident_why));
    auto evaluate = [&](Candidate& c) {
        c.ring = std::min<int>(c.ring > 0 ? c.ring : 2, int(c.streamed.size()));
        c.slot = 0;
        for (int i : c.streamed) c.slot = std::max(c.slot, round_up(bytes_of(i), k_thin_align));
        uint64_t resident = 0;
        for (size_t i = 0; i < in.blocks.size(); ++i) {
            const bool streamed = std::find(c.streamed.begin(), c.streamed.end(), int(i)) != c.streamed.end();
            const bool host = (c.embed_host && int(i) == embed && !tied) || (ple_host && int(i) == ple);
            if (!streamed && !host) resident += round_up(bytes_of(int(i)), k_thin_align);
        }
        c.need = fixed + resident + uint64_t(c.ring) * c.slot;
    };
    // The embedding's rows can be read from registered host memory only when it can be registered
    // within the RAM budget (beside the per-layer table); a tied embedding is also the head, read
    // whole every token.
    const bool embed_can_leave = in.can_register && bytes_of(embed) <= ram_after_ple;
    const HostTables host_tables{embed, embed_can_leave, ple, ple_host};
    std::vector<int> head = {output};
    if (tied && embed_can_leave) head.push_back(embed);

    // A mixture of experts that fits is resident whole; otherwise its experts move to host memory
    // behind a VRAM cache (never its dense layers to the ring).
    if (s.has_moe()) {
        uint64_t all = fixed;
        for (size_t i = 0; i < in.blocks.size(); ++i) all += round_up(bytes_of(int(i)), k_thin_align);
        if (all > p.vram_budget || in.expert_slots > 0) return make_expert_cache_plan(in, std::move(p), fixed_lines, host_tables);
    }
    // Candidates: everything resident; else the last layers streamed (with the head resident, or
    // streamed too), through a ring of 2 slots, or of 1 (not when the head is the output block and
    // a tied embedding, two blocks read at once). Among those that fit, the one that streams
    // the fewest bytes wins, a ring of 2 at equal bytes; the smallest need over all of them is the
    // minimum working set.
    std::vector<Candidate> candidates(1);  // [0]: everything resident
    for (int stream_head = 0; stream_head < 2 && !s.has_moe(); ++stream_head)
        for (int k = s.n_layers; k >= 0; --k)  // k = first streamed layer
            for (int ring : {2, 1}) {
                Candidate c;
                c.embed_host = !tied && embed_can_leave;
                for (int il = k; il < s.n_layers; ++il) c.streamed.push_back(layers[size_t(il)]);
                if (stream_head) c.streamed.insert(c.streamed.end(), head.begin(), head.end());
                if (c.streamed.empty() && !c.embed_host) continue;
                const bool one_block = c.streamed.size() < 2;  // (its ring is one slot either way)
                if (ring == 1 && (one_block || (stream_head && head.size() > 1))) continue;
                if (in.ring_slots > 0 && ring != in.ring_slots && !one_block) continue;  // --ring-slots
                c.ring = ring;
                candidates.push_back(c);
            }
    Candidate best, smallest;
    bool found = false;
    uint64_t best_streamed = 0;
    p.min_vram = UINT64_MAX;
    for (auto& c : candidates) {
        evaluate(c);
        uint64_t streamed = 0;
        for (int i : c.streamed) streamed += bytes_of(i);
        if (c.need < p.min_vram) {
            p.min_vram = c.need;
            smallest = c;
        }
        if (c.need <= p.vram_budget && (!found || streamed < best_streamed)) {
            best = c;
            best_streamed = streamed;
            found = true;
        }
    }
    if (!found) {
        std::string parts = fmt::format("resident weights {}", format_bytes(double(smallest.need - fixed - uint64_t(smallest.ring) * smallest.slot)));
        if (smallest.ring) parts += fmt::format(", ring {} x {}", smallest.ring, format_bytes(double(smallest.slot)));
        for (const auto& l : fixed_lines) parts += fmt::format(", {} {}", l.what, format_bytes(double(l.bytes)));
        fail("{} is below the minimum working set of {} for this model at a context of {} tokens ({}){}{}; "
             "raise the budget or lower --context",
             p.vram_budget_origin, format_bytes(double(p.min_vram)), in.context, parts,
             embed_can_leave || tied ? "" : "; the token embedding stays resident because it cannot be registered in host memory",
             ple_resident_why.empty() ? "" : "; the per-layer embedding table stays resident because " + ple_resident_why);
    }

    // The smallest budget of a mixture of experts is its expert cache's minimum.
    if (s.has_moe()) p.min_vram = expert_cache_sizes(in, fixed, host_tables).min_vram;


    // ---- placements ----
    for (const auto& b : in.blocks) p.blocks.push_back({b.name, b.layer, b.offset, b.bytes, Placement::vram, -1, b.expert, b.decode_read});
    p.ring_slots = best.ring;
    p.slot_bytes = best.slot;
    // A tied embedding is the head: it is host-mapped for the lookups exactly when it is streamed.
    p.embed_host_mapped = tied ? std::count(best.streamed.begin(), best.streamed.end(), embed) > 0 : best.embed_host;
    if (p.embed_host_mapped && !tied) p.blocks[size_t(embed)].place = Placement::host_mapped;
    p.stream_order = best.streamed;

    // Host side: register streamed blocks in pass order while RAM allows; the rest come from the
    // file through one pinned bounce buffer (or from the page cache when registration is refused).
    uint64_t ram_left = p.ram_budget;
    if (ple_host) {
        place_per_layer_table_in_host(p, ple, bytes_of(ple));
        ram_left -= bytes_of(ple);
    }
    if (p.embed_host_mapped) {
        ram_left -= bytes_of(embed);
        p.ram.push_back({"token embedding (registered, rows read by the kernel)", bytes_of(embed)});
    }
    uint64_t streamed_total = 0;
    for (int i : p.stream_order)
        if (!(p.embed_host_mapped && i == embed)) streamed_total += bytes_of(i);
    const bool all_register = in.can_register && streamed_total <= ram_left;
    if (!p.stream_order.empty() && !all_register) {
        p.bounce_bytes = p.slot_bytes;
        if (p.bounce_bytes > ram_left)
            fail("--ram-budget: {} of host memory is below the minimum of {} (one pinned bounce buffer of the largest streamed block{})",
                 format_bytes(double(ram_left)), format_bytes(double(p.bounce_bytes + (p.ram_budget - ram_left))),
                 p.embed_host_mapped && ple_host ? " plus the registered token embedding and per-layer table"
                 : p.embed_host_mapped           ? " plus the registered token embedding"
                 : ple_host                      ? " plus the registered per-layer embedding table" : "");
        ram_left -= p.bounce_bytes;
        p.ram.push_back({"bounce buffer (pinned)", p.bounce_bytes});
    }
    const bool page_cache_holds = streamed_total <= ram_left;
    for (size_t j = 0; j < p.stream_order.size(); ++j) {
        const int i = p.stream_order[j];
        BlockPlacement& b = p.blocks[size_t(i)];
        b.stream_index = int(j);
        if (p.embed_host_mapped && i == embed) {  // tied head: already registered for the lookups
            b.place = Placement::registered;
        } else if (in.can_register && b.bytes <= ram_left) {
            b.place = Placement::registered;
            ram_left -= b.bytes;
        } else {
            b.place = !in.can_register && page_cache_holds ? Placement::bounce : Placement::disk;
        }
    }
    uint64_t registered = 0;
    for (const auto& b : p.blocks)
        if (b.place == Placement::registered && !(p.embed_host_mapped && b.name == "embed")) registered += b.bytes;
    if (registered) p.ram.push_back({"streamed blocks (registered in place, read-only)", registered});
    for (const auto& l : p.ram) p.ram_used += l.bytes;

    // ---- VRAM accounting ----
    uint64_t resident = 0;
    int resident_blocks = 0;
    for (const auto& b : p.blocks)
        if (b.place == Placement::vram) {
            resident += round_up(b.bytes, k_thin_align);
            ++resident_blocks;
            if (b.layer >= 0) ++p.n_resident_layers;
        }
    p.vram.push_back({fmt::format("resident weights ({} blocks)", resident_blocks), resident});
    if (p.ring_slots) p.vram.push_back({fmt::format("streaming ring ({} x {})", p.ring_slots, format_bytes(double(p.slot_bytes))),
                                        uint64_t(p.ring_slots) * p.slot_bytes});
    p.vram.insert(p.vram.end(), fixed_lines.begin(), fixed_lines.end());
    for (const auto& l : p.vram) p.vram_used += l.bytes;
    TT_ASSERT(p.vram_used == best.need);

    // ---- the CPU as a third place ----
    // Every non-resident layer crosses PCIe once per prefill chunk, but a decode token can instead
    // compute some of them on the CPU straight from host memory while the copy engine streams the
    // others: both host paths busy at once. Which ones is chosen on the pass's timeline
    // (simulate_pass): the CPU layers are spread among the streamed ones (a streamed layer ends each
    // group), so the copy engine fills the next slot while the CPU works, and the count that gives
    // the shortest pass wins (or --cpu-layers).
    const double h2d = in.bw.h2d_pinned_gbs * 1e9, eff_dev = in.bw.device_gbs * 1e9 * k_decode_efficiency;
    const double cpu_rate = std::min(in.bw.cpu_gemv_gbs, in.bw.host_read_gbs) * 1e9 * k_cpu_efficiency;
    // The two host paths share the host's memory: a pass lasts at least their bytes over its read rate.
    const double host_shared = in.bw.host_read_gbs * 1e9 * k_host_shared_efficiency;
    auto shared_bound_s = [&](const std::vector<bool>& on_cpu) {
        uint64_t bytes = 0;
        for (size_t i = 0; i < p.blocks.size(); ++i)
            if (on_cpu[i] || is_streamed(p.blocks[i].place)) bytes += on_cpu[i] ? in.blocks[i].decode_read : p.blocks[i].bytes;
        return double(bytes) / host_shared;
    };
    auto pass_time = [&](const std::vector<bool>& on_cpu, const std::vector<PassStep>& steps) {
        return std::max(simulate_pass(steps, k_handoff_s), shared_bound_s(on_cpu));
    };
    auto copy_time = [&](const BlockPlacement& b) {
        double t = double(b.bytes) / h2d;
        if (b.place == Placement::disk) t += double(b.bytes) / (in.bw.disk_gbs * 1e9);
        if (b.place == Placement::bounce) t += double(b.bytes) / (in.bw.host_copy_gbs * 1e9);
        return t;
    };
    std::vector<int> pass;  // compute order of the blocks read per token: embedding row, layers, head
    if (!tied) pass.push_back(embed);
    // Gemma 4's per-layer inputs, computed before layer 0: the table's row (host-mapped reads over
    // PCIe by the kernel, ~18 KB per token, counted with the kernels' reads at the device rate: a
    // microsecond either way) and the projection with its norm.
    if (ple >= 0) pass.push_back(ple);
    if (per_layer >= 0) pass.push_back(per_layer);
    for (int il = 0; il < s.n_layers; ++il) pass.push_back(layers[size_t(il)]);
    pass.push_back(output);
    if (tied) pass.push_back(embed);
    auto gpu_time = [&](int i) {
        return double(in.blocks[size_t(i)].decode_read) / eff_dev + (in.blocks[size_t(i)].layer >= 0 ? k_decode_layer_overhead_s : 0.0);
    };
    auto cpu_time = [&](int i) { return double(in.blocks[size_t(i)].decode_read) / cpu_rate + k_cpu_layer_overhead_s; };
    // The decode pass with the blocks in `on_cpu` computed on the CPU: streamed block j of the
    // prefill order keeps slot j % R, and waits for the decode step that last used that slot.
    auto decode_steps = [&](const std::vector<bool>& on_cpu) {
        std::vector<PassStep> steps;
        std::vector<int> slot_user(size_t(std::max(1, p.ring_slots)), -1);
        for (int i : pass) {
            PassStep st;
            st.on_cpu = on_cpu[size_t(i)];
            st.compute_s = st.on_cpu ? cpu_time(i) : gpu_time(i);
            const BlockPlacement& b = p.blocks[size_t(i)];
            if (is_streamed(b.place) && !st.on_cpu) {
                const int slot = b.stream_index % p.ring_slots;
                st.copy_s = copy_time(b);
                st.slot_after = slot_user[size_t(slot)];
                slot_user[size_t(slot)] = int(steps.size());
            }
            steps.push_back(st);
        }
        return steps;
    };
    // Candidates for the CPU: streamed layers registered in host memory (the CPU reads them there).
    const std::vector<int> movable = decode_movable_blocks(p);
    const uint64_t host_kv = 2 * kv_cache_layer_bytes(s, in.context, in.weights, in.kv_cache);  // a CPU layer's cache in host memory
    const uint64_t ram_spare = p.ram_budget > p.ram_used ? p.ram_budget - p.ram_used : 0;
    // note: the host decode path computes attention layers with dense FFNs only.
    std::string host_limit = host_unsupported_reason(s);
    // note: a CPU layer's cache crosses the bus between prefill on the GPU and decode on the CPU
    // (cuda_backend.cpp's copy_cpu_kv), the 8-bit cache's row scales with its rows. The host keeps
    // one model-wide row width (kv_dim values, n_kv_heads scales a position), so a model whose
    // layers' KV widths differ keeps every layer on the GPU, whichever the cache.
    if (host_limit.empty())
        for (int il = 0; il < s.n_layers; ++il)
            if (s.has_kv(il) && (s.layer_head_dim(il) != s.head_dim || s.layer_n_kv_heads(il) != s.n_kv_heads)) {
                host_limit = fmt::format("the CPU layers' {}KV caches need every layer's rows {} heads x {} wide, but layer {} has "
                                         "{} x {}",
                                         in.kv_cache == KvCacheType::int8 ? "8-bit " : "", s.n_kv_heads, s.head_dim, il,
                                         s.layer_n_kv_heads(il), s.layer_head_dim(il));
                break;
            }
    const bool gpu_only = s.has_moe() || !host_limit.empty();
    const int max_cpu = gpu_only ? 0 : int(std::min<uint64_t>(movable.size(), host_kv ? ram_spare / host_kv : movable.size()));
    // The CPU layers read the body's weights as the GPU runs them (quantized ones included): a
    // rate measured on other rows mis-prices them (INT4's widening costs more per byte than bf16's).
    if (max_cpu > 0 && in.weights_quant != in.bw.cpu_gemv_weights)
        p.warnings.push_back(fmt::format("the CPU GEMV rate is of {} rows, but the layers the CPU may compute hold {} weights: their "
                                         "cost is priced at the wrong rate",
                                         gemv_weights_name(in.bw.cpu_gemv_weights), gemv_weights_name(in.weights_quant)));
    if (in.cpu_layers > max_cpu)
        fail("--cpu-layers {}: at most {} layers can run on the CPU with this plan ({} streamed layers in registered host memory{})",
             in.cpu_layers, max_cpu, movable.size(),
             s.has_moe() ? "; mixture-of-experts models keep every layer on the GPU"
             : gpu_only  ? fmt::format("; {}: every layer stays on the GPU", host_limit) : "");
    p.max_cpu_layers = max_cpu;
    auto placement_for = [&](int c) {
        std::vector<bool> on_cpu(in.blocks.size(), false);
        for (int k = 0; k < int(movable.size()); ++k) on_cpu[size_t(movable[size_t(k)])] = cpu_at(k, int(movable.size()), c);
        return on_cpu;
    };
    auto time_for = [&](int c) {
        const std::vector<bool> on = placement_for(c);
        return pass_time(on, decode_steps(on));
    };
    int best_c = in.cpu_layers >= 0 ? in.cpu_layers : 0;
    double best_s = time_for(best_c);
    if (in.cpu_layers < 0)
        for (int c = 1; c <= max_cpu; ++c) {
            const double t = time_for(c);
            if (t < best_s * 0.999) best_c = c, best_s = t;  // a CPU layer must earn its place
        }
    // The placement, decode's copy order and the bytes each host path reads, as the CUDA backend
    // sets them again when --tune-split moves the count.
    set_decode_split(p, best_c);
    const std::vector<bool> on_cpu = placement_for(best_c);
    p.cpu_threads = in.bw.cpu_threads;
    if (best_c) p.ram.push_back({fmt::format("KV cache of the {} CPU layers", best_c), uint64_t(best_c) * host_kv});
    if (best_c) p.ram_used += uint64_t(best_c) * host_kv;

    // ---- bytes per token and predictions ----
    double copy_s = 0, prefill_copy_s = 0;
    for (int i : pass) {
        if (p.blocks[size_t(i)].place == Placement::cpu) p.decode_cpu_s += cpu_time(i);
        else p.decode_read_bytes += in.blocks[size_t(i)].decode_read;
    }
    for (const auto& b : p.blocks) {
        if (b.place == Placement::cpu) prefill_copy_s += copy_time(b);  // prefill streams it like the others
        if (!is_streamed(b.place)) continue;
        copy_s += copy_time(b);
        prefill_copy_s += copy_time(b);
        if (b.place == Placement::disk) p.disk_bytes += b.bytes;
        else if (b.place == Placement::bounce) p.host_copy_bytes += b.bytes;
    }
    p.decode_compute_s = double(p.decode_read_bytes) / eff_dev + (s.n_layers - best_c) * k_decode_layer_overhead_s;
    p.decode_copy_s = copy_s;
    // The timeline: copies beside the layers, each streamed layer waiting for its copy, CPU layers
    // in the chain; after the last streamed block lands, the rest of the pass runs with the copy
    // engine idle (the next token's copies start at its graph launch).
    const double token_s = pass_time(on_cpu, decode_steps(on_cpu));
    p.decode_tps = token_s > 0 ? 1.0 / token_s : 0;
    p.pcie_bound_tps = p.pcie_bytes ? h2d / double(p.pcie_bytes) : 0;
    if (p.pcie_bytes + p.cpu_bytes)
        p.combined_bound_tps = (in.bw.h2d_pinned_gbs + in.bw.host_read_gbs) * 1e9 / double(p.pcie_bytes + p.cpu_bytes);
    // Prefill: each streamed block (CPU layers too) crosses once per chunk; f32 weights run cuBLAS
    // in true f32 (no tensor cores), about 1/16 of the bf16 rate. With a ring of 1 slot a copy
    // waits for the GEMMs of the block before it: the two add up instead of overlapping.
    const double rate = in.bw.gemm_tflops * 1e12 * k_prefill_efficiency / (in.weights == DType::f32 ? 16.0 : 1.0);
    const double prefill_gemm_s = prefill_flops(s, p.prefill_chunk) / rate;
    const double prefill_s = p.ring_slots == 1 ? prefill_gemm_s + prefill_copy_s : std::max(prefill_gemm_s, prefill_copy_s);
    p.prefill_tps = prefill_s > 0 ? p.prefill_chunk / prefill_s : 0;

    // ---- notes ----
    const int n_streamed_layers = s.n_layers - p.n_resident_layers;
    if (p.embed_host_mapped)
        p.notes.push_back("token embedding stays in registered host memory: decode reads one row per token through its device "
                          "pointer (prefill reads one row per prompt token)");
    if (p.per_layer_embd_host_mapped)
        p.notes.push_back(fmt::format("the per-layer embedding table ({}) stays in registered host memory: decode reads one row "
                                      "({}) per token through its device pointer (prefill one row per prompt token)",
                                      format_bytes(double(bytes_of(ple))), format_bytes(double(in.blocks[size_t(ple)].decode_read))));
    if (n_streamed_layers > 0)
        p.notes.push_back(p.ring_slots == 1
            ? fmt::format("layers {}..{} are streamed each prefill chunk through a ring of 1 slot, a layer's VRAM less than 2: "
                          "a copy waits for the kernels of the block before it (decode: microseconds; prefill: its GEMMs no "
                          "longer overlap the copies; --ring-slots 2 overlaps them); the first {} stay resident",
                          p.n_resident_layers, s.n_layers - 1, p.n_resident_layers)
            : fmt::format("layers {}..{} are streamed each prefill chunk through a ring of {} slots (streamed block j "
                          "uses slot j % {}); the first {} stay resident",
                          p.n_resident_layers, s.n_layers - 1, p.ring_slots, p.ring_slots, p.n_resident_layers));
    if (p.n_cpu_layers > 0)
        p.notes.push_back(fmt::format("decode computes {} of them on the CPU ({} threads, {:.1f} GB/s GEMV of {} weights) from host "
                                      "memory while the copy engine streams the other {}: {} per token over PCIe, {} read by the "
                                      "CPU, {} GPU<->CPU handoffs",
                                      p.n_cpu_layers, p.cpu_threads, in.bw.cpu_gemv_gbs, gemv_weights_name(in.bw.cpu_gemv_weights),
                                      n_streamed_layers - p.n_cpu_layers,
                                      gb(double(p.pcie_bytes)), gb(double(p.cpu_bytes)), p.handoffs));
    if (in.cpu_layers < 0 && p.max_cpu_layers > 0)
        p.notes.push_back(fmt::format("with --tune-split, decode starts at {} CPU layers and moves the count (0..{}) by its own "
                                      "token times, which the host rates measured here only predict",
                                      p.n_cpu_layers, p.max_cpu_layers));
    if (std::find(p.stream_order.begin(), p.stream_order.end(), output) != p.stream_order.end())
        p.notes.push_back("the output head is streamed too: it does not fit beside a ring");
    if (p.disk_bytes)
        p.warnings.push_back(fmt::format("the RAM budget ({}) cannot hold every streamed block registered: {} per token is read "
                                         "from the file (O_DIRECT) into a pinned bounce buffer, bounded by the disk",
                                         format_bytes(double(p.ram_budget)), gb(double(p.disk_bytes))));
    if (p.host_copy_bytes)
        p.notes.push_back("the mapping cannot be registered here: streamed blocks are copied by host threads through a pinned "
                          "bounce buffer (slower than registered memory)");
    return p;
}

namespace {
// " (embedding in host memory)", " (per-layer table in host memory)", both, or nothing.
std::string in_host_memory(const Plan& p) {
    if (p.embed_host_mapped && p.per_layer_embd_host_mapped) return " (embedding and per-layer table in host memory)";
    if (p.embed_host_mapped) return " (embedding in host memory)";
    if (p.per_layer_embd_host_mapped) return " (per-layer table in host memory)";
    return "";
}
}  // namespace

std::vector<int> decode_movable_blocks(const Plan& p) {
    std::vector<int> out;
    for (int i : p.stream_order) {
        const BlockPlacement& b = p.blocks[size_t(i)];
        if (b.layer >= 0 && (b.place == Placement::registered || b.place == Placement::cpu)) out.push_back(i);
    }
    return out;
}

void set_decode_split(Plan& p, int n_cpu) {
    TT_ASSERT(n_cpu >= 0 && n_cpu <= p.max_cpu_layers, "{} CPU layers: the plan allows 0..{}", n_cpu, p.max_cpu_layers);
    const std::vector<int> movable = decode_movable_blocks(p);
    for (size_t k = 0; k < movable.size(); ++k)
        p.blocks[size_t(movable[k])].place = cpu_at(int(k), int(movable.size()), n_cpu) ? Placement::cpu : Placement::registered;
    p.decode_stream_order.clear();
    for (int i : p.stream_order)
        if (p.blocks[size_t(i)].place != Placement::cpu) p.decode_stream_order.push_back(i);
    p.n_cpu_layers = n_cpu;
    p.cpu_bytes = p.pcie_bytes = 0;
    for (const BlockPlacement& b : p.blocks) {
        if (b.place == Placement::cpu) p.cpu_bytes += b.decode_read;
        if (is_streamed(b.place)) p.pcie_bytes += b.bytes;
    }
    // Each run of consecutive CPU layers hands the hidden state down and back up (the head and
    // the embedding never run on the CPU).
    std::vector<bool> layer_on_cpu;
    for (const BlockPlacement& b : p.blocks)
        if (b.layer >= 0 && b.expert < 0) {
            if (size_t(b.layer) >= layer_on_cpu.size()) layer_on_cpu.resize(size_t(b.layer) + 1, false);
            layer_on_cpu[size_t(b.layer)] = layer_on_cpu[size_t(b.layer)] || b.place == Placement::cpu;
        }
    p.handoffs = 0;
    for (size_t il = 0; il < layer_on_cpu.size(); ++il)
        if (layer_on_cpu[il] && (il == 0 || !layer_on_cpu[il - 1])) p.handoffs += 2;
}

std::string Plan::summary() const {
    if (expert_slots > 0)
        return fmt::format("plan: dense weights resident{}, {} of {} experts cached in VRAM ({} slots of {}), the rest in "
                           "registered host memory; {}/token over PCIe at a {:.1f}% hit rate (uniform routing), VRAM {} of {}, "
                           "predicted {:.1f} tok/s decode{}",
                           in_host_memory(*this), expert_slots, n_experts_total, expert_slots,
                           format_bytes(double(expert_slot_bytes)), gb(double(pcie_bytes)),
                           100.0 * expert_hit_rate, format_bytes(double(vram_used)), format_bytes(double(vram_budget)), decode_tps,
                           assumed_note());
    if (!streaming() && !embed_host_mapped)
        return fmt::format("plan: all {} layers resident in VRAM{} ({} of {}), predicted {:.1f} tok/s decode{}", n_layers,
                           in_host_memory(*this), format_bytes(double(vram_used)), format_bytes(double(vram_budget)), decode_tps,
                           assumed_note());
    std::string from;
    int n_reg = 0, n_bounce = 0, n_disk = 0;
    for (const auto& b : blocks) {
        n_reg += b.place == Placement::registered;
        n_bounce += b.place == Placement::bounce;
        n_disk += b.place == Placement::disk;
    }
    std::vector<std::string> srcs;
    if (n_reg) srcs.push_back(fmt::format("{} from registered host memory", n_reg));
    if (n_bounce) srcs.push_back(fmt::format("{} through a bounce buffer", n_bounce));
    if (n_disk) srcs.push_back(fmt::format("{} from disk", n_disk));
    for (size_t i = 0; i < srcs.size(); ++i) from += (i ? ", " : "") + srcs[i];
    if (n_cpu_layers > 0)
        return fmt::format("plan: {} of {} layers resident{}, {} streamed over PCIe, {} computed on the CPU ({} threads); per token "
                           "{} over PCIe + {} read by the CPU, VRAM {} of {}, predicted {:.1f} tok/s decode (both host paths' "
                           "bound {:.1f}){}",
                           n_resident_layers, n_layers, in_host_memory(*this), decode_stream_order.size(), n_cpu_layers,
                           cpu_threads, gb(double(pcie_bytes)), gb(double(cpu_bytes)),
                           format_bytes(double(vram_used)), format_bytes(double(vram_budget)), decode_tps, combined_bound_tps,
                           assumed_note());
    return fmt::format("plan: {} of {} layers resident{}, {} blocks streamed ({}), {}/token over PCIe, VRAM {} of {}, "
                       "predicted {:.1f} tok/s decode (PCIe bound {:.1f}){}",
                       n_resident_layers, n_layers, in_host_memory(*this), stream_order.size(), from.empty() ? "none" : from,
                       gb(double(pcie_bytes)), format_bytes(double(vram_used)),
                       format_bytes(double(vram_budget)), decode_tps, pcie_bound_tps, assumed_note());
}

std::string Plan::assumed_note() const {
    // A prediction from guessed bandwidths says so, rather than passing for a measured one.
    return bw.source.rfind("assumed", 0) == 0 ? " from assumed bandwidths (`thintensor doctor` measures them)" : "";
}

std::string Plan::table() const {
    std::ostringstream o;
    o << fmt::format("VRAM budget: {} ({})\n", format_bytes(double(vram_budget)), vram_budget_origin);
    o << fmt::format("minimum working set: {}\n\n", format_bytes(double(min_vram)));
    o << "placement:\n";
    // Runs of consecutive blocks with the same placement, so 32 layers take a few lines.
    for (size_t i = 0; i < blocks.size();) {
        size_t j = i;
        uint64_t bytes = 0;
        while (j < blocks.size() && blocks[j].place == blocks[i].place && (blocks[j].layer >= 0) == (blocks[i].layer >= 0)) bytes += blocks[j++].bytes;
        const std::string names = j - i == 1 ? blocks[i].name : fmt::format("{} .. {}", blocks[i].name, blocks[j - 1].name);
        o << fmt::format("  {:<22} {:>12}  {}\n", names, format_bytes(double(bytes)), placement_name(blocks[i].place));
        i = j;
    }
    if (expert_slots > 0)
        o << fmt::format("  expert cache: {} slots x {} for {} experts ({:.1f}%), least recently used out\n", expert_slots,
                         format_bytes(double(expert_slot_bytes)), n_experts_total, 100.0 * expert_hit_rate);
    if (streaming())
        o << fmt::format("  ring: {} slot{} x {}; streamed in pass order: {} .. {}\n", ring_slots, ring_slots == 1 ? "" : "s",
                         format_bytes(double(slot_bytes)),
                         blocks[size_t(stream_order.front())].name, blocks[size_t(stream_order.back())].name);
    o << "\nVRAM:\n";
    for (const auto& l : vram) o << fmt::format("  {:<44} {:>12}\n", l.what, format_bytes(double(l.bytes)));
    o << fmt::format("  {:<44} {:>12} of {}\n", "total", format_bytes(double(vram_used)), format_bytes(double(vram_budget)));
    o << fmt::format("\nhost memory (budget {}):\n", format_bytes(double(ram_budget)));
    if (ram.empty()) o << "  none pinned\n";
    for (const auto& l : ram) o << fmt::format("  {:<52} {:>12}\n", l.what, format_bytes(double(l.bytes)));
    o << "\nper decode token:\n";
    o << fmt::format("  read by kernels from VRAM   {}\n", gb(double(decode_read_bytes)));
    o << fmt::format("  over PCIe (host -> device)  {}{}\n", gb(double(pcie_bytes)),
                     disk_bytes ? fmt::format(" ({} of it read from disk)", gb(double(disk_bytes))) : "");
    if (n_cpu_layers > 0)
        o << fmt::format("  read by the CPU             {} ({} layers, {} threads, {:.2f} ms; {} GPU<->CPU handoffs)\n",
                         gb(double(cpu_bytes)), n_cpu_layers, cpu_threads, decode_cpu_s * 1e3, handoffs);
    o << fmt::format("\nbandwidths ({}): PCIe h2d pinned {:.1f} GB/s, device copy {:.0f} GB/s, bf16 GEMM {:.0f} TFLOP/s, "
                     "disk {:.1f} GB/s\n",
                     bw.source, bw.h2d_pinned_gbs, bw.device_gbs, bw.gemm_tflops, bw.disk_gbs);
    o << fmt::format("host: memory read {:.1f} GB/s, CPU GEMV {:.1f} GB/s of {} weights with {} threads\n", bw.host_read_gbs,
                     bw.cpu_gemv_gbs, gemv_weights_name(bw.cpu_gemv_weights), bw.cpu_threads);
    o << fmt::format("predicted: decode {:.1f} tok/s (kernels {:.2f} ms, copies {:.2f} ms per token{}), prefill {:.0f} tok/s "
                     "({}-token chunks)\n",
                     decode_tps, decode_compute_s * 1e3, decode_copy_s * 1e3,
                     pcie_bound_tps > 0 ? fmt::format("; PCIe bound {:.1f} tok/s", pcie_bound_tps) : "", prefill_tps, prefill_chunk);
    if (combined_bound_tps > 0)
        o << fmt::format("bound with both host paths busy (non-resident bytes / (PCIe + host read)): {:.1f} tok/s\n", combined_bound_tps);
    for (const auto& n : notes) o << "note: " << n << "\n";
    return o.str();
}

nlohmann::json Plan::to_json() const {
    using json = nlohmann::json;
    json b = json::array();
    for (const auto& x : blocks)
        b.push_back({{"name", x.name}, {"bytes", x.bytes}, {"placement", placement_name(x.place)},
                     {"slot", x.stream_index >= 0 ? json(x.stream_index % ring_slots) : json(nullptr)}});
    auto lines = [](const std::vector<MemLine>& v) {
        json a = json::array();
        for (const auto& l : v) a.push_back({{"what", l.what}, {"bytes", l.bytes}});
        return a;
    };
    json order = json::array();
    for (int i : stream_order) order.push_back(blocks[size_t(i)].name);
    json decode_order = json::array();
    for (int i : decode_stream_order) decode_order.push_back(blocks[size_t(i)].name);
    return {{"vram_budget", vram_budget},
            {"vram_budget_origin", vram_budget_origin},
            {"vram_used", vram_used},
            {"min_vram", min_vram},
            {"vram", lines(vram)},
            {"ram_budget", ram_budget},
            {"ram_used", ram_used},
            {"ram", lines(ram)},
            {"n_layers", n_layers},
            {"n_resident_layers", n_resident_layers},
            {"embed_host_mapped", embed_host_mapped},
            {"per_layer_embd_host_mapped", per_layer_embd_host_mapped},
            {"ring_slots", ring_slots},
            {"slot_bytes", slot_bytes},
            {"bounce_bytes", bounce_bytes},
            {"prefill_chunk", prefill_chunk},
            {"stream_order", order},
            {"decode_stream_order", decode_order},
            {"n_cpu_layers", n_cpu_layers},
            {"max_cpu_layers", max_cpu_layers},  // the range --cpu-layers and --tune-split may use
            {"cpu_threads", cpu_threads},
            {"cpu_bytes_per_token", cpu_bytes},
            {"handoffs_per_token", handoffs},
            {"predicted_decode_cpu_s", decode_cpu_s},
            {"combined_bound_tokens_per_s", combined_bound_tps},
            {"expert_cache", {{"slots", expert_slots},
                              {"slot_bytes", expert_slot_bytes},
                              {"experts", n_experts_total},
                              {"predicted_hit_rate", expert_hit_rate},
                              {"active_expert_bytes_per_token", active_expert_bytes}}},
            {"blocks", b},
            {"pcie_bytes_per_token", pcie_bytes},
            {"disk_bytes_per_token", disk_bytes},
            {"decode_read_bytes_per_token", decode_read_bytes},
            {"predicted_decode_compute_s", decode_compute_s},
            {"predicted_decode_copy_s", decode_copy_s},
            {"predicted_decode_tokens_per_s", decode_tps},
            {"pcie_bound_tokens_per_s", pcie_bound_tps},
            {"predicted_prefill_tokens_per_s", prefill_tps},
            {"bandwidths", {{"source", bw.source}, {"h2d_pinned_gbs", bw.h2d_pinned_gbs}, {"device_gbs", bw.device_gbs},
                            {"gemm_tflops", bw.gemm_tflops}, {"disk_gbs", bw.disk_gbs}, {"host_copy_gbs", bw.host_copy_gbs},
                            {"host_read_gbs", bw.host_read_gbs}, {"cpu_gemv_gbs", bw.cpu_gemv_gbs},
                            {"cpu_gemv_weights", gemv_weights_name(bw.cpu_gemv_weights)}, {"cpu_threads", bw.cpu_threads}}},
            {"warnings", warnings},
            {"notes", notes}};
}

}  // namespace tt
