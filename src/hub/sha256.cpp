#include "hub/sha256.h"

#include "core/error.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace tt::hub {

namespace {
EVP_MD_CTX* evp(void* p) { return static_cast<EVP_MD_CTX*>(p); }
}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
    // note: these fail only when libcrypto cannot allocate or has SHA-256 disabled (a FIPS
    // configuration gone wrong): not the user's input, but worth a clear message rather than an abort.
    if (!ctx_ || EVP_DigestInit_ex(evp(ctx_), EVP_sha256(), nullptr) != 1) {
        EVP_MD_CTX_free(evp(ctx_));
        fail("OpenSSL: cannot initialise SHA-256");
    }
}

Sha256::~Sha256() { EVP_MD_CTX_free(evp(ctx_)); }

void Sha256::update(const void* data, size_t n) {
    TT_ASSERT(!finished_);
    if (n > 0 && EVP_DigestUpdate(evp(ctx_), data, n) != 1) fail("OpenSSL: SHA-256 update failed");
}

std::array<uint8_t, 32> Sha256::digest() {
    TT_ASSERT(!finished_);
    finished_ = true;
    std::array<uint8_t, 32> out{};
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(evp(ctx_), out.data(), &len) != 1 || len != out.size()) fail("OpenSSL: SHA-256 final failed");
    return out;
}

std::string Sha256::hex_digest() {
    static const char k_hex[] = "0123456789abcdef";
    std::string s;
    for (uint8_t b : digest()) {
        s += k_hex[b >> 4];
        s += k_hex[b & 15];
    }
    return s;
}

std::string sha256_hex(std::string_view data) {
    Sha256 h;
    h.update(data);
    return h.hex_digest();
}

std::string sha256_file_hex(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
    Sha256 h;
    std::vector<uint8_t> buf(1u << 20);
    for (;;) {
        const ssize_t r = ::read(fd, buf.data(), buf.size());
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            const int err = errno;
            ::close(fd);
            fail("{}: read failed: {}", path, std::strerror(err));
        }
        if (r == 0) break;
        h.update(buf.data(), size_t(r));
    }
    ::close(fd);
    return h.hex_digest();
}

}  // namespace tt::hub
