// PCRE2 wrapper. note: the JIT matcher runs on a small machine stack by default; long runs of
// whitespace against `\s+(?!\S)` can exhaust it, so on PCRE2_ERROR_JIT_STACKLIMIT we retry that
// search with the interpreter (heap-backed) rather than fail.
#include "tokenizer/regex.h"

#include "core/error.h"

#include <pcre2.h>

namespace tt::tok {

struct Regex::Impl {
    pcre2_code* code = nullptr;
    bool jit = false;
};

Regex::Regex(const std::string& pattern, const std::string& context) : impl_(std::make_unique<Impl>()) {
    int err = 0;
    PCRE2_SIZE err_off = 0;
    impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                PCRE2_UTF | PCRE2_UCP, &err, &err_off, nullptr);
    if (!impl_->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        fail("{}: bad regex '{}' at offset {}: {}", context, pattern, err_off, reinterpret_cast<const char*>(msg));
    }
    impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() {
    if (impl_ && impl_->code) pcre2_code_free(impl_->code);
}

namespace {

// One match data for all patterns of a thread: only the overall match (pair 0) is read, and
// pcre2_match fills that even when a pattern has more groups than the vector has pairs (it then
// returns 0 instead of the group count).
pcre2_match_data* thread_match_data() {
    struct Holder {
        pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
        ~Holder() { pcre2_match_data_free(md); }
    };
    thread_local Holder h;
    TT_ASSERT(h.md != nullptr, "pcre2_match_data_create failed");
    return h.md;
}

}  // namespace

void Regex::find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
    out.clear();
    pcre2_match_data* md = thread_match_data();
    auto subject = reinterpret_cast<PCRE2_SPTR>(s.data());
    size_t pos = 0;
    while (pos <= s.size()) {
        // The input was validated once by the caller; skip PCRE2's per-call UTF check.
        // pcre2_jit_match skips pcre2_match's argument checks (the subject was validated once).
        int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, s.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr)
                            : pcre2_match(impl_->code, subject, s.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
            rc = pcre2_match(impl_->code, subject, s.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            fail("regex match failed: {}", reinterpret_cast<const char*>(msg));
        }
        PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        size_t b = ov[0], e = ov[1];
        if (e > b) {
            out.emplace_back(b, e);
            pos = e;
        } else {
            // Empty match: step over one whole character.
            if (b >= s.size()) break;
            pos = b + 1;
            while (pos < s.size() && (static_cast<uint8_t>(s[pos]) & 0xC0) == 0x80) ++pos;
        }
    }
}

}  // namespace tt::tok
