// Reading JSON that came from outside (config.json, tokenizer.json, archive metadata, Hub API
// answers, --messages files): one parser entry point with a nesting bound, so that a hostile file
// cannot overflow the stack of the code that walks the parsed tree (the tokenizer pipeline, the
// template engine, dump()), and errors that name the file.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace tt {

// Deeper than any real model file (tokenizer.json nests ~6 levels, chat messages ~5).
constexpr int k_max_json_depth = 128;

// Parses `text`; throws tt::Error "WHAT: invalid JSON: ..." or "WHAT: JSON nested deeper than
// 128 levels". `what` names the source (a path, "archive metadata", "the Hub's answer").
nlohmann::json parse_json(std::string_view text, const std::string& what);
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& what);
// read_file + parse_json, naming the path.
nlohmann::json read_json_file(const std::string& path);

}  // namespace tt
