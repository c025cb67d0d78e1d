#include "core/output_file.h"

#include "core/error.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tt {

// ---- the table of paths removed when a signal ends the process ----

namespace {

// note: a plain array of fixed-size slots, so that the signal handler touches no allocator and
// no lock. A slot is free (0), being filled (1) or listed (2); the handler unlinks only listed ones.
constexpr int k_slots = 64;
constexpr size_t k_path_max = 4096;
struct Slot {
    std::atomic<int> state{0};
    char path[k_path_max];
};
Slot g_slots[k_slots];
std::atomic<int> g_n_listed{0};

int list_path(const std::string& path) {
    if (path.empty() || path.size() >= k_path_max) return -1;
    for (int i = 0; i < k_slots; ++i) {
        int expected = 0;
        if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
        std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
        g_slots[i].state.store(2, std::memory_order_release);
        g_n_listed.fetch_add(1);
        return i;
    }
    return -1;  // more than k_slots files at once: this one is left to the sweep
}

void unlist_path(int slot) {
    if (slot < 0) return;
    g_slots[slot].state.store(0, std::memory_order_release);
    g_n_listed.fetch_sub(1);
}

extern "C" void on_termination_signal(int sig) { die_by_signal(sig); }

}  // namespace

RemoveOnSignal::RemoveOnSignal(const std::string& path) : slot_(list_path(path)) { install_temp_file_cleanup(); }

RemoveOnSignal& RemoveOnSignal::operator=(RemoveOnSignal&& o) noexcept {
    if (this != &o) {
        release();
        slot_ = o.slot_;
        o.slot_ = -1;
    }
    return *this;
}

void RemoveOnSignal::release() {
    unlist_path(slot_);
    slot_ = -1;
}

void install_temp_file_cleanup() {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction old {};
        if (sigaction(sig, nullptr, &old) != 0) continue;
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;  // someone else's, or ignored
        struct sigaction sa {};
        sa.sa_handler = on_termination_signal;
        sigemptyset(&sa.sa_mask);
        // The other two wait while one is being handled: the files are unlinked once.
        for (int other : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, other);
        sigaction(sig, &sa, nullptr);
    }
}

void remove_temp_files_now() noexcept {
    for (auto& s : g_slots)
        if (s.state.load(std::memory_order_acquire) == 2) ::unlink(s.path);
}

int n_live_temp_files() noexcept { return g_n_listed.load(); }

void die_by_signal(int sig) noexcept {
    const int saved = errno;
    remove_temp_files_now();
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    // Inside a handler the signal is blocked: unblock it so the re-raised one is delivered now.
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    raise(sig);
    errno = saved;
    _exit(128 + sig);  // only for a signal whose default action does not end the process
}

// ---- leftovers of processes that died without cleaning up ----

bool is_temp_file_name(std::string_view name, long* pid) {
    if (pid) *pid = 0;
    const size_t at = name.rfind(".tmp.");
    if (at == std::string_view::npos || at == 0) return false;
    std::string_view rest = name.substr(at + 5);
    const size_t dot = rest.find('.');
    if (dot == std::string_view::npos) return rest.size() == 6;  // "<final>.tmp.XXXXXX", no pid
    const std::string_view digits = rest.substr(0, dot);
    if (digits.empty() || digits.size() > 10 || rest.size() - dot - 1 != 6) return false;
    long p = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return false;
        p = p * 10 + (c - '0');
    }
    if (pid) *pid = p;
    return true;
}

namespace {

constexpr double k_unlocked_grace_s = 600;

bool process_alive(long pid) { return pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM); }

double age_seconds(const struct stat& st) {
    struct timespec now {};
    clock_gettime(CLOCK_REALTIME, &now);
    return double(now.tv_sec - st.st_mtim.tv_sec) + 1e-9 * double(now.tv_nsec - st.st_mtim.tv_nsec);
}

// The regular files directly in `dir` (not following symlinks); none if it cannot be read.
std::vector<std::string> list_names(const std::string& dir) {
    std::vector<std::string> out;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    while (const dirent* e = ::readdir(d)) out.emplace_back(e->d_name);
    ::closedir(d);
    return out;
}

// Opens `path` and takes its flock without waiting; -1 when it is held (or cannot be opened).
int open_unlocked(const std::string& path, struct stat& st) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -1;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Still the same file at `path` (not removed and replaced since we opened it)?
bool same_file(const std::string& path, const struct stat& st) {
    struct stat now {};
    return ::lstat(path.c_str(), &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino;
}

// The temp file at `path` (written by `pid`, 0 = unknown) is stale: nobody holds its lock, and its
// writer is gone or it is older than the grace period. Then it stays open and locked (the fd, with
// its stat in st) for the caller; else -1.
int open_if_stale(const std::string& path, long pid, struct stat& st) {
    const int fd = open_unlocked(path, st);
    if (fd < 0) return -1;  // a live writer holds it
    const bool maybe_live = pid == 0 || pid == ::getpid() || process_alive(pid);
    if (maybe_live && age_seconds(st) <= k_unlocked_grace_s) {
        ::close(fd);
        return -1;
    }
    return fd;
}

}  // namespace

bool is_stale_temp_file(const std::string& path) {
    long pid = 0;
    if (!is_temp_file_name(std::string_view(path).substr(path.rfind('/') + 1), &pid)) return false;
    struct stat st {};
    const int fd = open_if_stale(path, pid, st);
    if (fd >= 0) ::close(fd);
    return fd >= 0;
}

std::vector<std::string> sweep_stale_temp_files(const std::string& dir, std::string_view prefix) {
    std::vector<std::string> removed;
    for (const auto& name : list_names(dir)) {
        long pid = 0;
        if (!name.starts_with(prefix) || !is_temp_file_name(name, &pid)) continue;
        const std::string path = dir + "/" + name;
        struct stat st {};
        const int fd = open_if_stale(path, pid, st);
        if (fd < 0) continue;
        if (same_file(path, st) && ::unlink(path.c_str()) == 0) removed.push_back(path);
        ::close(fd);
    }
    return removed;
}

// ---- lock files ----

LockFile::LockFile(const std::string& path, const std::function<void()>& on_wait) : path_(path) {
    acquire(true, on_wait);
}

std::unique_ptr<LockFile> LockFile::try_acquire(const std::string& path) {
    std::unique_ptr<LockFile> l(new LockFile());
    l->path_ = path;
    if (!l->acquire(false, {})) return nullptr;
    return l;
}

bool LockFile::acquire(bool wait, const std::function<void()>& on_wait) {
    bool told = false;
    for (;;) {
        const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) fail("{}: cannot create the lock file: {}", path_, std::strerror(errno));
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK && errno != EINTR) {
                const int err = errno;
                ::close(fd);
                fail("{}: cannot lock: {}", path_, std::strerror(err));
            }
            if (!wait) {
                ::close(fd);
                return false;
            }
            if (!told && on_wait) on_wait();
            told = true;
            while (::flock(fd, LOCK_EX) != 0)
                if (errno != EINTR) {
                    const int err = errno;
                    ::close(fd);
                    fail("{}: cannot lock: {}", path_, std::strerror(err));
                }
        }
        struct stat st {};
        if (::fstat(fd, &st) == 0 && same_file(path_, st)) {
            fd_ = fd;
            remove_ = RemoveOnSignal(path_);
            return true;
        }
        ::close(fd);  // the holder before us removed the file: lock the new one
    }
}

LockFile::~LockFile() {
    if (fd_ < 0) return;
    // Removed while still held: whoever waits on this file sees it gone and starts over.
    // note: taken off the signal list first: once unlinked, the path may name another process's
    // new lock file, which a signal here must not remove (a stale one left instead is swept).
    remove_.release();
    ::unlink(path_.c_str());
    ::close(fd_);
}

std::vector<std::string> sweep_stale_lock_files(const std::string& dir) {
    std::vector<std::string> removed;
    for (const auto& name : list_names(dir)) {
        if (!name.ends_with(".lock") || name.size() == 5) continue;
        const std::string path = dir + "/" + name;
        struct stat st {};
        const int fd = open_unlocked(path, st);
        if (fd < 0) continue;
        if (same_file(path, st) && ::unlink(path.c_str()) == 0) removed.push_back(path);
        ::close(fd);
    }
    return removed;
}

// ---- OutputFile ----

OutputFile::OutputFile(std::string final_path) : final_path_(std::move(final_path)) {
    const size_t slash = final_path_.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : final_path_.substr(0, slash);
    const std::string base = slash == std::string::npos ? final_path_ : final_path_.substr(slash + 1);
    // Leftovers of an earlier writer of this same path that was killed (SIGKILL, power cut).
    sweep_stale_temp_files(dir, base + ".tmp.");
    temp_path_ = final_path_ + ".tmp." + std::to_string(::getpid()) + ".XXXXXX";
    install_temp_file_cleanup();
    fd_ = ::mkostemp(temp_path_.data(), O_CLOEXEC);
    if (fd_ < 0) fail("{}: cannot create temporary file: {}", final_path_, std::strerror(errno));
    // Listed before anything else can fail or a signal can come: the destructor or the handler removes it.
    slot_ = list_path(temp_path_);
    // The lock tells a sweep that a writer is alive. A new file's lock is free unless a sweep is
    // looking at it this very moment (it holds the lock for microseconds and, the file being new
    // and ours, leaves it): then wait for it.
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) ::flock(fd_, LOCK_EX);
    ::fchmod(fd_, 0644);
    buffer_ = static_cast<uint8_t*>(std::malloc(k_buffer_size));
    TT_ASSERT(buffer_ != nullptr);
}

OutputFile::~OutputFile() {
    if (!committed_) ::unlink(temp_path_.c_str());
    unlist_path(slot_);
    if (fd_ >= 0) ::close(fd_);
    std::free(buffer_);
}

static void write_all(int fd, const uint8_t* p, size_t n, const std::string& path) {
    while (n > 0) {
        const ssize_t w = ::write(fd, p, std::min<size_t>(n, 1u << 30));
        if (w < 0) {
            if (errno == EINTR) continue;
            fail("{}: write failed: {}", path, std::strerror(errno));
        }
        p += w;
        n -= size_t(w);
    }
}

void OutputFile::flush() {
    if (buffered_ == 0) return;
    write_all(fd_, buffer_, buffered_, final_path_);
    buffered_ = 0;
}

void OutputFile::write(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    if (n >= k_buffer_size / 2) {
        flush();
        write_all(fd_, p, n, final_path_);
    } else {
        if (buffered_ + n > k_buffer_size) flush();
        std::memcpy(buffer_ + buffered_, p, n);
        buffered_ += n;
    }
    offset_ += n;
}

void OutputFile::write_zeros(size_t n) {
    static const uint8_t k_zeros[4096] = {};
    while (n > 0) {
        const size_t m = std::min(n, sizeof k_zeros);
        write(k_zeros, m);
        n -= m;
    }
}

void OutputFile::pwrite(const void* data, size_t n, uint64_t offset) {
    flush();
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
        const ssize_t w = ::pwrite(fd_, p, n, off_t(offset));
        if (w < 0) {
            if (errno == EINTR) continue;
            fail("{}: write failed: {}", final_path_, std::strerror(errno));
        }
        p += w;
        n -= size_t(w);
        offset += uint64_t(w);
    }
}

void OutputFile::commit() {
    flush();
    if (::fsync(fd_) != 0) fail("{}: fsync failed: {}", final_path_, std::strerror(errno));
    // Renamed while still open and locked: a sweep never sees an unlocked temporary of a live writer.
    if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0)
        fail("{}: cannot rename {} into place: {}", final_path_, temp_path_, std::strerror(errno));
    committed_ = true;
    unlist_path(slot_);
    slot_ = -1;
    ::close(fd_);
    fd_ = -1;
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) fail("{}: cannot open: {}", path, std::strerror(errno));
    std::ostringstream ss;
    ss << f.rdbuf();
    if (f.bad()) fail("{}: read failed", path);
    return ss.str();
}

void write_file_atomic(const std::string& path, std::string_view content) {
    OutputFile out(path);
    out.write(content.data(), content.size());
    out.commit();
}

}  // namespace tt
