// What is in the cache, for `thintensor list` and `thintensor rm`: the model folders `pull` (and
// `run ORG/NAME`) downloaded into thintensor_home()/models, each described by its manifest, and
// the archives `run DIR` converted into thintensor_home()/archives, each tied to the model folder
// it came from by the source path its provenance records. "Last used" is the folder's or the
// archive's mtime, which every use refreshes (hub::mark_used).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tt {

struct CachedArchive {
    std::string path;
    uint64_t size = 0;
    int64_t last_used = 0;  // seconds since the epoch
    std::string source;     // the model directory it was converted from ("" when unreadable)
};

struct CachedModel {
    std::string name;  // "ORG/NAME", or "ORG/NAME:REV" for a revision other than main
    std::string repo, revision, commit;
    std::string dir;
    bool complete = false;  // every file of the manifest is on disk
    bool pulling = false;   // a pull (or rm) holds its lock now
    size_t n_files = 0;
    uint64_t size = 0;      // bytes of all files in the folder (partial downloads too)
    int64_t last_used = 0;  // the latest of the folder's and its archives' mtimes
    std::vector<CachedArchive> archives;
};

struct CacheListing {
    std::string home, models_dir, archives_dir;
    std::vector<CachedModel> models;      // sorted by name
    std::vector<CachedArchive> archives;  // archives of local directories (not of a cached model)
    std::vector<std::string> stale_temp;  // temporary files of dead processes (swept by rm)
};

// Reads the cache; missing folders are an empty cache. Folders without a readable manifest are
// skipped (they are not ThinTensor's).
CacheListing list_cache();

struct RemovedModel {
    std::string name, dir;
    std::vector<std::string> paths;  // what was removed: the folder, its archives, stale files
    uint64_t bytes = 0;
};
// Removes a cached model (ORG/NAME[:REV]; no revision means main) with its archives, lock file
// and stale temporary files; or, given the file name of a listed archive, that archive. Throws
// tt::Error when the name is not in the cache (listing the revisions that are, if any) or when a
// pull of it is running.
RemovedModel remove_cached(const std::string& name);

}  // namespace tt
