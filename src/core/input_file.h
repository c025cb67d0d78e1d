// Text input named on the command line (a prompt file, a messages file): "-" is stdin; regular
// files and pipes are read, up to a size bound; directories and devices are refused up front,
// since a directory reads as empty text and /dev/zero never ends.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace tt {

inline constexpr size_t k_max_input_bytes = size_t(64) << 20;  // 64 MiB: far above any prompt

// Reads all of `path` ("-" = stdin). Throws tt::Error naming `flag` and the path (or "stdin") when it
// is a directory, a device or a socket, cannot be read, or holds more than max_bytes.
std::string read_input(const std::string& path, const std::string& flag, size_t max_bytes = k_max_input_bytes);

// "a directory", "a FIFO (named pipe)", "a character device" ... for a refusal message.
const char* file_kind(mode_t mode);

// True when stdin is a pipe or a redirected regular file, i.e. a script fed us input; false for a
// terminal, /dev/null and other devices.
bool stdin_is_piped();

}  // namespace tt
