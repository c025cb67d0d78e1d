// A small fixed pool of worker threads for data-parallel loops (the CPU backend splits a matmul's
// output rows across cores). parallel_for blocks until every chunk is done.
#pragma once

#include <condition_variable>
#include <cstddef>
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
    // Calls fn(begin, end) on disjoint ranges covering [0, n), spread over the pool.
    void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn);

private:
    void worker_loop(int index);
    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable cv_work_, cv_done_;
    const std::function<void(size_t, size_t)>* job_ = nullptr;
    size_t job_n_ = 0;
    uint64_t generation_ = 0;
    int pending_ = 0;
    bool stop_ = false;
};

}  // namespace tt
