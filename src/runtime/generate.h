// The generation loop: prefill the prompt, then decode token by token with the KV cache, sampling,
// streaming incrementally decoded text, and stopping on EOS tokens, stop strings or the budget.
#pragma once

#include "runtime/backend.h"
#include "runtime/sampler.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tt {

class Tokenizer;
class StreamDecoder;

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

// One generation's bookkeeping after each sampled token: end-of-sequence ids, incremental text
// decoding, stop strings (held back until they cannot be one), the token budget, should_stop and a
// full context. generate() drives one with one backend sequence; the server drives several whose
// decode steps it batches (src/server/scheduler.cpp), so both end and print exactly alike.
class Generation {
public:
    // history: the context before the first sampled token (the repetition penalty's); the tokens
    // accepted are appended to it. Checks opt as generate() does (tt::Error naming the option).
    Generation(const Tokenizer* tokenizer, const GenerateOptions& opt, std::vector<int32_t> history);
    ~Generation();

    // Takes the token sampled after the context; emits its text through on_text. Returns true
    // when it is to be fed and generation goes on, false when generation ended (stop_reason() says
    // why; all text is out). n_past / context_size: the backend sequence's fill and size.
    bool accept(int32_t next, int n_past, int context_size, const std::function<void(std::string_view)>& on_text);
    // Ends generation for the caller's reason (e.g. "cancelled"), emitting the text held back.
    void end(std::string reason, const std::function<void(std::string_view)>& on_text);

    const std::vector<int32_t>& history() const { return history_; }
    const std::vector<int32_t>& tokens() const { return tokens_; }  // accepted ids (EOS excluded)
    const std::string& stop_reason() const { return stop_reason_; }  // "" while going on
    bool done() const { return !stop_reason_.empty(); }

private:
    void flush(const std::function<void(std::string_view)>& on_text);

    GenerateOptions opt_;
    std::vector<int32_t> history_, tokens_;
    std::unique_ptr<StreamDecoder> decoder_;
    std::vector<std::string> stops_;
    std::string pending_;  // text held back: it may begin a stop string
    std::string stop_reason_;
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
