// `thintensor show MODEL [--json]`: what a model is, the way Ollama's `show` says it — its spec,
// tokenizer, chat template and generation defaults. MODEL is resolved as everywhere (an archive, a
// Hugging Face directory converted once into the cache, a Hub id pulled first), and everything is
// read back from the resulting archive, so `show` describes exactly what `run` would use.
#include "cli/command.h"
#include "core/error.h"
#include "core/progress.h"
#include "format/archive.h"
#include "model/archive_spec.h"
#include "model/model_spec.h"
#include "runtime/chat_session.h"
#include "runtime/model_source.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace {

struct Opts {
    std::string model;
    bool json = false;
};

int run(const Opts& o) {
    const std::string path = tt::resolve_model(o.model);
    const tt::Archive a = tt::Archive::open(path);
    const auto& meta = a.metadata();
    const tt::ModelSpec s = tt::spec_from_archive(a);
    const std::string tok_kind(tt::tokenizer_kind_name(tt::tokenizer_kind_of(a)));
    std::unique_ptr<tt::Tokenizer> tok;
    if (tok_kind != "none") tok = tt::Tokenizer::from_archive(a);
    // A base model has no chat template: that is an answer ("none"). A template that is there but
    // does not load is an error `run --chat` would hit too: shown as such.
    std::string chat_template, template_error;
    const bool has_template = tt::archive_has_chat_template(a);
    if (has_template) {
        try {
            chat_template = tt::ChatTemplate::load(path).source();
        } catch (const tt::Error& e) {
            template_error = e.what();
        }
    }
    const nlohmann::json generation = meta.value("generation", nlohmann::json::object());
    const nlohmann::json provenance = meta.value("provenance", nlohmann::json::object());

    if (o.json) {
        nlohmann::json j;
        j["model"] = o.model;
        j["archive"] = path;
        j["spec"] = meta["spec"];
        j["tokenizer"] = {{"kind", tok_kind}};
        if (tok)
            j["tokenizer"].update({{"vocab_size", tok->vocab_size()}, {"bos_token", tok->bos_token()},
                                   {"bos_id", tok->bos_id()}, {"eos_token", tok->eos_token()}, {"eos_ids", tok->eos_ids()},
                                   {"add_bos", tok->add_bos()}});
        j["chat_template"] = has_template && template_error.empty() ? nlohmann::json(chat_template) : nlohmann::json(nullptr);
        if (!template_error.empty()) j["chat_template_error"] = template_error;
        j["generation"] = generation;
        j["provenance"] = provenance;
        fmt::print("{}\n", j.dump(2));
        return 0;
    }
    fmt::print("model\n");
    fmt::print("  archive        {} ({})\n", path, tt::format_bytes(double(a.file_size())));
    if (provenance.contains("source") && provenance["source"].is_string())
        fmt::print("  converted from {}\n", provenance["source"].get<std::string>());
    fmt::print("  architecture   {} ({})\n", tt::arch_name(s.arch), s.hf_architecture);
    fmt::print("  layers         {}\n", s.n_layers);
    fmt::print("  hidden         {} (heads {}/{} q/kv, head_dim {}, ffn {})\n", s.hidden_dim, s.n_heads, s.n_kv_heads,
               s.head_dim, s.ffn_dim);
    fmt::print("  context        {}\n", s.max_context);
    fmt::print("  vocab          {}\n", s.vocab_size);
    fmt::print("tokenizer\n  kind           {}\n", tok_kind);
    if (tok) {
        fmt::print("  vocab          {}\n", tok->vocab_size());
        fmt::print("  bos            {}{}\n", tok->bos_token().empty() ? "none" : tok->bos_token(),
                   tok->bos_id() >= 0 ? fmt::format(" (id {}{})", tok->bos_id(), tok->add_bos() ? ", prepended" : "") : "");
        fmt::print("  eos            {} (ids [{}])\n", tok->eos_token().empty() ? "none" : tok->eos_token(),
                   fmt::join(tok->eos_ids(), ", "));
    }
    fmt::print("generation\n");
    if (!generation.is_object() || generation.empty()) fmt::print("  (none: ThinTensor's defaults)\n");
    else
        for (const auto& [k, v] : generation.items()) fmt::print("  {:<18} {}\n", k, v.dump());
    fmt::print("chat template\n");
    if (!has_template) fmt::print("  (none: a base model; `run --chat` and `chat` need one)\n");
    else if (!template_error.empty()) fmt::print("  (cannot load: {})\n", template_error);
    else fmt::print("{}{}", chat_template, chat_template.ends_with('\n') ? "" : "\n");
    return 0;
}

}  // namespace

static tt::cli::Registration reg(
    "show", "Show a model's spec, tokenizer, chat template and generation defaults", 32,
    [](CLI::App& sub) -> tt::cli::RunFn {
        auto o = std::make_shared<Opts>();
        sub.add_option("MODEL", o->model, ".thin archive, Hugging Face model directory, or Hub id ORG/NAME[:REV]")
            ->required();
        sub.add_flag("--json", o->json, "Print JSON");
        return [o]() -> int { return run(*o); };
    });
