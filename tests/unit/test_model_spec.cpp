// HF config.json -> ModelSpec for config variants the fixtures do not cover (older Gemma 3 configs,
// Mistral / Qwen sliding windows, Llama attention biases, partial rotary, bad values), and the
// tensor plan that follows from a spec. Configs start from a fixture and change one thing.
#include "test_convert_util.h"

#include "model/hf_config.h"
#include "model/model_spec.h"
#include "model/tensor_names.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace tt;
using namespace tt::test;

namespace {

nlohmann::json fixture_config(const char* name) {
    return read_json(shared_dir() / "fixtures/hf-tiny" / name / "config.json");
}

ModelSpec spec_of(const nlohmann::json& c) { return spec_from_hf_config(c, nullptr, "config.json"); }

std::string error_of(const nlohmann::json& c) {
    try {
        spec_of(c);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(ModelSpec, GemmaOlderConfigUsesSlidingWindowPattern) {
    nlohmann::json c = fixture_config("gemma3_text");
    c.erase("layer_types");
    c.erase("_sliding_window_pattern");
    c["num_hidden_layers"] = 12;
    c["sliding_window_pattern"] = 6;
    c.erase("rope_parameters");
    c["rope_theta"] = 1e6;
    c["rope_local_base_freq"] = 1e4;
    const ModelSpec s = spec_of(c);
    for (int i = 0; i < 12; ++i)
        EXPECT_EQ(s.layers[size_t(i)].attn, (i + 1) % 6 == 0 ? AttnKind::full : AttnKind::sliding) << i;
    EXPECT_DOUBLE_EQ(s.rope.theta, 1e6);
    EXPECT_DOUBLE_EQ(s.rope_local.theta, 1e4);
    EXPECT_EQ(&s.rope_for_layer(5), &s.rope);
    EXPECT_EQ(&s.rope_for_layer(4), &s.rope_local);
    EXPECT_EQ(spec_from_json(spec_to_json(s)), s);
}

TEST(ModelSpec, MistralSlidingWindowAppliesToEveryLayer) {
    nlohmann::json c = fixture_config("mistral");
    EXPECT_EQ(spec_of(c).sliding_window, 0);  // the fixture has sliding_window null
    c["sliding_window"] = 4096;
    const ModelSpec s = spec_of(c);
    EXPECT_EQ(s.sliding_window, 4096);
    for (const auto& l : s.layers) EXPECT_EQ(l.attn, AttnKind::sliding);
}

TEST(ModelSpec, QwenSlidingWindowOnlyWhenEnabled) {
    nlohmann::json c = fixture_config("qwen2");
    c["sliding_window"] = 4096;
    c.erase("layer_types");
    EXPECT_EQ(spec_of(c).sliding_window, 0);  // use_sliding_window false
    c["use_sliding_window"] = true;
    EXPECT_EQ(spec_of(c).sliding_window, 4096);
}

TEST(ModelSpec, LlamaAttentionBiasAndPartialRotary) {
    nlohmann::json c = fixture_config("llama");
    c["attention_bias"] = true;
    c["mlp_bias"] = true;
    c["partial_rotary_factor"] = 0.5;
    const ModelSpec s = spec_of(c);
    EXPECT_TRUE(s.qkv_bias);
    EXPECT_TRUE(s.o_bias);
    EXPECT_TRUE(s.mlp_bias);
    EXPECT_EQ(s.rope.rotary_dim, 8);  // head_dim 16 * 0.5
    std::set<std::string> names;
    for (const auto& p : plan_tensors(s)) names.insert(p.name);
    for (const char* n : {"blk.0.attn_q.bias", "blk.0.attn_output.bias", "blk.1.ffn_down.bias", "blk.1.ffn_gate.bias"})
        EXPECT_TRUE(names.count(n)) << n;
}

TEST(ModelSpec, HeadDimDefaultsToHiddenOverHeads) {
    nlohmann::json c = fixture_config("llama");
    c.erase("head_dim");
    c["hidden_size"] = 96;
    c["num_attention_heads"] = 6;
    c["num_key_value_heads"] = 3;
    const ModelSpec s = spec_of(c);
    EXPECT_EQ(s.head_dim, 16);
    EXPECT_FLOAT_EQ(s.attn_scale, 0.25f);
}

TEST(ModelSpec, BadConfigValuesNameTheKey) {
    nlohmann::json c = fixture_config("llama");
    c["num_key_value_heads"] = 3;
    EXPECT_NE(error_of(c).find("not a multiple"), std::string::npos) << error_of(c);
    c = fixture_config("llama");
    c["num_hidden_layers"] = "2";
    EXPECT_NE(error_of(c).find("'num_hidden_layers' must be an integer"), std::string::npos) << error_of(c);
    c = fixture_config("llama");
    c["hidden_act"] = "relu";
    EXPECT_NE(error_of(c).find("activation 'relu'"), std::string::npos) << error_of(c);
    c = fixture_config("llama");
    c["vocab_size"] = 0;
    EXPECT_NE(error_of(c).find("'vocab_size' is 0, outside the supported range"), std::string::npos) << error_of(c);
    c = fixture_config("gemma3_text");
    c["layer_types"] = {"sliding_attention"};
    EXPECT_NE(error_of(c).find("'layer_types'"), std::string::npos) << error_of(c);
    c = fixture_config("llama");
    c["architectures"] = nlohmann::json::array();
    EXPECT_NE(error_of(c).find("architectures"), std::string::npos) << error_of(c);
}

// The plan for every fixture: block order, one block per layer, and shapes from the spec.
TEST(ModelSpec, TensorPlanFollowsTheSpec) {
    for (const char* name : {"llama", "mistral", "qwen2", "qwen3", "phi3", "gemma3_text"}) {
        SCOPED_TRACE(name);
        const ModelSpec s = spec_of(fixture_config(name));
        const auto plan = plan_tensors(s);
        std::vector<std::string> blocks;
        for (const auto& p : plan)
            if (blocks.empty() || blocks.back() != p.block) blocks.push_back(p.block);
        ASSERT_EQ(int(blocks.size()), s.n_layers + 2);
        EXPECT_EQ(blocks.front(), "embed");
        EXPECT_EQ(blocks.back(), "output");
        uint64_t params = 0;
        std::set<std::string> names;
        for (const auto& p : plan) {
            EXPECT_TRUE(names.insert(p.name).second) << p.name << " planned twice";
            uint64_t n = 1;
            for (auto d : p.shape) n *= uint64_t(d);
            params += n;
            if (p.layer >= 0) {
                EXPECT_EQ(p.block, "layer." + std::to_string(p.layer));
            }
        }
        EXPECT_EQ(params, s.n_params());
        EXPECT_EQ(names.count("output.weight"), s.tied_embeddings ? 0u : 1u);
    }
}


// Integers are read as 64-bit and range-checked (2^32 + 2 layers used to read as 2), and sizes are
// bounded before any per-layer table is built (10^9 layers used to grow memory without bound, a
// negative count threw std::length_error). Each message names the file and the field.
TEST(ModelSpec, IntegerFieldsAreRangeCheckedAs64Bit) {
    struct Case {
        const char* key;
        nlohmann::json value;
        const char* needle;
    };
    const Case cases[] = {
        {"num_hidden_layers", 4294967298ll, "'num_hidden_layers' is 4294967298, outside the supported range [1, 1024]"},
        {"num_hidden_layers", 1000000000, "'num_hidden_layers' is 1000000000, outside"},
        {"num_hidden_layers", -1, "'num_hidden_layers' is -1, outside"},
        {"num_hidden_layers", 18446744073709551615ull, "'num_hidden_layers' is 18446744073709551615, outside"},
        {"hidden_size", 4294967360ll, "'hidden_size' is 4294967360"},
        {"vocab_size", -5, "'vocab_size' is -5"},
        {"num_attention_heads", 0, "'num_attention_heads' is 0"},
        {"max_position_embeddings", 1ll << 40, "'max_position_embeddings' is 1099511627776"},
        {"sliding_window", -1, "'sliding_window' is -1"},
    };
    for (const auto& k : cases) {
        nlohmann::json c = fixture_config("llama");
        c[k.key] = k.value;
        const std::string e = error_of(c);
        EXPECT_NE(e.find(k.needle), std::string::npos) << k.key << ": " << e;
        EXPECT_EQ(e.rfind("config.json: ", 0), 0u) << e;
    }
}

// Every field is read through a typed helper: a wrong JSON type is an error naming the file and
// the full field path, never nlohmann's own type_error (which named neither).
TEST(ModelSpec, WrongTypesNameTheFileAndField) {
    auto expect = [](nlohmann::json c, nlohmann::json gen, const std::string& needle) {
        try {
            spec_from_hf_config(c, gen, "dir/config.json", "dir/generation_config.json");
            ADD_FAILURE() << "accepted: " << needle;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    const nlohmann::json base = fixture_config("llama");
    nlohmann::json c = base;
    c["eos_token_id"] = "2";
    expect(c, nullptr, "dir/config.json: 'eos_token_id' must be an integer or a list of integers, got \"2\"");
    c = base;
    c["eos_token_id"] = {2, "x"};
    expect(c, nullptr, "'eos_token_id' must be an integer or a list of integers");
    c = base;
    c["bos_token_id"] = 300;  // past vocab_size 256: the embedding lookup would read out of bounds
    expect(c, nullptr, "bos_token_id 300 is outside the vocabulary (vocab_size 256)");
    expect(base, {{"eos_token_id", "2"}}, "dir/generation_config.json: 'eos_token_id' must be an integer");
    expect(base, {{"temperature", "hot"}}, "dir/generation_config.json: 'temperature' must be a number");
    expect(base, {{"do_sample", 1}}, "dir/generation_config.json: 'do_sample' must be true or false");
    expect(base, {{"top_k", 2.5}}, "dir/generation_config.json: 'top_k' must be an integer");
    expect(base, nlohmann::json::array(), "dir/generation_config.json: the file must be a JSON object");
    c = base;
    c["tie_word_embeddings"] = "yes";
    expect(c, nullptr, "dir/config.json: 'tie_word_embeddings' must be true or false, got \"yes\"");
    c = base;
    c["attention_bias"] = 1;
    expect(c, nullptr, "'attention_bias' must be true or false");
    c = base;
    c["rope_parameters"]["factor"] = "2";
    c["rope_parameters"]["rope_type"] = "linear";
    expect(c, nullptr, "dir/config.json: 'rope_parameters.factor' must be a number, got \"2\"");
    c = base;
    c["rope_parameters"]["rope_type"] = 3;
    expect(c, nullptr, "'rope_parameters.rope_type' must be a string");
    c = base;
    c["rope_parameters"] = "default";
    expect(c, nullptr, "'rope_parameters' must be an object");
    c = base;
    c["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"truncate", "no"}};
    expect(c, nullptr, "'rope_parameters.truncate' must be true or false");
    c = base;
    c["rope_parameters"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"original_max_position_embeddings", 4294967296ll}};
    expect(c, nullptr, "'rope_parameters.original_max_position_embeddings' is 4294967296, outside");
    c = base;
    c.erase("rope_parameters");
    c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", nlohmann::json::array()}};
    expect(c, nullptr, "'rope_scaling.factor' must be a number");
    c = base;
    c["partial_rotary_factor"] = 1e300;  // int(head_dim * 1e300) was undefined behaviour
    expect(c, nullptr, "'partial_rotary_factor' must be in (0, 1]");
    c = base;
    c["hidden_act"] = 7;
    expect(c, nullptr, "'hidden_act' must be a string");
    c = fixture_config("gemma3_text");
    c["layer_types"] = {1, 2, 3};
    expect(c, nullptr, "'layer_types' must be a list of strings");
    c = fixture_config("qwen2");
    c["use_sliding_window"] = "true";
    expect(c, nullptr, "'use_sliding_window' must be true or false");
}

// The archive's spec is read with the same checks: a 64-bit n_layers is refused, not truncated.
TEST(ModelSpec, ArchiveSpecIntegersAreRangeChecked) {
    const ModelSpec s = spec_of(fixture_config("llama"));
    nlohmann::json j = spec_to_json(s);
    j["n_layers"] = 4294967298ll;  // would read as 2 and match layer_attn's two entries
    try {
        spec_from_json(j, "a.thin: spec");
        ADD_FAILURE() << "accepted a 64-bit n_layers";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("a.thin: spec: 'n_layers' is 4294967298, outside"), std::string::npos) << e.what();
    }
    j = spec_to_json(s);
    j["rope"]["truncate"] = "yes";
    EXPECT_THROW(spec_from_json(j, "a.thin: spec"), Error);
    j = spec_to_json(s);
    j["eos_token_ids"] = "2";
    try {
        spec_from_json(j, "a.thin: spec");
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("a.thin: spec: 'eos_token_ids' must be"), std::string::npos) << e.what();
    }
}

}  // namespace

// ---- layers of different kinds: mixture-of-experts configs ----

namespace {
std::vector<FfnKind> ffn_kinds(const ModelSpec& s) {
    std::vector<FfnKind> out;
    for (const auto& l : s.layers) out.push_back(l.ffn);
    return out;
}
}  // namespace

TEST(ModelSpec, Qwen3MoeLayersAndSizes) {
    nlohmann::json c = fixture_config("qwen3_moe");
    ModelSpec s = spec_of(c);
    EXPECT_EQ(s.arch, Arch::qwen3_moe);
    EXPECT_TRUE(s.qk_norm);
    EXPECT_EQ(s.moe.n_experts, 8);  // transformers 5 writes num_local_experts
    EXPECT_EQ(s.moe.top_k, 2);
    EXPECT_EQ(s.moe.expert_ffn_dim, 32);
    EXPECT_TRUE(s.moe.norm_topk);
    EXPECT_EQ(s.moe.shared_ffn_dim, 0);
    EXPECT_EQ(ffn_kinds(s), (std::vector<FfnKind>{FfnKind::moe, FfnKind::moe}));
    EXPECT_EQ(spec_from_json(spec_to_json(s)), s);
    // The Hub's Qwen3-30B-A3B names the count num_experts; norm_topk_prob false is kept.
    c.erase("num_local_experts");
    c["num_experts"] = 16;
    c["norm_topk_prob"] = false;
    s = spec_of(c);
    EXPECT_EQ(s.moe.n_experts, 16);
    EXPECT_FALSE(s.moe.norm_topk);
    // mlp_only_layers and decoder_sparse_step mix dense layers in.
    c["num_hidden_layers"] = 6;
    c["mlp_only_layers"] = {0};
    c["decoder_sparse_step"] = 2;
    s = spec_of(c);
    EXPECT_EQ(ffn_kinds(s), (std::vector<FfnKind>{FfnKind::dense, FfnKind::moe, FfnKind::dense, FfnKind::moe, FfnKind::dense,
                                                  FfnKind::moe}));
    EXPECT_EQ(spec_from_json(spec_to_json(s)), s);
    // Dense layers are intermediate_size wide, experts moe_intermediate_size.
    const auto plan = plan_tensors(s);
    auto shape_of = [&](const std::string& name) {
        for (const auto& p : plan)
            if (p.name == name) return p.shape;
        return Shape{};
    };
    EXPECT_EQ(shape_of("blk.0.ffn_gate.weight"), (Shape{128, 64}));
    EXPECT_EQ(shape_of("blk.1.expert.15.ffn_down.weight"), (Shape{64, 32}));
    EXPECT_EQ(shape_of("blk.1.ffn_gate_inp.weight"), (Shape{16, 64}));
    EXPECT_EQ(shape_of("blk.1.ffn_gate.weight"), Shape{});  // a sparse layer has no dense MLP
    // Every expert is a block of its own, after its layer's block.
    for (const auto& p : plan)
        if (p.expert >= 0) {
            EXPECT_EQ(p.block, expert_block_name(p.layer, p.expert));
        }
    // Parameters: every expert counted, and those of one token (top 2 of 16).
    const uint64_t per_expert = 3 * 64 * 32;
    EXPECT_EQ(s.n_params() - s.n_active_params(), 3 * (16 - 2) * per_expert);
}

TEST(ModelSpec, MixtralExpertsAreIntermediateSizeAndRenormalised) {
    const ModelSpec s = spec_of(fixture_config("mixtral"));
    EXPECT_EQ(s.arch, Arch::mixtral);
    EXPECT_FALSE(s.qk_norm);
    EXPECT_EQ(s.moe.n_experts, 4);
    EXPECT_EQ(s.moe.expert_ffn_dim, 96);
    EXPECT_TRUE(s.moe.norm_topk);
    EXPECT_EQ(ffn_kinds(s), (std::vector<FfnKind>{FfnKind::moe, FfnKind::moe}));
    std::set<std::string> hf;
    for (const auto& p : plan_tensors(s)) hf.insert(p.hf_name);
    EXPECT_TRUE(hf.count("model.layers.1.block_sparse_moe.experts.3.w2.weight"));
    EXPECT_TRUE(hf.count("model.layers.0.block_sparse_moe.gate.weight"));
}

TEST(ModelSpec, SharedExpertWithSigmoidGateIsRepresentable) {
    // Qwen2-MoE / Qwen3.5-MoE: a shared expert beside the routed ones, its output gated.
    nlohmann::json c = fixture_config("qwen3_moe");
    c["shared_expert_intermediate_size"] = 48;
    const ModelSpec s = spec_of(c);
    EXPECT_EQ(s.moe.shared_ffn_dim, 48);
    EXPECT_TRUE(s.moe.shared_gate);
    EXPECT_EQ(spec_from_json(spec_to_json(s)), s);
    std::set<std::string> names;
    for (const auto& p : plan_tensors(s)) names.insert(p.name + " <- " + p.hf_name);
    EXPECT_TRUE(names.count("blk.0.ffn_up_shexp.weight <- model.layers.0.mlp.shared_expert.up_proj.weight"));
    EXPECT_TRUE(names.count("blk.1.ffn_gate_inp_shexp.weight <- model.layers.1.mlp.shared_expert_gate.weight"));
}

TEST(ModelSpec, InconsistentMoeConfigsNameTheField) {
    nlohmann::json c = fixture_config("qwen3_moe");
    c["num_experts_per_tok"] = 9;
    EXPECT_NE(error_of(c).find("'num_experts_per_tok' 9 is more than 'num_local_experts' 8"), std::string::npos) << error_of(c);
    c = fixture_config("qwen3_moe");
    c.erase("moe_intermediate_size");
    EXPECT_NE(error_of(c).find("'moe_intermediate_size'"), std::string::npos) << error_of(c);
    c = fixture_config("qwen3_moe");
    c["num_local_experts"] = 0;
    EXPECT_NE(error_of(c).find("'num_local_experts'"), std::string::npos) << error_of(c);
    c = fixture_config("qwen3_moe");
    c["mlp_only_layers"] = {5};
    EXPECT_NE(error_of(c).find("'mlp_only_layers' names layer 5, but the model has 2 layers"), std::string::npos) << error_of(c);
    c = fixture_config("mixtral");
    c.erase("num_experts_per_tok");
    EXPECT_NE(error_of(c).find("'num_experts_per_tok'"), std::string::npos) << error_of(c);
}

// The archive's spec carries a format version: version 1 (no "format_version", "layer_attn")
// is what ThinTensor wrote before layers had kinds and keeps loading; a newer one is refused.
TEST(ModelSpec, SpecFormatVersions) {
    const ModelSpec dense = spec_of(fixture_config("gemma3_text"));
    nlohmann::json v2 = spec_to_json(dense);
    EXPECT_EQ(v2["format_version"], k_spec_version);
    nlohmann::json v1 = v2;
    v1.erase("format_version");
    v1.erase("layers");
    v1.erase("moe");
    v1["layer_attn"] = nlohmann::json::array();
    for (const auto& l : dense.layers) v1["layer_attn"].push_back(l.attn == AttnKind::sliding ? "sliding" : "full");
    EXPECT_EQ(spec_from_json(v1), dense);
    nlohmann::json v3 = v2;
    v3["format_version"] = k_spec_version + 1;
    try {
        spec_from_json(v3, "m.thin: spec");
        ADD_FAILURE() << "a newer spec version loaded";
    } catch (const Error& e) {
        const std::string want = fmt::format("m.thin: spec: spec format version {} was written by a newer ThinTensor", k_spec_version + 1);
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
    nlohmann::json bad = v2;
    bad["layers"][0]["ffn"] = "hyper";
    try {
        spec_from_json(bad, "m.thin: spec");
        ADD_FAILURE() << "an unknown FFN kind loaded";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("layers[0]: unknown layer FFN kind 'hyper'"), std::string::npos) << e.what();
    }
    // A dense model that carries MoE sizes is inconsistent.
    bad = v2;
    bad["moe"]["n_experts"] = 4;
    EXPECT_THROW(spec_from_json(bad), Error);
}
