#include "server/scheduler.h"

#include "core/error.h"
#include "core/log.h"
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

namespace tt::server {

namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

// log_softmax of the raw logits at `id`, and the k most likely tokens with theirs.
TokenLogprob logprobs_of(std::span<const float> logits, int32_t id, int k) {
    double mx = -INFINITY;
    for (float l : logits) mx = std::max(mx, double(l));
    double sum = 0;
    for (float l : logits) sum += std::exp(double(l) - mx);
    const double lse = mx + std::log(sum);
    TokenLogprob out;
    out.id = id;
    out.logprob = float(double(logits[size_t(id)]) - lse);
    if (k > 0) {
        std::vector<int32_t> idx(logits.size());
        for (size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t(i);
        const size_t kk = std::min(size_t(k), idx.size());
        std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(kk), idx.end(), [&](int32_t a, int32_t b) {
            return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
        });
        for (size_t i = 0; i < kk; ++i) out.top.emplace_back(idx[i], float(double(logits[size_t(idx[i])]) - lse));
    }
    return out;
}

}  // namespace

bool Job::wait(std::vector<JobEvent>& out) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !events_.empty() || finished_; });
    out.assign(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
    events_.clear();
    return !out.empty() || !finished_;
}

void Job::push(JobEvent e) {
    {
        std::lock_guard lock(mu_);
        events_.push_back(std::move(e));
    }
    cv_.notify_all();
}

void Job::finish() {
    {
        std::lock_guard lock(mu_);
        finished_ = true;
    }
    cv_.notify_all();
}

Scheduler::Scheduler(Backend& backend, const Tokenizer* tokenizer, int slots, int max_queue, Metrics& metrics)
    : backend_(backend), tokenizer_(tokenizer), metrics_(metrics), max_queue_(max_queue),
      context_size_(backend.context_size()), slots_(size_t(slots)) {
    TT_ASSERT(slots >= 1 && slots <= backend.max_sequences());
    // Up to 8 threads, half the cores at most (the others serve HTTP; a CPU backend's own pool
    // waits while this one runs); one on a small machine: then the rows are chosen in turn.
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    pool_ = std::make_unique<ThreadPool>(slots >= 4 ? std::clamp(cores / 2, 1, 8) : 1);
    thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { stop(); }

bool Scheduler::submit(const std::shared_ptr<Job>& job) {
    {
        std::lock_guard lock(mu_);
        if (stopping_ || int(queue_.size()) >= max_queue_) return false;
        job->arrived_ = Clock::now();
        queue_.push_back(job);
    }
    cv_.notify_all();
    return true;
}

void Scheduler::stop() {
    {
        std::lock_guard lock(mu_);
        if (stopping_ && !thread_.joinable()) return;
        stopping_ = true;
        for (auto& j : queue_) j->cancel();
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

SchedulerGauges Scheduler::gauges() const {
    std::lock_guard lock(mu_);
    return {int(queue_.size()), busy_, int(slots_.size()), kv_tokens_, int64_t(slots_.size()) * context_size_};
}

void Scheduler::loop() {
    for (;;) {
        bool stopping = false;
        {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || busy_ > 0; });
            stopping = stopping_;
            if (stopping) {
                for (auto& j : queue_) {
                    j->stop_reason = "cancelled";
                    j->finish();
                }
                queue_.clear();
            }
            admit(lock);
            if (stopping && busy_ == 0) return;
        }
        // Cancelled jobs leave first (a client that went away, or the server stopping).
        for (size_t s = 0; s < slots_.size(); ++s)
            if (slots_[s].job && (slots_[s].job->cancelled() || stopping)) {
                slots_[s].generation->end("cancelled", [](std::string_view) {});
                end_slot(int(s));
            }
        for (size_t s = 0; s < slots_.size(); ++s)
            if (slots_[s].job && slots_[s].fed < slots_[s].job->prompt.size()) prefill_step(int(s));
        decode_step();
        std::lock_guard lock(mu_);
        int64_t kv = 0;
        for (const Slot& sl : slots_) kv += int64_t(sl.cached.size());
        kv_tokens_ = kv;
    }
}

void Scheduler::admit(std::unique_lock<std::mutex>& lock) {
    while (!queue_.empty()) {
        // The free slot whose cache shares the longest prefix with the prompt (ties: the lowest).
        const auto& job = queue_.front();
        int best = -1;
        size_t best_len = 0;
        for (size_t s = 0; s < slots_.size(); ++s) {
            if (slots_[s].job) continue;
            const size_t len = common_prefix(slots_[s].cached, job->prompt);
            if (best < 0 || len > best_len) best = int(s), best_len = len;
        }
        if (best < 0) return;
        std::shared_ptr<Job> j = queue_.front();
        queue_.pop_front();
        if (j->cancelled()) {  // its client went away while it waited
            j->stop_reason = "cancelled";
            metrics_.cancelled();
            j->finish();
            continue;
        }
        ++busy_;
        lock.unlock();
        Slot& sl = slots_[size_t(best)];
        sl.job = j;
        try {
            // At least the last prompt token is fed again: its logits choose the first token.
            const size_t want = std::min(best_len, j->prompt.size() - 1);
            backend_.select_sequence(best);
            backend_.rewind(int(sl.cached.size()));  // the backend holds what `cached` says
            const int keep = backend_.restorable(int(want));
            backend_.rewind(keep);
            sl.cached.resize(size_t(keep));
            sl.fed = size_t(keep);
            j->prompt_tokens = int(j->prompt.size());
            j->cached_tokens = keep;
            metrics_.prompt_tokens(int(j->prompt.size()) - keep, keep);
            sl.sampler = std::make_unique<Sampler>(j->sampling);
            sl.generation = std::make_unique<Generation>(tokenizer_, j->gen, j->prompt);
            log::debug("slot {}: {} prompt tokens, {} from the prefix cache", best, j->prompt.size(), keep);
        } catch (const std::exception& e) {
            end_slot(best, e.what());
        }
        lock.lock();
    }
}

void Scheduler::prefill_step(int s) {
    Slot& sl = slots_[size_t(s)];
    const auto& prompt = sl.job->prompt;
    try {
        const size_t n = std::min(prompt.size() - sl.fed, size_t(k_prefill_chunk));
        backend_.select_sequence(s);
        const auto logits = backend_.forward(std::span<const int32_t>(prompt).subspan(sl.fed, n), false);
        sl.cached.insert(sl.cached.end(), prompt.begin() + std::ptrdiff_t(sl.fed), prompt.begin() + std::ptrdiff_t(sl.fed + n));
        sl.fed += n;
        if (sl.fed == prompt.size()) {
            backend_.checkpoint();  // a recurrent state can come back to this prompt (the next request's prefix)
            take_token(s, logits);
        }
    } catch (const std::exception& e) {
        end_slot(s, e.what());
    }
}

void Scheduler::decode_step() {
    std::vector<int> seqs;
    std::vector<int32_t> tokens;
    for (size_t s = 0; s < slots_.size(); ++s)
        if (slots_[s].job && slots_[s].fed == slots_[s].job->prompt.size() && !slots_[s].generation->done()) {
            seqs.push_back(int(s));
            tokens.push_back(slots_[s].next);
        }
    if (seqs.empty()) return;
    try {
        // When every row is plain greedy without logprobs, the backend chooses the tokens itself (on
        // a GPU only the ids cross to the host); a step with any other row takes every row's logits.
        bool greedy = true;
        for (int s : seqs) greedy = greedy && slots_[size_t(s)].job->top_logprobs < 0 && slots_[size_t(s)].sampler->config().plain_greedy();
        const auto t0 = Clock::now();
        std::vector<Choice> chosen(seqs.size());
        Clock::time_point t1;
        if (greedy) {
            std::vector<int32_t> ids(seqs.size());
            backend_.decode_batch_greedy(seqs, tokens, ids);
            t1 = Clock::now();
            for (size_t i = 0; i < seqs.size(); ++i) chosen[i].id = ids[i];
        } else {
            const auto logits = backend_.decode_batch(seqs, tokens);
            t1 = Clock::now();
            const size_t vocab = logits.size() / seqs.size();
            const auto choose_rows = [&](size_t b, size_t e) {
                for (size_t i = b; i < e; ++i) chosen[i] = choose(seqs[i], logits.subspan(i * vocab, vocab));
            };
            if (seqs.size() >= 4 && pool_->size() > 1) pool_->parallel_for(seqs.size(), choose_rows);
            else choose_rows(0, seqs.size());
        }
        for (size_t i = 0; i < seqs.size(); ++i) {
            slots_[size_t(seqs[i])].cached.push_back(tokens[i]);
            take_token(seqs[i], chosen[i]);
        }
        metrics_.batch(int(seqs.size()), seconds(t1 - t0), seconds(Clock::now() - t1));
    } catch (const std::exception& e) {
        for (int s : seqs) end_slot(s, e.what());
    }
}

Scheduler::Choice Scheduler::choose(int s, std::span<const float> logits) {
    Slot& sl = slots_[size_t(s)];
    Choice c;
    c.id = sl.sampler->sample(logits, sl.generation->history());
    if (sl.job->top_logprobs >= 0) c.logprob = logprobs_of(logits, c.id, sl.job->top_logprobs);
    return c;
}

void Scheduler::take_token(int s, const Choice& c) {
    Slot& sl = slots_[size_t(s)];
    Job& j = *sl.job;
    const int32_t next = c.id;
    JobEvent ev;
    ev.logprob = c.logprob;
    const auto now = Clock::now();
    if (sl.generation->tokens().empty()) metrics_.time_to_first_token(seconds(now - j.arrived_));
    else metrics_.token_latency(seconds(now - j.last_token_));
    j.last_token_ = now;
    const bool more = sl.generation->accept(next, int(sl.cached.size()), context_size_, [&](std::string_view t) { ev.text += t; });
    if (sl.generation->tokens().size() > size_t(j.completion_tokens)) {
        metrics_.generated_token();
        j.completion_tokens = int(sl.generation->tokens().size());
    }
    if (!ev.text.empty() || ev.logprob) j.push(std::move(ev));
    sl.next = next;
    if (!more) end_slot(s);
}

void Scheduler::end_slot(int s, const std::string& error) {
    Slot& sl = slots_[size_t(s)];
    std::shared_ptr<Job> j = std::move(sl.job);
    if (!error.empty()) {
        // The sequence's state is not known to match `cached` any more: start it afresh.
        log::warn("slot {}: {}", s, error);
        sl.cached.clear();
        try {
            backend_.select_sequence(s);
            backend_.rewind(0);
        } catch (const std::exception&) {
        }
        j->error = error;
    }
    j->stop_reason = sl.generation ? sl.generation->stop_reason() : "error";
    if (j->stop_reason.empty()) j->stop_reason = "error";
    if (j->stop_reason == "cancelled") metrics_.cancelled();
    sl.generation.reset();
    sl.sampler.reset();
    j->finish();
    std::lock_guard lock(mu_);
    --busy_;
}

}  // namespace tt::server
