// The small SentencePiece-style tokenizer the tokenizer fuzz target runs (tests/fuzz/fuzz_tokenizer.cpp),
// shared with the unit tests that replay its finds (tests/unit/test_tokenizer_stream.cpp) so a crash
// input replays on exactly the same tokenizer: <unk> <s> </s>, 256 byte tokens (ids 3..258), a few
// pieces (ids 259..269); Replace/ByteFallback/Fuse/Strip decoder; BOS <s> is special.
#pragma once

#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>

namespace tt::test {

inline std::unique_ptr<tt::Tokenizer> make_fuzz_sentencepiece() {
    using json = nlohmann::json;
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
    return tt::Tokenizer::from_hf(tj.dump(), "{\"bos_token\": \"<s>\", \"add_bos_token\": true}", "fuzz-sentencepiece");
}

}  // namespace tt::test
