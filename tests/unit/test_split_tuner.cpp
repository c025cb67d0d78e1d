#include "runtime/split_tuner.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <vector>

using namespace tt;

namespace {

// Decodes tokens with the token time `cost(count)` until the tuner settles; returns the counts
// each token ran at. The first token at each count costs 1 s (the graph capture the tuner skips).
std::vector<int> run(SplitTuner& t, const std::function<double(int)>& cost, int max_tokens = 200) {
    std::vector<int> at;
    int prev = -1;
    for (int i = 0; i < max_tokens && !t.settled(); ++i) {
        const int c = t.current();
        at.push_back(c);
        const int next = t.record(c != prev ? 1.0 : cost(c));
        prev = c;
        (void)next;
    }
    return at;
}

double bowl(int c, int best) { return 0.020 + 0.002 * (c - best) * (c - best); }

}  // namespace

TEST(SplitTuner, ClimbsToTheFastestCountAndKeepsIt) {
    SplitTuner t(7, 13);
    const std::vector<int> at = run(t, [](int c) { return bowl(c, 9); });
    EXPECT_TRUE(t.settled());
    EXPECT_EQ(t.current(), 9);
    // 7, then one more CPU layer while that wins (8, 9), 10 loses, 8 is known: keep 9. Six tokens a
    // count (one untimed, five timed).
    const std::vector<int> want = {7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10};
    EXPECT_EQ(at, want);
    EXPECT_NEAR(t.seconds_at(9), 0.020, 1e-12);
    EXPECT_EQ(t.report(), "9 CPU layers (20.00 ms a token) instead of the plan's 7 (28.00 ms); tried 7: 28.00, 8: 22.00, "
                          "9: 20.00, 10: 22.00 (ms a token, median of 5)");
    EXPECT_EQ(t.record(0.001), 9);  // settled: no more moves
}

TEST(SplitTuner, TurnsBackWhenOneMoreCpuLayerLoses) {
    SplitTuner t(7, 13);
    run(t, [](int c) { return bowl(c, 5); });
    EXPECT_EQ(t.current(), 5);  // 7, 8 loses, 6 and 5 win, 4 loses: back to 5
    EXPECT_GT(t.seconds_at(8), 0);
    EXPECT_GT(t.seconds_at(4), 0);
    EXPECT_EQ(t.seconds_at(3), 0);
}

TEST(SplitTuner, KeepsThePlansCountWhenItIsFastest) {
    SplitTuner t(7, 13);
    run(t, [](int c) { return bowl(c, 7); });
    EXPECT_EQ(t.current(), 7);
    EXPECT_EQ(t.report().rfind("the plan's 7 CPU layers kept (20.00 ms a token); tried 6: 22.00, 7: 20.00, 8: 22.00", 0), 0u)
        << t.report();
}

TEST(SplitTuner, ASmallGainIsNoiseNotAWin) {
    // One more CPU layer 1% faster: below the 2% margin, so the plan's count stays.
    SplitTuner t(4, 8);
    run(t, [](int c) { return c == 5 ? 0.0198 : 0.020 + 0.001 * std::abs(c - 4); });
    EXPECT_EQ(t.current(), 4);
}

TEST(SplitTuner, MedianIgnoresOneSlowToken) {
    SplitTuner t(2, 4);
    int n = 0;
    run(t, [&](int c) { return (++n % 5 == 0 ? 1.0 : 0.0) + bowl(c, 3); });
    EXPECT_EQ(t.current(), 3);
}

TEST(SplitTuner, BoundsAndNothingToTune) {
    SplitTuner none(0, 0);
    EXPECT_TRUE(none.settled());
    EXPECT_EQ(none.record(0.01), 0);
    EXPECT_EQ(none.report(), "");
    SplitTuner top(6, 6);  // the plan put every movable layer on the CPU: try one fewer
    run(top, [](int c) { return bowl(c, 4); });
    EXPECT_EQ(top.current(), 4);
    SplitTuner bottom(0, 3);  // the plan put none there: try one
    run(bottom, [](int c) { return bowl(c, 0); });
    EXPECT_EQ(bottom.current(), 0);
    EXPECT_GT(bottom.seconds_at(1), 0);
}
