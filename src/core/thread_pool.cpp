#include "core/thread_pool.h"

#include <algorithm>

namespace tt {

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    cv_work_.notify_all();
    for (auto& t : workers_) t.join();
}

static void run_share(const std::function<void(size_t, size_t)>& fn, size_t n, int index, int n_parts) {
    const size_t begin = n * size_t(index) / size_t(n_parts), end = n * size_t(index + 1) / size_t(n_parts);
    if (begin < end) fn(begin, end);
}

void ThreadPool::worker_loop(int index) {
    uint64_t seen = 0;
    for (;;) {
        const std::function<void(size_t, size_t)>* job;
        size_t n;
        {
            std::unique_lock lock(mu_);
            cv_work_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            job = job_;
            n = job_n_;
        }
        run_share(*job, n, index, size());
        {
            std::lock_guard lock(mu_);
            if (--pending_ == 0) cv_done_.notify_one();
        }
    }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn) {
    if (workers_.empty() || n < 2) {
        if (n) fn(0, n);
        return;
    }
    {
        std::lock_guard lock(mu_);
        job_ = &fn;
        job_n_ = n;
        pending_ = int(workers_.size());
        ++generation_;
    }
    cv_work_.notify_all();
    run_share(fn, n, 0, size());
    std::unique_lock lock(mu_);
    cv_done_.wait(lock, [&] { return pending_ == 0; });
}

}  // namespace tt
