#include "format/safetensors.h"

#include "core/error.h"
#include "core/json.h"

#include <nlohmann/json.hpp>

#include <cstring>

namespace tt {

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
    tensors_ = parse(file_.data(), file_.size(), path, &metadata_);
}

std::map<std::string, TensorView> SafetensorsFile::parse(const uint8_t* data, size_t size, const std::string& path,
                                                         nlohmann::json* metadata) {
    if (size < 8) fail("{}: truncated safetensors file ({} bytes, no header length)", path, size);
    uint64_t header_len;
    std::memcpy(&header_len, data, 8);  // little-endian on every platform we build for
    if (header_len > size - 8)
        fail("{}: truncated safetensors file: header claims {} bytes but the file has {} after the length", path,
             header_len, size - 8);
    if (header_len > (100u << 20)) fail("{}: safetensors header of {} bytes is implausibly large", path, header_len);
    const uint8_t* base = data + 8 + header_len;
    const uint64_t data_size = size - 8 - header_len;

    const nlohmann::json header =
        parse_json(std::string_view(reinterpret_cast<const char*>(data) + 8, header_len), path + ": safetensors header");
    if (!header.is_object()) fail("{}: safetensors header is not a JSON object", path);

    std::map<std::string, TensorView> out;
    for (const auto& [name, v] : header.items()) {
        if (name == "__metadata__") {
            if (metadata && v.is_object()) *metadata = v;
            continue;
        }
        if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
            fail("{}: tensor '{}' lacks dtype, shape or data_offsets", path, name);
        const auto& jd = v["dtype"];
        const auto& js = v["shape"];
        const auto& jo = v["data_offsets"];
        if (!jd.is_string()) fail("{}: tensor '{}': dtype is not a string", path, name);
        auto dt = dtype_from_safetensors(jd.get<std::string>());
        if (!dt) fail("{}: tensor '{}' has unsupported dtype {}", path, name, jd.get<std::string>());
        if (!js.is_array()) fail("{}: tensor '{}': shape is not an array", path, name);
        Shape shape;
        for (const auto& d : js) {
            if (!d.is_number_integer() || d.get<int64_t>() < 0) fail("{}: tensor '{}' has a bad shape", path, name);
            shape.push_back(d.get<int64_t>());
        }
        if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() || !jo[1].is_number_unsigned())
            fail("{}: tensor '{}': data_offsets must be two unsigned integers", path, name);
        const uint64_t begin = jo[0].get<uint64_t>(), end = jo[1].get<uint64_t>();
        if (begin > end || end > data_size)
            fail("{}: tensor '{}' data_offsets [{}, {}) overrun the data section of {} bytes (truncated or corrupt file)",
                 path, name, begin, end, data_size);
        uint64_t numel;
        if (!checked_numel(shape, numel) || numel > UINT64_MAX / dtype_size(*dt))
            fail("{}: tensor '{}' shape {} overflows", path, name, shape_str(shape));
        if (numel * dtype_size(*dt) != end - begin)
            fail("{}: tensor '{}' has {} bytes but dtype {} and shape {} need {}", path, name, end - begin,
                 jd.get<std::string>(), shape_str(shape), numel * dtype_size(*dt));
        out.emplace(name, TensorView{name, *dt, std::move(shape), base + begin, end - begin});
    }
    return out;
}

const TensorView* SafetensorsFile::find(const std::string& name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
}

const TensorView& SafetensorsFile::get(const std::string& name) const {
    const TensorView* t = find(name);
    if (!t) fail("{}: no tensor '{}'", path(), name);
    return *t;
}

}  // namespace tt
