// Jinja lexer: text / tag splitting with trim_blocks + lstrip_blocks, then expression tokens.
#include "template/jinja_lexer.h"

#include "core/error.h"
#include "template/jinja_value.h"

#include <algorithm>
#include <cstring>

namespace tt::jinja {

LineTable::LineTable(const std::string& source) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < source.size(); ++i)
        if (source[i] == '\n') line_starts_.push_back(i + 1);
}

SourcePos LineTable::at(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
}

std::string normalize_newlines(const std::string& source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    return out;
}

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

class Lexer {
public:
    Lexer(const std::string& src, const std::string& context) : src_(src), context_(context), lines_(src) {}

    std::vector<Token> run() {
        // keep_trailing_newline=False: Jinja drops one final newline of the template.
        size_t end = src_.size();
        if (end > 0 && src_[end - 1] == '\n') --end;
        end_ = end;
        size_t pos = 0;
        bool line_starting = true;
        while (pos < end_) {
            size_t tag = find_tag(pos);
            std::string text = src_.substr(pos, tag - pos);
            if (tag == end_) {
                push_text(std::move(text), pos);
                break;
            }
            char kind = src_[tag + 1];  // '{', '%' or '#'
            char mod = tag + 2 < end_ ? src_[tag + 2] : '\0';
            if (mod == '-') {
                while (!text.empty() && is_ws(text.back())) text.pop_back();
            } else if (kind != '{' && mod != '+') {
                // lstrip_blocks: only spaces/tabs between the line start and the tag go.
                size_t l_pos = text.rfind('\n');
                l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
                if ((l_pos > 0 || line_starting) &&
                    text.find_first_not_of(" \t", l_pos) == std::string::npos)
                    text.resize(l_pos);
            }
            push_text(std::move(text), pos);
            size_t inner = tag + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
            if (kind == '#') pos = lex_comment(tag, inner);
            else if (kind == '%' && is_raw(inner)) pos = lex_raw(tag, inner);
            else pos = lex_tag(kind, tag, inner);
            line_starting = pos > 0 && src_[pos - 1] == '\n';
        }
        tokens_.push_back({Tok::eof, "", 0, 0, end_});
        return std::move(tokens_);
    }

private:
    [[noreturn]] void error(size_t offset, const std::string& msg) const {
        SourcePos p = lines_.at(offset);
        fail("{}:{}:{}: {}", context_, p.line, p.col, msg);
    }

    size_t find_tag(size_t pos) const {
        for (size_t i = pos; i + 1 < end_; ++i)
            if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        return end_;
    }

    void push_text(std::string text, size_t offset) {
        if (!text.empty()) tokens_.push_back({Tok::text, std::move(text), 0, 0, offset});
    }

    // After a closing delimiter at `pos` (just past it): `-` strips all following whitespace;
    // a block or comment tag without `+` eats one newline (trim_blocks).
    size_t after_close(size_t pos, bool minus, bool plus, bool is_block) const {
        if (minus) {
            while (pos < end_ && is_ws(src_[pos])) ++pos;
        } else if (is_block && !plus && pos < end_ && src_[pos] == '\n') {
            ++pos;
        }
        return pos;
    }

    size_t lex_comment(size_t tag, size_t inner) {
        size_t close = src_.find("#}", inner);
        if (close == std::string::npos || close + 2 > end_) error(tag, "unclosed comment, missing '#}'");
        bool minus = close > inner && src_[close - 1] == '-';
        bool plus = close > inner && src_[close - 1] == '+';
        return after_close(close + 2, minus, plus, true);
    }

    bool is_raw(size_t p) const {
        while (p < end_ && is_ws(src_[p])) ++p;
        if (src_.compare(p, 3, "raw") != 0) return false;
        p += 3;
        while (p < end_ && is_ws(src_[p])) ++p;
        if (p < end_ && (src_[p] == '-' || src_[p] == '+')) ++p;
        return src_.compare(p, 2, "%}") == 0;
    }

    size_t lex_raw(size_t tag, size_t inner) {
        size_t close = src_.find("%}", inner);
        bool minus = src_[close - 1] == '-', plus = src_[close - 1] == '+';
        size_t body = after_close(close + 2, minus, plus, true);
        // Find {% endraw %} (with optional - / + modifiers and spaces).
        for (size_t p = src_.find("{%", body); p != std::string::npos && p < end_; p = src_.find("{%", p + 2)) {
            size_t q = p + 2;
            char mod = q < end_ ? src_[q] : '\0';
            if (mod == '-' || mod == '+') ++q;
            while (q < end_ && is_ws(src_[q])) ++q;
            if (src_.compare(q, 6, "endraw") != 0) continue;
            q += 6;
            while (q < end_ && is_ws(src_[q])) ++q;
            bool end_minus = false, end_plus = false;
            if (q < end_ && (src_[q] == '-' || src_[q] == '+')) {
                end_minus = src_[q] == '-';
                end_plus = src_[q] == '+';
                ++q;
            }
            if (src_.compare(q, 2, "%}") != 0) continue;
            std::string text = src_.substr(body, p - body);
            if (mod == '-')
                while (!text.empty() && is_ws(text.back())) text.pop_back();
            push_text(std::move(text), body);
            return after_close(q + 2, end_minus, end_plus, true);
        }
        error(tag, "unclosed raw block, missing '{% endraw %}'");
    }

    size_t lex_tag(char kind, size_t tag, size_t p) {
        bool is_block = kind == '%';
        tokens_.push_back({is_block ? Tok::block_begin : Tok::var_begin, is_block ? "{%" : "{{", 0, 0, tag});
        const char* close = is_block ? "%}" : "}}";
        int depth = 0;  // open brackets: a closing delimiter inside {...} is not the end
        for (;;) {
            while (p < end_ && is_ws(src_[p])) ++p;
            if (p >= end_) error(tag, fmt::format("unexpected end of template, expected '{}'", close));
            if (depth == 0) {
                bool minus = src_[p] == '-' && src_.compare(p + 1, 2, close) == 0;
                bool plus = is_block && src_[p] == '+' && src_.compare(p + 1, 2, close) == 0;
                if (minus || plus || src_.compare(p, 2, close) == 0) {
                    size_t after = p + 2 + ((minus || plus) ? 1 : 0);
                    if (after > end_) error(tag, fmt::format("unexpected end of template, expected '{}'", close));
                    tokens_.push_back({is_block ? Tok::block_end : Tok::var_end, close, 0, 0, p});
                    return after_close(after, minus, plus, is_block);
                }
            }
            p = lex_token(p, depth);
        }
    }

    size_t lex_token(size_t p, int& depth) {
        char c = src_[p];
        if (is_name_start(c)) {
            size_t q = p;
            while (q < end_ && is_name_char(src_[q])) ++q;
            tokens_.push_back({Tok::name, src_.substr(p, q - p), 0, 0, p});
            return q;
        }
        if (is_digit(c)) return lex_number(p);
        if (c == '\'' || c == '"') return lex_string(p);
        static const char* two[] = {"//", "**", "==", "!=", "<=", ">="};
        for (const char* op : two)
            if (src_.compare(p, 2, op) == 0) {
                tokens_.push_back({Tok::op, op, 0, 0, p});
                return p + 2;
            }
        if (std::strchr("+-*/%~<>=()[]{}.,:|", c) && c != '\0') {
            if (c == '(' || c == '[' || c == '{') ++depth;
            if (c == ')' || c == ']' || c == '}') {
                if (depth == 0) error(p, fmt::format("unexpected '{}'", c));
                --depth;
            }
            tokens_.push_back({Tok::op, std::string(1, c), 0, 0, p});
            return p + 1;
        }
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
            error(p, fmt::format("unexpected character 0x{:02x} in expression", static_cast<unsigned char>(c)));
        error(p, fmt::format("unexpected character '{}' in expression", c));
    }

    size_t lex_number(size_t p) {
        size_t q = p;
        std::string digits;
        auto run = [&] {
            while (q < end_ && (is_digit(src_[q]) || (src_[q] == '_' && q + 1 < end_ && is_digit(src_[q + 1]))))
                if (src_[q++] != '_') digits += src_[q - 1];
        };
        run();
        bool is_float = false;
        if (q + 1 < end_ && src_[q] == '.' && is_digit(src_[q + 1])) {
            is_float = true;
            digits += src_[q++];
            run();
        }
        if (q < end_ && (src_[q] == 'e' || src_[q] == 'E')) {
            size_t r = q + 1;
            if (r < end_ && (src_[r] == '+' || src_[r] == '-')) ++r;
            if (r < end_ && is_digit(src_[r])) {
                is_float = true;
                digits += 'e';
                digits.append(src_, q + 1, r - q - 1);
                q = r;
                run();
            }
        }
        Token t{is_float ? Tok::floating : Tok::integer, digits, 0, 0, p};
        if (is_float) {
            t.float_value = std::strtod(digits.c_str(), nullptr);
        } else {
            errno = 0;
            t.int_value = std::strtoll(digits.c_str(), nullptr, 10);
            if (errno == ERANGE) error(p, "integer literal too large");
        }
        tokens_.push_back(std::move(t));
        return q;
    }

    size_t lex_string(size_t p) {
        char quote = src_[p];
        std::string out;
        size_t q = p + 1;
        while (q < end_ && src_[q] != quote) {
            char c = src_[q++];
            if (c != '\\') {
                out += c;
                continue;
            }
            if (q >= end_) break;
            char e = src_[q++];
            auto hex = [&](int n) -> uint32_t {
                uint32_t v = 0;
                for (int i = 0; i < n; ++i, ++q) {
                    if (q >= end_ || !std::isxdigit(static_cast<unsigned char>(src_[q])))
                        error(q, "bad escape in string literal");
                    char h = src_[q];
                    v = v * 16 + static_cast<uint32_t>(is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
                }
                return v;
            };
            switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case '0': out += '\0'; break;
                case 'a': out += '\a'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'v': out += '\v'; break;
                case '\\': out += '\\'; break;
                case '\'': out += '\''; break;
                case '"': out += '"'; break;
                case '\n': break;  // a backslash-newline continues the line
                case 'x': utf8_append(out, hex(2)); break;
                case 'u': utf8_append(out, hex(4)); break;
                case 'U': {
                    uint32_t cp = hex(8);
                    if (cp > 0x10ffff) error(q, "bad \\U escape in string literal");
                    utf8_append(out, cp);
                    break;
                }
                default:  // Python keeps unknown escapes as written
                    out += '\\';
                    out += e;
            }
        }
        if (q >= end_) error(p, "unterminated string literal");
        tokens_.push_back({Tok::string, std::move(out), 0, 0, p});
        return q + 1;
    }

    const std::string& src_;
    const std::string& context_;
    LineTable lines_;
    size_t end_ = 0;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const std::string& context) {
    return Lexer(source, context).run();
}

}  // namespace tt::jinja
