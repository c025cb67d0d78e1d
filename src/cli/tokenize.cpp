// `thintensor tokenize SOURCE (--text TEXT | --jsonl FILE) [--no-special] [--json]`: encode text
// with a model's tokenizer. --text prints the ids (or {"ids", "tokens"} with --json); --jsonl
// reads {"text": ...} objects one per line and writes {"ids", "decoded"} one per line, which is
// how the tests compare against the `tokenizers` reference fixtures.
#include "cli/command.h"
#include "core/error.h"
#include "core/json.h"
#include "tokenizer/tokenizer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

namespace {

struct Opts {
    std::string source;
    std::string text;
    std::string jsonl;
    bool no_special = false;
    bool json = false;
};

// Byte-level vocab strings and decodes are valid UTF-8, but a JSON writer must never abort on a
// stray byte: replace it rather than throw.
std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

int run_text(const tt::Tokenizer& tok, const Opts& o) {
    std::vector<int32_t> ids = tok.encode(o.text, !o.no_special);
    if (o.json) {
        nlohmann::json tokens = nlohmann::json::array();
        for (int32_t id : ids) tokens.push_back(tok.id_to_token(id));
        fmt::print("{}\n", dump({{"ids", ids}, {"tokens", tokens}}));
    } else {
        fmt::print("{}\n", fmt::join(ids, " "));
    }
    return 0;
}

int run_jsonl(const tt::Tokenizer& tok, const Opts& o) {
    std::ifstream in(o.jsonl, std::ios::binary);
    if (!in) tt::fail("--jsonl {}: cannot open file", o.jsonl);
    std::string line;
    for (size_t line_no = 1; std::getline(in, line); ++line_no) {
        if (line.empty()) continue;
        const nlohmann::json j = tt::parse_json(line, fmt::format("--jsonl {}:{}", o.jsonl, line_no));
        if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
            tt::fail("--jsonl {}:{}: expected an object with a string \"text\"", o.jsonl, line_no);
        std::vector<int32_t> ids;
        try {
            ids = tok.encode(j["text"].get_ref<const std::string&>(), !o.no_special);
        } catch (const tt::Error& e) {
            tt::fail("--jsonl {}:{}: {}", o.jsonl, line_no, e.what());
        }
        fmt::print("{}\n", dump({{"ids", ids}, {"decoded", tok.decode(ids, false)}}));
    }
    return 0;
}

}  // namespace

static tt::cli::Registration reg("tokenize", "Encode text with a model's tokenizer", 50, [](CLI::App& sub) -> tt::cli::RunFn {
    auto o = std::make_shared<Opts>();
    sub.add_option("SOURCE", o->source, "A .thin archive, a tokenizer.json, a llama2.c tokenizer .bin, or an HF model directory")
        ->required();
    auto* text = sub.add_option("--text", o->text, "Text to encode; prints the ids");
    auto* jsonl = sub.add_option("--jsonl", o->jsonl, "File of {\"text\": ...} lines; writes {\"ids\", \"decoded\"} lines");
    text->excludes(jsonl);
    sub.add_flag("--no-special", o->no_special, "Do not add special tokens (add_special_tokens=False)");
    sub.add_flag("--json", o->json, "With --text: print {\"ids\": [...], \"tokens\": [...]}");
    return [o, text, jsonl]() -> int {
        if (text->count() == 0 && jsonl->count() == 0) tt::fail("tokenize: give --text TEXT or --jsonl FILE");
        auto tok = tt::Tokenizer::load(o->source);
        return text->count() ? run_text(*tok, *o) : run_jsonl(*tok, *o);
    };
});
