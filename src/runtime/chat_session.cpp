// The chat session: render -> tokenize -> reuse the cached prefix -> prefill the rest -> decode
// until an end-of-turn token, the budget, the context's end, or the caller says stop.
#include "runtime/chat_session.h"

#include "core/error.h"
#include "core/json.h"
#include "format/archive.h"
#include "runtime/generate.h"
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <chrono>

namespace tt {

namespace {

bool contains(std::span<const int32_t> ids, int32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

}  // namespace

std::vector<int32_t> encode_chat_prompt(const Tokenizer& tok, std::string_view rendered) {
    std::vector<int32_t> ids = tok.encode(rendered, /*add_special_tokens=*/false);
    const std::string bos = tok.bos_token();
    const bool template_wrote_bos = !bos.empty() && rendered.substr(0, bos.size()) == bos;
    if (tok.add_bos() && tok.bos_id() >= 0 && !template_wrote_bos) ids.insert(ids.begin(), tok.bos_id());
    return ids;
}

std::vector<int32_t> chat_stop_ids(const Tokenizer& tok, const ChatTemplate& chat_template,
                                   std::span<const int32_t> eos_ids) {
    std::vector<int32_t> out(eos_ids.begin(), eos_ids.end());
    // The end-of-turn markers of the common template families (ChatML, Llama 3, Gemma, Phi-3,
    // GPT-style <|endoftext|>, gpt-oss). Only special tokens count: a vocabulary piece that merely
    // spells "<|end|>" is text.
    std::vector<std::string> names = {"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<end_of_turn>", "<|end|>",
                                      "<|endoftext|>", "<|end_of_text|>", "<|return|>", "<|call|>"};
    if (!chat_template.eos_token().empty()) names.push_back(chat_template.eos_token());
    for (const auto& name : names) {
        const auto id = tok.token_to_id(name);
        if (id && tok.is_special(*id) && !contains(out, *id)) out.push_back(*id);
    }
    return out;
}

nlohmann::ordered_json default_template_vars(const Tokenizer& tok, const ChatTemplate& chat_template) {
    nlohmann::ordered_json vars = nlohmann::ordered_json::object();
    if (chat_template.bos_token().empty() && !tok.bos_token().empty()) vars["bos_token"] = tok.bos_token();
    if (chat_template.eos_token().empty() && !tok.eos_token().empty()) vars["eos_token"] = tok.eos_token();
    return vars;
}

bool archive_has_chat_template(const Archive& archive) {
    if (archive.file("chat_template.jinja")) return true;
    if (auto cfg = archive.file("tokenizer_config.json")) {
        const auto j = parse_json(*cfg, archive.path() + ": tokenizer_config.json");
        return j.is_object() && j.contains("chat_template") && !j["chat_template"].is_null();
    }
    return false;
}

ChatTemplate chat_template_for(const Archive& archive, const std::string& archive_path, const std::string& model_name,
                               const std::string& template_path) {
    if (!template_path.empty()) return ChatTemplate::load(template_path);
    if (!archive_has_chat_template(archive))
        fail("{}: the model has no chat template (its tokenizer_config.json sets no chat_template); give one with "
             "--template FILE (a .jinja file or a tokenizer_config.json), or use `thintensor run` without --chat",
             model_name);
    return ChatTemplate::load(archive_path);
}

ChatSession::ChatSession(Backend& backend, const Tokenizer& tokenizer, const ChatTemplate& chat_template, ChatOptions opt)
    : backend_(backend), tok_(tokenizer), template_(chat_template), opt_(std::move(opt)), sampler_(opt_.sampling) {
    if (opt_.max_tokens < 1) fail("--max-tokens must be at least 1, got {}", opt_.max_tokens);
    if (!opt_.template_vars.is_object()) fail("chat template variables must be a JSON object");
    backend_.rewind(0);
}

void ChatSession::set_system(std::string text) {
    const bool has_system = !messages_.empty() && messages_[0].value("role", "") == "system";
    if (text.empty()) {
        if (has_system) messages_.erase(messages_.begin());
        return;
    }
    nlohmann::ordered_json m = {{"role", "system"}, {"content", std::move(text)}};
    if (has_system) messages_[0] = std::move(m);
    else messages_.insert(messages_.begin(), std::move(m));
}

void ChatSession::reset() {
    nlohmann::ordered_json kept = nlohmann::ordered_json::array();
    if (!messages_.empty() && messages_[0].value("role", "") == "system") kept.push_back(messages_[0]);
    messages_ = std::move(kept);
    backend_.rewind(0);
    cached_.clear();
}

std::vector<int32_t> ChatSession::render_ids(const nlohmann::ordered_json& messages, bool add_generation_prompt) const {
    return encode_chat_prompt(tok_, template_.render(messages, add_generation_prompt, opt_.template_vars));
}

ChatTurnStats ChatSession::send(const std::string& user_text, const std::function<void(std::string_view)>& on_text,
                                const std::function<bool()>& should_stop) {
    nlohmann::ordered_json next_messages = messages_;
    next_messages.push_back({{"role", "user"}, {"content", user_text}});
    const std::vector<int32_t> prompt = render_ids(next_messages, /*add_generation_prompt=*/true);
    if (prompt.empty()) fail("{}: the chat template rendered an empty prompt", template_.context());
    if (int(prompt.size()) >= backend_.context_size())
        fail("the conversation ({} tokens) no longer fits the context of {} tokens; /reset to start over, or give a larger --context",
             prompt.size(), backend_.context_size());
    TT_ASSERT(int(cached_.size()) == backend_.n_past());

    // Reuse the longest common prefix, but feed at least one token: its logits start the reply.
    // A recurrent state (Qwen3.5) goes back only to a checkpoint: the end of an earlier turn's
    // prompt, or of its reply; the tokens between that and the prefix are computed again.
    size_t keep = 0;
    while (keep < cached_.size() && keep < prompt.size() && cached_[keep] == prompt[keep]) ++keep;
    keep = std::min(keep, prompt.size() - 1);
    const size_t common = keep;
    keep = size_t(backend_.restorable(int(keep)));
    backend_.rewind(int(keep));
    cached_.resize(keep);
    messages_ = std::move(next_messages);

    ChatTurnStats st;
    st.prompt_tokens = int(prompt.size());
    st.reused_tokens = int(keep);
    st.recomputed_tokens = int(common - keep);
    st.fed_tokens = int(prompt.size() - keep);
    GenerateOptions go;
    go.max_tokens = opt_.max_tokens;
    go.eos_ids = opt_.stop_ids;
    go.stop = opt_.stop;
    go.should_stop = should_stop;
    go.after_prefill = [this] { backend_.checkpoint(); };
    std::span<const int32_t> suffix(prompt.data() + keep, prompt.size() - keep);
    GenerateStats g;
    double early_prefill_s = 0;
    try {
        // A recurrent state also keeps a checkpoint one token before the prompt's end: the next
        // render of the conversation often tokenizes that last token (a template's trailing
        // newline) together with the reply, and the prefix then ends just before it.
        if (!backend_.keeps_every_position() && suffix.size() > 1) {
            const auto t0 = std::chrono::steady_clock::now();
            backend_.forward(suffix.first(suffix.size() - 1), false);
            backend_.checkpoint();
            early_prefill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            suffix = suffix.last(1);
        }
        // The repetition penalty sees the whole conversation, reused prefix included.
        g = generate(backend_, &tok_, suffix, go,
                     [&](std::string_view text) {
                         st.text += text;
                         if (on_text) on_text(text);
                     },
                     sampler_, prompt);
    } catch (...) {
        // A failure inside the backend leaves its cache in an unknown state: start the next turn
        // from an empty cache, and without this turn's user message.
        backend_.rewind(0);
        cached_.clear();
        messages_.erase(messages_.end() - 1);
        throw;
    }
    // The cache now holds the prompt and every reply token but the last one sampled (not fed).
    cached_ = prompt;
    cached_.insert(cached_.end(), g.tokens.begin(), g.tokens.begin() + (backend_.n_past() - ptrdiff_t(prompt.size())));
    backend_.checkpoint();
    st.prefill_seconds = early_prefill_s + g.prefill_seconds;
    st.decode_seconds = g.decode_seconds;
    st.decode_steps = g.decode_steps;
    st.generated_tokens = g.generated_tokens;
    st.tokens = std::move(g.tokens);
    st.stop_reason = g.stop_reason == "eos" ? "end of turn" : g.stop_reason;
    // The reply joins the history as the person saw it, also when cut short: the next render then
    // matches the cache up to the reply's last shown token (a stop string's tokens, cached but not
    // shown, are past the common prefix and rewound).
    messages_.push_back({{"role", "assistant"}, {"content", st.text}});
    return st;
}

}  // namespace tt
