// Decode's split between the CPU and the weight stream, chosen from decode's own token times.
//
// When a model is larger than VRAM, the plan decides how many of the layers outside VRAM decode on
// the CPU (the rest cross PCIe through the ring) from host rates it measures in about a second.
// On shared hosts those rates move by 30-50% within seconds, and so does the count they point to:
// sweeps of --cpu-layers on three H100 hosts found the plan's count the fastest on one and 6-17%
// behind the best on the other two (bench/results/2026-12-07-h100-alloc-slack/). Token times say
// what the host does now. So with --tune-split decode starts at the plan's count and climbs: it
// times a few tokens at each count beside the best so far, first one more CPU layer, then one
// fewer, goes on in the direction that was faster by a clear margin, and keeps the fastest. It is
// not the default: CPU and GPU layers round differently, so outputs would depend on timing.
//
// Pure logic: the backend times the tokens and moves the layers (set_decode_split in plan.h).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tt {

class SplitTuner {
public:
    struct Options {
        int samples = 5;         // tokens timed per count (their median), after one that is not timed
        double min_gain = 0.02;  // a count must be this much faster than the best so far to win
    };
    // Starts at `planned` (0..max_cpu). With max_cpu 0 there is nothing to tune: settled at once.
    SplitTuner(int planned, int max_cpu, Options o);
    SplitTuner(int planned, int max_cpu) : SplitTuner(planned, max_cpu, Options{}) {}

    int current() const { return current_; }
    int planned() const { return planned_; }
    bool settled() const { return settled_; }
    // One decode token's wall time at current(). Returns the count the next token runs with; when
    // it differs from current() before the call, the caller moves the layers. The first token after
    // each move is not counted: it captures the decode graph and copies KV rows across.
    int record(double seconds);
    // The median token time measured at count c, or 0 if none.
    double seconds_at(int c) const;
    // What was tried and kept: "9 CPU layers (19.10 ms a token) instead of the plan's 7 (22.31 ms);
    // tried 6: 23.02, 7: 22.31, 8: 20.40, 9: 19.10, 10: 19.75". Empty until settled.
    std::string report() const;

private:
    int move(int c);
    int settle();

    Options opt_;
    int planned_, max_cpu_, current_;
    int best_ = -1, dir_ = +1;
    bool turned_ = false, settled_ = false, skip_ = true;
    std::vector<double> samples_;   // at current_
    std::map<int, double> median_;  // per count tried
};

}  // namespace tt
