// StreamDecoder regressions on small in-memory tokenizers (no ../shared needed): id sequences the
// fuzz target (tests/fuzz/fuzz_tokenizer.cpp) found where push()/flush() printed something other
// than decode() of the whole sequence. The tokenizer here is the fuzz target's SentencePiece-style
// one, built the same way, so a crash input replays exactly.
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>

using namespace tt;
using json = nlohmann::json;

namespace {

// The fuzz target's make_sentencepiece(): <unk> <s> </s>, 256 byte tokens (ids 3..258), a few
// pieces (ids 259..269); Replace/ByteFallback/Fuse/Strip decoder; BOS <s> is special.
std::unique_ptr<Tokenizer> fuzz_sentencepiece() {
    json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
    int id = 3;
    char buf[8];
    for (int b = 0; b < 256; ++b) {
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        vocab[buf] = id++;
    }
    for (const char* t : {"\xE2\x96\x81", "a", "b", "c", "e", "h", "t", "\xE2\x96\x81t", "he", "\xE2\x96\x81the", "\xC3\xA9"})
        vocab[t] = id++;
    json tj = {{"normalizer",
                {{"type", "Sequence"},
                 {"normalizers",
                  {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
                   {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}}},
               {"added_tokens", {{{"id", 1}, {"content", "<s>"}, {"special", true}, {"normalized", false}}}},
               {"post_processor",
                {{"type", "TemplateProcessing"},
                 {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                 {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
               {"decoder",
                {{"type", "Sequence"},
                 {"decoders",
                  {{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                   {{"type", "ByteFallback"}},
                   {{"type", "Fuse"}},
                   {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
               {"model",
                {{"type", "BPE"},
                 {"vocab", vocab},
                 {"merges", {"\xE2\x96\x81 t", "h e", "\xE2\x96\x81t he"}},
                 {"unk_token", "<unk>"},
                 {"byte_fallback", true},
                 {"fuse_unk", true}}}};
    return Tokenizer::from_hf(tj.dump(), "{\"bos_token\": \"<s>\", \"add_bos_token\": true}", "fuzz-sentencepiece");
}

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
    auto tok = fuzz_sentencepiece();
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
    auto tok = fuzz_sentencepiece();
    const std::vector<int32_t> ids = {0x41 + 3, 1, 0xC3 + 3, 0xA9 + 3, 0xFF + 3, 0x42 + 3, 1, 0x41 + 3, 264};
    EXPECT_EQ(tok->decode(ids, true), k_fffd + k_fffd + k_fffd + k_fffd + k_fffd + k_fffd + "h");
    EXPECT_EQ(tok->decode(ids, false), "A<s>" + k_fffd + k_fffd + k_fffd + k_fffd + "<s>Ah");
    for (bool skip : {false, true}) EXPECT_EQ(stream(*tok, ids, skip), tok->decode(ids, skip)) << "skip_special " << skip;
}

}  // namespace
