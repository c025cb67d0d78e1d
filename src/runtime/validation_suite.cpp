#include "runtime/validation_suite.h"

#include "core/error.h"
#include "core/log.h"
#include "runtime/chat_session.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>

namespace tt {

namespace {

constexpr int k_greedy_tokens = 16;
// Logits kept per prompt: the whole of any short prompt, the tail of a long one (a 8k-token prompt
// of a 150k vocabulary would be 5 GB of float32 logits on each side).
constexpr int k_max_logits_positions = 256;

struct TextPrompt {
    const char* name;
    const char* text;  // plain text, or the user message of a chat prompt
    bool chat = false;
};

constexpr TextPrompt k_quick[] = {
    {"story", "Once upon a time, there was a little girl named Lily. She loved to play outside in the park."},
    {"fact", "The capital of France is Paris. The capital of Germany is"},
    {"list", "Three things you can find in a kitchen: a spoon,"},
    {"chat", "What is the capital of France? Answer in one word.", true},
};

constexpr TextPrompt k_full_extra[] = {
    {"multilingual", "Le chat dort sur le canapé. Der Hund spielt im Garten. El niño come una manzana. "
                     "猫はソファで寝ています。 Кошка спит на диване. القطة نائمة على الأريكة. 고양이가 소파에서 자고 있다."},
    {"code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n    a, b = 0, 1\n    for _ in range(n):\n"
             "        a, b = b, a + b\n    return a\n\n\nclass Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, x):\n"},
    {"repeated", "the cat sat on the mat. the cat sat on the mat. the cat sat on the mat. the cat sat on the mat. "
                 "the cat sat on the mat. the cat sat on the mat. the cat sat on the mat. the cat sat on the mat. "
                 "the cat sat on the mat. the cat sat on the mat. the cat sat on the mat. the cat sat on the"},
    {"chat-multi-turn", "", true},
};

// Sentences the long prompt cycles through, numbered so that it is not one repeated block.
constexpr const char* k_long_sentences[] = {
    "The old lighthouse keeper climbed the spiral stairs every evening to light the lamp.",
    "Ships passing in the night relied on its beam to steer clear of the rocks below.",
    "In the village, children told stories about the keeper and his grey cat.",
    "One winter a storm knocked out the power, and he kept the flame burning by hand.",
    "By morning the sea was calm again, and a fishing boat came home safely.",
};

std::vector<int32_t> bytes_as_ids(std::string_view text, const ModelSpec& spec) {
    std::vector<int32_t> ids;
    if (spec.bos_token_id >= 0) ids.push_back(spec.bos_token_id);
    for (unsigned char c : text) ids.push_back(int32_t(c % unsigned(spec.vocab_size)));
    return ids;
}

std::vector<int32_t> encode_text(std::string_view text, const ModelSpec& spec, const Tokenizer* tok) {
    return tok ? tok->encode(text, /*add_special_tokens=*/true) : bytes_as_ids(text, spec);
}

std::vector<int32_t> encode_chat(const TextPrompt& p, const Tokenizer& tok, const ChatTemplate& tmpl) {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (std::string_view(p.name) == "chat-multi-turn") {
        messages.push_back({{"role", "user"}, {"content", "Hi! Can you help me plan a short trip?"}});
        messages.push_back({{"role", "assistant"}, {"content", "Of course. Where would you like to go, and for how long?"}});
        messages.push_back({{"role", "user"}, {"content", "Two days in Lisbon, on foot."}});
    } else {
        messages.push_back({{"role", "user"}, {"content", p.text}});
    }
    const std::string rendered = tmpl.render(messages, /*add_generation_prompt=*/true, default_template_vars(tok, tmpl));
    return encode_chat_prompt(tok, rendered);
}

}  // namespace

std::vector<std::string> suite_names() { return {"quick", "full"}; }

std::vector<SuiteCase> build_suite(const std::string& suite, const ModelSpec& spec, const Tokenizer* tok,
                                   const ChatTemplate* chat_template) {
    if (suite != "quick" && suite != "full") fail("--suite '{}': unknown suite (choose quick or full)", suite);
    const bool full = suite == "full";
    // Room for every prompt's greedy continuation within the context.
    const int max_prompt = spec.max_context - k_greedy_tokens;
    if (max_prompt < 2) fail("the model's context ({}) is too short for the validation suite", spec.max_context);

    std::vector<TextPrompt> prompts(std::begin(k_quick), std::end(k_quick));
    if (full) prompts.insert(prompts.end(), std::begin(k_full_extra), std::end(k_full_extra));
    std::vector<SuiteCase> out;
    bool skipped_chat = false;
    for (const auto& p : prompts) {
        SuiteCase c{p.name, {}, 0, k_greedy_tokens};
        if (p.chat) {
            if (!tok || !chat_template) {
                skipped_chat = true;
                continue;
            }
            c.input_ids = encode_chat(p, *tok, *chat_template);
        } else {
            c.input_ids = encode_text(p.text, spec, tok);
        }
        if (int(c.input_ids.size()) > max_prompt) c.input_ids.resize(size_t(max_prompt));
        out.push_back(std::move(c));
    }
    if (skipped_chat) log::info("suite {}: no chat prompts (the model has {})", suite, tok ? "no chat template" : "no tokenizer");

    if (full) {
        // Longer than any sliding window (twice it), at least 512 tokens, within the context.
        bool sliding = false;
        for (const auto& l : spec.layers) sliding |= l.attn == AttnKind::sliding;
        const int window = sliding ? spec.sliding_window : 0;
        const int target = std::min(std::max(512, 2 * window + 64), max_prompt);
        if (window > 0 && target <= window)
            log::warn("suite full: the context ({}) leaves no room for a prompt longer than the sliding window ({})",
                      spec.max_context, window);
        std::string text;
        std::vector<int32_t> ids;
        for (int i = 0; int(ids.size()) < target;) {
            // Re-encoding the whole text keeps token boundaries those of the full string.
            const size_t before = text.size();
            for (int k = 0; k < 8; ++k, ++i)
                text += fmt::format("{}. {} ", i + 1, k_long_sentences[size_t(i) % std::size(k_long_sentences)]);
            ids = encode_text(text, spec, tok);
            TT_ASSERT(text.size() > before);
        }
        ids.resize(size_t(target));
        out.push_back({"long-context", std::move(ids), std::min(target, k_max_logits_positions), k_greedy_tokens / 2});
        // One token: BOS when the model has one (what generation from nothing starts with).
        const int32_t one = spec.bos_token_id >= 0 ? spec.bos_token_id : encode_text("Hello", spec, tok).front();
        out.push_back({"single-token", {one}, 1, k_greedy_tokens});
    }
    for (auto& c : out) {
        if (c.logits_positions == 0) c.logits_positions = std::min(int(c.input_ids.size()), k_max_logits_positions);
        for (auto id : c.input_ids)
            if (id < 0 || id >= spec.vocab_size) fail("suite prompt '{}': token id {} is outside the vocabulary", c.name, id);
    }
    return out;
}

}  // namespace tt
