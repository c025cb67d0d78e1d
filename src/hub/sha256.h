// SHA-256, streamed, through OpenSSL's EVP interface (libcrypto). The Hub identifies every LFS file
// (all weights) by the sha256 of its content, so a pull verifies each such file against it before
// moving it into place. A resumed download feeds the bytes already on disk first and then the new
// ones as they arrive, so the object must accept any number of update() calls of any size.
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
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void update(const void* data, size_t n);
    void update(std::string_view s) { update(s.data(), s.size()); }
    // The 32-byte digest; the object must not be updated afterwards.
    std::array<uint8_t, 32> digest();
    // 64 lowercase hex digits, as the Hub writes them in "lfs": {"sha256": ...}.
    std::string hex_digest();

private:
    void* ctx_;  // EVP_MD_CTX*: kept out of the header so OpenSSL's headers stay in the .cpp
    bool finished_ = false;
};

std::string sha256_hex(std::string_view data);
// sha256 of a whole file, streamed; throws tt::Error naming the path.
std::string sha256_file_hex(const std::string& path);

}  // namespace tt::hub
