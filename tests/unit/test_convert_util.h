// Helpers shared by the conversion tests (test_convert*.cpp, test_format*.cpp): where the reference
// data lives, a self-deleting temporary directory, and a tiny safetensors writer so tests can build
// checkpoints (shards, broken files, other dtypes) from the fixtures without any Python.
#pragma once

#include "convert/convert.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/output_file.h"
#include "format/archive.h"
#include "format/safetensors.h"
#include "format/tensor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
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

// TinyStories-656K (a real trained model) converted to f32 once per test binary, into a temporary
// directory that lives as long as the binary: for the tests that only read its archive.
inline const Archive& tinystories_f32_archive() {
    static const TempDir dir;
    static const Archive a = [] {
        const std::string out = (dir.path() / "ts.thin").string();
        ConvertOptions o;
        o.dtype = DType::f32;
        convert_hf((shared_dir() / "models/tinystories-656k").string(), out, o);
        return Archive::open(out);
    }();
    return a;
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

// Copies a mixture-of-experts checkpoint (one tensor per expert) with its experts stored fused, as
// transformers v5's experts modules hold them (modeling_qwen3_5_moe.py's Qwen3_5MoeExperts): per
// layer mlp.experts.gate_up_proj [n_experts, 2 * ffn, hidden] (expert e's gate_proj rows, then its
// up_proj rows) and mlp.experts.down_proj [n_experts, hidden, ffn]; Mixtral's w1/w3/w2 are its
// gate/up/down, and its block_sparse_moe.gate becomes mlp.gate (conversion_mapping.py). The bytes
// are restacked untouched. The names are written here from transformers, not from tensor_names.cpp.
inline void write_fused_experts_checkpoint(const fs::path& src, const fs::path& dst) {
    copy_checkpoint(src, dst);
    std::vector<StTensor> out;
    struct Expert {
        const StTensor *gate = nullptr, *up = nullptr, *down = nullptr;
    };
    std::map<std::string, std::map<int, Expert>> layers;  // "model.layers.N." -> expert -> tensors
    const std::vector<StTensor> all = read_safetensors(src / "model.safetensors");
    for (const auto& t : all) {
        const size_t at = t.name.find(".experts.");
        if (at == std::string::npos) {
            StTensor copy = t;
            if (const size_t r = copy.name.find(".block_sparse_moe.gate."); r != std::string::npos)
                copy.name.replace(r, std::strlen(".block_sparse_moe.gate."), ".mlp.gate.");
            out.push_back(std::move(copy));
            continue;
        }
        const std::string prefix = t.name.substr(0, t.name.find('.', t.name.find("layers.") + 7) + 1);
        const size_t e_begin = at + std::strlen(".experts."), e_end = t.name.find('.', e_begin);
        const int e = std::stoi(t.name.substr(e_begin, e_end - e_begin));
        const std::string proj = t.name.substr(e_end + 1);
        Expert& x = layers[prefix][e];
        if (proj == "gate_proj.weight" || proj == "w1.weight") x.gate = &t;
        else if (proj == "up_proj.weight" || proj == "w3.weight") x.up = &t;
        else if (proj == "down_proj.weight" || proj == "w2.weight") x.down = &t;
        else throw std::runtime_error("unexpected expert tensor " + t.name);
    }
    if (layers.empty()) throw std::runtime_error(src.string() + ": no per-expert tensors");
    for (const auto& [prefix, experts] : layers) {
        const int64_t n = int64_t(experts.size()), ffn = experts.at(0).gate->shape[0], hidden = experts.at(0).gate->shape[1];
        StTensor gate_up{prefix + "mlp.experts.gate_up_proj", experts.at(0).gate->dtype, {n, 2 * ffn, hidden}, {}};
        StTensor down{prefix + "mlp.experts.down_proj", experts.at(0).down->dtype, {n, hidden, ffn}, {}};
        for (int e = 0; e < int(n); ++e) {
            const Expert& x = experts.at(e);
            gate_up.bytes += x.gate->bytes + x.up->bytes;
            down.bytes += x.down->bytes;
        }
        out.push_back(std::move(gate_up));
        out.push_back(std::move(down));
    }
    write_safetensors(dst / "model.safetensors", out);
}

}  // namespace tt::test
