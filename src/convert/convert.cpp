#include "convert/convert.h"

#include "core/error.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/output_file.h"
#include "core/progress.h"
#include "format/archive.h"
#include "format/safetensors.h"
#include "model/hf_config.h"
#include "model/tensor_names.h"

#include <fmt/ranges.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

namespace fs = std::filesystem;

namespace tt {

namespace {

nlohmann::json read_json_file(const fs::path& p) {
    const std::string text = read_file(p.string());
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        fail("{}: invalid JSON: {}", p.string(), e.what());
    }
}

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
        const nlohmann::json j = read_json_file(index);
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

std::string iso_time_now() {
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

}  // namespace

std::optional<DType> parse_convert_dtype(const std::string& s) {
    if (s == "auto") return std::nullopt;
    if (s == "bf16" || s == "f16" || s == "f32") return dtype_from_name(s);
    fail("--dtype: '{}' is not one of auto, bf16, f16, f32", s);
}

ConvertResult convert_hf(const std::string& src, const std::string& out_path, const ConvertOptions& opt) {
    const auto t0 = std::chrono::steady_clock::now();
    const fs::path dir(src);
    if (!fs::is_directory(dir)) fail("{}: not a directory (expected a Hugging Face model directory)", src);
    const fs::path config_path = dir / "config.json";
    if (!fs::exists(config_path)) fail("{}: missing config.json (not a Hugging Face model directory?)", src);
    const nlohmann::json config = read_json_file(config_path);
    nlohmann::json generation = nlohmann::json::object();
    if (fs::exists(dir / "generation_config.json")) generation = read_json_file(dir / "generation_config.json");
    const ModelSpec spec = spec_from_hf_config(config, generation, config_path.string());

    Checkpoint ck = open_checkpoint(dir);

    // Check everything before writing a byte: missing tensors, shapes, dtypes.
    uint64_t total_in = 0;
    std::set<std::string> used;
    std::vector<TensorPlan> plan = plan_tensors(spec);
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
            fail("{}: tensor '{}' has shape {} but config.json implies {}", ck.where[p.hf_name], p.hf_name,
                 shape_str(t.shape), shape_str(p.hf_shape));
        if (!dtype_is_float(t.dtype))
            fail("{}: tensor '{}' has dtype {}; only f32/f16/bf16 weights are supported", ck.where[p.hf_name], p.hf_name,
                 dtype_name(t.dtype));
        if (used.insert(p.hf_name).second) total_in += t.nbytes;
    }
    std::vector<std::string> unused;
    for (const auto& [name, view] : ck.tensors)
        if (!used.count(name)) unused.push_back(name);
    if (!unused.empty()) {
        // Tied checkpoints often still carry lm_head.weight; anything else is worth a word.
        const bool only_tied_head = unused.size() == 1 && unused[0] == "lm_head.weight" && spec.tied_embeddings;
        if (only_tied_head) log::info("note: lm_head.weight is ignored: the model ties its output head to the embeddings");
        else log::warn("{} tensor(s) in the checkpoint are not used by {} and were skipped: {}", unused.size(),
                       spec.hf_architecture, fmt::join(unused.size() > 8 ? std::vector<std::string>(unused.begin(), unused.begin() + 8) : unused, ", "));
    }

    // Tokenizer files to embed.
    std::map<std::string, std::string> embedded;
    std::string tokenizer_kind = "none";
    if (!opt.tokenizer_path.empty()) {
        const fs::path tp(opt.tokenizer_path);
        if (!fs::exists(tp)) fail("--tokenizer: {} does not exist", opt.tokenizer_path);
        if (tp.extension() == ".json") {
            embedded["tokenizer.json"] = read_file(tp.string());
            if (fs::exists(tp.parent_path() / "tokenizer_config.json"))
                embedded["tokenizer_config.json"] = read_file((tp.parent_path() / "tokenizer_config.json").string());
            tokenizer_kind = "hf";
        } else {
            embedded["tok512.bin"] = read_file(tp.string());
            tokenizer_kind = "llama2c";
        }
    } else if (fs::exists(dir / "tokenizer.json")) {
        embedded["tokenizer.json"] = read_file((dir / "tokenizer.json").string());
        if (fs::exists(dir / "tokenizer_config.json"))
            embedded["tokenizer_config.json"] = read_file((dir / "tokenizer_config.json").string());
        tokenizer_kind = "hf";
    } else {
        log::warn("{}: no tokenizer.json; the archive will have no tokenizer (attach one with --tokenizer FILE)", src);
    }
    // Embedded JSON must parse now, not when the archive is first run.
    for (const auto& [name, bytes] : embedded) {
        if (!name.ends_with(".json")) continue;
        try {
            const nlohmann::json parsed = nlohmann::json::parse(bytes);
            TT_ASSERT(!parsed.is_discarded());
        } catch (const nlohmann::json::exception& e) {
            fail("{}: {} is not valid JSON: {}", opt.tokenizer_path.empty() ? src : opt.tokenizer_path, name, e.what());
        }
    }

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
        const int64_t row_elems = p.hf_shape.size() > 1 ? p.hf_shape[1] : 1;
        const uint8_t* src_ptr = t.data + uint64_t(p.hf_row_begin * row_elems) * dtype_size(t.dtype);
        const DType out_dtype = opt.dtype.value_or(t.dtype);
        w.add_tensor(p.name, out_dtype, p.shape, src_ptr, t.dtype, [&](uint64_t n) {
            progress.add(n);
            r.bytes_read += n;
        });
        ++r.n_tensors;
    }
    for (const auto& [name, bytes] : embedded) w.add_file(name, bytes);

    nlohmann::json meta;
    meta["format"] = "thintensor";
    meta["format_version"] = k_thin_version;
    meta["spec"] = spec_to_json(spec);
    meta["generation"] = generation;
    meta["tokenizer"] = {{"kind", tokenizer_kind}};
    meta["provenance"] = {{"source", fs::absolute(dir).lexically_normal().string()},
                          {"source_files", sources},
                          {"converter", std::string("thintensor ") + THINTENSOR_VERSION},
                          {"created", iso_time_now()},
                          {"dtype", opt.dtype ? std::string(dtype_name(*opt.dtype)) : "auto"}};
    w.finish(std::move(meta));
    progress.finish();
    r.bytes_written = fs::file_size(out_path);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace tt
