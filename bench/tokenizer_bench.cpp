// Tokenizer throughput: encode and decode MB/s on a few MB of mixed text, single thread, for the
// four reference tokenizers (qwen3, llama3, gemma3, tinystories-656k) and llama2.c's stories260K.
// The text is the 61 reference strings (unicode, CJK, emoji, code, whitespace runs) interleaved
// with generated prose of pseudo-random words, numbers and punctuation, so the word cache does not
// make it trivial. The bound printed beside each figure is a UTF-8 validation pass over the same
// bytes (the least any encoder must do).
//
// Encode and decode are timed in wall-clock and in this thread's CPU time: on a machine shared
// with other work the CPU figure is the steadier one (it leaves out time spent descheduled). The
// load average at the start is printed with the results.
//
// Usage: tokenizer_bench [SHARED_DIR] [MB]   (defaults: $TT_SHARED_DIR or ../shared, 4)
#include "core/output_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

std::string load_average() {
    std::ifstream f("/proc/loadavg");
    std::string a, b, c;
    f >> a >> b >> c;
    return f ? a + " " + b + " " + c : "unknown";
}

std::string xz_decompress(const std::string& path) {
    FILE* p = popen(("xz -dc '" + path + "'").c_str(), "r");
    if (!p) return {};
    std::string out;
    char buf[1 << 16];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
    return out;
}

// Documents of ~64 KiB: reference strings and generated sentences, one per line.
std::vector<std::string> make_corpus(const std::string& shared, size_t total_bytes) {
    std::vector<std::string> refs;
    std::ifstream f(shared + "/fixtures/tokenizer-ref/qwen3.jsonl");
    for (std::string line; std::getline(f, line);) refs.push_back(nlohmann::json::parse(line)["text"]);
    const char* syllables[] = {"ka", "lo", "ri", "the", "an", "mo", "ste", "qu", "ing", "ver", "sa", "tion",
                               "pre", "un", "er", "zi", "ble", "ph", "ou", "ny", "grå", "ñe", "über", "ção"};
    const char* punct[] = {", ", ". ", "; ", " - ", "! ", "? ", " (", ") ", ": ", " \"", "\" "};
    std::mt19937 rng(42);
    std::vector<std::string> docs;
    std::string doc;
    size_t total = 0;
    while (total < total_bytes) {
        if (rng() % 3 == 0) {
            doc += refs[rng() % refs.size()];
        } else {
            for (int w = 0, n = 8 + static_cast<int>(rng() % 20); w < n; ++w) {
                for (int s = 0, k = 1 + static_cast<int>(rng() % 3); s < k; ++s) doc += syllables[rng() % 24];
                doc += rng() % 6 == 0 ? punct[rng() % 11] : " ";
                if (rng() % 15 == 0) doc += std::to_string(rng() % 100000) + " ";
            }
        }
        doc += '\n';
        if (doc.size() >= 64 * 1024) {
            total += doc.size();
            docs.push_back(std::move(doc));
            doc.clear();
        }
    }
    return docs;
}

}  // namespace

int main(int argc, char** argv) {
    const char* env = std::getenv("TT_SHARED_DIR");
    std::string shared = argc > 1 ? argv[1] : env ? env : "../shared";
    double mb = argc > 2 ? std::atof(argv[2]) : 4.0;
    auto docs = make_corpus(shared, static_cast<size_t>(mb * 1e6));
    size_t bytes = 0;
    for (const auto& d : docs) bytes += d.size();

    auto t0 = std::chrono::steady_clock::now();
    size_t invalid = 0;
    for (int rep = 0; rep < 10; ++rep)
        for (const auto& d : docs) invalid += tt::tok::utf8_first_invalid(d).has_value();
    double bound = 10 * bytes / 1e6 / seconds_since(t0);
    fmt::print("load average {}\n", load_average());
    fmt::print("corpus: {} documents, {:.2f} MB; bound (UTF-8 validation pass): {:.0f} MB/s{}\n", docs.size(), bytes / 1e6,
               bound, invalid ? " (invalid!)" : "");
    fmt::print("{:<18} {:>8} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10}\n", "tokenizer", "load s", "encode MB/s",
               "(CPU time)", "decode MB/s", "(CPU time)", "tokens", "bytes/tok");

    struct Source {
        std::string name, json, config, bin;
    };
    std::vector<Source> sources;
    for (std::string n : {"qwen3", "llama3", "gemma3"})
        sources.push_back({n, shared + "/tokenizers/" + n + "/tokenizer.json.xz", shared + "/tokenizers/" + n + "/tokenizer_config.json", ""});
    sources.push_back({"tinystories-656k", shared + "/models/tinystories-656k/tokenizer.json",
                       shared + "/models/tinystories-656k/tokenizer_config.json", ""});
    sources.push_back({"stories260K", "", "", shared + "/models/stories260K/tok512.bin"});

    for (const auto& s : sources) {
        std::string json_text = s.json.empty()                     ? ""
                                : s.json.ends_with(".xz")          ? xz_decompress(s.json)
                                                                   : tt::read_file(s.json);
        auto tl = std::chrono::steady_clock::now();
        auto tok = s.bin.empty() ? tt::Tokenizer::from_hf(json_text, tt::read_file(s.config), s.name)
                                 : tt::Tokenizer::from_llama2c(tt::read_file(s.bin), -1, s.name);
        double load_s = seconds_since(tl);

        std::vector<std::vector<int32_t>> ids;
        auto te = std::chrono::steady_clock::now();
        double ce = thread_cpu_seconds();
        size_t n_tokens = 0;
        for (const auto& d : docs) {
            ids.push_back(tok->encode(d, false));
            n_tokens += ids.back().size();
        }
        double enc_cpu = thread_cpu_seconds() - ce, enc_s = seconds_since(te);
        auto td = std::chrono::steady_clock::now();
        double cd = thread_cpu_seconds();
        size_t out_bytes = 0;
        for (const auto& v : ids) out_bytes += tok->decode(v, false).size();
        double dec_cpu = thread_cpu_seconds() - cd, dec_s = seconds_since(td);
        fmt::print("{:<18} {:>8.2f} {:>12.2f} {:>12.2f} {:>12.2f} {:>12.2f} {:>12} {:>10.2f}\n", s.name, load_s,
                   bytes / 1e6 / enc_s, bytes / 1e6 / enc_cpu, out_bytes / 1e6 / dec_s, out_bytes / 1e6 / dec_cpu, n_tokens,
                   static_cast<double>(bytes) / static_cast<double>(n_tokens));
    }
    return 0;
}
