// Splits Jinja source into tokens: literal text, `{{ }}` / `{% %}` delimiters and the expression
// tokens inside them. Whitespace control is applied here, as in Jinja's own lexer, with the
// environment transformers uses: trim_blocks (drop the first newline after a block or comment
// tag), lstrip_blocks (drop spaces and tabs before a block or comment tag at the start of a line),
// `-` on a delimiter strips all whitespace on that side, `+` turns lstrip/trim off for that tag,
// and keep_trailing_newline=False (one trailing newline of the source is dropped).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tt::jinja {

enum class Tok : uint8_t {
    text,         // literal template text (after whitespace control)
    var_begin,    // {{
    var_end,      // }}
    block_begin,  // {%
    block_end,    // %}
    name,         // identifiers and keywords
    string,       // a string literal, unescaped
    integer,
    floating,
    op,           // operators and punctuation: + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } . , : |
    eof,
};

struct Token {
    Tok type;
    std::string text;  // text / name / unescaped string / operator spelling
    int64_t int_value = 0;
    double float_value = 0;
    size_t offset = 0;  // byte offset into the (newline-normalized) source
};

struct SourcePos {
    int line = 1;
    int col = 1;
};

// Maps byte offsets of a source to 1-based line and column (columns count bytes).
class LineTable {
public:
    explicit LineTable(const std::string& source);
    SourcePos at(size_t offset) const;

private:
    std::vector<size_t> line_starts_;
};

// Normalizes "\r\n" and "\r" to "\n" the way Jinja does before lexing.
std::string normalize_newlines(const std::string& source);

// Tokenizes normalized source. Throws tt::Error "<context>:<line>:<col>: ..." on lexical errors
// (unclosed tag or string, unknown character).
std::vector<Token> tokenize(const std::string& source, const std::string& context);

}  // namespace tt::jinja
