// thintensor inspect FILE.thin [--json]: the spec, tokenizer summary, tensors by dtype, layer blocks.
#include "cli/command.h"
#include "core/progress.h"
#include "format/archive.h"
#include "model/archive_spec.h"
#include "model/model_spec.h"
#include "model/weight_quant.h"
#include "runtime/profile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>
#include <memory>

namespace {

struct Opts {
    std::string path;
    bool json = false;
    bool tensors = false;
};

// The experts of a mixture-of-experts archive: counts, sizes, and the bytes a token reads.
nlohmann::json experts_json(const tt::Archive& a, const tt::ModelSpec& s) {
    uint64_t block_bytes = 0, total = 0;
    size_t n_blocks = 0;
    for (const auto& b : a.blocks())
        if (b.name.find(".expert.") != std::string::npos) {
            block_bytes = std::max(block_bytes, b.nbytes);
            total += b.nbytes;
            ++n_blocks;
        }
    return {{"n_experts", s.moe.n_experts},
            {"top_k", s.moe.top_k},
            {"norm_topk", s.moe.norm_topk},
            {"expert_ffn_dim", s.moe.expert_ffn_dim},
            {"shared_ffn_dim", s.moe.shared_ffn_dim},
            {"moe_layers", s.n_moe_layers()},
            {"expert_blocks", n_blocks},
            {"expert_block_bytes", block_bytes},
            {"expert_bytes", total},
            {"params", s.n_params()},
            {"active_params", s.n_active_params()}};
}

int run(const Opts& o) {
    const tt::Archive a = tt::Archive::open(o.path);
    const tt::ModelSpec s = tt::spec_from_archive(a);
    const auto& meta = a.metadata();
    // Quantized matrices count under their scheme ("int8", "int4"), their scales tensors with them.
    std::set<std::string> scales;
    std::map<std::string, std::string> scheme_of;  // scales tensor -> its matrix's scheme
    std::map<int, size_t> int4_groups;             // group size -> INT4 matrices
    for (const auto& jt : meta["tensors"])
        if (jt.contains("quant")) {
            scales.insert(jt["quant"]["scales"].get<std::string>());
            scheme_of[jt["quant"]["scales"].get<std::string>()] = jt["quant"]["scheme"].get<std::string>();
        }
    std::map<std::string, std::pair<size_t, uint64_t>> by_dtype;
    uint64_t total = 0, params = 0;
    for (const auto& t : a.tensors()) {
        const bool is_scales = scales.count(t.view.name) > 0;
        const std::string key = t.view.quant != tt::QuantScheme::none ? std::string(tt::quant_scheme_name(t.view.quant))
                                : is_scales                           ? scheme_of[t.view.name]
                                                                      : std::string(tt::dtype_name(t.view.dtype));
        auto& e = by_dtype[key];
        e.first += is_scales ? 0 : 1;
        e.second += t.view.nbytes;
        total += t.view.nbytes;
        if (!is_scales) params += uint64_t(t.view.numel());
        if (t.view.quant == tt::QuantScheme::int4) ++int4_groups[t.view.group_size];
    }
    const tt::QuantScheme stored = tt::archive_quant_scheme(a);
    std::string quant_line = "floating point as stored (--profile max-performance / max-max-perf quantize at load)";
    if (stored != tt::QuantScheme::none) {
        quant_line = fmt::format("{} body projections", tt::quant_scheme_label(stored));
        for (const auto& [g, n] : int4_groups) quant_line += fmt::format(", {} in groups of {}", n, g);
        quant_line += s.tied_embeddings ? "; head INT8 at load (tied to the float embedding)" : "; head INT8";
        quant_line += fmt::format("; runs under --profile {}", stored == tt::QuantScheme::int8 ? "max-performance" : "max-max-perf");
    }
    const std::string tok_kind(tt::tokenizer_kind_name(tt::tokenizer_kind_of(a)));
    if (o.json) {
        nlohmann::json j;
        j["path"] = o.path;
        j["file_size"] = a.file_size();
        j["format_version"] = a.header().version;
        j["spec"] = meta["spec"];
        j["params"] = params;
        j["tensor_bytes"] = total;
        for (const auto& [dt, e] : by_dtype) j["dtypes"][dt] = {{"tensors", e.first}, {"bytes", e.second}};
        j["blocks"] = meta["blocks"];
        if (s.has_moe()) j["experts"] = experts_json(a, s);
        j["tokenizer"] = {{"kind", tok_kind}};
        for (const auto& f : a.files()) j["files"].push_back({{"name", f.name}, {"bytes", f.nbytes}});
        j["generation"] = meta.value("generation", nlohmann::json::object());
        j["provenance"] = meta.value("provenance", nlohmann::json::object());
        j["profile"] = tt::profile_name(tt::Profile::balanced);
        j["profiles"] = tt::k_profile_names;
        j["quant"] = {{"scheme", tt::quant_scheme_name(stored)}, {"summary", quant_line}};
        for (const auto& [g, n] : int4_groups) j["quant"]["int4_group_sizes"][std::to_string(g)] = n;
        if (o.tensors) j["tensors"] = meta["tensors"];
        fmt::print("{}\n", j.dump(2));
        return 0;
    }
    fmt::print("archive      {} ({}, format v{})\n", o.path, tt::format_bytes(double(a.file_size())), a.header().version);
    fmt::print("architecture {} ({})\n", tt::arch_name(s.arch), s.hf_architecture);
    fmt::print("parameters   {:.2f} M ({} of tensor data)\n", double(params) / 1e6, tt::format_bytes(double(total)));
    fmt::print("dims         layers {}  hidden {}  heads {}/{} (q/kv)  head_dim {}  ffn {}  vocab {}  context {}\n",
               s.n_layers, s.hidden_dim, s.n_heads, s.n_kv_heads, s.head_dim, s.ffn_dim, s.vocab_size, s.max_context);
    fmt::print("norm         rms eps {:g}{}{}{}{}\n", s.norm_eps, s.norm_weight_offset != 0 ? "  (1+w) weights" : "",
               s.qk_norm ? "  q/k norm" : "", s.v_norm ? "  v norm (no weight)" : "", s.sandwich_norm ? "  sandwich norms" : "");
    fmt::print("attention    scale {:g}{}{}{}{}\n", s.attn_scale, s.qkv_bias ? "  qkv bias" : "", s.o_bias ? "  o bias" : "",
               s.sliding_window ? fmt::format("  sliding window {}", s.sliding_window) : "",
               s.attn_output_gate ? "  sigmoid output gate" : "");
    if (s.has_delta_net()) {
        const tt::DeltaNetSpec& d = s.delta_net;
        fmt::print("linear attn  gated DeltaNet: heads {}/{} (q,k/v)  head dims {}/{}  conv {}  state {} a layer\n", d.n_k_heads,
                   d.n_v_heads, d.k_head_dim, d.v_head_dim, d.conv_kernel, tt::format_bytes(double(d.state_bytes())));
    }
    auto rope_str = [](const tt::RopeSpec& r) {
        std::string out = fmt::format("theta {:g}  rotary_dim {}  scaling {}", r.theta, r.rotary_dim, tt::rope_scaling_name(r.scaling));
        if (r.scaling != tt::RopeScaling::none) out += fmt::format(" (factor {:g})", r.factor);
        if (r.scaling == tt::RopeScaling::proportional) out += fmt::format("  {} of {} pairs rotated", r.rotated_pairs, r.rotary_dim / 2);
        return out;
    };
    fmt::print("rope         {}\n", rope_str(s.rope));
    if (!(s.rope_local == s.rope)) fmt::print("rope (local) {}\n", rope_str(s.rope_local));
    std::string kinds;
    for (const auto& l : s.layers) {
        kinds += l.mixer == tt::MixerKind::delta_net ? 'L' : l.attn == tt::AttnKind::full ? 'F' : 'S';
        if (s.has_moe()) kinds += l.ffn == tt::FfnKind::moe ? "e " : "d ";
    }
    fmt::print("layers       {} (F full, S sliding attention{}{})\n", kinds, s.has_delta_net() ? ", L linear attention" : "",
               s.has_moe() ? "; e experts, d dense MLP" : "");
    // Gemma 4: the layers whose sizes differ from the model's, and the KV-shared ones.
    for (int il = 0; il < s.n_layers; ++il) {
        const tt::LayerSpec& l = s.layers[size_t(il)];
        if (!(l.head_dim || l.n_heads || l.n_kv_heads || l.ffn_dim || l.kv_from >= 0 || l.k_eq_v)) continue;
        std::string what = fmt::format("heads {}/{}  head_dim {}  ffn {}", s.layer_n_heads(il), s.layer_n_kv_heads(il),
                                       s.layer_head_dim(il), s.layer_ffn_dim(il));
        if (l.kv_from >= 0) what += fmt::format("  keys/values of layer {} (no KV cache)", l.kv_from);
        if (l.k_eq_v) what += "  values = keys";
        fmt::print("layer {:<6} {}\n", il, what);
    }
    fmt::print("mlp          gated {}{}\n", tt::activation_name(s.activation), s.mlp_bias ? " with biases" : "");
    if (s.has_moe()) {
        const nlohmann::json e = experts_json(a, s);
        fmt::print("experts      {} per layer in {} layers, top {} per token{}  expert ffn {}{}\n", s.moe.n_experts,
                   s.n_moe_layers(), s.moe.top_k, s.moe.norm_topk ? " (renormalised)" : "", s.moe.expert_ffn_dim,
                   s.moe.shared_ffn_dim ? fmt::format("  shared expert ffn {}{}", s.moe.shared_ffn_dim, s.moe.shared_gate ? " (sigmoid gate)" : "") : "");
        fmt::print("             {} per expert block; a token uses {:.2f} M of {:.2f} M parameters\n",
                   tt::format_bytes(double(e["expert_block_bytes"].get<uint64_t>())), double(s.n_active_params()) / 1e6,
                   double(s.n_params()) / 1e6);
    }
    fmt::print("embeddings   {}{}\n", s.tied_embeddings ? "tied to the output head" : "separate output head",
               s.embed_scale != 1.0f ? fmt::format("  scaled by {:g}", s.embed_scale) : "");
    if (s.per_layer_dim > 0)
        fmt::print("per-layer    inputs of {} a layer (table vocab {}){}\n", s.per_layer_dim, s.per_layer_vocab,
                   s.layer_scalar ? "  layer scalars" : "");
    else if (s.layer_scalar)
        fmt::print("per-layer    layer scalars\n");
    if (s.final_softcap > 0) fmt::print("logits       soft-capped at {:g}\n", s.final_softcap);
    // note: the archive fixes no profile; run/bench/validate pick one with --profile.
    fmt::print("profile      {} (default; --profile safe for f32 activations everywhere)\n", tt::profile_name(tt::Profile::balanced));
    fmt::print("weights      {}\n", quant_line);
    fmt::print("tokens       bos {}  eos [{}]\n", s.bos_token_id, fmt::join(s.eos_token_ids, ", "));
    std::string files;
    for (const auto& f : a.files()) files += fmt::format(" {} ({})", f.name, tt::format_bytes(double(f.nbytes)));
    fmt::print("tokenizer    {}{}\n", tok_kind, files);
    fmt::print("tensors      {} in total\n", a.tensors().size());
    for (const auto& [dt, e] : by_dtype) fmt::print("  {:<5} {:5} tensors  {}\n", dt, e.first, tt::format_bytes(double(e.second)));
    fmt::print("blocks (contiguous, 4 KiB aligned):\n");
    // note: a layer's expert blocks are one line (Qwen3-30B-A3B has 128 of them per layer).
    const auto& blocks = a.blocks();
    for (size_t i = 0; i < blocks.size(); ++i) {
        const auto& b = blocks[i];
        const auto pos = b.name.find(".expert.");
        if (pos == std::string::npos) {
            fmt::print("  {:<10} offset {:>12}  {}\n", b.name, b.offset, tt::format_bytes(double(b.nbytes)));
            continue;
        }
        const std::string layer = b.name.substr(0, pos);
        size_t j = i;
        uint64_t bytes = 0;
        while (j < blocks.size() && blocks[j].name.rfind(layer + ".expert.", 0) == 0) bytes += blocks[j++].nbytes;
        fmt::print("  {:<10} offset {:>12}  {} ({} blocks {} .. {}, {} each)\n", layer + ".experts", b.offset,
                   tt::format_bytes(double(bytes)), j - i, b.name, blocks[j - 1].name, tt::format_bytes(double(b.nbytes)));
        i = j - 1;
    }
    if (meta.contains("provenance")) {
        const auto& p = meta["provenance"];
        fmt::print("source       {} (converted {} by {}, dtype {})\n", p.value("source", "?"), p.value("created", "?"),
                   p.value("converter", "?"), p.value("dtype", "?"));
    }
    if (o.tensors) {
        fmt::print("tensors:\n");
        for (const auto& t : a.tensors())
            fmt::print("  {:<32} {:<5} {:<14} offset {:>12}  xxh3 {:016x}\n", t.view.name,
                       t.view.quant != tt::QuantScheme::none ? tt::quant_scheme_name(t.view.quant) : tt::dtype_name(t.view.dtype),
                       tt::shape_str(t.view.shape), t.offset, t.xxh3);
    }
    return 0;
}

}  // namespace

static tt::cli::Registration reg("inspect", "Show what a .thin archive holds", 30, [](CLI::App& sub) -> tt::cli::RunFn {
    auto o = std::make_shared<Opts>();
    sub.add_option("FILE", o->path, ".thin archive")->required();
    sub.add_flag("--json", o->json, "Print JSON");
    sub.add_flag("--tensors", o->tensors, "List every tensor");
    return [o]() -> int { return run(*o); };
});
