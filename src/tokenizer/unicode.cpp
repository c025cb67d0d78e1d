// UTF-8 itself is utf8proc's: utf8proc_iterate decodes and validates (the Unicode "well-formed
// byte sequences" table, the one Rust's from_utf8 enforces: overlongs, surrogates and code points
// above U+10FFFF are invalid), utf8proc_encode_char encodes. What is built on it here is only what
// `tokenizers` adds: Rust's lossy conversion (one U+FFFD per maximal invalid subpart) and the
// incomplete-tail rule of the streaming decoder.
#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace tt::tok {

namespace {

// utf8proc_iterate on s[i..]: the character's length (> 0) or a negative error.
utf8proc_ssize_t iterate(std::string_view s, size_t i, utf8proc_int32_t& cp) {
    return utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i), static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
}

// Whether the k bytes at p are the start of some well-formed character: completed with the
// continuation bytes that every lead byte accepts (the second byte's range depends on the lead,
// 0x80 or 0xBF fits each: E0 needs A0..BF, ED 80..9F, F0 90..BF, F4 80..8F), utf8proc decides.
bool valid_prefix(const char* p, size_t k, size_t need) {
    for (uint8_t second : {uint8_t(0x80), uint8_t(0xBF)}) {
        utf8proc_uint8_t buf[4];
        std::memcpy(buf, p, k);
        for (size_t j = k; j < need; ++j) buf[j] = j == 1 ? second : 0x80;
        utf8proc_int32_t cp;
        if (utf8proc_iterate(buf, static_cast<utf8proc_ssize_t>(need), &cp) == static_cast<utf8proc_ssize_t>(need)) return true;
    }
    return false;
}

// How many bytes from s[i] form a valid (possibly incomplete) prefix of a character; `need` is the
// length the lead byte announces (0 for a byte that cannot start one).
size_t valid_prefix_len(std::string_view s, size_t i, size_t& need) {
    utf8proc_int32_t cp;
    if (const auto n = iterate(s, i, cp); n > 0) {
        need = static_cast<size_t>(n);
        return need;
    }
    const auto lead = static_cast<utf8proc_uint8_t>(s[i]);
    need = static_cast<size_t>(std::max<int>(utf8proc_utf8class[lead], 0));
    if (need <= 1 || !valid_prefix(s.data() + i, 1, need)) {
        need = 0;
        return 0;
    }
    size_t k = std::min(need - 1, s.size() - i);  // a complete sequence would have decoded above
    while (k > 1 && !valid_prefix(s.data() + i, k, need)) --k;
    return k;
}

}  // namespace

namespace {

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
    utf8proc_int32_t cp;
    const auto n = iterate(s, i, cp);
    return n > 0 ? static_cast<size_t>(n) : 0;
}

char32_t utf8_next_multibyte(std::string_view s, size_t& i) {
    utf8proc_int32_t cp = 0;
    const auto n = iterate(s, i, cp);
    i += n > 0 ? static_cast<size_t>(n) : 1;  // callers pass valid UTF-8; never loop on invalid bytes
    return static_cast<char32_t>(n > 0 ? cp : 0xFFFD);
}

void utf8_append(std::string& out, char32_t cp) {
    utf8proc_uint8_t buf[4];
    const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
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
