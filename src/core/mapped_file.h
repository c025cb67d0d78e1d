// A read-only memory mapping of a whole file. Archives and safetensors are read through it, so a
// tensor is a pointer into the page cache: no copy, and the OS pages weights in on first touch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tt {

class MappedFile {
public:
    MappedFile() = default;
    // Throws tt::Error naming the path if the file cannot be opened or mapped.
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(MappedFile&& o) noexcept;
    MappedFile& operator=(MappedFile&& o) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    std::span<const uint8_t> bytes() const { return {data_, size_}; }
    const std::string& path() const { return path_; }

    // Hints the kernel that the range is about to be read sequentially (readahead).
    void advise_sequential(size_t offset, size_t n) const;

private:
    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace tt
