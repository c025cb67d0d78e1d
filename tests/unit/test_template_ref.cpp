// Chat templates against transformers: every line of ../shared/fixtures/chat-template-ref/*.jsonl
// (messages, add_generation_prompt, and the string apply_chat_template rendered) must come out
// byte-identical from the model's own template in ../shared/tokenizers/*/tokenizer_config.json.
#include "core/error.h"
#include "core/output_file.h"
#include "format/archive.h"
#include "template/chat_template.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>
#include <string>

using namespace tt;

namespace {

const std::string k_shared = TT_SHARED_DIR;

// Returns the number of fixture lines checked.
int check_model(const std::string& model) {
    std::string cfg_path = k_shared + "/tokenizers/" + model + "/tokenizer_config.json";
    auto cfg = nlohmann::ordered_json::parse(read_file(cfg_path));
    ChatTemplate tmpl = ChatTemplate::from_tokenizer_config(cfg, cfg_path);
    std::istringstream lines(read_file(k_shared + "/fixtures/chat-template-ref/" + model + ".jsonl"));
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
        if (line.empty()) continue;
        auto rec = nlohmann::ordered_json::parse(line);
        // Any keys beyond these three would be template kwargs; pass them through.
        nlohmann::ordered_json extra = nlohmann::ordered_json::object();
        for (auto it = rec.begin(); it != rec.end(); ++it)
            if (it.key() != "messages" && it.key() != "add_generation_prompt" && it.key() != "rendered")
                extra[it.key()] = it.value();
        std::string got = tmpl.render(rec["messages"], rec["add_generation_prompt"].get<bool>(), extra);
        EXPECT_EQ(got, rec["rendered"].get<std::string>()) << model << " line " << n + 1;
        ++n;
    }
    return n;
}

}  // namespace

TEST(ChatTemplateRef, Qwen3RendersLikeTransformers) { EXPECT_EQ(check_model("qwen3"), 3); }
TEST(ChatTemplateRef, Llama3RendersLikeTransformers) { EXPECT_EQ(check_model("llama3"), 3); }
TEST(ChatTemplateRef, Gemma3RendersLikeTransformers) { EXPECT_EQ(check_model("gemma3"), 3); }

TEST(ChatTemplateRef, TokensFromConfig) {
    for (const auto& [model, bos, eos] : {std::tuple{"qwen3", "", "<|im_end|>"},
                                          std::tuple{"llama3", "<|begin_of_text|>", "<|end_of_text|>"},
                                          std::tuple{"gemma3", "<bos>", "<end_of_turn>"}}) {
        ChatTemplate t = ChatTemplate::load(k_shared + "/tokenizers/" + model);
        EXPECT_EQ(t.bos_token(), bos) << model;
        EXPECT_EQ(t.eos_token(), eos) << model;
    }
}

// Gemma's template refuses conversations whose roles do not alternate, through raise_exception;
// the error names the template line of the raise_exception call.
TEST(ChatTemplateRef, Gemma3RaiseExceptionHasPosition) {
    ChatTemplate t = ChatTemplate::load(k_shared + "/tokenizers/gemma3/tokenizer_config.json");
    auto msgs = nlohmann::json::parse(R"([{"role":"user","content":"a"},{"role":"user","content":"b"}])");
    try {
        t.render(msgs, true);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        std::string what = e.what();
        EXPECT_NE(what.find("tokenizer_config.json:chat_template:19:12:"), std::string::npos) << what;
        EXPECT_NE(what.find("Conversation roles must alternate user/assistant/user/assistant/..."), std::string::npos)
            << what;
    }
}

// Qwen3 with tools and enable_thinking=false: the tool schema goes through tojson with the key
// order of the input, as json.dumps writes it (", " and ": " separators, no ASCII escaping).
TEST(ChatTemplateRef, Qwen3ToolsAndThinkingSwitch) {
    ChatTemplate t = ChatTemplate::load(k_shared + "/tokenizers/qwen3");
    auto msgs = nlohmann::ordered_json::parse(R"([{"role":"user","content":"Wetter in Zürich?"}])");
    auto extra = nlohmann::ordered_json::parse(
        R"({"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object","b":1.5,"a":[true,null]}}}],
            "enable_thinking":false})");
    std::string got = t.render(msgs, true, extra);
    std::string want =
        "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        R"({"type": "function", "function": {"name": "weather", "parameters": {"type": "object", "b": 1.5, "a": [true, null]}}})"
        "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
        "<args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWetter in Zürich?<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n";
    EXPECT_EQ(got, want);
}

// Qwen3 splits <think> reasoning out of earlier assistant turns and tool calls come out as JSON.
TEST(ChatTemplateRef, Qwen3ReasoningAndToolCalls) {
    ChatTemplate t = ChatTemplate::load(k_shared + "/tokenizers/qwen3");
    auto msgs = nlohmann::ordered_json::parse(R"([
        {"role":"user","content":"q1"},
        {"role":"assistant","content":"<think>\nhmm\n</think>\n\na1"},
        {"role":"user","content":"q2"},
        {"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"x":1}}}]},
        {"role":"tool","content":"42"},
        {"role":"assistant","content":"<think>ok</think>done"}])");
    std::string got = t.render(msgs, false, nlohmann::ordered_json::object());
    std::string want =
        "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n<|im_start|>user\nq2<|im_end|>\n"
        "<|im_start|>assistant\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n"
        "</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\nok\n</think>\n\ndone<|im_end|>\n";
    EXPECT_EQ(got, want);
}

// A .thin archive with an embedded tokenizer_config.json renders like the config itself.
TEST(ChatTemplateRef, LoadsFromThinArchive) {
    std::string cfg_text = read_file(k_shared + "/tokenizers/llama3/tokenizer_config.json");
    std::string path = testing::TempDir() + "/chat_template_test.thin";
    {
        ArchiveWriter w(path);
        w.add_file("tokenizer_config.json", cfg_text);
        w.finish({{"spec", nlohmann::json::object()}});  // open() only needs a spec object
    }
    ChatTemplate t = ChatTemplate::load(path);
    EXPECT_EQ(t.bos_token(), "<|begin_of_text|>");
    std::istringstream lines(read_file(k_shared + "/fixtures/chat-template-ref/llama3.jsonl"));
    std::string line;
    std::getline(lines, line);
    auto rec = nlohmann::ordered_json::parse(line);
    EXPECT_EQ(t.render(rec["messages"], rec["add_generation_prompt"].get<bool>(), nlohmann::ordered_json::object()),
              rec["rendered"].get<std::string>());
    std::remove(path.c_str());
}
