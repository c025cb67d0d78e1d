// thintensor serve MODEL: an OpenAI-compatible HTTP server (docs/SERVER.md). The model is loaded
// once; --parallel N sequence slots share its weights (the CPU and CUDA backends batch their decode
// steps; a backend with one sequence, --device host, serves one request at a time while the others
// queue). Listens on
// loopback unless --host says otherwise. SIGINT / SIGTERM stop accepting, cancel what is running
// and exit 0.
#include "cli/command.h"
#include "cli/model_args.h"
#include "core/error.h"
#include "core/log.h"
#include "runtime/chat_session.h"
#include "runtime/default_model.h"
#include "runtime/model_source.h"
#include "server/http_api.h"
#include "server/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include <pthread.h>
#include <signal.h>

namespace {

struct Opts {
    tt::cli::ModelArgs model;
    tt::cli::SamplingArgs sampling;
    std::string host = "127.0.0.1";
    int port = 8080;
    std::string api_key;
    int parallel = 1;
    int queue = 64;
    int max_body_kib = 1024;
    std::string alias, template_path;
    std::vector<std::string> vars;
};

constexpr int k_default_context = 4096;

// The id clients see: --alias, else a Hub id as given, else the file or folder name.
std::string model_id(const Opts& o) {
    if (!o.alias.empty()) return o.alias;
    if (o.model.model.empty()) return tt::k_default_model_name;
    if (!std::filesystem::exists(o.model.model)) return o.model.model;
    std::filesystem::path p = std::filesystem::path(o.model.model).lexically_normal();
    if (p.filename().empty()) p = p.parent_path();
    return p.extension() == ".thin" ? p.stem().string() : p.filename().string();
}

int serve(Opts o) {
    using namespace tt;
    if (o.api_key.empty())
        if (const char* k = std::getenv("THINTENSOR_API_KEY"); k && *k) o.api_key = k;

    // SIGINT / SIGTERM go to one thread that waits for them (blocked before any other thread
    // starts, so that every thread inherits the mask and none is interrupted mid-step).
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

    cli::ModelArgs margs = o.model;
    margs.model = fetch_model(o.model.model);
    cli::LoadedModel m = cli::load_model(margs, 0);
    if (!m.tokenizer) fail("{}: the model has no tokenizer; serve needs one (the API speaks text)", o.model.model);
    // Without --ctx-size each slot holds up to 4096 positions (the model's maximum when smaller):
    // N slots of a 128K-token cache would be N times the memory of the weights of a large model.
    m.create_backend(margs, std::min(m.spec.max_context, k_default_context), o.parallel);
    Backend& backend = *m.backend;
    if (backend.max_sequences() < o.parallel)
        fail("--parallel {}: the {} backend holds {} sequence{} at a time (--device cpu and --device cuda hold several); "
             "use --parallel {} (further requests then queue)",
             o.parallel, backend.describe(), backend.max_sequences(), backend.max_sequences() == 1 ? "" : "s", backend.max_sequences());

    server::ServedModel sm;
    sm.id = model_id(o);
    sm.tokenizer = m.tokenizer.get();
    sm.eos_ids = m.eos_ids();
    sm.bos_id = m.spec.bos_token_id;
    // Without --seed every request draws its own seed (sampling_config would announce one for the
    // whole run, which a server does not have).
    cli::SamplingArgs sa = o.sampling;
    if (!sa.seed) sa.seed = 0;
    sm.sampling = cli::sampling_config(sa, m);
    sm.fixed_seed = o.sampling.seed.has_value();
    std::optional<ChatTemplate> tmpl;
    if (!o.template_path.empty() || archive_has_chat_template(*m.archive)) {
        tmpl = chat_template_for(*m.archive, m.archive_path, o.model.model, o.template_path);
        sm.chat_template = &*tmpl;
        sm.template_vars = default_template_vars(*m.tokenizer, *tmpl);
        for (const auto& kv : o.vars) add_template_var(sm.template_vars, kv);
        sm.chat_stop_ids = chat_stop_ids(*m.tokenizer, *tmpl, sm.eos_ids);
    } else {
        if (!o.vars.empty()) fail("--var needs a chat template, and {} has none (give --template FILE)", sm.id);
        sm.no_template_reason = fmt::format("{} has no chat template, so /v1/chat/completions cannot render messages; "
                                            "use /v1/completions, or start serve with --template FILE",
                                            sm.id);
        log::warn("{}: no chat template; /v1/chat/completions answers 400 (start serve with --template FILE to enable it)", sm.id);
    }

    server::Metrics metrics;
    server::Scheduler scheduler(backend, m.tokenizer.get(), o.parallel, o.queue, metrics);
    server::HttpOptions ho;
    ho.host = o.host;
    ho.port = o.port;
    ho.api_key = o.api_key;
    ho.max_body_bytes = size_t(o.max_body_kib) * 1024;
    // A thread per running or queued request (each waits for its job) and a few for /health,
    // /metrics and the 429s of a full queue.
    ho.n_threads = o.parallel + o.queue + 4;
    server::HttpApi api(sm, scheduler, metrics, ho);
    api.bind();

    const bool batched = backend.max_sequences() > 1;
    log::info("serving {} on http://{}:{} with {} slot{} of {} tokens on {}; {}", sm.id, o.host, api.port(), o.parallel,
              o.parallel == 1 ? "" : "s", backend.context_size(), backend.describe(),
              batched ? "decode steps of concurrent requests are batched (one pass over the weights per step)"
                      : "one sequence at a time (requests queue)");
    if (o.api_key.empty() && o.host != "127.0.0.1" && o.host != "localhost" && o.host != "::1")
        log::warn("listening on {} without an API key: anyone who can reach it can use it (--api-key)", o.host);

    std::thread signals([&] {
        int sig = 0;
        sigwait(&sigs, &sig);
        log::info("{}: stopping (no new requests; running ones are cancelled)", sig == SIGINT ? "SIGINT" : "SIGTERM");
        api.begin_stop();
        scheduler.stop();
        api.stop();
    });
    api.listen();
    // listen() also returns when it failed: wake the signal thread so it stops the rest.
    pthread_kill(signals.native_handle(), SIGTERM);
    signals.join();
    log::info("stopped");
    return 0;
}

}  // namespace

static tt::cli::Registration reg("serve", "Serve a model over an OpenAI-compatible HTTP API", 45, [](CLI::App& sub) -> tt::cli::RunFn {
    auto o = std::make_shared<Opts>();
    tt::cli::add_model_args(sub, o->model);
    tt::cli::add_sampling_args(sub, o->sampling);
    sub.add_option("--host", o->host, "Address to listen on (default: loopback only; 0.0.0.0 = every interface)")->capture_default_str();
    sub.add_option("--port", o->port, "TCP port, 0 = any free one (the log says which)")->check(CLI::Range(0, 65535))->capture_default_str();
    sub.add_option("--api-key", o->api_key, "Require 'Authorization: Bearer KEY' (default: $THINTENSOR_API_KEY; none: no key)");
    sub.add_option("--parallel", o->parallel, "Sequence slots: requests generated at once, each with its own KV cache")
        ->check(CLI::Range(1, 256))->capture_default_str();
    sub.add_option("--queue", o->queue, "Requests that may wait for a slot; more are answered 429")
        ->check(CLI::Range(0, 4096))->capture_default_str();
    sub.add_option("--max-body", o->max_body_kib, "Largest request body in KiB; larger ones are answered 413")
        ->check(CLI::Range(1, 1 << 20))->capture_default_str();
    sub.add_option("--alias", o->alias, "The model id clients see (default: the model's file or folder name, or its Hub id)");
    sub.add_option("--template", o->template_path,
                   "The chat template for /v1/chat/completions instead of the model's (.jinja or tokenizer_config.json)");
    sub.add_option("--var", o->vars, "Extra chat template variable key=value; repeatable")->allow_extra_args(false);
    return [o]() -> int { return serve(*o); };
});
