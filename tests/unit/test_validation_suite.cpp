// The prompt suites of `validate --hf-model` (src/runtime/validation_suite.h) for a model without a
// tokenizer, as the tiny fixtures are: which prompts, their ids (BOS + UTF-8 bytes mod vocab), the
// long prompt beyond the sliding window, the single-token prompt, and the context limit.
#include "core/error.h"
#include "core/output_file.h"
#include "runtime/validation_suite.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

using namespace tt;

namespace {
ModelSpec tiny_spec(int context, int window) {
    ModelSpec s;
    s.vocab_size = 256;
    s.max_context = context;
    s.bos_token_id = 1;
    s.sliding_window = window;
    s.layers = {{MixerKind::attention, window > 0 ? AttnKind::sliding : AttnKind::full, FfnKind::dense}, LayerSpec{}};
    return s;
}
std::vector<std::string> names(const std::vector<SuiteCase>& cs) {
    std::vector<std::string> out;
    for (const auto& c : cs) out.push_back(c.name);
    return out;
}
}  // namespace

TEST(ValidationSuite, QuickWithoutTokenizerHasTheTextPromptsAsBytes) {
    const auto cs = build_suite("quick", tiny_spec(256, 0), nullptr, nullptr);
    EXPECT_EQ(names(cs), (std::vector<std::string>{"story", "fact", "list"}));  // no chat: no tokenizer
    const std::string story = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.";
    ASSERT_EQ(cs[0].input_ids.size(), story.size() + 1);
    EXPECT_EQ(cs[0].input_ids[0], 1);  // BOS
    for (size_t i = 0; i < story.size(); ++i) EXPECT_EQ(cs[0].input_ids[i + 1], int32_t(static_cast<unsigned char>(story[i])));
    for (const auto& c : cs) {
        EXPECT_EQ(c.logits_positions, int(c.input_ids.size()));  // short prompts: every position compared
        EXPECT_EQ(c.greedy_tokens, 16);
    }
}

TEST(ValidationSuite, FullHasLongMultilingualCodeRepeatedAndSingleToken) {
    const ModelSpec s = tiny_spec(256, 8);
    const auto cs = build_suite("full", s, nullptr, nullptr);
    EXPECT_EQ(names(cs), (std::vector<std::string>{"story", "fact", "list", "multilingual", "code", "repeated", "long-context",
                                                  "single-token"}));
    for (const auto& c : cs) {
        EXPECT_LE(int(c.input_ids.size()) + c.greedy_tokens, s.max_context) << c.name;
        for (auto id : c.input_ids) EXPECT_LT(id, s.vocab_size);
    }
    const SuiteCase& lc = cs[6];
    EXPECT_GT(int(lc.input_ids.size()), 2 * s.sliding_window);
    EXPECT_EQ(int(lc.input_ids.size()), s.max_context - 16);  // as long as the context allows
    EXPECT_EQ(cs[7].input_ids, std::vector<int32_t>{1});
    // Multilingual text: bytes of non-ASCII characters (>= 0x80).
    bool high = false;
    for (auto id : cs[3].input_ids) high |= id >= 0x80;
    EXPECT_TRUE(high);
}

TEST(ValidationSuite, LongPromptKeepsOnlyATailOfLogits) {
    const ModelSpec s = tiny_spec(40960, 4096);
    const auto cs = build_suite("full", s, nullptr, nullptr);
    const SuiteCase& lc = cs[6];
    EXPECT_EQ(lc.name, "long-context");
    EXPECT_EQ(int(lc.input_ids.size()), 2 * 4096 + 64);
    EXPECT_EQ(lc.logits_positions, 256);
}

TEST(ValidationSuite, BadRequestsFail) {
    EXPECT_THROW(build_suite("medium", tiny_spec(256, 0), nullptr, nullptr), Error);
    EXPECT_THROW(build_suite("quick", tiny_spec(16, 0), nullptr, nullptr), Error);
}

// With a real tokenizer and chat template (Qwen3's, from ../shared): text prompts are tokenized with
// special tokens, and the chat prompt is the template's rendering, tokenized as `run --chat` does.
TEST(ValidationSuite, ChatPromptThroughTheModelsTemplate) {
    const std::string dir = std::string(TT_SHARED_DIR) + "/tokenizers/qwen3";
    std::string json;
    {
        FILE* p = popen(("xz -dc '" + dir + "/tokenizer.json.xz'").c_str(), "r");
        ASSERT_NE(p, nullptr);
        char buf[1 << 16];
        for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) json.append(buf, n);
        ASSERT_EQ(pclose(p), 0);
    }
    const auto tok = Tokenizer::from_hf(json, read_file(dir + "/tokenizer_config.json"), "qwen3/tokenizer.json");
    const ChatTemplate tmpl = ChatTemplate::load(dir + "/tokenizer_config.json");
    ModelSpec s = tiny_spec(40960, 0);
    s.vocab_size = 151936;
    s.bos_token_id = -1;
    const auto cs = build_suite("quick", s, tok.get(), &tmpl);
    ASSERT_EQ(names(cs), (std::vector<std::string>{"story", "fact", "list", "chat"}));
    EXPECT_EQ(cs[1].input_ids, tok->encode("The capital of France is Paris. The capital of Germany is", true));
    EXPECT_EQ(cs[3].input_ids,
              tok->encode("<|im_start|>user\nWhat is the capital of France? Answer in one word.<|im_end|>\n<|im_start|>assistant\n", false));
    const auto full = build_suite("full", s, tok.get(), &tmpl);
    EXPECT_EQ(full[7].name, "chat-multi-turn");
    EXPECT_EQ(full[8].input_ids.size(), 512u);  // long-context: no window, 512 tokens
}
