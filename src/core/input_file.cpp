#include "core/input_file.h"

#include "core/error.h"
#include "core/progress.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tt {

namespace {

// Reads fd to its end, failing once more than max_bytes arrived (so /dev/zero or an endless pipe
// stops at the bound instead of filling memory).
std::string read_bounded(int fd, const std::string& name, const std::string& flag, size_t max_bytes) {
    std::string out;
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            fail("{} {}: read failed: {}", flag, name, std::strerror(errno));
        }
        if (out.size() + size_t(n) > max_bytes)
            fail("{} {}: more than {} of input; refusing to read further", flag, name, format_bytes(double(max_bytes)));
        out.append(buf, size_t(n));
    }
    return out;
}

}  // namespace

const char* file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

std::string read_input(const std::string& path, const std::string& flag, size_t max_bytes) {
    if (path == "-") return read_bounded(STDIN_FILENO, "stdin", flag, max_bytes);
    // stat before open: opening a FIFO blocks until a writer comes, which is what a named pipe
    // asks for, but a device or directory is refused without opening it at all.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail("{} {}: cannot open: {}", flag, path, std::strerror(errno));
    if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
        fail("{} {}: is {}; give a regular file, a pipe, or - for stdin", flag, path, file_kind(st.st_mode));
    if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > max_bytes)
        fail("{} {}: {} is more than the {} a prompt or messages file may hold", flag, path,
             format_bytes(double(st.st_size)), format_bytes(double(max_bytes)));
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("{} {}: cannot open: {}", flag, path, std::strerror(errno));
    try {
        std::string out = read_bounded(fd, path, flag, max_bytes);
        ::close(fd);
        return out;
    } catch (...) {
        ::close(fd);
        throw;
    }
}

bool stdin_is_piped() {
    struct stat st {};
    if (::fstat(STDIN_FILENO, &st) != 0) return false;
    return S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode);
}

}  // namespace tt
