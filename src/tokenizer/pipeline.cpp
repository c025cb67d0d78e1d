// Normalizers, pre-tokenizers and decoders of tokenizer.json. Each class states the `tokenizers`
// behaviour it reproduces where it is not obvious; offsets are not tracked (ThinTensor only needs
// ids and text).
#include "tokenizer/pipeline.h"

#include "core/error.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>

namespace tt::tok {

namespace {

using json = nlohmann::json;

const std::string k_supported_normalizers = "NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, Prepend, Sequence";
const std::string k_supported_pre_tokenizers =
    "Split, ByteLevel, Metaspace, Whitespace, WhitespaceSplit, Digits, Punctuation, Sequence";
const std::string k_supported_decoders = "ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, BPEDecoder, Sequence";

std::string type_of(const json& j, const std::string& what, const std::string& ctx) {
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
        fail("{}: {} must be an object with a string \"type\"", ctx, what);
    return j["type"].get<std::string>();
}

std::string get_str(const json& j, const char* key, const std::string& ctx, const std::string& what) {
    if (!j.contains(key) || !j[key].is_string()) fail("{}: {} needs a string \"{}\"", ctx, what, key);
    return j[key].get<std::string>();
}

bool get_bool(const json& j, const char* key, bool dflt) {
    if (!j.contains(key) || j[key].is_null()) return dflt;
    return j[key].is_boolean() ? j[key].get<bool>() : dflt;
}

// A `{"String": s}` or `{"Regex": r}` pattern: literal search or PCRE2.
struct Pattern {
    std::string literal;
    std::unique_ptr<Regex> regex;

    Pattern(const json& j, const std::string& ctx, const std::string& what) {
        if (j.is_object() && j.contains("String") && j["String"].is_string()) {
            literal = j["String"].get<std::string>();
        } else if (j.is_object() && j.contains("Regex") && j["Regex"].is_string()) {
            regex = std::make_unique<Regex>(j["Regex"].get<std::string>(), ctx + ": " + what);
        } else if (j.is_string()) {  // older files store the literal directly
            literal = j.get<std::string>();
        } else {
            fail("{}: {} pattern must be {{\"String\": ...}} or {{\"Regex\": ...}}", ctx, what);
        }
    }

    std::vector<std::pair<size_t, size_t>> find_all(std::string_view s) const {
        if (regex) return regex->find_all(s);
        std::vector<std::pair<size_t, size_t>> out;
        if (literal.empty()) return out;
        for (size_t p = s.find(literal); p != std::string_view::npos; p = s.find(literal, p + literal.size()))
            out.emplace_back(p, p + literal.size());
        return out;
    }

    std::string replace_all(std::string_view s, std::string_view content) const {
        std::string out;
        size_t prev = 0;
        for (auto [b, e] : find_all(s)) {
            out.append(s.substr(prev, b - prev));
            out.append(content);
            prev = e;
        }
        out.append(s.substr(prev));
        return out;
    }
};

// ---------------------------------------------------------------- normalizers

class UnicodeNormalizer final : public Normalizer {
public:
    explicit UnicodeNormalizer(int options) : options_(options) {}
    void normalize(std::string& s) const override {
        // All four forms leave pure ASCII unchanged; most text takes this shortcut.
        bool ascii = true;
        for (char c : s) ascii &= static_cast<uint8_t>(c) < 0x80;
        if (ascii) return;
        utf8proc_uint8_t* out = nullptr;
        utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          static_cast<utf8proc_ssize_t>(s.size()), &out,
                                          static_cast<utf8proc_option_t>(options_));
        if (n < 0) fail("unicode normalization failed: {}", utf8proc_errmsg(n));
        s.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
        std::free(out);
    }

private:
    int options_;
};

class LowercaseNormalizer final : public Normalizer {
public:
    void normalize(std::string& s) const override {
        std::string out;
        out.reserve(s.size());
        for (size_t i = 0; i < s.size();)
            utf8_append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(utf8_next(s, i)))));
        s = std::move(out);
    }
};

class StripNormalizer final : public Normalizer {
public:
    StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
    void normalize(std::string& s) const override {
        size_t b = 0, e = s.size();
        if (left_) {
            while (b < e) {
                size_t i = b;
                if (!is_whitespace(utf8_next(s, i))) break;
                b = i;
            }
        }
        if (right_) {
            while (e > b) {
                size_t start = e - 1;
                while (start > b && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
                size_t i = start;
                if (!is_whitespace(utf8_next(s, i))) break;
                e = start;
            }
        }
        s = s.substr(b, e - b);
    }

private:
    bool left_, right_;
};

class ReplaceNormalizer final : public Normalizer {
public:
    ReplaceNormalizer(const json& j, const std::string& ctx)
        : pattern_(j.value("pattern", json()), ctx, "Replace normalizer"), content_(get_str(j, "content", ctx, "Replace normalizer")) {}
    void normalize(std::string& s) const override { s = pattern_.replace_all(s, content_); }

private:
    Pattern pattern_;
    std::string content_;
};

class PrependNormalizer final : public Normalizer {
public:
    explicit PrependNormalizer(std::string p) : prepend_(std::move(p)) {}
    // `tokenizers` prepends only to non-empty text.
    void normalize(std::string& s) const override {
        if (!s.empty()) s.insert(0, prepend_);
    }

private:
    std::string prepend_;
};

class SequenceNormalizer final : public Normalizer {
public:
    explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> v) : stages_(std::move(v)) {}
    void normalize(std::string& s) const override {
        for (const auto& n : stages_) n->normalize(s);
    }

private:
    std::vector<std::unique_ptr<Normalizer>> stages_;
};

// ---------------------------------------------------------------- pre-tokenizers

enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

SplitBehavior parse_behavior(const json& j, const std::string& ctx) {
    std::string b = j.is_string() ? j.get<std::string>() : "";
    if (b == "Removed") return SplitBehavior::removed;
    if (b == "Isolated") return SplitBehavior::isolated;
    if (b == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
    if (b == "MergedWithNext") return SplitBehavior::merged_with_next;
    if (b == "Contiguous") return SplitBehavior::contiguous;
    fail("{}: unknown split behavior '{}' (supported: Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)",
         ctx, b);
}

// Splits `s` around `matches` the way NormalizedString::split does for each behavior; empty
// pieces are dropped.
void split_pieces(std::string_view s, const std::vector<std::pair<size_t, size_t>>& matches, SplitBehavior behavior,
                  bool invert, std::vector<std::string>& out) {
    struct Range {
        size_t b, e;
        bool is_match;
    };
    std::vector<Range> ranges;
    size_t prev = 0;
    for (auto [b, e] : matches) {
        if (prev != b) ranges.push_back({prev, b, invert});
        ranges.push_back({b, e, !invert});
        prev = e;
    }
    if (prev != s.size() || s.empty()) ranges.push_back({prev, s.size(), invert});

    std::vector<Range> merged;
    switch (behavior) {
        case SplitBehavior::isolated:
            merged = ranges;
            break;
        case SplitBehavior::removed:
            for (const auto& r : ranges)
                if (!r.is_match) merged.push_back(r);
            break;
        case SplitBehavior::merged_with_previous: {
            bool prev_match = false;
            for (const auto& r : ranges) {
                if (r.is_match && !prev_match && !merged.empty())
                    merged.back().e = r.e;
                else
                    merged.push_back(r);
                prev_match = r.is_match;
            }
            break;
        }
        case SplitBehavior::merged_with_next: {
            bool prev_match = false;
            for (size_t k = ranges.size(); k-- > 0;) {
                const auto& r = ranges[k];
                if (r.is_match && !prev_match && !merged.empty())
                    merged.back().b = r.b;
                else
                    merged.push_back(r);
                prev_match = r.is_match;
            }
            std::reverse(merged.begin(), merged.end());
            break;
        }
        case SplitBehavior::contiguous: {
            bool prev_match = false;
            for (const auto& r : ranges) {
                if (r.is_match == prev_match && !merged.empty())
                    merged.back().e = r.e;
                else
                    merged.push_back(r);
                prev_match = r.is_match;
            }
            break;
        }
    }
    for (const auto& r : merged)
        if (r.e > r.b) out.emplace_back(s.substr(r.b, r.e - r.b));
}

class SplitPreTokenizer final : public PreTokenizer {
public:
    SplitPreTokenizer(const json& j, const std::string& ctx)
        : pattern_(j.value("pattern", json()), ctx, "Split pre-tokenizer"),
          behavior_(parse_behavior(j.value("behavior", json()), ctx)),
          invert_(get_bool(j, "invert", false)) {}
    // Used for the fixed-regex pre-tokenizers (Whitespace, Digits, ...).
    SplitPreTokenizer(const std::string& regex, SplitBehavior b, const std::string& ctx)
        : pattern_(json{{"Regex", regex}}, ctx, "pre-tokenizer"), behavior_(b), invert_(false) {}
    void split(std::vector<std::string>& pieces, bool) const override {
        std::vector<std::string> out;
        out.reserve(pieces.size());
        for (const auto& p : pieces) split_pieces(p, pattern_.find_all(p), behavior_, invert_, out);
        pieces = std::move(out);
    }

private:
    Pattern pattern_;
    SplitBehavior behavior_;
    bool invert_;
};

// GPT-2's pre-tokenization regex, used by ByteLevel when use_regex is set.
const char* k_gpt2_regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevelPreTokenizer final : public PreTokenizer {
public:
    ByteLevelPreTokenizer(const json& j, const std::string& ctx)
        : add_prefix_space_(get_bool(j, "add_prefix_space", true)) {
        if (get_bool(j, "use_regex", true)) regex_ = std::make_unique<Regex>(k_gpt2_regex, ctx + ": ByteLevel");
    }
    void split(std::vector<std::string>& pieces, bool) const override {
        std::vector<std::string> out;
        out.reserve(pieces.size());
        for (auto& p : pieces) {
            if (add_prefix_space_ && (p.empty() || p[0] != ' ')) p.insert(0, " ");
            if (regex_) {
                std::vector<std::string> sub;
                split_pieces(p, regex_->find_all(p), SplitBehavior::isolated, false, sub);
                for (auto& s : sub) out.push_back(bytes_to_byte_level(s));
            } else if (!p.empty()) {
                out.push_back(bytes_to_byte_level(p));
            }
        }
        pieces = std::move(out);
    }

private:
    bool add_prefix_space_;
    std::unique_ptr<Regex> regex_;
};

enum class PrependScheme { always, first, never };

PrependScheme parse_prepend_scheme(const json& j, const std::string& ctx) {
    if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
        std::string s = j["prepend_scheme"].get<std::string>();
        if (s == "always") return PrependScheme::always;
        if (s == "first") return PrependScheme::first;
        if (s == "never") return PrependScheme::never;
        fail("{}: unknown Metaspace prepend_scheme '{}' (supported: always, first, never)", ctx, s);
    }
    return get_bool(j, "add_prefix_space", true) ? PrependScheme::always : PrependScheme::never;
}

class MetaspacePreTokenizer final : public PreTokenizer {
public:
    MetaspacePreTokenizer(const json& j, const std::string& ctx)
        : replacement_(j.contains("replacement") ? get_str(j, "replacement", ctx, "Metaspace") : "\xE2\x96\x81"),
          scheme_(parse_prepend_scheme(j, ctx)),
          split_(get_bool(j, "split", true)) {}
    void split(std::vector<std::string>& pieces, bool at_start) const override {
        std::vector<std::string> out;
        for (size_t k = 0; k < pieces.size(); ++k) {
            std::string s;
            for (char c : pieces[k]) {
                if (c == ' ')
                    s.append(replacement_);
                else
                    s.push_back(c);
            }
            bool begins = s.compare(0, replacement_.size(), replacement_) == 0;
            if (!begins && (scheme_ == PrependScheme::always || (scheme_ == PrependScheme::first && at_start && k == 0)))
                s.insert(0, replacement_);
            if (!split_) {
                if (!s.empty()) out.push_back(std::move(s));
                continue;
            }
            std::vector<std::pair<size_t, size_t>> m;
            for (size_t p = s.find(replacement_); p != std::string::npos; p = s.find(replacement_, p + replacement_.size()))
                m.emplace_back(p, p + replacement_.size());
            split_pieces(s, m, SplitBehavior::merged_with_next, false, out);
        }
        pieces = std::move(out);
    }

private:
    std::string replacement_;
    PrependScheme scheme_;
    bool split_;
};

class SequencePreTokenizer final : public PreTokenizer {
public:
    explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> v) : stages_(std::move(v)) {}
    void split(std::vector<std::string>& pieces, bool at_start) const override {
        for (const auto& p : stages_) p->split(pieces, at_start);
    }

private:
    std::vector<std::unique_ptr<PreTokenizer>> stages_;
};

// ---------------------------------------------------------------- decoders

class ByteLevelDecoder final : public Decoder {
public:
    // Characters outside the byte table make `tokenizers` keep that whole token's UTF-8 bytes;
    // the joined bytes are then converted lossily (invalid sequences become U+FFFD).
    void decode(std::vector<std::string>& tokens) const override {
        std::string bytes;
        for (const auto& t : tokens) {
            size_t start = bytes.size();
            bool ok = true;
            for (size_t i = 0; i < t.size();) {
                int b = char_to_byte(utf8_next(t, i));
                if (b < 0) {
                    ok = false;
                    break;
                }
                bytes.push_back(static_cast<char>(b));
            }
            if (!ok) {
                bytes.resize(start);
                bytes.append(t);
            }
        }
        tokens.assign(1, utf8_lossy(bytes));
    }
};

class ReplaceDecoder final : public Decoder {
public:
    ReplaceDecoder(const json& j, const std::string& ctx)
        : pattern_(j.value("pattern", json()), ctx, "Replace decoder"), content_(get_str(j, "content", ctx, "Replace decoder")) {}
    void decode(std::vector<std::string>& tokens) const override {
        for (auto& t : tokens) t = pattern_.replace_all(t, content_);
    }

private:
    Pattern pattern_;
    std::string content_;
};

// "<0xNN>" tokens become raw bytes; a run of them that is not valid UTF-8 becomes one U+FFFD
// per byte (not per invalid sequence), exactly as `tokenizers` does.
class ByteFallbackDecoder final : public Decoder {
public:
    static int parse_byte_token(const std::string& t) {
        if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
        auto hex = [](char c) -> int {
            if (c >= '0' && c <= '9') return c - '0';
            if (c >= 'a' && c <= 'f') return c - 'a' + 10;
            if (c >= 'A' && c <= 'F') return c - 'A' + 10;
            return -1;
        };
        int hi = hex(t[3]), lo = hex(t[4]);
        return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
    }
    void decode(std::vector<std::string>& tokens) const override {
        std::vector<std::string> out;
        out.reserve(tokens.size());
        std::string pending;
        auto flush = [&] {
            if (pending.empty()) return;
            if (!utf8_first_invalid(pending))
                out.push_back(pending);
            else
                for (size_t k = 0; k < pending.size(); ++k) out.emplace_back("\xEF\xBF\xBD");
            pending.clear();
        };
        for (auto& t : tokens) {
            int b = parse_byte_token(t);
            if (b >= 0) {
                pending.push_back(static_cast<char>(b));
            } else {
                flush();
                out.push_back(std::move(t));
            }
        }
        flush();
        tokens = std::move(out);
    }
};

class FuseDecoder final : public Decoder {
public:
    void decode(std::vector<std::string>& tokens) const override {
        std::string all;
        for (const auto& t : tokens) all += t;
        tokens.assign(1, std::move(all));
    }
};

// Removes up to `start` leading and `stop` trailing `content` characters from every token.
class StripDecoder final : public Decoder {
public:
    StripDecoder(const json& j, const std::string& ctx) {
        std::string c = get_str(j, "content", ctx, "Strip decoder");
        size_t i = 0;
        if (c.empty() || utf8_char_len(c, 0) != c.size()) fail("{}: Strip decoder content must be one character", ctx);
        content_ = utf8_next(c, i);
        start_ = j.value("start", 0);
        stop_ = j.value("stop", 0);
    }
    void decode(std::vector<std::string>& tokens) const override {
        for (auto& t : tokens) {
            std::vector<std::pair<size_t, char32_t>> chars;  // (byte offset, code point)
            for (size_t i = 0; i < t.size();) {
                size_t at = i;
                chars.emplace_back(at, utf8_next(t, i));
            }
            size_t cut_front = 0;
            for (size_t k = 0; k < chars.size() && k < static_cast<size_t>(start_) && chars[k].second == content_; ++k)
                cut_front = k + 1;
            size_t cut_back = 0;
            for (size_t k = 0; k < chars.size() && k < static_cast<size_t>(stop_) &&
                               chars[chars.size() - 1 - k].second == content_;
                 ++k)
                cut_back = k + 1;
            if (cut_front + cut_back >= chars.size()) {
                t.clear();
                continue;
            }
            size_t b = chars[cut_front].first;
            size_t e = cut_back == 0 ? t.size() : chars[chars.size() - cut_back].first;
            t = t.substr(b, e - b);
        }
    }

private:
    char32_t content_ = ' ';
    int start_ = 0, stop_ = 0;
};

class MetaspaceDecoder final : public Decoder {
public:
    MetaspaceDecoder(const json& j, const std::string& ctx)
        : replacement_(j.contains("replacement") ? get_str(j, "replacement", ctx, "Metaspace") : "\xE2\x96\x81"),
          scheme_(parse_prepend_scheme(j, ctx)) {}
    void decode(std::vector<std::string>& tokens) const override {
        for (size_t k = 0; k < tokens.size(); ++k) {
            std::string s;
            const std::string& t = tokens[k];
            for (size_t i = 0; i < t.size();) {
                if (t.compare(i, replacement_.size(), replacement_) == 0) {
                    s.push_back(' ');
                    i += replacement_.size();
                } else {
                    s.push_back(t[i++]);
                }
            }
            if (k == 0 && scheme_ != PrependScheme::never && !s.empty() && s[0] == ' ') s.erase(0, 1);
            tokens[k] = std::move(s);
        }
    }

private:
    std::string replacement_;
    PrependScheme scheme_;
};

class BpeSuffixDecoder final : public Decoder {
public:
    explicit BpeSuffixDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
    void decode(std::vector<std::string>& tokens) const override {
        for (size_t k = 0; k < tokens.size(); ++k) {
            std::string& t = tokens[k];
            std::string rep = k + 1 == tokens.size() ? "" : " ";
            for (size_t p = t.find(suffix_); !suffix_.empty() && p != std::string::npos; p = t.find(suffix_, p + rep.size()))
                t.replace(p, suffix_.size(), rep);
        }
    }

private:
    std::string suffix_;
};

class SequenceDecoder final : public Decoder {
public:
    explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> v) : stages_(std::move(v)) {}
    void decode(std::vector<std::string>& tokens) const override {
        for (const auto& d : stages_) d->decode(tokens);
    }

private:
    std::vector<std::unique_ptr<Decoder>> stages_;
};

const json& list_field(const json& j, const char* key, const std::string& ctx, const std::string& what) {
    if (!j.contains(key) || !j[key].is_array()) fail("{}: {} needs an array \"{}\"", ctx, what, key);
    return j[key];
}

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& j, const std::string& ctx) {
    if (j.is_null()) return nullptr;
    std::string type = type_of(j, "normalizer", ctx);
    if (type == "NFC") return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (type == "NFD") return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
    if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
    if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
    if (type == "Strip") return std::make_unique<StripNormalizer>(get_bool(j, "strip_left", true), get_bool(j, "strip_right", true));
    if (type == "Replace") return std::make_unique<ReplaceNormalizer>(j, ctx);
    if (type == "Prepend") return std::make_unique<PrependNormalizer>(get_str(j, "prepend", ctx, "Prepend normalizer"));
    if (type == "Sequence") {
        std::vector<std::unique_ptr<Normalizer>> v;
        for (const auto& n : list_field(j, "normalizers", ctx, "Sequence normalizer"))
            if (auto p = make_normalizer(n, ctx)) v.push_back(std::move(p));
        return std::make_unique<SequenceNormalizer>(std::move(v));
    }
    fail("{}: unknown normalizer type '{}' (supported: {})", ctx, type, k_supported_normalizers);
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, const std::string& ctx) {
    if (j.is_null()) return nullptr;
    std::string type = type_of(j, "pre_tokenizer", ctx);
    if (type == "Split") return std::make_unique<SplitPreTokenizer>(j, ctx);
    if (type == "ByteLevel") return std::make_unique<ByteLevelPreTokenizer>(j, ctx);
    if (type == "Metaspace") return std::make_unique<MetaspacePreTokenizer>(j, ctx);
    if (type == "Whitespace") return std::make_unique<SplitPreTokenizer>(R"(\w+|[^\w\s]+)", SplitBehavior::isolated, ctx);
    if (type == "WhitespaceSplit") return std::make_unique<SplitPreTokenizer>(R"(\s+)", SplitBehavior::removed, ctx);
    if (type == "Digits")
        return std::make_unique<SplitPreTokenizer>(
            R"(\p{N})", get_bool(j, "individual_digits", false) ? SplitBehavior::isolated : SplitBehavior::contiguous, ctx);
    if (type == "Punctuation")
        return std::make_unique<SplitPreTokenizer>(
            R"([\p{P}!-/:-@\[-`{-~])",
            j.contains("behavior") ? parse_behavior(j["behavior"], ctx) : SplitBehavior::isolated, ctx);
    if (type == "Sequence") {
        std::vector<std::unique_ptr<PreTokenizer>> v;
        for (const auto& p : list_field(j, "pretokenizers", ctx, "Sequence pre-tokenizer"))
            if (auto q = make_pre_tokenizer(p, ctx)) v.push_back(std::move(q));
        return std::make_unique<SequencePreTokenizer>(std::move(v));
    }
    fail("{}: unknown pre-tokenizer type '{}' (supported: {})", ctx, type, k_supported_pre_tokenizers);
}

std::unique_ptr<Decoder> make_decoder(const json& j, const std::string& ctx) {
    if (j.is_null()) return nullptr;
    std::string type = type_of(j, "decoder", ctx);
    if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
    if (type == "Replace") return std::make_unique<ReplaceDecoder>(j, ctx);
    if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
    if (type == "Fuse") return std::make_unique<FuseDecoder>();
    if (type == "Strip") return std::make_unique<StripDecoder>(j, ctx);
    if (type == "Metaspace") return std::make_unique<MetaspaceDecoder>(j, ctx);
    if (type == "BPEDecoder") return std::make_unique<BpeSuffixDecoder>(j.value("suffix", std::string("</w>")));
    if (type == "Sequence") {
        std::vector<std::unique_ptr<Decoder>> v;
        for (const auto& d : list_field(j, "decoders", ctx, "Sequence decoder"))
            if (auto q = make_decoder(d, ctx)) v.push_back(std::move(q));
        return std::make_unique<SequenceDecoder>(std::move(v));
    }
    fail("{}: unknown decoder type '{}' (supported: {})", ctx, type, k_supported_decoders);
}

}  // namespace tt::tok
