// Helpers shared by the conversion tests (test_convert*.cpp, test_format*.cpp): where the reference
// data lives, a self-deleting temporary directory, and a tiny safetensors writer so tests can build
// checkpoints (shards, broken files, other dtypes) from the fixtures without any Python.
#pragma once

#include "core/dtype.h"
#include "core/error.h"
#include "core/output_file.h"
#include "format/safetensors.h"
#include "format/tensor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tt::test {

namespace fs = std::filesystem;

inline fs::path shared_dir() { return fs::path(TT_SHARED_DIR); }

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
public:
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "tt_test_XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const fs::path& path() const { return path_; }
    fs::path operator/(const std::string& s) const { return path_ / s; }
    // Names of the entries in the directory (to prove no output or temp file was left behind).
    std::vector<std::string> entries() const {
        std::vector<std::string> out;
        for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path().filename().string());
        return out;
    }

private:
    fs::path path_;
};

// One tensor to write: raw little-endian bytes of `dtype` elements.
struct StTensor {
    std::string name;
    DType dtype = DType::f32;
    Shape shape;
    std::string bytes;
};

// Writes a safetensors file: u64 header length, JSON header (padded with spaces to 8 bytes, as
// the reference writer does), then the tensors back to back in the given order.
inline void write_safetensors(const fs::path& path, const std::vector<StTensor>& tensors,
                              const nlohmann::json& metadata = nlohmann::json{{"format", "pt"}}) {
    nlohmann::json header = nlohmann::json::object();
    if (!metadata.is_null()) header["__metadata__"] = metadata;
    uint64_t off = 0;
    for (const auto& t : tensors) {
        header[t.name] = {{"dtype", std::string(dtype_safetensors_name(t.dtype))},
                          {"shape", t.shape},
                          {"data_offsets", {off, off + t.bytes.size()}}};
        off += t.bytes.size();
    }
    std::string text = header.dump();
    text.resize((text.size() + 7) / 8 * 8, ' ');
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    const uint64_t n = text.size();
    f.write(reinterpret_cast<const char*>(&n), 8);
    f.write(text.data(), std::streamsize(text.size()));
    for (const auto& t : tensors) f.write(t.bytes.data(), std::streamsize(t.bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + path.string());
}

// Every tensor of a safetensors file, in the file's data order.
inline std::vector<StTensor> read_safetensors(const fs::path& path) {
    SafetensorsFile st(path.string());
    std::vector<const TensorView*> views;
    for (const auto& [name, v] : st.tensors()) views.push_back(&v);
    std::sort(views.begin(), views.end(), [](const auto* a, const auto* b) { return a->data < b->data; });
    std::vector<StTensor> out;
    for (const auto* v : views)
        out.push_back({v->name, v->dtype, v->shape, std::string(reinterpret_cast<const char*>(v->data), v->nbytes)});
    return out;
}

// Float element i of a raw buffer of dtype t, widened to f32 exactly.
inline float element_f32(const uint8_t* p, DType t, size_t i) {
    uint16_t h;
    switch (t) {
    case DType::f32: {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        return f;
    }
    case DType::bf16: std::memcpy(&h, p + 2 * i, 2); return bf16_to_f32(h);
    case DType::f16: std::memcpy(&h, p + 2 * i, 2); return f16_to_f32(h);
    default: throw std::runtime_error("not a float dtype");
    }
}

// The bytes of n elements of src (dtype from) cast to dtype to, one element at a time with the
// scalar casts of core/dtype.h: the independent reference for the converter's chunked cast.
inline std::string cast_bytes(const uint8_t* src, DType from, DType to, size_t n) {
    if (from == to) return std::string(reinterpret_cast<const char*>(src), n * dtype_size(from));
    std::string out(n * dtype_size(to), '\0');
    for (size_t i = 0; i < n; ++i) {
        const float f = element_f32(src, from, i);
        if (to == DType::f32) {
            std::memcpy(out.data() + 4 * i, &f, 4);
        } else {
            const uint16_t h = to == DType::bf16 ? f32_to_bf16(f) : f32_to_f16(f);
            std::memcpy(out.data() + 2 * i, &h, 2);
        }
    }
    return out;
}

// Copies the regular files of a checkpoint directory (not its subdirectories) into dst.
inline void copy_checkpoint(const fs::path& src, const fs::path& dst) {
    fs::create_directories(dst);
    for (const auto& e : fs::directory_iterator(src))
        if (e.is_regular_file()) {
            fs::copy_file(e.path(), dst / e.path().filename(), fs::copy_options::overwrite_existing);
            fs::permissions(dst / e.path().filename(), fs::perms::owner_read | fs::perms::owner_write,
                            fs::perm_options::add);
        }
}

inline nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(read_file(p.string())); }

}  // namespace tt::test
