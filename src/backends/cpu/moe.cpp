#include "backends/cpu/moe.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tt::cpu {

void moe_route(const float* logits, int n_experts, int top_k, bool norm_topk, int32_t* ids, float* weights) {
    TT_ASSERT(top_k >= 1 && top_k <= n_experts);
    // routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
    float mx = logits[0];
    for (int e = 1; e < n_experts; ++e) mx = std::max(mx, logits[e]);
    std::vector<float> p(static_cast<size_t>(n_experts));
    float sum = 0;
    for (int e = 0; e < n_experts; ++e) sum += p[size_t(e)] = std::exp(logits[e] - mx);
    for (auto& v : p) v /= sum;
    // routing_weights, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    // note: softmax is monotonic, so ranking probabilities ranks logits; a stable order by
    // descending value keeps the lower index first among equals.
    std::vector<int32_t> order(static_cast<size_t>(n_experts));
    for (int e = 0; e < n_experts; ++e) order[size_t(e)] = e;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[size_t(a)] > p[size_t(b)]; });
    float kept = 0;
    for (int j = 0; j < top_k; ++j) {
        ids[j] = order[size_t(j)];
        weights[j] = p[size_t(ids[j])];
        kept += weights[j];
    }
    // if self.norm_topk_prob: routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
    if (norm_topk)
        for (int j = 0; j < top_k; ++j) weights[j] /= kept;
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace tt::cpu
