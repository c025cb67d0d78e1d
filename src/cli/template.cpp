// `thintensor template SOURCE --messages FILE.json [--add-generation-prompt] [--var key=value]...`
// Renders a model's chat template and prints the prompt exactly as the model would see it (no
// added newline), so a prompt can be checked against transformers' apply_chat_template.
#include "cli/command.h"
#include "core/error.h"
#include "core/json.h"
#include "core/output_file.h"
#include "template/chat_template.h"

#include <cstdio>

namespace {

struct Opts {
    std::string source;
    std::string messages_path;
    bool add_generation_prompt = false;
    std::vector<std::string> vars;
};

int run(const Opts& o) {
    tt::ChatTemplate tmpl = tt::ChatTemplate::load(o.source);
    nlohmann::ordered_json doc = tt::parse_ordered_json(tt::read_file(o.messages_path), "--messages " + o.messages_path);
    // Either an array of messages or {"messages": [...], "tools": [...], other kwargs...}.
    nlohmann::ordered_json messages, extra = nlohmann::ordered_json::object();
    if (doc.is_array()) {
        messages = std::move(doc);
    } else if (doc.is_object() && doc.contains("messages")) {
        for (auto it = doc.begin(); it != doc.end(); ++it) {
            if (it.key() == "messages") messages = it.value();
            else if (it.key() != "add_generation_prompt" && it.key() != "rendered") extra[it.key()] = it.value();
        }
    } else {
        tt::fail("--messages {}: expected an array of messages or an object with \"messages\"", o.messages_path);
    }
    if (!messages.is_array()) tt::fail("--messages {}: \"messages\" must be an array", o.messages_path);
    for (size_t i = 0; i < messages.size(); ++i)
        if (!messages[i].is_object() || !messages[i].contains("role"))
            tt::fail("--messages {}: message {} has no \"role\"", o.messages_path, i);
    for (const auto& kv : o.vars) tt::add_template_var(extra, kv);
    std::string prompt = tmpl.render(messages, o.add_generation_prompt, extra);
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
    return 0;
}

}  // namespace

static tt::cli::Registration reg(
    "template", "Render a model's chat template for a conversation", 55, [](CLI::App& sub) -> tt::cli::RunFn {
        auto o = std::make_shared<Opts>();
        sub.add_option("SOURCE", o->source, "A .thin archive, a tokenizer_config.json, or a Hugging Face model directory")
            ->required();
        sub.add_option("--messages", o->messages_path,
                       "JSON file: an array of {role, content} messages, or {\"messages\": [...], \"tools\": [...], ...}")
            ->required();
        sub.add_flag("--add-generation-prompt", o->add_generation_prompt,
                     "End with the header of an assistant turn, ready for generation");
        sub.add_option("--var", o->vars, "Extra template variable key=value (value parsed as JSON if it parses)");
        return [o]() -> int { return run(*o); };
    });
