// A small fixed pool of worker threads for data-parallel loops (the CPU backends split a matmul's
// output rows across cores). parallel_for blocks until every chunk is done.
//
// note: the host decode path (backends/host/) makes ~5 dispatches per layer and ~100 per token,
// each a few hundred microseconds of work at most, so waking sleeping threads through a condition
// variable (tens of microseconds with 16 threads) would cost as much as the work. The pool keeps
// its threads hot instead: after a job a worker spins on the job counter for k_spin_us before it
// sleeps on the condition variable, and the caller spins on the count of unfinished shares the same
// way before it sleeps. A pool used every few microseconds never touches the kernel; an idle one
// costs nothing after k_spin_us.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tt {

class ThreadPool {
public:
    // n_threads <= 0: one per hardware thread.
    explicit ThreadPool(int n_threads = 0);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return int(workers_.size()) + 1; }  // the caller works too
    // Calls fn(begin, end) on disjoint ranges covering [0, n), spread over the pool: the caller
    // runs the first share, worker i the (i+1)-th (shares of n / size(), in order). Returns when
    // every share is done; an exception thrown by fn is rethrown here (the first one, after every
    // share has finished).
    //
    // Any thread may call it (the CUDA backend calls it from a CUDA host-callback thread), but only
    // one thread at a time, and never from inside fn: the pool has one job slot (asserted).
    void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn);

    // How long an idle worker (and a waiting caller) spins before it sleeps.
    static constexpr int k_spin_us = 150;

private:
    void worker_loop(int index);
    void run_share(int index) noexcept;

    std::vector<std::thread> workers_;
    // The job: written by the caller before it bumps generation_, read by workers after they see it.
    const std::function<void(size_t, size_t)>* job_ = nullptr;
    size_t job_n_ = 0;
    std::exception_ptr error_;                  // the first exception of this job (under mu_)
    std::atomic<uint32_t> generation_{0};       // one more per job; workers wait for it to move
    std::atomic<int> pending_{0};               // worker shares of this job not yet finished
    std::atomic<bool> stop_{false};
    std::atomic<bool> busy_{false};             // a parallel_for is running (one caller at a time)
    // The sleeping side: workers that gave up spinning wait on cv_work_, a caller on cv_done_.
    std::mutex mu_;
    std::condition_variable cv_work_, cv_done_;
    std::atomic<int> sleeping_workers_{0};
    std::atomic<bool> caller_sleeping_{false};
};

}  // namespace tt
