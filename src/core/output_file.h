// Writes a file so that nothing half-written is ever left at the final path: data goes to a
// temporary file beside it (same filesystem), which is renamed into place by commit(). If the
// object is destroyed without commit() (an error was thrown), the temporary file is removed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

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
    uint64_t offset_ = 0;
    // Large sequential writes: buffer small pieces, pass big ones straight through.
    static constexpr size_t k_buffer_size = 8u << 20;
    uint8_t* buffer_ = nullptr;
    size_t buffered_ = 0;
    bool committed_ = false;
};

// Reads a whole (small) file into a string; throws tt::Error naming the path.
std::string read_file(const std::string& path);
// Writes a whole (small) file atomically through OutputFile.
void write_file_atomic(const std::string& path, std::string_view content);

}  // namespace tt
