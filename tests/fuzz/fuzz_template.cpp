// Fuzz target for the Jinja template engine through ChatTemplate, the path every CLI render takes
// (`template`, `run --chat`, `chat`): any bytes as template source must either parse and render,
// or throw tt::Error; never crash, hang or leak. It renders under the CLI's own limits, the
// defaults of jinja::RenderLimits (nesting, steps, wall time, output), not numbers of its own.
//
// Input: the template source, optionally followed by a NUL byte and a conversation as
// `thintensor template --messages` takes it ({"messages": [...], "tools": ..., other kwargs} or a
// bare array), so that the fuzzer mutates messages as well; without one, a small fixed
// conversation. seed_fuzz_template.sh seeds both parts from ../shared.
#include "core/error.h"
#include "core/json.h"
#include "template/chat_template.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

// Inputs long enough to reach every depth bound: a 20,000-deep dict literal is 140 KB, while
// libFuzzer's default -max_len is the largest seed (a real template is ~10 KB). An explicit
// -max_len on the command line wins.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    for (int i = 1; i < *argc; ++i)
        if (std::strncmp((*argv)[i], "-max_len=", 9) == 0) return 0;
    static std::vector<char*> args;
    static char max_len[] = "-max_len=262144";
    args.assign(*argv, *argv + *argc);
    args.insert(args.begin() + 1, max_len);  // flags before the corpus directories
    args.push_back(nullptr);
    *argc += 1;
    *argv = args.data();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const nlohmann::ordered_json k_default = nlohmann::ordered_json::parse(R"({
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "Hi <b>"},
                     {"role": "assistant", "content": "<think>r</think>ok", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
                     {"role": "tool", "content": "42"}],
        "add_generation_prompt": true})");
    std::string input(reinterpret_cast<const char*>(data), size);
    size_t nul = input.find('\0');
    std::string source = input.substr(0, nul);
    try {
        nlohmann::ordered_json doc = k_default;
        if (nul != std::string::npos) {
            try {
                doc = tt::parse_ordered_json(std::string_view(input).substr(nul + 1), "fuzz messages");
            } catch (const tt::Error&) {  // not JSON: the default conversation
            }
        }
        // What `thintensor template` does with a --messages document.
        nlohmann::ordered_json messages = nlohmann::ordered_json::array(), extra = nlohmann::ordered_json::object();
        bool add_generation_prompt = false;
        if (doc.is_array()) {
            messages = doc;
        } else if (doc.is_object()) {
            for (auto it = doc.begin(); it != doc.end(); ++it) {
                if (it.key() == "messages") messages = it.value();
                else if (it.key() == "add_generation_prompt") add_generation_prompt = it.value().is_boolean() && it.value().get<bool>();
                else if (it.key() != "rendered") extra[it.key()] = it.value();
            }
        }
        tt::ChatTemplate t(source, "fuzz.jinja");
        t.render(messages, add_generation_prompt, extra);
    } catch (const tt::Error&) {
    }
    return 0;
}
