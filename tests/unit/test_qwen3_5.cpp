// Qwen3.5 on the CPU reference (issue #17), beyond the fixtures' logits (tests/e2e/validate_fixtures.sh):
// - config.json of both published layouts (text model alone, image-text with text_config and the
//   weights under model.language_model.*) gives the same spec and the same logits;
// - the chunked prefill of the DeltaNet layers equals token-by-token decode for prompts of 1 to 200
//   tokens (chunks of 64: one, several, a remainder);
// - a recurrent state cannot be rewound: the backend restores 0, n_past and its checkpoints, and
//   refuses anything else, and a restored checkpoint continues exactly as the original did;
// - a multi-turn chat yields the tokens of prefilling the whole conversation at once, reusing the
//   cache where it can and recomputing (never reusing a wrong state) where it cannot.
#include "test_convert_util.h"

#include "convert/convert.h"
#include "format/archive.h"
#include "model/archive_spec.h"
#include "model/hf_config.h"
#include "model/model_spec.h"
#include "runtime/backend.h"
#include "runtime/chat_session.h"
#include "runtime/generate.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

using namespace tt;
using tt::test::shared_dir;
using tt::test::TempDir;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

fs::path fixture() { return shared_dir() / "fixtures/hf-tiny/qwen3_5_text"; }

std::unique_ptr<Backend> cpu_backend(const Archive& a, int context = 256) {
    BackendOptions bo;
    bo.device = "cpu";
    bo.context = context;
    bo.n_threads = 1;
    return make_backend(a, bo);
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
    EXPECT_EQ(a.size(), b.size());
    double m = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
    return m;
}

// The fixture converted once per process.
struct Fixture {
    TempDir dir;
    std::string path = (dir / "q35.thin").string();
    std::unique_ptr<Archive> archive;
    Fixture() {
        convert_hf(fixture().string(), path, {});
        archive = std::make_unique<Archive>(Archive::open(path));
    }
};
const Fixture& fx() {
    static Fixture f;
    return f;
}

std::vector<int32_t> random_tokens(int n, int vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> d(0, vocab - 1);
    std::vector<int32_t> t = std::vector<int32_t>(size_t(n));
    for (auto& x : t) x = d(rng);
    return t;
}

}  // namespace

TEST(Qwen3_5, ConfigOfTheImageTextLayoutGivesTheTextModelsSpec) {
    const nlohmann::json text = tt::test::read_json(fixture() / "config.json");
    nlohmann::json vl = {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
                         {"model_type", "qwen3_5"},
                         {"text_config", text},
                         {"vision_config", {{"depth", 2}}},
                         {"tie_word_embeddings", true}};
    vl["text_config"].erase("architectures");
    vl["text_config"].erase("tie_word_embeddings");
    const ModelSpec a = spec_from_hf_config(text, nlohmann::json::object(), "text/config.json", "g");
    const ModelSpec b = spec_from_hf_config(vl, nlohmann::json::object(), "vl/config.json", "g");
    EXPECT_EQ(b.arch, Arch::qwen3_5);
    EXPECT_TRUE(b.tied_embeddings) << "tie_word_embeddings of the top level applies when text_config has none";
    ModelSpec b_untied = b;
    b_untied.tied_embeddings = a.tied_embeddings;
    b_untied.hf_architecture = a.hf_architecture;
    EXPECT_EQ(b_untied, a);
    // The fixture's 3:1 pattern of linear and full attention, and its DeltaNet sizes.
    ASSERT_EQ(a.n_layers, 4);
    EXPECT_TRUE(a.is_delta_net(0) && !a.is_delta_net(1) && a.is_delta_net(2) && !a.is_delta_net(3));
    EXPECT_EQ(a.delta_net, (DeltaNetSpec{2, 4, 16, 16, 4}));
    EXPECT_TRUE(a.attn_output_gate);
    EXPECT_EQ(a.norm_weight_offset, 1.0f);
    EXPECT_EQ(a.rope.rotary_dim, 4) << "partial_rotary_factor 0.25 of head_dim 16";
    // Stored and read back (spec format 3); text_config missing is a clear error.
    EXPECT_EQ(spec_from_json(spec_to_json(a)), a);
    vl.erase("text_config");
    try {
        spec_from_hf_config(vl, nlohmann::json::object(), "vl/config.json", "g");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("vl/config.json: Qwen3_5ForConditionalGeneration keeps the text model's "
                                             "configuration in 'text_config', which is missing"),
                  std::string::npos)
            << e.what();
    }
}

// Qwen3.5-MoE's gated shared expert runs on CUDA (kernels/moe.cu, tests/gpu); sandwich norms or
// MLP biases in a mixture of experts are still refused, naming which.
TEST(Qwen3_5, MoeWithASharedExpertIsNotRefusedByTheCudaBackend) {
    const nlohmann::json c = tt::test::read_json(shared_dir() / "fixtures/hf-tiny/qwen3_5_moe_text/config.json");
    ModelSpec s = spec_from_hf_config(c, nlohmann::json::object(), "config.json", "g");
    ASSERT_TRUE(s.has_moe());
    EXPECT_EQ(s.moe.shared_ffn_dim, 32);
    EXPECT_TRUE(s.moe.shared_gate);
    EXPECT_EQ(cuda_unsupported_reason(s), "");
    s.mlp_bias = true;
    EXPECT_EQ(cuda_unsupported_reason(s), "the CUDA backend does not run mixture-of-experts layers with MLP biases yet");
    s.sandwich_norm = true;
    EXPECT_EQ(cuda_unsupported_reason(s), "the CUDA backend does not run mixture-of-experts layers with sandwich norms yet");
}

TEST(Qwen3_5, ImageTextCheckpointConvertsToTheSameModel) {
    // The fixture's weights renamed into the published layout, with a vision tensor and an MTP
    // layer beside them (skipped), converts to an archive whose logits are the fixture's.
    TempDir d;
    const fs::path ck = d / "vl";
    fs::create_directories(ck);
    nlohmann::json text = tt::test::read_json(fixture() / "config.json");
    text.erase("architectures");
    const nlohmann::json vl = {{"architectures", {"Qwen3_5ForConditionalGeneration"}}, {"text_config", text}};
    std::ofstream(ck / "config.json") << vl.dump(2);
    std::vector<tt::test::StTensor> ts = tt::test::read_safetensors(fixture() / "model.safetensors");
    for (auto& t : ts)
        if (t.name.rfind("model.", 0) == 0) t.name = "model.language_model." + t.name.substr(6);
    ts.push_back({"model.visual.patch_embed.proj.weight", DType::f32, {4, 3}, std::string(48, '\0')});
    ts.push_back({"mtp.fc.weight", DType::f32, {2, 2}, std::string(16, '\0')});
    tt::test::write_safetensors(ck / "model.safetensors", ts);
    const std::string out = (d / "vl.thin").string();
    convert_hf(ck.string(), out, {});
    const Archive a = Archive::open(out);
    EXPECT_EQ(spec_from_archive(a).hf_architecture, "Qwen3_5ForConditionalGeneration");
    EXPECT_EQ(a.find("blk.0.ssm_conv.weight")->view.shape, (Shape{128, 4})) << "conv1d's [out, 1, kernel] is stored [out, kernel]";
    const std::vector<int32_t> prompt = random_tokens(20, 256, 7);
    auto be_vl = cpu_backend(a), be_text = cpu_backend(*fx().archive);
    const auto l_vl = be_vl->forward(prompt, true);
    const std::vector<float> vl_logits(l_vl.begin(), l_vl.end());
    EXPECT_EQ(max_abs_diff(vl_logits, be_text->forward(prompt, true)), 0.0);
}

TEST(Qwen3_5, ChunkedPrefillEqualsTokenByTokenDecodeFor1To200Tokens) {
    const std::vector<int32_t> tokens = random_tokens(200, 256, 1);
    // Token by token: the recurrent rule of every DeltaNet layer, one position at a time.
    auto step = cpu_backend(*fx().archive);
    std::vector<std::vector<float>> by_token;
    for (int32_t t : tokens) {
        const auto l = step->forward(std::span<const int32_t>(&t, 1), false);
        by_token.emplace_back(l.begin(), l.end());
    }
    double worst = 0, scale = 0;
    auto pre = cpu_backend(*fx().archive);
    for (int n = 1; n <= 200; ++n) {
        pre->rewind(0);
        const auto l = pre->forward(std::span<const int32_t>(tokens.data(), size_t(n)), true);
        // Every position of the prompt, not only the last: the chunks' outputs, then the state
        // they carry into the next chunk.
        for (int p = 0; p < n; p += (n > 70 ? 7 : 1)) {
            worst = std::max(worst, max_abs_diff(l.subspan(size_t(p) * 256, 256), by_token[size_t(p)]));
            for (float v : by_token[size_t(p)]) scale = std::max(scale, double(std::fabs(v)));
        }
        worst = std::max(worst, max_abs_diff(l.subspan(size_t(n - 1) * 256, 256), by_token[size_t(n - 1)]));
    }
    EXPECT_GT(scale, 0.1);
    EXPECT_LT(worst, 2e-5 * scale) << "worst |chunked - token by token| " << worst << " of logits up to " << scale;
}

TEST(Qwen3_5, RecurrentStateRewindsOnlyToCheckpoints) {
    const std::vector<int32_t> tokens = random_tokens(90, 256, 3);
    auto be = cpu_backend(*fx().archive);
    be->forward(std::span<const int32_t>(tokens.data(), 70), false);
    EXPECT_EQ(be->restorable(70), 70);
    EXPECT_EQ(be->restorable(69), 0) << "no checkpoint yet: only the start";
    try {
        be->rewind(40);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("rewind to position 40: the model's recurrent (linear-attention) state cannot go back there"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(be->n_past(), 70) << "a refused rewind changes nothing";
    be->checkpoint();
    const auto cont = be->forward(std::span<const int32_t>(tokens.data() + 70, 20), true);
    const std::vector<float> original(cont.begin(), cont.end());
    EXPECT_EQ(be->restorable(85), 70);
    be->rewind(70);
    const auto again = be->forward(std::span<const int32_t>(tokens.data() + 70, 20), true);
    EXPECT_EQ(max_abs_diff(original, again), 0.0) << "the checkpoint restores the state exactly";
    // Back to the start, then the whole sequence at once: the same logits as the two calls.
    be->rewind(0);
    const auto whole = be->forward(tokens, true);
    EXPECT_LT(max_abs_diff(whole.subspan(70 * 256), original), 1e-4);
}

namespace {

// The fixture's layers with a 2048-row embedding and head and TinyStories' tokenizer: a Qwen3.5
// that can chat (random weights; only the token ids matter here).
struct ChatModel {
    TempDir dir;
    std::string path = (dir / "q35chat.thin").string();
    std::unique_ptr<Archive> archive;
    std::unique_ptr<Tokenizer> tok;
    ChatModel() {
        const fs::path ck = dir / "ck";
        fs::create_directories(ck);
        nlohmann::json cfg = tt::test::read_json(fixture() / "config.json");
        cfg["vocab_size"] = 2048;
        cfg["bos_token_id"] = 1;
        cfg["eos_token_id"] = 2;
        std::ofstream(ck / "config.json") << cfg.dump(2);
        std::vector<tt::test::StTensor> ts = tt::test::read_safetensors(fixture() / "model.safetensors");
        std::mt19937 rng(11);
        std::normal_distribution<float> nd(0.0f, 0.5f);
        for (auto& t : ts)
            if (t.name == "model.embed_tokens.weight" || t.name == "lm_head.weight") {
                std::vector<float> w(2048 * 64);
                for (auto& x : w) x = nd(rng);
                t.shape = {2048, 64};
                t.bytes.assign(reinterpret_cast<const char*>(w.data()), w.size() * 4);
            }
        tt::test::write_safetensors(ck / "model.safetensors", ts);
        for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
            fs::copy_file(shared_dir() / "models/tinystories-656k" / f, ck / f);
        convert_hf(ck.string(), path, {});
        archive = std::make_unique<Archive>(Archive::open(path));
        tok = Tokenizer::from_archive(*archive);
    }
};
const ChatModel& chat_model() {
    static ChatModel m;
    return m;
}

ChatOptions greedy(int max_tokens) {
    ChatOptions o;
    o.max_tokens = max_tokens;
    o.sampling.temperature = 0;
    o.stop_ids = {2};
    return o;
}

std::vector<int32_t> from_scratch(const std::vector<int32_t>& prompt, int max_tokens) {
    auto be = cpu_backend(*chat_model().archive, 512);
    GenerateOptions g;
    g.max_tokens = max_tokens;
    g.sampling.temperature = 0;
    g.eos_ids = {2};
    return generate(*be, chat_model().tok.get(), prompt, g, [](std::string_view) {}).tokens;
}

// Turn by turn against a fresh prefill of the rendered conversation; returns the turns' stats.
std::vector<ChatTurnStats> chat_matches_from_scratch(const ChatTemplate& tmpl, const std::vector<std::string>& user) {
    auto be = cpu_backend(*chat_model().archive, 512);
    ChatSession s(*be, *chat_model().tok, tmpl, greedy(12));
    std::vector<ChatTurnStats> out;
    for (const auto& u : user) {
        const ChatTurnStats t = s.send(u, {});
        ojson upto = s.messages();
        upto.erase(upto.end() - 1);
        const std::vector<int32_t> p = s.render_ids(upto, true);
        EXPECT_EQ(int(p.size()), t.prompt_tokens);
        EXPECT_EQ(t.tokens, from_scratch(p, 12)) << "turn " << out.size() + 1;
        EXPECT_EQ(t.fed_tokens, t.prompt_tokens - t.reused_tokens);
        out.push_back(t);
    }
    return out;
}

}  // namespace

TEST(Qwen3_5, MultiTurnChatEqualsPrefillingTheWholeConversation) {
    const ChatTemplate tmpl("{% for m in messages %}{{ m.content }}\n{% endfor %}", "lines.jinja");
    const auto turns = chat_matches_from_scratch(tmpl, {"Once upon a time there was a cat.", "The cat saw a dog.", "They played."});
    ASSERT_EQ(turns.size(), 3u);
    for (size_t i = 1; i < turns.size(); ++i) {
        // The checkpoint a token before the earlier prompt's end at least (its trailing newline
        // merges with the reply here): the turn does not prefill everything.
        EXPECT_GE(turns[i].reused_tokens, turns[i - 1].prompt_tokens - 1) << "turn " << i + 1;
        EXPECT_LT(turns[i].fed_tokens, turns[i].prompt_tokens) << "turn " << i + 1;
    }
}

TEST(Qwen3_5, ChatWhoseTemplateRewritesTheReplyRecomputesFromACheckpoint) {
    // Earlier replies are cut to two words when rendered again (as Qwen3 drops old <think>
    // blocks): the cache diverges inside the reply, where the recurrent state has no checkpoint,
    // so the session goes back to the end of the earlier prompt and recomputes the rest. ('|'
    // ends a turn: TinyStories' tokenizer merges a newline into the word before it.)
    const ChatTemplate tmpl(
        "{% for m in messages %}{% if m.role == 'assistant' %}{{ m.content.split(' ')[:2] | join(' ') }}|"
        "{% else %}{{ m.content }}|{% endif %}{% endfor %}",
        "shorten.jinja");
    const auto turns = chat_matches_from_scratch(tmpl, {"Once upon a time there was a girl.", "She liked to sing."});
    ASSERT_EQ(turns.size(), 2u);
    EXPECT_GE(turns[1].reused_tokens, turns[0].prompt_tokens - 1) << "back to a checkpoint of the first prompt";
    EXPECT_LE(turns[1].reused_tokens, turns[0].prompt_tokens);
    EXPECT_GT(turns[1].recomputed_tokens, 0) << "the reply's first word was in the cache but has no checkpoint";
}
