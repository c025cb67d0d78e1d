// Token sampling, in transformers' order: repetition penalty (then OpenAI's additive presence and
// frequency penalties, which the server takes), then temperature, top-k, top-p,
// min-p, then a draw from the renormalized distribution. Temperature 0 is greedy (argmax).
// A fixed seed gives the same tokens on every machine (the RNG and the draw are specified here,
// not left to the standard library's distributions).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace tt {

struct SamplerConfig {
    float temperature = 0.8f;   // <= 0: greedy
    int top_k = 40;             // <= 0: off
    float top_p = 0.95f;        // >= 1: off
    float min_p = 0.05f;        // <= 0: off
    float repeat_penalty = 1.0f;// 1: off; > 1 discourages tokens already in the context
    uint64_t seed = 0;
    // OpenAI's: logit -= frequency_penalty * count + presence_penalty * (count > 0), counts over the
    // history; 0 = off. In [-2, 2] where the API takes them.
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;

    // Temperature 0 and no penalty: the token is the logits' argmax alone, which a GPU backend can
    // choose on the device (only the id crosses to the host).
    bool plain_greedy() const { return temperature <= 0 && repeat_penalty == 1.0f && presence_penalty == 0 && frequency_penalty == 0; }
};

class Sampler {
public:
    explicit Sampler(const SamplerConfig& cfg);
    // history: the prompt and generated tokens so far (for the repetition penalty).
    int32_t sample(std::span<const float> logits, std::span<const int32_t> history);
    // The first largest entry, as std::max_element (a NaN first entry: that entry): plain greedy's choice.
    static int32_t argmax(std::span<const float> logits);

    // The steps, exposed for tests. penalize: transformers' RepetitionPenaltyLogitsProcessor.
    static void penalize(std::vector<float>& logits, std::span<const int32_t> history, float penalty);
    // OpenAI's presence / frequency penalties (SamplerConfig), subtracted from the logits.
    static void penalize_additive(std::vector<float>& logits, std::span<const int32_t> history, float presence, float frequency);
    // The candidate set after temperature, top-k, top-p and min-p: (token, probability) pairs,
    // probabilities renormalized, sorted by descending probability.
    std::vector<std::pair<int32_t, float>> candidates(const std::vector<float>& logits) const;
    // Uniform double in [0, 1) from the seeded generator (53 random bits).
    double uniform();

    const SamplerConfig& config() const { return cfg_; }

private:
    SamplerConfig cfg_;
    std::mt19937_64 rng_;
};

}  // namespace tt
