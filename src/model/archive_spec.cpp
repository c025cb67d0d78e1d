#include "model/archive_spec.h"

#include "core/error.h"

namespace tt {

ModelSpec spec_from_archive(const Archive& a) {
    const auto& meta = a.metadata();
    auto it = meta.find("spec");
    if (it == meta.end()) fail("{}: corrupt metadata: no model spec", a.path());
    return spec_from_json(*it, a.path() + ": spec");
}

std::string_view tokenizer_kind_name(TokenizerKind k) {
    switch (k) {
    case TokenizerKind::none: return "none";
    case TokenizerKind::hf: return "hf";
    case TokenizerKind::llama2c: return "llama2c";
    }
    TT_ASSERT(false);
}

TokenizerKind tokenizer_kind_of(const Archive& a) {
    const auto& meta = a.metadata();
    auto it = meta.find("tokenizer");
    if (it == meta.end() || !it->is_object() || !it->contains("kind") || !(*it)["kind"].is_string())
        fail("{}: corrupt metadata: no tokenizer kind (\"tokenizer\": {{\"kind\": \"hf\" | \"llama2c\" | \"none\"}})", a.path());
    const std::string name = (*it)["kind"].get<std::string>();
    TokenizerKind kind;
    if (name == "hf") kind = TokenizerKind::hf;
    else if (name == "llama2c") kind = TokenizerKind::llama2c;
    else if (name == "none") kind = TokenizerKind::none;
    else fail("{}: unknown tokenizer kind '{}' (known: hf, llama2c, none; archive written by a newer ThinTensor?)", a.path(), name);

    const bool has_json = a.file("tokenizer.json").has_value();
    const bool has_bin = a.file("tok512.bin") || a.file("tokenizer.bin");
    if (kind == TokenizerKind::hf && !has_json)
        fail("{}: corrupt archive: tokenizer kind 'hf' but no embedded tokenizer.json", a.path());
    if (kind == TokenizerKind::llama2c && !has_bin)
        fail("{}: corrupt archive: tokenizer kind 'llama2c' but no embedded tok512.bin", a.path());
    if ((kind == TokenizerKind::none && (has_json || has_bin)) || (kind == TokenizerKind::llama2c && has_json))
        fail("{}: corrupt archive: tokenizer kind '{}' but it embeds {}", a.path(), name, has_json ? "tokenizer.json" : "a llama2.c tokenizer");
    return kind;
}

}  // namespace tt
