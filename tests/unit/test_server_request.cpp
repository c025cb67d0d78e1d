// The server's request parsing (src/server/api_request.cpp): OpenAI's field names and defaults,
// unknown fields ignored, wrong types and ranges refused as 400s that name the field; and the
// metrics' Prometheus text.
#include "server/api_request.h"
#include "server/metrics.h"

#include <gtest/gtest.h>

using namespace tt;
using namespace tt::server;

namespace {

SamplerConfig defaults() {
    SamplerConfig c;
    c.temperature = 0.8f;
    c.top_k = 40;
    return c;
}

// The ApiError a body raises, for its status / param / message.
ApiError chat_error(const std::string& body) {
    try {
        parse_chat_request(parse_body(body), defaults());
    } catch (const ApiError& e) {
        return e;
    }
    ADD_FAILURE() << "no error for " << body;
    return ApiError::invalid("", "");
}

ApiError completion_error(const std::string& body) {
    try {
        parse_completion_request(parse_body(body), defaults());
    } catch (const ApiError& e) {
        return e;
    }
    ADD_FAILURE() << "no error for " << body;
    return ApiError::invalid("", "");
}

}  // namespace

TEST(ServerRequest, ChatFieldsOverrideTheDefaults) {
    const ChatRequest r = parse_chat_request(
        parse_body(R"({"model": "m", "messages": [{"role": "developer", "content": "Be brief."},
                       {"role": "user", "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]}],
                       "max_completion_tokens": 7, "max_tokens": 99, "temperature": 0, "top_p": 0.5, "top_k": 3,
                       "min_p": 0.1, "seed": 42, "stop": ["\n", "END"], "presence_penalty": 0.5, "frequency_penalty": -1,
                       "stream": true, "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 2,
                       "a_field_from_the_future": {"x": [1, 2]}})"),
        defaults());
    EXPECT_EQ(r.params.max_tokens, 7);  // max_completion_tokens wins over the older max_tokens
    EXPECT_EQ(r.params.sampling.temperature, 0.0f);
    EXPECT_EQ(r.params.sampling.top_p, 0.5f);
    EXPECT_EQ(r.params.sampling.top_k, 3);
    EXPECT_FLOAT_EQ(r.params.sampling.min_p, 0.1f);
    EXPECT_EQ(r.params.sampling.seed, 42u);
    EXPECT_TRUE(r.params.seed_given);
    EXPECT_EQ(r.params.stop, (std::vector<std::string>{"\n", "END"}));
    EXPECT_EQ(r.params.sampling.presence_penalty, 0.5f);
    EXPECT_EQ(r.params.sampling.frequency_penalty, -1.0f);
    EXPECT_TRUE(r.params.stream);
    EXPECT_TRUE(r.params.include_usage);
    EXPECT_TRUE(r.params.logprobs);
    EXPECT_EQ(r.params.top_logprobs, 2);
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[0]["role"], "system");  // developer is OpenAI's newer name for system
    EXPECT_EQ(r.messages[1]["content"], "Hi there");
}

TEST(ServerRequest, SeedsAreAny64BitInteger) {
    const auto seed = [](const std::string& v) {
        return parse_chat_request(parse_body(R"({"messages": [{"role": "user", "content": "x"}], "seed": )" + v + "}"), defaults())
            .params.sampling.seed;
    };
    EXPECT_EQ(seed("18446744073709551615"), 18446744073709551615u);  // run --seed's largest
    EXPECT_EQ(seed("-1"), 18446744073709551615u);
    EXPECT_EQ(seed("7"), 7u);
    EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "seed": 1.5})").param, "seed");
}

TEST(ServerRequest, AbsentAndNullFieldsKeepTheDefaults) {
    const ChatRequest r = parse_chat_request(
        parse_body(R"({"messages": [{"role": "user", "content": "x"}], "temperature": null, "seed": null})"), defaults());
    EXPECT_FALSE(r.params.max_tokens);
    EXPECT_EQ(r.params.sampling.temperature, 0.8f);
    EXPECT_EQ(r.params.sampling.top_k, 40);
    EXPECT_FALSE(r.params.seed_given);
    EXPECT_FALSE(r.params.stream);
}

TEST(ServerRequest, WrongTypesNameTheField) {
    struct Case {
        const char* body;
        const char* param;
        const char* message;
    };
    const Case cases[] = {
        {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "temperature", "temperature must be a number, got a string"},
        {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 2.5})", "max_tokens", "max_tokens must be an integer, got 2.5"},
        {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "max_tokens", "max_tokens must be from 1"},
        {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})", "top_p", "top_p must be in (0, 1]"},
        {R"({"messages": [{"role": "user", "content": "x"}], "temperature": 3})", "temperature", "temperature must be in [0, 2]"},
        {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})", "stream", "stream must be a boolean"},
        {R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})", "stop", "stop must hold strings"},
        {R"({"messages": [{"role": "user", "content": "x"}], "stop": ""})", "stop", "empty stop string"},
        {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["a","b","c","d","e"]})", "stop", "at most 4"},
        {R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", "n", "n must be 1"},
        {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs", "needs logprobs: true"},
        {R"({"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": 1}})", "stream_options.include_usage", "must be a boolean"},
        {R"({"messages": [{"role": "user", "content": "x"}], "model": 3})", "model", "model must be a string"},
        {R"({"messages": "hello"})", "messages", "messages must be an array, got a string"},
        {R"({"messages": []})", "messages", "at least one message"},
        {R"({})", "messages", "messages is required"},
        {R"({"messages": [{"content": "x"}]})", "messages[0].role", "messages[0].role must be a string"},
        {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role", "'wizard' is not one of"},
        {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content", "must be a string or an array of content parts, got a number"},
        {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content[0].type", "not supported"},
    };
    for (const Case& c : cases) {
        const ApiError e = chat_error(c.body);
        EXPECT_EQ(e.status, 400) << c.body;
        EXPECT_EQ(e.type, "invalid_request_error") << c.body;
        EXPECT_EQ(e.param, c.param) << c.body;
        EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << c.body << ": " << e.what();
    }
}

TEST(ServerRequest, CompletionPrompts) {
    const auto prompt = [](const std::string& body) { return parse_completion_request(parse_body(body), defaults()).prompt; };
    EXPECT_EQ(std::get<std::string>(prompt(R"({"prompt": "Once"})")), "Once");
    EXPECT_EQ(std::get<std::string>(prompt(R"({"prompt": ["Once"]})")), "Once");
    EXPECT_EQ(std::get<std::vector<int32_t>>(prompt(R"({"prompt": [1, 2, 3]})")), (std::vector<int32_t>{1, 2, 3}));
    EXPECT_EQ(std::get<std::vector<int32_t>>(prompt(R"({"prompt": [[4, 5]]})")), (std::vector<int32_t>{4, 5}));
    const auto lp = parse_completion_request(parse_body(R"({"prompt": "x", "logprobs": 3})"), defaults()).params;
    EXPECT_TRUE(lp.logprobs);
    EXPECT_EQ(lp.top_logprobs, 3);

    EXPECT_EQ(completion_error(R"({"prompt": 5})").param, "prompt");
    EXPECT_EQ(completion_error(R"({})").param, "prompt");
    EXPECT_NE(std::string(completion_error(R"({"prompt": ["a", "b"]})").what()).find("holds 2 prompts"), std::string::npos);
    EXPECT_EQ(completion_error(R"({"prompt": [1, -2]})").param, "prompt");
    EXPECT_EQ(completion_error(R"({"prompt": "x", "echo": true})").param, "echo");
    EXPECT_EQ(completion_error(R"({"prompt": "x", "logprobs": 9})").param, "logprobs");
    EXPECT_EQ(completion_error(R"({"prompt": "x", "logprobs": true})").param, "logprobs");
}

TEST(ServerRequest, MalformedBodies) {
    for (const char* body : {"", "{", "[1, 2]", "\"text\"", "{\"a\": }", "nul"}) {
        try {
            parse_body(body);
            ADD_FAILURE() << "accepted " << body;
        } catch (const ApiError& e) {
            EXPECT_EQ(e.status, 400) << body;
            EXPECT_TRUE(e.param.empty()) << body;
        }
    }
    // Nesting past the JSON depth bound is refused, not walked.
    EXPECT_THROW(parse_body(std::string(100000, '[') + std::string(100000, ']')), ApiError);
}

TEST(ServerRequest, ErrorShape) {
    const Json j = ApiError::invalid("max_tokens", "too many", "context_length_exceeded").to_json();
    EXPECT_EQ(j["error"]["message"], "too many");
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    EXPECT_EQ(j["error"]["param"], "max_tokens");
    EXPECT_EQ(j["error"]["code"], "context_length_exceeded");
    EXPECT_TRUE(ApiError::invalid("", "x").to_json()["error"]["param"].is_null());
}

TEST(ServerMetrics, PrometheusText) {
    Metrics m;
    m.request("/v1/completions", 200);
    m.request("/v1/completions", 200);
    m.request("/v1/completions", 400);
    m.time_to_first_token(0.003);
    m.time_to_first_token(20.0);
    m.prompt_tokens(10, 4);
    m.cancelled();
    const std::string t = m.render({2, 3, 4, 100, 2048});
    EXPECT_NE(t.find("thintensor_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2\n"), std::string::npos);
    EXPECT_NE(t.find("thintensor_requests_total{endpoint=\"/v1/completions\",status=\"400\"} 1\n"), std::string::npos);
    EXPECT_NE(t.find("thintensor_time_to_first_token_seconds_bucket{le=\"0.0025\"} 0\n"), std::string::npos);
    EXPECT_NE(t.find("thintensor_time_to_first_token_seconds_bucket{le=\"0.005\"} 1\n"), std::string::npos);
    EXPECT_NE(t.find("thintensor_time_to_first_token_seconds_bucket{le=\"30\"} 2\n"), std::string::npos);
    EXPECT_NE(t.find("thintensor_time_to_first_token_seconds_bucket{le=\"+Inf\"} 2\n"), std::string::npos);
    EXPECT_NE(t.find("thintensor_time_to_first_token_seconds_count 2\n"), std::string::npos);
    EXPECT_NE(t.find("thintensor_prompt_tokens_reused_total 4\n"), std::string::npos);
    EXPECT_NE(t.find("thintensor_requests_cancelled_total 1\n"), std::string::npos);
    EXPECT_NE(t.find("thintensor_queue_depth 2\n"), std::string::npos);
    EXPECT_NE(t.find("thintensor_slots_busy 3\n"), std::string::npos);
    EXPECT_NE(t.find("thintensor_kv_cache_tokens 100\n"), std::string::npos);
    EXPECT_NE(t.find("# TYPE thintensor_token_latency_seconds histogram\n"), std::string::npos);
}
