#include "runtime/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace tt {

namespace {
// log(sum(exp(x))) in double, stable.
double log_sum_exp(const float* x, int n) {
    double m = -INFINITY;
    for (int i = 0; i < n; ++i) m = std::max(m, double(x[i]));
    double s = 0;
    for (int i = 0; i < n; ++i) s += std::exp(double(x[i]) - m);
    return m + std::log(s);
}
int argmax(const float* x, int n) { return int(std::max_element(x, x + n) - x); }
}  // namespace

int first_nonfinite(const float* x, int n) {
    for (int i = 0; i < n; ++i)
        if (!std::isfinite(x[i])) return i;
    return -1;
}

std::string describe_nonfinite(const LogitComparison& c, const std::string& ours, const std::string& reference) {
    const float v = c.nonfinite_value;
    return fmt::format("{} hold {} at position {} (token {})", c.nonfinite_in_reference ? reference : ours,
                       std::isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf", c.nonfinite_pos, c.nonfinite_token);
}

LogitComparison compare_logits(const float* ref, const float* got, int n_pos, int vocab) {
    LogitComparison c;
    c.n_positions = n_pos;
    if (n_pos == 0) return c;
    int top1 = 0, top5 = 0;
    double kl_sum = 0;
    bool first = true;  // the first finite position sets the extremes
    std::vector<int> order(static_cast<size_t>(vocab));
    for (int p = 0; p < n_pos; ++p) {
        const float* r = ref + size_t(p) * size_t(vocab);
        const float* g = got + size_t(p) * size_t(vocab);
        if (c.nonfinite_pos < 0) {
            const int bad_ref = first_nonfinite(r, vocab), bad_got = first_nonfinite(g, vocab);
            if (bad_ref >= 0 || bad_got >= 0) {
                c.nonfinite_pos = p;
                c.nonfinite_in_reference = bad_ref >= 0;
                c.nonfinite_token = bad_ref >= 0 ? bad_ref : bad_got;
                c.nonfinite_value = bad_ref >= 0 ? r[bad_ref] : g[bad_got];
            }
        }
        if (c.nonfinite_pos >= 0) break;  // every metric is NaN from here on (below)
        double dot = 0, nr = 0, ng = 0, maxd = 0;
        for (int i = 0; i < vocab; ++i) {
            dot += double(r[i]) * g[i];
            nr += double(r[i]) * r[i];
            ng += double(g[i]) * g[i];
            maxd = std::max(maxd, std::abs(double(r[i]) - g[i]));
        }
        const double cos = (nr == 0 || ng == 0) ? (nr == ng ? 1.0 : 0.0) : dot / std::sqrt(nr * ng);
        if (first || cos < c.min_cosine) {
            c.min_cosine = cos;
            c.min_cosine_pos = p;
        }
        if (first || maxd > c.max_abs_diff) {
            c.max_abs_diff = maxd;
            c.max_abs_diff_pos = p;
        }
        const int ref_top = argmax(r, vocab);
        top1 += argmax(g, vocab) == ref_top;
        std::iota(order.begin(), order.end(), 0);
        const int k = std::min(5, vocab);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) { return g[a] > g[b]; });
        top5 += std::find(order.begin(), order.begin() + k, ref_top) != order.begin() + k;
        const double lr = log_sum_exp(r, vocab), lg = log_sum_exp(g, vocab);
        double kl = 0;
        for (int i = 0; i < vocab; ++i) {
            const double lpr = double(r[i]) - lr, lpg = double(g[i]) - lg;
            kl += std::exp(lpr) * (lpr - lpg);
        }
        kl = std::max(kl, 0.0);  // rounding can make a perfect match slightly negative
        kl_sum += kl;
        if (first || kl > c.max_kl) {
            c.max_kl = kl;
            c.max_kl_pos = p;
        }
        first = false;
    }
    if (c.nonfinite_pos >= 0) {
        c.min_cosine = c.max_abs_diff = c.max_kl = c.mean_kl = c.top1_agreement = c.top5_agreement = NAN;
        c.min_cosine_pos = c.max_abs_diff_pos = c.max_kl_pos = c.nonfinite_pos;
        return c;
    }
    c.top1_agreement = double(top1) / n_pos;
    c.top5_agreement = double(top5) / n_pos;
    c.mean_kl = kl_sum / n_pos;
    return c;
}

}  // namespace tt
