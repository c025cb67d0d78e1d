// The pieces of `thintensor pull` that need no server: SHA-256 against the FIPS 180-4 / NIST test
// vectors and against the Hub's sha256 of the shared model, repo ids, the cache layout, the
// download set, file-name safety, model-info parsing, token lookup and the same-origin rule that
// keeps the token off CDN hosts. The downloads themselves are tested end to end in
// tests/e2e/pull*.sh and cache_*.sh against tests/e2e/mock_hub.py. Also here: the temporary-file
// table, sweep and lock files of core/output_file.h that keep the cache clean after a kill.
#include "core/error.h"
#include "core/output_file.h"
#include "hub/http.h"
#include "hub/hub.h"
#include "hub/sha256.h"
#include "runtime/model_source.h"

#include <sys/file.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using namespace tt;
using namespace tt::hub;

namespace {

// Sets an environment variable for one test and restores it afterwards.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* v = std::getenv(name)) old_ = v, had_ = true;
        if (value) ::setenv(name, value, 1);
        else ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (had_) ::setenv(name_, old_.c_str(), 1);
        else ::unsetenv(name_);
    }

private:
    const char* name_;
    std::string old_;
    bool had_ = false;
};

std::string temp_dir(const std::string& name) {
    const auto d = std::filesystem::temp_directory_path() / ("tt_test_hub_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d.string();
}

}  // namespace

TEST(Sha256, NistVectors) {
    // FIPS 180-4 examples (NIST CSRC "SHA256.pdf", "SHA2_Additional.pdf").
    EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopq"
                         "rsmnopqrstnopqrstu"),
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    // Padding edge cases: 55 bytes fit the length in one block, 56 and 64 need a second one.
    EXPECT_EQ(sha256_hex(std::string(55, 'a')), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    EXPECT_EQ(sha256_hex(std::string(56, 'a')), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
    EXPECT_EQ(sha256_hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(Sha256, StreamingInAnyChunksMatchesOneShot) {
    std::string data;
    for (int i = 0; i < 5000; ++i) data += char(i * 131 + 7);
    const std::string whole = sha256_hex(data);
    for (size_t chunk : {1u, 3u, 63u, 64u, 65u, 1000u}) {
        Sha256 h;
        for (size_t i = 0; i < data.size(); i += chunk) h.update(data.data() + i, std::min(chunk, data.size() - i));
        EXPECT_EQ(h.hex_digest(), whole) << "chunk " << chunk;
    }
}

TEST(Sha256, FileMatchesSha256sum) {
    // What coreutils' `sha256sum` gives for this file: the value an LFS pointer would carry.
    EXPECT_EQ(sha256_file_hex(std::string(TT_SHARED_DIR) + "/models/tinystories-656k/model.safetensors"),
              "187d0d5e8360d9625e40e0b35ec57d1ef0eea1a60ddcf09412246bed3484852f");
    EXPECT_THROW(sha256_file_hex("/nonexistent/file"), Error);
}

TEST(Hub, ParsesRepoIds) {
    auto r = parse_repo_ref("Qwen/Qwen3-0.6B");
    EXPECT_EQ(r.repo, "Qwen/Qwen3-0.6B");
    EXPECT_EQ(r.revision, "main");
    r = parse_repo_ref("org/name:v1.0", "main");
    EXPECT_EQ(r.repo, "org/name");
    EXPECT_EQ(r.revision, "v1.0");
    EXPECT_EQ(parse_repo_ref("org/name", "dev").revision, "dev");
    EXPECT_EQ(parse_repo_ref("org/name:refs/pr/3").revision, "refs/pr/3");
    for (const char* bad : {"name", "/name", "org/", "org/na me", "org/-x", "org/x.", "org/a--b", "org/a..b",
                            "a/b/c", "org/name:", "org/name:..", "org/name:a b", "../x"})
        EXPECT_THROW(parse_repo_ref(bad), Error) << bad;
}

TEST(Hub, LooksLikeRepoIdUnlessALocalPathExists) {
    EXPECT_TRUE(looks_like_repo_id("Qwen/Qwen3-0.6B"));
    EXPECT_TRUE(looks_like_repo_id("meta-llama/Llama-3.2-1B:main"));
    EXPECT_FALSE(looks_like_repo_id("model.thin"));
    EXPECT_FALSE(looks_like_repo_id("/abs/path"));
    EXPECT_FALSE(looks_like_repo_id("./org/name"));
    // "tests/unit" is ORG/NAME-shaped, but it is a folder here: a local path wins.
    const std::string cwd = std::filesystem::current_path().string();
    std::filesystem::current_path(TT_SOURCE_DIR);
    EXPECT_FALSE(looks_like_repo_id("tests/unit"));
    EXPECT_TRUE(looks_like_repo_id("tests/nothing-here"));
    std::filesystem::current_path(cwd);
    // ORG/NAME-shaped, but a file name: a mistyped path, not a Hub id.
    for (const char* file : {"sub/ts.thin", "org/model.safetensors", "org/config.json", "org/m.gguf"})
        EXPECT_FALSE(looks_like_repo_id(file)) << file;
}

TEST(Hub, PathLikeModelArgumentsAreNotHubIds) {
    for (const char* p : {"sub/ts.thin", "./org/name", "../org/name", "/org/name", "~/org/name", "a/b/c", "x.json", "."})
        EXPECT_TRUE(looks_like_path(p)) << p;
    for (const char* id : {"Qwen/Qwen3-0.6B", "org/name:main", "org/Qwen2.5-0.5B", "org/name:refs/pr/3"})
        EXPECT_FALSE(looks_like_path(id)) << id;
    // A missing path-like MODEL fails at once, naming it, without any network.
    try {
        fetch_model("sub/ts.thin");
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "sub/ts.thin: no such model file or directory");
    }
}

TEST(TempFiles, NamesCarryThePid) {
    long pid = -1;
    EXPECT_TRUE(is_temp_file_name("m.thin.tmp.1234.AbC123", &pid));
    EXPECT_EQ(pid, 1234);
    EXPECT_TRUE(is_temp_file_name("m.thin.tmp.AbC123", &pid));  // an older ThinTensor's, no pid
    EXPECT_EQ(pid, 0);
    for (const char* not_temp : {"m.thin", "m.thin.tmp.", "m.thin.tmp.12x.AbC123", "m.thin.tmp.1.AbC", ".tmp.123456", "m.tmp.1234.toolong1"})
        EXPECT_FALSE(is_temp_file_name(not_temp)) << not_temp;
    const std::string dir = temp_dir("names");
    OutputFile f(dir + "/out.bin");
    const std::string name = std::filesystem::path(f.temp_path()).filename().string();
    EXPECT_TRUE(is_temp_file_name(name, &pid)) << name;
    EXPECT_EQ(pid, ::getpid());
    EXPECT_EQ(n_live_temp_files(), 1);
}

TEST(TempFiles, SweepRemovesOnlyWhatNoLiveWriterHolds) {
    const std::string dir = temp_dir("sweep");
    const pid_t child = ::fork();
    if (child == 0) _exit(0);
    ::waitpid(child, nullptr, 0);  // a pid that is no longer alive
    auto touch = [&](const std::string& name) {
        std::ofstream(dir + "/" + name) << "x";
        return dir + "/" + name;
    };
    const std::string dead = touch("a.thin.tmp." + std::to_string(child) + ".AAAAAA");
    const std::string fresh_live = touch("b.thin.tmp." + std::to_string(::getppid()) + ".BBBBBB");
    const std::string other = touch("c.thin");
    OutputFile writing(dir + "/d.thin");  // a live writer: locked
    // Held locked by another open file description, as a writer in another process would.
    const std::string held = touch("e.thin.tmp." + std::to_string(child) + ".EEEEEE");
    const int fd = ::open(held.c_str(), O_RDONLY);
    ASSERT_EQ(::flock(fd, LOCK_EX), 0);
    // `list` reports as leftovers exactly what the sweep would remove.
    EXPECT_TRUE(is_stale_temp_file(dead));
    for (const auto& p : {fresh_live, other, writing.temp_path(), held}) EXPECT_FALSE(is_stale_temp_file(p)) << p;
    const auto removed = sweep_stale_temp_files(dir);
    EXPECT_EQ(removed, std::vector<std::string>{dead});
    for (const auto& kept : {fresh_live, other, writing.temp_path(), held})
        EXPECT_TRUE(std::filesystem::exists(kept)) << kept;
    ::close(fd);
    EXPECT_EQ(sweep_stale_temp_files(dir, "x"), std::vector<std::string>{});  // the prefix filters
    EXPECT_EQ(sweep_stale_temp_files(dir, "e.thin"), std::vector<std::string>{held});
}

TEST(TempFiles, LockFilesAreRemovedByTheirHolderAndSweptWhenStale) {
    const std::string dir = temp_dir("locks");
    {
        LockFile lock(dir + "/m.lock");
        EXPECT_TRUE(std::filesystem::exists(dir + "/m.lock"));
        EXPECT_EQ(LockFile::try_acquire(dir + "/m.lock"), nullptr);  // flock is per open file: held
        EXPECT_EQ(sweep_stale_lock_files(dir), std::vector<std::string>{});
    }
    EXPECT_FALSE(std::filesystem::exists(dir + "/m.lock"));
    std::ofstream(dir + "/stale.lock").put('\n');
    EXPECT_EQ(sweep_stale_lock_files(dir), std::vector<std::string>{dir + "/stale.lock"});
    EXPECT_NE(LockFile::try_acquire(dir + "/n.lock"), nullptr);
    EXPECT_FALSE(std::filesystem::exists(dir + "/n.lock"));
}

TEST(Hub, CacheLayout) {
    EXPECT_EQ(model_dir_name({"Qwen/Qwen3-0.6B", "main"}), "Qwen--Qwen3-0.6B");
    EXPECT_EQ(model_dir_name({"org/name", "v1.0"}), "org--name--v1.0");
    EXPECT_EQ(model_dir_name({"org/name", "refs/pr/3"}), "org--name--refs_pr_3");
    {
        ScopedEnv home("HOME", "/home/u"), tt_home("THINTENSOR_HOME", nullptr), xdg("XDG_CACHE_HOME", nullptr);
        EXPECT_EQ(cache_root(""), "/home/u/.cache/thintensor/models");
        EXPECT_EQ(cache_root("/tmp/c/"), "/tmp/c/");
        EXPECT_EQ(model_dir({"a/b", "main"}, "/tmp/c"), "/tmp/c/a--b");
    }
    {
        ScopedEnv tt_home("THINTENSOR_HOME", "/data/tt");
        EXPECT_EQ(cache_root(""), "/data/tt/models");
        EXPECT_EQ(cache_root("/x"), "/x");  // --cache-dir wins
    }
}

TEST(Hub, DefaultDownloadSetAndFilters) {
    const std::vector<std::string> none;
    for (const char* yes : {"model.safetensors", "model-00001-of-00002.safetensors", "model.safetensors.index.json",
                            "config.json", "tokenizer.json", "tokenizer.model", "sub/tokenizer.model",
                            "chat_template.jinja", "merges.txt", "vocab.txt"})
        EXPECT_TRUE(is_selected(yes, none, none)) << yes;
    for (const char* no : {"pytorch_model.bin", "model.pt", "model.gguf", "model.onnx", "README.md", ".gitattributes",
                           "tokenizer.model.v3", "flax_model.msgpack"})
        EXPECT_FALSE(is_selected(no, none, none)) << no;
    // --include adds; '*' crosses '/' as in the Hub's allow_patterns.
    EXPECT_TRUE(is_selected("pytorch_model.bin", {"*.bin"}, none));
    EXPECT_TRUE(is_selected("onnx/model.onnx", {"onnx/*"}, none));
    EXPECT_TRUE(is_selected("original/consolidated.00.pth", {"*.pth"}, none));
    // --exclude wins over the defaults and over --include.
    EXPECT_FALSE(is_selected("original/params.json", none, {"original/*"}));
    EXPECT_FALSE(is_selected("model.bin", {"*.bin"}, {"*.bin"}));
}

TEST(Hub, FileNamesCannotLeaveTheModelFolder) {
    for (const char* ok : {"config.json", "sub/dir/file.txt", "a..b.json", ".hidden.json"})
        EXPECT_TRUE(is_safe_relative_path(ok)) << ok;
    for (const char* bad : {"", "/etc/passwd", "../x.json", "a/../../x.json", "a/..", "./x.json", "a//b.json",
                            "a/", "a\\..\\b.json", "x.json.incomplete", ".thintensor-manifest.json", "a\nb.json"})
        EXPECT_FALSE(is_safe_relative_path(bad)) << bad;
}

TEST(Hub, ParsesModelInfo) {
    const std::string sha = "187d0d5e8360d9625e40e0b35ec57d1ef0eea1a60ddcf09412246bed3484852f";
    const std::string json = R"({"id": "o/n", "sha": "b2bcce9a8e94e1ea850ae484776b4806fa739a0d", "siblings": [
        {"rfilename": "config.json", "size": 649, "blobId": "896d017152378430abdad3905fa8c571f32c5af7"},
        {"rfilename": "model.safetensors", "size": 2626168, "blobId": "x",
         "lfs": {"sha256": ")" + sha + R"(", "size": 2626168, "pointerSize": 134}}]})";
    const RepoInfo info = parse_repo_info(json, "test");
    EXPECT_EQ(info.commit, "b2bcce9a8e94e1ea850ae484776b4806fa739a0d");
    ASSERT_EQ(info.files.size(), 2u);
    EXPECT_EQ(info.files[0].path, "config.json");
    EXPECT_EQ(info.files[0].size, 649u);
    EXPECT_EQ(info.files[0].blob_id, "896d017152378430abdad3905fa8c571f32c5af7");
    EXPECT_EQ(info.files[0].lfs_sha256, "");
    EXPECT_EQ(info.files[1].lfs_sha256, sha);
    EXPECT_EQ(info.files[1].size, 2626168u);

    for (const char* bad : {"[]", "not json", R"({"siblings": []})", R"({"sha": "../x", "siblings": []})",
                            R"({"sha": "ab"})", R"({"sha": "ab", "siblings": [{"size": 1}]})",
                            R"({"sha": "ab", "siblings": [{"rfilename": "a.json"}]})",
                            R"({"sha": "ab", "siblings": [{"rfilename": "a", "size": 1, "lfs": {"sha256": "zz"}}]})"})
        EXPECT_THROW(parse_repo_info(bad, "test"), Error) << bad;
    try {
        parse_repo_info(R"({"sha": "ab", "siblings": [{"rfilename": "a.json"}]})", "http://hub/api");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("http://hub/api: a.json has no \"size\""), std::string::npos) << e.what();
    }
}

TEST(Hub, EndpointAndToken) {
    const std::string dir = temp_dir("token");
    ScopedEnv ep("HF_ENDPOINT", "https://mirror.example/ "), token("HF_TOKEN", nullptr),
        token_path("HF_TOKEN_PATH", nullptr), hf_home("HF_HOME", dir.c_str());
    EXPECT_EQ(endpoint(), "https://mirror.example");
    {
        ScopedEnv bad("HF_ENDPOINT", "mirror.example");
        EXPECT_THROW(endpoint(), Error);
    }
    {
        ScopedEnv unset("HF_ENDPOINT", nullptr);
        EXPECT_EQ(endpoint(), "https://huggingface.co");
    }
    EXPECT_EQ(find_token(), "");  // no HF_TOKEN, no token file
    std::ofstream(dir + "/token") << "hf_from_file\n";
    EXPECT_EQ(find_token(), "hf_from_file");
    {
        ScopedEnv env_token("HF_TOKEN", " hf_from_env ");
        EXPECT_EQ(find_token(), "hf_from_env");  // HF_TOKEN wins over the file
    }
    std::ofstream(dir + "/other") << "hf_other";
    {
        ScopedEnv path(("HF_TOKEN_PATH"), (dir + "/other").c_str());
        EXPECT_EQ(find_token(), "hf_other");
    }
    std::filesystem::remove_all(dir);
}

TEST(Http, TokenOnlyToTheSameOrigin) {
    EXPECT_TRUE(same_origin("https://huggingface.co/org/x/resolve/main/a", "https://huggingface.co"));
    EXPECT_TRUE(same_origin("https://HuggingFace.co:443/api", "https://huggingface.co"));
    EXPECT_TRUE(same_origin("http://127.0.0.1:8080/a", "http://127.0.0.1:8080"));
    EXPECT_FALSE(same_origin("https://cdn-lfs.huggingface.co/repos/x", "https://huggingface.co"));
    EXPECT_FALSE(same_origin("http://huggingface.co/a", "https://huggingface.co"));  // downgrade
    EXPECT_FALSE(same_origin("http://127.0.0.2:8080/a", "http://127.0.0.1:8080"));
    EXPECT_FALSE(same_origin("http://127.0.0.1:8081/a", "http://127.0.0.1:8080"));
    EXPECT_FALSE(same_origin("https://huggingface.co.evil.com/a", "https://huggingface.co"));
    EXPECT_FALSE(same_origin("https://huggingface.co@evil.com/a", "https://huggingface.co"));
    EXPECT_FALSE(same_origin("not a url", "https://huggingface.co"));
}

TEST(Http, UrlEncoding) {
    EXPECT_EQ(url_encode("sub dir/a+b#c.json", true), "sub%20dir/a%2Bb%23c.json");
    EXPECT_EQ(url_encode("refs/pr/1", false), "refs%2Fpr%2F1");
    EXPECT_EQ(url_encode("Qwen3-0.6B_x~", false), "Qwen3-0.6B_x~");
}

TEST(Hub, ManifestRoundTripAndDamage) {
    const std::string dir = temp_dir("manifest");
    EXPECT_FALSE(read_manifest(dir).has_value());
    std::ofstream(dir + "/" + k_manifest_name) << R"({"repo": "o/n", "revision": "main", "commit": "ab",
        "complete": true, "files": [{"path": "config.json", "size": 3, "sha256": "x", "lfs": false}]})";
    const auto m = read_manifest(dir);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->repo, "o/n");
    EXPECT_TRUE(m->complete);
    ASSERT_EQ(m->files.size(), 1u);
    EXPECT_EQ(m->files[0].size, 3u);
    // A damaged manifest, or one naming a file outside the folder, is ignored (the pull redoes it).
    std::ofstream(dir + "/" + k_manifest_name) << R"({"repo": "o/n")";
    EXPECT_FALSE(read_manifest(dir).has_value());
    std::ofstream(dir + "/" + k_manifest_name) << R"({"repo": "o/n", "revision": "main", "commit": "ab",
        "complete": true, "files": [{"path": "../x", "size": 3}]})";
    EXPECT_FALSE(read_manifest(dir).has_value());
    std::filesystem::remove_all(dir);
}

TEST(Hub, PullRejectsBadArgumentsBeforeAnyNetwork) {
    PullOptions opt;
    opt.cache_dir = temp_dir("args");
    opt.jobs = 0;
    EXPECT_THROW(pull("o/n", opt), Error);
    opt.jobs = 4;
    EXPECT_THROW(pull("not-a-repo", opt), Error);
    std::filesystem::remove_all(opt.cache_dir);
}

namespace {
extern "C" void own_sigint_handler(int sig) {
    // What a command with its own Ctrl-C handler does: end the process only while a file is
    // being written (and then without leaving it behind).
    if (tt::n_live_temp_files() > 0) tt::die_by_signal(sig);
}
}  // namespace

TEST(TempFiles, ACommandsOwnHandlerIsKeptAndCanEndTheProcessCleanly) {
    const std::string dir = temp_dir("own_handler");
    const pid_t child = ::fork();
    if (child == 0) {
        struct sigaction sa {};
        sa.sa_handler = own_sigint_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, nullptr);
        raise(SIGINT);  // nothing being written: the handler returns, the process goes on
        OutputFile f(dir + "/out.bin");
        struct sigaction now {};
        sigaction(SIGINT, nullptr, &now);
        if (now.sa_handler != own_sigint_handler) _exit(3);  // OutputFile must not replace it
        f.write("abc", 3);
        raise(SIGINT);
        _exit(4);  // not reached: die_by_signal ended the process
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
    EXPECT_EQ(WTERMSIG(status), SIGINT);
    EXPECT_TRUE(std::filesystem::is_empty(dir));
}

TEST(Hub, DeeplyNestedAnswersAreRefusedNamingTheSource) {
    // A hostile endpoint's model info: refused by the depth-bounded parser, not a stack overflow.
    const std::string deep = "{\"sha\": \"ab\", \"siblings\": " + std::string(50000, '[') + std::string(50000, ']') + "}";
    try {
        parse_repo_info(deep, "http://hub/api/models/x");
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("http://hub/api/models/x"), std::string::npos) << e.what();
    }
}
