#include "core/thread_pool.h"

#include "core/error.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tt {

namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
}

// Spins until done() or k_spin_us have passed; returns done(). Between clock reads it pauses a
// few times, then yields once, so that a pool sharing its cores with other work (two test
// binaries on two cores) hands the core over instead of burning it.
template <typename Done>
bool spin_until(Done done) {
    if (done()) return true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(ThreadPool::k_spin_us);
    for (;;) {
        for (int i = 0; i < 64; ++i) {
            if (done()) return true;
            cpu_relax();
        }
        if (std::chrono::steady_clock::now() >= deadline) return done();
        std::this_thread::yield();
    }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mu_);
        stop_.store(true);
        generation_.fetch_add(1);
    }
    cv_work_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::run_share(int index) noexcept {
    const size_t n = job_n_, parts = size_t(size());
    const size_t begin = n * size_t(index) / parts, end = n * size_t(index + 1) / parts;
    if (begin >= end) return;
    try {
        (*job_)(begin, end);
    } catch (...) {
        std::lock_guard lock(mu_);
        if (!error_) error_ = std::current_exception();
    }
}

void ThreadPool::worker_loop(int index) {
    // note: 0, the count at construction, not a load: the first job may be published before this
    // thread starts running.
    uint32_t seen = 0;
    for (;;) {
        // note: seq_cst on both sides of the sleep handshake: a worker counts itself sleeping and
        // then reads the generation; the caller bumps the generation and then reads the count, so
        // either the caller sees the sleeper (and notifies under the lock) or the sleeper sees the job.
        if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
            std::unique_lock lock(mu_);
            sleeping_workers_.fetch_add(1);
            cv_work_.wait(lock, [&] { return generation_.load() != seen; });
            sleeping_workers_.fetch_sub(1);
        }
        seen = generation_.load(std::memory_order_acquire);
        if (stop_.load()) return;
        run_share(index);
        if (pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {  // seq_cst, as above
            std::lock_guard lock(mu_);
            cv_done_.notify_one();
        }
    }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn) {
    if (workers_.empty() || n < 2) {
        if (n) fn(0, n);
        return;
    }
    const bool was_busy = busy_.exchange(true, std::memory_order_acquire);
    TT_ASSERT(!was_busy, "ThreadPool::parallel_for called from two threads at once, or from inside a job");
    job_ = &fn;
    job_n_ = n;
    error_ = nullptr;
    pending_.store(int(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1);  // seq_cst: publishes the job (see worker_loop)
    if (sleeping_workers_.load() > 0) {
        std::lock_guard lock(mu_);
        cv_work_.notify_all();
    }
    run_share(0);
    if (!spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
        // The same handshake as the workers': count as sleeping, then read (both seq_cst).
        std::unique_lock lock(mu_);
        caller_sleeping_.store(true);
        cv_done_.wait(lock, [&] { return pending_.load() == 0; });
        caller_sleeping_.store(false);
    }
    std::exception_ptr error = error_;
    error_ = nullptr;
    busy_.store(false, std::memory_order_release);
    if (error) std::rethrow_exception(error);
}

}  // namespace tt
