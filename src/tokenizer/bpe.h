// The BPE model of tokenizer.json ("model": {"type": "BPE", ...}): vocab, ranked merges, unknown
// token, byte fallback. Used by both families: byte-level BPE (GPT-2, Qwen, Llama 3: the pieces
// arrive already mapped to printable characters) and SentencePiece-style BPE (Llama 2, Gemma,
// TinyStories: "▁" for spaces, "<0xNN>" byte tokens for characters outside the vocab).
//
// A word of up to 48 symbols is merged by rescanning its pair ranks, a longer one with a min-heap
// of candidate pairs over a linked list of symbols, so a word of n characters costs O(n log n),
// never O(n^2); results for words of up to 48 bytes are cached (word_cache.h).
#pragma once

#include "tokenizer/pipeline.h"
#include "tokenizer/word_cache.h"

#include <nlohmann/json.hpp>

#include <cstdint>
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

    // A model given directly (llama2.c): the token strings by id (of equal strings, the first is
    // the one looked up), the merges as (left id, right id, result id, rank: lower merges first),
    // byte fallback through the "<0xNN>" tokens, no unk. `sep`: the character in front of which
    // pieces may be split where no merge crosses (see sep_).
    struct PairMerge {
        int32_t left, right, result, rank;
    };
    BpeModel(std::vector<std::string> tokens, const std::vector<PairMerge>& merges, const std::string& sep);

    // Appends the ids of the pre-tokenized pieces to `out`. Thread-safe.
    void tokenize(const Pieces& pieces, std::vector<int32_t>& out) const;

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
    // Open-addressing (linear probing) map pair_key -> Merge: the merge loop probes it once per
    // candidate pair, and one probe is about one cache line instead of a chained node walk.
    class MergeTable {
    public:
        void build(const std::vector<std::pair<uint64_t, Merge>>& entries);
        const Merge* find(uint64_t key) const {
            for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
                const Entry& e = slots_[i];
                if (e.key == key) return &e.merge;
                if (e.key == k_empty) return nullptr;
            }
        }
        bool empty() const { return size_ == 0; }
        void prefetch(uint64_t key) const { __builtin_prefetch(&slots_[slot_of(key)]); }

    private:
        static constexpr uint64_t k_empty = ~uint64_t{0};  // ids are >= 0, so no pair has this key
        struct Entry {
            uint64_t key = k_empty;
            Merge merge{};
        };
        size_t slot_of(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }
        std::vector<Entry> slots_{1};
        size_t mask_ = 0, size_ = 0;
        int shift_ = 63;
    };

    // One word (a piece, or a part of one between sep_ splits) without the cache.
    void tokenize_word(std::string_view word, std::vector<int32_t>& out) const;
    void merge_word(std::string_view piece, std::vector<int32_t>& out) const;
    // The merge loop on symbol ids, in place: by rescanning (at most k_small_word symbols) or
    // with a heap.
    static constexpr size_t k_small_word = 48;
    void merge_small(std::vector<int32_t>& sym) const;
    void merge_heap(std::vector<int32_t>& sym) const;
    // The derived tables: single-character ids, byte-fallback ids, merge table, sep_ splits.
    void finish(const std::vector<std::pair<uint64_t, Merge>>& entries, const std::string& sep);
    void find_safe_splits(const std::vector<std::pair<uint64_t, Merge>>& entries, const std::string& sep);
    // The symbol id of one character, or -1 when it has no vocab entry.
    int32_t char_id(std::string_view ch) const;

    VocabMap vocab_;
    std::vector<std::string> id_to_token_;
    std::vector<bool> has_token_;
    MergeTable merges_;
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

    // note: SentencePiece-style models without a word-splitting pre-tokenizer (Gemma, TinyStories)
    // hand the model whole lines. A merge joins two adjacent symbols into a token whose string
    // contains both, so if no merge result contains "x▁", no merge ever crosses the gap between a
    // character x and a following "▁": the piece splits there into words with identical results,
    // and the words hit the cache. sep_ is "▁" (llama2.c: " ") when that applies (vocab has it,
    // no subword prefix/suffix), joins_before_sep_ the sorted characters x that do occur before "▁" in a
    // merge result, fallback_merges_ whether any merge involves a byte-fallback or unk token (then
    // a character without its own token is never a safe left side; nor is it unless
    // fallback_total_, an unk token or all 256 byte tokens, guarantees it leaves a symbol instead
    // of being dropped).
    //
    // The same holds between any two characters x y that no merge result has side by side: when
    // those pairs are few (joined_pairs_, pair_splits_), parts still longer than 32 bytes after
    // the "▁" cuts are cut at every such boundary.
    std::string sep_;
    std::vector<char32_t> joins_before_sep_;
    bool fallback_merges_ = false;
    bool fallback_total_ = false;
    bool all_bytes_ = false;  // byte fallback with all 256 byte tokens: no character becomes unk
    MergeTable joined_pairs_;  // a set: the keys are char_pair(x, y)
    bool pair_splits_ = false;
    static uint64_t char_pair(char32_t x, char32_t y) { return (static_cast<uint64_t>(x) << 32) | y; }
    // Appends the parts of `piece` between safe cuts (sep_ must be set).
    void split_words(std::string_view piece, std::vector<std::string_view>& words) const;

    static constexpr size_t k_cache_max_len = 48;  // longer pieces skip the cache (they rarely repeat)
    WordCache cache_;
};

}  // namespace tt::tok
