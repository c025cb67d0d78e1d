// The scheduler: one thread that owns the backend and runs every request through its sequence
// slots (Backend::max_sequences, serve --parallel), so that the weights are loaded once.
//
// Each step it (1) admits queued jobs into free slots, picking the slot whose cached tokens share
// the longest prefix with the job's prompt and rewinding the slot to that prefix (the prefix cache;
// a recurrent-state model rewinds only as far as Backend::restorable allows), (2) feeds every
// prefilling slot one chunk of its prompt (k_prefill_chunk tokens, so that a long prompt does not
// stall the others for more than a chunk), and (3) advances every decoding slot by one token in one
// Backend::decode_batch call (continuous batching: jobs join and leave between steps; a step whose
// rows are all plain greedy lets the backend choose, decode_batch_greedy). Tokens are chosen by tt::Sampler and ended by tt::Generation, the pieces `run` uses, so greedy text equals
// run's and a seed reproduces.
//
// Jobs talk to HTTP threads through their own event queue; a cancelled job (client gone, server
// stopping) leaves its slot at the next step.
#pragma once

#include "core/thread_pool.h"
#include "runtime/backend.h"
#include "runtime/generate.h"
#include "server/metrics.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tt {
class Tokenizer;
}

namespace tt::server {

// One token's log-probabilities (logprobs requests): the model's distribution, log_softmax of the
// raw logits (before temperature and penalties).
struct TokenLogprob {
    int32_t id = 0;
    float logprob = 0;
    std::vector<std::pair<int32_t, float>> top;  // the most likely tokens, best first
};

// What a job sends back, in order: text pieces (each with the token that produced it, when
// logprobs were asked), then the end.
struct JobEvent {
    std::string text;
    std::optional<TokenLogprob> logprob;
};

class Job {
public:
    // Inputs, set before submit().
    std::vector<int32_t> prompt;
    GenerateOptions gen;   // max_tokens, stop, eos_ids (should_stop is the scheduler's)
    SamplerConfig sampling;
    int top_logprobs = -1;  // -1: no logprobs; else that many alternatives per token

    // Waits for the next events (or the end); false once everything was taken and the job ended.
    bool wait(std::vector<JobEvent>& out);
    // Asks the scheduler to stop the job (the client went away); it ends with "cancelled".
    void cancel() { cancelled_ = true; }
    bool cancelled() const { return cancelled_; }

    // Set when the job ended (read after wait() returned false).
    std::string stop_reason;    // Generation's, or "cancelled"
    std::string error;          // non-empty: the job failed (HTTP 500)
    int prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;

private:
    friend class Scheduler;
    void push(JobEvent e);
    void finish();

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<JobEvent> events_;
    bool finished_ = false;
    std::atomic<bool> cancelled_{false};
    std::chrono::steady_clock::time_point arrived_, last_token_;
};

class Scheduler {
public:
    static constexpr int k_prefill_chunk = 256;

    // backend: created with `slots` sequences (max_sequences() >= slots). max_queue: jobs that
    // may wait for a slot; more are refused (submit returns false: the server answers 429).
    Scheduler(Backend& backend, const Tokenizer* tokenizer, int slots, int max_queue, Metrics& metrics);
    ~Scheduler();  // stop()s
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Queues the job; false when the queue is full or the scheduler stopped.
    bool submit(const std::shared_ptr<Job>& job);
    // Cancels every job, running and queued, refuses new ones, and joins the thread.
    void stop();
    SchedulerGauges gauges() const;
    int context_size() const { return context_size_; }

private:
    struct Slot {
        std::shared_ptr<Job> job;         // null: free
        std::vector<int32_t> cached;      // the ids this slot's sequence holds (its prefix cache)
        size_t fed = 0;                   // prompt tokens in the cache so far
        std::unique_ptr<Sampler> sampler;
        std::unique_ptr<Generation> generation;
        int32_t next = 0;                 // the sampled token to feed in the next decode step
    };

    void loop();
    void admit(std::unique_lock<std::mutex>& lock);
    void prefill_step(int s);
    void decode_step();
    // A slot's next token from its logits: chosen by its sampler (with the log-probabilities when
    // asked), then handed to its generation and its stream. choose() touches only slot s, so a
    // decode step chooses for all its rows at once, on pool_.
    struct Choice {
        int32_t id = 0;
        std::optional<TokenLogprob> logprob;
    };
    Choice choose(int s, std::span<const float> logits);
    void take_token(int s, const Choice& c);
    void take_token(int s, std::span<const float> logits) { take_token(s, choose(s, logits)); }
    void end_slot(int s, const std::string& error = {});

    Backend& backend_;
    const Tokenizer* tokenizer_;
    Metrics& metrics_;
    const int max_queue_;
    const int context_size_;
    std::vector<Slot> slots_;
    // Choosing a step's tokens: each row reads a whole vocabulary of logits (128K for Llama 3), which
    // on one thread took longer than the GPU's batched step at 64 rows (docs/SERVER.md).
    std::unique_ptr<ThreadPool> pool_;
    mutable std::mutex mu_;                 // guards queue_, stopping_ and the gauges below
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Job>> queue_;
    bool stopping_ = false;
    int busy_ = 0;
    int64_t kv_tokens_ = 0;
    std::thread thread_;
};

}  // namespace tt::server
