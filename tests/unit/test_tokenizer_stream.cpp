// StreamDecoder regressions on small in-memory tokenizers (no ../shared needed): id sequences the
// fuzz target (tests/fuzz/fuzz_tokenizer.cpp) found where push()/flush() printed something other
// than decode() of the whole sequence. The tokenizer here is the fuzz target's SentencePiece-style
// one, built the same way, so a crash input replays exactly.
#include "../fuzz/fuzz_sentencepiece.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>

using namespace tt;
using json = nlohmann::json;

namespace {

std::string stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip) {
    StreamDecoder sd(tok, skip);
    std::string out;
    for (int32_t id : ids) out += sd.push(id);
    return out + sd.flush();
}

const std::string k_fffd = "\xEF\xBF\xBD";

// tests/fuzz/seeds/fuzz_tokenizer/crash-aad5b0db...: ids 12 57 69 228 257 are the byte tokens
// <0x09> <0x36> <0x42> <0xE1> <0xFE>; 293 and 288 are past the vocabulary. decode() skips unknown
// ids before the ByteFallback decoder, so all five bytes are one run, invalid UTF-8 as a whole, and
// `tokenizers` turns it into five U+FFFD. StreamDecoder took the unknown id 293 for a token that
// ends the byte run and printed "\t" for <0x09>, which the whole decode never prints.
TEST(StreamDecoder, UnknownIdDoesNotEndAByteRun) {
    auto tok = tt::test::make_fuzz_sentencepiece();
    const std::vector<int32_t> ids = {12, 293, 57, 69, 228, 288, 257};
    std::string whole;
    for (int k = 0; k < 5; ++k) whole += k_fffd;
    for (bool skip : {false, true}) {
        EXPECT_EQ(tok->decode(ids, skip), whole);
        EXPECT_EQ(stream(*tok, ids, skip), whole) << "skip_special " << skip;
    }
}

// The same with a special token inside the run: with skip_special_tokens decode() drops <s> before
// the decoders, so it must not end the run either; without skipping it does.
TEST(StreamDecoder, SkippedSpecialDoesNotEndAByteRun) {
    auto tok = tt::test::make_fuzz_sentencepiece();
    const std::vector<int32_t> ids = {0x41 + 3, 1, 0xC3 + 3, 0xA9 + 3, 0xFF + 3, 0x42 + 3, 1, 0x41 + 3, 264};
    EXPECT_EQ(tok->decode(ids, true), k_fffd + k_fffd + k_fffd + k_fffd + k_fffd + k_fffd + "h");
    EXPECT_EQ(tok->decode(ids, false), "A<s>" + k_fffd + k_fffd + k_fffd + k_fffd + "<s>Ah");
    for (bool skip : {false, true}) EXPECT_EQ(stream(*tok, ids, skip), tok->decode(ids, skip)) << "skip_special " << skip;
}

}  // namespace
