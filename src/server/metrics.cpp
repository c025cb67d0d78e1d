#include "server/metrics.h"

#include <fmt/format.h>

namespace tt::server {

void Histogram::observe(double v) {
    size_t i = 0;
    while (i < k_bounds.size() && v > k_bounds[i]) ++i;
    ++counts_[i];
    sum_ += v;
    ++count_;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
    std::string out = fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
    uint64_t cum = 0;
    for (size_t i = 0; i < k_bounds.size(); ++i) {
        cum += counts_[i];
        out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, k_bounds[i], cum);
    }
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name, sum_, name, count_);
    return out;
}

void Metrics::request(const std::string& endpoint, int status) {
    std::lock_guard lock(mu_);
    ++requests_[{endpoint, status}];
}

void Metrics::prompt_tokens(int fed, int reused) {
    std::lock_guard lock(mu_);
    prompt_fed_ += uint64_t(fed);
    prompt_reused_ += uint64_t(reused);
}

void Metrics::generated_token() {
    std::lock_guard lock(mu_);
    ++generated_;
}

void Metrics::time_to_first_token(double s) {
    std::lock_guard lock(mu_);
    ttft_.observe(s);
}

void Metrics::token_latency(double s) {
    std::lock_guard lock(mu_);
    token_latency_.observe(s);
}

void Metrics::batch(int n, double step_s, double tokens_s) {
    std::lock_guard lock(mu_);
    ++decode_steps_;
    decode_rows_ += uint64_t(n);
    decode_s_ += step_s;
    tokens_s_ += tokens_s;
}

void Metrics::cancelled() {
    std::lock_guard lock(mu_);
    ++cancelled_;
}

std::string Metrics::render(const SchedulerGauges& g) const {
    std::lock_guard lock(mu_);
    std::string out = "# HELP thintensor_requests_total HTTP requests answered, by endpoint and status\n"
                      "# TYPE thintensor_requests_total counter\n";
    for (const auto& [key, n] : requests_)
        out += fmt::format("thintensor_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, n);
    const auto counter = [&](const char* name, const char* help, auto v) {  // a count, or seconds
        out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
    };
    const auto gauge = [&](const char* name, const char* help, int64_t v) {
        out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, v);
    };
    counter("thintensor_prompt_tokens_total", "Prompt tokens computed (prefilled)", prompt_fed_);
    counter("thintensor_prompt_tokens_reused_total", "Prompt tokens taken from a slot's prefix cache", prompt_reused_);
    counter("thintensor_generated_tokens_total", "Tokens generated", generated_);
    counter("thintensor_decode_steps_total", "Batched decode steps", decode_steps_);
    counter("thintensor_decode_rows_total", "Sequences advanced by the decode steps (rows / steps = mean batch)", decode_rows_);
    counter("thintensor_decode_step_seconds_total", "Time in the backend's decode steps", decode_s_);
    counter("thintensor_token_handling_seconds_total", "Time choosing and streaming the decode steps' tokens", tokens_s_);
    counter("thintensor_requests_cancelled_total", "Generations cancelled: the client went away, or the server stopped", cancelled_);
    out += ttft_.render("thintensor_time_to_first_token_seconds", "From a request's arrival to its first token");
    out += token_latency_.render("thintensor_token_latency_seconds", "Between two generated tokens of one request");
    gauge("thintensor_queue_depth", "Requests waiting for a slot", g.queued);
    gauge("thintensor_slots_busy", "Slots running a request", g.slots_busy);
    gauge("thintensor_slots_total", "Slots (--parallel)", g.slots_total);
    gauge("thintensor_kv_cache_tokens", "Positions held in the slots' KV caches (prefix caches included)", g.kv_tokens);
    gauge("thintensor_kv_cache_capacity_tokens", "Positions the slots' KV caches can hold", g.kv_capacity);
    return out;
}

}  // namespace tt::server
