// The configurable stages of a Hugging Face `tokenizers` pipeline, built from the corresponding
// tokenizer.json objects: normalizers (text -> text), pre-tokenizers (text -> pieces the model
// sees one at a time) and decoders (token strings -> text). Each mirrors the semantics of the
// `tokenizers` type of the same name; unknown types are rejected with their name.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tt::tok {

// The most bytes normalization may make of n bytes of text. Far above what real normalizers do
// (NFKC grows a character at most ~11x, U+FDFA; Replace " " -> "\u2581" 3x) and linear in n, so
// that a tokenizer.json whose normalizers grow the text exponentially (a Sequence of Replace
// normalizers that each double a character) or by a huge replacement fails at once instead of
// exhausting memory or time.
constexpr size_t k_normalized_growth = 32, k_normalized_slack = 4096;
constexpr size_t normalized_size_limit(size_t n) { return k_normalized_growth * n + k_normalized_slack; }

class Normalizer {
public:
    virtual ~Normalizer() = default;
    // Normalizes s in place; throws tt::Error naming the tokenizer when the result would be longer
    // than max_bytes (a Sequence passes the bound of the original text on to every stage).
    virtual void normalize(std::string& s, size_t max_bytes) const = 0;
    void normalize(std::string& s) const { normalize(s, normalized_size_limit(s.size())); }
};

// The pieces a pre-tokenizer works on: byte ranges of one buffer, so that splitting a piece copies
// nothing, and a stage that rewrites pieces (ByteLevel, Metaspace) fills one new buffer.
struct Pieces {
    std::string text;
    std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) of each piece in text
    // The pieces are raw bytes that the ByteLevel pre-tokenizer maps to GPT-2 characters: the
    // mapping is left to the model, which needs it only for words missing from its cache (and
    // whose cache is then keyed by the shorter raw bytes). A later stage maps them first.
    bool byte_level = false;

    // One piece holding s (even when s is empty: ByteLevel's prefix space applies to it).
    void reset(std::string_view s) {
        text.assign(s);
        spans.assign(1, {0, s.size()});
        byte_level = false;
    }
    // Applies a pending ByteLevel mapping.
    void map_byte_level();
    size_t size() const { return spans.size(); }
    std::string_view operator[](size_t k) const {
        return std::string_view(text).substr(spans[k].first, spans[k].second - spans[k].first);
    }
};

class PreTokenizer {
public:
    virtual ~PreTokenizer() = default;
    // Replaces the pieces by their sub-pieces. `at_start`: the first piece begins at offset 0 of
    // the input text (Metaspace's prepend_scheme "first" depends on it).
    virtual void split(Pieces& pieces, bool at_start) const = 0;
};

class Decoder {
public:
    virtual ~Decoder() = default;
    // Transforms the token strings in place (a decoder chain may fuse them into one).
    virtual void decode(std::vector<std::string>& tokens) const = 0;
};

// Sequences nest at most this deep (real files nest one level).
constexpr int k_max_pipeline_depth = 16;

// `json` may be null (no stage). `context` names the file in error messages. Throws tt::Error on
// an unknown type, a bad field or Sequences nested deeper than k_max_pipeline_depth.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& json, const std::string& context);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& json, const std::string& context);
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& json, const std::string& context);

}  // namespace tt::tok
