// The OpenAI API's request bodies, parsed and checked before anything runs: /v1/chat/completions
// and /v1/completions become one GenerationParams (+ the messages or the prompt). Unknown fields are
// ignored, as OpenAI's clients send fields a server may not know; a known field of the wrong type or
// out of range is an ApiError naming it (`param`), answered 400 in OpenAI's error shape. Kept apart
// from the HTTP layer so that tests/unit/test_server_request.cpp checks it without a socket.
#pragma once

#include "runtime/sampler.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace tt::server {

using Json = nlohmann::ordered_json;

// An error answered in OpenAI's shape: {"error": {"message", "type", "param", "code"}}.
class ApiError : public std::runtime_error {
public:
    ApiError(int status_, std::string type_, std::string param_, std::string code_, const std::string& message)
        : std::runtime_error(message), status(status_), type(std::move(type_)), param(std::move(param_)), code(std::move(code_)) {}
    // A 400 invalid_request_error about `param` ("" when the request as a whole is wrong).
    static ApiError invalid(std::string param, const std::string& message, std::string code = "");

    int status;
    std::string type;   // "invalid_request_error", "authentication_error", "server_error", ...
    std::string param;  // the field at fault, or ""
    std::string code;   // "context_length_exceeded", "invalid_api_key", ... or ""
    Json to_json() const;
};

// What both endpoints take (OpenAI's names; the defaults are the server's, from the model's
// generation config and serve's sampling flags).
struct GenerationParams {
    std::optional<int> max_tokens;  // max_tokens / max_completion_tokens; none: until the context is full
    SamplerConfig sampling;         // defaults overridden by temperature, top_p, top_k, min_p, seed, penalties
    bool seed_given = false;        // false: the server draws a seed per request
    std::vector<std::string> stop;  // a string or up to 4 strings, none empty
    bool stream = false;
    bool include_usage = false;     // stream_options.include_usage
    bool logprobs = false;
    int top_logprobs = 0;           // 0..20
};

struct ChatRequest {
    GenerationParams params;
    Json messages;  // [{role, content: string}], content parts joined into one string
};

struct CompletionRequest {
    GenerationParams params;
    std::variant<std::string, std::vector<int32_t>> prompt;  // text, or token ids
};

// Parses the body text as JSON (a 400 naming the parse error otherwise).
Json parse_body(const std::string& body);
// `defaults`: the server's sampling defaults, which the request's fields override.
ChatRequest parse_chat_request(const Json& body, const SamplerConfig& defaults);
CompletionRequest parse_completion_request(const Json& body, const SamplerConfig& defaults);

}  // namespace tt::server
