// Tests of the tokenizer's speed-ups against the slow, obviously right way: the normalizer's
// stretch-wise Unicode normalization against utf8proc on the whole string, the word cache under
// concurrent readers and writers, the SentencePiece word splits against merges that cross a "▁",
// and encoding from several threads at once against one thread.
#include "tokenizer/pipeline.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/word_cache.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <thread>

using namespace tt;
using json = nlohmann::json;

namespace {

std::string utf8proc_whole(const std::string& s, int options) {
    utf8proc_uint8_t* out = nullptr;
    utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
                                      &out, static_cast<utf8proc_option_t>(options));
    EXPECT_GE(n, 0);
    std::string r(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);
    return r;
}

std::string cps(std::initializer_list<char32_t> list) {
    std::string s;
    for (char32_t c : list) tok::utf8_append(s, c);
    return s;
}

struct Form {
    const char* name;
    int options;
};
const Form k_forms[] = {{"NFC", UTF8PROC_STABLE | UTF8PROC_COMPOSE},
                        {"NFD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE},
                        {"NFKC", UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
                        {"NFKD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT}};

// Every code point below U+30000 (and a sample above) between characters it may compose or
// reorder with, and random strings of such characters.
TEST(TokenizerNormalizer, StretchwiseEqualsWholeString) {
    const std::vector<char32_t> tricky = {'e', 'A', ' ', 0x300, 0x301, 0x308, 0x323, 0x327, 0x345, 0x1100, 0x1161, 0x11A8, 0xAC00,
                                          0xAC01, 0x212B, 0x2126, 0xC5, 0xE9, 0x1E0B, 0x0CBF, 0x0CD5, 0x0CC6, 0x0CC2, 0x0BC6,
                                          0x0BBE, 0x0BD7, 0x09C7, 0x09BE, 0x0B47, 0x0B56, 0x0DD9, 0x0DCF, 0x0DCA, 0x1025, 0x102E,
                                          0x1B05, 0x1B35, 0x3099, 0x304B, 0xFB01, 0x2460, 0x00A8, 0x0F73, 0x0F71, 0x0F72, 0x1D15E,
                                          0x2FA1D, 0x4E2D, 0x1F642, 0x0958, 0x2ADC, 0x0344, 0x0385, 0x1FEE, 0x03A5, 0x03D2};
    for (const Form& f : k_forms) {
        SCOPED_TRACE(f.name);
        auto norm = tok::make_normalizer(json{{"type", f.name}}, "test");
        size_t checked = 0, failures = 0;
        auto check = [&](const std::string& s) {
            std::string ours = s;
            norm->normalize(ours);
            std::string want = utf8proc_whole(s, f.options);
            if (ours != want && failures++ < 5) ADD_FAILURE() << "normalizing " << ::testing::PrintToString(s);
            ++checked;
        };
        for (char32_t cp = 0x80; cp < 0x30000; ++cp) {
            if (cp >= 0xD800 && cp <= 0xDFFF) continue;
            check(cps({'e', cp, 0x301, cp, 0x1161, cp, 'A'}));
        }
        for (char32_t cp = 0x30000; cp < 0x110000; cp += 0x3FF) check(cps({'a', cp, 0x308}));
        std::mt19937 rng(99);
        for (int t = 0; t < 20000; ++t) {
            std::string s;
            for (int k = 0, n = static_cast<int>(rng() % 12); k < n; ++k) tok::utf8_append(s, tricky[rng() % tricky.size()]);
            check(s);
        }
        EXPECT_EQ(failures, 0u) << "of " << checked;
    }
}

// The normalizer's tables stop at U+30000 and treat what lies above as needing utf8proc; that is
// exact only if no character above decomposes into ones below (which could then compose).
TEST(TokenizerNormalizer, NothingAboveTheTablesDecomposes) {
    utf8proc_int32_t buf[8];
    for (utf8proc_int32_t cp = 0x30000; cp < 0x110000; ++cp) {
        int bound = 0;
        utf8proc_ssize_t n = utf8proc_decompose_char(cp, buf, 8, static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT), &bound);
        ASSERT_TRUE(n == 1 && buf[0] == cp) << "U+" << std::hex << cp;
    }
}

// key -> ids that identify it, of a length that varies with the key.
std::vector<int32_t> ids_for(int key) {
    std::vector<int32_t> ids;
    for (int k = 0; k <= key % 5; ++k) ids.push_back(key * 100 + k);
    return ids;
}

TEST(WordCache, FindsWhatWasInsertedAndNeverAnotherKeysIds) {
    tok::WordCache cache(8);  // tiny: constant evictions
    std::vector<std::string> keys;
    for (int k = 0; k < 40; ++k) keys.push_back("word" + std::to_string(k) + std::string(static_cast<size_t>(k % 7), 'x'));
    {
        std::vector<int32_t> out;
        auto ids = ids_for(3);
        cache.insert(tok::WordCache::hash(keys[3]), keys[3], false, ids.data(), ids.size());
        ASSERT_TRUE(cache.find(tok::WordCache::hash(keys[3]), keys[3], false, out));
        EXPECT_EQ(out, ids);
        EXPECT_FALSE(cache.find(tok::WordCache::hash(keys[3]), keys[3], true, out));  // raw bytes: another key space
        std::string long_key(60, 'z');
        cache.insert(tok::WordCache::hash(long_key), long_key, false, ids.data(), ids.size());
        EXPECT_FALSE(cache.find(tok::WordCache::hash(long_key), long_key, false, out));
    }
    std::atomic<size_t> hits{0}, wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            std::mt19937 rng(static_cast<uint32_t>(t));
            std::vector<int32_t> out;
            for (int i = 0; i < 200000; ++i) {
                int k = static_cast<int>(rng() % keys.size());
                uint64_t h = tok::WordCache::hash(keys[static_cast<size_t>(k)]);
                out.clear();
                if (cache.find(h, keys[static_cast<size_t>(k)], false, out)) {
                    ++hits;
                    if (out != ids_for(k)) ++wrong;
                } else {
                    auto ids = ids_for(k);
                    cache.insert(h, keys[static_cast<size_t>(k)], false, ids.data(), ids.size());
                }
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0u);
    EXPECT_GT(hits.load(), 0u);
}

// SentencePiece-style model without a pre-tokenizer: the whole text is one piece, which the BPE
// model cuts in front of "▁" only where no merge result contains the character before it + "▁".
std::unique_ptr<Tokenizer> spm_model(bool with_unk) {
    const std::string m = "\xE2\x96\x81";  // ▁
    json vocab = {{m, 0}, {"a", 1}, {"b", 2}, {"x", 3}, {"a" + m, 4}, {"a" + m + "b", 5}, {m + "b", 6}, {"b" + m, 7}};
    if (with_unk) vocab["<unk>"] = 8;
    json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a " + m, "a" + m + " b", m + " b"}}};
    if (with_unk) model["unk_token"] = "<unk>";
    json tj = {{"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", m}}}, {"model", model}};
    return Tokenizer::from_hf(tj.dump(), "", "spm-test");
}

TEST(BpeModel, SplitsOnlyWhereNoMergeCrosses) {
    auto tok = spm_model(true);
    // "a▁" is a merge result: no cut after "a". Merges in rank order over the whole piece:
    // x a ▁ b ▁ a ▁ b -> x a▁ b ▁ a▁ b -> x a▁b ▁ a▁b.
    EXPECT_EQ(tok->encode("xa b a b", false), (std::vector<int32_t>{3, 5, 0, 5}));
    // After "b" a cut is safe ("b▁" is a token but no merge makes it): b | ▁b -> b ▁b.
    EXPECT_EQ(tok->encode("b b", false), (std::vector<int32_t>{2, 6}));
    // An unknown character before "▁" becomes <unk>, which no merge involves: safe to cut.
    EXPECT_EQ(tok->encode("a\xC3\xA9 b", false), (std::vector<int32_t>{1, 8, 6}));
    // Without an unk token the unknown character vanishes and "a" meets "▁": no cut there.
    auto no_unk = spm_model(false);
    EXPECT_EQ(no_unk->encode("a\xC3\xA9 b", false), (std::vector<int32_t>{5}));
}

// Long random texts (one piece each, so both cut rules apply) against a naive BPE over the whole
// piece: merges crossing "▁" and other character pairs, unknown characters fused into <unk>.
TEST(BpeModel, CutsMatchMergingTheWholePiece) {
    const std::string m = "\xE2\x96\x81";  // ▁
    // Tokens by id; merges in rank order as (left, right) token strings.
    std::vector<std::string> tokens = {"<unk>", m, "a", "b", "x"};
    const std::vector<std::pair<std::string, std::string>> merges = {
        {"a", m}, {m, "b"}, {"b", "x"}, {"a" + m, "b"}, {"x", "x"}, {"bx", "a"}, {m + "b", m}, {"xx", "x"}, {"a", "a"}};
    json vocab = json::object(), merge_list = json::array();
    for (const auto& [l, r] : merges) {
        if (std::find(tokens.begin(), tokens.end(), l + r) == tokens.end()) tokens.push_back(l + r);
        merge_list.push_back(l + " " + r);
    }
    for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
    json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}, {"unk_token", "<unk>"}, {"fuse_unk", true}};
    json tj = {{"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", m}}}, {"model", model}};
    auto tok = Tokenizer::from_hf(tj.dump(), "", "cuts-test");

    auto naive = [&](const std::string& text) {  // text already has "▁" for spaces
        std::vector<std::string> sym;
        for (size_t i = 0; i < text.size();) {
            size_t n = tok::utf8_char_len(text, i);
            std::string ch = text.substr(i, n);
            i += n;
            bool known = std::find(tokens.begin(), tokens.end(), ch) != tokens.end();
            if (!known && !sym.empty() && sym.back() == "<unk>") continue;  // fuse_unk
            sym.push_back(known ? ch : "<unk>");
        }
        for (;;) {
            size_t best = sym.size(), best_rank = merges.size();
            for (size_t i = 0; i + 1 < sym.size(); ++i)
                for (size_t r = 0; r < best_rank; ++r)
                    if (merges[r].first == sym[i] && merges[r].second == sym[i + 1]) best = i, best_rank = r;
            if (best == sym.size()) break;
            sym[best] += sym[best + 1];
            sym.erase(sym.begin() + static_cast<ptrdiff_t>(best) + 1);
        }
        std::vector<int32_t> ids;
        for (const auto& t : sym) ids.push_back(static_cast<int32_t>(std::find(tokens.begin(), tokens.end(), t) - tokens.begin()));
        return ids;
    };
    std::mt19937 rng(17);
    const char* alphabet[] = {"a", "b", "x", " ", "z", "\xC3\xA9"};  // z, é: unknown
    for (int t = 0; t < 400; ++t) {
        std::string text, spaced;
        for (int k = 0, n = 20 + static_cast<int>(rng() % 100); k < n; ++k) text += alphabet[rng() % (t % 2 ? 6 : 4)];
        for (char c : text) spaced += c == ' ' ? m : std::string(1, c);
        ASSERT_EQ(tok->encode(text, false), naive(spaced)) << "text '" << text << "'";
    }
}

// GPT-2 style ByteLevel pre-tokenizer (prefix space, its own regex), which hands the model raw
// bytes to map: ids as worked out by hand, and the same when a later stage forces the mapping.
TEST(BpeModel, ByteLevelWithPrefixSpaceAndRegex) {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) {
        std::string s;
        tok::utf8_append(s, tok::byte_to_char(static_cast<uint8_t>(b)));
        vocab[s] = b;  // id = byte value
    }
    vocab["\xC4\xA0H"] = 256;  // "ĠH"
    vocab["\xC4\xA0w"] = 257;  // "Ġw"
    json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"\xC4\xA0 H", "\xC4\xA0 w"}}};
    json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
    auto gpt2 = Tokenizer::from_hf(json{{"pre_tokenizer", byte_level}, {"model", model}}.dump(), "", "gpt2-test");
    // " Hello" " " " world" "!" (the prefix space added; "\s+(?!\S)" leaves one space to " world")
    const std::vector<int32_t> want = {256, 'e', 'l', 'l', 'o', ' ', 257, 'o', 'r', 'l', 'd', '!'};
    EXPECT_EQ(gpt2->encode("Hello  world!", false), want);
    EXPECT_EQ(gpt2->encode("Hello  world!", false), want);  // again, from the cache
    json seq = {{"type", "Sequence"},
                {"pretokenizers", {byte_level, {{"type", "Split"}, {"pattern", {{"String", "#"}}}, {"behavior", "Isolated"}}}}};
    auto mapped_first = Tokenizer::from_hf(json{{"pre_tokenizer", seq}, {"model", model}}.dump(), "", "gpt2-seq-test");
    EXPECT_EQ(mapped_first->encode("Hello  world!", false), want);
    EXPECT_EQ(mapped_first->encode("Hello  world!", false), want);
}

TEST(Tokenizer, ConcurrentEncodeEqualsSingleThread) {
    auto tok = Tokenizer::load(std::string(TT_SHARED_DIR) + "/models/tinystories-656k");
    auto spm = spm_model(true);
    std::mt19937 rng(5);
    const char* words[] = {"Once", " upon", " a", " time", ",", " Lily", " saw", " 字", " ñ", "  ", "\n", "🙂", " the", " dog", "."};
    std::vector<std::string> texts;
    for (int t = 0; t < 300; ++t) {
        std::string s;
        for (int k = 0, n = static_cast<int>(rng() % 60); k < n; ++k) s += words[rng() % 15];
        texts.push_back(s);
    }
    std::vector<std::vector<int32_t>> want, want_spm;
    {
        auto fresh = Tokenizer::load(std::string(TT_SHARED_DIR) + "/models/tinystories-656k");  // its own cache
        for (const auto& s : texts) want.push_back(fresh->encode(s, true)), want_spm.push_back(spm_model(true)->encode(s, false));
    }
    std::atomic<size_t> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int rep = 0; rep < 5; ++rep)
                for (size_t i = 0; i < texts.size(); ++i) {
                    size_t k = (i * 7 + static_cast<size_t>(t) * 13 + static_cast<size_t>(rep)) % texts.size();
                    if (tok->encode(texts[k], true) != want[k]) ++wrong;
                    if (spm->encode(texts[k], false) != want_spm[k]) ++wrong;
                }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0u);
}

}  // namespace
