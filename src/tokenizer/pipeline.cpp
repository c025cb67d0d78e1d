// Normalizers, pre-tokenizers and decoders of tokenizer.json. Each class states the `tokenizers`
// behaviour it reproduces where it is not obvious; offsets are not tracked (ThinTensor only needs
// ids and text).
#include "tokenizer/pipeline.h"

#include "core/error.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

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

// The normalized-length bound (pipeline.h): `bytes` is what a stage is about to produce.
void check_normalized_size(size_t bytes, size_t max_bytes, const std::string& ctx, const char* stage) {
    if (bytes > max_bytes)
        fail("{}: the {} would make the text longer than {} bytes ({} x its input + {}): the tokenizer's stages grow "
             "the text without limit (e.g. a Sequence of Replace stages that each double a character)",
             ctx, stage, max_bytes, k_normalized_growth, k_normalized_slack);
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

    // Sets `out` to the match ranges in s.
    void find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
        if (regex) {
            regex->find_all(s, out);
            return;
        }
        out.clear();
        if (literal.empty()) return;
        for (size_t p = s.find(literal); p != std::string_view::npos; p = s.find(literal, p + literal.size()))
            out.emplace_back(p, p + literal.size());
    }

    // Fails (check_normalized_size) before building a result longer than max_bytes.
    std::string replace_all(std::string_view s, std::string_view content, size_t max_bytes = SIZE_MAX,
                            const std::string& ctx = "", const char* stage = "Replace normalizer") const {
        std::vector<std::pair<size_t, size_t>> matches;
        find_all(s, matches);
        if (max_bytes != SIZE_MAX) {  // the result's length, known before it is built
            size_t kept = s.size();
            for (auto [b, e] : matches) kept -= e - b;
            const size_t n = matches.size();
            check_normalized_size(n > 0 && content.size() > (SIZE_MAX - kept) / n ? SIZE_MAX : kept + n * content.size(),
                                  max_bytes, ctx, stage);
        }
        std::string out;
        size_t prev = 0;
        for (auto [b, e] : matches) {
            out.append(s.substr(prev, b - prev));
            out.append(content);
            prev = e;
        }
        out.append(s.substr(prev));
        return out;
    }
};

// ---------------------------------------------------------------- normalizers

// note: normalizing character by character would be wrong (composition, reordering of marks), but
// a string can be cut in front of a character X whose decomposition (under the form) starts with a
// starter (combining class 0) that never ends a canonical decomposition, i.e. is never the second
// half of a composition (compositions are canonical in NFKC too). Nothing before X then composes
// with it or reorders across it, so normalize(a + X...) == normalize(a) + normalize(X...). Most
// text is made of such characters that are also unchanged on their own (ASCII, precomposed
// Latin, CJK): those are copied, and only the short stretches around other characters go through
// utf8proc. The tables come from utf8proc's own data, so they match the library exactly.
class NormTable {
public:
    NormTable(int options, bool compat) : cut_(k_limit, false), stable_(k_limit, false) {
        std::vector<bool> second(k_limit, false);
        utf8proc_int32_t buf[32];
        auto decompose = [&](utf8proc_int32_t cp, int opts) {
            int bound = 0;
            return utf8proc_decompose_char(cp, buf, 32, static_cast<utf8proc_option_t>(opts), &bound);
        };
        auto valid = [](utf8proc_int32_t cp) { return cp < 0xD800 || cp > 0xDFFF; };  // no surrogates in UTF-8
        for (utf8proc_int32_t cp = 0; cp < static_cast<utf8proc_int32_t>(k_limit); ++cp) {
            if (!valid(cp)) continue;
            utf8proc_ssize_t n = decompose(cp, UTF8PROC_DECOMPOSE);
            for (utf8proc_ssize_t k = 1; k < n && k < 32; ++k)
                if (buf[k] < static_cast<utf8proc_int32_t>(k_limit)) second[static_cast<size_t>(buf[k])] = true;
        }
        std::string one;
        for (utf8proc_int32_t cp = 0; cp < static_cast<utf8proc_int32_t>(k_limit); ++cp) {
            if (!valid(cp)) continue;
            utf8proc_ssize_t n = decompose(cp, UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0));
            if (n < 1 || n > 32) continue;
            utf8proc_int32_t first = buf[0];
            cut_[static_cast<size_t>(cp)] = utf8proc_get_property(first)->combining_class == 0 &&
                                            !(first < static_cast<utf8proc_int32_t>(k_limit) && second[static_cast<size_t>(first)]);
            if (n == 1 && buf[0] == cp) {
                // No decomposition: unchanged alone unless it is a mark (a lone mark is unchanged too,
                // but it is never cut in front of, so it never stands alone in a stretch).
                stable_[static_cast<size_t>(cp)] = true;
                continue;
            }
            one.clear();
            utf8_append(one, static_cast<char32_t>(cp));
            utf8proc_uint8_t* res = nullptr;
            utf8proc_ssize_t m = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(one.data()),
                                              static_cast<utf8proc_ssize_t>(one.size()), &res,
                                              static_cast<utf8proc_option_t>(options));
            stable_[static_cast<size_t>(cp)] = m == static_cast<utf8proc_ssize_t>(one.size()) && std::memcmp(res, one.data(), one.size()) == 0;
            std::free(res);
        }
        for (char32_t c = 0; c < 0x80; ++c)
            TT_ASSERT(cut_[c] && stable_[c], "ASCII U+{:04X} is not copied by normalization", static_cast<uint32_t>(c));
    }
    // Code points from U+30000 on (rare) are treated as neither: always correct, only slower.
    bool cut(char32_t cp) const { return cp < k_limit && cut_[cp]; }
    bool stable(char32_t cp) const { return cp < k_limit && stable_[cp]; }

private:
    static constexpr char32_t k_limit = 0x30000;
    std::vector<bool> cut_, stable_;
};

class UnicodeNormalizer final : public Normalizer {
public:
    UnicodeNormalizer(int options, const NormTable& table, std::string form, std::string ctx)
        : options_(options), table_(table), form_(std::move(form) + " normalizer"), ctx_(std::move(ctx)) {}
    void normalize(std::string& s, size_t max_bytes) const override {
        // All four forms leave pure ASCII unchanged; most text takes this shortcut.
        size_t i = 0;
        while (i < s.size() && static_cast<uint8_t>(s[i]) < 0x80) ++i;
        if (i == s.size()) return;
        // Stretches run from one cut character to the next. A stretch of one stable character is
        // copied; the others are normalized. ASCII is both, so the stretches can start at the
        // ASCII character before the first non-ASCII one.
        std::string out;
        out.reserve(s.size() + s.size() / 8);
        size_t seg = i > 0 ? i - 1 : 0;  // start of the current stretch
        size_t copied = 0;               // s[copied, seg) is still to be copied verbatim
        auto ascii = [&](size_t k) { return static_cast<uint8_t>(s[k]) < 0x80; };
        while (seg < s.size()) {
            while (seg + 1 < s.size() && ascii(seg) && ascii(seg + 1)) ++seg;  // one-character stretches
            size_t end = seg;
            bool stable = table_.stable(utf8_next(s, end));
            size_t stretch_end = end;
            while (stretch_end < s.size()) {
                size_t next = stretch_end;
                if (table_.cut(utf8_next(s, next))) break;
                stretch_end = next;
            }
            if (stable && stretch_end == end) {
                seg = end;
                continue;
            }
            out.append(s, copied, seg - copied);
            append_normalized(std::string_view(s).substr(seg, stretch_end - seg), out);
            check_normalized_size(out.size(), max_bytes, ctx_, form_.c_str());
            seg = copied = stretch_end;
        }
        out.append(s, copied, s.size() - copied);
        check_normalized_size(out.size(), max_bytes, ctx_, form_.c_str());
        s = std::move(out);
    }

private:
    void append_normalized(std::string_view piece, std::string& out) const {
        utf8proc_uint8_t* res = nullptr;
        utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(piece.data()),
                                          static_cast<utf8proc_ssize_t>(piece.size()), &res,
                                          static_cast<utf8proc_option_t>(options_));
        if (n < 0) fail("unicode normalization failed: {}", utf8proc_errmsg(n));
        out.append(reinterpret_cast<const char*>(res), static_cast<size_t>(n));
        std::free(res);
    }

    int options_;
    const NormTable& table_;
    std::string form_, ctx_;
};

// One table per form, built on first use (a few hundred thousand utf8proc lookups, ~20 ms).
std::unique_ptr<Normalizer> make_unicode_normalizer(const std::string& form, const std::string& ctx) {
    constexpr int nfc = UTF8PROC_STABLE | UTF8PROC_COMPOSE, nfd = UTF8PROC_STABLE | UTF8PROC_DECOMPOSE;
    if (form == "NFC") {
        static const NormTable t(nfc, false);
        return std::make_unique<UnicodeNormalizer>(nfc, t, form, ctx);
    }
    if (form == "NFD") {
        static const NormTable t(nfd, false);
        return std::make_unique<UnicodeNormalizer>(nfd, t, form, ctx);
    }
    if (form == "NFKC") {
        static const NormTable t(nfc | UTF8PROC_COMPAT, true);
        return std::make_unique<UnicodeNormalizer>(nfc | UTF8PROC_COMPAT, t, form, ctx);
    }
    static const NormTable t(nfd | UTF8PROC_COMPAT, true);
    return std::make_unique<UnicodeNormalizer>(nfd | UTF8PROC_COMPAT, t, form, ctx);
}

class LowercaseNormalizer final : public Normalizer {
public:
    explicit LowercaseNormalizer(std::string ctx) : ctx_(std::move(ctx)) {}
    void normalize(std::string& s, size_t max_bytes) const override {
        std::string out;
        out.reserve(s.size());
        for (size_t i = 0; i < s.size();)
            utf8_append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(utf8_next(s, i)))));
        check_normalized_size(out.size(), max_bytes, ctx_, "Lowercase normalizer");  // at most 1.5x (U+023A -> U+2C65)
        s = std::move(out);
    }

private:
    std::string ctx_;
};

class StripNormalizer final : public Normalizer {
public:
    StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
    void normalize(std::string& s, size_t) const override {  // never grows the text
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
        : pattern_(j.value("pattern", json()), ctx, "Replace normalizer"),
          content_(get_str(j, "content", ctx, "Replace normalizer")),
          ctx_(ctx) {}
    void normalize(std::string& s, size_t max_bytes) const override {
        s = pattern_.replace_all(s, content_, max_bytes, ctx_, "Replace normalizer");
    }

private:
    Pattern pattern_;
    std::string content_, ctx_;
};

class PrependNormalizer final : public Normalizer {
public:
    PrependNormalizer(std::string p, std::string ctx) : prepend_(std::move(p)), ctx_(std::move(ctx)) {}
    // `tokenizers` prepends only to non-empty text.
    void normalize(std::string& s, size_t max_bytes) const override {
        if (s.empty()) return;
        check_normalized_size(s.size() + std::min(prepend_.size(), SIZE_MAX - s.size()), max_bytes, ctx_, "Prepend normalizer");
        s.insert(0, prepend_);
    }

private:
    std::string prepend_, ctx_;
};

class SequenceNormalizer final : public Normalizer {
public:
    explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> v) : stages_(std::move(v)) {}
    void normalize(std::string& s, size_t max_bytes) const override {
        for (const auto& n : stages_) n->normalize(s, max_bytes);
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

}  // namespace

void Pieces::map_byte_level() {
    std::string mapped;
    mapped.reserve(text.size() * 2);
    for (auto& [b, e] : spans) {
        size_t nb = mapped.size();
        append_byte_level(mapped, std::string_view(text).substr(b, e - b));
        b = nb;
        e = mapped.size();
    }
    text = std::move(mapped);
    byte_level = false;
}

namespace {

// Splits the piece s (at offset `base` of its buffer) around `matches` the way
// NormalizedString::split does for each behavior, appending the resulting spans; empty pieces are
// dropped.
void split_pieces(std::string_view s, size_t base, const std::vector<std::pair<size_t, size_t>>& matches,
                  SplitBehavior behavior, bool invert, std::vector<std::pair<size_t, size_t>>& out) {
    struct Range {
        size_t b, e;
        bool is_match;
    };
    thread_local std::vector<Range> ranges, merged;  // reused: no allocation per piece
    ranges.clear();
    merged.clear();
    size_t prev = 0;
    for (auto [b, e] : matches) {
        if (prev != b) ranges.push_back({prev, b, invert});
        ranges.push_back({b, e, !invert});
        prev = e;
    }
    if (prev != s.size() || s.empty()) ranges.push_back({prev, s.size(), invert});

    const std::vector<Range>* result = &merged;
    switch (behavior) {
        case SplitBehavior::isolated:
            result = &ranges;
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
    for (const auto& r : *result)
        if (r.e > r.b) out.emplace_back(base + r.b, base + r.e);
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
    // The text stays; only the spans are replaced by those of the sub-pieces.
    void split(Pieces& pieces, bool) const override {
        if (pieces.byte_level) pieces.map_byte_level();
        thread_local std::vector<std::pair<size_t, size_t>> matches;
        std::vector<std::pair<size_t, size_t>> out;
        out.reserve(pieces.size() * 2);
        for (size_t k = 0; k < pieces.size(); ++k) {
            std::string_view p = pieces[k];
            pattern_.find_all(p, matches);
            split_pieces(p, pieces.spans[k].first, matches, behavior_, invert_, out);
        }
        pieces.spans = std::move(out);
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
    // Splits (GPT-2 regex) and adds the prefix space; the byte mapping itself is left pending.
    void split(Pieces& pieces, bool) const override {
        if (pieces.byte_level) pieces.map_byte_level();  // a second ByteLevel maps the first's output
        if (!add_prefix_space_ && !regex_) {  // Qwen, Llama 3: only the (pending) mapping
            std::erase_if(pieces.spans, [](const auto& sp) { return sp.first == sp.second; });
            pieces.byte_level = true;
            return;
        }
        Pieces out;
        out.text.reserve(pieces.text.size() + pieces.size());
        out.spans.reserve(pieces.size());
        thread_local std::vector<std::pair<size_t, size_t>> matches;
        for (size_t k = 0; k < pieces.size(); ++k) {
            size_t b = out.text.size();
            std::string_view p = pieces[k];
            if (add_prefix_space_ && (p.empty() || p[0] != ' ')) out.text.push_back(' ');
            out.text.append(p);
            std::string_view q = std::string_view(out.text).substr(b);
            if (regex_) {
                regex_->find_all(q, matches);
                split_pieces(q, b, matches, SplitBehavior::isolated, false, out.spans);
            } else if (!q.empty()) {
                out.spans.emplace_back(b, out.text.size());
            }
        }
        out.byte_level = true;
        pieces = std::move(out);
    }

private:
    bool add_prefix_space_;
    std::unique_ptr<Regex> regex_;
};

enum class PrependScheme { always, first, never };

// Metaspace's "replacement": one character, "▁" by default (`tokenizers` declares it a char; an
// empty one would make the splitting below loop forever).
std::string metaspace_replacement(const json& j, const std::string& ctx) {
    if (!j.contains("replacement")) return "\xE2\x96\x81";
    std::string r = get_str(j, "replacement", ctx, "Metaspace");
    if (r.empty() || utf8_char_len(r, 0) != r.size()) fail("{}: Metaspace replacement '{}' must be one character", ctx, r);
    return r;
}

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
        : replacement_(metaspace_replacement(j, ctx)),
          scheme_(parse_prepend_scheme(j, ctx)),
          split_(get_bool(j, "split", true)) {}
    void split(Pieces& pieces, bool at_start) const override {
        if (pieces.byte_level) pieces.map_byte_level();
        Pieces out;
        out.text.reserve(pieces.text.size() * 2 + replacement_.size());
        thread_local std::vector<std::pair<size_t, size_t>> matches;
        for (size_t k = 0; k < pieces.size(); ++k) {
            std::string_view p = pieces[k];
            size_t b = out.text.size();
            bool begins = p.starts_with(' ') || p.starts_with(replacement_);
            if (!begins && (scheme_ == PrependScheme::always || (scheme_ == PrependScheme::first && at_start && k == 0)))
                out.text.append(replacement_);
            for (char c : p) {
                if (c == ' ')
                    out.text.append(replacement_);
                else
                    out.text.push_back(c);
            }
            std::string_view s = std::string_view(out.text).substr(b);
            if (!split_) {
                if (!s.empty()) out.spans.emplace_back(b, out.text.size());
                continue;
            }
            matches.clear();
            for (size_t q = s.find(replacement_); q != std::string_view::npos; q = s.find(replacement_, q + replacement_.size()))
                matches.emplace_back(q, q + replacement_.size());
            split_pieces(s, b, matches, SplitBehavior::merged_with_next, false, out.spans);
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
    void split(Pieces& pieces, bool at_start) const override {
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
        : pattern_(j.value("pattern", json()), ctx, "Replace decoder"), content_(get_str(j, "content", ctx, "Replace decoder")),
          ctx_(ctx) {}
    // The normalizers' length bound over all the tokens together, checked before each result is
    // built (a 1 MB replacement of a common character would otherwise build gigabytes first).
    void decode(std::vector<std::string>& tokens) const override {
        size_t total = 0;
        for (const auto& t : tokens) total += t.size();
        const size_t max_bytes = normalized_size_limit(total);
        size_t produced = 0;
        for (auto& t : tokens) {
            t = pattern_.replace_all(t, content_, max_bytes - produced, ctx_, "Replace decoder");
            produced += t.size();
        }
    }

private:
    Pattern pattern_;
    std::string content_;
    std::string ctx_;
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
        : replacement_(metaspace_replacement(j, ctx)),
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
    SequenceDecoder(std::vector<std::unique_ptr<Decoder>> v, std::string ctx) : stages_(std::move(v)), ctx_(std::move(ctx)) {}
    // The normalizers' length bound, checked after each stage: Replace decoders that each double
    // a character would otherwise grow the text exponentially too.
    void decode(std::vector<std::string>& tokens) const override {
        auto total = [&] {
            size_t n = 0;
            for (const auto& t : tokens) n += t.size();
            return n;
        };
        const size_t max_bytes = normalized_size_limit(total());
        for (const auto& d : stages_) {
            d->decode(tokens);
            check_normalized_size(total(), max_bytes, ctx_, "Sequence decoder");
        }
    }

private:
    std::vector<std::unique_ptr<Decoder>> stages_;
    std::string ctx_;
};

const json& list_field(const json& j, const char* key, const std::string& ctx, const std::string& what) {
    if (!j.contains(key) || !j[key].is_array()) fail("{}: {} needs an array \"{}\"", ctx, what, key);
    return j[key];
}

void check_depth(int depth, const std::string& ctx, const char* what) {
    if (depth > k_max_pipeline_depth) fail("{}: {} Sequences nested deeper than {} levels", ctx, what, k_max_pipeline_depth);
}

std::unique_ptr<Normalizer> build_normalizer(const json& j, const std::string& ctx, int depth) {
    if (j.is_null()) return nullptr;
    check_depth(depth, ctx, "normalizer");
    std::string type = type_of(j, "normalizer", ctx);
    if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") return make_unicode_normalizer(type, ctx);
    if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>(ctx);
    if (type == "Strip") return std::make_unique<StripNormalizer>(get_bool(j, "strip_left", true), get_bool(j, "strip_right", true));
    if (type == "Replace") return std::make_unique<ReplaceNormalizer>(j, ctx);
    if (type == "Prepend") return std::make_unique<PrependNormalizer>(get_str(j, "prepend", ctx, "Prepend normalizer"), ctx);
    if (type == "Sequence") {
        std::vector<std::unique_ptr<Normalizer>> v;
        for (const auto& n : list_field(j, "normalizers", ctx, "Sequence normalizer"))
            if (auto p = build_normalizer(n, ctx, depth + 1)) v.push_back(std::move(p));
        return std::make_unique<SequenceNormalizer>(std::move(v));
    }
    fail("{}: unknown normalizer type '{}' (supported: {})", ctx, type, k_supported_normalizers);
}

std::unique_ptr<PreTokenizer> build_pre_tokenizer(const json& j, const std::string& ctx, int depth) {
    if (j.is_null()) return nullptr;
    check_depth(depth, ctx, "pre-tokenizer");
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
            if (auto q = build_pre_tokenizer(p, ctx, depth + 1)) v.push_back(std::move(q));
        return std::make_unique<SequencePreTokenizer>(std::move(v));
    }
    fail("{}: unknown pre-tokenizer type '{}' (supported: {})", ctx, type, k_supported_pre_tokenizers);
}

std::unique_ptr<Decoder> build_decoder(const json& j, const std::string& ctx, int depth) {
    if (j.is_null()) return nullptr;
    check_depth(depth, ctx, "decoder");
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
            if (auto q = build_decoder(d, ctx, depth + 1)) v.push_back(std::move(q));
        return std::make_unique<SequenceDecoder>(std::move(v), ctx);
    }
    fail("{}: unknown decoder type '{}' (supported: {})", ctx, type, k_supported_decoders);
}

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& j, const std::string& ctx) { return build_normalizer(j, ctx, 0); }
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, const std::string& ctx) { return build_pre_tokenizer(j, ctx, 0); }
std::unique_ptr<Decoder> make_decoder(const json& j, const std::string& ctx) { return build_decoder(j, ctx, 0); }

}  // namespace tt::tok
