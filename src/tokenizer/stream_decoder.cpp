// StreamDecoder: incremental detokenization for generation output (see tokenizer.h for the
// invariant). The scheme is that of `tokenizers`' DecodeStream: decode a short window of ids,
// emit what it adds beyond the previous decode once it ends on a complete character.
#include "tokenizer/tokenizer.h"

namespace tt {

namespace {

bool ends_with_replacement(const std::string& s) {
    return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skip_special_tokens) : tok_(tok), skip_special_(skip_special_tokens) {}

std::string StreamDecoder::push(int32_t id) {
    ids_.push_back(id);
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
    std::string out = text.size() > prefix_.size() && text.compare(0, prefix_.size(), prefix_) == 0
                          ? text.substr(prefix_.size())
                          : std::string();
    ids_.clear();
    prefix_.clear();
    prefix_index_ = 0;
    return out;
}

}  // namespace tt
