// `pull`: model-info API -> file selection -> parallel, resumable, verified downloads -> manifest.
// The order of writes is what keeps the cache honest: the manifest is first rewritten with
// "complete": false, every file is downloaded to "<name>.incomplete" and renamed into place only
// after its size (and, for LFS files, sha256) matched what the Hub listed, and the manifest is
// marked complete last. So an interrupted pull never leaves a file or a folder that looks complete.
#include "hub/hub.h"

#include "core/error.h"
#include "core/json.h"
#include "core/log.h"
#include "core/output_file.h"
#include "core/progress.h"
#include "hub/http.h"
#include "hub/pull_progress.h"
#include "hub/sha256.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace tt::hub {

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

std::string trim(std::string s) {
    const auto ws = " \t\r\n";
    const size_t b = s.find_first_not_of(ws);
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

bool is_hex(const std::string& s, size_t n) {
    return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

// One part of a Hub repo id: [A-Za-z0-9_.-], not starting or ending with '-' or '.', no "--" or ".."
// (the Hub's own validation rules).
bool valid_id_part(std::string_view p) {
    if (p.empty() || p.size() > 96) return false;
    for (char c : p)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
    if (p.front() == '-' || p.front() == '.' || p.back() == '-' || p.back() == '.') return false;
    return p.find("--") == std::string_view::npos && p.find("..") == std::string_view::npos;
}

std::string strip_etag(std::string e) {
    if (e.starts_with("W/")) e = e.substr(2);
    if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
    return e;
}

std::string header(const std::map<std::string, std::string>& h, const char* name) {
    const auto it = h.find(name);
    return it == h.end() ? std::string() : it->second;
}

// The Hub's own words on a failed request: X-Error-Message, else {"error": ...} in the body.
std::string server_message(const HttpResponse& r) {
    std::string msg = header(r.headers, "x-error-message");
    if (msg.empty() && !r.body.empty()) {
        json j;
        try {
            j = parse_json(r.body, "the Hub's error answer");
        } catch (const Error&) {
            // Not JSON: the status line and X-Error-Message are all there is to say.
        }
        if (j.is_object() && j.contains("error") && j["error"].is_string()) msg = j["error"].get<std::string>();
    }
    if (msg.size() > 300) msg = msg.substr(0, 300) + "...";
    return msg.empty() ? "" : " (server: " + msg + ")";
}

bool transient_status(long s) { return s == 408 || s == 429 || s >= 500; }

// Sleeps `s` seconds in short slices so that a cancelled pull does not wait out a long backoff.
void backoff_sleep(double s, const std::atomic<bool>* cancel) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
    while (std::chrono::steady_clock::now() < until) {
        if (cancel && cancel->load()) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

double backoff_delay(const PullOptions& opt, int attempt) {
    return std::min(30.0, opt.backoff_s * double(1u << std::min(attempt, 16)));
}

uint64_t file_size_or(const std::string& path, uint64_t dflt) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? uint64_t(st.st_size) : dflt;
}

void make_dirs(const fs::path& p, const std::string& what) {
    std::error_code ec;
    fs::create_directories(p, ec);
    if (ec) fail("{}: cannot create {}: {}", p.string(), what, ec.message());
}

// ordered_json: the manifest reads top-down (repo, revision, commit, then files).
nlohmann::ordered_json manifest_to_json(const Manifest& m) {
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (const auto& f : m.files)
        files.push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}, {"lfs", f.lfs},
                         {"blob_id", f.blob_id}, {"etag", f.etag}});
    return nlohmann::ordered_json{{"format", "thintensor-pull-manifest"}, {"version", 1}, {"repo", m.repo}, {"revision", m.revision},
            {"commit", m.commit}, {"endpoint", m.endpoint}, {"complete", m.complete}, {"include", m.include},
            {"exclude", m.exclude}, {"files", files}};
}

void write_manifest(const std::string& dir, const Manifest& m) {
    write_file_atomic(dir + "/" + k_manifest_name, manifest_to_json(m).dump(2) + "\n");
}

bool cache_complete(const std::optional<Manifest>& m, const RepoRef& ref, const std::string& dir) {
    return m && m->repo == ref.repo && snapshot_complete(*m, dir);
}

// ---- the model-info request ----

// The Hub could not be reached at all (as opposed to answering no): a complete cache may stand in.
class Unreachable : public Error {
public:
    using Error::Error;
};

// `retries` and `connect_timeout_s` are smaller when a complete cached copy can stand in.
RepoInfo fetch_repo_info(HttpClient& http, const RepoRef& ref, const std::string& ep, const std::string& token,
                         const PullOptions& opt, int retries, long connect_timeout_s) {
    const std::string url =
        fmt::format("{}/api/models/{}/revision/{}?blobs=true", ep, ref.repo, url_encode(ref.revision, false));
    for (int attempt = 0;; ++attempt) {
        try {
            HttpRequest req;
            req.url = url;
            req.token = token;
            req.auth_origin = ep;
            req.connect_timeout_s = connect_timeout_s;
            const HttpResponse r = http.get(req);
            if (r.status == 200) return parse_repo_info(r.body, url);
            const std::string code = header(r.headers, "x-error-code");
            const std::string said = server_message(r);
            if (transient_status(r.status)) throw TransientError(fmt::format("{}: HTTP {}{}", url, r.status, said));
            if (r.status == 401) {
                if (!token.empty())
                    fail("{}: the Hub rejected the token (HTTP 401){}: check HF_TOKEN or the token file", ref.repo, said);
                fail("{}: authentication required (HTTP 401){}: the repository is private, gated or does not "
                     "exist; set HF_TOKEN (or log in with `huggingface-cli login`)",
                     ref.repo, said);
            }
            if (r.status == 403)
                fail("{}: access denied (HTTP 403){}: for a gated model, accept its terms at {}/{}", ref.repo, said, ep,
                     ref.repo);
            if (r.status == 404 && code == "RevisionNotFound")
                fail("{}: revision '{}' not found (HTTP 404){}", ref.repo, ref.revision, said);
            if (r.status == 404) fail("{}: repository not found on {} (HTTP 404){}", ref.repo, ep, said);
            fail("{}: unexpected HTTP {} from {}{}", ref.repo, r.status, url, said);
        } catch (const UnreachableError& e) {
            // No name, or nothing listening: a retry a second later finds the same.
            throw Unreachable(fmt::format("{}: cannot reach the Hub at {}: {}", ref.repo, ep, e.what()));
        } catch (const TransientError& e) {
            if (attempt >= retries)
                throw Unreachable(
                    fmt::format("{}: cannot reach the Hub after {} attempts: {}", ref.repo, attempt + 1, e.what()));
            const double d = backoff_delay(opt, attempt);
            log::warn("{}; retrying in {}", e.what(), format_duration(d));
            backoff_sleep(d, nullptr);
        }
    }
}

// ---- one file ----

struct Job {
    RemoteFile file;
    std::string final_path, part_path;
};

struct Shared {
    const PullOptions* opt;
    std::string endpoint, token, repo, commit;
    std::atomic<bool> cancel{false};
    std::atomic<uint64_t> done{0};  // bytes on disk of the files being pulled (for the progress bar)
    PullProgress* progress = nullptr;
    void moved(int64_t delta) {
        const uint64_t now = done.fetch_add(uint64_t(delta)) + uint64_t(delta);
        if (progress) progress->set_bytes(now);
    }
};

void write_all(int fd, const char* p, size_t n, const std::string& path) {
    while (n > 0) {
        const ssize_t w = ::write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) fail("{}: write failed: {} (the partial download is kept for a later resume)", path, std::strerror(errno));
        p += w, n -= size_t(w);
    }
}

// Hashes the first n bytes of an existing partial file, so that a resumed download is verified
// over all of its bytes and not only the ones fetched now.
void hash_prefix(const std::string& path, uint64_t n, Sha256& h) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
    std::vector<char> buf(1u << 20);
    while (n > 0) {
        const ssize_t r = ::read(fd, buf.data(), std::min<uint64_t>(n, buf.size()));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            ::close(fd);
            fail("{}: cannot read the partial download", path);
        }
        h.update(buf.data(), size_t(r));
        n -= uint64_t(r);
    }
    ::close(fd);
}

// One attempt at getting job.part_path complete. Returns the sha256 of its bytes and the ETag;
// throws TransientError for what a retry may fix.
struct Fetched {
    std::string sha256, etag;
    bool resumed = false;
};

Fetched fetch_once(HttpClient& http, Shared& sh, const Job& job) {
    const RemoteFile& f = job.file;
    uint64_t offset = file_size_or(job.part_path, 0);
    if (offset > f.size) {  // a partial file longer than the file: not ours to resume
        sh.moved(-int64_t(offset));
        ::unlink(job.part_path.c_str());
        offset = 0;
    }
    Fetched out;
    out.resumed = offset > 0;
    auto hasher = std::make_unique<Sha256>();
    if (offset > 0) hash_prefix(job.part_path, offset, *hasher);
    if (offset > 0 && offset == f.size) {  // a previous run got every byte but stopped before verifying
        out.sha256 = hasher->hex_digest();
        return out;
    }
    const int fd = ::open(job.part_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) fail("{}: cannot create: {}", job.part_path, std::strerror(errno));
    std::unique_ptr<int, void (*)(int*)> fd_guard(new int(fd), [](int* p) {
        ::close(*p);
        delete p;
    });
    if (::lseek(fd, off_t(offset), SEEK_SET) < 0) fail("{}: seek failed: {}", job.part_path, std::strerror(errno));
    if (offset > 0) log::debug("{}: resuming at byte {} of {}", f.path, offset, f.size);

    uint64_t written = offset;
    HttpRequest req;
    req.url = fmt::format("{}/{}/resolve/{}/{}", sh.endpoint, sh.repo, sh.commit, url_encode(f.path, true));
    req.token = sh.token;
    req.auth_origin = sh.endpoint;
    req.range_start = offset;
    req.cancel = &sh.cancel;
    req.begin = [&](const HttpResponse& head) {
        const std::string commit = header(head.first_headers, "x-repo-commit");
        if (!commit.empty() && commit != sh.commit)
            fail("{}: the Hub served commit {} for a request at commit {}", f.path, commit, sh.commit);
        out.etag = strip_etag(header(head.first_headers, "x-linked-etag"));
        if (out.etag.empty()) out.etag = strip_etag(header(head.first_headers, "etag"));
        if (out.etag.empty()) out.etag = strip_etag(header(head.headers, "etag"));
        if (head.status == 206) {
            // "bytes START-END/TOTAL": the server must resume exactly where the partial file ends.
            const std::string cr = header(head.headers, "content-range");
            if (!cr.starts_with(fmt::format("bytes {}-", offset)))
                throw TransientError(fmt::format("{}: server resumed at the wrong place (Content-Range: '{}')", f.path, cr));
        } else if (offset > 0) {
            // The server ignored the Range (HTTP 200): start over from byte 0.
            log::debug("{}: server ignored the Range request; downloading from the start", f.path);
            if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0)
                fail("{}: cannot truncate: {}", job.part_path, std::strerror(errno));
            sh.moved(-int64_t(offset));
            written = 0;
            hasher = std::make_unique<Sha256>();
            out.resumed = false;
        }
    };
    req.write = [&](const char* data, size_t n) {
        if (written + n > f.size)
            fail("{}: the server sent more than the {} bytes the Hub lists", f.path, f.size);
        write_all(fd, data, n, job.part_path);
        hasher->update(data, n);
        written += n;
        sh.moved(int64_t(n));
    };
    const HttpResponse r = http.get(req);
    if (r.status < 200 || r.status >= 300) {
        const std::string said = server_message(r);
        if (r.status == 416) {  // our partial file does not fit the file any more: restart
            sh.moved(-int64_t(offset));
            ::unlink(job.part_path.c_str());
            throw TransientError(fmt::format("{}: HTTP 416 for a resume at byte {}; restarting", f.path, offset));
        }
        if (transient_status(r.status)) throw TransientError(fmt::format("{}: HTTP {}{}", r.url, r.status, said));
        if (r.status == 401 || r.status == 403)
            fail("{}: HTTP {} downloading {}{}: set HF_TOKEN to a token with access", sh.repo, r.status, f.path, said);
        if (r.status == 404) fail("{}: {} not found at commit {} (HTTP 404){}", sh.repo, f.path, sh.commit, said);
        fail("{}: unexpected HTTP {} downloading {} from {}{}", sh.repo, r.status, f.path, r.url, said);
    }
    if (::fsync(fd) != 0) fail("{}: fsync failed: {}", job.part_path, std::strerror(errno));
    if (written < f.size)
        throw TransientError(fmt::format("{}: connection ended after {} of {} bytes", f.path, written, f.size));
    out.sha256 = hasher->hex_digest();
    return out;
}

ManifestFile download(HttpClient& http, Shared& sh, const Job& job) {
    const RemoteFile& f = job.file;
    const PullOptions& opt = *sh.opt;
    bool restarted_after_mismatch = false;
    for (int attempt = 0;; ++attempt) {
        try {
            const Fetched got = fetch_once(http, sh, job);
            if (!f.lfs_sha256.empty() && got.sha256 != f.lfs_sha256) {
                sh.moved(-int64_t(f.size));
                ::unlink(job.part_path.c_str());
                // A resumed file may have begun as another version of this file (an older commit):
                // one full download settles whether the server's bytes themselves are wrong.
                if (got.resumed && !restarted_after_mismatch) {
                    restarted_after_mismatch = true;
                    log::warn("{}: sha256 mismatch after resuming; downloading it again from the start", f.path);
                    continue;
                }
                fail("{}: sha256 mismatch for {}: the Hub lists {}, the downloaded bytes hash to {}; "
                     "the download was discarded",
                     sh.repo, f.path, f.lfs_sha256, got.sha256);
            }
            if (::rename(job.part_path.c_str(), job.final_path.c_str()) != 0)
                fail("{}: cannot move into place: {}", job.final_path, std::strerror(errno));
            if (sh.progress) sh.progress->file_done();
            return {f.path, f.size, got.sha256, !f.lfs_sha256.empty(), f.blob_id, got.etag};
        } catch (const TransientError& e) {
            // note: an unreachable host (UnreachableError) is retried here too: mid-transfer it is
            // a network blip (a Wi-Fi reconnect), unlike at the first request, which fails fast.
            if (sh.cancel.load()) throw;
            if (attempt >= opt.retries)
                fail("{}: giving up on {} after {} attempts: {} (the partial download is kept; pull again to resume)",
                     sh.repo, f.path, attempt + 1, e.what());
            const double d = backoff_delay(opt, attempt);
            log::warn("{}; retrying in {}", e.what(), format_duration(d));
            backoff_sleep(d, &sh.cancel);
        }
    }
}

}  // namespace

// ---- names and paths ----

RepoRef parse_repo_ref(const std::string& s, const std::string& default_revision) {
    RepoRef ref;
    const size_t colon = s.find(':');
    ref.repo = s.substr(0, colon);
    ref.revision = colon == std::string::npos ? default_revision : s.substr(colon + 1);
    const size_t slash = ref.repo.find('/');
    if (slash == std::string::npos || !valid_id_part(std::string_view(ref.repo).substr(0, slash)) ||
        !valid_id_part(std::string_view(ref.repo).substr(slash + 1)) || ref.repo.size() > 96)
        fail("'{}': not a Hugging Face model id (expected ORG/NAME or ORG/NAME:REVISION)", s);
    const bool rev_ok = !ref.revision.empty() && ref.revision.size() <= 256 &&
                        ref.revision.find("..") == std::string::npos &&
                        std::none_of(ref.revision.begin(), ref.revision.end(),
                                     [](unsigned char c) { return c <= ' ' || c == 0x7f || c == '\\'; });
    if (!rev_ok) fail("'{}': invalid revision '{}'", s, ref.revision);
    return ref;
}

bool has_model_file_extension(std::string_view s) {
    for (const char* ext : {".thin", ".safetensors", ".json", ".gguf", ".bin"})
        if (s.ends_with(ext)) return true;
    return false;
}

bool looks_like_repo_id(const std::string& s) {
    if (has_model_file_extension(s)) return false;
    try {
        parse_repo_ref(s);
    } catch (const Error&) {
        return false;
    }
    std::error_code ec;
    return !fs::exists(s, ec);
}

std::string model_dir_name(const RepoRef& ref) {
    std::string name = ref.repo;
    name.replace(name.find('/'), 1, "--");
    if (ref.revision != "main") {
        std::string rev = ref.revision;
        for (char& c : rev)
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
        name += "--" + rev;
    }
    return name;
}

std::string thintensor_home() {
    if (const std::string h = env("THINTENSOR_HOME"); !h.empty()) return fs::absolute(h).lexically_normal().string();
    if (const std::string x = env("XDG_CACHE_HOME"); !x.empty()) return (fs::path(x) / "thintensor").string();
    if (const std::string home = env("HOME"); !home.empty()) return (fs::path(home) / ".cache" / "thintensor").string();
    fail("cannot find a cache directory: set THINTENSOR_HOME");
}

std::string cache_root(const std::string& override_dir) {
    if (!override_dir.empty()) return fs::absolute(override_dir).lexically_normal().string();
    return (fs::path(thintensor_home()) / "models").string();
}

void mark_used(const std::string& path) {
    // note: the folder's own mtime, not a file inside it: a file would change the key of the
    // archive converted from the folder (runtime/model_source.h) and force a new conversion.
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
}

std::string lock_path(const std::string& model_dir) {
    std::string d = model_dir;
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    return d + ".lock";
}

std::string model_dir(const RepoRef& ref, const std::string& cache_dir_override) {
    return (fs::path(cache_root(cache_dir_override)) / model_dir_name(ref)).string();
}

const std::vector<std::string>& default_include() {
    static const std::vector<std::string> globs = {"*.safetensors", "*.json", "tokenizer.model",
                                                   "*/tokenizer.model", "*.txt", "*.jinja"};
    return globs;
}

bool is_selected(const std::string& path, const std::vector<std::string>& include,
                 const std::vector<std::string>& exclude) {
    // note: no FNM_PATHNAME, so '*' crosses '/' as in the Hub's allow_patterns (Python fnmatch).
    auto any = [&](const std::vector<std::string>& globs) {
        return std::any_of(globs.begin(), globs.end(),
                           [&](const std::string& g) { return ::fnmatch(g.c_str(), path.c_str(), 0) == 0; });
    };
    return (any(default_include()) || any(include)) && !any(exclude);
}

bool is_safe_relative_path(const std::string& path) {
    if (path.empty() || path.size() > 1024 || path.front() == '/' || path.ends_with(".incomplete")) return false;
    if (path == k_manifest_name) return false;
    for (unsigned char c : path)
        if (c < 0x20 || c == 0x7f || c == '\\') return false;
    size_t start = 0;
    for (;;) {
        const size_t end = path.find('/', start);
        const std::string_view part = std::string_view(path).substr(start, end == std::string::npos ? end : end - start);
        if (part.empty() || part == "." || part == "..") return false;
        if (end == std::string::npos) return true;
        start = end + 1;
    }
}

// ---- Hub conventions ----

std::string endpoint() {
    std::string ep = trim(env("HF_ENDPOINT"));
    if (ep.empty()) ep = "https://huggingface.co";
    while (ep.ends_with('/')) ep.pop_back();
    if (!ep.starts_with("http://") && !ep.starts_with("https://"))
        fail("HF_ENDPOINT='{}': expected an http:// or https:// URL", ep);
    return ep;
}

std::string find_token() {
    if (std::string t = trim(env("HF_TOKEN")); !t.empty()) return t;
    std::string path = env("HF_TOKEN_PATH");
    if (path.empty()) {
        std::string hf_home = env("HF_HOME");
        if (hf_home.empty()) {
            const std::string xdg = env("XDG_CACHE_HOME"), home = env("HOME");
            if (!xdg.empty()) hf_home = xdg + "/huggingface";
            else if (!home.empty()) hf_home = home + "/.cache/huggingface";
            else return "";
        }
        path = hf_home + "/token";
    }
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return "";
    return trim(read_file(path));
}

RepoInfo parse_repo_info(const std::string& text, const std::string& source) {
    const json j = parse_json(text, source);
    if (!j.is_object()) fail("{}: the model info is not a JSON object", source);
    RepoInfo info;
    if (!j.contains("sha") || !j["sha"].is_string() || j["sha"].get<std::string>().empty())
        fail("{}: the model info has no commit \"sha\"", source);
    info.commit = j["sha"].get<std::string>();
    // The commit goes into resolve URLs: it must be a plain hex id, not a path.
    if (!std::all_of(info.commit.begin(), info.commit.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
        fail("{}: the commit \"sha\" '{}' is not a hex id", source, info.commit);
    if (!j.contains("siblings") || !j["siblings"].is_array()) fail("{}: the model info has no \"siblings\" list", source);
    for (const auto& s : j["siblings"]) {
        if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string())
            fail("{}: a sibling without an \"rfilename\"", source);
        RemoteFile f;
        f.path = s["rfilename"].get<std::string>();
        if (!s.contains("size") || !s["size"].is_number_unsigned())
            fail("{}: {} has no \"size\" (does the endpoint support ?blobs=true?)", source, f.path);
        f.size = s["size"].get<uint64_t>();
        if (s.contains("blobId") && s["blobId"].is_string()) f.blob_id = s["blobId"].get<std::string>();
        if (s.contains("lfs") && s["lfs"].is_object()) {
            const auto& lfs = s["lfs"];
            if (!lfs.contains("sha256") || !lfs["sha256"].is_string() || !is_hex(lfs["sha256"].get<std::string>(), 64))
                fail("{}: {} has an LFS entry without a valid sha256", source, f.path);
            f.lfs_sha256 = lfs["sha256"].get<std::string>();
            if (lfs.contains("size") && lfs["size"].is_number_unsigned() && lfs["size"].get<uint64_t>() != f.size)
                fail("{}: {} lists size {} but LFS size {}", source, f.path, f.size, lfs["size"].get<uint64_t>());
        }
        info.files.push_back(std::move(f));
    }
    return info;
}

bool snapshot_complete(const Manifest& m, const std::string& dir) {
    if (!m.complete || m.files.empty()) return false;
    for (const auto& f : m.files)
        if (file_size_or(dir + "/" + f.path, UINT64_MAX) != f.size) return false;
    return true;
}

std::optional<Manifest> read_manifest(const std::string& dir) {
    const std::string path = dir + "/" + k_manifest_name;
    std::error_code ec;
    if (!fs::exists(path, ec)) return std::nullopt;
    try {
        const json j = read_json_file(path);
        Manifest m;
        m.repo = j.at("repo").get<std::string>();
        m.revision = j.at("revision").get<std::string>();
        m.commit = j.at("commit").get<std::string>();
        m.endpoint = j.value("endpoint", "");
        m.complete = j.at("complete").get<bool>();
        m.include = j.value("include", std::vector<std::string>{});
        m.exclude = j.value("exclude", std::vector<std::string>{});
        for (const auto& f : j.at("files")) {
            ManifestFile mf{f.at("path").get<std::string>(), f.at("size").get<uint64_t>(), f.value("sha256", ""),
                            f.value("lfs", false), f.value("blob_id", ""), f.value("etag", "")};
            if (!is_safe_relative_path(mf.path)) throw std::runtime_error("unsafe file name " + mf.path);
            m.files.push_back(std::move(mf));
        }
        return m;
    } catch (const std::exception& e) {
        log::warn("{}: ignoring a damaged manifest ({})", path, e.what());
        return std::nullopt;
    }
}

// ---- pull ----

namespace {

// The result for a snapshot whose files were all on disk already.
PullResult cached_result(const std::string& dir, const Manifest& m, const char* source) {
    PullResult r{dir, m.repo, m.revision, m.commit, source, {}, 0, 0};
    for (const auto& f : m.files) {
        r.files.push_back({f.path, f.size, f.sha256, false});
        r.bytes += f.size;
    }
    return r;
}

}  // namespace

std::string pull(const std::string& repo_with_revision, const PullOptions& opt) {
    return pull_model(repo_with_revision, opt).dir;
}

PullResult pull_model(const std::string& repo_with_revision, const PullOptions& opt) {
    const RepoRef ref = parse_repo_ref(repo_with_revision, opt.revision);
    if (opt.jobs < 1 || opt.jobs > 64) fail("--jobs {}: expected 1 to 64", opt.jobs);
    if (opt.retries < 0) fail("--retries {}: expected 0 or more", opt.retries);
    auto say = [&](const std::string& s) {
        if (!opt.quiet) log::info("{}", s);
    };

    const std::string root = cache_root(opt.cache_dir);
    const std::string dir = (fs::path(root) / model_dir_name(ref)).string();
    // The lock sits beside the folder, so that a pull that fails before knowing the repo exists
    // (404, 401) leaves no empty model folder behind.
    make_dirs(root, "the model cache");
    // Leftovers of pulls that were killed (SIGKILL): lock files nobody holds, temporary manifests.
    sweep_stale_lock_files(root);
    LockFile lock(lock_path(dir), [&] { log::info("waiting for another pull of {} to finish", ref.repo); });
    sweep_stale_temp_files(dir);
    const std::optional<Manifest> old = read_manifest(dir);
    const bool have_cache = cache_complete(old, ref, dir);
    auto from_cache = [&](const char* source) {
        mark_used(dir);
        return cached_result(dir, *old, source);
    };

    if (env("HF_HUB_OFFLINE") == "1" || env("HF_HUB_OFFLINE") == "true") {
        if (!have_cache) fail("{}: not in the cache at {} and HF_HUB_OFFLINE is set", repo_with_revision, dir);
        say(fmt::format("{}: using the cached copy (commit {}, offline)", ref.repo, old->commit));
        return from_cache("cache");
    }
    // A commit id names immutable content: a complete folder at that commit needs no network.
    if (have_cache && old->commit == ref.revision && old->include == opt.include && old->exclude == opt.exclude) {
        say(fmt::format("{}: commit {} is in the cache; using the cached copy", ref.repo, old->commit));
        return from_cache("cache");
    }

    const std::string ep = endpoint();
    const std::string token = find_token();
    HttpClient http;
    RepoInfo info;
    try {
        // With a complete copy at hand the Hub is only asked whether the revision moved: one
        // attempt, and a short connect timeout, before the cached copy stands in.
        info = have_cache ? fetch_repo_info(http, ref, ep, token, opt, 0, 5) : fetch_repo_info(http, ref, ep, token, opt, opt.retries, 30);
    } catch (const Unreachable& e) {
        // Unreachable Hub but a complete copy of this revision: use it, and say so.
        if (!have_cache) throw;
        log::warn("{}", e.what());
        log::warn("{}: using the cached copy at commit {}", ref.repo, old->commit);
        return from_cache("cache-unreachable");
    }

    std::vector<RemoteFile> selected;
    for (const auto& f : info.files) {
        if (!is_selected(f.path, opt.include, opt.exclude)) continue;
        if (!is_safe_relative_path(f.path))
            fail("{}: the Hub lists a file named '{}', which would land outside the model folder; refusing it",
                 ref.repo, f.path);
        selected.push_back(f);
    }
    if (selected.empty())
        fail("{}: no file at revision '{}' matches the download set (default: {}; see --include/--exclude)", ref.repo,
             ref.revision, fmt::join(default_include(), ", "));

    // Which files are already here: recorded by the manifest with the same content id, or (for LFS
    // files without a record) on disk with the listed sha256.
    make_dirs(dir, "the model folder");
    std::map<std::string, ManifestFile> had;
    if (old)
        for (const auto& f : old->files) had[f.path] = f;
    Manifest m{ref.repo, ref.revision, info.commit, ep, false, opt.include, opt.exclude, {}};
    std::vector<Job> jobs;
    uint64_t total = 0, resumed_bytes = 0;
    for (const auto& f : selected) {
        const std::string final_path = dir + "/" + f.path;
        const auto it = had.find(f.path);
        const bool same_content =
            it != had.end() && it->second.size == f.size &&
            (f.lfs_sha256.empty() ? (!f.blob_id.empty() && it->second.blob_id == f.blob_id) : it->second.sha256 == f.lfs_sha256);
        if (file_size_or(final_path, UINT64_MAX) == f.size &&
            (same_content || (!f.lfs_sha256.empty() && sha256_file_hex(final_path) == f.lfs_sha256))) {
            m.files.push_back(same_content ? it->second
                                           : ManifestFile{f.path, f.size, f.lfs_sha256, true, f.blob_id, ""});
            continue;
        }
        make_dirs(fs::path(final_path).parent_path(), "a folder for " + f.path);
        jobs.push_back({f, final_path, final_path + ".incomplete"});
        total += f.size;
        resumed_bytes += std::min(f.size, file_size_or(final_path + ".incomplete", 0));
    }
    if (jobs.empty() && old && old->complete && old->commit == info.commit) {
        say(fmt::format("{}: up to date (commit {}) in {}", ref.repo, info.commit, dir));
        return from_cache("up-to-date");
    }

    // From here until the end the folder is in flux: say so in the manifest first.
    // note: files still to come are listed without a content id: whatever an interrupted pull
    // leaves at their path (the previous version, or nothing) must not pass for the new content.
    Manifest in_flux = m;
    for (const auto& j : jobs)
        in_flux.files.push_back({j.file.path, j.file.size, "", !j.file.lfs_sha256.empty(), "", ""});
    write_manifest(dir, in_flux);

    say(fmt::format("pulling {} (revision {} = commit {}): {} of {} files to download, {}{}", ref.repo, ref.revision,
                    info.commit, jobs.size(), selected.size(), format_bytes(double(total)),
                    resumed_bytes ? fmt::format(" ({} already on disk from an interrupted pull)", format_bytes(double(resumed_bytes))) : ""));
    const auto t0 = std::chrono::steady_clock::now();
    // Largest first, so that the big files are not left to one worker at the end.
    std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.file.size > b.file.size; });

    Shared sh;
    sh.opt = &opt;
    sh.endpoint = ep;
    sh.token = token;
    sh.repo = ref.repo;
    sh.commit = info.commit;
    std::optional<PullProgress> progress;
    if (!opt.quiet && !jobs.empty()) {
        progress.emplace(fmt::format("pull {}", ref.repo), total, jobs.size(), resumed_bytes);
        sh.progress = &*progress;
    }
    sh.moved(int64_t(resumed_bytes));

    std::vector<ManifestFile> fetched(jobs.size());
    std::atomic<size_t> next{0};
    std::mutex err_mu;
    std::exception_ptr first_error;
    auto worker = [&] {
        try {
            HttpClient client;
            for (size_t i; !sh.cancel.load() && (i = next.fetch_add(1)) < jobs.size();)
                fetched[i] = download(client, sh, jobs[i]);
        } catch (...) {
            std::lock_guard g(err_mu);
            // The first failure is the cause; the others are the cancellation it triggered.
            if (!first_error) first_error = std::current_exception();
            sh.cancel = true;
        }
    };
    std::vector<std::thread> threads;
    const size_t n_threads = std::min<size_t>(size_t(opt.jobs), jobs.size());
    for (size_t t = 0; t < n_threads; ++t) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
    if (first_error) {
        if (progress) progress->abandon();
        std::rethrow_exception(first_error);
    }
    if (progress) progress->finish();

    for (auto& f : fetched) m.files.push_back(std::move(f));
    std::sort(m.files.begin(), m.files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
    // Files the repo no longer has at this commit: remove them, so the folder is what the manifest says.
    if (old) {
        std::map<std::string, bool> upstream;
        for (const auto& f : info.files) upstream[f.path] = true;
        for (const auto& f : old->files)
            if (!upstream.count(f.path)) ::unlink((dir + "/" + f.path).c_str());
    }
    m.complete = true;
    write_manifest(dir, m);

    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    say(fmt::format("pulled {} at commit {} into {}: {} files, {} in {} ({}/s)", ref.repo, info.commit, dir,
                    jobs.size(), format_bytes(double(total - resumed_bytes)), format_duration(secs),
                    format_bytes(double(total - resumed_bytes) / std::max(secs, 1e-3))));
    mark_used(dir);
    PullResult r{dir, m.repo, m.revision, m.commit, "downloaded", {}, 0, total - resumed_bytes};
    std::map<std::string, bool> was_fetched;
    for (const auto& j : jobs) was_fetched[j.file.path] = true;
    for (const auto& f : m.files) {
        r.files.push_back({f.path, f.size, f.sha256, was_fetched.count(f.path) > 0});
        r.bytes += f.size;
    }
    return r;
}

}  // namespace tt::hub
