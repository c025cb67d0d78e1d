#include "convert/convert.h"

#include "model/weight_quant.h"

#include "convert/finite_check.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/log.h"
#include "core/output_file.h"
#include "core/progress.h"
#include "format/archive.h"
#include "format/safetensors.h"
#include "model/hf_config.h"
#include "model/tensor_names.h"
#include "tokenizer/tokenizer.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

namespace fs = std::filesystem;

namespace tt {

namespace {

// The checkpoint's safetensors files and, for each tensor name, the file holding it.
struct Checkpoint {
    std::vector<std::unique_ptr<SafetensorsFile>> files;
    std::map<std::string, const TensorView*> tensors;
    std::map<std::string, std::string> where;  // tensor name -> file path, for messages
};

Checkpoint open_checkpoint(const fs::path& dir) {
    Checkpoint ck;
    const fs::path index = dir / "model.safetensors.index.json";
    std::vector<std::string> shards;
    if (fs::exists(index)) {
        const nlohmann::json j = read_json_file(index.string());
        if (!j.contains("weight_map") || !j["weight_map"].is_object())
            fail("{}: no 'weight_map' object", index.string());
        std::set<std::string> names;
        for (const auto& [tensor, shard] : j["weight_map"].items()) {
            if (!shard.is_string()) fail("{}: weight_map entry for '{}' is not a file name", index.string(), tensor);
            const std::string s = shard.get<std::string>();
            if (s.find('/') != std::string::npos || s == "..")
                fail("{}: shard name '{}' must be a file in the model directory", index.string(), s);
            names.insert(s);
        }
        for (const auto& s : names) {
            if (!fs::exists(dir / s)) fail("{}: names shard '{}', which does not exist in {}", index.string(), s, dir.string());
            shards.push_back((dir / s).string());
        }
    } else if (fs::exists(dir / "model.safetensors")) {
        shards.push_back((dir / "model.safetensors").string());
    } else {
        fail("{}: no model.safetensors or model.safetensors.index.json (only safetensors checkpoints are supported)",
             dir.string());
    }
    for (const auto& path : shards) {
        ck.files.push_back(std::make_unique<SafetensorsFile>(path));
        for (const auto& [name, view] : ck.files.back()->tensors()) {
            if (ck.tensors.count(name)) fail("{}: tensor '{}' also appears in {}", path, name, ck.where[name]);
            ck.tensors[name] = &view;
            ck.where[name] = path;
        }
    }
    return ck;
}

// Refuses, before any work, an output path that is not a file name, or one whose rename would
// replace an input of this conversion: any existing file of the source folder (its weights,
// config, tokenizer) or the --tokenizer file and the tokenizer_config.json beside it. Paths are
// compared after resolving symlinks and "./", "../" (weakly_canonical) and by identity
// (fs::equivalent), so a symlink or hard link to an input is caught too.
void check_output_path(const fs::path& dir, const std::string& out, const std::string& tokenizer_path) {
    if (out.empty()) fail("--out: the output path is empty; name the archive file, e.g. --out model.thin");
    std::error_code ec;
    const fs::path out_path(out);
    if (fs::is_directory(out_path, ec) || !out_path.has_filename() || out_path.filename() == "." || out_path.filename() == "..")
        fail("--out {}: is a directory; name the archive file, e.g. --out {}", out, (out_path / "model.thin").string());
    const fs::path parent = out_path.parent_path().empty() ? fs::path(".") : out_path.parent_path();
    if (!fs::is_directory(parent, ec)) fail("--out {}: directory {} does not exist", out, parent.string());
    if (!fs::exists(fs::symlink_status(out_path, ec))) return;  // a new file: it can replace nothing

    const fs::path canon = fs::weakly_canonical(out_path, ec);
    if (!ec && fs::equivalent(canon.parent_path(), dir, ec))
        fail("--out {}: is a file of the source checkpoint {}; writing there would replace it. Write the archive "
             "outside the model folder",
             out, dir.string());
    std::vector<fs::path> inputs;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file(ec)) inputs.push_back(e.path());
    if (!tokenizer_path.empty()) {
        inputs.emplace_back(tokenizer_path);
        inputs.push_back(fs::path(tokenizer_path).parent_path() / "tokenizer_config.json");
    }
    for (const auto& in : inputs) {
        std::error_code eq;
        if (fs::equivalent(out_path, in, eq) || fs::equivalent(canon, in, eq))
            fail("--out {}: is {}, an input of the conversion; writing there would replace it", out, in.string());
    }
}

// Picks, layer by layer, where the routed experts are read from: one tensor per expert and matrix
// (TensorPlan::hf_name), or the layer's fused 3-D tensors (TensorPlan::hf_fused). The expert
// tensors decide; Mixtral's router follows them (its fused layout renames it). A layer holding
// both layouts, or neither, is refused here, naming a tensor of each; a tensor missing from the
// layout chosen is left to the caller's check, which names it.
void choose_expert_layouts(const Checkpoint& ck, std::vector<TensorPlan>& plan, const std::string& src) {
    struct Layer {
        std::string per_expert_found, fused_found;  // a tensor of each layout the checkpoint has
        std::string per_expert_name, fused_name;    // a name of each layout, for messages
    };
    std::map<int, Layer> layers;
    for (const auto& p : plan) {
        if (p.hf_fused.name.empty() || p.expert < 0) continue;
        Layer& l = layers[p.layer];
        if (l.per_expert_name.empty()) {
            l.per_expert_name = p.hf_name;
            l.fused_name = p.hf_fused.name;
        }
        if (l.per_expert_found.empty() && ck.tensors.count(p.hf_name)) l.per_expert_found = p.hf_name;
        if (l.fused_found.empty() && ck.tensors.count(p.hf_fused.name)) l.fused_found = p.hf_fused.name;
    }
    const std::string where = ck.files.size() == 1 ? ck.files[0]->path() : src;
    std::vector<int> fused;
    for (const auto& [il, l] : layers) {
        if (!l.per_expert_found.empty() && !l.fused_found.empty())
            fail("{}: layer {} stores its experts both one tensor per expert ('{}') and fused ('{}'); a checkpoint "
                 "holds one of the two layouts",
                 where, il, l.per_expert_found, l.fused_found);
        if (l.per_expert_found.empty() && l.fused_found.empty())
            fail("{}: layer {} has no routed experts: neither '{}' (one tensor per expert) nor '{}' (fused)", where, il,
                 l.per_expert_name, l.fused_name);
        if (!l.fused_found.empty()) fused.push_back(il);
    }
    for (auto& p : plan) {
        if (p.hf_fused.name.empty() || !std::binary_search(fused.begin(), fused.end(), p.layer)) continue;
        p.hf_name = p.hf_fused.name;
        p.hf_shape = p.hf_fused.shape;
        p.hf_row_begin = p.hf_fused.row_begin;
    }
    if (!fused.empty())
        log::info("note: {} of {} expert layer(s) store their experts fused ({}); each expert is cut out of them",
                  fused.size(), layers.size(), layers.at(fused.front()).fused_found);
}

std::string file_magic(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    char buf[8] = {};
    f.read(buf, sizeof buf);
    return std::string(buf, size_t(f.gcount()));
}

// The tokenizer to embed, loaded with the loader `run` uses on the embedded files
// (Tokenizer::from_archive's from_hf / from_llama2c) and checked against the model's vocabulary,
// so that an archive that converts also tokenizes.
struct TokenizerFiles {
    std::map<std::string, std::string> embedded;  // archive file name -> bytes
    std::string kind = "none";
    int vocab = 0;
};

TokenizerFiles load_tokenizer(const fs::path& dir, const std::string& flag_path, const ModelSpec& spec) {
    TokenizerFiles t;
    fs::path json_path;
    if (!flag_path.empty()) {
        const fs::path tp(flag_path);
        std::error_code ec;
        if (!fs::exists(tp, ec)) fail("--tokenizer: {} does not exist", flag_path);
        if (fs::is_directory(tp, ec))
            fail("--tokenizer {}: is a directory; give its tokenizer.json or a llama2.c tokenizer .bin file", flag_path);
        const std::string magic = file_magic(tp);
        if (magic.starts_with("GGUF"))
            fail("--tokenizer {}: is a GGUF file; ThinTensor reads a tokenizer.json or a llama2.c tokenizer .bin", flag_path);
        if (magic.size() == 8 && std::memcmp(magic.data(), k_thin_magic, 8) == 0)
            fail("--tokenizer {}: is a .thin archive; give a tokenizer.json or a llama2.c tokenizer .bin", flag_path);
        const auto first = std::find_if(magic.begin(), magic.end(), [](char c) { return !std::isspace(uint8_t(c)); });
        if (tp.extension() == ".json" || (first != magic.end() && *first == '{')) {
            json_path = tp;
        } else {
            t.embedded["tok512.bin"] = read_file(tp.string());
            t.kind = "llama2c";
            // Tokenizer::from_archive reads the embedded tok512.bin this way.
            const auto tok = Tokenizer::from_llama2c(t.embedded["tok512.bin"], -1, flag_path);
            check_tokenizer_fits(*tok, spec.vocab_size, flag_path);
            t.vocab = tok->vocab_size();
        }
    } else if (fs::exists(dir / "tokenizer.json")) {
        json_path = dir / "tokenizer.json";
    } else {
        log::warn("{}: no tokenizer.json; the archive will have no tokenizer (attach one with --tokenizer FILE)", dir.string());
        return t;
    }
    if (!json_path.empty()) {
        const std::string path = json_path.string();
        std::string text = read_file(path);
        const nlohmann::json j = parse_json(text, path);
        if (!j.is_object() || !j.contains("model"))
            fail("{}: not a tokenizer.json (no \"model\" object){}", path,
                 j.is_object() && j.contains("architectures") ? "; it looks like a model's config.json" : "");
        const fs::path cfg = json_path.parent_path() / "tokenizer_config.json";
        std::string cfg_text;
        if (fs::exists(cfg)) {
            cfg_text = read_file(cfg.string());
            (void)parse_json(cfg_text, cfg.string());
        }
        // Tokenizer::from_archive reads the embedded pair this way.
        const auto tok = Tokenizer::from_hf(text, cfg_text, path);
        check_tokenizer_fits(*tok, spec.vocab_size, path);
        t.vocab = tok->vocab_size();
        t.embedded["tokenizer.json"] = std::move(text);
        if (!cfg_text.empty()) t.embedded["tokenizer_config.json"] = std::move(cfg_text);
        t.kind = "hf";
    }
    return t;
}

// A short name for a bad weight value in messages.
std::string value_str(float v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    return fmt::format("{:g}", v);
}

}  // namespace

std::optional<DType> parse_convert_dtype(const std::string& s) {
    if (s == "auto") return std::nullopt;
    if (s == "bf16" || s == "f16" || s == "f32") return dtype_from_name(s);
    fail("--dtype: '{}' is not one of auto, bf16, f16, f32", s);
}

QuantScheme parse_convert_quant(const std::string& s) {
    const auto q = quant_scheme_from_name(s);
    if (!q) fail("--quant: unknown scheme '{}' (choose none, int8 or int4)", s);
    return *q;
}

ConvertResult convert_hf(const std::string& src, const std::string& out_path, const ConvertOptions& opt) {
    const auto t0 = std::chrono::steady_clock::now();
    const fs::path dir(src);
    if (!fs::is_directory(dir)) fail("{}: not a directory (expected a Hugging Face model directory)", src);
    check_output_path(dir, out_path, opt.tokenizer_path);
    const fs::path config_path = dir / "config.json";
    const fs::path generation_path = dir / "generation_config.json";
    if (!fs::exists(config_path)) fail("{}: missing config.json (not a Hugging Face model directory?)", src);
    const nlohmann::json config = read_json_file(config_path.string());
    nlohmann::json generation = nlohmann::json::object();
    if (fs::exists(generation_path)) generation = read_json_file(generation_path.string());
    const ModelSpec spec = spec_from_hf_config(config, generation, config_path.string(), generation_path.string());

    Checkpoint ck = open_checkpoint(dir);

    // The layers the checkpoint holds, before a plan is built for the layers config.json claims.
    int ck_layers = 0;
    for (const auto& [name, view] : ck.tensors) ck_layers = std::max(ck_layers, hf_layer_index(name) + 1);
    if (spec.n_layers > ck_layers)
        fail("{}: num_hidden_layers is {} but the checkpoint has tensors for {} layer(s)", config_path.string(),
             spec.n_layers, ck_layers);

    std::vector<TensorPlan> plan = plan_tensors(spec);
    choose_expert_layouts(ck, plan, src);
    if (opt.quant == QuantScheme::int4 && !int4_group_size_allowed(opt.group_size))
        fail("--group-size {}: INT4 groups are 32, 64 or 128 weights", opt.group_size);
    // Every quantized matrix's rows must split into whole groups, checked before a byte is written.
    for (const auto& p : plan)
        if (const QuantScheme q = role_quant_scheme(p.role, opt.quant); q != QuantScheme::none)
            if (const std::string e = quant_layout_error(q, p.shape.back(), opt.group_size); !e.empty())
                fail("--quant {} --group-size {}: tensor '{}' {}: {}", quant_scheme_name(opt.quant), opt.group_size, p.name,
                     shape_str(p.shape), e);

    // Check everything before writing a byte: missing tensors, shapes, dtypes.
    uint64_t total_in = 0;
    std::set<std::string> used;
    for (auto& p : plan) {
        auto it = ck.tensors.find(p.hf_name);
        if (it == ck.tensors.end() && !p.hf_alt_name.empty() && ck.tensors.count(p.hf_alt_name)) {
            log::info("note: {} is stored as {} (tied embeddings)", p.hf_name, p.hf_alt_name);
            p.hf_name = p.hf_alt_name;
            it = ck.tensors.find(p.hf_name);
        }
        if (it == ck.tensors.end())
            fail("{}: missing tensor '{}' (needed as {} by {})", ck.files.size() == 1 ? ck.files[0]->path() : src,
                 p.hf_name, p.name, spec.hf_architecture);
        const TensorView& t = *it->second;
        if (t.shape != p.hf_shape)
            fail("{}: tensor '{}' has shape {} but config.json implies {}{}", ck.where[p.hf_name], p.hf_name,
                 shape_str(t.shape), shape_str(p.hf_shape),
                 p.hf_name == p.hf_fused.name && !p.hf_fused.layout.empty() ? fmt::format(" ({})", p.hf_fused.layout) : "");
        if (!dtype_is_float(t.dtype))
            fail("{}: tensor '{}' has dtype {}; only f32/f16/bf16 weights are supported", ck.where[p.hf_name], p.hf_name,
                 dtype_name(t.dtype));
        if (used.insert(p.hf_name).second) total_in += t.nbytes;
    }
    std::vector<std::string> unused;
    std::map<std::string, int> skipped_parts;  // the parts of an image-text checkpoint not run, by name
    for (const auto& [name, view] : ck.tensors) {
        if (used.count(name)) continue;
        if (const std::string_view part = hf_skipped_part(name); !part.empty()) ++skipped_parts[std::string(part)];
        else unused.push_back(name);
    }
    for (const auto& [part, n] : skipped_parts)
        log::info("note: {} ({} tensor(s)) is skipped: ThinTensor runs the text model", part, n);
    if (!unused.empty()) {
        // Tied checkpoints often still carry lm_head.weight; anything else is worth a word.
        const bool only_tied_head = unused.size() == 1 && unused[0] == "lm_head.weight" && spec.tied_embeddings;
        if (only_tied_head) log::info("note: lm_head.weight is ignored: the model ties its output head to the embeddings");
        else log::warn("{} tensor(s) in the checkpoint are not used by {} and were skipped: {}", unused.size(),
                       spec.hf_architecture, fmt::join(unused.size() > 8 ? std::vector<std::string>(unused.begin(), unused.begin() + 8) : unused, ", "));
    }

    // Tokenizer files to embed, loaded and checked as `run` will load them.
    TokenizerFiles tok = load_tokenizer(dir, opt.tokenizer_path, spec);

    // Provenance: what the archive was made from.
    // note: only the weight files actually read are hashed: Hugging Face repos may also carry
    // other *.safetensors (Mistral's consolidated.safetensors) that would double the read time.
    std::set<std::string> weight_files;
    for (const auto& f : ck.files) weight_files.insert(fs::path(f->path()).filename().string());
    std::map<std::string, fs::path> source_paths;  // sorted by name: deterministic metadata
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (!entry.is_regular_file()) continue;
        const std::string name = entry.path().filename().string();
        if (name.ends_with(".json") || name == "tokenizer.model" || weight_files.count(name)) source_paths[name] = entry.path();
    }
    nlohmann::json sources = nlohmann::json::array();
    for (const auto& [name, p] : source_paths)
        sources.push_back({{"name", name}, {"size", fs::file_size(p)}, {"xxh3", hex64(xxh3_file(p.string()))}});

    // Write: tensors block by block, then embedded files, then metadata.
    ThreadPool pool;  // for the finite check
    ArchiveWriter w(out_path);
    Progress progress(fmt::format("convert {}", fs::path(out_path).filename().string()), total_in);
    std::string block;
    ConvertResult r;
    for (const auto& p : plan) {
        if (p.block != block) {
            block = p.block;
            w.begin_block(block);
        }
        const TensorView& t = *ck.tensors.at(p.hf_name);
        // The slice: whole rows of the archive tensor's width (TensorPlan::hf_row_begin).
        uint64_t numel = 0;
        TT_ASSERT(checked_numel(p.shape, numel));
        const uint64_t row_elems = p.shape.empty() ? 1 : numel / uint64_t(p.shape[0]);
        const uint64_t first_elem = uint64_t(p.hf_row_begin) * row_elems;
        TT_ASSERT(first_elem + numel <= uint64_t(t.numel()), "{} overruns {}", p.name, p.hf_name);
        const uint8_t* src_ptr = t.data + first_elem * dtype_size(t.dtype);
        const DType out_dtype = opt.dtype.value_or(t.dtype);
        // note: checked just before the writer reads the same bytes, so they are hot in the page
        // cache; the index is the element's flat index in the checkpoint's tensor.
        const FiniteReport fin = check_finite(src_ptr, t.dtype, out_dtype, numel, pool);
        if (!fin.ok()) {
            const std::string what =
                fin.n_nonfinite > 0
                    ? fmt::format("{} non-finite value(s){} (first bad value: {} at index {})", fin.n_nonfinite,
                                  fin.n_overflow ? fmt::format(" and {} too large for {}", fin.n_overflow, dtype_name(out_dtype)) : "",
                                  value_str(fin.first_value), first_elem + fin.first)
                    : fmt::format("{} value(s) too large for {}, which the cast turns into Inf (first: {} at index {})",
                                  fin.n_overflow, dtype_name(out_dtype), value_str(fin.first_value), first_elem + fin.first);
            if (!opt.allow_nonfinite)
                fail("{}: tensor '{}' has {}; {} (or convert it with `thintensor convert --allow-nonfinite`)", ck.where[p.hf_name],
                     p.hf_name, what,
                     fin.n_nonfinite > 0 ? "the checkpoint's weights are broken" : "keep a wider dtype (--dtype auto, bf16 or f32)");
            log::warn("{}: tensor '{}' has {}; converting anyway (--allow-nonfinite)", ck.where[p.hf_name], p.hf_name, what);
            if (r.nonfinite_tensors.empty() || r.nonfinite_tensors.back() != p.hf_name) r.nonfinite_tensors.push_back(p.hf_name);
        }
        if (const QuantScheme q = role_quant_scheme(p.role, opt.quant); q != QuantScheme::none) {
            // Cast to --dtype first, then quantize those values: the blocks a load-time quantized
            // archive of that dtype computes (model/weight_quant.h).
            std::vector<uint8_t> cast;
            const void* qsrc = src_ptr;
            if (out_dtype != t.dtype) {
                cast.resize(numel * dtype_size(out_dtype));
                convert_floats(src_ptr, t.dtype, cast.data(), out_dtype, numel);
                qsrc = cast.data();
            }
            const QuantizedMatrix m = quantize_matrix(pool, qsrc, out_dtype, p.shape[0], p.shape[1], q, opt.group_size,
                                                      fmt::format("{}: tensor '{}'", ck.where[p.hf_name], p.hf_name));
            w.add_quantized(p.name, quant_scales_name(p.name), q, opt.group_size, p.shape, m.q.data(), m.scales.data());
            progress.add(numel * dtype_size(t.dtype));
            r.bytes_read += numel * dtype_size(t.dtype);
            ++r.n_tensors;
            ++r.dtypes[std::string(quant_scheme_name(q))];
            r.quantized = true;
            continue;
        }
        w.add_tensor(p.name, out_dtype, p.shape, src_ptr, t.dtype, [&](uint64_t n) {
            progress.add(n);
            r.bytes_read += n;
        });
        ++r.n_tensors;
        ++r.dtypes[std::string(dtype_name(out_dtype))];
    }
    for (const auto& [name, bytes] : tok.embedded) w.add_file(name, bytes);

    nlohmann::json meta;
    meta["format"] = "thintensor";
    meta["format_version"] = r.quantized ? k_thin_version : k_thin_min_version;  // as the header's
    meta["spec"] = spec_to_json(spec);
    meta["generation"] = generation;
    meta["tokenizer"] = {{"kind", tok.kind}};
    meta["provenance"] = {{"source", fs::absolute(dir).lexically_normal().string()},
                          {"source_files", sources},
                          {"converter", std::string("thintensor ") + THINTENSOR_VERSION},
                          {"created", format_utc_iso8601()},
                          {"dtype", opt.dtype ? std::string(dtype_name(*opt.dtype)) : "auto"}};
    if (r.quantized) {
        meta["quant"] = {{"scheme", quant_scheme_name(opt.quant)}, {"head", "int8"}};
        if (opt.quant == QuantScheme::int4) meta["quant"]["group_size"] = opt.group_size;
    }
    w.finish(std::move(meta));
    progress.finish();
    if (!r.nonfinite_tensors.empty())
        log::warn("{} tensor(s) with non-finite values were converted (--allow-nonfinite): {}", r.nonfinite_tensors.size(),
                  fmt::join(r.nonfinite_tensors, ", "));
    r.output = out_path;
    r.tokenizer_kind = tok.kind;
    r.tokenizer_vocab = tok.vocab;
    r.bytes_written = fs::file_size(out_path);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace tt
