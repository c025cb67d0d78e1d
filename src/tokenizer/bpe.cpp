// BPE merge loop, following `tokenizers`' Word::merge_all: symbols in a doubly linked list, a
// min-heap of (rank, position) candidates, stale candidates skipped when popped (the pair at that
// position no longer produces the same token).
#include "tokenizer/bpe.h"

#include "core/error.h"
#include "tokenizer/unicode.h"

#include <fmt/format.h>

#include <queue>

namespace tt::tok {

using json = nlohmann::json;

BpeModel::BpeModel(const json& m, const std::string& ctx) {
    if (!m.contains("vocab") || !m["vocab"].is_object()) fail("{}: BPE model needs an object \"vocab\"", ctx);
    int32_t max_id = -1;
    vocab_.reserve(m["vocab"].size());
    for (const auto& [tok, idj] : m["vocab"].items()) {
        if (!idj.is_number_integer() || idj.get<int64_t>() < 0 || idj.get<int64_t>() > INT32_MAX)
            fail("{}: vocab entry '{}' has an invalid id", ctx, tok);
        int32_t id = idj.get<int32_t>();
        vocab_.emplace(tok, id);
        max_id = std::max(max_id, id);
    }
    id_to_token_.resize(static_cast<size_t>(max_id + 1));
    has_token_.assign(static_cast<size_t>(max_id + 1), false);
    for (const auto& [tok, id] : vocab_) {
        id_to_token_[static_cast<size_t>(id)] = tok;
        has_token_[static_cast<size_t>(id)] = true;
    }

    auto str_or_empty = [&](const char* key) {
        return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : std::string();
    };
    continuing_subword_prefix_ = str_or_empty("continuing_subword_prefix");
    end_of_word_suffix_ = str_or_empty("end_of_word_suffix");
    fuse_unk_ = m.value("fuse_unk", false);
    byte_fallback_ = m.value("byte_fallback", false);
    ignore_merges_ = m.value("ignore_merges", false);
    // "dropout" is ignored: it only randomizes merges for training; inference is deterministic.
    std::string unk = str_or_empty("unk_token");
    if (!unk.empty()) {
        auto it = vocab_.find(unk);
        if (it == vocab_.end()) fail("{}: unk_token '{}' is not in the vocab", ctx, unk);
        unk_id_ = it->second;
    }
    small_char_ids_.assign(k_small_chars, -1);
    if (continuing_subword_prefix_.empty() && end_of_word_suffix_.empty()) {
        for (const auto& [tok, id] : vocab_) {
            size_t n = utf8_char_len(tok, 0);
            if (n == 0 || n != tok.size()) continue;
            size_t i = 0;
            char32_t cp = utf8_next(tok, i);
            if (cp < k_small_chars) small_char_ids_[cp] = id;
        }
    }
    for (int b = 0; b < 256; ++b) {
        auto it = vocab_.find(fmt::format("<0x{:02X}>", b));
        byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
    }

    if (m.contains("merges") && !m["merges"].is_null()) {
        const json& merges = m["merges"];
        if (!merges.is_array()) fail("{}: BPE \"merges\" must be an array", ctx);
        merges_.reserve(merges.size());
        std::string a, b;
        for (size_t rank = 0; rank < merges.size(); ++rank) {
            const json& e = merges[rank];
            // Two spellings: "a b" (older files) or ["a", "b"].
            if (e.is_string()) {
                const std::string& s = e.get_ref<const std::string&>();
                size_t sp = s.find(' ');
                if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
                    fail("{}: merge {} '{}' is not two tokens separated by one space", ctx, rank, s);
                a.assign(s, 0, sp);
                b.assign(s, sp + 1);
            } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
                a = e[0].get<std::string>();
                b = e[1].get<std::string>();
            } else {
                fail("{}: merge {} must be \"a b\" or [\"a\", \"b\"]", ctx, rank);
            }
            auto ia = vocab_.find(a), ib = vocab_.find(b), iab = vocab_.find(a + b);
            if (ia == vocab_.end() || ib == vocab_.end())
                fail("{}: merge {} ('{}' '{}') uses a token that is not in the vocab", ctx, rank, a, b);
            if (iab == vocab_.end()) fail("{}: merge {} produces '{}{}', which is not in the vocab", ctx, rank, a, b);
            merges_[pair_key(ia->second, ib->second)] = {static_cast<int32_t>(rank), iab->second};
        }
    }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
    auto it = vocab_.find(token);
    if (it == vocab_.end()) return std::nullopt;
    return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_token_[static_cast<size_t>(id)]) return nullptr;
    return &id_to_token_[static_cast<size_t>(id)];
}

void BpeModel::tokenize(std::string_view piece, std::vector<int32_t>& out) const {
    if (piece.empty()) return;
    if (ignore_merges_) {
        if (auto it = vocab_.find(piece); it != vocab_.end()) {
            out.push_back(it->second);
            return;
        }
    }
    bool cacheable = piece.size() <= k_cache_max_len;
    if (cacheable) {
        std::lock_guard lock(cache_mutex_);
        if (auto it = cache_.find(piece); it != cache_.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    size_t first = out.size();
    merge_word(piece, out);
    if (cacheable) {
        std::lock_guard lock(cache_mutex_);
        if (cache_.size() < k_cache_capacity) cache_.emplace(std::string(piece), std::vector<int32_t>(out.begin() + static_cast<ptrdiff_t>(first), out.end()));
    }
}

void BpeModel::merge_word(std::string_view piece, std::vector<int32_t>& out) const {
    struct Symbol {
        int32_t id;
        int32_t prev, next;  // -1 at the ends
        bool alive;
    };
    std::vector<Symbol> sym;
    sym.reserve(piece.size());
    auto add = [&](int32_t id) {
        int32_t idx = static_cast<int32_t>(sym.size());
        sym.push_back({id, idx - 1, -1, true});
        if (idx > 0) sym[static_cast<size_t>(idx - 1)].next = idx;
    };

    // 1. One symbol per character: the vocab entry, else its "<0xNN>" bytes, else <unk> (runs of
    //    unknown characters fuse into one <unk> when fuse_unk is set).
    bool pending_unk = false;
    std::string key;
    for (size_t i = 0; i < piece.size();) {
        size_t start = i;
        size_t n = utf8_char_len(piece, i);
        i += n == 0 ? 1 : n;  // pieces are valid UTF-8; the guard keeps a bug from looping
        std::string_view ch = piece.substr(start, i - start);
        if (n != 0 && !small_char_ids_.empty()) {
            size_t j = start;
            char32_t cp = utf8_next(piece, j);
            if (cp < k_small_chars && small_char_ids_[cp] >= 0 && continuing_subword_prefix_.empty() &&
                end_of_word_suffix_.empty()) {
                if (pending_unk) add(*unk_id_), pending_unk = false;
                add(small_char_ids_[cp]);
                continue;
            }
        }
        std::string_view lookup = ch;
        if (!continuing_subword_prefix_.empty() || !end_of_word_suffix_.empty()) {
            key.clear();
            if (start > 0) key += continuing_subword_prefix_;
            key += ch;
            if (i == piece.size()) key += end_of_word_suffix_;
            lookup = key;
        }
        if (auto it = vocab_.find(lookup); it != vocab_.end()) {
            if (pending_unk) add(*unk_id_), pending_unk = false;
            add(it->second);
            continue;
        }
        if (byte_fallback_) {
            bool all = true;
            for (char c : ch) all &= byte_ids_[static_cast<uint8_t>(c)] >= 0;
            if (all) {
                if (pending_unk) add(*unk_id_), pending_unk = false;
                for (char c : ch) add(byte_ids_[static_cast<uint8_t>(c)]);
                continue;
            }
        }
        if (unk_id_) {
            if (pending_unk && !fuse_unk_) add(*unk_id_);
            pending_unk = true;
        }
        // No unk token and no fallback: `tokenizers` drops the character.
    }
    if (pending_unk) add(*unk_id_);

    // 2. Merge the lowest-ranked adjacent pair (leftmost on ties) until none is left.
    struct Candidate {
        int32_t rank, pos, new_id;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    auto push_pair = [&](int32_t pos) {
        int32_t nx = sym[static_cast<size_t>(pos)].next;
        if (nx < 0) return;
        auto it = merges_.find(pair_key(sym[static_cast<size_t>(pos)].id, sym[static_cast<size_t>(nx)].id));
        if (it != merges_.end()) heap.push({it->second.rank, pos, it->second.new_id});
    };
    for (int32_t p = 0; p + 1 < static_cast<int32_t>(sym.size()); ++p) push_pair(p);
    while (!heap.empty()) {
        Candidate c = heap.top();
        heap.pop();
        Symbol& left = sym[static_cast<size_t>(c.pos)];
        if (!left.alive || left.next < 0) continue;
        Symbol& right = sym[static_cast<size_t>(left.next)];
        auto it = merges_.find(pair_key(left.id, right.id));
        if (it == merges_.end() || it->second.new_id != c.new_id) continue;  // stale
        left.id = c.new_id;
        right.alive = false;
        left.next = right.next;
        if (right.next >= 0) sym[static_cast<size_t>(right.next)].prev = c.pos;
        if (left.prev >= 0) push_pair(left.prev);
        push_pair(c.pos);
    }
    for (int32_t p = sym.empty() ? -1 : 0; p >= 0; p = sym[static_cast<size_t>(p)].next) out.push_back(sym[static_cast<size_t>(p)].id);
}

}  // namespace tt::tok
