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

// Holds back generated text that might be the beginning of a stop string, so that a stop string
// is never printed, even when it arrives split over several tokens.
class StopFilter {
public:
    explicit StopFilter(const std::vector<std::string>& stops) : stops_(stops) {}
    // Adds text; returns what can be printed now. Sets hit when a stop string completed.
    std::string push(std::string_view text, bool& hit) {
        pending_ += text;
        hit = false;
        size_t cut = std::string::npos;
        for (const auto& s : stops_) {
            const size_t at = pending_.find(s);
            if (at != std::string::npos) cut = std::min(cut, at);
        }
        if (cut != std::string::npos) {
            hit = true;
            std::string out = pending_.substr(0, cut);
            pending_.clear();
            return out;
        }
        // Keep the longest tail that is a prefix of some stop string.
        size_t hold = 0;
        for (const auto& s : stops_)
            for (size_t len = std::min(s.size() - 1, pending_.size()); len > hold; --len)
                if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
                    hold = len;
                    break;
                }
        std::string out = pending_.substr(0, pending_.size() - hold);
        pending_.erase(0, pending_.size() - hold);
        return out;
    }
    std::string flush() { return std::exchange(pending_, {}); }

private:
    const std::vector<std::string>& stops_;
    std::string pending_;
};

}  // namespace

GenerateStats generate(Backend& backend, const Tokenizer* tok, std::span<const int32_t> prompt,
                       const GenerateOptions& opt, const std::function<void(std::string_view)>& on_text) {
    Sampler sampler(opt.sampling);
    return generate(backend, tok, prompt, opt, on_text, sampler, std::vector<int32_t>(prompt.begin(), prompt.end()));
}

GenerateStats generate(Backend& backend, const Tokenizer* tok, std::span<const int32_t> prompt,
                       const GenerateOptions& opt, const std::function<void(std::string_view)>& on_text, Sampler& sampler,
                       std::vector<int32_t> history) {
    if (opt.max_tokens < 1) fail("--max-tokens must be at least 1, got {}", opt.max_tokens);
    if (prompt.empty()) fail("the prompt has no tokens (give a prompt, or let BOS be added)");
    if (!opt.stop.empty() && !tok) fail("--stop needs a tokenizer, and this model has none");
    for (const auto& s : opt.stop)
        if (const auto why = stop_string_error(s)) fail("--stop: {}", *why);
    if (backend.n_past() + int(prompt.size()) >= backend.context_size())
        fail("the prompt ({} tokens{}) does not fit the context of {} tokens", prompt.size(),
             backend.n_past() ? fmt::format(" after {} cached", backend.n_past()) : "", backend.context_size());

    GenerateStats st;
    st.prompt_tokens = int(prompt.size());
    std::unique_ptr<StreamDecoder> decoder;
    if (tok) decoder = std::make_unique<StreamDecoder>(*tok, /*skip_special_tokens=*/true);
    StopFilter stop(opt.stop);

    const auto t0 = Clock::now();
    int32_t next = backend.forward_sample(prompt, sampler, history);
    st.prefill_seconds = seconds_since(t0);
    if (opt.after_prefill) opt.after_prefill();
    const auto t_decode = Clock::now();
    for (;;) {
        if (st.generated_tokens == 0) st.time_to_first_token = seconds_since(t0);
        if (std::find(opt.eos_ids.begin(), opt.eos_ids.end(), next) != opt.eos_ids.end()) {
            st.stop_reason = "eos";
            break;
        }
        ++st.generated_tokens;
        st.tokens.push_back(next);
        history.push_back(next);
        if (decoder) {
            bool hit = false;
            const std::string text = stop.push(decoder->push(next), hit);
            if (!text.empty()) on_text(text);
            if (hit) {
                st.stop_reason = "stop string";
                break;
            }
        }
        if (st.generated_tokens >= opt.max_tokens) {
            st.stop_reason = "max tokens";
            break;
        }
        if (opt.should_stop && opt.should_stop()) {
            st.stop_reason = "interrupted";
            break;
        }
        if (backend.n_past() >= backend.context_size()) {
            st.stop_reason = "context full";
            break;
        }
        next = backend.forward_sample(std::span<const int32_t>(&next, 1), sampler, history);
        ++st.decode_steps;
    }
    if (decoder && st.stop_reason != "stop string") {
        bool hit = false;
        std::string text = stop.push(decoder->flush(), hit);
        if (!hit) text += stop.flush();
        if (!text.empty()) on_text(text);
    }
    st.decode_seconds = seconds_since(t_decode);
    return st;
}

}  // namespace tt
