#include "core/output_file.h"

#include "core/error.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tt {

OutputFile::OutputFile(std::string final_path) : final_path_(std::move(final_path)) {
    temp_path_ = final_path_ + ".tmp.XXXXXX";
    fd_ = ::mkstemp(temp_path_.data());
    if (fd_ < 0) fail("{}: cannot create temporary file: {}", final_path_, std::strerror(errno));
    ::fchmod(fd_, 0644);
    buffer_ = static_cast<uint8_t*>(std::malloc(k_buffer_size));
    TT_ASSERT(buffer_ != nullptr);
}

OutputFile::~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temp_path_.c_str());
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
    ::close(fd_);
    fd_ = -1;
    if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0)
        fail("{}: cannot rename {} into place: {}", final_path_, temp_path_, std::strerror(errno));
    committed_ = true;
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
