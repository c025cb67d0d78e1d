// ChatTemplate: finding the template (tokenizer_config.json, chat_template.jinja, .thin archive)
// and rendering it with the globals transformers' apply_chat_template passes.
#include "template/chat_template.h"

#include "core/error.h"
#include "core/json.h"
#include "core/output_file.h"
#include "format/archive.h"

#include <cstring>
#include <filesystem>
#include <fstream>

namespace tt {

namespace fs = std::filesystem;

ChatTemplate::ChatTemplate(std::string source, const std::string& context)
    : source_(std::move(source)), template_(source_, context) {}

namespace {

// Special tokens are strings or AddedToken objects {"content": "...", ...}; null means unset.
template <typename J>
std::optional<std::string> token_text(const J& cfg, const char* key, const std::string& context) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return std::nullopt;
    if (it->is_string()) return it->template get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
        return (*it)["content"].template get<std::string>();
    fail("{}: '{}' must be a string or an object with \"content\"", context, key);
}

template <typename J>
std::string template_source(const J& cfg, const std::string& context) {
    if (!cfg.is_object()) fail("{}: expected a JSON object", context);
    auto it = cfg.find("chat_template");
    if (it == cfg.end() || it->is_null()) fail("{}: no chat_template (the model has no chat template)", context);
    if (it->is_string()) return it->template get<std::string>();
    if (it->is_array()) {
        // Several named templates (e.g. "default", "tool_use", "rag"): transformers uses "default".
        std::string names;
        for (const auto& t : *it) {
            if (!t.is_object() || !t.contains("name") || !t.contains("template") || !t["name"].is_string() ||
                !t["template"].is_string())
                fail("{}: chat_template list entries must be {{\"name\": ..., \"template\": ...}}", context);
            if (t["name"] == "default") return t["template"].template get<std::string>();
            names += (names.empty() ? "" : ", ") + t["name"].template get<std::string>();
        }
        fail("{}: chat_template has no template named \"default\" (it has: {})", context, names);
    }
    fail("{}: chat_template must be a string or a list of named templates", context);
}

template <typename J>
ChatTemplate from_config(const J& cfg, const std::string& context, const std::string* override_source) {
    if (override_source) return ChatTemplate(*override_source, context);
    // Positions in errors are lines of the template text, not of the JSON file that holds it.
    return ChatTemplate(template_source(cfg, context), context + ":chat_template");
}

bool is_thin_archive(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    char magic[8] = {};
    f.read(magic, sizeof magic);
    return f.gcount() == 8 && std::memcmp(magic, k_thin_magic, 8) == 0;
}

nlohmann::ordered_json parse_config(std::string_view text, const std::string& context) {
    return parse_ordered_json(text, context);
}

}  // namespace

// Fills the special-token globals; separate from the constructor so load() can combine a
// chat_template.jinja with the tokens of tokenizer_config.json.
template <typename J>
static void set_special_tokens(const J& cfg, const std::string& context, std::string& bos, std::string& eos,
                               jinja::Object& specials) {
    static const char* const keys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                       "pad_token", "cls_token", "mask_token"};
    for (const char* k : keys)
        if (auto v = token_text(cfg, k, context)) specials.set(k, jinja::Value(*v));
    if (auto v = token_text(cfg, "bos_token", context)) bos = *v;
    if (auto v = token_text(cfg, "eos_token", context)) eos = *v;
    auto extra = cfg.find("additional_special_tokens");
    if (extra != cfg.end() && extra->is_array()) {
        jinja::Array list;
        for (const auto& x : *extra) {
            if (x.is_string()) list.emplace_back(x.template get<std::string>());
            else if (x.is_object() && x.contains("content") && x["content"].is_string())
                list.emplace_back(x["content"].template get<std::string>());
        }
        specials.set("additional_special_tokens", jinja::Value(std::move(list)));
    }
}

ChatTemplate ChatTemplate::from_tokenizer_config(const nlohmann::json& cfg, const std::string& context) {
    ChatTemplate t = from_config(cfg, context, nullptr);
    set_special_tokens(cfg, context, t.bos_token_, t.eos_token_, t.special_tokens_);
    return t;
}

ChatTemplate ChatTemplate::from_tokenizer_config(const nlohmann::ordered_json& cfg, const std::string& context) {
    ChatTemplate t = from_config(cfg, context, nullptr);
    set_special_tokens(cfg, context, t.bos_token_, t.eos_token_, t.special_tokens_);
    return t;
}

ChatTemplate ChatTemplate::load(const std::string& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        fs::path dir(path);
        fs::path cfg_path = dir / "tokenizer_config.json";
        fs::path jinja_path = dir / "chat_template.jinja";
        bool has_cfg = fs::exists(cfg_path, ec), has_jinja = fs::exists(jinja_path, ec);
        if (!has_cfg && !has_jinja)
            fail("{}: no tokenizer_config.json or chat_template.jinja in this directory", path);
        nlohmann::ordered_json cfg = has_cfg ? parse_config(read_file(cfg_path.string()), cfg_path.string())
                                             : nlohmann::ordered_json::object();
        if (has_jinja) {
            std::string src = read_file(jinja_path.string());
            ChatTemplate t = from_config(cfg, jinja_path.string(), &src);
            set_special_tokens(cfg, cfg_path.string(), t.bos_token_, t.eos_token_, t.special_tokens_);
            return t;
        }
        return from_tokenizer_config(cfg, cfg_path.string());
    }
    if (!fs::exists(path, ec)) fail("{}: no such file or directory", path);
    if (is_thin_archive(path)) {
        Archive archive = Archive::open(path);
        auto cfg_text = archive.file("tokenizer_config.json");
        auto jinja_text = archive.file("chat_template.jinja");
        if (!cfg_text && !jinja_text)
            fail("{}: the archive embeds no tokenizer_config.json or chat_template.jinja (no chat template)", path);
        std::string cfg_ctx = path + ":tokenizer_config.json";
        nlohmann::ordered_json cfg = cfg_text ? parse_config(*cfg_text, cfg_ctx) : nlohmann::ordered_json::object();
        if (jinja_text) {
            std::string src(*jinja_text);
            ChatTemplate t = from_config(cfg, path + ":chat_template.jinja", &src);
            set_special_tokens(cfg, cfg_ctx, t.bos_token_, t.eos_token_, t.special_tokens_);
            return t;
        }
        return from_tokenizer_config(cfg, cfg_ctx);
    }
    std::string text = read_file(path);
    if (path.size() >= 6 && path.compare(path.size() - 6, 6, ".jinja") == 0) return ChatTemplate(text, path);
    return from_tokenizer_config(parse_config(text, path), path);
}

std::string ChatTemplate::render_values(const jinja::Value& messages, bool add_generation_prompt,
                                        const jinja::Value& extra) const {
    if (!messages.is_array()) fail("{}: messages must be a JSON array", context());
    jinja::Object vars = special_tokens_;
    vars.set("messages", messages);
    vars.set("add_generation_prompt", jinja::Value(add_generation_prompt));
    vars.set("tools", jinja::Value::none());
    vars.set("documents", jinja::Value::none());
    if (extra.is_object()) {
        for (const auto& [k, v] : extra.object().items) vars.set(k, v);
    } else if (!extra.is_none() && !extra.is_undefined()) {
        fail("{}: extra template variables must be a JSON object", context());
    }
    return template_.render(vars);
}

std::string ChatTemplate::render(const nlohmann::json& messages, bool add_generation_prompt,
                                 const nlohmann::json& extra) const {
    return render_values(jinja::from_json(messages), add_generation_prompt, jinja::from_json(extra));
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& extra) const {
    return render_values(jinja::from_json(messages), add_generation_prompt, jinja::from_json(extra));
}

void add_template_var(nlohmann::ordered_json& vars, const std::string& key_value) {
    const size_t eq = key_value.find('=');
    if (eq == std::string::npos || eq == 0) fail("--var {}: expected key=value", key_value);
    const std::string value = key_value.substr(eq + 1);
    // accept() only checks the syntax (no tree); valid JSON then goes through the depth-bounded
    // parser, so `--var x=[[[[...` too deep is an error rather than a string or a stack overflow.
    vars[key_value.substr(0, eq)] = nlohmann::ordered_json::accept(value)
                                        ? parse_ordered_json(value, "--var " + key_value.substr(0, eq))
                                        : nlohmann::ordered_json(value);
}

}  // namespace tt
