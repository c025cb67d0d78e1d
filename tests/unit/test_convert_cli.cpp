// `verify` checks an archive the way `run` will use it (it used to say OK for archives `run`
// rejects): archives converted here and then edited in their metadata (checksum re-sealed, which
// needs XXH3, hence C++ rather than an e2e script) are given to the CLI binary; verify must fail
// like run, naming the archive, and --json must report every check on stdout.
#include "test_convert_util.h"

#include "convert/convert.h"
#include "core/hash.h"
#include "format/archive.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

using namespace tt;
using namespace tt::test;

namespace {

struct CliResult {
    int rc = -1;
    std::string out, err;
};

// Runs the thintensor binary with `args` (already shell-quoted), capturing stdout and stderr.
CliResult cli(const TempDir& tmp, const std::string& args) {
    const fs::path out = tmp / "stdout", err = tmp / "stderr";
    const std::string cmd = fmt::format("'{}' {} >'{}' 2>'{}'", TT_BINARY, args, out.string(), err.string());
    const int status = std::system(cmd.c_str());
    CliResult r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(out.string());
    r.err = read_file(err.string());
    return r;
}

std::string q(const fs::path& p) { return fmt::format("'{}'", p.string()); }

// `src` with its metadata edited and re-sealed (size, checksum, file size in the header).
void write_edited(const fs::path& src, const fs::path& dst, const std::function<void(nlohmann::json&)>& edit) {
    const std::string bytes = read_file(src.string());
    ThinHeader h;
    std::memcpy(&h, bytes.data(), sizeof h);
    nlohmann::json meta = nlohmann::json::parse(bytes.substr(h.meta_offset, h.meta_size));
    edit(meta);
    const std::string text = meta.dump();
    std::string out = bytes.substr(0, h.meta_offset) + text;
    h.meta_size = text.size();
    h.meta_xxh3 = xxh3_64(text.data(), text.size());
    h.file_size = out.size();
    std::memcpy(out.data(), &h, sizeof h);
    std::ofstream(dst, std::ios::binary | std::ios::trunc).write(out.data(), std::streamsize(out.size()));
}

class VerifyCli : public ::testing::Test {
protected:
    void SetUp() override { convert_hf((shared_dir() / "models/tinystories-656k").string(), good_.string(), {}); }
    TempDir tmp_;
    fs::path good_ = tmp_ / "good.thin";
    fs::path bad_ = tmp_ / "bad.thin";
};

TEST_F(VerifyCli, GoodArchivePassesEveryCheckAndJsonSaysSo) {
    CliResult r = cli(tmp_, "-q verify " + q(good_));
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find(": OK ("), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tokenizer hf (2048 tokens)"), std::string::npos) << r.out;
    r = cli(tmp_, "-q verify --json " + q(good_));
    ASSERT_EQ(r.rc, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["path"], good_.string());
    EXPECT_EQ(j["ok"], true);
    std::vector<std::string> names;
    for (const auto& c : j["checks"]) {
        names.push_back(c["name"]);
        EXPECT_EQ(c["ok"], true) << c.dump();
    }
    EXPECT_EQ(names, (std::vector<std::string>{"open", "spec", "weights", "checksums", "tokenizer"}));
    EXPECT_EQ(j["checks"][4]["kind"], "hf");
    EXPECT_EQ(j["checks"][4]["vocab_size"], 2048);
}

// Each edit makes an archive `run` refuses; verify used to print OK for all of them.
TEST_F(VerifyCli, RefusesWhatRunRefusesNamingTheArchive) {
    struct Case {
        const char* what;
        std::function<void(nlohmann::json&)> edit;
        const char* needle;
        const char* failed_check;
    };
    const Case cases[] = {
        {"inconsistent spec", [](nlohmann::json& m) { m["spec"]["n_kv_heads"] = 3; }, ": spec: num_attention_heads 8 is not a multiple", "spec"},
        {"wrongly typed spec", [](nlohmann::json& m) { m["spec"]["rope"]["theta"] = "1e4"; }, ": spec: 'rope.theta' must be a number, got \"1e4\"", "spec"},
        {"unknown tokenizer kind", [](nlohmann::json& m) { m["tokenizer"]["kind"] = "sentencepiece"; }, ": unknown tokenizer kind 'sentencepiece'", "tokenizer"},
        {"kind without its file", [](nlohmann::json& m) { m["tokenizer"]["kind"] = "llama2c"; }, "tokenizer kind 'llama2c' but no embedded tok512.bin", "tokenizer"},
        {"spec wider than the weights", [](nlohmann::json& m) { m["spec"]["ffn_dim"] = 64; }, "ffn", "weights"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        write_edited(good_, bad_, c.edit);
        const CliResult v = cli(tmp_, "verify --json " + q(bad_));
        EXPECT_EQ(v.rc, 1);
        EXPECT_NE(v.err.find("thintensor: error: " + bad_.string()), std::string::npos) << v.err;
        EXPECT_NE(v.err.find(c.needle), std::string::npos) << v.err;
        EXPECT_EQ(v.err.find("more failed check"), std::string::npos) << v.err;  // dependents are skipped
        const nlohmann::json j = nlohmann::json::parse(v.out);  // the results still come on stdout
        EXPECT_EQ(j["ok"], false);
        for (const auto& ch : j["checks"])
            if (ch["name"] == c.failed_check) {
                EXPECT_EQ(ch["ok"], false) << ch.dump();
            }
        // run refuses the same archive (before any generation).
        const CliResult r = cli(tmp_, "run " + q(bad_) + " -p hi -n 1 --device cpu");
        EXPECT_NE(r.rc, 0);
        if (std::string(c.failed_check) != "weights") {
            EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
        }
    }
}

TEST_F(VerifyCli, InspectNamesTheArchiveInSpecErrors) {
    write_edited(good_, bad_, [](nlohmann::json& m) { m["spec"]["activation"] = "relu"; });
    const CliResult r = cli(tmp_, "inspect " + q(bad_));
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.err.find(bad_.string() + ": spec: unknown activation 'relu'"), std::string::npos) << r.err;
}

}  // namespace
