// Human byte sizes for flags such as --vram-budget 8GiB: parsing and printing share one unit table.
#pragma once

#include <cstdint>
#include <string>

namespace tt {

// "8GiB", "8G", "512MiB", "1.5GB", "4096" (bytes). Binary suffixes (KiB/MiB/GiB/TiB, and the bare
// K/M/G/T that llama.cpp and Ollama users type) are powers of 1024; KB/MB/GB/TB are powers of 1000.
// Throws tt::Error naming `what` (the flag) when the text is not a size.
uint64_t parse_byte_size(const std::string& text, const std::string& what);

}  // namespace tt
