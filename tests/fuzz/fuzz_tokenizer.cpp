// Fuzz target for the tokenizer: encoding random bytes / UTF-8 must never crash, hang or read out
// of bounds, invalid UTF-8 must be a tt::Error, and decoding must stay consistent. Self-contained:
// it builds small tokenizers of both families in memory (no ../shared needed).
//   byte 0 % 6 selects: 0 byte-level BPE (Qwen regex, added tokens with lstrip/rstrip/single_word)
//   encode + exact round trip; 1 SentencePiece-style BPE (byte fallback, Prepend/Replace) encode
//   + round trip; 2 llama2.c tokenizer encode + round trip; 3 the bytes as a tokenizer.json;
//   4 the bytes as ids: decode vs streaming decode on all three tokenizers; 5 GPT-2 style BPE
//   (NFKC, ByteLevel with prefix space and its regex): the round trip is NFKC of the text as
//   utf8proc computes it on the whole string, with the prefix space.
#include "core/error.h"
#include "fuzz_sentencepiece.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using json = nlohmann::json;

std::unique_ptr<tt::Tokenizer> make_byte_level() {
    json vocab = json::object();
    int id = 0;
    for (int b = 0; b < 256; ++b) {
        std::string s;
        tt::tok::utf8_append(s, tt::tok::byte_to_char(static_cast<uint8_t>(b)));
        vocab[s] = id++;
    }
    json merges = json::array();
    for (const char* m : {"Ġ t", "h e", "Ġt he", "i n", "Ġ a", "e r", "a n", "Ġ Ġ", "ĠĠ ĠĠ", "o n", "Ġ s", "e n"}) {
        std::string a(m, std::strchr(m, ' ')), b(std::strchr(m, ' ') + 1);
        if (!vocab.contains(a + b)) vocab[a + b] = id++;
        merges.push_back(m);
    }
    json tj = {
        {"added_tokens",
         {{{"id", id}, {"content", "<|im_start|>"}, {"special", true}, {"normalized", false}},
          {{"id", id + 1}, {"content", "<mask>"}, {"special", true}, {"lstrip", true}, {"rstrip", true}, {"normalized", false}},
          {{"id", id + 2}, {"content", "word"}, {"special", false}, {"single_word", true}, {"normalized", true}}}},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern",
              {{"Regex", R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
        {"decoder", {{"type", "ByteLevel"}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
    return tt::Tokenizer::from_hf(tj.dump(), "", "fuzz-bytelevel");
}

std::unique_ptr<tt::Tokenizer> make_gpt2_nfkc() {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) {
        std::string s;
        tt::tok::utf8_append(s, tt::tok::byte_to_char(static_cast<uint8_t>(b)));
        vocab[s] = b;
    }
    json merges = json::array();
    int id = 256;
    for (const char* m : {"\xC4\xA0 t", "h e", "\xC4\xA0t he", "\xC4\xA0 \xC4\xA0", "\xC3\x83 \xC2\xA9"}) {  // the last: the bytes of "é"
        std::string a(m, std::strchr(m, ' ')), b(std::strchr(m, ' ') + 1);
        if (!vocab.contains(a + b)) vocab[a + b] = id++;
        merges.push_back(m);
    }
    json tj = {{"normalizer", {{"type", "NFKC"}}},
               {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}}},
               {"decoder", {{"type", "ByteLevel"}}},
               {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
    return tt::Tokenizer::from_hf(tj.dump(), "", "fuzz-gpt2-nfkc");
}

std::string nfkc(std::string_view text) {
    utf8proc_uint8_t* out = nullptr;
    utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                                      &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
    std::string r = n >= 0 ? std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(n)) : std::string();
    std::free(out);
    return r;
}

std::unique_ptr<tt::Tokenizer> make_llama2c() {
    std::string bin;
    auto put_i32 = [&](int32_t v) { bin.append(reinterpret_cast<const char*>(&v), 4); };
    auto put = [&](const std::string& piece, float score) {
        bin.append(reinterpret_cast<const char*>(&score), 4);
        put_i32(static_cast<int32_t>(piece.size()));
        bin += piece;
    };
    put_i32(8);
    put("<unk>", 0), put("\n<s>\n", 0), put("\n</s>\n", 0);
    char buf[8];
    for (int b = 0; b < 256; ++b) std::snprintf(buf, sizeof buf, "<0x%02X>", b), put(buf, 0);
    float score = 0;
    for (const char* p : {" ", "e", "t", "h", " t", "he", " the", "a", " a", "n", "an"}) put(p, score--);
    return tt::Tokenizer::from_llama2c(bin, -1, "fuzz-llama2c");
}

void check(bool cond, const char* what) {
    if (!cond) {
        std::fprintf(stderr, "fuzz_tokenizer: %s\n", what);
        std::abort();
    }
}

void encode_round_trip(const tt::Tokenizer& tok, std::string_view text, bool exact) {
    std::vector<int32_t> ids;
    try {
        ids = tok.encode(text, true);
    } catch (const tt::Error&) {
        check(tt::tok::utf8_first_invalid(text).has_value(), "valid UTF-8 rejected");
        return;
    }
    check(!tt::tok::utf8_first_invalid(text).has_value(), "invalid UTF-8 accepted");
    for (int32_t id : ids) check(id >= 0 && id < tok.vocab_size(), "id out of range");
    std::string back = tok.decode(ids, true);
    check(!tt::tok::utf8_first_invalid(back).has_value(), "decode produced invalid UTF-8");
    // Exact only without added tokens: lstrip/rstrip tokens absorb the whitespace around them.
    bool plain = true;
    for (int32_t id : ids) plain &= id < tok.vocab_size() - 3;
    if (exact && plain) check(back == text, "byte-level round trip changed the text");
}

void stream_vs_whole(const tt::Tokenizer& tok, const std::vector<int32_t>& ids) {
    for (bool skip : {false, true}) {
        tt::StreamDecoder sd(tok, skip);
        std::string s;
        for (int32_t id : ids) s += sd.push(id);
        s += sd.flush();
        check(s == tok.decode(ids, skip), "streaming decode differs from whole decode");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto byte_level = make_byte_level();
    static const auto sentencepiece = tt::test::make_fuzz_sentencepiece();
    static const auto llama2c = make_llama2c();
    static const auto gpt2_nfkc = make_gpt2_nfkc();
    if (size == 0) return 0;
    std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 6) {
        case 0:
            encode_round_trip(*byte_level, text, true);
            break;
        case 1:
            encode_round_trip(*sentencepiece, text, false);
            break;
        case 2:
            encode_round_trip(*llama2c, text, false);
            break;
        case 3:
            try {
                auto t = tt::Tokenizer::from_hf(text, "", "fuzz.json");
                (void)t->encode("Hello world, 字 🙂", true);
            } catch (const tt::Error&) {
            }
            break;
        case 5:
            encode_round_trip(*gpt2_nfkc, text, false);
            if (!tt::tok::utf8_first_invalid(text)) {
                std::string norm = nfkc(text);
                std::string back = gpt2_nfkc->decode(gpt2_nfkc->encode(text, false), false);
                check(back == (norm.starts_with(' ') ? norm : " " + norm), "NFKC + ByteLevel round trip differs from utf8proc");
            }
            break;
        case 4: {
            std::vector<int32_t> ids;
            for (size_t i = 0; i + 1 < text.size(); i += 2)
                ids.push_back(static_cast<int32_t>(static_cast<uint8_t>(text[i]) | (static_cast<uint8_t>(text[i + 1]) << 8)) % 300);
            stream_vs_whole(*byte_level, ids);
            stream_vs_whole(*sentencepiece, ids);
            stream_vs_whole(*llama2c, ids);
        }
    }
    return 0;
}
