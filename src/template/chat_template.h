// A model's chat template: its Jinja source from tokenizer_config.json (or chat_template.jinja),
// rendered the way transformers' apply_chat_template does, so that instruct models get the exact
// prompt they were trained on. Globals passed to the template, as transformers passes them:
// messages, add_generation_prompt, tools (none unless given), documents (none), the special tokens
// of tokenizer_config.json that are set (bos_token, eos_token, unk_token, pad_token, ...), and any
// extra keyword arguments (enable_thinking, date_string, ...) which override those.
#pragma once

#include "template/jinja.h"

#include <nlohmann/json.hpp>

#include <string>

namespace tt {

class ChatTemplate {
public:
    // Parses the Jinja source; throws tt::Error "<context>:<line>:<col>: message" on syntax errors.
    ChatTemplate(std::string source, const std::string& context);

    // From a tokenizer_config.json object: its "chat_template" (a string, or a list of
    // {name, template} where "default" is used), and bos_token/eos_token (strings or
    // {"content": ...} objects). Throws when there is no chat template.
    static ChatTemplate from_tokenizer_config(const nlohmann::json& cfg, const std::string& context);
    static ChatTemplate from_tokenizer_config(const nlohmann::ordered_json& cfg, const std::string& context);

    // From a path: a .thin archive (embedded chat_template.jinja or tokenizer_config.json), a
    // tokenizer_config.json, or a Hugging Face model directory (chat_template.jinja if present,
    // else tokenizer_config.json's chat_template). Throws tt::Error naming the path on failure.
    static ChatTemplate load(const std::string& path);

    // messages: JSON array of {role, content, ...}. extra: more globals (tools, enable_thinking...).
    // Throws tt::Error "<context>:<line>:<col>: ..." when the template fails (raise_exception,
    // undefined attribute access, type errors).
    std::string render(const nlohmann::json& messages, bool add_generation_prompt,
                       const nlohmann::json& extra = nlohmann::json::object()) const;
    // The same with ordered JSON: key order of the input survives into `tojson` output, which is
    // what Python's json.dumps does with tool schemas; prefer this when the messages come from a file.
    std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                       const nlohmann::ordered_json& extra) const;

    const std::string& bos_token() const { return bos_token_; }
    const std::string& eos_token() const { return eos_token_; }
    const std::string& source() const { return source_; }
    const std::string& context() const { return template_.context(); }

private:
    std::string render_values(const jinja::Value& messages, bool add_generation_prompt, const jinja::Value& extra) const;

    std::string source_;
    jinja::Template template_;
    std::string bos_token_, eos_token_;
    jinja::Object special_tokens_;  // the special tokens tokenizer_config.json sets, as globals
};

// --var key=value: an extra template global; the value is JSON when it parses (false, 3, [..],
// "quoted"), else the string as written. Throws naming the flag when there is no '='.
void add_template_var(nlohmann::ordered_json& vars, const std::string& key_value);

}  // namespace tt
