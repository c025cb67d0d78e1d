// Gemma 4's text model on the CPU reference (issue #18), beyond the fixture's logits
// (tests/e2e/validate_fixtures.sh):
// - config.json -> ModelSpec: per_layer_config (and the older global_head_dim), KV sharing, RoPE per
//   layer type, the double-wide MLP, attention_k_eq_v, and clear refusals of what is not run;
// - the tensor plan: KV-shared layers have no k/v weights, k_eq_v layers no v;
// - the image/audio-text layout (Gemma4ForConditionalGeneration) converts to the same model, its
//   towers skipped;
// - attention_k_eq_v computes what a model whose v_proj equals its k_proj computes;
// - prefill equals token-by-token decode (the shared layers read the cache of their source);
// - the planner counts no KV cache for KV-shared layers; CUDA and the host path refuse the model;
// - the per-layer table and projection are archive blocks of their own, which the planner places
//   (the table in registered host memory), and an archive of the older layout is refused.
#include "test_convert_util.h"

#include "convert/convert.h"
#include "format/archive.h"
#include "model/archive_spec.h"
#include "model/hf_config.h"
#include "model/model_spec.h"
#include "model/tensor_names.h"
#include "model/weights.h"
#include "runtime/backend.h"
#include "runtime/device_buffers.h"
#include "runtime/plan.h"
#include "runtime/rope.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

using namespace tt;
using tt::test::shared_dir;
using tt::test::TempDir;
namespace fs = std::filesystem;

namespace {

fs::path fixture() { return shared_dir() / "fixtures/hf-tiny/gemma4_text"; }
nlohmann::json fixture_config() { return tt::test::read_json(fixture() / "config.json"); }

ModelSpec spec_of(const nlohmann::json& config) {
    return spec_from_hf_config(config, nlohmann::json::object(), "g4/config.json", "g4/generation_config.json");
}

void expect_config_error(const nlohmann::json& config, const std::string& needle) {
    try {
        spec_of(config);
        ADD_FAILURE() << "expected an error containing: " << needle;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

std::unique_ptr<Backend> cpu_backend(const Archive& a) {
    BackendOptions bo;
    bo.device = "cpu";
    bo.n_threads = 1;
    return make_backend(a, bo);
}

std::vector<int32_t> random_tokens(int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> d(0, 255);
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = d(rng);
    return t;
}

std::vector<float> logits_of(const std::string& archive, const std::vector<int32_t>& tokens) {
    const Archive a = Archive::open(archive);
    auto be = cpu_backend(a);
    const auto l = be->forward(tokens, true);
    return {l.begin(), l.end()};
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double m = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
    return m;
}

bool planned(const ModelSpec& s, Role r, int layer) {
    for (const auto& p : plan_tensors(s))
        if (p.role == r && p.layer == layer) return true;
    return false;
}

}  // namespace

TEST(Gemma4, ConfigOfTheFixture) {
    const ModelSpec s = spec_of(fixture_config());
    EXPECT_EQ(s.arch, Arch::gemma4);
    ASSERT_EQ(s.n_layers, 6);
    // per_layer_config: the full-attention layers 2 and 5 have head_dim 32, the others 16.
    for (int il = 0; il < 6; ++il) EXPECT_EQ(s.layer_head_dim(il), il == 2 || il == 5 ? 32 : 16) << il;
    EXPECT_EQ(s.layer_q_dim(2), 128);
    EXPECT_EQ(s.layer_kv_dim(2), 32);
    // num_kv_shared_layers 2: layer 4 (sliding) reads layer 3's cache, layer 5 (full) layer 2's.
    EXPECT_EQ(s.layers[4].kv_from, 3);
    EXPECT_EQ(s.layers[5].kv_from, 2);
    for (int il = 0; il < 6; ++il) EXPECT_EQ(s.has_kv(il), il < 4) << il;
    EXPECT_EQ(s.kv_layer(5), 2);
    // RoPE per layer type: proportional on full layers (4 of 16 pairs at theta 1e6), default on sliding.
    EXPECT_EQ(s.rope.scaling, RopeScaling::proportional);
    EXPECT_EQ(s.rope.rotary_dim, 32);
    EXPECT_EQ(s.rope.rotated_pairs, 4) << "int(0.25 * 32 // 2)";
    EXPECT_EQ(s.rope.theta, 1e6);
    EXPECT_EQ(s.rope_local.scaling, RopeScaling::none);
    EXPECT_EQ(s.rope_local.rotary_dim, 16);
    EXPECT_EQ(s.rope_local.theta, 10000.0);
    EXPECT_EQ(s.sliding_window, 8);
    // The rest of Gemma 4's description.
    EXPECT_EQ(s.attn_scale, 1.0f);
    EXPECT_EQ(s.norm_weight_offset, 0.0f);
    EXPECT_TRUE(s.qk_norm && s.v_norm && s.sandwich_norm && s.layer_scalar && s.tied_embeddings);
    EXPECT_EQ(s.per_layer_dim, 8);
    EXPECT_EQ(s.per_layer_vocab, 256);
    EXPECT_EQ(s.embed_scale, 8.0f);
    EXPECT_EQ(s.final_softcap, 30.0f);
    EXPECT_EQ(s.activation, Activation::gelu_tanh);
    // Stored and read back (spec format 4).
    EXPECT_EQ(spec_from_json(spec_to_json(s)), s);
    // The tensor plan: shared layers have queries only; the per-layer tables sit in blocks of their own.
    EXPECT_TRUE(planned(s, Role::attn_k, 3) && planned(s, Role::attn_v, 3) && planned(s, Role::attn_k_norm, 3));
    for (int il : {4, 5}) {
        EXPECT_TRUE(planned(s, Role::attn_q, il) && planned(s, Role::attn_q_norm, il) && planned(s, Role::attn_o, il));
        EXPECT_FALSE(planned(s, Role::attn_k, il) || planned(s, Role::attn_v, il) || planned(s, Role::attn_k_norm, il));
    }
    for (const auto& p : plan_tensors(s)) {
        if (p.role == Role::per_layer_token_embd) { EXPECT_EQ(p.shape, (Shape{256, 48})); }
        // The table is a block of its own (host-mapped by the planner), the projection and its norm another.
        if (p.role == Role::per_layer_token_embd) { EXPECT_EQ(p.block, "per_layer_embd"); }
        if (p.role == Role::per_layer_model_proj || p.role == Role::per_layer_proj_norm) { EXPECT_EQ(p.block, "per_layer"); }
        if (p.role == Role::attn_q && p.layer == 5) { EXPECT_EQ(p.shape, (Shape{128, 64})); }
    }
    // Every layer-size override and the per-layer inputs are in the parameter count: the
    // checkpoint's tensors hold 263326 elements.
    EXPECT_EQ(s.n_params(), 263326u);
}

TEST(Gemma4, OlderConfigWithGlobalHeadDimGivesTheSameSpec) {
    // transformers < 5.15 wrote the full-attention layers' head_dim as global_head_dim.
    nlohmann::json c = fixture_config();
    c.erase("per_layer_config");
    c["global_head_dim"] = 32;
    EXPECT_EQ(spec_of(c), spec_of(fixture_config()));
}

TEST(Gemma4, DoubleWideMlpAndKEqV) {
    nlohmann::json c = fixture_config();
    c["use_double_wide_mlp"] = true;
    ModelSpec s = spec_of(c);
    for (int il = 0; il < 6; ++il) EXPECT_EQ(s.layer_ffn_dim(il), il >= 4 ? 256 : 128) << il;
    c = fixture_config();
    c["attention_k_eq_v"] = true;
    s = spec_of(c);
    EXPECT_TRUE(s.layers[2].k_eq_v);
    EXPECT_FALSE(s.layers[0].k_eq_v || s.layers[3].k_eq_v) << "sliding layers keep their v_proj";
    EXPECT_FALSE(s.layers[5].k_eq_v) << "a KV-shared layer has no projections of its own";
    EXPECT_TRUE(planned(s, Role::attn_k, 2));
    EXPECT_FALSE(planned(s, Role::attn_v, 2));
    EXPECT_EQ(spec_from_json(spec_to_json(s)), s);
}

TEST(Gemma4, UnsupportedOptionsAreRefusedClearly) {
    nlohmann::json c = fixture_config();
    c["enable_moe_block"] = true;
    expect_config_error(c, "g4/config.json: Gemma4ForCausalLM with enable_moe_block=true");
    c = fixture_config();
    c["per_layer_config"]["2"]["sliding_window"] = 4;
    expect_config_error(c, "'per_layer_config.2.sliding_window' is not supported");
    c = fixture_config();
    c["per_layer_config"]["9"] = {{"head_dim", 32}};
    expect_config_error(c, "'per_layer_config' key '9' is not a layer index below num_hidden_layers 6");
    c = fixture_config();
    c["use_double_wide_mlp"] = true;
    c["per_layer_config"]["4"] = {{"intermediate_size", 256}};
    expect_config_error(c, "use_double_wide_mlp together with a per-layer intermediate_size");
    c = fixture_config();
    c["layer_types"] = {"sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                        "sliding_attention", "full_attention"};
    c["per_layer_config"].erase("2");
    expect_config_error(c, "layer 5 shares keys and values (num_kv_shared_layers 2), but no earlier layer has its type 'full_attention'");
    c = fixture_config();
    c["use_bidirectional_attention"] = "all";
    expect_config_error(c, "'use_bidirectional_attention' \"all\" is not supported");
    c = fixture_config();
    c["rope_parameters"].erase("sliding_attention");
    expect_config_error(c, "'rope_parameters' has no 'sliding_attention' entry");
}

TEST(Gemma4, ProportionalRopeRotatesOnlyTheFirstPairs) {
    RopeSpec r;
    r.scaling = RopeScaling::proportional;
    r.theta = 1e6;
    r.rotary_dim = 32;
    r.rotated_pairs = 4;
    const RopeTable t = make_rope_table(r);
    ASSERT_EQ(t.inv_freq.size(), 16u);
    for (int i = 0; i < 16; ++i) {
        // _compute_proportional_rope_parameters: 1 / theta^(2i / head_dim), then zeros.
        const float want = i < 4 ? 1.0f / std::pow(1e6f, float(2 * i) / 32.0f) : 0.0f;
        EXPECT_EQ(t.inv_freq[size_t(i)], want) << i;
    }
    std::vector<float> x(32), y;
    for (int i = 0; i < 32; ++i) x[size_t(i)] = float(i + 1);
    y = x;
    apply_rope(y.data(), 7, t);
    for (int i = 0; i < 32; ++i)
        if (i % 16 >= 4) { EXPECT_EQ(y[size_t(i)], x[size_t(i)]) << "pair " << i % 16 << " has frequency 0"; }
    EXPECT_NE(y[1], x[1]);
    EXPECT_NE(y[17], x[17]);
}

TEST(Gemma4, ConditionalGenerationCheckpointConvertsToTheSameModel) {
    // The fixture's weights in the published image/audio-text layout, with vision and audio
    // tensors beside them (skipped), convert to an archive whose logits are the fixture's.
    TempDir d;
    const fs::path ck = d / "mm";
    fs::create_directories(ck);
    nlohmann::json text = fixture_config();
    text.erase("architectures");
    const nlohmann::json mm = {{"architectures", {"Gemma4ForConditionalGeneration"}},
                               {"model_type", "gemma4"},
                               {"text_config", text},
                               {"vision_config", {{"hidden_size", 4}}}};
    std::ofstream(ck / "config.json") << mm.dump(2);
    std::vector<tt::test::StTensor> ts = tt::test::read_safetensors(fixture() / "model.safetensors");
    for (auto& t : ts)
        if (t.name.rfind("model.", 0) == 0) t.name = "model.language_model." + t.name.substr(6);
    ts.push_back({"model.vision_tower.encoder.layers.0.mlp.up_proj.linear.weight", DType::f32, {4, 3}, std::string(48, '\0')});
    ts.push_back({"model.embed_vision.embedding_projection.weight", DType::f32, {2, 2}, std::string(16, '\0')});
    ts.push_back({"model.audio_tower.output_proj.weight", DType::f32, {2, 2}, std::string(16, '\0')});
    tt::test::write_safetensors(ck / "model.safetensors", ts);
    const std::string out = (d / "mm.thin").string(), plain = (d / "g4.thin").string();
    convert_hf(ck.string(), out, {});
    convert_hf(fixture().string(), plain, {});
    EXPECT_EQ(spec_from_archive(Archive::open(out)).hf_architecture, "Gemma4ForConditionalGeneration");
    const std::vector<int32_t> prompt = random_tokens(20, 3);
    EXPECT_EQ(max_abs_diff(logits_of(out, prompt), logits_of(plain, prompt)), 0.0);
}

TEST(Gemma4, KEqVComputesWhatAnEqualVProjComputes) {
    // attention_k_eq_v: the values are the raw key projection. The fixture with layer 2's v_proj
    // replaced by its k_proj must give the logits of the same checkpoint declared k_eq_v without v_proj.
    TempDir d;
    std::vector<tt::test::StTensor> ts = tt::test::read_safetensors(fixture() / "model.safetensors");
    std::string k2;
    for (const auto& t : ts)
        if (t.name == "model.layers.2.self_attn.k_proj.weight") k2 = t.bytes;
    ASSERT_FALSE(k2.empty());
    auto write = [&](const fs::path& dir, bool k_eq_v) {
        fs::create_directories(dir);
        nlohmann::json c = fixture_config();
        c["attention_k_eq_v"] = k_eq_v;
        std::ofstream(dir / "config.json") << c.dump(2);
        std::vector<tt::test::StTensor> out;
        for (auto t : ts) {
            if (t.name == "model.layers.2.self_attn.v_proj.weight") {
                if (k_eq_v) continue;
                t.bytes = k2;
            }
            out.push_back(std::move(t));
        }
        tt::test::write_safetensors(dir / "model.safetensors", out);
        const std::string thin = (dir / "m.thin").string();
        convert_hf(dir.string(), thin, {});
        return thin;
    };
    const std::string same_v = write(d / "same_v", false), k_eq_v = write(d / "k_eq_v", true);
    EXPECT_FALSE(Archive::open(k_eq_v).find("blk.2.attn_v.weight"));
    const std::vector<int32_t> prompt = random_tokens(24, 5);
    EXPECT_EQ(max_abs_diff(logits_of(k_eq_v, prompt), logits_of(same_v, prompt)), 0.0);
}

TEST(Gemma4, PrefillEqualsTokenByTokenDecode) {
    // The KV-shared layers read their source's cache in both paths; past the sliding window (8).
    TempDir d;
    const std::string thin = (d / "g4.thin").string();
    convert_hf(fixture().string(), thin, {});
    const Archive a = Archive::open(thin);
    const std::vector<int32_t> prompt = random_tokens(30, 11);
    auto whole = cpu_backend(a);
    const auto all = whole->forward(prompt, true);
    auto step = cpu_backend(a);
    const size_t V = 256;
    double m = 0;
    for (size_t t = 0; t < prompt.size(); ++t) {
        const auto l = step->forward(std::span<const int32_t>(&prompt[t], 1), false);
        for (size_t v = 0; v < V; ++v) m = std::max(m, double(std::fabs(l[v] - all[t * V + v])));
    }
    EXPECT_LT(m, 1e-4);
}

TEST(Gemma4, DeviceBuffersHoldTheLargestLayer) {
    // The CUDA backend's buffers (runtime/device_buffers.h) at each layer's own sizes: the fixture's
    // full-attention layers have head_dim 32 (q 4 x 32), its sliding ones 16; one KV head.
    nlohmann::json c = fixture_config();
    c["use_double_wide_mlp"] = true;  // the KV-shared layers' MLPs: 256 wide
    const ModelSpec s = spec_of(c);
    const DecodeBuffers d = decode_buffers(s, 4);
    auto db = [&](DecodeBuf b) { return d[size_t(b)].bytes; };
    EXPECT_EQ(db(DecodeBuf::q), 4u * 32 * 4);
    EXPECT_EQ(db(DecodeBuf::k), 32u * 4);
    EXPECT_EQ(db(DecodeBuf::att), 4u * 32 * 4);
    EXPECT_EQ(db(DecodeBuf::ffn), 256u * 4);
    EXPECT_EQ(db(DecodeBuf::partial), 4u * 4 * (32 + 4) * 4);  // heads x splits x (head_dim + 4: output, max, sum, padding)
    EXPECT_EQ(db(DecodeBuf::ple), 6u * 8 * 4);
    EXPECT_EQ(db(DecodeBuf::ple_gate), 8u * 4);
    EXPECT_EQ(db(DecodeBuf::post_arrivals), 4u);  // the fused post-norm's counter (sandwich norms)
    EXPECT_EQ(db(DecodeBuf::x_alt), size_t(s.hidden_dim) * 4);  // the residual stream's second buffer (sandwich norms)
    EXPECT_EQ(min_kv_heads(s), 1);
    // Head dims 16 and 32 have no flash kernel: scores are materialized, sized for the widest layer.
    EXPECT_TRUE(prefill_needs_scores(s, DType::bf16));
    const PrefillBuffers p = prefill_buffers(s, 10, 20, DType::bf16, 1);
    auto pb = [&](PrefillBuf b) { return p[size_t(b)].bytes; };
    EXPECT_EQ(pb(PrefillBuf::qkv), 10u * (128 + 2 * 32) * 4);
    EXPECT_EQ(pb(PrefillBuf::q_roped), 10u * 128 * 2);
    EXPECT_EQ(pb(PrefillBuf::scores), 4u * 10 * 20 * 4);
    EXPECT_EQ(pb(PrefillBuf::gate_up), 10u * 2 * 256 * 2);
    EXPECT_EQ(pb(PrefillBuf::ple), 10u * 6 * 8 * 4);
    EXPECT_EQ(pb(PrefillBuf::ple_gate), 10u * 8 * 4);
    EXPECT_EQ(pb(PrefillBuf::proj), 10u * 64 * 4);
    // With head dims the flash kernel serves (E2B's 256 and 512: 512 is not one) the choice is per layer.
    ModelSpec e2b_like = s;
    for (int il = 0; il < e2b_like.n_layers; ++il) e2b_like.layers[size_t(il)].head_dim = e2b_like.sliding(il) ? 256 : 512;
    EXPECT_TRUE(prefill_needs_scores(e2b_like, DType::bf16));
    for (auto& l : e2b_like.layers) l.head_dim = 256;
    EXPECT_FALSE(prefill_needs_scores(e2b_like, DType::bf16));
    EXPECT_EQ(prefill_buffers(e2b_like, 10, 20, DType::bf16, 1)[size_t(PrefillBuf::scores)].bytes, 0u);
}

TEST(Gemma4, PlannerCountsNoKvForSharedLayers) {
    const ModelSpec s = spec_of(fixture_config());
    // Own caches: layers 0, 1, 3 (kv_dim 16) and 2 (kv_dim 32); layers 4 and 5 share.
    const uint64_t want = 2 * 64 * uint64_t(16 + 16 + 32 + 16) * 2;
    EXPECT_EQ(kv_cache_bytes(s, 64, DType::bf16), want);
    const auto lines = fixed_vram_lines(s, DType::bf16, 64);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines[0].bytes, want);
    EXPECT_EQ(lines[0].what, "KV cache (64 positions, 4 layers, 2 sharing another's)");
    // Prefill attention FLOPs use each layer's own query width.
    ModelSpec uniform = s;
    for (auto& l : uniform.layers) l.head_dim = 0;
    EXPECT_GT(prefill_flops(s, 16), prefill_flops(uniform, 16));
    // The per-layer table is a row lookup: its size adds no FLOPs (bench's pp figures, the planner's prefill prediction).
    ModelSpec wide_table = s;
    wide_table.per_layer_vocab *= 4;
    EXPECT_GT(wide_table.n_params(), s.n_params());
    EXPECT_DOUBLE_EQ(prefill_flops(wide_table, 16), prefill_flops(s, 16));
}

TEST(Gemma4, CudaRunsItTheHostPathRefusesNamingWhy) {
    const ModelSpec s = spec_of(fixture_config());
    EXPECT_EQ(cuda_unsupported_reason(s), "");
    EXPECT_NE(host_unsupported_reason(s).find("which the host decode path does not compute yet"), std::string::npos);
    // --device host on the archive says why and points at the backends that run it.
    TempDir d;
    const std::string thin = (d / "g4.thin").string();
    convert_hf(fixture().string(), thin, {});
    const Archive a = Archive::open(thin);
    BackendOptions bo;
    bo.device = "host";
    try {
        make_backend(a, bo);
        ADD_FAILURE() << "the host path ran Gemma 4";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("per-layer inputs, KV sharing and per-layer head sizes, which the host decode path "
                                             "does not compute yet; use --device cpu or cuda"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Gemma4, OlderSpecVersionsStillLoad) {
    // A version-3 spec (before Gemma 4) has none of the new fields and loads as before.
    const ModelSpec g3 = spec_of(tt::test::read_json(shared_dir() / "fixtures/hf-tiny/gemma3_text/config.json"));
    nlohmann::json v3 = spec_to_json(g3);
    v3["format_version"] = 3;
    for (const char* k : {"v_norm", "per_layer_dim", "per_layer_vocab", "layer_scalar"}) v3.erase(k);
    v3["rope"].erase("rotated_pairs");
    v3["rope_local"].erase("rotated_pairs");
    EXPECT_EQ(spec_from_json(v3), g3);
    // Version 4 requires them.
    nlohmann::json v4 = spec_to_json(g3);
    v4.erase("per_layer_dim");
    EXPECT_THROW(spec_from_json(v4), Error);
}

TEST(Gemma4, PerLayerTablesAreBlocksOfTheirOwnInTheArchive) {
    TempDir d;
    const std::string thin = (d / "g4.thin").string();
    ConvertOptions f32;
    f32.dtype = DType::f32;
    convert_hf(fixture().string(), thin, f32);
    const Archive a = Archive::open(thin);
    std::vector<std::string> names;
    for (const auto& b : a.blocks()) names.push_back(b.name);
    ASSERT_GE(names.size(), 4u);
    EXPECT_EQ(names[0], "embed");
    EXPECT_EQ(names[1], "per_layer_embd");
    EXPECT_EQ(names[2], "per_layer");
    EXPECT_EQ(names[3], "layer.0");
    EXPECT_EQ(names.back(), "output");
    EXPECT_EQ(a.tensor(tensor_name(Role::per_layer_token_embd)).block, "per_layer_embd");
    EXPECT_EQ(a.tensor(tensor_name(Role::per_layer_model_proj)).block, "per_layer");
    EXPECT_EQ(a.tensor(tensor_name(Role::per_layer_proj_norm)).block, "per_layer");
    EXPECT_EQ(a.tensor(tensor_name(Role::token_embd)).block, "embed");
    // The planner: a decode token reads one row of the table (6 layers x 8 f32), the whole projection.
    const ModelSpec s = spec_from_archive(a);
    PlanInput in = plan_input_from_archive(a, s);
    EXPECT_EQ(in.blocks[1].decode_read, 6u * 8 * 4);
    EXPECT_EQ(in.blocks[2].decode_read, in.blocks[2].bytes);
    in.context = 64;
    in.device_total = in.device_free = 8ull << 30;
    in.ram_available = 8ull << 30;
    const Plan p = make_plan(in);
    EXPECT_TRUE(p.per_layer_embd_host_mapped);
    EXPECT_EQ(p.blocks[1].place, Placement::host_mapped);
    EXPECT_EQ(p.blocks[2].place, Placement::vram);
}

TEST(Gemma4, ArchiveWithPerLayerTablesInTheEmbedBlockIsRefused) {
    // The layout of archives converted before the per-layer blocks: the tables inside "embed".
    TempDir d;
    const std::string thin = (d / "g4.thin").string(), old = (d / "old.thin").string();
    ConvertOptions f32;
    f32.dtype = DType::f32;
    convert_hf(fixture().string(), thin, f32);
    {
        const Archive a = Archive::open(thin);
        ArchiveWriter w(old);
        std::string block;
        for (const auto& t : a.tensors()) {
            const std::string b = t.block == "per_layer_embd" || t.block == "per_layer" ? "embed" : t.block;
            if (b != block) w.begin_block(block = b);
            w.add_tensor(t.view.name, t.view.dtype, t.view.shape, t.view.data, t.view.dtype);
        }
        nlohmann::json meta = a.metadata();
        for (const char* k : {"tensors", "blocks", "files"}) meta.erase(k);
        w.finish(meta);
    }
    const Archive a = Archive::open(old);
    ASSERT_EQ(a.tensor(tensor_name(Role::per_layer_token_embd)).block, "embed");
    const ModelSpec s = spec_from_archive(a);
    try {
        (void)bind_weights(a, s);
        ADD_FAILURE() << "bound an archive of the older layout";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(old + ": tensor 'per_layer_token_embd.weight' is stored in block 'embed', expected 'per_layer_embd' "
                           "(an archive written by an older ThinTensor; re-convert it)"),
                  std::string::npos)
            << msg;
    }
    PlanInput in = plan_input_from_archive(a, s);
    in.context = 64;
    in.device_total = in.device_free = 8ull << 30;
    in.ram_available = 8ull << 30;
    try {
        make_plan(in);
        ADD_FAILURE() << "planned an archive of the older layout";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("keeps its per-layer tables in the embed block (written by an older ThinTensor)"),
                  std::string::npos)
            << e.what();
    }
}
