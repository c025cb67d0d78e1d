// A compiled PCRE2 pattern (UTF + UCP, JIT when available) that lists its non-overlapping
// matches. The tokenizer.json Split patterns were written for Oniguruma (`\p{L}`, `(?i:...)`,
// `\s+(?!\S)`); PCRE2 with UCP gives those constructs the same Unicode meaning.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tt::tok {

class Regex {
public:
    // Throws tt::Error "<context>: bad regex ...: <pcre2 message>" on a pattern PCRE2 rejects.
    Regex(const std::string& pattern, const std::string& context);
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    // Sets `out` to the [begin, end) byte ranges of the successive leftmost matches in s (valid
    // UTF-8); empty matches are skipped. Thread-safe (match data is per thread).
    void find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tt::tok
