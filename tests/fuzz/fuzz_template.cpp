// Fuzz target for the Jinja template engine: any bytes as template source must either parse and
// render, or throw tt::Error; never crash, hang or leak. Rendering runs under step and output
// limits (a template may legitimately loop 100000 x 100000 times) with a small conversation.
#include "core/error.h"
#include "template/jinja.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const tt::jinja::Object vars = [] {
        auto j = nlohmann::ordered_json::parse(R"({
            "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "Hi <b>"},
                         {"role": "assistant", "content": "<think>r</think>ok", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
                         {"role": "tool", "content": "42"}],
            "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "tools": null})");
        return tt::jinja::from_json(j).object();
    }();
    std::string source(reinterpret_cast<const char*>(data), size);
    try {
        tt::jinja::Template t(source, "fuzz");
        tt::jinja::RenderLimits limits;
        limits.max_steps = 20000;
        limits.max_output = 1 << 20;
        t.render(vars, limits);
    } catch (const tt::Error&) {
    }
    return 0;
}
