// The positions a backend with recurrent states (Qwen3.5's DeltaNet layers) can rewind to. A KV
// cache keeps every position; a recurrent state only its latest, so the backend keeps host copies
// of its states at the positions a chat session asks for (Backend::checkpoint), beside 0 (the
// zero state) and n_past (nothing to undo). The backends own the states; this is the bookkeeping
// both share.
#pragma once

#include <cstddef>
#include <vector>

namespace tt {

class StateCheckpoints {
public:
    // The backend's state buffers, in its own order.
    using States = std::vector<std::vector<float>>;
    // The newest ones are kept (Qwen3.5-0.8B: ~19 MB each).
    static constexpr size_t k_max = 8;

    // The largest position <= n (and <= n_past) that can be restored.
    int restorable(int n, int n_past) const;
    // The states at pos, replacing any kept there.
    void keep(int pos, States states);
    // For a rewind from n_past to pos: drops the checkpoints past pos (the future being undone) and
    // returns the states kept at pos, or null when pos is 0 (the zero state) or n_past (nothing to
    // do). Throws tt::Error naming the positions when pos cannot be restored.
    const States* rewind_to(int pos, int n_past);

private:
    struct Entry {
        int pos = 0;
        States states;
    };
    std::vector<Entry> entries_;  // oldest first
};

}  // namespace tt
