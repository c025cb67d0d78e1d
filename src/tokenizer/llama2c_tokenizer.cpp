// Tokenizer::from_llama2c: the tokenizer.bin format of karpathy/llama2.c and the semantics of its
// run.c. File layout (little-endian): int32 max_token_length, then per token: float32 score,
// int32 byte length, the bytes. Ids 0/1/2 are <unk>/<s>/</s>; ids 3..258 are "<0xNN>" bytes.
//
// encode (run.c encode()): BOS if asked, a dummy-prefix " " token for non-empty text, one token
// per UTF-8 character (its bytes + 3 when the character is not in the vocab), then repeatedly
// merge the adjacent pair whose concatenation has the highest score (leftmost on ties). That is
// run as a tok::BpeModel with ranked pair merges (its cache and word splits included).
// decode (run.c decode()): pieces concatenated, "<0xNN>" as raw bytes, and the leading space of
// the first piece after BOS (or at the start of the sequence, as SentencePiece does) dropped.
#include "core/error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

#include <cstring>
#include <unordered_map>
#include <algorithm>

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
        model_ = std::make_unique<tok::BpeModel>(pieces_, merges(), " ");
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
        // The dummy prefix is the " " token, the same symbol a leading space character gets.
        tok::Pieces pieces;
        bool dummy = lookup_.contains(std::string_view(" "));
        pieces.text.reserve(text.size() + 1);
        if (dummy) pieces.text.push_back(' ');
        pieces.text.append(text);
        pieces.spans.assign(1, {0, pieces.text.size()});
        model_->tokenize(pieces, ids);
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
    // run.c's merge loop ("merge the consecutive pair whose concatenation is the best-scoring
    // token, leftmost on ties, until none is left") is BPE with one merge per (left, right) token
    // pair whose concatenation is in the vocab, ranked by that token's score. The pairs come from
    // splitting every token's string in two at each byte; a string's id is the first token with
    // it (what run.c's lookup returns), and byte tokens "<0xNN>" take part under their own ids.
    // note: run.c starts from best_score = -1e10 with a strict ">", so a token scoring -1e10 or
    // less (or NaN) is never merged into; those pairs are left out.
    std::vector<tok::BpeModel::PairMerge> merges() const {
        // Symbols are first-of-their-string ids, and byte tokens (which may not be first).
        std::unordered_map<std::string_view, std::vector<int32_t>> byte_tokens;
        for (int32_t id = k_first_byte_id; id < k_first_byte_id + 256; ++id)
            if (lookup_.find(pieces_[static_cast<size_t>(id)])->second != id) byte_tokens[pieces_[static_cast<size_t>(id)]].push_back(id);
        auto symbol_ids = [&](std::string_view s, std::vector<int32_t>& out) {
            out.clear();
            if (auto it = lookup_.find(s); it != lookup_.end()) out.push_back(it->second);
            if (auto it = byte_tokens.find(s); it != byte_tokens.end()) out.insert(out.end(), it->second.begin(), it->second.end());
        };
        std::vector<std::pair<float, tok::BpeModel::PairMerge>> found;
        std::vector<int32_t> left, right;
        for (size_t id = 0; id < pieces_.size(); ++id) {
            const std::string& p = pieces_[id];
            auto it = lookup_.find(p);
            float score = scores_[id];
            if (it == lookup_.end() || it->second != static_cast<int32_t>(id) || !(score > -1e10f)) continue;
            for (size_t k = 1; k < p.size(); ++k) {
                std::string_view sv(p);
                symbol_ids(sv.substr(0, k), left);
                if (left.empty()) continue;
                symbol_ids(sv.substr(k), right);
                for (int32_t a : left)
                    for (int32_t b : right) found.push_back({score, {a, b, static_cast<int32_t>(id), 0}});
            }
        }
        // Dense ranks: equal scores share a rank, so ties fall to the leftmost pair as in run.c.
        std::vector<float> scores;
        for (const auto& f : found) scores.push_back(f.first);
        std::sort(scores.begin(), scores.end(), std::greater<>());
        scores.erase(std::unique(scores.begin(), scores.end()), scores.end());
        std::vector<tok::BpeModel::PairMerge> out;
        out.reserve(found.size());
        for (auto& [score, pm] : found) {
            pm.rank = static_cast<int32_t>(std::lower_bound(scores.begin(), scores.end(), score, std::greater<>()) - scores.begin());
            out.push_back(pm);
        }
        return out;
    }

    std::vector<std::string> pieces_;
    std::vector<float> scores_;
    tok::VocabMap lookup_;
    std::unique_ptr<tok::BpeModel> model_;
};

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_llama2c(std::string_view bytes, int vocab_size, const std::string& context) {
    return std::make_unique<Llama2cTokenizer>(bytes, vocab_size, context);
}

}  // namespace tt
