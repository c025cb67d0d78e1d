#include "core/mapped_file.h"

#include "core/error.h"
#include "core/input_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tt {

MappedFile::MappedFile(const std::string& path) : path_(path) {
    // note: O_NONBLOCK so that a FIFO does not block the open waiting for a writer (it is refused
    // below like any non-regular file); it has no effect on the regular file we then map.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        fail("{}: cannot stat: {}", path, std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        fail("{}: is {}, not a regular file", path, file_kind(st.st_mode));
    }
    size_ = size_t(st.st_size);
    if (size_ > 0) {
        void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            const int e = errno;
            ::close(fd);
            fail("{}: cannot map {} bytes: {}", path, size_, std::strerror(e));
        }
        data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);  // the mapping keeps the file alive
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
    if (this != &o) {
        if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
        path_ = std::move(o.path_);
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
    }
    return *this;
}

void MappedFile::advise_sequential(size_t offset, size_t n) const {
    if (!data_ || n == 0) return;
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    const size_t start = offset / page * page;
    // note: advice values are not flags (SEQUENTIAL | WILLNEED == WILLNEED); give each separately.
    uint8_t* p = const_cast<uint8_t*>(data_) + start;
    ::madvise(p, n + (offset - start), MADV_SEQUENTIAL);
    ::madvise(p, n + (offset - start), MADV_WILLNEED);
}

}  // namespace tt
