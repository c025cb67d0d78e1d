// Fuzz target for the server's request parsing (src/server/api_request.cpp), what every
// /v1/chat/completions and /v1/completions body goes through before anything runs: any bytes must
// either parse into a request or throw ApiError (a 400 naming the field); never crash, hang or
// throw anything else. Both parsers see every input.
#include "server/api_request.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string body(reinterpret_cast<const char*>(data), size);
    tt::server::Json j;
    try {
        j = tt::server::parse_body(body);
    } catch (const tt::server::ApiError&) {
        return 0;
    }
    const tt::SamplerConfig defaults;
    try {
        (void)tt::server::parse_chat_request(j, defaults);
    } catch (const tt::server::ApiError& e) {
        (void)e.to_json().dump();
    }
    try {
        (void)tt::server::parse_completion_request(j, defaults);
    } catch (const tt::server::ApiError& e) {
        (void)e.to_json().dump();
    }
    return 0;
}
