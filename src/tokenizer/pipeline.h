// The configurable stages of a Hugging Face `tokenizers` pipeline, built from the corresponding
// tokenizer.json objects: normalizers (text -> text), pre-tokenizers (text -> pieces the model
// sees one at a time) and decoders (token strings -> text). Each mirrors the semantics of the
// `tokenizers` type of the same name; unknown types are rejected with their name.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace tt::tok {

class Normalizer {
public:
    virtual ~Normalizer() = default;
    virtual void normalize(std::string& s) const = 0;
};

class PreTokenizer {
public:
    virtual ~PreTokenizer() = default;
    // Replaces `pieces` by their sub-pieces. `at_start`: pieces[0] begins at offset 0 of the
    // input text (Metaspace's prepend_scheme "first" depends on it).
    virtual void split(std::vector<std::string>& pieces, bool at_start) const = 0;
};

class Decoder {
public:
    virtual ~Decoder() = default;
    // Transforms the token strings in place (a decoder chain may fuse them into one).
    virtual void decode(std::vector<std::string>& tokens) const = 0;
};

// `json` may be null (no stage). `context` names the file in error messages.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& json, const std::string& context);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& json, const std::string& context);
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& json, const std::string& context);

}  // namespace tt::tok
