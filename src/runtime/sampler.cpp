#include "runtime/sampler.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

namespace tt {

Sampler::Sampler(const SamplerConfig& cfg) : cfg_(cfg), rng_(cfg.seed) {}

double Sampler::uniform() { return double(rng_() >> 11) * 0x1.0p-53; }

void Sampler::penalize(std::vector<float>& logits, std::span<const int32_t> history, float penalty) {
    if (penalty == 1.0f) return;
    std::unordered_set<int32_t> seen(history.begin(), history.end());
    for (int32_t id : seen) {
        if (id < 0 || size_t(id) >= logits.size()) continue;
        float& l = logits[size_t(id)];
        l = l < 0 ? l * penalty : l / penalty;  // each token penalized once, whatever its count
    }
}

void Sampler::penalize_additive(std::vector<float>& logits, std::span<const int32_t> history, float presence, float frequency) {
    if (presence == 0.0f && frequency == 0.0f) return;
    std::unordered_map<int32_t, int> count;
    for (int32_t id : history) ++count[id];
    for (const auto& [id, c] : count) {
        if (id < 0 || size_t(id) >= logits.size()) continue;
        logits[size_t(id)] -= frequency * float(c) + presence;
    }
}

std::vector<std::pair<int32_t, float>> Sampler::candidates(const std::vector<float>& logits) const {
    const size_t n = logits.size();
    std::vector<int32_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    auto by_logit = [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b); };
    size_t keep = n;
    if (cfg_.top_k > 0 && size_t(cfg_.top_k) < n) {
        keep = size_t(cfg_.top_k);
        std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(keep), idx.end(), by_logit);
        idx.resize(keep);
    } else {
        std::sort(idx.begin(), idx.end(), by_logit);
    }
    // softmax(logits / T) over the kept tokens, in double.
    const double t = cfg_.temperature, top = double(logits[size_t(idx[0])]) / t;
    std::vector<double> p(idx.size());
    double sum = 0;
    for (size_t i = 0; i < idx.size(); ++i) sum += p[i] = std::exp(double(logits[size_t(idx[i])]) / t - top);
    for (auto& v : p) v /= sum;
    // top-p: the smallest prefix whose mass reaches top_p (at least one token).
    if (cfg_.top_p < 1.0f) {
        double cum = 0;
        size_t i = 0;
        while (i < p.size()) {
            cum += p[i++];
            if (cum >= cfg_.top_p) break;
        }
        keep = std::max<size_t>(1, i);
        idx.resize(keep);
        p.resize(keep);
    }
    // min-p: drop tokens less likely than min_p times the most likely one.
    if (cfg_.min_p > 0) {
        const double floor = double(cfg_.min_p) * p[0];
        size_t i = 1;
        while (i < p.size() && p[i] >= floor) ++i;
        idx.resize(i);
        p.resize(i);
    }
    double total = 0;
    for (double v : p) total += v;
    std::vector<std::pair<int32_t, float>> out(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) out[i] = {idx[i], float(p[i] / total)};
    return out;
}

int32_t Sampler::argmax(std::span<const float> logits) {
    TT_ASSERT(!logits.empty());
    // max_element's answer in two passes the compiler vectorizes: the largest value, then where it
    // first occurs.
    float m = logits[0];
    for (float v : logits) m = v > m ? v : m;
    const auto at = std::find(logits.begin(), logits.end(), m);
    return at == logits.end() ? 0 : int32_t(at - logits.begin());
}

int32_t Sampler::sample(std::span<const float> logits_in, std::span<const int32_t> history) {
    TT_ASSERT(!logits_in.empty());
    // Greedy without penalties: the argmax of the logits as given (no copy of a 128K-entry row per
    // token, which a server step pays for every sequence).
    if (cfg_.plain_greedy()) return argmax(logits_in);
    std::vector<float> logits(logits_in.begin(), logits_in.end());
    penalize(logits, history, cfg_.repeat_penalty);
    penalize_additive(logits, history, cfg_.presence_penalty, cfg_.frequency_penalty);
    if (cfg_.temperature <= 0) return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    const auto cand = candidates(logits);
    const double u = uniform();
    double cum = 0;
    for (const auto& [id, prob] : cand) {
        cum += prob;
        if (u < cum) return id;
    }
    return cand.back().first;  // u landed in the rounding gap at the top
}

}  // namespace tt
