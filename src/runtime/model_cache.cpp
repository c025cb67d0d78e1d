#include "runtime/model_cache.h"

#include "core/error.h"
#include "core/output_file.h"
#include "format/archive.h"
#include "hub/hub.h"
#include "runtime/model_source.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fs = std::filesystem;

namespace tt {

namespace {

int64_t mtime_of(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? int64_t(st.st_mtim.tv_sec) : 0;
}

// Bytes and count of the regular files under `dir`, not following symlinks.
std::pair<uint64_t, size_t> tree_size(const std::string& dir) {
    uint64_t bytes = 0;
    size_t n = 0;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
         it.increment(ec)) {
        std::error_code ec2;
        if (it->is_regular_file(ec2) && !it->is_symlink(ec2)) {
            bytes += it->file_size(ec2);
            ++n;
        }
    }
    return {bytes, n};
}

// Someone holds the flock of an existing lock file (without creating one when there is none).
bool lock_held(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;
    const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    return held;
}

std::string normal(const std::string& p) {
    std::error_code ec;
    const fs::path a = fs::absolute(p, ec);
    return (ec ? fs::path(p) : a).lexically_normal().string();
}

std::vector<CachedArchive> read_archives(const std::string& dir, std::vector<std::string>& stale) {
    std::vector<CachedArchive> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        std::error_code ec2;
        if (is_temp_file_name(name)) {  // not an archive; a leftover only when no live writer has it
            if (is_stale_temp_file(e.path().string())) stale.push_back(e.path().string());
            continue;
        }
        if (!name.ends_with(".thin") || !e.is_regular_file(ec2)) continue;
        CachedArchive a;
        a.path = e.path().string();
        a.size = e.file_size(ec2);
        a.last_used = mtime_of(a.path);
        try {
            const Archive ar = Archive::open(a.path);
            const auto& meta = ar.metadata();
            if (meta.contains("provenance") && meta["provenance"].is_object() && meta["provenance"].contains("source") &&
                meta["provenance"]["source"].is_string())
                a.source = normal(meta["provenance"]["source"].get<std::string>());
        } catch (const std::exception&) {
            // A damaged archive is still listed (and removable); it just has no known source.
        }
        out.push_back(std::move(a));
    }
    std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.path < y.path; });
    return out;
}

}  // namespace

CacheListing list_cache() {
    CacheListing c;
    c.home = thintensor_home();
    c.models_dir = hub::cache_root("");
    c.archives_dir = archive_cache_dir();
    std::vector<CachedArchive> archives = read_archives(c.archives_dir, c.stale_temp);
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(c.models_dir, ec)) {
        const std::string name = e.path().filename().string();
        std::error_code ec2;
        if (is_temp_file_name(name)) {
            if (is_stale_temp_file(e.path().string())) c.stale_temp.push_back(e.path().string());
            continue;
        }
        if (!e.is_directory(ec2) || e.is_symlink(ec2)) continue;
        const auto m = hub::read_manifest(e.path().string());
        if (!m) continue;
        CachedModel cm;
        cm.repo = m->repo;
        cm.revision = m->revision;
        cm.name = m->revision == "main" ? m->repo : m->repo + ":" + m->revision;
        cm.commit = m->commit;
        cm.dir = normal(e.path().string());
        cm.complete = hub::snapshot_complete(*m, cm.dir);
        cm.pulling = lock_held(hub::lock_path(cm.dir));
        std::tie(cm.size, cm.n_files) = tree_size(cm.dir);
        cm.last_used = mtime_of(cm.dir);
        for (const auto& f : fs::directory_iterator(cm.dir, ec2))
            if (is_stale_temp_file(f.path().string())) c.stale_temp.push_back(f.path().string());
        c.models.push_back(std::move(cm));
    }
    std::sort(c.models.begin(), c.models.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
    for (auto& a : archives) {
        auto it = std::find_if(c.models.begin(), c.models.end(), [&](const CachedModel& m) { return m.dir == a.source; });
        if (it == c.models.end()) {
            c.archives.push_back(std::move(a));
            continue;
        }
        it->last_used = std::max(it->last_used, a.last_used);
        it->archives.push_back(std::move(a));
    }
    return c;
}

RemovedModel remove_cached(const std::string& name) {
    const CacheListing c = list_cache();
    RemovedModel r;
    r.name = name;
    auto remove_path = [&](const std::string& p, uint64_t bytes) {
        std::error_code ec;
        fs::remove_all(p, ec);
        if (ec) fail("{}: cannot remove: {}", p, ec.message());
        r.paths.push_back(p);
        r.bytes += bytes;
    };

    // An archive, by the file name `list` shows.
    if (name.ends_with(".thin") && name.find('/') == std::string::npos) {
        auto all = c.archives;
        for (const auto& m : c.models) all.insert(all.end(), m.archives.begin(), m.archives.end());
        for (const auto& a : all)
            if (fs::path(a.path).filename() == name) {
                r.dir = a.path;
                remove_path(a.path, a.size);
                for (const auto& s : sweep_stale_temp_files(c.archives_dir, name + ".tmp.")) r.paths.push_back(s);
                return r;
            }
        fail("{}: no such archive in the cache ({}); `thintensor list` shows what is there", name, c.archives_dir);
    }

    const hub::RepoRef ref = hub::parse_repo_ref(name);
    const std::string dir = normal(hub::model_dir(ref, ""));
    const auto it = std::find_if(c.models.begin(), c.models.end(), [&](const CachedModel& m) { return m.dir == dir; });
    if (it == c.models.end()) {
        std::vector<std::string> others;
        for (const auto& m : c.models)
            if (m.repo == ref.repo) others.push_back(m.name);
        if (!others.empty())
            fail("{}: not in the cache; cached revisions of {}: {}", name, ref.repo, fmt::join(others, ", "));
        fail("{}: not in the cache ({}); `thintensor list` shows what is there", name, c.models_dir);
    }
    r.name = it->name;
    r.dir = it->dir;
    // Held while removing, so that a pull of the same model cannot be writing into the folder.
    const auto lock = LockFile::try_acquire(hub::lock_path(it->dir));
    if (!lock) fail("{}: a pull of this model is running (it holds {}); try again when it ends", name, hub::lock_path(it->dir));
    for (const auto& a : it->archives) {
        remove_path(a.path, a.size);
        const std::string file = fs::path(a.path).filename().string();
        for (const auto& s : sweep_stale_temp_files(c.archives_dir, file + ".tmp.")) r.paths.push_back(s);
    }
    remove_path(it->dir, it->size);
    // Temporary archives of a conversion of this folder that was killed: named after the folder.
    const std::string folder = fs::path(it->dir).filename().string();
    for (const auto& s : sweep_stale_temp_files(c.archives_dir, folder + "-")) r.paths.push_back(s);
    for (const auto& s : sweep_stale_temp_files(c.models_dir, folder)) r.paths.push_back(s);
    return r;  // the lock file goes when `lock` is released
}

}  // namespace tt
