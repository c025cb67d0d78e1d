#include "runtime/state_checkpoints.h"

#include "core/error.h"

#include <algorithm>

namespace tt {

int StateCheckpoints::restorable(int n, int n_past) const {
    if (n >= n_past) return n_past;
    int best = 0;
    for (const auto& e : entries_)
        if (e.pos <= n) best = std::max(best, e.pos);
    return best;
}

void StateCheckpoints::keep(int pos, States states) {
    std::erase_if(entries_, [&](const Entry& e) { return e.pos == pos; });
    entries_.push_back({pos, std::move(states)});
    if (entries_.size() > k_max) entries_.erase(entries_.begin());
}

const StateCheckpoints::States* StateCheckpoints::rewind_to(int pos, int n_past) {
    TT_ASSERT(pos >= 0 && pos <= n_past);
    if (pos == n_past) return nullptr;
    if (restorable(pos, n_past) != pos)
        fail("rewind to position {}: the model's recurrent (linear-attention) state cannot go back there; positions "
             "it can return to: 0, {} and its checkpoints", pos, n_past);
    std::erase_if(entries_, [&](const Entry& e) { return e.pos > pos; });
    for (const auto& e : entries_)
        if (e.pos == pos) return &e.states;
    return nullptr;  // position 0
}

}  // namespace tt
