// HF config.json -> ModelSpec for config variants the fixtures do not cover (older Gemma 3 configs,
// Mistral / Qwen sliding windows, Llama attention biases, partial rotary, bad values), and the
// tensor plan that follows from a spec. Configs start from a fixture and change one thing.
#include "test_convert_util.h"

#include "model/hf_config.h"
#include "model/model_spec.h"
#include "model/tensor_names.h"

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
        EXPECT_EQ(s.layer_attn[size_t(i)], (i + 1) % 6 == 0 ? AttnKind::full : AttnKind::sliding) << i;
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
    for (auto k : s.layer_attn) EXPECT_EQ(k, AttnKind::sliding);
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
    EXPECT_NE(error_of(c).find("vocab_size must be positive"), std::string::npos) << error_of(c);
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

}  // namespace
