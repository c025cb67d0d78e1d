// core/thread_pool.h: shares cover [0, n) once each, whatever n and the pool size; the pool works
// hot (calls microseconds apart) and cold (after its threads went to sleep); it may be driven
// from a thread other than its creator; an exception in a share reaches the caller.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace tt;

namespace {

// Runs parallel_for(n) and checks every index was visited exactly once.
void expect_covered(ThreadPool& pool, size_t n) {
    std::vector<std::atomic<int>> seen(n);
    std::atomic<int> calls{0};
    pool.parallel_for(n, [&](size_t b, size_t e) {
        ASSERT_LT(b, e);
        ASSERT_LE(e, n);
        calls.fetch_add(1);
        for (size_t i = b; i < e; ++i) seen[i].fetch_add(1);
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i].load(), 1) << "index " << i << " of " << n;
    EXPECT_LE(calls.load(), pool.size());
}

}  // namespace

TEST(ThreadPool, SharesCoverTheRangeOnce) {
    for (int threads : {1, 2, 3, 5}) {
        ThreadPool pool(threads);
        EXPECT_EQ(pool.size(), threads);
        for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(3), size_t(4), size_t(7), size_t(100), size_t(1001)})
            expect_covered(pool, n);
    }
}

TEST(ThreadPool, ManyQuickDispatchesAndWakingFromSleep) {
    ThreadPool pool(3);
    std::atomic<uint64_t> sum{0};
    // Hot: thousands of dispatches back to back (the host decode path's pattern).
    for (int r = 0; r < 3000; ++r)
        pool.parallel_for(64, [&](size_t b, size_t e) {
            uint64_t s = 0;
            for (size_t i = b; i < e; ++i) s += i;
            sum.fetch_add(s);
        });
    EXPECT_EQ(sum.load(), 3000u * (63u * 64u / 2u));
    // Cold: the workers (and the waiting caller) outlast their spin and sleep, then must wake.
    for (int r = 0; r < 3; ++r) {
        std::this_thread::sleep_for(std::chrono::microseconds(4 * ThreadPool::k_spin_us));
        expect_covered(pool, 30);
    }
    // A share that outlasts the caller's spin: the caller sleeps until the last worker is done.
    std::atomic<int> slow{0};
    pool.parallel_for(3, [&](size_t b, size_t) {
        if (b == 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        slow.fetch_add(1);
    });
    EXPECT_EQ(slow.load(), 3);
}

TEST(ThreadPool, WorksFromAnotherThread) {
    // The CUDA backend drives its host layers from a CUDA host-callback thread.
    ThreadPool pool(3);
    expect_covered(pool, 10);
    std::thread other([&] {
        for (int r = 0; r < 100; ++r) expect_covered(pool, 17);
    });
    other.join();
    expect_covered(pool, 10);
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
    ThreadPool pool(3);
    for (size_t thrower : {size_t(0), size_t(2)}) {  // the caller's share, then a worker's
        std::atomic<int> finished{0};
        EXPECT_THROW(pool.parallel_for(3,
                                       [&](size_t b, size_t) {
                                           if (b == thrower) throw std::runtime_error("share failed");
                                           finished.fetch_add(1);
                                       }),
                     std::runtime_error);
        EXPECT_EQ(finished.load(), 2);  // the other shares still ran to the end
    }
    expect_covered(pool, 9);  // and the pool still works
}
