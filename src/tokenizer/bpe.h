// The BPE model of tokenizer.json ("model": {"type": "BPE", ...}): vocab, ranked merges, unknown
// token, byte fallback. Used by both families: byte-level BPE (GPT-2, Qwen, Llama 3: the pieces
// arrive already mapped to printable characters) and SentencePiece-style BPE (Llama 2, Gemma,
// TinyStories: "▁" for spaces, "<0xNN>" byte tokens for characters outside the vocab).
//
// A piece is merged with a min-heap of candidate pairs over a linked list of symbols, so a word of
// n characters costs O(n log n), never O(n^2); results for short pieces are cached.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tt::tok {

// Transparent hashing so that string_view lookups do not allocate.
struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using VocabMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
public:
    // `model` is tokenizer.json's "model" object; throws tt::Error naming `context` on bad input.
    BpeModel(const nlohmann::json& model, const std::string& context);

    // Appends the ids of one pre-tokenized piece to `out`.
    void tokenize(std::string_view piece, std::vector<int32_t>& out) const;

    std::optional<int32_t> token_to_id(std::string_view token) const;
    // nullptr for ids with no vocab entry (holes, or ids of added tokens beyond the vocab).
    const std::string* id_to_token(int32_t id) const;
    // One past the largest vocab id.
    int32_t size() const { return static_cast<int32_t>(id_to_token_.size()); }

private:
    struct Merge {
        int32_t rank;
        int32_t new_id;
    };
    static uint64_t pair_key(int32_t a, int32_t b) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
    }
    void merge_word(std::string_view piece, std::vector<int32_t>& out) const;

    VocabMap vocab_;
    std::vector<std::string> id_to_token_;
    std::vector<bool> has_token_;
    std::unordered_map<uint64_t, Merge> merges_;
    std::optional<int32_t> unk_id_;
    bool fuse_unk_ = false;
    bool byte_fallback_ = false;
    bool ignore_merges_ = false;
    std::string continuing_subword_prefix_;
    std::string end_of_word_suffix_;
    int32_t byte_ids_[256];  // "<0xNN>" ids for byte fallback, -1 where missing
    // Ids of single-character tokens below U+0400 (all byte-level characters, Latin), so the
    // per-character lookup of merge_word is an array index instead of a hash probe; -1 = not a token.
    static constexpr char32_t k_small_chars = 0x400;
    std::vector<int32_t> small_char_ids_;

    // Cache of piece -> ids, as in `tokenizers` (bounded; pieces longer than k_cache_max_len skip it).
    static constexpr size_t k_cache_capacity = 10000;
    static constexpr size_t k_cache_max_len = 256;
    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace tt::tok
