#include "server/api_request.h"

#include "core/error.h"
#include "core/json.h"
#include "runtime/generate.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace tt::server {

ApiError ApiError::invalid(std::string param, const std::string& message, std::string code) {
    return ApiError(400, "invalid_request_error", std::move(param), std::move(code), message);
}

Json ApiError::to_json() const {
    const auto or_null = [](const std::string& s) { return s.empty() ? Json() : Json(s); };
    return {{"error", {{"message", what()}, {"type", type}, {"param", or_null(param)}, {"code", or_null(code)}}}};
}

Json parse_body(const std::string& body) {
    try {
        Json j = parse_ordered_json(body, "the request body");
        if (!j.is_object()) throw ApiError::invalid("", "the request body must be a JSON object");
        return j;
    } catch (const Error& e) {
        throw ApiError::invalid("", e.what());
    }
}

namespace {

// "a number", "a string", ... for the messages: what the field held.
std::string kind_of(const Json& v) {
    if (v.is_null()) return "null";
    if (v.is_boolean()) return "a boolean";
    if (v.is_number()) return "a number";
    if (v.is_string()) return "a string";
    if (v.is_array()) return "an array";
    return "an object";
}

// A field that is absent or null reads as none: OpenAI's clients send null for "not set".
const Json* field(const Json& body, const char* name) {
    const auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::optional<double> number(const Json& body, const char* name, double lo, double hi, bool lo_open = false) {
    const Json* v = field(body, name);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw ApiError::invalid(name, fmt::format("{} must be a number, got {}", name, kind_of(*v)));
    const double d = v->get<double>();
    if (!(std::isfinite(d) && (lo_open ? d > lo : d >= lo) && d <= hi))
        throw ApiError::invalid(name, fmt::format("{} must be in {}{}, {}], got {}", name, lo_open ? "(" : "[", lo, hi, d));
    return d;
}

std::optional<int64_t> integer(const Json& body, const char* name, int64_t lo, int64_t hi) {
    const Json* v = field(body, name);
    if (!v) return std::nullopt;
    // 2.0 is a number an integer field takes (JSON has one number type); 2.5 is not.
    if (!v->is_number() || (v->is_number_float() && std::trunc(v->get<double>()) != v->get<double>()))
        throw ApiError::invalid(name, fmt::format("{} must be an integer, got {}", name, v->is_number() ? v->dump() : kind_of(*v)));
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        throw ApiError::invalid(name, fmt::format("{} must be at most {}, got {}", name, hi, v->dump()));
    const double d = v->get<double>();
    if (d < double(lo) || d > double(hi))
        throw ApiError::invalid(name, fmt::format("{} must be from {} to {}, got {}", name, lo, hi, v->dump()));
    return v->is_number_float() ? int64_t(d) : v->get<int64_t>();
}

std::optional<bool> boolean(const Json& body, const char* name) {
    const Json* v = field(body, name);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) throw ApiError::invalid(name, fmt::format("{} must be a boolean, got {}", name, kind_of(*v)));
    return v->get<bool>();
}

GenerationParams common_params(const Json& b, const SamplerConfig& defaults, bool chat) {
    GenerationParams p;
    p.sampling = defaults;
    if (const Json* v = field(b, "model"); v && !v->is_string())
        throw ApiError::invalid("model", fmt::format("model must be a string, got {}", kind_of(*v)));
    // n > 1 would need one sequence per choice; one choice is what every client asks by default.
    if (const auto n = integer(b, "n", 1, 128); n && *n != 1)
        throw ApiError::invalid("n", fmt::format("n must be 1 (this server returns one choice), got {}", *n));
    const auto mt = integer(b, "max_tokens", 1, std::numeric_limits<int>::max());
    const auto mct = integer(b, "max_completion_tokens", 1, std::numeric_limits<int>::max());
    if (mct) p.max_tokens = int(*mct);
    else if (mt) p.max_tokens = int(*mt);
    if (const auto t = number(b, "temperature", 0, 2)) p.sampling.temperature = float(*t);
    if (const auto t = number(b, "top_p", 0, 1, /*lo_open=*/true)) p.sampling.top_p = float(*t);
    if (const auto t = integer(b, "top_k", 0, std::numeric_limits<int>::max())) p.sampling.top_k = int(*t);
    if (const auto t = number(b, "min_p", 0, 1)) p.sampling.min_p = float(*t);
    if (const auto t = number(b, "presence_penalty", -2, 2)) p.sampling.presence_penalty = float(*t);
    if (const auto t = number(b, "frequency_penalty", -2, 2)) p.sampling.frequency_penalty = float(*t);
    if (const auto t = number(b, "repeat_penalty", 0, 100, /*lo_open=*/true)) p.sampling.repeat_penalty = float(*t);
    // A seed is any 64-bit integer: OpenAI's are signed, run's --seed unsigned; -1 and 2^64-1 are
    // the same generator state.
    if (const Json* v = field(b, "seed"); v && v->is_number_unsigned()) {
        p.sampling.seed = v->get<uint64_t>();
        p.seed_given = true;
    } else if (const auto s = integer(b, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())) {
        p.sampling.seed = uint64_t(*s);
        p.seed_given = true;
    }
    if (const Json* v = field(b, "stop")) {
        if (v->is_string()) {
            p.stop.push_back(v->get<std::string>());
        } else if (v->is_array()) {
            if (v->size() > 4) throw ApiError::invalid("stop", fmt::format("stop takes at most 4 strings, got {}", v->size()));
            for (const auto& s : *v) {
                if (!s.is_string()) throw ApiError::invalid("stop", fmt::format("stop must hold strings, got {}", kind_of(s)));
                p.stop.push_back(s.get<std::string>());
            }
        } else {
            throw ApiError::invalid("stop", fmt::format("stop must be a string or an array of strings, got {}", kind_of(*v)));
        }
        for (const auto& s : p.stop)
            if (const auto why = stop_string_error(s)) throw ApiError::invalid("stop", fmt::format("stop: {}", *why));
    }
    p.stream = boolean(b, "stream").value_or(false);
    if (const Json* v = field(b, "stream_options")) {
        if (!v->is_object())
            throw ApiError::invalid("stream_options", fmt::format("stream_options must be an object, got {}", kind_of(*v)));
        if (const Json* u = field(*v, "include_usage"); u && !u->is_boolean())
            throw ApiError::invalid("stream_options.include_usage",
                                    fmt::format("stream_options.include_usage must be a boolean, got {}", kind_of(*u)));
        p.include_usage = v->value("include_usage", false);
    }
    if (chat) {
        // Chat: logprobs is a boolean and top_logprobs (0..20) the alternatives per token.
        p.logprobs = boolean(b, "logprobs").value_or(false);
        if (const auto t = integer(b, "top_logprobs", 0, 20)) {
            if (!p.logprobs) throw ApiError::invalid("top_logprobs", "top_logprobs needs logprobs: true");
            p.top_logprobs = int(*t);
        }
    } else if (const auto t = integer(b, "logprobs", 0, 5)) {
        // Completions (the legacy API): logprobs is the number of alternatives, 0..5.
        p.logprobs = true;
        p.top_logprobs = int(*t);
    }
    return p;
}

// A message's content: a string, or an array of {"type": "text", "text": ...} parts (joined), or
// null (an assistant message that only called tools).
std::string message_content(const Json& content, size_t i) {
    const std::string where = fmt::format("messages[{}].content", i);
    if (content.is_null()) return "";
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array())
        throw ApiError::invalid(where, fmt::format("{} must be a string or an array of content parts, got {}", where, kind_of(content)));
    std::string text;
    for (size_t k = 0; k < content.size(); ++k) {
        const Json& part = content[k];
        const std::string pw = fmt::format("{}[{}]", where, k);
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
            throw ApiError::invalid(pw, fmt::format("{} must be an object with a string \"type\"", pw));
        if (part["type"] != "text")
            throw ApiError::invalid(pw + ".type", fmt::format("{}.type '{}' is not supported (this server takes text parts only)", pw,
                                                              part["type"].get<std::string>()));
        if (!part.contains("text") || !part["text"].is_string())
            throw ApiError::invalid(pw + ".text", fmt::format("{}.text must be a string", pw));
        text += part["text"].get<std::string>();
    }
    return text;
}

}  // namespace

ChatRequest parse_chat_request(const Json& b, const SamplerConfig& defaults) {
    ChatRequest r;
    r.params = common_params(b, defaults, /*chat=*/true);
    const Json* m = field(b, "messages");
    if (!m) throw ApiError::invalid("messages", "messages is required");
    if (!m->is_array()) throw ApiError::invalid("messages", fmt::format("messages must be an array, got {}", kind_of(*m)));
    if (m->empty()) throw ApiError::invalid("messages", "messages must hold at least one message");
    r.messages = Json::array();
    for (size_t i = 0; i < m->size(); ++i) {
        const Json& msg = (*m)[i];
        const std::string where = fmt::format("messages[{}]", i);
        if (!msg.is_object()) throw ApiError::invalid(where, fmt::format("{} must be an object, got {}", where, kind_of(msg)));
        if (!msg.contains("role") || !msg["role"].is_string())
            throw ApiError::invalid(where + ".role", fmt::format("{}.role must be a string", where));
        const std::string role = msg["role"].get<std::string>();
        // "developer" is OpenAI's newer name for "system"; templates know "system".
        const std::string as = role == "developer" ? "system" : role;
        if (as != "system" && as != "user" && as != "assistant" && as != "tool")
            throw ApiError::invalid(where + ".role", fmt::format("{}.role '{}' is not one of system, developer, user, assistant, tool", where, role));
        r.messages.push_back({{"role", as}, {"content", message_content(msg.contains("content") ? msg["content"] : Json(), i)}});
    }
    return r;
}

CompletionRequest parse_completion_request(const Json& b, const SamplerConfig& defaults) {
    CompletionRequest r;
    r.params = common_params(b, defaults, /*chat=*/false);
    if (boolean(b, "echo").value_or(false)) throw ApiError::invalid("echo", "echo: true is not supported by this server");
    if (field(b, "suffix")) throw ApiError::invalid("suffix", "suffix is not supported by this server");
    const Json* p = field(b, "prompt");
    if (!p) throw ApiError::invalid("prompt", "prompt is required");
    // A string; token ids; or an array of one string / one array of ids (one choice per prompt).
    const Json* one = p;
    if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) one = &(*p)[0];
    if (one->is_string()) {
        r.prompt = one->get<std::string>();
    } else if (one->is_array() && !one->empty() && (*one)[0].is_number()) {
        std::vector<int32_t> ids;
        for (const auto& t : *one) {
            if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max())
                throw ApiError::invalid("prompt", fmt::format("prompt as token ids must hold non-negative integers, got {}", t.dump()));
            ids.push_back(int32_t(t.get<int64_t>()));
        }
        r.prompt = std::move(ids);
    } else if (one->is_array() && one != p) {
        throw ApiError::invalid("prompt", "prompt must be a string, an array of token ids, or an array of one of those");
    } else if (p->is_array() && p->size() > 1) {
        throw ApiError::invalid("prompt", fmt::format("prompt holds {} prompts; this server takes one per request", p->size()));
    } else {
        throw ApiError::invalid("prompt", fmt::format("prompt must be a string or an array of token ids, got {}", kind_of(*p)));
    }
    return r;
}

}  // namespace tt::server
