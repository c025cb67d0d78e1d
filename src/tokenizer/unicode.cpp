// UTF-8 decoding follows the Unicode "well-formed byte sequences" table (the same one Rust's
// from_utf8 enforces): overlongs, surrogates and code points above U+10FFFF are invalid.
#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <array>
#include <cstring>

namespace tt::tok {

namespace {

// Valid range of the second byte for a given lead byte (table 3-7 of the Unicode standard).
bool second_byte_ok(uint8_t lead, uint8_t b) {
    if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
    if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
    if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
    if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
    return b >= 0x80 && b <= 0xBF;
}

// Expected length of a sequence from its lead byte; 0 for bytes that cannot start one.
size_t lead_len(uint8_t b) {
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) return 2;
    if (b >= 0xE0 && b <= 0xEF) return 3;
    if (b >= 0xF0 && b <= 0xF4) return 4;
    return 0;
}

// How many bytes from s[i] form a valid (possibly incomplete) prefix of a character.
size_t valid_prefix_len(std::string_view s, size_t i, size_t& need) {
    uint8_t lead = static_cast<uint8_t>(s[i]);
    need = lead_len(lead);
    if (need <= 1) return need;
    size_t n = 1;
    while (n < need && i + n < s.size()) {
        uint8_t b = static_cast<uint8_t>(s[i + n]);
        bool ok = n == 1 ? second_byte_ok(lead, b) : (b >= 0x80 && b <= 0xBF);
        if (!ok) break;
        ++n;
    }
    return n;
}

struct ByteTables {
    std::array<char32_t, 256> to_char{};
    std::array<int16_t, 324> to_byte{};  // code points used are < 256 + 68
    std::array<std::array<char, 2>, 256> utf8{};  // to_char as UTF-8 (one or two bytes)
    std::array<uint8_t, 256> utf8_len{};
    ByteTables() {
        to_byte.fill(-1);
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
            to_char[b] = cp;
            to_byte[cp] = static_cast<int16_t>(b);
            std::string e;
            utf8_append(e, cp);
            utf8_len[b] = static_cast<uint8_t>(e.size());
            for (size_t k = 0; k < e.size(); ++k) utf8[b][k] = e[k];
        }
    }
};

const ByteTables& byte_tables() {
    static const ByteTables t;
    return t;
}

}  // namespace

size_t utf8_char_len(std::string_view s, size_t i) {
    size_t need = 0;
    size_t n = valid_prefix_len(s, i, need);
    return (need != 0 && n == need) ? need : 0;
}

void utf8_append(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

size_t utf8_last_char_len(std::string_view s) {
    size_t c = s.size() - 1;
    while (c > 0 && (static_cast<uint8_t>(s[c]) & 0xC0) == 0x80) --c;
    return s.size() - c;
}

char32_t utf8_last_char(std::string_view s) {
    size_t i = s.size() - utf8_last_char_len(s);
    return utf8_next(s, i);
}

std::optional<size_t> utf8_first_invalid(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        uint64_t w;
        if (i + 8 <= s.size() && (std::memcpy(&w, s.data() + i, 8), (w & 0x8080808080808080ull) == 0)) {
            i += 8;  // eight ASCII bytes
            continue;
        }
        if (static_cast<uint8_t>(s[i]) < 0x80) {
            ++i;
            continue;
        }
        size_t n = utf8_char_len(s, i);
        if (n == 0) return i;
        i += n;
    }
    return std::nullopt;
}

std::string utf8_lossy(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    size_t i = 0;
    while (i < bytes.size()) {
        size_t need = 0;
        size_t n = valid_prefix_len(bytes, i, need);
        if (need != 0 && n == need) {
            out.append(bytes.substr(i, n));
            i += n;
        } else {
            out += "\xEF\xBF\xBD";
            i += n == 0 ? 1 : n;
        }
    }
    return out;
}

size_t utf8_complete_prefix(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        size_t need = 0;
        size_t n = valid_prefix_len(s, i, need);
        if (need != 0 && n < need && i + n == s.size()) return i;  // incomplete tail
        i += n == 0 ? 1 : n;
    }
    return s.size();
}

bool is_whitespace(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

bool is_word_char(char32_t c) {
    if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (c == 0x200C || c == 0x200D) return true;  // Join_Control
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
        case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
        case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
        case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
        case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
            return true;
        default:
            return false;
    }
}

char32_t byte_to_char(uint8_t b) { return byte_tables().to_char[b]; }

int char_to_byte(char32_t cp) {
    const auto& t = byte_tables();
    return cp < t.to_byte.size() ? t.to_byte[cp] : -1;
}

std::string bytes_to_byte_level(std::string_view s) {
    std::string out;
    append_byte_level(out, s);
    return out;
}

void append_byte_level(std::string& out, std::string_view s) {
    const auto& t = byte_tables();
    size_t at = out.size();
    out.resize(at + 2 * s.size());  // the most it can need; trimmed below
    char* dst = out.data() + at;
    for (char c : s) {
        auto b = static_cast<uint8_t>(c);
        dst[0] = t.utf8[b][0];
        dst[1] = t.utf8[b][1];
        dst += t.utf8_len[b];
    }
    out.resize(static_cast<size_t>(dst - out.data()));
}

}  // namespace tt::tok
