#include "runtime/generate.h"

#include "core/error.h"
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <chrono>

namespace tt {

std::optional<std::string> stop_string_error(std::string_view stop) {
    if (stop.empty()) return "an empty stop string would end generation before the first token";
    return std::nullopt;
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

GenerateStats generate(Backend& backend, const Tokenizer* tok, std::span<const int32_t> prompt,
                       const GenerateOptions& opt, const std::function<void(std::string_view)>& on_text) {
    Sampler sampler(opt.sampling);
    return generate(backend, tok, prompt, opt, on_text, sampler, std::vector<int32_t>(prompt.begin(), prompt.end()));
}

Generation::Generation(const Tokenizer* tok, const GenerateOptions& opt, std::vector<int32_t> history)
    : opt_(opt), history_(std::move(history)), stops_(opt.stop) {
    if (opt.max_tokens < 1) fail("--max-tokens must be at least 1, got {}", opt.max_tokens);
    if (!opt.stop.empty() && !tok) fail("--stop needs a tokenizer, and this model has none");
    for (const auto& s : opt.stop)
        if (const auto why = stop_string_error(s)) fail("--stop: {}", *why);
    if (tok) decoder_ = std::make_unique<StreamDecoder>(*tok, /*skip_special_tokens=*/true);
}

Generation::~Generation() = default;

bool Generation::accept(int32_t next, int n_past, int context_size, const std::function<void(std::string_view)>& on_text) {
    TT_ASSERT(!done());
    if (std::find(opt_.eos_ids.begin(), opt_.eos_ids.end(), next) != opt_.eos_ids.end()) {
        end("eos", on_text);
        return false;
    }
    tokens_.push_back(next);
    history_.push_back(next);
    if (decoder_) {
        // Hold back generated text that might be the beginning of a stop string, so that a stop
        // string is never printed, even when it arrives split over several tokens.
        pending_ += decoder_->push(next);
        size_t cut = std::string::npos;
        for (const auto& s : stops_) {
            const size_t at = pending_.find(s);
            if (at != std::string::npos) cut = std::min(cut, at);
        }
        if (cut != std::string::npos) {
            pending_.resize(cut);
            if (!pending_.empty()) on_text(pending_);
            pending_.clear();
            stop_reason_ = "stop string";
            return false;
        }
        // Keep the longest tail that is a prefix of some stop string.
        size_t hold = 0;
        for (const auto& s : stops_)
            for (size_t len = std::min(s.size() - 1, pending_.size()); len > hold; --len)
                if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
                    hold = len;
                    break;
                }
        if (pending_.size() > hold) {
            on_text(std::string_view(pending_).substr(0, pending_.size() - hold));
            pending_.erase(0, pending_.size() - hold);
        }
    }
    if (int(tokens_.size()) >= opt_.max_tokens) end("max tokens", on_text);
    else if (opt_.should_stop && opt_.should_stop()) end("interrupted", on_text);
    else if (n_past >= context_size) end("context full", on_text);
    return !done();
}

void Generation::end(std::string reason, const std::function<void(std::string_view)>& on_text) {
    TT_ASSERT(!done());
    stop_reason_ = std::move(reason);
    flush(on_text);
}

// The decoder's held-back bytes, then what the stop filter held: the end of the text. A stop
// string completed by the decoder's last bytes still cuts the text there.
void Generation::flush(const std::function<void(std::string_view)>& on_text) {
    if (!decoder_) return;
    pending_ += decoder_->flush();
    size_t cut = std::string::npos;
    for (const auto& s : stops_) {
        const size_t at = pending_.find(s);
        if (at != std::string::npos) cut = std::min(cut, at);
    }
    if (cut != std::string::npos) pending_.resize(cut);
    if (!pending_.empty()) on_text(pending_);
    pending_.clear();
}

GenerateStats generate(Backend& backend, const Tokenizer* tok, std::span<const int32_t> prompt,
                       const GenerateOptions& opt, const std::function<void(std::string_view)>& on_text, Sampler& sampler,
                       std::vector<int32_t> history) {
    Generation gen(tok, opt, std::move(history));
    if (prompt.empty()) fail("the prompt has no tokens (give a prompt, or let BOS be added)");
    if (backend.n_past() + int(prompt.size()) >= backend.context_size())
        fail("the prompt ({} tokens{}) does not fit the context of {} tokens", prompt.size(),
             backend.n_past() ? fmt::format(" after {} cached", backend.n_past()) : "", backend.context_size());

    GenerateStats st;
    st.prompt_tokens = int(prompt.size());
    const auto t0 = Clock::now();
    int32_t next = backend.forward_sample(prompt, sampler, gen.history());
    st.prefill_seconds = seconds_since(t0);
    st.time_to_first_token = st.prefill_seconds;
    if (opt.after_prefill) opt.after_prefill();
    const auto t_decode = Clock::now();
    while (gen.accept(next, backend.n_past(), backend.context_size(), on_text)) {
        next = backend.forward_sample(std::span<const int32_t>(&next, 1), sampler, gen.history());
        ++st.decode_steps;
    }
    st.decode_seconds = seconds_since(t_decode);
    st.generated_tokens = int(gen.tokens().size());
    st.tokens = gen.tokens();
    st.stop_reason = gen.stop_reason();
    return st;
}

}  // namespace tt
