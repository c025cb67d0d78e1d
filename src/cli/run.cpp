// thintensor run MODEL --prompt TEXT: generate text, streamed to stdout; statistics to stderr.
#include "cli/command.h"
#include "cli/model_args.h"
#include "core/error.h"
#include "core/log.h"
#include "core/output_file.h"
#include "runtime/generate.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

namespace {

struct Opts {
    tt::cli::ModelArgs model;
    tt::cli::SamplingArgs sampling;
    std::string prompt, prompt_file;
    int max_tokens = 256;
    std::vector<std::string> stop;
    bool no_bos = false;
};

int run(const Opts& o) {
    using namespace tt;
    if (!o.prompt.empty() && !o.prompt_file.empty()) fail("give --prompt or --prompt-file, not both");
    const std::string prompt = o.prompt_file.empty() ? o.prompt : read_file(o.prompt_file);
    if (o.max_tokens < 1) fail("--max-tokens must be at least 1, got {}", o.max_tokens);

    cli::LoadedModel m = cli::load_model(o.model, /*needed_context=*/0);
    std::vector<int32_t> ids = cli::encode_prompt(m, prompt, !o.no_bos);
    m.create_backend(o.model, int(ids.size()) + o.max_tokens);

    GenerateOptions g;
    g.max_tokens = o.max_tokens;
    g.sampling = cli::sampling_config(o.sampling, m);
    g.stop = o.stop;
    g.eos_ids = m.eos_ids();
    const GenerateStats st = generate(*m.backend, m.tokenizer.get(), ids, g, [](std::string_view text) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
    });
    if (!m.tokenizer) {  // no tokenizer: print the ids
        for (auto id : st.tokens) fmt::print("{} ", id);
    }
    std::fputc('\n', stdout);
    std::fflush(stdout);
    cli::print_stats(st);
    return 0;
}

}  // namespace

static tt::cli::Registration reg("run", "Generate text from a prompt", 40, [](CLI::App& sub) -> tt::cli::RunFn {
    auto o = std::make_shared<Opts>();
    tt::cli::add_model_args(sub, o->model);
    sub.add_option("-p,--prompt", o->prompt, "Prompt text (empty: start from BOS)");
    sub.add_option("-f,--prompt-file", o->prompt_file, "Read the prompt from a file");
    sub.add_option("-n,--max-tokens", o->max_tokens, "Most tokens to generate")->capture_default_str();
    tt::cli::add_sampling_args(sub, o->sampling);
    sub.add_option("--stop", o->stop, "Stop when this text is generated (repeatable)");
    sub.add_flag("--no-bos", o->no_bos, "Do not add the BOS token / special tokens to the prompt");
    return [o]() -> int { return run(*o); };
});
