// thintensor run MODEL --prompt TEXT: generate text, streamed to stdout; statistics to stderr.
// The prompt comes from --prompt, --prompt-file FILE (- = stdin), or, with neither, from stdin when
// stdin is a pipe or a file. --json prints the text and the statistics as one JSON object on stdout
// instead of streaming. Ctrl-C ends generation with the statistics so far and exit code 130.
// With --chat the prompt is the user message of a one-turn conversation rendered through the
// model's chat template (or --template), with an optional --system message, and generation stops
// on the template's end-of-turn tokens as well as EOS.
// A Hugging Face model whose architecture ThinTensor does not support is run through transformers
// instead (the Python helper, tools/thintensor_hf.py), loudly; --no-fallback makes it an error.
#include "cli/command.h"
#include "cli/interrupt.h"
#include "cli/model_args.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/log.h"
#include "runtime/chat_session.h"
#include "runtime/generate.h"
#include "runtime/hf_helper.h"
#include "runtime/model_source.h"
#include "model/hf_config.h"

#include <fmt/ranges.h>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>

namespace {

struct Opts {
    tt::cli::ModelArgs model;
    tt::cli::SamplingArgs sampling;
    std::string prompt, prompt_file;
    int max_tokens = 256;
    std::vector<std::string> stop;
    bool no_bos = false;
    bool chat = false;
    std::string system, template_path;
    std::vector<std::string> vars;
    bool no_fallback = false;
    bool json = false;
    bool prompt_set = false;
    bool context_set = false, threads_set = false, profile_set = false, budget_set = false;
};

// The transformers fallback for an architecture ThinTensor does not convert: the same prompt and
// sampling flags, passed to the helper's generate mode, which streams text to our stdout.
int run_transformers(const Opts& o, const std::string& model_dir, const std::string& arch, const std::string& prompt) {
    using namespace tt;
    // The converter's wording (model/hf_config.cpp), so that the error reads the same with --no-fallback.
    const std::string unsupported = fmt::format("{}: unsupported architecture '{}' (supported: {})",
                                                (std::filesystem::path(model_dir) / "config.json").string(), arch,
                                                fmt::join(supported_architectures(), ", "));
    if (o.no_fallback) fail("{}; --no-fallback forbids running it through transformers", unsupported);
    if (o.json) fail("{}; the transformers fallback streams text only, so --json cannot be used with it", unsupported);
    log::warn("{}: ThinTensor cannot run it", unsupported);
    log::warn("FALLING BACK to Hugging Face transformers: this run does not use ThinTensor's engine "
              "(slower; --no-fallback makes this an error)");
    std::vector<std::string> ignored;
    if (!o.template_path.empty()) ignored.push_back("--template");
    if (!o.vars.empty()) ignored.push_back("--var");
    if (o.context_set) ignored.push_back("--context");
    if (o.threads_set) ignored.push_back("--threads");
    if (o.profile_set) ignored.push_back("--profile");
    if (o.budget_set) ignored.push_back("--vram-budget/--ram-budget");
    if (!ignored.empty()) log::warn("the transformers fallback ignores {}", fmt::join(ignored, ", "));

    std::string device = cli::device_of(o.model);
    if (device.empty()) device = default_device() == "cpu" ? "cpu" : "cuda";
    if (device == "host") device = "cpu";  // transformers has one CPU device
    const auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
    const auto& s = o.sampling;
    nlohmann::json req = {{"mode", "generate"},
                          {"model_dir", model_dir},
                          {"device", device},
                          {"dtype", device == "cpu" ? "float32" : "bfloat16"},
                          {"prompt", prompt},
                          {"max_tokens", o.max_tokens},
                          {"chat", o.chat},
                          {"system", o.system},
                          {"no_bos", o.no_bos},
                          {"stop", o.stop},
                          {"sampling",
                           {{"temperature", opt(s.temperature)},
                            {"top_k", opt(s.top_k)},
                            {"top_p", opt(s.top_p)},
                            {"min_p", opt(s.min_p)},
                            {"repeat_penalty", opt(s.repeat_penalty)},
                            {"seed", opt(s.seed)}}}};
    try {
        run_hf_helper("generate", std::move(req), HelperOutput::inherit);
    } catch (const Error& e) {
        fail("{}, and the transformers fallback failed: {}", unsupported, e.what());
    }
    return 0;
}

// The prompt ids and the stop tokens of a one-turn chat: [system], user -> template -> tokens.
std::vector<int32_t> chat_prompt(const Opts& o, const tt::cli::LoadedModel& m, const std::string& prompt,
                                 std::vector<int32_t>& stop_ids) {
    using namespace tt;
    if (!m.tokenizer) fail("{}: the model has no tokenizer, and --chat needs one", o.model.model);
    const ChatTemplate tmpl = chat_template_for(*m.archive, m.archive_path, o.model.model, o.template_path);
    nlohmann::ordered_json vars = default_template_vars(*m.tokenizer, tmpl);
    for (const auto& kv : o.vars) add_template_var(vars, kv);
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
    messages.push_back({{"role", "user"}, {"content", prompt}});
    const std::string rendered = tmpl.render(messages, /*add_generation_prompt=*/true, vars);
    log::debug("chat prompt: {}", rendered);
    stop_ids = chat_stop_ids(*m.tokenizer, tmpl, m.eos_ids());
    return encode_chat_prompt(*m.tokenizer, rendered);
}

// --prompt, --prompt-file (- = stdin), or stdin when it is a pipe or a file and neither was given.
// The text is used byte for byte, a final newline included: a prompt file is often a rendered
// template (`thintensor template ... > p.txt`) whose last newline is part of the prompt.
std::string read_prompt(const Opts& o) {
    using namespace tt;
    if (o.prompt_set && !o.prompt_file.empty()) fail("give --prompt or --prompt-file, not both");
    if (!o.prompt_file.empty()) return read_input(o.prompt_file, "--prompt-file");
    if (!o.prompt_set && stdin_is_piped()) {
        log::info("reading the prompt from stdin (no --prompt given; -p '' starts from BOS instead)");
        return read_input("-", "prompt on");
    }
    return o.prompt;
}

// Text to stdout as it is generated, remembering whether the last byte ended a line, so that the
// output always ends with exactly one newline of ours at most.
struct Stream {
    bool printed = false, at_line_start = true;
    void write(std::string_view text) {
        if (text.empty()) return;
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        printed = true;
        at_line_start = text.back() == '\n';
    }
    void end_line() {
        if (printed && !at_line_start) write("\n");
    }
};

nlohmann::json stats_json(const tt::GenerateStats& st, const tt::SamplerConfig& sc, const std::string& text,
                          const tt::cli::LoadedModel& m) {
    const double prefill_rate = st.prefill_seconds > 0 ? st.prompt_tokens / st.prefill_seconds : 0;
    const double decode_rate = st.decode_seconds > 0 ? st.decode_steps / st.decode_seconds : 0;
    nlohmann::json sampling = {{"temperature", sc.temperature}};
    if (sc.temperature > 0)
        sampling.update({{"top_k", sc.top_k}, {"top_p", sc.top_p}, {"min_p", sc.min_p}, {"seed", sc.seed}});
    sampling["repeat_penalty"] = sc.repeat_penalty;
    return {{"model", m.archive_path},
            {"backend", m.backend->describe()},
            {"text", text},
            {"tokens", st.tokens},
            {"stop_reason", st.stop_reason},
            {"prompt_tokens", st.prompt_tokens},
            {"generated_tokens", st.generated_tokens},
            {"prefill_seconds", st.prefill_seconds},
            {"decode_seconds", st.decode_seconds},
            {"prefill_tokens_per_s", prefill_rate},
            {"decode_tokens_per_s", decode_rate},
            {"time_to_first_token_ms", st.time_to_first_token * 1e3},
            {"sampling", sampling}};
}

int run(const Opts& o) {
    using namespace tt;
    const std::string prompt = read_prompt(o);
    if (o.max_tokens < 1) fail("--max-tokens must be at least 1, got {}", o.max_tokens);

    if (!o.chat) {
        if (!o.system.empty()) fail("--system needs --chat (the system message goes through the chat template)");
        if (!o.template_path.empty()) fail("--template needs --chat");
        if (!o.vars.empty()) fail("--var needs --chat");
    } else if (o.no_bos) {
        fail("--no-bos cannot be combined with --chat (the chat template decides the special tokens)");
    }

    // An unsupported architecture never reaches the converter: the fallback decides first.
    cli::ModelArgs margs = o.model;
    margs.model = fetch_model(o.model.model);
    if (const std::string arch = unsupported_architecture(margs.model); !arch.empty())
        return run_transformers(o, std::filesystem::absolute(margs.model).lexically_normal().string(), arch, prompt);

    cli::LoadedModel m = cli::load_model(margs, /*needed_context=*/0);
    std::vector<int32_t> stop_ids = m.eos_ids();
    std::vector<int32_t> ids = o.chat ? chat_prompt(o, m, prompt, stop_ids) : cli::encode_prompt(m, prompt, !o.no_bos);
    m.create_backend(o.model, int(ids.size()) + o.max_tokens);

    GenerateOptions g;
    g.max_tokens = o.max_tokens;
    g.sampling = cli::sampling_config(o.sampling, m);
    g.stop = o.stop;
    g.eos_ids = stop_ids;
    std::string text;  // --json: the whole text, printed at the end
    Stream out;
    GenerateStats st;
    {
        const cli::InterruptScope interrupt;
        g.should_stop = [&interrupt] { return interrupt.interrupted(); };
        try {
            st = generate(*m.backend, m.tokenizer.get(), ids, g, [&](std::string_view piece) {
                if (o.json) text += piece;
                else out.write(piece);
            });
        } catch (...) {
            out.end_line();  // the error message on stderr starts on a line of its own
            throw;
        }
    }
    if (o.json) {
        // replace: a byte-fallback token cut off at the end leaves no valid UTF-8 to print.
        fmt::print("{}\n", stats_json(st, g.sampling, text, m).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
        if (!m.tokenizer) out.write(fmt::format("{}", fmt::join(st.tokens, " ")));  // no tokenizer: the ids
        out.end_line();
        cli::print_stats(st);
    }
    std::fflush(stdout);
    return st.stop_reason == "interrupted" ? cli::k_exit_interrupted : 0;
}

}  // namespace

static tt::cli::Registration reg("run", "Generate text from a prompt", 40, [](CLI::App& sub) -> tt::cli::RunFn {
    auto o = std::make_shared<Opts>();
    tt::cli::add_model_args(sub, o->model);
    sub.add_option("-p,--prompt", o->prompt, "Prompt text (empty: start from BOS)");
    sub.add_option("-f,--prompt-file", o->prompt_file,
                   "Read the prompt from a file (- = stdin; without --prompt or this, a piped stdin is the prompt)");
    sub.add_option("-n,--max-tokens", o->max_tokens, "Most tokens to generate")->capture_default_str();
    tt::cli::add_sampling_args(sub, o->sampling);
    tt::cli::add_stop_arg(sub, o->stop);
    sub.add_flag("--no-bos", o->no_bos, "Do not add the BOS token / special tokens to the prompt");
    sub.add_flag("--chat", o->chat, "Send the prompt as a user message through the model's chat template");
    sub.add_option("--system", o->system, "With --chat: a system message before the prompt");
    sub.add_option("--template", o->template_path,
                   "With --chat: the chat template to use instead of the model's (.jinja or tokenizer_config.json)");
    sub.add_option("--var", o->vars, "With --chat: extra template variable key=value (e.g. enable_thinking=false); repeatable")
        ->allow_extra_args(false);
    sub.add_flag("--json", o->json,
                 "Print the text and the statistics as one JSON object on stdout at the end instead of streaming");
    sub.add_flag("--no-fallback", o->no_fallback,
                 "Fail on an architecture ThinTensor does not support instead of running it through transformers");
    return [o, &sub]() -> int {
        o->prompt_set = sub.count("--prompt") > 0;
        o->context_set = sub.count("--context") > 0;
        o->threads_set = sub.count("--threads") > 0;
        o->profile_set = sub.count("--profile") > 0;
        o->budget_set = sub.count("--vram-budget") + sub.count("--ram-budget") > 0;
        return run(*o);
    };
});
