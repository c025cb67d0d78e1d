// Tokenizer::from_llama2c: the tokenizer.bin format of karpathy/llama2.c and the semantics of its
// run.c. File layout (little-endian): int32 max_token_length, then per token: float32 score,
// int32 byte length, the bytes. Ids 0/1/2 are <unk>/<s>/</s>; ids 3..258 are "<0xNN>" bytes.
//
// encode (run.c encode()): BOS if asked, a dummy-prefix " " token for non-empty text, one token
// per UTF-8 character (its bytes + 3 when the character is not in the vocab), then repeatedly
// merge the adjacent pair whose concatenation has the highest score (leftmost on ties).
// decode (run.c decode()): pieces concatenated, "<0xNN>" as raw bytes, and the leading space of
// the first piece after BOS (or at the start of the sequence, as SentencePiece does) dropped.
#include "core/error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

#include <cstring>
#include <queue>

namespace tt {

namespace {

constexpr int32_t k_unk_id = 0, k_bos_id = 1, k_eos_id = 2, k_first_byte_id = 3;

class Llama2cTokenizer final : public Tokenizer {
public:
    Llama2cTokenizer(std::string_view bytes, int vocab_size, const std::string& ctx) {
        context_ = ctx;
        size_t off = 0;
        auto read_i32 = [&](const char* what, size_t index) {
            if (bytes.size() - off < 4) fail("{}: truncated llama2.c tokenizer ({} of token {})", ctx, what, index);
            int32_t v;
            std::memcpy(&v, bytes.data() + off, 4);
            off += 4;
            return v;
        };
        if (bytes.size() < 4) fail("{}: not a llama2.c tokenizer (file shorter than its header)", ctx);
        int32_t max_len = read_i32("header", 0);
        if (max_len <= 0 || max_len > (1 << 20)) fail("{}: not a llama2.c tokenizer (max_token_length {})", ctx, max_len);
        while (vocab_size < 0 ? off < bytes.size() : static_cast<int>(pieces_.size()) < vocab_size) {
            size_t index = pieces_.size();
            int32_t score_bits = read_i32("score", index);
            float score;
            std::memcpy(&score, &score_bits, 4);
            int32_t len = read_i32("length", index);
            if (len < 0 || static_cast<size_t>(len) > bytes.size() - off)
                fail("{}: llama2.c tokenizer token {} has length {} past the end of the file", ctx, index, len);
            pieces_.emplace_back(bytes.substr(off, static_cast<size_t>(len)));
            scores_.push_back(score);
            off += static_cast<size_t>(len);
        }
        if (pieces_.size() < static_cast<size_t>(k_first_byte_id + 256))
            fail("{}: llama2.c tokenizer has {} tokens; expected at least 259 (<unk>, <s>, </s>, 256 bytes)", ctx,
                 pieces_.size());
        for (size_t i = 0; i < pieces_.size(); ++i) lookup_.emplace(pieces_[i], static_cast<int32_t>(i));  // first wins
        bos_id_ = k_bos_id;
        eos_ids_ = {k_eos_id};
        bos_token_ = "<s>";
        eos_token_ = "</s>";
        add_bos_ = true;
    }

    std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override {
        if (auto bad = tok::utf8_first_invalid(text))
            fail("{}: input text is not valid UTF-8 (byte 0x{:02X} at offset {})", context_,
                 static_cast<uint8_t>(text[*bad]), *bad);
        std::vector<int32_t> ids;
        if (add_special_tokens) ids.push_back(k_bos_id);
        if (text.empty()) return ids;
        std::vector<int32_t> sym;
        if (auto it = lookup_.find(std::string_view(" ")); it != lookup_.end()) sym.push_back(it->second);
        for (size_t i = 0; i < text.size();) {
            size_t n = tok::utf8_char_len(text, i);
            std::string_view ch = text.substr(i, n);
            i += n;
            if (auto it = lookup_.find(ch); it != lookup_.end()) {
                sym.push_back(it->second);
            } else {
                for (char c : ch) sym.push_back(static_cast<int32_t>(static_cast<uint8_t>(c)) + k_first_byte_id);
            }
        }
        merge(sym);
        ids.insert(ids.end(), sym.begin(), sym.end());
        return ids;
    }

    std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
        std::string bytes;
        bool at_start = true;  // next piece drops a leading space
        for (int32_t id : ids) {
            if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) continue;
            if (is_special(id)) {
                if (!skip_special_tokens) bytes += id_to_token(id);
                at_start = id == k_bos_id;
                continue;
            }
            std::string_view piece = pieces_[static_cast<size_t>(id)];
            if (id >= k_first_byte_id && id < k_first_byte_id + 256) {
                bytes.push_back(static_cast<char>(id - k_first_byte_id));
            } else {
                if (at_start && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
                bytes.append(piece);
            }
            at_start = false;
        }
        return tok::utf8_lossy(bytes);
    }

    int vocab_size() const override { return static_cast<int>(pieces_.size()); }

    std::optional<int32_t> token_to_id(std::string_view token) const override {
        for (int32_t id : {k_unk_id, k_bos_id, k_eos_id})
            if (token == id_to_token(id)) return id;
        auto it = lookup_.find(token);
        if (it == lookup_.end()) return std::nullopt;
        return it->second;
    }

    // The control pieces are stored decorated ("\n<s>\n") for run.c's printing; report the names.
    std::string id_to_token(int32_t id) const override {
        if (id == k_unk_id) return "<unk>";
        if (id == k_bos_id) return "<s>";
        if (id == k_eos_id) return "</s>";
        if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return "";
        return pieces_[static_cast<size_t>(id)];
    }

    bool is_special(int32_t id) const override { return id == k_unk_id || id == k_bos_id || id == k_eos_id; }

private:
    // run.c's merge loop ("find the best consecutive pair, merge, repeat") with a max-heap of
    // (score, position) candidates instead of a rescan, so it is O(n log n) in the text length.
    void merge(std::vector<int32_t>& sym) const {
        struct Node {
            int32_t id, prev, next;
            bool alive;
        };
        std::vector<Node> nodes(sym.size());
        for (size_t i = 0; i < sym.size(); ++i)
            nodes[i] = {sym[i], static_cast<int32_t>(i) - 1, i + 1 < sym.size() ? static_cast<int32_t>(i + 1) : -1, true};
        struct Candidate {
            float score;
            int32_t pos, new_id;
            bool operator<(const Candidate& o) const { return score != o.score ? score < o.score : pos > o.pos; }
        };
        std::priority_queue<Candidate> heap;
        std::string buf;
        auto merged_id = [&](int32_t pos) -> int32_t {
            int32_t nx = nodes[static_cast<size_t>(pos)].next;
            if (nx < 0) return -1;
            buf = pieces_[static_cast<size_t>(nodes[static_cast<size_t>(pos)].id)];
            buf += pieces_[static_cast<size_t>(nodes[static_cast<size_t>(nx)].id)];
            auto it = lookup_.find(buf);
            return it == lookup_.end() ? -1 : it->second;
        };
        auto push = [&](int32_t pos) {
            if (int32_t id = merged_id(pos); id >= 0) heap.push({scores_[static_cast<size_t>(id)], pos, id});
        };
        for (int32_t i = 0; i + 1 < static_cast<int32_t>(nodes.size()); ++i) push(i);
        while (!heap.empty()) {
            Candidate c = heap.top();
            heap.pop();
            Node& left = nodes[static_cast<size_t>(c.pos)];
            if (!left.alive || merged_id(c.pos) != c.new_id) continue;  // stale
            Node& right = nodes[static_cast<size_t>(left.next)];
            left.id = c.new_id;
            right.alive = false;
            left.next = right.next;
            if (right.next >= 0) nodes[static_cast<size_t>(right.next)].prev = c.pos;
            if (left.prev >= 0) push(left.prev);
            push(c.pos);
        }
        sym.clear();
        for (int32_t p = nodes.empty() ? -1 : 0; p >= 0; p = nodes[static_cast<size_t>(p)].next)
            sym.push_back(nodes[static_cast<size_t>(p)].id);
    }

    std::vector<std::string> pieces_;
    std::vector<float> scores_;
    tok::VocabMap lookup_;
};

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_llama2c(std::string_view bytes, int vocab_size, const std::string& context) {
    return std::make_unique<Llama2cTokenizer>(bytes, vocab_size, context);
}

}  // namespace tt
