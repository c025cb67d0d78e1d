// BPE model: loading (vocab, merges), splitting pieces into cacheable words, and the merge loop,
// which follows `tokenizers`' Word::merge_all: repeatedly merge the adjacent pair with the lowest
// rank, the leftmost of equal ranks (a rescan for short words, a heap for long ones).
// note: the heap skips a popped candidate when its pair no longer yields the same token; since
// vocab strings are unique, that token determines the pair, so both loops merge the same pairs.
#include "tokenizer/bpe.h"

#include "core/error.h"
#include "tokenizer/unicode.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

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
    std::vector<std::pair<uint64_t, Merge>> entries;
    if (m.contains("merges") && !m["merges"].is_null()) {
        const json& merges = m["merges"];
        if (!merges.is_array()) fail("{}: BPE \"merges\" must be an array", ctx);
        entries.reserve(merges.size());
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
            entries.push_back({pair_key(ia->second, ib->second), {static_cast<int32_t>(rank), iab->second}});
        }
    }
    finish(entries, "\xE2\x96\x81");  // ▁
}

BpeModel::BpeModel(std::vector<std::string> tokens, const std::vector<PairMerge>& merges, const std::string& sep) {
    id_to_token_ = std::move(tokens);
    has_token_.assign(id_to_token_.size(), true);
    for (size_t id = 0; id < id_to_token_.size(); ++id) vocab_.emplace(id_to_token_[id], static_cast<int32_t>(id));  // first wins
    byte_fallback_ = true;
    std::vector<std::pair<uint64_t, Merge>> entries;
    entries.reserve(merges.size());
    for (const PairMerge& pm : merges) entries.push_back({pair_key(pm.left, pm.right), {pm.rank, pm.result}});
    finish(entries, sep);
}

void BpeModel::finish(const std::vector<std::pair<uint64_t, Merge>>& entries, const std::string& sep) {
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

    merges_.build(entries);
    find_safe_splits(entries, sep);
}

void BpeModel::MergeTable::build(const std::vector<std::pair<uint64_t, Merge>>& entries) {
    size_t n = 2;
    shift_ = 63;
    while (n < entries.size() * 3 / 2 + 1) n <<= 1, --shift_;  // load factor <= 2/3
    slots_.assign(n, Entry{});
    mask_ = n - 1;
    size_ = 0;
    for (const auto& [key, merge] : entries) {
        size_t i = slot_of(key);
        while (slots_[i].key != k_empty && slots_[i].key != key) i = (i + 1) & mask_;
        // A repeated pair keeps its last rank, as the map it replaces did.
        size_ += slots_[i].key == k_empty;
        slots_[i] = {key, merge};
    }
}

void BpeModel::find_safe_splits(const std::vector<std::pair<uint64_t, Merge>>& entries, const std::string& sep) {
    if (sep.empty() || !continuing_subword_prefix_.empty() || !end_of_word_suffix_.empty() || !vocab_.contains(sep)) return;
    std::vector<bool> fallback(id_to_token_.size(), false);
    for (int32_t id : byte_ids_)
        if (id >= 0) fallback[static_cast<size_t>(id)] = true;
    if (unk_id_) fallback[static_cast<size_t>(*unk_id_)] = true;
    for (const auto& [key, merge] : entries) {
        fallback_merges_ |= fallback[key >> 32] || fallback[key & 0xFFFFFFFF];
        const std::string& product = id_to_token_[static_cast<size_t>(merge.new_id)];
        size_t p = product.find(sep, 1);
        if (p == std::string::npos) continue;
        if (utf8_first_invalid(product)) {  // llama2.c pieces are raw bytes: no splits then
            joins_before_sep_.clear();
            return;
        }
        for (; p != std::string::npos; p = product.find(sep, p + sep.size()))
            joins_before_sep_.push_back(utf8_last_char(std::string_view(product).substr(0, p)));
    }
    all_bytes_ = byte_fallback_;
    for (int32_t id : byte_ids_) all_bytes_ &= id >= 0;
    fallback_total_ = unk_id_.has_value() || all_bytes_;
    std::sort(joins_before_sep_.begin(), joins_before_sep_.end());
    joins_before_sep_.erase(std::unique(joins_before_sep_.begin(), joins_before_sep_.end()), joins_before_sep_.end());
    sep_ = sep;

    // The character pairs that occur side by side in merge results, if there are few (TinyStories:
    // ~450; Gemma's 515k merges have far more and keep the "▁" rule alone).
    constexpr size_t k_max_pairs = size_t{1} << 15;
    std::vector<uint64_t> pairs;
    for (const auto& [key, merge] : entries) {
        std::string_view product = id_to_token_[static_cast<size_t>(merge.new_id)];
        if (product.empty()) continue;
        if (utf8_first_invalid(product)) return;
        size_t i = 0;
        for (char32_t prev = utf8_next(product, i); i < product.size();) {
            char32_t c = utf8_next(product, i);
            pairs.push_back(char_pair(prev, c));
            prev = c;
        }
        if (pairs.size() > 4 * k_max_pairs) {
            std::sort(pairs.begin(), pairs.end());
            pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
            if (pairs.size() > k_max_pairs) return;
        }
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    if (pairs.size() > k_max_pairs) return;
    std::vector<std::pair<uint64_t, Merge>> set;
    for (uint64_t pr : pairs) set.push_back({pr, {0, 0}});
    joined_pairs_.build(set);
    pair_splits_ = true;
}

void BpeModel::split_words(std::string_view piece, std::vector<std::string_view>& words) const {
    // Whether a cut between characters x | y is safe, given whether each has its own token.
    auto safe_fallback = [&](bool x_plain, bool y_plain) {
        // Fallback symbols (bytes, unk) must never merge, and a character must never vanish and
        // expose its neighbour; two unknown neighbours would fuse into one unk unless bytes cover all.
        if (fallback_merges_ || !fallback_total_) return false;
        return x_plain || y_plain || all_bytes_;
    };
    // 1. In front of "▁" (which has its own token): word boundaries, which repeat in text.
    thread_local std::vector<std::string_view> coarse;
    coarse.clear();
    size_t start = 0;
    for (size_t p = piece.find(sep_, 1); p != std::string_view::npos; p = piece.find(sep_, p + sep_.size())) {
        std::string_view left = piece.substr(0, p);
        size_t n = utf8_last_char_len(left);
        bool safe = char_id(left.substr(p - n)) >= 0
                        ? !std::binary_search(joins_before_sep_.begin(), joins_before_sep_.end(), utf8_last_char(left))
                        : safe_fallback(false, true);
        if (!safe) continue;
        coarse.push_back(piece.substr(start, p - start));
        start = p;
    }
    coarse.push_back(piece.substr(start));
    // 2. Parts still long (TinyStories has tokens spanning words) are cut at every other safe
    //    character boundary. (Short words keep their cache entries whole: cutting them too would
    //    only add lookups.)
    constexpr size_t k_long = 32;
    for (std::string_view part : coarse) {
        if (!pair_splits_ || part.size() <= k_long) {
            words.push_back(part);
            continue;
        }
        size_t cut = 0, i = 0;
        char32_t x = utf8_next(part, i);
        bool x_plain = char_id(part.substr(0, i)) >= 0;
        while (i < part.size()) {
            size_t at = i;
            char32_t y = utf8_next(part, i);
            bool y_plain = char_id(part.substr(at, i - at)) >= 0;
            if (x_plain && y_plain ? !joined_pairs_.find(char_pair(x, y)) : safe_fallback(x_plain, y_plain)) {
                words.push_back(part.substr(cut, at - cut));
                cut = at;
            }
            x = y, x_plain = y_plain;
        }
        words.push_back(part.substr(cut));
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

void BpeModel::tokenize(const Pieces& pieces, std::vector<int32_t>& out) const {
    struct Word {
        std::string_view text;
        int32_t id;  // >= 0: already known (ignore_merges found the whole piece)
    };
    if (pieces.byte_level && !sep_.empty()) {  // the splits below look at mapped characters
        Pieces mapped = pieces;
        mapped.map_byte_level();
        tokenize(mapped, out);
        return;
    }
    const bool raw = pieces.byte_level;
    thread_local std::vector<Word> words;
    thread_local std::vector<uint64_t> hashes;
    thread_local std::vector<std::string_view> parts;
    thread_local std::string mapped;
    // A raw word is mapped to its GPT-2 characters only when the cache does not have it.
    auto tokenize_raw = [&](std::string_view word) {
        if (!raw) return tokenize_word(word, out);
        mapped.clear();
        append_byte_level(mapped, word);
        tokenize_word(mapped, out);
    };
    words.clear();
    for (size_t k = 0; k < pieces.size(); ++k) {
        std::string_view piece = pieces[k];
        if (piece.empty()) continue;
        if (sep_.empty()) {
            words.push_back({piece, -1});
            continue;
        }
        if (ignore_merges_) {  // applies to the whole piece, before any split
            if (auto it = vocab_.find(piece); it != vocab_.end()) {
                words.push_back({piece, it->second});
                continue;
            }
        }
        parts.clear();
        split_words(piece, parts);
        for (std::string_view w : parts) words.push_back({w, -1});
    }

    // Cache lookups are mostly cache-line misses (the table is MBs): each word's entry is
    // prefetched a few words ahead so that the misses overlap.
    constexpr size_t k_ahead = 4;
    const size_t n = words.size();
    hashes.resize(n);
    auto prepare = [&](size_t i) {
        if (words[i].id < 0 && words[i].text.size() <= k_cache_max_len) {
            hashes[i] = WordCache::hash(words[i].text);
            cache_.prefetch(hashes[i]);
        }
    };
    for (size_t i = 0; i < std::min(n, k_ahead); ++i) prepare(i);
    for (size_t i = 0; i < n; ++i) {
        if (i + k_ahead < n) prepare(i + k_ahead);
        const Word& w = words[i];
        if (w.id >= 0) {
            out.push_back(w.id);
        } else if (w.text.size() > k_cache_max_len) {
            tokenize_raw(w.text);
        } else if (!cache_.find(hashes[i], w.text, raw, out)) {
            size_t first = out.size();
            tokenize_raw(w.text);
            cache_.insert(hashes[i], w.text, raw, out.data() + first, out.size() - first);
        }
    }
}

void BpeModel::tokenize_word(std::string_view word, std::vector<int32_t>& out) const {
    // Without sep_ splits every word is a whole piece, so ignore_merges looks it up here, after
    // the cache (which then holds that result); with them, tokenize() did it on the whole piece.
    if (ignore_merges_ && sep_.empty()) {
        if (auto it = vocab_.find(word); it != vocab_.end()) {
            out.push_back(it->second);
            return;
        }
    }
    merge_word(word, out);
}

int32_t BpeModel::char_id(std::string_view ch) const {
    size_t i = 0;
    if (char32_t cp = utf8_next(ch, i); cp < k_small_chars && continuing_subword_prefix_.empty() && end_of_word_suffix_.empty())
        return small_char_ids_[cp];
    auto it = vocab_.find(ch);
    return it == vocab_.end() ? -1 : it->second;
}

void BpeModel::merge_word(std::string_view piece, std::vector<int32_t>& out) const {
    bool affixes = !continuing_subword_prefix_.empty() || !end_of_word_suffix_.empty();
    if (!piece.empty() && !affixes && utf8_char_len(piece, 0) == piece.size()) {
        if (int32_t id = char_id(piece); id >= 0) {  // one character with its own token
            out.push_back(id);
            return;
        }
    }
    // 1. One symbol per character: the vocab entry, else its "<0xNN>" bytes, else <unk> (runs of
    //    unknown characters fuse into one <unk> when fuse_unk is set).
    thread_local std::vector<int32_t> sym;  // reused: a word costs no allocation once it has grown
    sym.clear();
    bool pending_unk = false;
    std::string key;
    for (size_t i = 0; i < piece.size();) {
        size_t start = i;
        size_t n = utf8_char_len(piece, i);
        i += n == 0 ? 1 : n;  // pieces are valid UTF-8; the guard keeps a bug from looping
        std::string_view ch = piece.substr(start, i - start);
        int32_t id = -1;
        if (n != 0 && !affixes) {
            id = char_id(ch);
        } else if (n != 0) {
            key.clear();
            if (start > 0) key += continuing_subword_prefix_;
            key += ch;
            if (i == piece.size()) key += end_of_word_suffix_;
            if (auto it = vocab_.find(key); it != vocab_.end()) id = it->second;
        }
        if (id >= 0) {
            if (pending_unk) sym.push_back(*unk_id_), pending_unk = false;
            sym.push_back(id);
            continue;
        }
        if (byte_fallback_) {
            bool all = true;
            for (char c : ch) all &= byte_ids_[static_cast<uint8_t>(c)] >= 0;
            if (all) {
                if (pending_unk) sym.push_back(*unk_id_), pending_unk = false;
                for (char c : ch) sym.push_back(byte_ids_[static_cast<uint8_t>(c)]);
                continue;
            }
        }
        if (unk_id_) {
            if (pending_unk && !fuse_unk_) sym.push_back(*unk_id_);
            pending_unk = true;
        }
        // No unk token and no fallback: `tokenizers` drops the character.
    }
    if (pending_unk) sym.push_back(*unk_id_);

    // 2. Merge the lowest-ranked adjacent pair (leftmost on ties) until none is left.
    if (sym.size() > 1 && !merges_.empty()) {
        if (sym.size() <= k_small_word)
            merge_small(sym);
        else
            merge_heap(sym);
    }
    out.insert(out.end(), sym.begin(), sym.end());
}

// Most words have a handful of symbols: rescanning the pairs for the best one costs less than
// heap upkeep, and all first probes of the merge table are issued before any is waited for.
void BpeModel::merge_small(std::vector<int32_t>& sym) const {
    int32_t rank[k_small_word], new_id[k_small_word];  // of the pair (sym[i], sym[i + 1])
    size_t n = sym.size();
    auto set_pair = [&](size_t i) {
        const Merge* m = merges_.find(pair_key(sym[i], sym[i + 1]));
        rank[i] = m ? m->rank : INT32_MAX;
        new_id[i] = m ? m->new_id : -1;
    };
    for (size_t i = 0; i + 1 < n; ++i) merges_.prefetch(pair_key(sym[i], sym[i + 1]));
    for (size_t i = 0; i + 1 < n; ++i) set_pair(i);
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; ++i)
            if (rank[i] < rank[best]) best = i;  // strict: the leftmost of equal ranks
        if (rank[best] == INT32_MAX) break;
        sym[best] = new_id[best];
        // Drop symbol best + 1 and pair best + 1 (pair best is recomputed below).
        for (size_t i = best + 1; i + 1 < n; ++i) sym[i] = sym[i + 1];
        for (size_t i = best + 1; i + 2 < n; ++i) rank[i] = rank[i + 1], new_id[i] = new_id[i + 1];
        --n;
        if (best > 0) set_pair(best - 1);
        if (best + 1 < n) set_pair(best);
    }
    sym.resize(n);
}

// Long words: `tokenizers`' Word::merge_all, a min-heap of (rank, position) candidates over a
// linked list of symbols, stale candidates skipped when popped: O(n log n).
void BpeModel::merge_heap(std::vector<int32_t>& ids) const {
    struct Symbol {
        int32_t id;          // -1 once merged into its left neighbour
        int32_t prev, next;  // -1 at the ends
    };
    struct Candidate {
        int32_t rank, pos, new_id;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    thread_local std::vector<Symbol> sym;
    thread_local std::vector<Candidate> heap;
    sym.clear();
    heap.clear();
    for (size_t i = 0; i < ids.size(); ++i)
        sym.push_back({ids[i], static_cast<int32_t>(i) - 1, i + 1 < ids.size() ? static_cast<int32_t>(i + 1) : -1});
    auto push_pair = [&](int32_t pos) {
        int32_t nx = sym[static_cast<size_t>(pos)].next;
        if (nx < 0) return;
        if (const Merge* m = merges_.find(pair_key(sym[static_cast<size_t>(pos)].id, sym[static_cast<size_t>(nx)].id))) {
            heap.push_back({m->rank, pos, m->new_id});
            std::push_heap(heap.begin(), heap.end(), std::greater<>());
        }
    };
    for (int32_t p = 0; p + 1 < static_cast<int32_t>(sym.size()); ++p) push_pair(p);
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<>());
        Candidate c = heap.back();
        heap.pop_back();
        Symbol& left = sym[static_cast<size_t>(c.pos)];
        if (left.id < 0 || left.next < 0) continue;
        Symbol& right = sym[static_cast<size_t>(left.next)];
        const Merge* m = merges_.find(pair_key(left.id, right.id));
        if (!m || m->new_id != c.new_id) continue;  // stale: that pair has changed since
        left.id = c.new_id;
        right.id = -1;
        left.next = right.next;
        if (right.next >= 0) sym[static_cast<size_t>(right.next)].prev = c.pos;
        if (left.prev >= 0) push_pair(left.prev);
        push_pair(c.pos);
    }
    ids.clear();
    for (int32_t p = 0; p >= 0; p = sym[static_cast<size_t>(p)].next) ids.push_back(sym[static_cast<size_t>(p)].id);
}

}  // namespace tt::tok
