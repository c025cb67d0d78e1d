// Checksums: xxh3-64 for tensor data and archive sections (fast enough to verify GB/s).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tt {

uint64_t xxh3_64(const void* data, size_t n);
// 16 lowercase hex digits, as stored in .thin metadata.
std::string hex64(uint64_t v);
// xxh3-64 of a whole file, streamed (bounded memory); throws tt::Error naming the path.
uint64_t xxh3_file(const std::string& path);

}  // namespace tt
