// The prompts `validate --hf-model` runs through transformers and ThinTensor alike. Suites are part
// of the project (not files beside it) so that a report names a suite that means the same thing
// everywhere. `quick`: a handful of short prompts, plus the chat template when the model has one.
// `full`: quick, and a prompt longer than any sliding window, multilingual text, code, repeated
// text and a prompt of a single token. Every prompt stays within the model's context.
//
// Token ids come from ThinTensor's tokenizer (and its Jinja engine for chat prompts), and are what
// the helper feeds transformers, so both sides see identical ids. A model without a tokenizer (the
// tiny fixtures) gets each prompt's UTF-8 bytes modulo the vocabulary as ids, after BOS when the
// model has one: the suite still exercises the same lengths, repetition and window spans.
#pragma once

#include "model/model_spec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tt {

class ChatTemplate;
class Tokenizer;

struct SuiteCase {
    std::string name;                // "story", "chat", "long-context", ...
    std::vector<int32_t> input_ids;  // never empty
    int logits_positions = 0;        // compare the logits of the last N positions (long prompts: a tail)
    int greedy_tokens = 0;           // greedy continuation of the whole prompt to compare
};

// The suite names, for --suite.
std::vector<std::string> suite_names();

// Builds `suite` for the model. tokenizer and chat_template may be null (no tokenizer / no chat
// template: the chat prompts are left out, with a note on stderr). Throws tt::Error on an unknown
// suite or a model whose context cannot hold even the shortest prompt and its continuation.
std::vector<SuiteCase> build_suite(const std::string& suite, const ModelSpec& spec, const Tokenizer* tokenizer,
                                   const ChatTemplate* chat_template);

}  // namespace tt
