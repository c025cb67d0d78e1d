// The server's Prometheus metrics (GET /metrics, text exposition format 0.0.4): request counts by
// endpoint and status, tokens in and out, prefix-cache reuse, time-to-first-token and per-token
// latency histograms, and the scheduler's gauges (queue depth, busy slots, KV cache use), which
// the scheduler hands over at render time. Thread-safe: HTTP threads and the scheduler record here.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace tt::server {

// A cumulative histogram over fixed bucket bounds (seconds).
class Histogram {
public:
    static constexpr std::array<double, 14> k_bounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                        0.25,  0.5,    1,     2.5,  5,    10,  30};
    void observe(double v);
    // The metric's lines: NAME_bucket{le=...}, NAME_sum, NAME_count.
    std::string render(const std::string& name, const std::string& help) const;

private:
    std::array<uint64_t, k_bounds.size() + 1> counts_{};  // the last: +Inf
    double sum_ = 0;
    uint64_t count_ = 0;
};

// What the scheduler reports at render time.
struct SchedulerGauges {
    int queued = 0;        // requests waiting for a slot
    int slots_busy = 0;    // slots generating or prefilling
    int slots_total = 0;
    int64_t kv_tokens = 0;     // positions held in the slots' caches (prefix cache included)
    int64_t kv_capacity = 0;   // slots_total * context
};

class Metrics {
public:
    void request(const std::string& endpoint, int status);
    void prompt_tokens(int fed, int reused);  // a request's prompt: computed / taken from the prefix cache
    void generated_token();
    void time_to_first_token(double seconds);
    void token_latency(double seconds);       // between two tokens of one request
    // One decode step over n sequences: the backend's call took step_s, choosing and handing out the
    // n tokens (sampling, detokenizing, the streams' events) tokens_s.
    void batch(int n, double step_s = 0, double tokens_s = 0);
    void cancelled();                         // a job ended because its client went away or the server stopped
    std::string render(const SchedulerGauges& g) const;

private:
    mutable std::mutex mu_;
    std::map<std::pair<std::string, int>, uint64_t> requests_;
    uint64_t prompt_fed_ = 0, prompt_reused_ = 0, generated_ = 0, decode_steps_ = 0, decode_rows_ = 0, cancelled_ = 0;
    double decode_s_ = 0, tokens_s_ = 0;
    Histogram ttft_, token_latency_;
};

}  // namespace tt::server
