#include "server/http_api.h"

#include "core/error.h"
#include "core/log.h"
#include "hub/sha256.h"
#include "runtime/chat_session.h"
#include "server/api_request.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

#include <httplib.h>
#include <openssl/crypto.h>

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <ctime>
#include <random>
#include <set>
#include <thread>

namespace tt::server {

namespace {

using Clock = std::chrono::steady_clock;

// A byte-level token cut inside a UTF-8 character is not valid UTF-8: replaced, not thrown.
std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const Json& j) {
    res.status = status;
    res.set_content(dump(j), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.status, e.to_json()); }

// OpenAI's finish_reason for Generation's stop reasons.
std::string finish_reason(const std::string& stop) {
    if (stop == "eos" || stop == "stop string") return "stop";
    if (stop == "max tokens" || stop == "context full") return "length";
    return stop;  // "cancelled": only ever logged, the client is gone
}

std::string random_id(const char* prefix) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    return fmt::format("{}{:016x}", prefix, rng());
}

struct Usage {
    int prompt = 0, completion = 0, cached = 0;
    Json to_json() const {
        return {{"prompt_tokens", prompt},
                {"completion_tokens", completion},
                {"total_tokens", prompt + completion},
                {"prompt_tokens_details", {{"cached_tokens", cached}}}};
    }
};

// The answer being built: text and logprobs, in the chat or the completions shape.
struct Answer {
    bool chat = true;
    const Tokenizer* tok = nullptr;
    std::string text;
    Json chat_logprobs = Json::array();  // chat: logprobs.content
    Json tokens = Json::array(), token_logprobs = Json::array(), top_logprobs = Json::array(), offsets = Json::array();

    std::string piece(int32_t id) const { return tok->decode(std::span<const int32_t>(&id, 1), false); }
    Json bytes(const std::string& s) const {
        Json b = Json::array();
        for (unsigned char c : s) b.push_back(int(c));
        return b;
    }
    // Adds one event; returns the logprobs of this event alone (for a streamed chunk), or null.
    Json add(const JobEvent& ev) {
        const size_t offset = text.size();
        text += ev.text;
        if (!ev.logprob) return Json();
        const TokenLogprob& lp = *ev.logprob;
        const std::string t = piece(lp.id);
        if (chat) {
            Json top = Json::array();
            for (const auto& [id, l] : lp.top) top.push_back({{"token", piece(id)}, {"logprob", l}, {"bytes", bytes(piece(id))}});
            Json entry = {{"token", t}, {"logprob", lp.logprob}, {"bytes", bytes(t)}, {"top_logprobs", top}};
            chat_logprobs.push_back(entry);
            return {{"content", Json::array({entry})}};
        }
        Json top = Json::object();
        for (const auto& [id, l] : lp.top) top[piece(id)] = l;
        tokens.push_back(t);
        token_logprobs.push_back(lp.logprob);
        top_logprobs.push_back(top);
        offsets.push_back(offset);
        return {{"tokens", {t}}, {"token_logprobs", {lp.logprob}}, {"top_logprobs", {top}}, {"text_offset", {offset}}};
    }
    Json logprobs() const {
        if (chat) return {{"content", chat_logprobs}};
        return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}, {"text_offset", offsets}};
    }
};

}  // namespace

HttpApi::HttpApi(ServedModel model, Scheduler& scheduler, Metrics& metrics, HttpOptions opt)
    : model_(std::move(model)), scheduler_(scheduler), metrics_(metrics), opt_(std::move(opt)),
      svr_(std::make_unique<httplib::Server>()) {
    TT_ASSERT(model_.tokenizer);
    if (!opt_.api_key.empty()) key_digest_ = hub::sha256_hex(opt_.api_key);
    routes();
}

HttpApi::~HttpApi() = default;

// The digests are compared, not the keys: CRYPTO_memcmp takes the same time whatever bytes
// differ, and comparing fixed-length digests hides the key's length as well.
bool HttpApi::authorized(const std::string& header) const {
    if (key_digest_.empty()) return true;
    const std::string prefix = "Bearer ";
    const std::string given = header.rfind(prefix, 0) == 0 ? header.substr(prefix.size()) : std::string();
    const std::string digest = hub::sha256_hex(given);
    return CRYPTO_memcmp(digest.data(), key_digest_.data(), key_digest_.size()) == 0 && !header.empty();
}

void HttpApi::bind() {
    const int p = opt_.port == 0 ? svr_->bind_to_any_port(opt_.host) : (svr_->bind_to_port(opt_.host, opt_.port) ? opt_.port : -1);
    if (p < 0) fail("--host {} --port {}: cannot listen there (in use, or not an address of this machine)", opt_.host, opt_.port);
    port_ = p;
    widen_backlog();
}

// note: Debian's libcpp-httplib is built with a listen backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG,
// compiled into the shared library) and exposes no listening socket. Eight clients connecting at
// once overflow it, and the kernel drops the extra SYNs: those clients wait for their 1 s SYN
// retransmit. listen() on a listening socket only updates its backlog, so we find ours (the
// listening socket bound to our port) and give it the system's maximum.
void HttpApi::widen_backlog() {
    for (int fd = 0; fd < 4096; ++fd) {
        int listening = 0;
        socklen_t len = sizeof listening;
        if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) continue;
        sockaddr_storage addr{};
        socklen_t alen = sizeof addr;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
        const int bound = addr.ss_family == AF_INET    ? ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port)
                          : addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                                       : -1;
        if (bound == port_ && ::listen(fd, SOMAXCONN) == 0) return;
    }
    log::warn("could not widen the listen backlog of port {} (httplib's is 5): clients connecting in bursts may wait 1 s", port_);
}

void HttpApi::listen() { svr_->listen_after_bind(); }

void HttpApi::begin_stop() { stopping_ = true; }

void HttpApi::stop() {
    stopping_ = true;
    // note: httplib stops writing a chunked body as soon as the server is stopping, cutting a stream
    // before its last chunk and [DONE]; so the streams finish first.
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (streams_ > 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (streams_ > 0) log::warn("{} stream(s) still being written after 10 s; closing them", streams_.load());
    svr_->stop();
}

void HttpApi::routes() {
    httplib::Server& svr = *svr_;
    const int n_threads = opt_.n_threads;
    svr.new_task_queue = [n_threads] { return new httplib::ThreadPool(size_t(n_threads)); };
    svr.set_payload_max_length(opt_.max_body_bytes);
    // note: a stream writes one small chunk per token; with Nagle's algorithm each would wait for
    // the client's delayed ACK (~40 ms), capping a stream at a few dozen writes per second.
    svr.set_tcp_nodelay(true);

    // Answers httplib makes itself (no route, a body over the limit, a request it cannot parse)
    // come out in OpenAI's error shape too.
    svr.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        std::string msg;
        if (res.status == 404) msg = fmt::format("no such endpoint: {} {}", req.method, req.path);
        else if (res.status == 413) msg = fmt::format("the request body exceeds the limit of {} bytes (--max-body)", opt_.max_body_bytes);
        else if (res.status == 400) msg = "malformed HTTP request";
        else msg = fmt::format("HTTP {}", res.status);
        send_json(res, res.status, ApiError(res.status, res.status >= 500 ? "server_error" : "invalid_request_error", "", "", msg).to_json());
        return httplib::Server::HandlerResponse::Handled;
    }));

    // One log line per request, and the request counter. Generation requests answered 200 log
    // when they end (with their tokens), from the handler.
    svr.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
        const bool generation = req.path == "/v1/chat/completions" || req.path == "/v1/completions";
        if (generation && res.status == 200) return;
        // Known endpoints only: a label per path a client invents would grow the metrics without bound.
        static const std::set<std::string> known = {"/health", "/metrics", "/v1/models", "/tokenize", "/detokenize",
                                                     "/v1/chat/completions", "/v1/completions"};
        metrics_.request(known.count(req.path) ? req.path : "other", res.status);
        log::info("{} {} {} {}", req.remote_addr, req.method, req.path, res.status);
    });

    svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (req.path == "/health" || authorized(req.get_header_value("Authorization")))
            return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, ApiError(401, "authentication_error", "", "invalid_api_key",
                                 "a valid API key is required: send 'Authorization: Bearer KEY' (serve --api-key or THINTENSOR_API_KEY)"));
        return httplib::Server::HandlerResponse::Handled;
    });

    svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        if (stopping_) send_json(res, 503, {{"status", "stopping"}});
        else send_json(res, 200, {{"status", "ok"}});
    });

    svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics_.render(scheduler_.gauges()), "text/plain; version=0.0.4");
    });

    svr.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        send_json(res, 200,
                  {{"object", "list"},
                   {"data", Json::array({{{"id", model_.id},
                                          {"object", "model"},
                                          {"created", 0},
                                          {"owned_by", "thintensor"},
                                          {"context_length", scheduler_.context_size()}}})}});
    });

    svr.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
        try {
            const Json b = parse_body(req.body);
            if (!b.contains("content") || !b["content"].is_string())
                throw ApiError::invalid("content", "content must be a string");
            bool add_special = false;
            if (b.contains("add_special")) {
                if (!b["add_special"].is_boolean()) throw ApiError::invalid("add_special", "add_special must be a boolean");
                add_special = b["add_special"].get<bool>();
            }
            send_json(res, 200, {{"tokens", model_.tokenizer->encode(b["content"].get<std::string>(), add_special)}});
        } catch (const ApiError& e) {
            send_error(res, e);
        } catch (const Error& e) {
            send_error(res, ApiError::invalid("content", e.what()));
        }
    });

    svr.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
        try {
            const Json b = parse_body(req.body);
            if (!b.contains("tokens") || !b["tokens"].is_array()) throw ApiError::invalid("tokens", "tokens must be an array of token ids");
            std::vector<int32_t> ids;
            for (const auto& t : b["tokens"]) {
                if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= model_.tokenizer->vocab_size())
                    throw ApiError::invalid("tokens", fmt::format("tokens must hold ids from 0 to {}, got {}", model_.tokenizer->vocab_size() - 1, t.dump()));
                ids.push_back(int32_t(t.get<int64_t>()));
            }
            send_json(res, 200, {{"content", model_.tokenizer->decode(ids, false)}});
        } catch (const ApiError& e) {
            send_error(res, e);
        }
    });

    // The two generation endpoints.
    const auto generation = [this](bool chat) {
        return [this, chat](const httplib::Request& req, httplib::Response& res) {
            try {
                const Json body = parse_body(req.body);
                GenerationParams p;
                std::vector<int32_t> ids;
                std::vector<int32_t> stop_ids;
                const char* prompt_field = chat ? "messages" : "prompt";
                if (chat) {
                    ChatRequest r = parse_chat_request(body, model_.sampling);
                    p = std::move(r.params);
                    if (!model_.chat_template) throw ApiError::invalid("messages", model_.no_template_reason);
                    std::string rendered;
                    try {
                        rendered = model_.chat_template->render(r.messages, /*add_generation_prompt=*/true, model_.template_vars);
                    } catch (const Error& e) {
                        throw ApiError::invalid("messages", fmt::format("the chat template failed on these messages: {}", e.what()));
                    }
                    ids = encode_chat_prompt(*model_.tokenizer, rendered);
                    stop_ids = model_.chat_stop_ids;
                } else {
                    CompletionRequest r = parse_completion_request(body, model_.sampling);
                    p = std::move(r.params);
                    if (const auto* text = std::get_if<std::string>(&r.prompt)) {
                        ids = model_.tokenizer->encode(*text, /*add_special_tokens=*/true);
                        if (ids.empty() && model_.bos_id >= 0) ids.push_back(model_.bos_id);  // as `run` starts from BOS
                    } else {
                        ids = std::get<std::vector<int32_t>>(r.prompt);
                        for (int32_t id : ids)
                            if (id >= model_.tokenizer->model_vocab_size())
                                throw ApiError::invalid("prompt", fmt::format("token id {} is outside the vocabulary of {}", id,
                                                                              model_.tokenizer->model_vocab_size()));
                    }
                    stop_ids = model_.eos_ids;
                }
                if (ids.empty()) throw ApiError::invalid(prompt_field, "the prompt has no tokens");
                const int ctx = scheduler_.context_size(), n = int(ids.size());
                if (n >= ctx)
                    throw ApiError::invalid(prompt_field,
                                            fmt::format("the prompt is {} tokens, and the context (--ctx-size) holds {}: no room for a reply", n, ctx),
                                            "context_length_exceeded");
                if (p.max_tokens && n + *p.max_tokens > ctx)
                    throw ApiError::invalid(body.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens",
                                            fmt::format("the prompt ({} tokens) plus {} tokens to generate exceed the context of {} (--ctx-size)",
                                                        n, *p.max_tokens, ctx),
                                            "context_length_exceeded");
                if (!p.seed_given && !model_.fixed_seed) p.sampling.seed = std::random_device{}();

                auto job = std::make_shared<Job>();
                job->prompt = std::move(ids);
                job->gen.max_tokens = p.max_tokens.value_or(ctx - n);
                job->gen.stop = p.stop;
                job->gen.eos_ids = stop_ids;
                job->sampling = p.sampling;
                job->top_logprobs = p.logprobs ? p.top_logprobs : -1;
                if (!scheduler_.submit(job)) {
                    if (stopping_) throw ApiError(503, "server_error", "", "", "the server is stopping");
                    throw ApiError(429, "rate_limit_error", "", "queue_full",
                                   "every slot is busy and the queue is full (serve --parallel / --queue); retry later");
                }
                const auto t0 = Clock::now();
                const std::string id = random_id(chat ? "chatcmpl-" : "cmpl-");
                const std::time_t created = std::time(nullptr);
                const std::string remote = req.remote_addr, path = req.path;
                auto end_log = [this, remote, path, t0, job](int status) {
                    metrics_.request(path, status);
                    log::info("{} POST {} {} prompt {} (cached {}) generated {} stop: {} {:.0f} ms", remote, path, status,
                              job->prompt_tokens, job->cached_tokens, job->completion_tokens,
                              job->error.empty() ? job->stop_reason : "error: " + job->error,
                              std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
                };
                const Json head = {{"id", id}, {"object", chat ? (p.stream ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
                                   {"created", created}, {"model", model_.id}};

                if (!p.stream) {
                    Answer a;
                    a.chat = chat;
                    a.tok = model_.tokenizer;
                    std::vector<JobEvent> evs;
                    while (job->wait(evs))
                        for (const auto& ev : evs) a.add(ev);
                    if (!job->error.empty()) {
                        end_log(500);
                        return send_error(res, ApiError(500, "server_error", "", "", job->error));
                    }
                    Json choice = {{"index", 0}};
                    if (chat) choice["message"] = {{"role", "assistant"}, {"content", a.text}};
                    else choice["text"] = a.text;
                    choice["logprobs"] = p.logprobs ? a.logprobs() : Json();
                    choice["finish_reason"] = finish_reason(job->stop_reason);
                    Json out = head;
                    out["choices"] = Json::array({choice});
                    out["usage"] = Usage{job->prompt_tokens, job->completion_tokens, job->cached_tokens}.to_json();
                    send_json(res, 200, out);
                    end_log(200);
                    return;
                }

                // Server-sent events: one chunk per batch of pieces, then the finish chunk, the
                // usage chunk when asked, and [DONE].
                struct Stream {
                    Answer a;
                    bool started = false;
                };
                auto st = std::make_shared<Stream>();
                st->a.chat = chat;
                st->a.tok = model_.tokenizer;
                const bool include_usage = p.include_usage, logprobs = p.logprobs;
                res.set_header("Cache-Control", "no-cache");
                ++streams_;
                res.set_chunked_content_provider(
                    "text/event-stream",
                    [st, job, head, chat, include_usage, logprobs, end_log](size_t, httplib::DataSink& sink) {
                        const auto send = [&](const std::string& data) {
                            const std::string ev = "data: " + data + "\n\n";
                            return sink.write(ev.data(), ev.size());
                        };
                        const auto chunk = [&](const Json& delta_or_text, const Json& lp, const Json& finish) {
                            Json c = head;
                            Json choice = {{"index", 0}};
                            if (chat) choice["delta"] = delta_or_text;
                            else choice["text"] = delta_or_text;
                            choice["logprobs"] = lp;
                            choice["finish_reason"] = finish;
                            c["choices"] = Json::array({choice});
                            if (include_usage) c["usage"] = Json();
                            return send(dump(c));
                        };
                        if (!st->started) {
                            st->started = true;
                            if (chat && !chunk({{"role", "assistant"}, {"content", ""}}, Json(), Json())) return job->cancel(), false;
                        }
                        std::vector<JobEvent> evs;
                        const bool more = job->wait(evs);
                        for (const auto& ev : evs) {
                            const Json lp = st->a.add(ev);
                            const Json content = chat ? Json{{"content", ev.text}} : Json(ev.text);
                            if (!chunk(content, logprobs ? lp : Json(), Json())) return job->cancel(), false;
                        }
                        if (more) return true;
                        if (!job->error.empty()) {
                            send(dump(ApiError(500, "server_error", "", "", job->error).to_json()));
                        } else {
                            chunk(chat ? Json::object() : Json(""), Json(), finish_reason(job->stop_reason));
                            if (include_usage) {
                                Json u = head;
                                u["choices"] = Json::array();
                                u["usage"] = Usage{job->prompt_tokens, job->completion_tokens, job->cached_tokens}.to_json();
                                send(dump(u));
                            }
                        }
                        send("[DONE]");
                        sink.done();
                        end_log(job->error.empty() ? 200 : 500);
                        return true;
                    },
                    [this, job, end_log](bool success) {
                        --streams_;
                        if (success) return;
                        // The client went away (or the server stops): the slot is freed at the next step.
                        job->cancel();
                        std::vector<JobEvent> rest;
                        while (job->wait(rest)) {
                        }
                        end_log(499);  // nginx's "client closed request"
                    });
            } catch (const ApiError& e) {
                send_error(res, e);
            } catch (const Error& e) {
                send_error(res, ApiError::invalid("", e.what()));
            } catch (const std::exception& e) {
                send_error(res, ApiError(500, "server_error", "", "", e.what()));
            }
        };
    };
    svr.Post("/v1/chat/completions", generation(true));
    svr.Post("/v1/completions", generation(false));
}

}  // namespace tt::server
