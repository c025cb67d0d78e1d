#include "core/hash.h"

#include "core/error.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace tt {

uint64_t xxh3_64(const void* data, size_t n) { return XXH3_64bits(data, n); }

std::string hex64(uint64_t v) { return fmt::format("{:016x}", v); }

uint64_t xxh3_file(const std::string& path) {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) fail("{}: cannot open: {}", path, std::strerror(errno));
    std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> st(XXH3_createState(), &XXH3_freeState);
    XXH3_64bits_reset(st.get());
    std::vector<uint8_t> buf(4u << 20);
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) XXH3_64bits_update(st.get(), buf.data(), n);
    if (std::ferror(f.get())) fail("{}: read failed", path);
    return XXH3_64bits_digest(st.get());
}

}  // namespace tt
