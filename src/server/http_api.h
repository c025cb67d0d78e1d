// The OpenAI-compatible HTTP API over cpp-httplib (Debian's libcpp-httplib-dev): routes, the API
// key, error shapes, server-sent events, and the request log. Generation itself is the
// Scheduler's; this layer turns a request into a Job (prompt ids through the model's chat template
// or tokenizer, limits checked against the context) and the Job's events into OpenAI's JSON.
//
// note: httplib gives a handler no view of its socket, so a client that disconnects is noticed when
// a write to it fails: a streamed request is cancelled at its next token; a non-streamed one runs
// to its end (bounded by max_tokens and the context) and its answer is dropped.
#pragma once

#include "runtime/sampler.h"
#include "server/metrics.h"
#include "server/scheduler.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace httplib {
class Server;
}

namespace tt {
class ChatTemplate;
class Tokenizer;
}  // namespace tt

namespace tt::server {

// The model as the API shows it.
struct ServedModel {
    std::string id;                            // /v1/models' id and every answer's "model"
    const Tokenizer* tokenizer = nullptr;      // required
    const ChatTemplate* chat_template = nullptr;  // null: /v1/chat/completions answers 400 with no_template_reason
    std::string no_template_reason;
    nlohmann::ordered_json template_vars = nlohmann::ordered_json::object();
    std::vector<int32_t> eos_ids;              // completions' stop tokens
    std::vector<int32_t> chat_stop_ids;        // chat's: end of turn and EOS
    int bos_id = -1;
    SamplerConfig sampling;                    // the defaults requests override
    bool fixed_seed = false;                   // serve --seed: sampling.seed for requests without one (else one drawn per request)
};

struct HttpOptions {
    std::string host = "127.0.0.1";
    int port = 8080;
    std::string api_key;       // "" = no key required
    size_t max_body_bytes = 1 << 20;
    int n_threads = 16;        // HTTP worker threads
};

class HttpApi {
public:
    HttpApi(ServedModel model, Scheduler& scheduler, Metrics& metrics, HttpOptions opt);
    ~HttpApi();
    // Binds (tt::Error naming host:port when it cannot); then listen() serves until stop().
    void bind();
    int port() const { return port_; }
    void listen();
    // From now on /health answers 503 and new generation requests 503.
    void begin_stop();
    // Waits (up to 10 s) for the streams being written to end, then stops accepting and returns
    // listen() once the running handlers finished. Call after the scheduler stopped, so that the
    // streams end (cancelled) at once.
    void stop();

private:
    void routes();
    bool authorized(const std::string& header) const;
    void widen_backlog();

    ServedModel model_;
    Scheduler& scheduler_;
    Metrics& metrics_;
    HttpOptions opt_;
    std::unique_ptr<httplib::Server> svr_;
    std::atomic<bool> stopping_{false};
    std::atomic<int> streams_{0};  // streamed responses still being written
    int port_ = 0;
    std::string key_digest_;  // SHA-256 of the API key
};

}  // namespace tt::server
