// Writes a file so that nothing half-written is ever left at the final path: data goes to a
// temporary file beside it (same filesystem), which is renamed into place by commit(). If the
// object is destroyed without commit() (an error was thrown), the temporary file is removed.
//
// Nor is a temporary file left behind when the process is killed mid-write. Three layers:
//  - Every live temporary file is listed in a process-wide table (a fixed array, so a signal
//    handler can read it). OutputFile installs handlers for SIGINT, SIGTERM and SIGHUP that unlink
//    every listed path, restore the default action and re-raise, so the exit status is still the
//    signal's. They are installed only where the disposition is the default: a command's own
//    handler (Ctrl-C in `chat`) and an ignored SIGHUP (nohup) are left alone. A command with its
//    own handler calls die_by_signal() from it when it wants the process to end (e.g. when
//    n_live_temp_files() > 0, i.e. a conversion is under way), or remove_temp_files_now() first.
//  - SIGKILL (or a power cut) cannot be caught. The temporary name carries the writer's pid,
//    "<final>.tmp.<pid>.XXXXXX", and the writer holds an flock(2) on it until it is renamed or
//    removed; sweep_stale_temp_files() removes only those that nobody holds locked (so never a
//    live writer's, not even one in another pid namespace sharing the folder). Each OutputFile
//    sweeps its own final path's leftovers; the cache commands sweep the cache folders.
//  - Lock files are removed by their holder (see LockFile) and swept by sweep_stale_lock_files().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tt {

class OutputFile {
public:
    explicit OutputFile(std::string final_path);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(const void* data, size_t n);
    void write_zeros(size_t n);
    void pwrite(const void* data, size_t n, uint64_t offset);  // rewrites already-written bytes
    uint64_t offset() const { return offset_; }
    // Flushes, fsyncs and renames the temporary file to the final path.
    void commit();

    const std::string& final_path() const { return final_path_; }
    const std::string& temp_path() const { return temp_path_; }

private:
    void flush();
    std::string final_path_;
    std::string temp_path_;
    int fd_ = -1;
    int slot_ = -1;  // in the table of paths removed on a signal
    uint64_t offset_ = 0;
    // Large sequential writes: buffer small pieces, pass big ones straight through.
    static constexpr size_t k_buffer_size = 8u << 20;
    uint8_t* buffer_ = nullptr;
    size_t buffered_ = 0;
    bool committed_ = false;
};

// ---- the table of paths removed when a signal ends the process ----

// Lists `path` until release() or destruction (a no-op path "" lists nothing). For files that
// must not outlive the process: OutputFile's temporary file, a LockFile.
class RemoveOnSignal {
public:
    RemoveOnSignal() = default;
    explicit RemoveOnSignal(const std::string& path);
    ~RemoveOnSignal() { release(); }
    RemoveOnSignal(RemoveOnSignal&& o) noexcept : slot_(o.slot_) { o.slot_ = -1; }
    RemoveOnSignal& operator=(RemoveOnSignal&& o) noexcept;
    RemoveOnSignal(const RemoveOnSignal&) = delete;
    RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;
    void release();

private:
    int slot_ = -1;
};

// Installs the SIGINT/SIGTERM/SIGHUP handlers described above where the disposition is the
// default (OutputFile calls it; harmless to call again).
void install_temp_file_cleanup();
// Async-signal-safe: unlinks every listed path now.
void remove_temp_files_now() noexcept;
// Async-signal-safe: how many paths are listed (> 0 while a file is being written).
int n_live_temp_files() noexcept;
// Async-signal-safe: remove_temp_files_now(), then end the process by `sig` with its default
// action (so the shell sees "killed by SIGINT", exit status 128+sig).
[[noreturn]] void die_by_signal(int sig) noexcept;

// ---- leftovers of processes that died without cleaning up ----

// True for "<anything>.tmp.<pid>.XXXXXX" (and the older "<anything>.tmp.XXXXXX" without a pid);
// *pid is 0 when the name has none.
bool is_temp_file_name(std::string_view name, long* pid = nullptr);
// Removes the temporary files in `dir` (not recursive) whose name starts with `prefix` and that no
// process holds locked. A file whose name has no pid, or the pid of a live process, is removed
// only when it is also older than 10 minutes: it may belong to an older ThinTensor that did not
// lock, or be in the instant between its creation and its lock. Returns the removed paths.
std::vector<std::string> sweep_stale_temp_files(const std::string& dir, std::string_view prefix = "");
// Whether the temp file at `path` is one sweep_stale_temp_files would remove (for `list`).
bool is_stale_temp_file(const std::string& path);

// An exclusive flock(2) on `path` (created if missing), held for the object's lifetime, and the
// file removed when it is released, so lock files do not pile up. note: removing a lock file is
// safe only because every locker checks, once it holds the lock, that the path still names the
// file it locked, and starts over if not (the file was removed by the previous holder).
class LockFile {
public:
    // Blocks until the lock is free; calls on_wait() once first if it is not free at once.
    // Throws tt::Error naming the path when the file cannot be created.
    explicit LockFile(const std::string& path, const std::function<void()>& on_wait = {});
    ~LockFile();
    LockFile(const LockFile&) = delete;
    LockFile& operator=(const LockFile&) = delete;
    // Non-blocking: null when another process holds the lock.
    static std::unique_ptr<LockFile> try_acquire(const std::string& path);

private:
    LockFile() = default;
    bool acquire(bool wait, const std::function<void()>& on_wait);
    std::string path_;
    int fd_ = -1;
    RemoveOnSignal remove_;
};

// Removes the "*.lock" files in `dir` (not recursive) that nobody holds. Returns the removed paths.
std::vector<std::string> sweep_stale_lock_files(const std::string& dir);

// Reads a whole (small) file into a string; throws tt::Error naming the path.
std::string read_file(const std::string& path);
// Writes a whole (small) file atomically through OutputFile.
void write_file_atomic(const std::string& path, std::string_view content);

}  // namespace tt
