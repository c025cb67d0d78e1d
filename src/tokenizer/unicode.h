// UTF-8 and Unicode helpers shared by the tokenizer stages: decoding code points, validating input,
// Rust-compatible lossy conversion (what `tokenizers` does to invalid bytes when decoding), the
// GPT-2 byte <-> printable-character table of the ByteLevel stages, and the character classes
// (`char::is_whitespace`, regex `\w`) that added-token matching uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tt::tok {

// One UTF-8 codec: utf8proc's (utf8proc_iterate / utf8proc_encode_char), which enforces the same
// well-formedness as Rust's from_utf8 (no overlongs, surrogates or code points past U+10FFFF).

// Length of the valid UTF-8 character starting at s[i], or 0 if the bytes there are not one.
size_t utf8_char_len(std::string_view s, size_t i);
// utf8_next past ASCII (out of line).
char32_t utf8_next_multibyte(std::string_view s, size_t& i);
// Decodes the character at s[i] (must be valid, see utf8_char_len) and advances i past it.
// Inline for ASCII: the tokenizer's inner loops call it once per character.
inline char32_t utf8_next(std::string_view s, size_t& i) {
    auto b = static_cast<uint8_t>(s[i]);
    if (b < 0x80) {
        ++i;
        return b;
    }
    return utf8_next_multibyte(s, i);
}
void utf8_append(std::string& out, char32_t cp);
// Byte length and code point of the last character of s (non-empty, valid UTF-8).
size_t utf8_last_char_len(std::string_view s);
char32_t utf8_last_char(std::string_view s);
// Byte offset of the first invalid sequence, or nullopt if s is valid UTF-8.
std::optional<size_t> utf8_first_invalid(std::string_view s);
// Like Rust's String::from_utf8_lossy: each maximal invalid subpart becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);
// Length of the longest prefix of s that is complete UTF-8 characters or definitely-invalid
// bytes, i.e. everything except a trailing incomplete-but-still-valid sequence.
size_t utf8_complete_prefix(std::string_view s);

// Unicode White_Space (Rust's char::is_whitespace).
bool is_whitespace(char32_t cp);
// Regex `\w` in Rust's regex crate: alphabetic, marks, decimal digits, connector punctuation.
bool is_word_char(char32_t cp);

// GPT-2's bytes_to_unicode(): every byte maps to a printable code point.
char32_t byte_to_char(uint8_t b);
// Inverse of byte_to_char; -1 for code points that are not in the table.
int char_to_byte(char32_t cp);
// Maps every byte of s through byte_to_char, producing the UTF-8 string BPE sees.
std::string bytes_to_byte_level(std::string_view s);
// The same, appended to out.
void append_byte_level(std::string& out, std::string_view s);

}  // namespace tt::tok
