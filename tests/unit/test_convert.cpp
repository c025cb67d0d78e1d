// Round-trip tests of `convert`: every supported checkpoint in ../shared, at every output dtype, is
// converted and read back; each archive tensor must equal its Hugging Face source tensor after the
// requested cast. The expected source of each tensor (including Phi-3's fused-matrix row slices) and
// the expected cast are computed here independently of the converter's tensor-name table and its
// chunked cast, so a wrong name, slice or rounding in src/ shows up as a byte mismatch.
#include "test_convert_util.h"

#include "convert/convert.h"
#include "core/hash.h"
#include "format/archive.h"
#include "model/hf_config.h"
#include "model/model_spec.h"
#include "model/tensor_names.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>

using namespace tt;
using namespace tt::test;

namespace {

struct Checkpoint {
    const char* id;   // test name
    const char* dir;  // relative to ../shared
};
const Checkpoint k_checkpoints[] = {
    {"llama", "fixtures/hf-tiny/llama"},
    {"mistral", "fixtures/hf-tiny/mistral"},
    {"qwen2", "fixtures/hf-tiny/qwen2"},
    {"qwen3", "fixtures/hf-tiny/qwen3"},
    {"phi3", "fixtures/hf-tiny/phi3"},
    {"gemma3_text", "fixtures/hf-tiny/gemma3_text"},
    {"qwen3_moe", "fixtures/hf-tiny/qwen3_moe"},
    {"mixtral", "fixtures/hf-tiny/mixtral"},
    {"tinystories_656k", "models/tinystories-656k"},
    {"stories260K", "models/stories260K/hf"},
};

// Where an archive tensor comes from in the HF checkpoint: a tensor name and a row range.
struct Source {
    Source(std::string name, int64_t begin = 0, std::optional<int64_t> rows = std::nullopt)
        : hf_name(std::move(name)), row_begin(begin), n_rows(rows) {}
    std::string hf_name;
    int64_t row_begin = 0;
    std::optional<int64_t> n_rows;  // nullopt = the whole tensor
};

// The test's own HF name map, written from the transformers modeling files (not from
// tensor_names.cpp). Internal names are "token_embd.weight", "blk.N.attn_q.weight", ...
Source expected_source(const std::string& arch, const nlohmann::json& cfg, const std::string& name) {
    if (name == "token_embd.weight") return {"model.embed_tokens.weight"};
    if (name == "output_norm.weight") return {"model.norm.weight"};
    if (name == "output.weight") return {"lm_head.weight"};
    // blk.N.<what>.<weight|bias>
    const size_t d1 = name.find('.'), d2 = name.find('.', d1 + 1), d3 = name.rfind('.');
    const std::string layer = name.substr(d1 + 1, d2 - d1 - 1), what = name.substr(d2 + 1, d3 - d2 - 1),
                      kind = name.substr(d3 + 1);
    const std::string pre = "model.layers." + layer + ".";
    const bool gemma = arch == "Gemma3ForCausalLM", phi3 = arch == "Phi3ForCausalLM", mixtral = arch == "MixtralForCausalLM";
    // Mixture of experts: Qwen3MoeSparseMoeBlock's gate and experts.E.{gate,up,down}_proj;
    // MixtralSparseMoeBlock's block_sparse_moe.gate and experts.E.{w1,w3,w2}.
    if (what == "ffn_gate_inp") return {pre + (mixtral ? "block_sparse_moe.gate." : "mlp.gate.") + kind};
    if (what.rfind("expert.", 0) == 0) {
        const size_t dot = what.find('.', 7);
        const std::string e = what.substr(7, dot - 7), proj = what.substr(dot + 1);
        static const std::map<std::string, std::pair<std::string, std::string>> k_expert = {
            {"ffn_gate", {"gate_proj", "w1"}}, {"ffn_up", {"up_proj", "w3"}}, {"ffn_down", {"down_proj", "w2"}}};
        const auto& names = k_expert.at(proj);
        return {pre + (mixtral ? "block_sparse_moe.experts." + e + "." + names.second : "mlp.experts." + e + "." + names.first) + "." + kind};
    }
    if (phi3) {
        // Phi-3 stores [q; k; v] in qkv_proj and [gate; up] in gate_up_proj, stacked by rows.
        const int64_t heads = cfg["num_attention_heads"], kv_heads = cfg["num_key_value_heads"];
        const int64_t head_dim = cfg.value("head_dim", int64_t(cfg["hidden_size"]) / heads);
        const int64_t q = heads * head_dim, kv = kv_heads * head_dim, f = cfg["intermediate_size"];
        const std::string qkv = pre + "self_attn.qkv_proj.weight", gu = pre + "mlp.gate_up_proj.weight";
        if (what == "attn_q") return {qkv, 0, q};
        if (what == "attn_k") return {qkv, q, kv};
        if (what == "attn_v") return {qkv, q + kv, kv};
        if (what == "ffn_gate") return {gu, 0, f};
        if (what == "ffn_up") return {gu, f, f};
    }
    static const std::map<std::string, std::string> k_map = {
        {"attn_norm", "input_layernorm"},       {"attn_q", "self_attn.q_proj"},
        {"attn_k", "self_attn.k_proj"},         {"attn_v", "self_attn.v_proj"},
        {"attn_output", "self_attn.o_proj"},    {"attn_q_norm", "self_attn.q_norm"},
        {"attn_k_norm", "self_attn.k_norm"},    {"ffn_gate", "mlp.gate_proj"},
        {"ffn_up", "mlp.up_proj"},              {"ffn_down", "mlp.down_proj"},
        {"ffn_post_norm", "post_feedforward_layernorm"},
    };
    // Gemma's post_attention_layernorm normalizes the attention output; its pre-MLP norm is
    // pre_feedforward_layernorm. Everywhere else post_attention_layernorm is the pre-MLP norm.
    if (what == "attn_post_norm") return {pre + "post_attention_layernorm." + kind};
    if (what == "ffn_norm") return {pre + (gemma ? "pre_feedforward_layernorm." : "post_attention_layernorm.") + kind};
    auto it = k_map.find(what);
    if (it == k_map.end()) throw std::runtime_error("test has no HF name for " + name);
    return {pre + it->second + "." + kind};
}

std::string dtype_label(const std::optional<DType>& d) { return d ? std::string(dtype_name(*d)) : "auto"; }

uint64_t align4k(uint64_t x) { return (x + 4095) / 4096 * 4096; }

// Checks the block layout: blocks embed, layer.0.., output in order, each 4 KiB aligned, and each
// block's tensors contiguous (every tensor starts at the next 4 KiB boundary after the previous one).
void check_block_layout(const Archive& a, int n_layers, int n_experts = 0) {
    std::vector<std::string> want = {"embed"};
    for (int i = 0; i < n_layers; ++i) {
        want.push_back("layer." + std::to_string(i));
        // Every layer of the MoE fixtures is sparse: one block per expert after the layer's own.
        for (int e = 0; e < n_experts; ++e) want.push_back("layer." + std::to_string(i) + ".expert." + std::to_string(e));
    }
    want.push_back("output");
    std::vector<std::string> got;
    for (const auto& b : a.blocks()) got.push_back(b.name);
    ASSERT_EQ(got, want);

    uint64_t prev_end = a.header().data_offset;
    size_t ti = 0;  // tensors are listed block by block, in file order
    for (const auto& b : a.blocks()) {
        SCOPED_TRACE("block " + b.name);
        EXPECT_EQ(b.offset % 4096, 0u);
        EXPECT_GE(b.offset, prev_end);
        uint64_t next = b.offset, end = b.offset;
        size_t n_in_block = 0;
        for (; ti < a.tensors().size() && a.tensors()[ti].block == b.name; ++ti, ++n_in_block) {
            const auto& t = a.tensors()[ti];
            EXPECT_EQ(t.offset, next) << t.view.name << " is not right after the previous tensor of its block";
            end = t.offset + t.view.nbytes;
            next = align4k(end);
        }
        EXPECT_GT(n_in_block, 0u);
        EXPECT_EQ(b.offset + b.nbytes, end) << "the block must end with its last tensor";
        prev_end = b.offset + b.nbytes;
    }
    EXPECT_EQ(ti, a.tensors().size()) << "tensor " << a.tensors()[std::min(ti, a.tensors().size() - 1)].view.name
                                      << " is out of block order";
    // The data section holds the blocks, then the embedded files; metadata follows it.
    const ThinHeader& h = a.header();
    EXPECT_EQ(h.data_offset, 4096u);
    EXPECT_EQ(h.meta_offset, h.data_offset + h.data_size);
    EXPECT_EQ(h.file_size, a.file_size());
    EXPECT_EQ(h.meta_offset + h.meta_size, a.file_size());
    for (const auto& f : a.files()) EXPECT_GE(f.offset, prev_end) << f.name;
}

// Compares every archive tensor with its HF source after the cast to `dtype`, and checks that every
// source tensor is used (except lm_head.weight in a tied checkpoint that still carries it).
void check_tensors(const Archive& a, const fs::path& src_dir, const std::optional<DType>& dtype) {
    const nlohmann::json cfg = read_json(src_dir / "config.json");
    const std::string arch = cfg["architectures"][0];
    std::map<std::string, const TensorView*> src;
    std::vector<std::unique_ptr<SafetensorsFile>> files;
    for (const auto& e : fs::directory_iterator(src_dir)) {
        const std::string fname = e.path().filename().string();
        if (!fname.starts_with("model") || !fname.ends_with(".safetensors")) continue;
        files.push_back(std::make_unique<SafetensorsFile>(e.path().string()));
        for (const auto& [n, v] : files.back()->tensors()) src[n] = &v;
    }
    // note: transformers drops a tied tensor it saves twice and records "removed: kept" in the
    // safetensors metadata (tinystories-656k keeps lm_head.weight, not embed_tokens).
    const bool tied = cfg.value("tie_word_embeddings", arch == "Gemma3ForCausalLM");
    if (tied && !src.count("model.embed_tokens.weight") && src.count("lm_head.weight"))
        src["model.embed_tokens.weight"] = src["lm_head.weight"];

    std::set<std::string> used;
    for (const auto& t : a.tensors()) {
        SCOPED_TRACE(t.view.name);
        const Source s = expected_source(arch, cfg, t.view.name);
        auto it = src.find(s.hf_name);
        ASSERT_NE(it, src.end()) << "no source tensor " << s.hf_name;
        used.insert(s.hf_name);
        const TensorView& v = *it->second;
        const int64_t row_elems = v.shape.size() > 1 ? v.numel() / v.shape[0] : 1;
        const int64_t rows = s.n_rows.value_or(v.shape.empty() ? 1 : v.shape[0]);
        ASSERT_LE(s.row_begin + rows, v.shape.empty() ? 1 : v.shape[0]);
        Shape want_shape = v.shape;
        if (!want_shape.empty()) want_shape[0] = rows;
        EXPECT_EQ(t.view.shape, want_shape);
        const DType out = dtype.value_or(v.dtype);
        EXPECT_EQ(t.view.dtype, out);
        const std::string want =
            cast_bytes(v.data + uint64_t(s.row_begin * row_elems) * dtype_size(v.dtype), v.dtype, out, size_t(rows * row_elems));
        ASSERT_EQ(t.view.nbytes, want.size());
        if (std::memcmp(t.view.data, want.data(), want.size()) != 0) {
            size_t i = 0;
            while (t.view.data[i] == uint8_t(want[i])) ++i;
            ADD_FAILURE() << "bytes differ from " << s.hf_name << " at byte " << i;
        }
        EXPECT_EQ(t.xxh3, xxh3_64(want.data(), want.size()));
    }
    for (const auto& [n, v] : src) {
        if (used.count(n)) continue;
        EXPECT_TRUE(tied && n == "lm_head.weight") << "source tensor " << n << " is not in the archive";
    }
    if (tied) {
        EXPECT_EQ(a.find("output.weight"), nullptr) << "a tied model must not store an output head";
    } else {
        EXPECT_NE(a.find("output.weight"), nullptr);
    }
}

// The spec fields that every architecture reads straight from config.json.
void check_common_spec(const ModelSpec& s, const nlohmann::json& cfg) {
    EXPECT_EQ(s.hf_architecture, cfg["architectures"][0]);
    EXPECT_EQ(s.n_layers, cfg["num_hidden_layers"]);
    EXPECT_EQ(s.hidden_dim, cfg["hidden_size"]);
    EXPECT_EQ(s.n_heads, cfg["num_attention_heads"]);
    EXPECT_EQ(s.n_kv_heads, cfg["num_key_value_heads"]);
    EXPECT_EQ(s.ffn_dim, cfg["intermediate_size"]);
    EXPECT_EQ(s.vocab_size, cfg["vocab_size"]);
    EXPECT_EQ(s.max_context, cfg["max_position_embeddings"]);
    EXPECT_FLOAT_EQ(s.norm_eps, cfg["rms_norm_eps"].get<float>());
    const int head_dim = cfg.contains("head_dim") && !cfg["head_dim"].is_null() ? cfg["head_dim"].get<int>() : s.hidden_dim / s.n_heads;
    EXPECT_EQ(s.head_dim, head_dim);
    EXPECT_EQ(s.rope.rotary_dim, head_dim);
    EXPECT_EQ(int(s.layers.size()), s.n_layers);
    if (cfg.contains("tie_word_embeddings")) {
        EXPECT_EQ(s.tied_embeddings, cfg["tie_word_embeddings"].get<bool>());
    }
}

using Param = std::tuple<int, int>;  // checkpoint index, dtype index
const std::optional<DType> k_dtypes[] = {std::nullopt, DType::f32, DType::bf16, DType::f16};

class ConvertRoundTrip : public ::testing::TestWithParam<Param> {};

TEST_P(ConvertRoundTrip, TensorsEqualSourceAfterCast) {
    const Checkpoint& ck = k_checkpoints[std::get<0>(GetParam())];
    const std::optional<DType> dtype = k_dtypes[std::get<1>(GetParam())];
    const fs::path src = shared_dir() / ck.dir;
    TempDir tmp;
    const fs::path out = tmp / "model.thin";
    ConvertOptions opt;
    opt.dtype = dtype;
    const ConvertResult r = convert_hf(src.string(), out.string(), opt);
    EXPECT_EQ(tmp.entries(), std::vector<std::string>{"model.thin"}) << "temporary files left behind";
    EXPECT_EQ(r.bytes_written, fs::file_size(out));

    const Archive a = Archive::open(out.string());
    EXPECT_NO_THROW(a.verify());
    EXPECT_EQ(r.n_tensors, a.tensors().size());
    check_tensors(a, src, dtype);

    // The stored spec is the one config.json maps to, and it survives JSON.
    const nlohmann::json cfg = read_json(src / "config.json");
    const nlohmann::json gen = read_json(src / "generation_config.json");
    const ModelSpec spec = spec_from_json(a.metadata()["spec"]);
    EXPECT_EQ(spec, spec_from_hf_config(cfg, gen, "config.json"));
    EXPECT_EQ(spec_from_json(spec_to_json(spec)), spec);
    check_common_spec(spec, cfg);
    check_block_layout(a, spec.n_layers, spec.moe.n_experts);
    EXPECT_EQ(a.tensors().size(), plan_tensors(spec).size());
    uint64_t params = 0;
    for (const auto& t : a.tensors()) params += uint64_t(t.view.numel());
    EXPECT_EQ(params, spec.n_params());

    // Generation defaults and provenance.
    const auto& meta = a.metadata();
    EXPECT_EQ(meta["format_version"], k_thin_min_version);  // no quantized tensor: version 1
    EXPECT_EQ(meta["generation"], gen);
    EXPECT_EQ(meta["provenance"]["dtype"], dtype_label(dtype));
    std::map<std::string, nlohmann::json> sources;
    for (const auto& f : meta["provenance"]["source_files"]) sources[f["name"]] = f;
    for (const char* name : {"config.json", "model.safetensors", "generation_config.json"}) {
        ASSERT_TRUE(sources.count(name)) << name << " missing from provenance";
        EXPECT_EQ(sources[name]["size"], fs::file_size(src / name));
        EXPECT_EQ(sources[name]["xxh3"], hex64(xxh3_file((src / name).string())));
    }
    // Only the weights actually read are hashed, not other safetensors beside them.
    EXPECT_FALSE(sources.count("reference.safetensors"));
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, ConvertRoundTrip,
                         ::testing::Combine(::testing::Range(0, int(std::size(k_checkpoints))), ::testing::Range(0, 4)),
                         [](const ::testing::TestParamInfo<Param>& p) {
                             return std::string(k_checkpoints[std::get<0>(p.param)].id) + "_" +
                                    dtype_label(k_dtypes[std::get<1>(p.param)]);
                         });

// Per-architecture spec spot checks: the configs' distinguishing features land in the spec and in
// the tensor list.
Archive convert_fixture(const TempDir& tmp, const std::string& dir, const ConvertOptions& opt = {}) {
    const fs::path out = tmp / "m.thin";
    convert_hf((shared_dir() / dir).string(), out.string(), opt);
    return Archive::open(out.string());
}

TEST(ConvertSpec, Qwen3HeadDimAndQkNorm) {
    TempDir tmp;
    const Archive a = convert_fixture(tmp, "fixtures/hf-tiny/qwen3");
    const ModelSpec s = spec_from_json(a.metadata()["spec"]);
    EXPECT_EQ(s.arch, Arch::qwen3);
    EXPECT_EQ(s.head_dim, 32);  // config.json head_dim, not hidden 64 / 4 heads
    EXPECT_EQ(s.q_dim(), 128);
    EXPECT_FLOAT_EQ(s.attn_scale, 1.0f / std::sqrt(32.0f));
    EXPECT_TRUE(s.qk_norm);
    EXPECT_FALSE(s.qkv_bias);
    EXPECT_TRUE(s.tied_embeddings);
    EXPECT_EQ(s.sliding_window, 0);  // sliding_window is null and use_sliding_window false
    EXPECT_EQ(a.tensor("blk.0.attn_q.weight").view.shape, (Shape{128, 64}));
    EXPECT_EQ(a.tensor("blk.1.attn_output.weight").view.shape, (Shape{64, 128}));
    EXPECT_EQ(a.tensor("blk.0.attn_q_norm.weight").view.shape, (Shape{32}));
}

TEST(ConvertSpec, Qwen2QkvBias) {
    TempDir tmp;
    const Archive a = convert_fixture(tmp, "fixtures/hf-tiny/qwen2");
    const ModelSpec s = spec_from_json(a.metadata()["spec"]);
    EXPECT_TRUE(s.qkv_bias);
    EXPECT_FALSE(s.o_bias);
    EXPECT_FALSE(s.qk_norm);
    EXPECT_TRUE(s.tied_embeddings);
    for (int l = 0; l < 2; ++l) {
        EXPECT_EQ(a.tensor(fmt::format("blk.{}.attn_q.bias", l)).view.shape, (Shape{64}));
        EXPECT_EQ(a.tensor(fmt::format("blk.{}.attn_k.bias", l)).view.shape, (Shape{32}));
        EXPECT_EQ(a.tensor(fmt::format("blk.{}.attn_v.bias", l)).view.shape, (Shape{32}));
        EXPECT_EQ(a.find(fmt::format("blk.{}.attn_output.bias", l)), nullptr);
    }
}

TEST(ConvertSpec, Gemma3SlidingLayersAndScaledNorms) {
    TempDir tmp;
    const Archive a = convert_fixture(tmp, "fixtures/hf-tiny/gemma3_text");
    const ModelSpec s = spec_from_json(a.metadata()["spec"]);
    EXPECT_EQ(s.arch, Arch::gemma3);
    // layer_types lists three sliding layers, window 8.
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(s.sliding(i)) << i;
    EXPECT_EQ(s.sliding_window, 8);
    EXPECT_DOUBLE_EQ(s.rope.theta, 1e6);         // rope_parameters.full_attention
    EXPECT_DOUBLE_EQ(s.rope_local.theta, 1e4);   // rope_parameters.sliding_attention
    EXPECT_EQ(&s.rope_for_layer(0), &s.rope_local);
    EXPECT_FLOAT_EQ(s.norm_weight_offset, 1.0f);  // (1 + w) RMSNorm weights
    EXPECT_TRUE(s.sandwich_norm);
    EXPECT_TRUE(s.qk_norm);
    EXPECT_FLOAT_EQ(s.embed_scale, 8.0f);  // sqrt(hidden 64)
    EXPECT_FLOAT_EQ(s.attn_scale, 0.25f);  // 1 / sqrt(query_pre_attn_scalar 16)
    EXPECT_EQ(s.activation, Activation::gelu_tanh);
    EXPECT_TRUE(s.tied_embeddings);        // Gemma's default when config.json says so or omits it
    EXPECT_EQ(s.bos_token_id, 2);
    EXPECT_EQ(s.eos_token_ids, std::vector<int>{1});
    EXPECT_NE(a.find("blk.2.attn_post_norm.weight"), nullptr);
    EXPECT_NE(a.find("blk.2.ffn_post_norm.weight"), nullptr);
}

TEST(ConvertSpec, Phi3FusedProjectionsAreSplit) {
    TempDir tmp;
    const Archive a = convert_fixture(tmp, "fixtures/hf-tiny/phi3");
    const ModelSpec s = spec_from_json(a.metadata()["spec"]);
    EXPECT_EQ(s.arch, Arch::phi3);
    EXPECT_EQ(a.find("blk.0.attn_qkv.weight"), nullptr);
    // qkv_proj is [q 64 + k 32 + v 32, 64]; gate_up_proj [gate 128 + up 128, 64].
    SafetensorsFile st((shared_dir() / "fixtures/hf-tiny/phi3/model.safetensors").string());
    const TensorView& qkv = st.get("model.layers.1.self_attn.qkv_proj.weight");
    const TensorView& gu = st.get("model.layers.1.mlp.gate_up_proj.weight");
    const uint64_t row = 64 * 4;
    auto same = [&](const char* name, const TensorView& fused, uint64_t first_row, int64_t rows) {
        const ArchiveTensor& t = a.tensor(name);
        EXPECT_EQ(t.view.shape, (Shape{rows, 64})) << name;
        EXPECT_EQ(0, std::memcmp(t.view.data, fused.data + first_row * row, uint64_t(rows) * row)) << name;
    };
    same("blk.1.attn_q.weight", qkv, 0, 64);
    same("blk.1.attn_k.weight", qkv, 64, 32);
    same("blk.1.attn_v.weight", qkv, 96, 32);
    same("blk.1.ffn_gate.weight", gu, 0, 128);
    same("blk.1.ffn_up.weight", gu, 128, 128);
    EXPECT_FALSE(s.tied_embeddings);
    EXPECT_NE(a.find("output.weight"), nullptr);
}

TEST(ConvertSpec, LlamaUntiedAndTinyStoriesTied) {
    TempDir tmp;
    {
        const Archive a = convert_fixture(tmp, "fixtures/hf-tiny/llama");
        const ModelSpec s = spec_from_json(a.metadata()["spec"]);
        EXPECT_FALSE(s.tied_embeddings);
        EXPECT_FALSE(s.qkv_bias);
        EXPECT_EQ(s.rope.scaling, RopeScaling::none);
        EXPECT_EQ(s.bos_token_id, 1);
        EXPECT_EQ(s.eos_token_ids, std::vector<int>{2});
    }
    {
        // transformers 4 config: rope_theta at top level, tie_word_embeddings true, and a checkpoint
        // that stores the tied matrix only as lm_head.weight.
        const Archive a = convert_fixture(tmp, "models/tinystories-656k");
        const ModelSpec s = spec_from_json(a.metadata()["spec"]);
        EXPECT_TRUE(s.tied_embeddings);
        EXPECT_DOUBLE_EQ(s.rope.theta, 10000.0);
        EXPECT_EQ(s.head_dim, 16);
        EXPECT_EQ(a.find("output.weight"), nullptr);
        SafetensorsFile st((shared_dir() / "models/tinystories-656k/model.safetensors").string());
        const ArchiveTensor& e = a.tensor("token_embd.weight");
        EXPECT_EQ(e.view.shape, (Shape{2048, 128}));
        EXPECT_EQ(0, std::memcmp(e.view.data, st.get("lm_head.weight").data, e.view.nbytes));
    }
}

// Rope scaling variants found in real configs are parsed into the spec (and survive the archive).
TEST(ConvertSpec, RopeScalingVariants) {
    nlohmann::json cfg = read_json(shared_dir() / "fixtures/hf-tiny/llama/config.json");
    cfg["max_position_embeddings"] = 131072;
    cfg["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 500000.0}, {"factor", 8.0},
                              {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                              {"original_max_position_embeddings", 8192}};
    ModelSpec s = spec_from_hf_config(cfg, nullptr, "config.json");
    EXPECT_EQ(s.rope.scaling, RopeScaling::llama3);
    EXPECT_DOUBLE_EQ(s.rope.factor, 8.0);
    EXPECT_EQ(s.rope.original_max_position, 8192);
    EXPECT_DOUBLE_EQ(s.rope.theta, 500000.0);
    EXPECT_EQ(spec_from_json(spec_to_json(s)), s);

    // transformers 4 style: rope_scaling beside rope_theta.
    cfg.erase("rope_parameters");
    cfg["rope_theta"] = 1e6;
    cfg["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
    s = spec_from_hf_config(cfg, nullptr, "config.json");
    EXPECT_EQ(s.rope.scaling, RopeScaling::linear);
    EXPECT_DOUBLE_EQ(s.rope.factor, 4.0);
    EXPECT_DOUBLE_EQ(s.rope.theta, 1e6);

    // yarn without an explicit attention_factor: 0.1 ln(factor) + 1.
    cfg["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
    cfg["max_position_embeddings"] = 131072;
    s = spec_from_hf_config(cfg, nullptr, "config.json");
    EXPECT_EQ(s.rope.scaling, RopeScaling::yarn);
    EXPECT_EQ(s.rope.original_max_position, 32768);
    EXPECT_NEAR(s.rope.attention_factor, 0.1 * std::log(4.0) + 1.0, 1e-12);
    EXPECT_EQ(spec_from_json(spec_to_json(s)), s);

    cfg["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
    EXPECT_THROW(spec_from_hf_config(cfg, nullptr, "config.json"), Error);
}

// The model's tokenizer files are embedded byte for byte.
TEST(ConvertTokenizer, EmbedsTokenizerFilesVerbatim) {
    TempDir tmp;
    const fs::path src = shared_dir() / "models/tinystories-656k";
    const Archive a = convert_fixture(tmp, "models/tinystories-656k");
    EXPECT_EQ(a.metadata()["tokenizer"]["kind"], "hf");
    for (const char* name : {"tokenizer.json", "tokenizer_config.json"}) {
        auto f = a.file(name);
        ASSERT_TRUE(f.has_value()) << name;
        EXPECT_EQ(*f, read_file((src / name).string())) << name;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(f->data()) % 4096, 0u) << name << " is not 4 KiB aligned";
    }
    EXPECT_FALSE(a.file("tok512.bin").has_value());
}

TEST(ConvertTokenizer, AttachesLlama2cTokenizer) {
    TempDir tmp;
    ConvertOptions opt;
    opt.tokenizer_path = (shared_dir() / "models/stories260K/tok512.bin").string();
    const Archive a = convert_fixture(tmp, "models/stories260K/hf", opt);
    EXPECT_NO_THROW(a.verify());
    EXPECT_EQ(a.metadata()["tokenizer"]["kind"], "llama2c");
    auto f = a.file("tok512.bin");
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(*f, read_file(opt.tokenizer_path));
    EXPECT_FALSE(a.file("tokenizer.json").has_value());
}

TEST(ConvertTokenizer, AttachesHfTokenizerWithItsConfig) {
    // note: the model must be one whose vocabulary holds the tokenizer's ids (convert checks), so
    // TinyStories-656K without its own tokenizer files gets them back through --tokenizer.
    TempDir tmp;
    copy_checkpoint(shared_dir() / "models/tinystories-656k", tmp / "src");
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) fs::remove(tmp / "src" / f);
    ConvertOptions opt;
    opt.tokenizer_path = (shared_dir() / "models/tinystories-656k/tokenizer.json").string();
    convert_hf((tmp / "src").string(), (tmp / "m.thin").string(), opt);
    const Archive a = Archive::open((tmp / "m.thin").string());
    EXPECT_EQ(a.metadata()["tokenizer"]["kind"], "hf");
    EXPECT_EQ(*a.file("tokenizer.json"), read_file(opt.tokenizer_path));
    EXPECT_EQ(*a.file("tokenizer_config.json"),
              read_file((shared_dir() / "models/tinystories-656k/tokenizer_config.json").string()));
}

// A sharded checkpoint (two shards + model.safetensors.index.json, built here from the llama
// fixture) converts to the same tensors as the single-file checkpoint.
TEST(ConvertSharded, EqualsUnshardedConversion) {
    TempDir tmp;
    const fs::path src = shared_dir() / "fixtures/hf-tiny/llama";
    const fs::path sharded = tmp / "sharded";
    fs::create_directories(sharded);
    for (const char* f : {"config.json", "generation_config.json"}) fs::copy_file(src / f, sharded / f);
    const std::vector<StTensor> all = read_safetensors(src / "model.safetensors");
    const std::vector<StTensor> a_half(all.begin(), all.begin() + long(all.size() / 2)),
        b_half(all.begin() + long(all.size() / 2), all.end());
    const char* names[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
    write_safetensors(sharded / names[0], a_half);
    write_safetensors(sharded / names[1], b_half);
    nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
    for (const auto& t : a_half) index["weight_map"][t.name] = names[0];
    for (const auto& t : b_half) index["weight_map"][t.name] = names[1];
    write_file_atomic((sharded / "model.safetensors.index.json").string(), index.dump(2));

    for (const std::optional<DType> dtype : {std::optional<DType>{}, std::optional<DType>{DType::bf16}}) {
        ConvertOptions opt;
        opt.dtype = dtype;
        convert_hf(src.string(), (tmp / "single.thin").string(), opt);
        convert_hf(sharded.string(), (tmp / "sharded.thin").string(), opt);
        const Archive one = Archive::open((tmp / "single.thin").string());
        const Archive two = Archive::open((tmp / "sharded.thin").string());
        EXPECT_NO_THROW(two.verify());
        check_tensors(two, sharded, dtype);
        ASSERT_EQ(one.tensors().size(), two.tensors().size());
        for (size_t i = 0; i < one.tensors().size(); ++i) {
            const auto &x = one.tensors()[i], &y = two.tensors()[i];
            EXPECT_EQ(x.view.name, y.view.name);
            EXPECT_EQ(x.offset, y.offset) << x.view.name;  // same layout too
            EXPECT_EQ(x.xxh3, y.xxh3) << x.view.name;
            ASSERT_EQ(x.view.nbytes, y.view.nbytes);
            EXPECT_EQ(0, std::memcmp(x.view.data, y.view.data, x.view.nbytes)) << x.view.name;
        }
        EXPECT_EQ(one.metadata()["spec"], two.metadata()["spec"]);
        std::set<std::string> files;
        for (const auto& f : two.metadata()["provenance"]["source_files"]) files.insert(f["name"]);
        EXPECT_TRUE(files.count(names[0]) && files.count(names[1]) && files.count("model.safetensors.index.json"));
    }
}

// A mixture of experts stored fused (transformers v5's 3-D gate_up_proj / down_proj, built here
// from the per-expert fixtures) converts to the very archive the per-expert checkpoint gives: the
// same tensors, bytes, checksums and layout, so nothing after convert can tell them apart.
TEST(ConvertFusedExperts, EqualPerExpertConversion) {
    for (const char* fixture : {"qwen3_moe", "mixtral", "qwen3_5_moe_text"}) {
        SCOPED_TRACE(fixture);
        TempDir tmp;
        const fs::path src = shared_dir() / "fixtures/hf-tiny" / fixture, fused = tmp / "fused";
        write_fused_experts_checkpoint(src, fused);
        {
            SafetensorsFile st((fused / "model.safetensors").string());
            ASSERT_NE(st.find("model.layers.1.mlp.experts.gate_up_proj"), nullptr);
            ASSERT_EQ(st.find("model.layers.1.mlp.experts.0.gate_proj.weight"), nullptr);
        }
        for (const std::optional<DType> dtype : {std::optional<DType>{}, std::optional<DType>{DType::bf16}}) {
            ConvertOptions opt;
            opt.dtype = dtype;
            const ConvertResult r1 = convert_hf(src.string(), (tmp / "per_expert.thin").string(), opt);
            const ConvertResult r2 = convert_hf(fused.string(), (tmp / "fused.thin").string(), opt);
            EXPECT_EQ(r1.bytes_read, r2.bytes_read);  // every fused byte read once
            const Archive one = Archive::open((tmp / "per_expert.thin").string());
            const Archive two = Archive::open((tmp / "fused.thin").string());
            EXPECT_NO_THROW(two.verify());
            ASSERT_EQ(one.tensors().size(), two.tensors().size());
            for (size_t i = 0; i < one.tensors().size(); ++i) {
                const auto &x = one.tensors()[i], &y = two.tensors()[i];
                EXPECT_EQ(x.view.name, y.view.name);
                EXPECT_EQ(x.view.shape, y.view.shape) << x.view.name;
                EXPECT_EQ(x.offset, y.offset) << x.view.name;
                EXPECT_EQ(x.xxh3, y.xxh3) << x.view.name;
                ASSERT_EQ(x.view.nbytes, y.view.nbytes);
                EXPECT_EQ(0, std::memcmp(x.view.data, y.view.data, x.view.nbytes)) << x.view.name;
            }
            EXPECT_EQ(one.metadata()["spec"], two.metadata()["spec"]);
        }
    }
}

// The layout Qwen/Qwen3.5-35B-A3B publishes: Qwen3_5MoeForConditionalGeneration, the text model
// under model.language_model.*, its experts fused. It converts to the per-expert fixture's tensors.
TEST(ConvertFusedExperts, PublishedQwen3_5MoeImageTextLayout) {
    TempDir tmp;
    const fs::path src = shared_dir() / "fixtures/hf-tiny/qwen3_5_moe_text", ck = tmp / "vl";
    write_fused_experts_checkpoint(src, ck);
    nlohmann::json text = read_json(src / "config.json");
    text.erase("architectures");
    const nlohmann::json vl = {{"architectures", {"Qwen3_5MoeForConditionalGeneration"}}, {"text_config", text}};
    std::ofstream(ck / "config.json") << vl.dump(2);
    std::vector<StTensor> ts = read_safetensors(ck / "model.safetensors");
    for (auto& t : ts)
        if (t.name.rfind("model.", 0) == 0) t.name = "model.language_model." + t.name.substr(6);
    write_safetensors(ck / "model.safetensors", ts);
    convert_hf(src.string(), (tmp / "per_expert.thin").string(), {});
    convert_hf(ck.string(), (tmp / "vl.thin").string(), {});
    const Archive one = Archive::open((tmp / "per_expert.thin").string());
    const Archive two = Archive::open((tmp / "vl.thin").string());
    ASSERT_EQ(one.tensors().size(), two.tensors().size());
    for (size_t i = 0; i < one.tensors().size(); ++i) {
        EXPECT_EQ(one.tensors()[i].view.name, two.tensors()[i].view.name);
        EXPECT_EQ(one.tensors()[i].xxh3, two.tensors()[i].xxh3) << one.tensors()[i].view.name;
    }
}

// bf16 and f16 sources: auto keeps the stored dtype bit for bit; explicit dtypes cast from it.
TEST(ConvertDtype, HalfSourcesKeptByAutoAndCastOnRequest) {
    TempDir tmp;
    const fs::path src = shared_dir() / "fixtures/hf-tiny/qwen2";
    for (DType half : {DType::bf16, DType::f16}) {
        SCOPED_TRACE(std::string(dtype_name(half)));
        const fs::path dir = tmp / std::string(dtype_name(half));
        fs::create_directories(dir);
        for (const char* f : {"config.json", "generation_config.json"}) fs::copy_file(src / f, dir / f);
        std::vector<StTensor> ts = read_safetensors(src / "model.safetensors");
        for (auto& t : ts) {
            t.bytes = cast_bytes(reinterpret_cast<const uint8_t*>(t.bytes.data()), DType::f32, half, t.bytes.size() / 4);
            t.dtype = half;
        }
        write_safetensors(dir / "model.safetensors", ts);
        for (const std::optional<DType> dtype :
             {std::optional<DType>{}, std::optional<DType>{DType::f32}, std::optional<DType>{DType::bf16},
              std::optional<DType>{DType::f16}}) {
            SCOPED_TRACE(dtype_label(dtype));
            const fs::path out = tmp / "out.thin";
            ConvertOptions opt;
            opt.dtype = dtype;
            convert_hf(dir.string(), out.string(), opt);
            const Archive a = Archive::open(out.string());
            EXPECT_NO_THROW(a.verify());
            check_tensors(a, dir, dtype);
            if (!dtype) {
                for (const auto& t : a.tensors()) EXPECT_EQ(t.view.dtype, half) << t.view.name;
            }
        }
    }
}

// The cast really rounds to nearest even at the tensor level (not only in the scalar helpers): a
// tensor holding ties and edge values converts to the bf16/f16 bit patterns PyTorch produces.
TEST(ConvertDtype, CastRoundsToNearestEven) {
    TempDir tmp;
    const fs::path src = shared_dir() / "fixtures/hf-tiny/llama";
    const fs::path dir = tmp / "edge";
    fs::create_directories(dir);
    for (const char* f : {"config.json", "generation_config.json"}) fs::copy_file(src / f, dir / f);
    std::vector<StTensor> ts = read_safetensors(src / "model.safetensors");
    // model.norm.weight [64]: put known values in its first entries.
    const float edge[] = {1.0f + 1.0f / 256, 1.0f + 3.0f / 256, 1.0f + 1.0f / 2048, 65520.0f, -2.5f, 0.0f};
    for (auto& t : ts)
        if (t.name == "model.norm.weight") std::memcpy(t.bytes.data(), edge, sizeof edge);
    write_safetensors(dir / "model.safetensors", ts);
    {
        ConvertOptions opt;
        opt.dtype = DType::bf16;
        convert_hf(dir.string(), (tmp / "b.thin").string(), opt);
        const Archive a = Archive::open((tmp / "b.thin").string());
        uint16_t got[6];
        std::memcpy(got, a.tensor("output_norm.weight").view.data, sizeof got);
        EXPECT_EQ(got[0], 0x3f80);  // tie -> even
        EXPECT_EQ(got[1], 0x3f82);  // tie -> even (up)
        EXPECT_EQ(got[4], 0xc020);  // -2.5
    }
    {
        ConvertOptions opt;
        opt.dtype = DType::f16;
        // 65520 becomes Inf in f16: refused unless asked for (test_convert_hardening.cpp).
        EXPECT_THROW(convert_hf(dir.string(), (tmp / "h.thin").string(), opt), Error);
        opt.allow_nonfinite = true;
        convert_hf(dir.string(), (tmp / "h.thin").string(), opt);
        const Archive a = Archive::open((tmp / "h.thin").string());
        uint16_t got[6];
        std::memcpy(got, a.tensor("output_norm.weight").view.data, sizeof got);
        EXPECT_EQ(got[2], 0x3c00);  // 1 + 2^-11 ties to 1.0
        EXPECT_EQ(got[3], 0x7c00);  // 65520 overflows to inf
        EXPECT_EQ(got[5], 0x0000);
    }
}

TEST(ConvertDtype, ParsesDtypeFlag) {
    EXPECT_EQ(parse_convert_dtype("auto"), std::nullopt);
    EXPECT_EQ(parse_convert_dtype("bf16"), DType::bf16);
    EXPECT_EQ(parse_convert_dtype("f16"), DType::f16);
    EXPECT_EQ(parse_convert_dtype("f32"), DType::f32);
    try {
        parse_convert_dtype("int8");
        FAIL() << "int8 accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--dtype"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("int8"), std::string::npos) << e.what();
    }
}

}  // namespace
