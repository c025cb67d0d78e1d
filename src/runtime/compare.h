// Logit comparison between a reference (transformers) and ThinTensor: the numbers `validate`
// reports. Per position: cosine similarity, max |difference|, top-1/top-5 agreement, KL(ref || ours).
#pragma once

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
};

// ref and got are [n_positions, vocab] row-major.
LogitComparison compare_logits(const float* ref, const float* got, int n_positions, int vocab);

}  // namespace tt
