// The generation loop: prefill the prompt, then decode token by token with the KV cache, sampling,
// streaming incrementally decoded text, and stopping on EOS tokens, stop strings or the budget.
#pragma once

#include "runtime/backend.h"
#include "runtime/sampler.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tt {

class Tokenizer;

// Why `stop` cannot be a stop string (empty: it would end generation before the first token), or
// nothing when it can.
std::optional<std::string> stop_string_error(std::string_view stop);

struct GenerateOptions {
    int max_tokens = 256;
    SamplerConfig sampling;
    std::vector<std::string> stop;   // stop strings (not printed; an empty one is an error)
    std::vector<int32_t> eos_ids;    // stop tokens (not printed)
    std::function<bool()> should_stop;  // polled after each token; true ends with "interrupted"
    std::function<void()> after_prefill;  // called once the prompt is in the cache (a chat's checkpoint)
};

struct GenerateStats {
    int prompt_tokens = 0;
    int generated_tokens = 0;
    double prefill_seconds = 0;      // prompt forward pass, up to the first token's logits
    double decode_seconds = 0;       // the rest
    int decode_steps = 0;            // single-token forward passes in decode_seconds
    double time_to_first_token = 0;  // from start to the first sampled token
    std::string stop_reason;         // "eos", "stop string", "max tokens", "context full", "interrupted"
    std::vector<int32_t> tokens;     // generated ids (EOS excluded)
};

// Feeds `prompt` after what the backend has cached, generates, and calls on_text with each piece
// of final text. tokenizer may be null (then no text, only ids; stop strings need a tokenizer).
GenerateStats generate(Backend& backend, const Tokenizer* tokenizer, std::span<const int32_t> prompt,
                       const GenerateOptions& opt, const std::function<void(std::string_view)>& on_text);
// The same loop with the caller's sampler (a chat keeps one across turns; opt.sampling is then
// unused) and repetition-penalty history (the context before `prompt`, e.g. a reused cache
// prefix, followed by prompt; the generated ids are appended to it).
GenerateStats generate(Backend& backend, const Tokenizer* tokenizer, std::span<const int32_t> prompt,
                       const GenerateOptions& opt, const std::function<void(std::string_view)>& on_text, Sampler& sampler,
                       std::vector<int32_t> history);

}  // namespace tt
