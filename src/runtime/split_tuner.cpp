#include "runtime/split_tuner.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace tt {

SplitTuner::SplitTuner(int planned, int max_cpu, Options o) : opt_(o), planned_(planned), max_cpu_(max_cpu), current_(planned) {
    TT_ASSERT(planned >= 0 && planned <= max_cpu && o.samples >= 1, "split tuner: {} of 0..{} CPU layers", planned, max_cpu);
    settled_ = max_cpu == 0;
}

int SplitTuner::move(int c) {
    current_ = c;
    samples_.clear();
    skip_ = true;
    return c;
}

int SplitTuner::settle() {
    settled_ = true;
    return best_ == current_ ? current_ : move(best_);
}

int SplitTuner::record(double seconds) {
    if (settled_) return current_;
    if (skip_) {
        skip_ = false;
        return current_;
    }
    samples_.push_back(seconds);
    if (int(samples_.size()) < opt_.samples) return current_;
    std::vector<double> s = samples_;
    std::nth_element(s.begin(), s.begin() + ptrdiff_t(s.size() / 2), s.end());
    median_[current_] = s[s.size() / 2];
    if (best_ < 0 || median_[current_] < median_[best_] * (1 - opt_.min_gain)) {
        best_ = current_;  // the plan's count, or a step that won: go on the same way
    } else if (!turned_) {
        turned_ = true;  // the first step lost: try the other side of the best
        dir_ = -dir_;
    } else {
        return settle();
    }
    int next = best_ + dir_;
    if ((next < 0 || next > max_cpu_ || median_.count(next)) && !turned_) {
        turned_ = true;
        dir_ = -dir_;
        next = best_ + dir_;
    }
    if (next < 0 || next > max_cpu_ || median_.count(next)) return settle();
    return move(next);
}

double SplitTuner::seconds_at(int c) const {
    const auto it = median_.find(c);
    return it == median_.end() ? 0.0 : it->second;
}

std::string SplitTuner::report() const {
    if (!settled_ || median_.empty()) return "";
    std::string tried;
    for (const auto& [c, s] : median_) tried += fmt::format("{}{}: {:.2f}", tried.empty() ? "" : ", ", c, s * 1e3);
    const std::string kept = best_ == planned_
                                 ? fmt::format("the plan's {} CPU layers kept ({:.2f} ms a token)", planned_, seconds_at(best_) * 1e3)
                                 : fmt::format("{} CPU layers ({:.2f} ms a token) instead of the plan's {} ({:.2f} ms)", best_,
                                               seconds_at(best_) * 1e3, planned_, seconds_at(planned_) * 1e3);
    return fmt::format("{}; tried {} (ms a token, median of {})", kept, tried, opt_.samples);
}

}  // namespace tt
