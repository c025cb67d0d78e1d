// SHA-256 (FIPS 180-4), streamed. The Hub identifies every LFS file (all weights) by the sha256 of
// its content, so a pull verifies each such file against it before moving it into place. OpenSSL is
// not linked into ThinTensor, and this is the only cryptographic hash it needs, so it lives here.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tt::hub {

class Sha256 {
public:
    Sha256();
    void update(const void* data, size_t n);
    void update(std::string_view s) { update(s.data(), s.size()); }
    // The 32-byte digest; the object must not be updated afterwards.
    std::array<uint8_t, 32> digest();
    // 64 lowercase hex digits, as the Hub writes them in "lfs": {"sha256": ...}.
    std::string hex_digest();

private:
    void block(const uint8_t* p);
    std::array<uint32_t, 8> h_;
    uint8_t buf_[64];
    size_t n_buf_ = 0;
    uint64_t n_bytes_ = 0;
    bool finished_ = false;
};

std::string sha256_hex(std::string_view data);
// sha256 of a whole file, streamed; throws tt::Error naming the path.
std::string sha256_file_hex(const std::string& path);

}  // namespace tt::hub
