// Logit comparison between a reference (transformers) and ThinTensor: the numbers `validate`
// reports. Per position: cosine similarity, max |difference|, top-1/top-5 agreement, KL(ref || ours).
//
// note: NaN compares false with everything, so a NaN would slip through `cos < bound` and
// std::max alike (max |delta| printed 0 on NaN logits before). A row holding NaN or +-Inf on either
// side is therefore recorded as such (the first one: position, side, token) and every metric
// becomes NaN with that position; callers fail on !finite() and name the position.
#pragma once

#include <string>
#include <vector>

namespace tt {

struct LogitComparison {
    int n_positions = 0;
    double min_cosine = 1.0;
    int min_cosine_pos = 0;
    double max_abs_diff = 0.0;
    int max_abs_diff_pos = 0;
    double top1_agreement = 1.0;  // fraction of positions whose argmax matches
    double top5_agreement = 1.0;  // fraction whose reference argmax is in our top 5
    double mean_kl = 0.0;         // mean over positions of KL(softmax(ref) || softmax(ours)), nats
    double max_kl = 0.0;
    int max_kl_pos = 0;
    // The first position where either side holds a non-finite logit, or -1.
    int nonfinite_pos = -1;
    bool nonfinite_in_reference = false;  // the reference's row (else ours)
    int nonfinite_token = -1;
    float nonfinite_value = 0;
    bool finite() const { return nonfinite_pos < 0; }
};

// ref and got are [n_positions, vocab] row-major.
LogitComparison compare_logits(const float* ref, const float* got, int n_positions, int vocab);

// Index of the first non-finite value of x[0, n), or -1.
int first_nonfinite(const float* x, int n);

// Where the first non-finite logit is: "<ours> hold NaN at position 3 (token 17)", with `ours` or
// `reference` naming the side it is on (e.g. "ThinTensor's logits", "the reference's logits_f32").
std::string describe_nonfinite(const LogitComparison& c, const std::string& ours, const std::string& reference);

}  // namespace tt
