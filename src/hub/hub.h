// Hugging Face Hub download (`thintensor pull`): resolves a repository revision to a commit with
// the model-info API, downloads the selected files from the `resolve` endpoint in parallel,
// resumes partial files with HTTP Range, verifies sizes and LFS sha256 before a file is moved into
// place, and records what it fetched in a manifest. The layout and guarantees are in docs/HUB.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tt::hub {

struct PullOptions {
    std::string revision = "main";  // used when the repo id carries no ":REV"
    // Globs (fnmatch(3), '*' also crosses '/') on the repo-relative path. include adds to the
    // default set (default_include()); exclude removes, and wins over include.
    std::vector<std::string> include, exclude;
    std::string cache_dir;  // "" = $THINTENSOR_HOME/models or ~/.cache/thintensor/models
    int jobs = 4;           // files downloaded at once
    bool quiet = false;     // no progress display and no info lines
    int retries = 5;        // attempts after the first, per file, on transient failures
    double backoff_s = 0.5; // first retry delay; doubles each time, capped at 30 s
};

// True for "ORG/NAME" or "ORG/NAME:REV" that is not an existing local path and does not end like a
// file name (.thin, .safetensors, .json, .gguf, .bin): `run sub/model.thin` is a mistyped path.
bool looks_like_repo_id(const std::string& s);
// Ends like a model file ThinTensor or the Hub uses (.thin, .safetensors, .json, .gguf, .bin): a
// path, never a repo id.
bool has_model_file_extension(std::string_view s);

// What a pull did, for `pull --json` and for callers that want more than the folder.
struct PullResult {
    std::string dir;       // the model folder (snapshot)
    std::string repo, revision, commit;
    // How the folder was obtained: "downloaded" (some files fetched), "up-to-date" (the Hub was
    // asked; nothing changed), "cache" (a pinned commit or HF_HUB_OFFLINE: no network), or
    // "cache-unreachable" (the Hub could not be reached; the complete cached copy was used).
    std::string source;
    struct File {
        std::string path;
        uint64_t size = 0;
        std::string sha256;    // "" for a non-LFS file not hashed
        bool downloaded = false;  // fetched by this pull (else already in the cache)
    };
    std::vector<File> files;
    uint64_t bytes = 0;             // all files of the snapshot
    uint64_t bytes_downloaded = 0;  // fetched by this pull
};

// Downloads (or finds complete in the cache) and returns the local model directory. Throws
// tt::Error with a clear cause (404 repo, 401 needs token, sha256 mismatch, disk, network).
std::string pull(const std::string& repo_with_revision, const PullOptions& opt);
PullResult pull_model(const std::string& repo_with_revision, const PullOptions& opt);

// $THINTENSOR_HOME, else $XDG_CACHE_HOME/thintensor, else ~/.cache/thintensor: the root of every
// cache (models/, archives/, references/, doctor.json).
std::string thintensor_home();
// The model cache: --cache-dir when given, else thintensor_home()/models.
std::string cache_root(const std::string& cache_dir_override);
// Records that the model folder was used now (its mtime; `thintensor list` shows it). Best effort.
void mark_used(const std::string& path);

// ---- the pieces pull() is made of, public for tests and for `run ORG/NAME` ----

struct RepoRef {
    std::string repo;      // "ORG/NAME"
    std::string revision;  // branch, tag or commit sha
};
// "ORG/NAME[:REV]"; throws tt::Error naming the string when it is not a valid Hub model id.
RepoRef parse_repo_ref(const std::string& s, const std::string& default_revision = "main");
// The model folder under cache_root(): "ORG--NAME", with "--REV" appended for revisions other than
// "main" (characters outside [A-Za-z0-9._-] in REV become '_').
std::string model_dir_name(const RepoRef& ref);
// Where the model of `ref` is (or would be) cached.
std::string model_dir(const RepoRef& ref, const std::string& cache_dir_override);

// "*.safetensors", "*.json", "tokenizer.model", "*.txt", "*.jinja" (and the same in subfolders).
const std::vector<std::string>& default_include();
bool is_selected(const std::string& path, const std::vector<std::string>& include,
                 const std::vector<std::string>& exclude);
// A repo-relative file name that cannot leave the model folder: not empty, not absolute, no "." or
// ".." or empty component, no backslash or control character, no ".incomplete" suffix.
bool is_safe_relative_path(const std::string& path);

struct RemoteFile {
    std::string path;        // rfilename
    uint64_t size = 0;
    std::string blob_id;     // git blob id (the ETag of a non-LFS file)
    std::string lfs_sha256;  // "" for files stored in git rather than LFS
};
struct RepoInfo {
    std::string commit;  // "sha": the revision resolved to a commit
    std::vector<RemoteFile> files;
};
// Parses GET /api/models/{repo}/revision/{rev}?blobs=true; throws tt::Error naming `source` when
// the JSON is not what the Hub sends (missing sha, sibling without a size, bad sha256).
RepoInfo parse_repo_info(const std::string& json, const std::string& source);

// HF_ENDPOINT without a trailing '/', default https://huggingface.co.
std::string endpoint();
// HF_TOKEN, else the file $HF_TOKEN_PATH, else $HF_HOME/token (HF_HOME defaults to
// ~/.cache/huggingface); "" when none. Surrounding whitespace is stripped.
std::string find_token();

// What the manifest (".thintensor-manifest.json" in the model folder) records.
struct ManifestFile {
    std::string path;
    uint64_t size = 0;
    std::string sha256;   // of the bytes on disk (verified against the Hub's for LFS files)
    bool lfs = false;
    std::string blob_id;  // the Hub's git blob id
    std::string etag;     // as served (X-Linked-Etag for LFS files)
};
struct Manifest {
    std::string repo, revision, commit, endpoint;
    bool complete = false;  // false while a pull is writing the folder
    std::vector<std::string> include, exclude;
    std::vector<ManifestFile> files;
};
inline constexpr const char* k_manifest_name = ".thintensor-manifest.json";
// The manifest of a model folder, if one exists and parses (a damaged one is reported and ignored).
std::optional<Manifest> read_manifest(const std::string& dir);
// The manifest says complete and every file it lists is on disk with its size.
bool snapshot_complete(const Manifest& m, const std::string& dir);
// "ORG--NAME.lock" beside the model folder: held (flock) by a pull, or by `rm`, of that folder.
std::string lock_path(const std::string& model_dir);

}  // namespace tt::hub
