// StreamDecoder: incremental detokenization for generation output (see tokenizer.h for the
// invariant). The scheme is that of `tokenizers`' DecodeStream: decode a short window of ids,
// emit what it adds beyond the previous decode once it ends on a complete character.
#include "tokenizer/tokenizer.h"

#include "core/error.h"

namespace tt {

namespace {

// "<0xNN>": a byte-fallback token. note: `tokenizers`' ByteFallback decoder turns a whole run of
// byte tokens into U+FFFD (one per byte) when the run is not valid UTF-8, so a run that decodes
// cleanly now ("W" from <0x57>) can still turn into U+FFFD when the next byte token arrives; such
// text is final only once a non-byte token ends the run.
bool is_byte_token(const std::string& t) {
    auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
    return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && hex(t[3]) && hex(t[4]);
}

bool ends_with_replacement(const std::string& s) {
    return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skip_special_tokens) : tok_(tok), skip_special_(skip_special_tokens) {}

std::string StreamDecoder::push(int32_t id) {
    ids_.push_back(id);
    // Nothing becomes final while the last token decode() sees is a byte token. An id decode()
    // drops before the decoders (unknown, or special while skipping specials) is no token there:
    // it neither ends a byte run nor adds text, so it must not trigger an emission either.
    std::string token = tok_.id_to_token(id);
    bool dropped = token.empty() || (skip_special_ && tok_.is_special(id));
    if (dropped || is_byte_token(token)) return {};
    std::string text = tok_.decode(ids_, skip_special_);
    if (text.size() <= prefix_.size() || ends_with_replacement(text) || text.compare(0, prefix_.size(), prefix_) != 0)
        return {};
    std::string out = text.substr(prefix_.size());
    // The window restarts at the ids that produced the previous emission, which keeps one token of
    // left context (for leading-space rules) while bounding the work per id.
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<ptrdiff_t>(prefix_index_));
    prefix_ = tok_.decode(ids_, skip_special_);
    prefix_index_ = ids_.size();
    return out;
}

std::string StreamDecoder::flush() {
    std::string text = tok_.decode(ids_, skip_special_);
    // What push() emitted was final, so the window's decode still starts with it.
    TT_ASSERT(text.compare(0, prefix_.size(), prefix_) == 0, "{}: streamed text '{}' is not a prefix of '{}'",
              tok_.context(), prefix_, text);
    std::string out = text.substr(prefix_.size());
    ids_.clear();
    prefix_.clear();
    prefix_index_ = 0;
    return out;
}

}  // namespace tt
