// thintensor bench MODEL: prefill (ppN) and decode (tgN, optionally at a context depth) speed in
// the spirit of llama-bench, each figure beside its roofline: decode as bytes read per token over
// the measured device-copy bandwidth, prefill as FLOPs over the measured bf16 GEMM rate. When the
// backend streams layers (--vram-budget below the model), decode is also set against the PCIe
// bound (host-to-device pinned bandwidth measured in the same run / bytes streamed per token), with
// the overlap of copies and kernels (docs/STREAMING.md defines it).
#include "cli/command.h"
#include "cli/model_args.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "model/tensor_names.h"
#include "model/weight_quant.h"
#include "runtime/plan.h"
#include "runtime/sampler.h"

#ifdef THINTENSOR_HAVE_CUDA
#include "backends/cuda/cuda_plan.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/measure.h"
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <sstream>

namespace {

using Clock = std::chrono::steady_clock;

struct Opts {
    tt::cli::ModelArgs model;
    std::string prompt_lengths = "512,2048", depths = "0";
    int gen_tokens = 128, reps = 3;
    bool json = false;
    bool random_decode = false;
    bool prompt_lengths_set = false, gen_tokens_set = false, depths_set = false;
    double bandwidth_gbs = 0, gemm_tflops = 0;
};

std::vector<int> parse_list(const std::string& s, const char* flag) {
    std::vector<int> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        try {
            size_t used = 0;
            const int v = std::stoi(item, &used);
            if (used != item.size() || v < 0) throw std::invalid_argument(item);
            out.push_back(v);
        } catch (const std::exception&) {
            tt::fail("{}: '{}' is not a list of non-negative integers", flag, s);
        }
    }
    return out;
}

struct Stat {
    double mean = 0, sd = 0;
};
Stat stats(const std::vector<double>& v) {
    Stat s;
    for (double x : v) s.mean += x;
    s.mean /= double(v.size());
    for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
    s.sd = v.size() > 1 ? std::sqrt(s.sd / double(v.size() - 1)) : 0.0;
    return s;
}

// The defaults (pp512, pp2048, tg128) suit a model with a long context; on a small one
// (TinyStories-656K: 512 positions) each default that does not fit is brought down to what does
// (a prompt length to the largest power of two that fits), saying so. A value given on the command
// line is never changed: if it does not fit, that is an error naming the flag.
void fit_to_context(Opts& o, std::vector<int>& pps, const std::vector<int>& depths, int limit, const std::string& why) {
    using namespace tt;
    const int max_depth = depths.empty() ? 0 : *std::max_element(depths.begin(), depths.end());
    // The smallest bench: a 1-token prompt and one decode step after it.
    if (limit < 2) fail("{} {}: bench needs a context of at least 2 positions", why, limit);
    if (o.depths_set && max_depth + 2 > limit)
        fail("--depths {}: a decode test at depth {} needs at least {} positions, but the context is {} ({})", o.depths, max_depth,
             max_depth + 2, limit, why);
    if (max_depth + o.gen_tokens + 1 > limit) {
        if (o.gen_tokens_set)
            fail("--gen-tokens {}{}: needs {} positions, but the context is {} ({})", o.gen_tokens,
                 max_depth ? fmt::format(" at depth {}", max_depth) : "", max_depth + o.gen_tokens + 1, limit, why);
        const int fitted = limit - 1 - max_depth;
        log::info("bench: the context is {} positions ({}), so the default --gen-tokens {} becomes {}", limit, why, o.gen_tokens, fitted);
        o.gen_tokens = fitted;
    }
    std::vector<int> fitted;
    bool changed = false;
    for (int p : pps) {
        if (p + 1 > limit) {
            if (o.prompt_lengths_set)
                fail("--prompt-lengths {}: pp{} needs {} positions, but the context is {} ({})", o.prompt_lengths, p, p + 1, limit, why);
            int q = 1;  // the largest power of two with q + 1 <= limit (limit >= 2)
            while (2 * q + 1 <= limit) q *= 2;
            p = q;
            changed = true;
        }
        if (std::find(fitted.begin(), fitted.end(), p) == fitted.end()) fitted.push_back(p);
    }
    if (changed)
        log::info("bench: the context is {} positions ({}), so the default --prompt-lengths {} become {}", limit, why,
                  o.prompt_lengths, fmt::format("{}", fmt::join(fitted, ",")));
    pps = std::move(fitted);
}

uint64_t free_vram(const std::string& device) {
#ifdef THINTENSOR_HAVE_CUDA
    if (device.rfind("cuda", 0) == 0) {
        const int idx = device.size() > 5 ? std::stoi(device.substr(5)) : 0;
        const auto d = tt::cuda::list_devices();
        if (idx < int(d.size())) return d[size_t(idx)].free_memory;
    }
#endif
    (void)device;
    return 0;
}

int run(Opts o) {
    using namespace tt;
    std::vector<int> pps = parse_list(o.prompt_lengths, "--prompt-lengths");
    const std::vector<int> depths = parse_list(o.depths, "--depths");
    if (o.reps < 1) fail("--reps must be at least 1");
    if (o.gen_tokens < 1) fail("--gen-tokens must be at least 1");
    const std::string asked = cli::device_of(o.model);
    const std::string device = asked.empty() ? default_device() : asked;
    o.model.device = device;
    o.model.gpus.clear();  // now in --device
    // Ceilings, measured on this device unless given, before the model is loaded: their buffers
    // beside the model (the device copy's two of 1 GiB, the PCIe copy's 512 MiB) would lift the
    // process's peak (nvidia-smi) above a --vram-budget the run itself keeps. The PCIe rate is
    // reported only when the plan streams, which is known after the load.
    double bw = o.bandwidth_gbs, peak = o.gemm_tflops, h2d_before = 0;
#ifdef THINTENSOR_HAVE_CUDA
    if (device.rfind("cuda", 0) == 0) {
        const int idx = device.size() > 5 ? std::stoi(device.substr(5)) : 0;
        cuda::process_context_bytes(idx);  // read before the measurements load cuBLAS: the plan `plan` prints
        if (bw <= 0) bw = cuda::measure_d2d_gbs(idx);
        if (peak <= 0) peak = cuda::measure_gemm_tflops(idx);
        h2d_before = cuda::measure_h2d_gbs(idx, true);
    }
#endif
    if ((device == "cpu" || device == "host") && bw <= 0) {
        // Host memory: a large memcpy, bytes read plus written.
        const size_t n = size_t(256) << 20;
        std::vector<uint8_t> a(n, 1), b(n, 2);
        double best = 1e30;
        for (int r = 0; r < 3; ++r) {
            const auto t0 = Clock::now();
            std::memcpy(b.data(), a.data(), n);
            best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
        }
        bw = 2.0 * double(n) / best / 1e9;
    }
    const uint64_t free_before = free_vram(device);

    const auto t_load = Clock::now();
    cli::LoadedModel m = cli::load_model(o.model, 0);
    if (o.model.context > m.spec.max_context)
        fail("--context {} exceeds the model's maximum of {}", o.model.context, m.spec.max_context);
    if (o.model.context > 0) fit_to_context(o, pps, depths, o.model.context, "--context");
    else fit_to_context(o, pps, depths, m.spec.max_context, "the model's maximum");
    int need = o.gen_tokens + 1;
    for (int p : pps) need = std::max(need, p + 1);
    for (int d : depths) need = std::max(need, d + o.gen_tokens + 1);
    TT_ASSERT(need <= (o.model.context > 0 ? o.model.context : m.spec.max_context));
    m.create_backend(o.model, need);
    const double load_s = std::chrono::duration<double>(Clock::now() - t_load).count();
    uint64_t free_min = free_vram(device);

    const ModelSpec& s = m.spec;
    uint64_t weight_bytes = 0, embd_bytes = 0, expert_bytes = 0, ple_bytes = 0;
    // A quantized profile reads its matrices quantized (model/weight_quant.h): counted as such,
    // also where the archive stores them in float and the backend quantized them at load.
    const QuantScheme body = profile_weight_scheme(parse_profile(o.model.profile));
    const auto roles = tensor_roles(s);
    for (const auto& t : m.archive->tensors()) {
        const auto role = roles.find(t.view.name);
        const uint64_t nb = role == roles.end() ? t.view.nbytes : run_nbytes(t.view, role->second, body, k_int4_default_group);
        weight_bytes += nb;
        if (t.view.name == "token_embd.weight") embd_bytes = nb;
        if (t.view.name == tensor_name(Role::per_layer_token_embd)) ple_bytes = nb;
        if (t.block.find(".expert.") != std::string::npos) expert_bytes += nb;
    }
    // Tied and quantized: the head is an INT8 copy of the float embedding, which then reads one row.
    const bool head_copy = s.tied_embeddings && (body != QuantScheme::none || archive_quant_scheme(*m.archive) != QuantScheme::none);
    if (head_copy) weight_bytes += run_nbytes(m.archive->tensor("token_embd.weight").view, Role::output, QuantScheme::int8, 0);
    const size_t elem = dtype_size(m.archive->tensors().front().view.dtype);
    // The cache the backend stores (--kv-cache, or the profile's: kv_cache_choice.h), not the flag.
    const bool kv_int8 = m.backend->kv_cache() == KvCacheType::int8;
    // Decode reads every weight once, except the embedding table (one row) unless it doubles as
    // the output head; plus the visible K and V rows of every layer.
    const uint64_t row_bytes = embd_bytes / uint64_t(s.vocab_size);
    // A mixture of experts reads top_k of each MoE layer's n_experts: the active bytes.
    const uint64_t inactive_expert_bytes =
        s.has_moe() ? expert_bytes - expert_bytes / uint64_t(s.moe.n_experts) * uint64_t(s.moe.top_k) : 0;
    // Gemma 4's per-layer table is read one row per token, like the embedding.
    const uint64_t ple_unread = s.per_layer_dim > 0 ? ple_bytes - ple_bytes / uint64_t(s.per_layer_vocab) : 0;
    const uint64_t decode_weight_bytes =
        weight_bytes - (s.tied_embeddings && !head_copy ? 0 : embd_bytes - row_bytes) - inactive_expert_bytes - ple_unread;
    auto kv_bytes_at = [&](int ctx) {
        uint64_t b = 0;
        for (int il = 0; il < s.n_layers; ++il) {
            // A DeltaNet layer reads and writes its recurrent state instead.
            if (s.is_delta_net(il)) {
                b += 2 * s.delta_net.state_bytes();
                continue;
            }
            // Each attention layer reads the visible rows at its own kv_dim (a KV-shared layer
            // reads its source layer's rows once more).
            const int vis = s.sliding(il) ? std::min(ctx, s.sliding_window) : ctx;
            // The 8-bit cache: a byte a value and an f32 scale per head row.
            const uint64_t row = kv_int8 ? uint64_t(s.layer_kv_dim(il)) + 4 * uint64_t(s.layer_n_kv_heads(il))
                                         : uint64_t(s.layer_kv_dim(il)) * elem;
            b += 2 * uint64_t(vis) * row;
        }
        return b;
    };
    const uint64_t n_params = s.n_params();
    // Streaming: the PCIe ceiling, measured before the load with the others.
    const StreamStats st0 = m.backend->stream_stats();
    const bool ring = st0.streaming && st0.expert_slots == 0;  // layers streamed through the ring (not the expert cache)
    const double h2d = st0.streaming ? h2d_before : 0;

    std::mt19937 rng(42);
    std::uniform_int_distribution<int32_t> tok(0, s.vocab_size - 1);
    auto random_tokens = [&](int n) {
        std::vector<int32_t> v(static_cast<size_t>(n));
        for (auto& t : v) t = tok(rng);
        return v;
    };

    nlohmann::json results = nlohmann::json::array();
    std::vector<std::string> stream_lines;
    struct Row { std::string test; Stat tps; double ms; std::string work, achieved, roof; };
    std::vector<Row> rows;
    SamplerConfig greedy_cfg;
    greedy_cfg.temperature = 0;

    for (int n : pps) {
        if (n == 0) continue;
        std::vector<double> tps, ttft;
        for (int r = 0; r < o.reps + 1; ++r) {  // the first run warms up (workspace allocation, clocks)
            m.backend->rewind(0);
            const auto prompt = random_tokens(n);
            Sampler sampler(greedy_cfg);
            const auto t0 = Clock::now();
            (void)m.backend->forward_sample(prompt, sampler, prompt);
            const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
            if (r == 0) continue;
            tps.push_back(n / sec);
            ttft.push_back(sec);
        }
        free_min = std::min(free_min, free_vram(device));
        const Stat st = stats(tps);
        const double flops = prefill_flops(s, n), tflops = flops * st.mean / n / 1e12;
        rows.push_back({fmt::format("pp{}", n), st, 1e3 / st.mean, fmt::format("{:.2f} TFLOP", flops / 1e12),
                        fmt::format("{:.1f} TFLOP/s", tflops), peak > 0 ? fmt::format("{:.1f}% of {:.0f} TFLOP/s", 100 * tflops / peak, peak) : "-"});
        results.push_back({{"test", rows.back().test}, {"tokens_per_s", st.mean}, {"sd", st.sd}, {"flops", flops},
                           {"tflops", tflops}, {"peak_tflops", peak}, {"ttft_ms", 1e3 * stats(ttft).mean}});
        if (ring) results.back()["streamed_bytes_per_chunk"] = st0.bytes_per_pass;
    }
    for (int depth : depths) {
        std::vector<double> tps;
        double bytes_per_token = 0;
        uint64_t hits = 0, misses = 0;  // expert cache lookups of the timed tokens
        for (int r = 0; r < o.reps + 1; ++r) {
            m.backend->rewind(0);
            Sampler sampler(greedy_cfg);
            std::vector<int32_t> ctx = depth > 0 ? random_tokens(depth) : std::vector<int32_t>{std::max(s.bos_token_id, 0)};
            int32_t next = m.backend->forward_sample(ctx, sampler, ctx);
            const StreamStats before = st0.expert_slots > 0 ? m.backend->stream_stats() : StreamStats{};
            const auto t0 = Clock::now();
            for (int i = 0; i < o.gen_tokens; ++i) {
                next = m.backend->forward_sample(std::span<const int32_t>(&next, 1), sampler, ctx);
                // note: greedy decoding of random weights soon repeats one token, and so one set of
                // experts; random inputs route like varied text instead (the step's work is the same).
                if (o.random_decode) next = tok(rng);
            }
            const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
            if (r == 0) {
                // Decode may still be timing CPU/PCIe splits (split_tuner.h): the warm-up runs on,
                // untimed, until it settles, so the timed runs measure the split it keeps.
                int extra = 0;
                while (m.backend->stream_stats().split_tuning && m.backend->n_past() + 1 < m.backend->context_size() && extra < 1024) {
                    next = m.backend->forward_sample(std::span<const int32_t>(&next, 1), sampler, ctx);
                    if (o.random_decode) next = tok(rng);
                    ++extra;
                }
                if (extra) log::info("warm-up: {} more tokens while decode timed its CPU/PCIe splits", extra);
                continue;
            }
            tps.push_back(o.gen_tokens / sec);
            if (st0.expert_slots > 0) {
                const StreamStats after = m.backend->stream_stats();
                hits += after.expert_hits - before.expert_hits;
                misses += after.expert_misses - before.expert_misses;
            }
        }
        const int first_ctx = depth > 0 ? depth : 1;
        for (int i = 0; i < o.gen_tokens; ++i) bytes_per_token += double(decode_weight_bytes + kv_bytes_at(first_ctx + i + 1));
        bytes_per_token /= o.gen_tokens;
        free_min = std::min(free_min, free_vram(device));
        const Stat st = stats(tps);
        const double gbs = bytes_per_token * st.mean / 1e9;
        const std::string name = depth > 0 ? fmt::format("tg{}@d{}", o.gen_tokens, depth) : fmt::format("tg{}", o.gen_tokens);
        rows.push_back({name, st, 1e3 / st.mean, fmt::format("{} /token", format_bytes(bytes_per_token)),
                        fmt::format("{:.0f} GB/s", gbs),
                        bw > 0 ? fmt::format("{:.1f}% of {:.0f} GB/s ({:.0f} tok/s)", 100 * gbs / bw, bw, bw * 1e9 / bytes_per_token) : "-"});
        results.push_back({{"test", name}, {"decode_input", o.random_decode ? "random" : "greedy"}, {"tokens_per_s", st.mean}, {"sd", st.sd}, {"bytes_per_token", bytes_per_token},
                           {"gbs", gbs}, {"roofline_gbs", bw}, {"roofline_tokens_per_s", bw > 0 ? bw * 1e9 / bytes_per_token : 0.0}});
        if (st0.expert_slots > 0) {
            // The expert cache: its hit rate over the timed tokens, the misses' bytes over PCIe,
            // and how close the step came to the PCIe bound at that hit rate.
            const double lookups = double(hits + misses), hit_rate = lookups > 0 ? double(hits) / lookups : 0.0;
            const double tokens = double(o.gen_tokens) * double(o.reps);
            const double pcie_bpt = double(misses) * double(st0.expert_block_bytes) / tokens;
            const double pcie_gbs = pcie_bpt * st.mean / 1e9, bound = pcie_bpt > 0 && h2d > 0 ? h2d * 1e9 / pcie_bpt : 0.0;
            results.back()["expert_cache"] = {{"slots", st0.expert_slots}, {"experts", st0.n_experts}, {"hits", hits},
                                              {"misses", misses}, {"hit_rate", hit_rate}, {"pcie_bytes_per_token", pcie_bpt},
                                              {"pcie_gbs", pcie_gbs}, {"h2d_pinned_gbs", h2d},
                                              {"pcie_bound_tokens_per_s", bound}, {"pcie_bound_fraction", bound > 0 ? st.mean / bound : 0.0},
                                              {"predicted_tokens_per_s", st0.predicted_tokens_per_s}};
            stream_lines.push_back(fmt::format(
                "{}: expert cache {} of {} experts, hit rate {:.1f}%, {}/token over PCIe ({:.1f} GB/s of {:.1f} measured now) = "
                "{:.1f}% of the PCIe bound at that hit rate ({:.1f} tok/s); planner predicted {:.2f} tok/s",
                name, st0.expert_slots, st0.n_experts, 100 * hit_rate, format_bytes(pcie_bpt), pcie_gbs, h2d,
                bound > 0 ? 100 * st.mean / bound : 0.0, bound, st0.predicted_tokens_per_s));
        }
        if (ring) {
            // The split decode ran the timed tokens with (the tuner may have moved it from st0's).
            const StreamStats now = m.backend->stream_stats();
            // overlap: the share of the shorter activity (copies or kernels) that ran under the
            // longer one; 1 = wall time is the longer of the two, 0 = they ran one after the other.
            const double wall = 1.0 / st.mean, copy = now.copy_s_per_pass;
            const double kernels = m.backend->measure_decode_without_copies(8);
            const double overlap = kernels > 0 && copy > 0 ? std::clamp((copy + kernels - wall) / std::min(copy, kernels), 0.0, 1.0) : 0.0;
            const double bpt = double(now.bytes_per_pass), pcie = bpt * st.mean / 1e9, bound = h2d > 0 && bpt > 0 ? h2d * 1e9 / bpt : 0;
            results.back().update({{"streamed_bytes_per_token", bpt}, {"pcie_gbs", pcie}, {"h2d_pinned_gbs", h2d},
                                   {"pcie_bound_tokens_per_s", bound}, {"pcie_bound_fraction", bound > 0 ? st.mean / bound : 0.0},
                                   {"copy_ms_per_token", copy * 1e3}, {"kernels_ms_per_token", kernels * 1e3},
                                   {"wall_ms_per_token", wall * 1e3}, {"overlap", overlap},
                                   {"predicted_tokens_per_s", st0.predicted_tokens_per_s}});
            stream_lines.push_back(fmt::format(
                "{}: streamed {}/token, PCIe {:.1f} GB/s achieved of {:.1f} (h2d pinned, measured now) = {:.1f}% of the PCIe bound "
                "({:.2f} tok/s); per token: copies {:.1f} ms, kernels {:.1f} ms, wall {:.1f} ms, overlap {:.0f}%; planner predicted {:.2f} tok/s",
                name, format_bytes(bpt), pcie, h2d, bound > 0 ? 100 * st.mean / bound : 0.0, bound, copy * 1e3, kernels * 1e3, wall * 1e3,
                100 * overlap, st0.predicted_tokens_per_s));
            if (now.cpu_layers > 0 || now.planned_cpu_layers > 0 || !now.split.empty()) {
                // The CPU as a third place: its layers' bytes, and the bound with both host paths busy.
                const double cpu_bpt = double(now.cpu_bytes_per_token), both = now.combined_bound_tokens_per_s;
                results.back()["cpu"] = {{"layers", now.cpu_layers}, {"planned_layers", now.planned_cpu_layers},
                                         {"threads", now.cpu_threads}, {"bytes_per_token", cpu_bpt},
                                         {"gbs", cpu_bpt * st.mean / 1e9}, {"combined_bound_tokens_per_s", both},
                                         {"combined_bound_fraction", both > 0 ? st.mean / both : 0.0}};
                if (!now.split.empty()) results.back()["cpu"]["split"] = now.split;
                stream_lines.push_back(fmt::format(
                    "{}: {} layers on the CPU ({} threads) read {}/token = {:.1f} GB/s beside PCIe; {:.1f}% of the bound with both host "
                    "paths busy ({:.2f} tok/s, from the plan's bandwidths)",
                    name, now.cpu_layers, now.cpu_threads, format_bytes(cpu_bpt), cpu_bpt * st.mean / 1e9,
                    both > 0 ? 100 * st.mean / both : 0.0, both));
                if (!now.split.empty()) stream_lines.push_back(fmt::format("{}: decode split from token times: {}", name, now.split));
            }
            if (now.split_tuning)
                stream_lines.push_back(fmt::format("{}: decode was still timing CPU/PCIe splits during the timed runs (the warm-up had "
                                                   "no context left to settle them: a larger --context gives it room)", name));
        }
    }

    const double peak_vram = free_before > free_min ? double(free_before - free_min) : 0.0;
    const std::string name = m.archive->metadata()["provenance"].value("source", m.archive_path);
    if (o.json) {
        nlohmann::json j = {{"model", name},
                            {"archive", m.archive_path},
                            {"backend", m.backend->describe()},
                            {"profile", o.model.profile},
                            {"kv_cache", kv_cache_type_name(m.backend->kv_cache())},
                            {"params", n_params},
                            {"weight_bytes", weight_bytes},
                            {"dtype", dtype_name(m.archive->tensors().front().view.dtype)},
                            {"load_s", load_s},
                            {"peak_vram_bytes", peak_vram},
                            {"device_copy_gbs", bw},
                            {"gemm_tflops", peak},
                            {"plan", st0.plan},
                            {"streaming", st0.streaming},
                            {"results", results}};
        if (ring)
            j["stream"] = {{"bytes_per_token", st0.bytes_per_pass}, {"copy_ms_per_token", st0.copy_s_per_pass * 1e3},
                           {"h2d_pinned_gbs", h2d}, {"predicted_tokens_per_s", st0.predicted_tokens_per_s},
                           {"bytes_streamed", m.backend->stream_stats().bytes_streamed}};
        fmt::print("{}\n", j.dump(2));
        return 0;
    }
    const std::string params_str = n_params >= 1000000000ull ? fmt::format("{:.2f} B", double(n_params) / 1e9)
                                                             : fmt::format("{:.2f} M", double(n_params) / 1e6);
    fmt::print("model   {} ({}, {} params, {})\nbackend {}   profile {}   load {:.2f} s   peak VRAM {}\n", name,
               format_bytes(double(weight_bytes)), params_str, dtype_name(m.archive->tensors().front().view.dtype),
               m.backend->describe(), o.model.profile, load_s, peak_vram > 0 ? format_bytes(peak_vram) : "-");
    fmt::print("| {:<12} | {:>16} | {:>9} | {:>16} | {:>14} | {:<34} |\n", "test", "tok/s", "ms/tok", "work", "achieved", "roofline");
    fmt::print("|{:-<14}|{:->18}|{:->11}|{:->18}|{:->16}|{:-<36}|\n", "", "", "", "", "", "");
    for (const auto& r : rows)
        fmt::print("| {:<12} | {:>9.1f} ± {:<5.1f}| {:>9.3f} | {:>16} | {:>14} | {:<34} |\n", r.test, r.tps.mean, r.tps.sd, r.ms,
                   r.work, r.achieved, r.roof);
    if (!st0.plan.empty()) fmt::print("{}\n", st0.plan);
    for (const auto& l : stream_lines) fmt::print("{}\n", l);
    return 0;
}

}  // namespace

static tt::cli::Registration reg("bench", "Measure prefill and decode speed against the hardware's roofline", 70,
                                 [](CLI::App& sub) -> tt::cli::RunFn {
                                     auto o = std::make_shared<Opts>();
                                     tt::cli::add_model_args(sub, o->model);
                                     sub.add_option("--prompt-lengths", o->prompt_lengths, "Prefill tests, comma-separated")->capture_default_str();
                                     sub.add_option("--gen-tokens", o->gen_tokens, "Tokens per decode test")->capture_default_str();
                                     sub.add_option("--depths", o->depths, "Context depths for the decode tests")->capture_default_str();
                                     sub.add_option("--reps", o->reps, "Repetitions per test (after one warm-up)")->capture_default_str();
                                     sub.add_option("--bandwidth", o->bandwidth_gbs, "Roofline memory bandwidth in GB/s (default: measured)");
                                     sub.add_option("--gemm-tflops", o->gemm_tflops, "Roofline GEMM rate (default: measured)");
                                     sub.add_flag("--json", o->json, "Print JSON");
                                     sub.add_flag("--random-decode", o->random_decode,
                                                  "Feed decode steps random token ids instead of the greedy continuation "
                                                  "(mixture of experts: routing spread as over varied text, not one repeated token)");
                                     return [o, &sub]() -> int {
                                         o->prompt_lengths_set = sub.count("--prompt-lengths") > 0;
                                         o->gen_tokens_set = sub.count("--gen-tokens") > 0;
                                         o->depths_set = sub.count("--depths") > 0;
                                         return run(*o);
                                     };
                                 });
