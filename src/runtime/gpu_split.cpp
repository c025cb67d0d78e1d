#include "runtime/gpu_split.h"

#include "core/progress.h"
#include "core/error.h"
#include "format/archive.h"
#include "runtime/device_buffers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>

namespace tt {

namespace {

std::string gb(double bytes) { return fmt::format("{:.2f} GB", bytes / 1e9); }

}  // namespace

std::vector<int> parse_gpu_list(const std::string& s) {
    std::vector<int> out;
    std::stringstream ss(s);
    std::string item;
    if (s.empty()) fail("--gpus: empty list (give device indices such as 0,1)");
    while (std::getline(ss, item, ',')) {
        if (item.empty() || item.size() > 4 || !std::all_of(item.begin(), item.end(), [](unsigned char c) { return std::isdigit(c); }))
            fail("--gpus {}: '{}' is not a device index (give indices such as 0,1)", s, item);
        const int d = std::stoi(item);
        if (std::find(out.begin(), out.end(), d) != out.end()) fail("--gpus {}: device {} is listed twice", s, d);
        out.push_back(d);
    }
    if (s.back() == ',') fail("--gpus {}: empty item at the end (give indices such as 0,1)", s);
    return out;
}

SplitPlan make_split_plan(const SplitInput& in) {
    const PlanInput& one = in.one;
    const ModelSpec& s = one.spec;
    const int G = int(in.gpus.size());
    if (G < 2) fail("--gpus: a split needs at least two GPUs, got {}", G);
    TT_ASSERT(one.context > 0);
    // note: Gemma 4's KV-shared layers read an earlier layer's cache and its per-layer inputs are
    // computed once before layer 0 for every layer: a boundary would have to carry both.
    if (s.per_layer_dim > 0 || std::any_of(s.layers.begin(), s.layers.end(), [](const LayerSpec& l) { return l.kv_from >= 0; }))
        fail("--gpus: {} shares KV caches between layers and computes per-layer inputs before layer 0 (Gemma 4), which the "
             "split across GPUs does not place yet", s.hf_architecture);
    SplitPlan p;
    p.n_gpus = G;
    p.n_layers = s.n_layers;
    p.bw = one.bw;
    p.peer_gbs = in.peer_gbs;
    p.peer_latency_s = in.peer_latency_s;
    p.link_source = in.link_source;

    // ---- the model's parts ----
    const uint64_t slots = uint64_t(std::max(1, one.n_sequences));
    std::vector<uint64_t> layer_bytes(size_t(s.n_layers), 0), layer_read(size_t(s.n_layers), 0), layer_kv(size_t(s.n_layers), 0);
    uint64_t embed_bytes = 0, embed_read = 0, output_bytes = 0, output_read = 0;
    for (const PlanBlock& b : one.blocks) {
        if (b.name == "embed") embed_bytes = round_up(b.bytes, k_thin_align), embed_read = b.decode_read;
        else if (b.name == "output") output_bytes = round_up(b.bytes, k_thin_align), output_read = b.decode_read;
        else if (b.layer >= 0 && b.layer < s.n_layers) {
            layer_bytes[size_t(b.layer)] += round_up(b.bytes, k_thin_align);
            layer_read[size_t(b.layer)] += b.decode_read;
        } else {
            fail("--gpus: unexpected block '{}' in the archive", b.name);
        }
    }
    uint64_t kv_total = 0;
    for (int il = 0; il < s.n_layers; ++il) {
        layer_kv[size_t(il)] = (2 * kv_cache_layer_bytes(s, il, one.context, one.weights, one.kv_cache) +
                                (s.is_delta_net(il) ? s.delta_net.state_bytes() : 0)) * slots;
        kv_total += layer_kv[size_t(il)];
    }
    // The working set every GPU keeps: the one-GPU planner's fixed lines without the KV cache and
    // recurrent state (each GPU holds its own layers'), plus the scratch and, per GPU, its CUDA
    // context as NVML reads it there (else the assumed one).
    uint64_t shared_fixed = one.dequant_scratch;
    for (const MemLine& l : fixed_vram_lines(s, one.weights, one.context, one.n_sequences, one.kv_cache)) shared_fixed += l.bytes;
    shared_fixed -= kv_total;
    auto fixed_of = [&](const SplitGpu& gpu) { return shared_fixed + (gpu.context_bytes ? gpu.context_bytes : k_cuda_context); };
    uint64_t max_fixed = 0;  // the largest GPU's: what tensor parallelism needs on each
    for (const SplitGpu& gpu : in.gpus) max_fixed = std::max(max_fixed, fixed_of(gpu));
    const uint64_t row = uint64_t(s.hidden_dim) * dtype_size(one.weights);  // one embedding row
    // The head lives on the last GPU. A tied embedding is the head, so there it is read whole, and
    // the first GPU looks its rows up in registered host memory (one row per token over PCIe) where
    // the mapping can be registered, else from a copy of its own.
    const bool tied = s.tied_embeddings;
    const uint64_t head_bytes = output_bytes + (tied ? embed_bytes : 0) + one.quant_head_copy;
    const uint64_t head_read = output_read + (tied ? embed_read : 0);
    const uint64_t first_embed = tied ? (one.can_register ? 0 : embed_bytes) : embed_bytes;
    if (tied)
        p.notes.push_back(one.can_register ? "the embedding is tied to the head: the last GPU holds it, the first looks its rows up "
                                             "in registered host memory"
                                           : "the embedding is tied to the head and host memory cannot be registered here: the "
                                             "first GPU keeps a copy of it");

    // ---- the layer split ----
    std::vector<uint64_t> budget(static_cast<size_t>(G));
    std::vector<int64_t> cap(static_cast<size_t>(G));
    p.gpus.resize(size_t(G));
    for (int g = 0; g < G; ++g) {
        GpuShare& sh = p.gpus[size_t(g)];
        sh.device = in.gpus[size_t(g)].device;
        sh.name = in.gpus[size_t(g)].name;
        const SplitGpu& gpu = in.gpus[size_t(g)];
        sh.budget = budget[size_t(g)] = vram_budget_in_effect(one.vram_budget, gpu.device_free, gpu.device_total,
                                                              fmt::format("GPU {}", gpu.device), sh.budget_origin, p.warnings);
        sh.embed = g == 0;
        sh.head = g == G - 1;
        sh.fixed = fixed_of(gpu);
        cap[size_t(g)] = int64_t(sh.budget) - int64_t(sh.fixed) - int64_t(g == 0 ? first_embed : 0) - int64_t(g == G - 1 ? head_bytes : 0);
    }
    // Layers in order, each GPU taking its share in proportion to the room it has (llama.cpp's
    // default split by free memory) and never more than that room; when the proportional cut
    // leaves the last GPU short, every GPU is filled in turn instead.
    std::vector<uint64_t> cost(static_cast<size_t>(s.n_layers));
    uint64_t total_cost = 0;
    int64_t total_cap = 0;
    for (int il = 0; il < s.n_layers; ++il) total_cost += cost[size_t(il)] = layer_bytes[size_t(il)] + layer_kv[size_t(il)];
    for (int64_t c : cap) total_cap += std::max<int64_t>(c, 0);
    auto assign = [&](bool proportional, std::vector<int>& end) {  // end[g]: one past GPU g's last layer
        end.assign(size_t(G), 0);
        int il = 0;
        double target = 0, placed = 0;  // cumulative: the proportional cut after GPU g, the cost of layers [0, il)
        for (int g = 0; g < G; ++g) {
            target += total_cap > 0 ? double(total_cost) * double(std::max<int64_t>(cap[size_t(g)], 0)) / double(total_cap) : 0;
            int64_t used = 0;
            while (il < s.n_layers && used + int64_t(cost[size_t(il)]) <= cap[size_t(g)] &&
                   (!proportional || g == G - 1 || placed + double(cost[size_t(il)]) / 2 <= target)) {
                used += int64_t(cost[size_t(il)]);
                placed += double(cost[size_t(il)]);
                ++il;
            }
            end[size_t(g)] = il;
        }
        return il;  // layers placed
    };
    std::vector<int> end;
    p.layers_placed = assign(true, end);
    if (p.layers_placed < s.n_layers) p.layers_placed = assign(false, end);
    p.fits = p.layers_placed == s.n_layers && cap[0] >= 0 && cap[size_t(G - 1)] >= 0;
    p.hidden_bytes = uint64_t(s.hidden_dim) * 4;
    p.hop_s = double(p.hidden_bytes) / (in.peer_gbs * 1e9) + in.peer_latency_s;
    // A GPU's device copy bandwidth: doctor's record of it, else the plan input's.
    auto gbs_of = [&](int g) { return in.gpus[size_t(g)].device_gbs > 0 ? in.gpus[size_t(g)].device_gbs : one.bw.device_gbs; };
    double split_s = double(G - 1) * p.hop_s;
    for (int g = 0; g < G; ++g) {
        GpuShare& sh = p.gpus[size_t(g)];
        sh.first_layer = g == 0 ? 0 : end[size_t(g - 1)];
        sh.end_layer = end[size_t(g)];
        sh.weights = (g == 0 ? first_embed : 0) + (g == G - 1 ? head_bytes : 0);
        sh.decode_read = (g == 0 ? (tied ? row : embed_read) : 0) + (g == G - 1 ? head_read : 0);
        for (int il = sh.first_layer; il < sh.end_layer; ++il) {
            sh.weights += layer_bytes[size_t(il)];
            sh.kv += layer_kv[size_t(il)];
            sh.decode_read += layer_read[size_t(il)];
        }
        sh.used = sh.weights + sh.kv + sh.fixed;
        sh.compute_s = double(sh.decode_read) / (gbs_of(g) * 1e9 * k_decode_efficiency) +
                       double(sh.end_layer - sh.first_layer) * k_decode_layer_overhead_s;
        split_s += sh.compute_s;
    }
    if (p.fits) p.layer_split_tps = 1.0 / split_s;

    // ---- tensor parallelism ----
    double slowest = std::numeric_limits<double>::infinity();
    uint64_t min_budget = std::numeric_limits<uint64_t>::max();
    for (int g = 0; g < G; ++g) {
        slowest = std::min(slowest, gbs_of(g));
        min_budget = std::min(min_budget, budget[size_t(g)]);
    }
    const int heads = s.n_heads, kv_heads = s.n_kv_heads;
    if (s.has_moe()) p.tp_why = "mixture-of-experts layers: splitting experts across GPUs is not planned yet";
    else if (s.has_delta_net()) p.tp_why = "linear-attention (Gated DeltaNet) layers: splitting their heads is not planned yet";
    else if (heads % G || kv_heads % G || s.ffn_dim % G || s.vocab_size % G)
        p.tp_why = fmt::format("{} GPUs do not divide the {} attention heads, {} KV heads, {} FFN columns and {} vocabulary rows evenly",
                               G, heads, kv_heads, s.ffn_dim, s.vocab_size);
    // Every matrix split G ways (the embedding and head by vocabulary rows, the norms kept whole:
    // a few KB), the KV cache by heads; an all-reduce after attention and after the FFN of each
    // layer, one for the head's argmax.
    uint64_t all_weights = embed_bytes + output_bytes + one.quant_head_copy, all_read = embed_read + output_read;
    for (int il = 0; il < s.n_layers; ++il) all_weights += layer_bytes[size_t(il)], all_read += layer_read[size_t(il)];
    p.tp_used_per_gpu = max_fixed + all_weights / uint64_t(G) + kv_total / uint64_t(G);
    p.tp_allreduce_s = double(G - 1) * in.peer_latency_s + 2.0 * double(G - 1) / G * double(p.hidden_bytes) / (in.peer_gbs * 1e9);
    if (p.tp_why.empty() && p.tp_used_per_gpu > min_budget)
        p.tp_why = fmt::format("each GPU would need {}, more than the smallest budget, {}", format_bytes(double(p.tp_used_per_gpu)),
                               format_bytes(double(min_budget)));
    if (p.tp_why.empty()) {
        const double tp_s = double(all_read) / G / (slowest * 1e9 * k_decode_efficiency) + s.n_layers * k_decode_layer_overhead_s +
                            double(2 * s.n_layers + 1) * p.tp_allreduce_s;
        p.tensor_parallel_tps = 1.0 / tp_s;
    }

    // ---- one GPU, for comparison ----
    PlanInput first = one;
    first.device_free = in.gpus[0].device_free;
    first.device_total = in.gpus[0].device_total;
    first.context_bytes = in.gpus[0].context_bytes;
    if (in.gpus[0].device_gbs > 0) first.bw.device_gbs = in.gpus[0].device_gbs;
    try {
        const Plan single = make_plan(first);
        p.one_gpu_tps = single.decode_tps;
        p.one_gpu_summary = single.summary();
    } catch (const Error& e) {
        p.one_gpu_summary = fmt::format("does not run on GPU {} alone: {}", in.gpus[0].device, e.what());
    }
    p.best = "one GPU";
    double best = p.one_gpu_tps;
    if (p.layer_split_tps > best) p.best = "layer split", best = p.layer_split_tps;
    if (p.tensor_parallel_tps > best) p.best = "tensor parallel", best = p.tensor_parallel_tps;
    if (best <= 0) p.best = "none";
    if (!p.fits)
        p.warnings.push_back(fmt::format("the layers do not fit resident across the {} GPUs: {} of {} found room (a GPU keeps up to {} "
                                         "of working set besides its layers)",
                                         G, p.layers_placed, s.n_layers, format_bytes(double(max_fixed))));
    p.notes.push_back("running across several GPUs is not built yet (issue #22): these are predictions from the one-GPU "
                      "planner's calibration and the link figures; run and bench use one GPU");
    return p;
}

std::string SplitPlan::summary() const {
    auto tps = [](double t) { return t > 0 ? fmt::format("{:.1f} tok/s", t) : std::string("does not fit"); };
    return fmt::format("split over {} GPUs: layer split {}, tensor parallel {}, one GPU {}; fastest that fits: {}", n_gpus,
                       tps(layer_split_tps), tensor_parallel_tps > 0 ? tps(tensor_parallel_tps) : "not planned (" + tp_why + ")",
                       tps(one_gpu_tps), best);
}

std::string SplitPlan::table() const {
    std::ostringstream o;
    o << fmt::format("layer split across {} GPUs ({} layers):\n", n_gpus, n_layers);
    o << fmt::format("  {:<4} {:<34} {:>11} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11} {:>9}\n", "GPU", "name", "budget", "layers",
                     "weights", "KV cache", "fixed", "used", "read/token", "kernels");
    for (const GpuShare& g : gpus) {
        const std::string layers = g.end_layer > g.first_layer ? fmt::format("{}..{}", g.first_layer, g.end_layer - 1) : "-";
        std::string what = g.name;
        if (g.embed) what += " +embed";
        if (g.head) what += " +head";
        o << fmt::format("  {:<4} {:<34} {:>11} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11} {:>6.2f} ms\n", g.device, what,
                         format_bytes(double(g.budget)), layers, format_bytes(double(g.weights)), format_bytes(double(g.kv)),
                         format_bytes(double(g.fixed)), format_bytes(double(g.used)), gb(double(g.decode_read)), g.compute_s * 1e3);
    }
    o << fmt::format("  budgets: {}\n", gpus.empty() ? std::string() : gpus.front().budget_origin);
    o << fmt::format("  hidden state per boundary: {} in {:.1f} us (link {:.1f} GB/s, {:.1f} us latency, {})\n",
                     format_bytes(double(hidden_bytes)), hop_s * 1e6, peer_gbs, peer_latency_s * 1e6, link_source);
    o << fmt::format("  {}\n", fits ? fmt::format("predicted decode {:.1f} tok/s", layer_split_tps)
                                    : fmt::format("does not fit: {} of {} layers found room", layers_placed, n_layers));
    o << "\ntensor parallel: ";
    if (tensor_parallel_tps > 0)
        o << fmt::format("each GPU holds 1/{} of every layer ({} used per GPU); {} all-reduces per token of {:.1f} us; predicted "
                         "decode {:.1f} tok/s\n",
                         n_gpus, format_bytes(double(tp_used_per_gpu)), 2 * n_layers + 1, tp_allreduce_s * 1e6, tensor_parallel_tps);
    else
        o << "not planned: " << tp_why << "\n";
    o << "\none GPU: " << one_gpu_summary << "\n";
    o << fmt::format("\nfastest that fits: {}\n", best);
    o << fmt::format("bandwidths: {}; device copy {:.0f} GB/s per GPU unless doctor.json has the GPU\n", bw.source, bw.device_gbs);
    for (const auto& n : notes) o << "note: " << n << "\n";
    return o.str();
}

nlohmann::json SplitPlan::to_json() const {
    nlohmann::json g = nlohmann::json::array();
    for (const GpuShare& s : gpus)
        g.push_back({{"device", s.device},
                     {"name", s.name},
                     {"budget", s.budget},
                     {"budget_origin", s.budget_origin},
                     {"first_layer", s.first_layer},
                     {"end_layer", s.end_layer},
                     {"embed", s.embed},
                     {"head", s.head},
                     {"weights_bytes", s.weights},
                     {"kv_bytes", s.kv},
                     {"fixed_bytes", s.fixed},
                     {"used_bytes", s.used},
                     {"decode_read_bytes", s.decode_read},
                     {"predicted_compute_s", s.compute_s}});
    return {{"n_gpus", n_gpus},
            {"n_layers", n_layers},
            {"gpus", g},
            {"fits", fits},
            {"layers_placed", layers_placed},
            {"hidden_bytes", hidden_bytes},
            {"hop_s", hop_s},
            {"predicted_layer_split_tokens_per_s", layer_split_tps},
            {"predicted_tensor_parallel_tokens_per_s", tensor_parallel_tps},
            {"tensor_parallel_used_per_gpu", tp_used_per_gpu},
            {"tensor_parallel_allreduce_s", tp_allreduce_s},
            {"tensor_parallel_why_not", tp_why},
            {"predicted_one_gpu_tokens_per_s", one_gpu_tps},
            {"one_gpu", one_gpu_summary},
            {"best", best},
            {"link", {{"peer_gbs", peer_gbs}, {"peer_latency_s", peer_latency_s}, {"source", link_source}}},
            {"warnings", warnings},
            {"notes", notes}};
}

}  // namespace tt
