// Tokenizer::from_hf: the Hugging Face `tokenizers` pipeline for a tokenizer.json.
//
//   encode: text -> split out added tokens (matched on the raw text) -> normalize each remaining
//           segment -> split out added tokens marked "normalized" (matched on normalized text)
//           -> pre-tokenize each segment into pieces -> BPE each piece -> post-processor
//           (TemplateProcessing BOS/EOS), adjusted by tokenizer_config's add_bos/eos_token.
//   decode: ids -> token strings (special ones dropped if asked) -> decoder chain -> text.
#include "core/error.h"
#include "core/json.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

#include <nlohmann/json.hpp>

#include <array>
#include <unordered_map>

namespace tt {

namespace {

using json = nlohmann::json;
using tok::utf8_next;

struct AddedToken {
    int32_t id = -1;
    std::string content;
    std::string match_content;  // content, normalized when `normalized` (what is searched for)
    bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// Byte trie over added-token contents: the longest token starting at a position, in O(length).
class TokenTrie {
public:
    TokenTrie() { nodes_.emplace_back(); }
    void insert(std::string_view s, int32_t token_index) {
        if (s.empty()) return;
        int32_t n = 0;
        for (char c : s) {
            int32_t next = child(n, static_cast<uint8_t>(c));
            if (next < 0) {
                next = static_cast<int32_t>(nodes_.size());
                nodes_[static_cast<size_t>(n)].kids.emplace_back(static_cast<uint8_t>(c), next);
                nodes_.emplace_back();
            }
            n = next;
        }
        nodes_[static_cast<size_t>(n)].token = token_index;
        first_[static_cast<uint8_t>(s[0])] = true;
        empty_ = false;
    }
    bool empty() const { return empty_; }
    // (length, token index) of the longest token at s[pos], or length 0.
    std::pair<size_t, int32_t> longest_at(std::string_view s, size_t pos) const {
        std::pair<size_t, int32_t> best{0, -1};
        if (!first_[static_cast<uint8_t>(s[pos])]) return best;
        int32_t n = 0;
        for (size_t i = pos; i < s.size(); ++i) {
            n = child(n, static_cast<uint8_t>(s[i]));
            if (n < 0) break;
            if (nodes_[static_cast<size_t>(n)].token >= 0) best = {i + 1 - pos, nodes_[static_cast<size_t>(n)].token};
        }
        return best;
    }

private:
    struct Node {
        std::vector<std::pair<uint8_t, int32_t>> kids;
        int32_t token = -1;
    };
    int32_t child(int32_t n, uint8_t c) const {
        for (const auto& [k, v] : nodes_[static_cast<size_t>(n)].kids)
            if (k == c) return v;
        return -1;
    }
    std::vector<Node> nodes_;
    std::array<bool, 256> first_{};
    bool empty_ = true;
};

// A stretch of text that is either an added token (`token` >= 0) or text for the model.
struct Segment {
    size_t begin, end;
    int32_t token;  // index into added_, or -1
};

std::string token_string(const json& j) {
    if (j.is_string()) return j.get<std::string>();
    if (j.is_object() && j.contains("content") && j["content"].is_string()) return j["content"].get<std::string>();
    return "";
}

class HfTokenizer final : public Tokenizer {
public:
    HfTokenizer(const json& tj, const json& cfg, const std::string& ctx) {
        context_ = ctx;
        if (!tj.is_object()) fail("{}: tokenizer.json must be a JSON object", ctx);
        if (!tj.contains("model") || !tj["model"].is_object()) fail("{}: no \"model\" object", ctx);
        const json& m = tj["model"];
        // Files without "type" are BPE when they have merges (old `tokenizers` versions omitted it).
        std::string type = m.contains("type") && m["type"].is_string() ? m["type"].get<std::string>()
                           : m.contains("merges")                        ? "BPE"
                                                                         : "";
        if (type != "BPE")
            fail("{}: unknown model type '{}' (supported: BPE; WordPiece/Unigram/WordLevel are not implemented)", ctx, type);
        model_ = std::make_unique<tok::BpeModel>(m, ctx);
        normalizer_ = tok::make_normalizer(tj.value("normalizer", json()), ctx);
        pre_tokenizer_ = tok::make_pre_tokenizer(tj.value("pre_tokenizer", json()), ctx);
        decoder_ = tok::make_decoder(tj.value("decoder", json()), ctx);
        load_added_tokens(tj.value("added_tokens", json::array()), ctx);
        load_post_processor(tj.value("post_processor", json()), ctx);
        apply_config(cfg);
    }

    std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override {
        if (auto bad = tok::utf8_first_invalid(text))
            fail("{}: input text is not valid UTF-8 (byte 0x{:02X} at offset {})", context_,
                 static_cast<uint8_t>(text[*bad]), *bad);
        std::vector<int32_t> ids;
        ids.reserve(text.size() / 3 + 8);  // ~2.5-4 bytes per token in practice
        if (add_special_tokens) ids = prefix_ids_;
        std::string norm;
        tok::Pieces pieces;
        for (const Segment& seg : find_added(text, raw_trie_)) {
            if (seg.token >= 0) {
                ids.push_back(added_[static_cast<size_t>(seg.token)].id);
                continue;
            }
            norm.assign(text.substr(seg.begin, seg.end - seg.begin));
            if (normalizer_) normalizer_->normalize(norm);
            for (const Segment& s2 : find_added(norm, normalized_trie_)) {
                if (s2.token >= 0) {
                    ids.push_back(added_[static_cast<size_t>(s2.token)].id);
                    continue;
                }
                pieces.reset(std::string_view(norm).substr(s2.begin, s2.end - s2.begin));
                if (pre_tokenizer_) pre_tokenizer_->split(pieces, seg.begin == 0 && s2.begin == 0);
                model_->tokenize(pieces, ids);
            }
        }
        if (add_special_tokens) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
        return ids;
    }

    std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
        std::vector<std::string> tokens;
        tokens.reserve(ids.size());
        for (int32_t id : ids) {
            if (auto it = added_by_id_.find(id); it != added_by_id_.end()) {
                const AddedToken& t = added_[it->second];
                if (skip_special_tokens && t.special) continue;
                // note: `tokenizers` 0.23 feeds a "normalized" added token to the decoder in its
                // normalized form (TinyStories' <unk> decodes as " <unk>" via "▁<unk>"); the
                // reference fixtures pin this down.
                tokens.push_back(t.match_content);
            } else if (const std::string* s = model_->id_to_token(id)) {
                tokens.push_back(*s);
            }
        }
        std::string out;
        if (decoder_) {
            decoder_->decode(tokens);
            for (const auto& t : tokens) out += t;
        } else {
            for (size_t k = 0; k < tokens.size(); ++k) out += (k ? " " : "") + tokens[k];
        }
        return out;
    }

    int vocab_size() const override { return vocab_size_; }
    int model_vocab_size() const override { return model_->size(); }

    std::optional<int32_t> token_to_id(std::string_view token) const override {
        if (auto it = added_by_content_.find(token); it != added_by_content_.end()) return it->second;
        return model_->token_to_id(token);
    }

    std::string id_to_token(int32_t id) const override {
        if (auto it = added_by_id_.find(id); it != added_by_id_.end()) return added_[it->second].content;
        const std::string* s = model_->id_to_token(id);
        return s ? *s : std::string();
    }

    bool is_special(int32_t id) const override {
        auto it = added_by_id_.find(id);
        return it != added_by_id_.end() && added_[it->second].special;
    }

private:
    void load_added_tokens(const json& list, const std::string& ctx) {
        if (!list.is_array()) fail("{}: \"added_tokens\" must be an array", ctx);
        vocab_size_ = model_->size();
        for (const json& a : list) {
            if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
                !a["content"].is_string())
                fail("{}: every added token needs an integer \"id\" and a string \"content\"", ctx);
            AddedToken t;
            t.id = a["id"].get<int32_t>();
            if (t.id < 0) fail("{}: added token '{}' has a negative id", ctx, a["content"].get<std::string>());
            t.content = a["content"].get<std::string>();
            t.special = a.value("special", false);
            t.lstrip = a.value("lstrip", false);
            t.rstrip = a.value("rstrip", false);
            t.single_word = a.value("single_word", false);
            t.normalized = a.value("normalized", !t.special);
            t.match_content = t.content;
            if (t.normalized && normalizer_) normalizer_->normalize(t.match_content);
            size_t index = added_.size();
            (t.normalized ? normalized_trie_ : raw_trie_).insert(t.match_content, static_cast<int32_t>(index));
            added_by_id_[t.id] = index;
            added_by_content_[t.content] = t.id;
            vocab_size_ = std::max(vocab_size_, t.id + 1);
            added_.push_back(std::move(t));
        }
    }

    // Leftmost-longest matches of added tokens in `s`, with single_word / lstrip / rstrip applied
    // as `tokenizers`' AddedVocabulary::find_matches does; the gaps become model segments.
    std::vector<Segment> find_added(std::string_view s, const TokenTrie& trie) const {
        std::vector<Segment> out;
        if (trie.empty() || s.empty()) {
            out.push_back({0, s.size(), -1});
            return out;
        }
        size_t start_offset = 0;
        for (size_t pos = 0; pos < s.size();) {
            auto [len, index] = trie.longest_at(s, pos);
            if (len == 0) {
                ++pos;
                continue;
            }
            size_t start = pos, stop = pos + len;
            pos = stop;
            if (start < start_offset) continue;  // swallowed by the previous token's rstrip
            const AddedToken& t = added_[static_cast<size_t>(index)];
            if (t.single_word) {
                bool start_ok = start == 0 || !tok::is_word_char(last_char(s.substr(0, start)));
                bool stop_ok = stop == s.size() || !tok::is_word_char(first_char(s.substr(stop)));
                if (!start_ok || !stop_ok) continue;
            }
            if (t.lstrip) {
                size_t b = start;
                while (b > start_offset) {
                    size_t c = b - 1;
                    while (c > 0 && (static_cast<uint8_t>(s[c]) & 0xC0) == 0x80) --c;
                    size_t i = c;
                    if (!tok::is_whitespace(utf8_next(s, i))) break;
                    b = c;
                }
                start = b;
            }
            if (t.rstrip) {
                while (stop < s.size()) {
                    size_t i = stop;
                    if (!tok::is_whitespace(utf8_next(s, i))) break;
                    stop = i;
                }
                pos = stop;
            }
            if (start_offset < start) out.push_back({start_offset, start, -1});
            out.push_back({start, stop, index});
            start_offset = stop;
        }
        if (start_offset < s.size()) out.push_back({start_offset, s.size(), -1});
        return out;
    }

    static char32_t last_char(std::string_view s) {
        size_t c = s.size() - 1;
        while (c > 0 && (static_cast<uint8_t>(s[c]) & 0xC0) == 0x80) --c;
        return utf8_next(s, c);
    }
    static char32_t first_char(std::string_view s) {
        size_t i = 0;
        return utf8_next(s, i);
    }

    // The post-processor, reduced to the ids placed before and after the sequence (single input).
    void load_post_processor(const json& pp, const std::string& ctx, int depth = 0) {
        if (pp.is_null()) return;
        if (depth > tok::k_max_pipeline_depth)
            fail("{}: post-processor Sequences nested deeper than {} levels", ctx, tok::k_max_pipeline_depth);
        std::string type = pp.is_object() && pp.contains("type") && pp["type"].is_string() ? pp["type"].get<std::string>() : "";
        if (type == "ByteLevel") return;  // only adjusts offsets
        if (type == "Sequence") {
            for (const json& p : pp.value("processors", json::array())) load_post_processor(p, ctx, depth + 1);
            return;
        }
        if (type == "RobertaProcessing" || type == "BertProcessing") {
            auto id_of = [&](const char* key) {
                if (!pp.contains(key) || !pp[key].is_array() || pp[key].size() != 2 || !pp[key][1].is_number_integer())
                    fail("{}: {} needs \"{}\": [token, id]", ctx, type, key);
                return pp[key][1].get<int32_t>();
            };
            prefix_ids_.insert(prefix_ids_.begin(), id_of("cls"));
            suffix_ids_.push_back(id_of("sep"));
            return;
        }
        if (type == "TemplateProcessing") {
            if (!pp.contains("single") || !pp["single"].is_array()) fail("{}: TemplateProcessing needs \"single\"", ctx);
            const json& specials = pp.value("special_tokens", json::object());
            std::vector<int32_t> before, after;
            bool seen_sequence = false;
            for (const json& item : pp["single"]) {
                if (item.contains("Sequence")) {
                    seen_sequence = true;
                } else if (item.contains("SpecialToken")) {
                    std::string name = item["SpecialToken"].value("id", std::string());
                    if (!specials.contains(name) || !specials[name].contains("ids") || !specials[name]["ids"].is_array())
                        fail("{}: TemplateProcessing uses special token '{}' that is not in its special_tokens", ctx, name);
                    for (const json& id : specials[name]["ids"]) (seen_sequence ? after : before).push_back(id.get<int32_t>());
                } else {
                    fail("{}: TemplateProcessing item must be SpecialToken or Sequence", ctx);
                }
            }
            prefix_ids_.insert(prefix_ids_.begin(), before.begin(), before.end());
            suffix_ids_.insert(suffix_ids_.end(), after.begin(), after.end());
            return;
        }
        fail("{}: unknown post_processor type '{}' (supported: TemplateProcessing, ByteLevel, RobertaProcessing, "
             "BertProcessing, Sequence)",
             ctx, type);
    }

    // tokenizer_config.json: BOS/EOS names, and add_bos_token/add_eos_token, which override what
    // the post-processor inserts (as transformers' Llama/Gemma tokenizers rebuild their template).
    void apply_config(const json& cfg) {
        if (cfg.is_object()) {
            bos_token_ = token_string(cfg.value("bos_token", json()));
            eos_token_ = token_string(cfg.value("eos_token", json()));
        }
        if (!bos_token_.empty()) bos_id_ = token_to_id(bos_token_).value_or(-1);
        if (bos_id_ < 0 && !prefix_ids_.empty()) {  // no config: the template's first token
            bos_id_ = prefix_ids_.front();
            bos_token_ = id_to_token(bos_id_);
        }
        if (!eos_token_.empty())
            if (auto id = token_to_id(eos_token_)) eos_ids_.push_back(*id);
        if (cfg.is_object()) {
            if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean() && bos_id_ >= 0) {
                bool has = !prefix_ids_.empty() && prefix_ids_.front() == bos_id_;
                if (cfg["add_bos_token"].get<bool>() && !has) prefix_ids_.insert(prefix_ids_.begin(), bos_id_);
                if (!cfg["add_bos_token"].get<bool>() && has) prefix_ids_.erase(prefix_ids_.begin());
            }
            if (cfg.contains("add_eos_token") && cfg["add_eos_token"].is_boolean() && !eos_ids_.empty()) {
                int32_t eos = eos_ids_.front();
                bool has = !suffix_ids_.empty() && suffix_ids_.back() == eos;
                if (cfg["add_eos_token"].get<bool>() && !has) suffix_ids_.push_back(eos);
                if (!cfg["add_eos_token"].get<bool>() && has) suffix_ids_.pop_back();
            }
        }
        add_bos_ = bos_id_ >= 0 && !prefix_ids_.empty() && prefix_ids_.front() == bos_id_;
    }

    std::unique_ptr<tok::BpeModel> model_;
    std::unique_ptr<tok::Normalizer> normalizer_;
    std::unique_ptr<tok::PreTokenizer> pre_tokenizer_;
    std::unique_ptr<tok::Decoder> decoder_;
    std::vector<AddedToken> added_;
    std::unordered_map<int32_t, size_t> added_by_id_;
    tok::VocabMap added_by_content_;
    TokenTrie raw_trie_, normalized_trie_;
    std::vector<int32_t> prefix_ids_, suffix_ids_;
    int32_t vocab_size_ = 0;
};

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_hf(std::string_view tokenizer_json, std::string_view tokenizer_config_json,
                                              const std::string& context) {
    // Depth-bounded (core/json.h): a normalizer nested 50,000 levels deep must not overflow the
    // stack of the pipeline builder that walks it.
    json tj = tt::parse_json(tokenizer_json, context);
    json cfg;
    if (!tokenizer_config_json.empty()) cfg = tt::parse_json(tokenizer_config_json, context + " (tokenizer_config.json)");
    try {
        return std::make_unique<HfTokenizer>(tj, cfg, context);
    } catch (const json::exception& e) {
        // A field of the wrong JSON type somewhere in the file.
        fail("{}: unexpected tokenizer.json content: {}", context, e.what());
    }
}

}  // namespace tt
