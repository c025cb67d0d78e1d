#include "runtime/reference.h"

#include "core/error.h"

#include <cstring>

namespace tt {

std::vector<int32_t> read_ids(const SafetensorsFile& f, const std::string& name) {
    const TensorView& t = f.get(name);
    if (t.shape.size() != 1) fail("{}: '{}' must be 1-D, has shape {}", f.path(), name, shape_str(t.shape));
    std::vector<int32_t> out(size_t(t.numel()));
    for (size_t i = 0; i < out.size(); ++i) {
        int64_t v;
        if (t.dtype == DType::i64) std::memcpy(&v, t.data + 8 * i, 8);
        else if (t.dtype == DType::i32) {
            int32_t w;
            std::memcpy(&w, t.data + 4 * i, 4);
            v = w;
        } else fail("{}: '{}' must be int64 or int32, is {}", f.path(), name, dtype_name(t.dtype));
        if (v < 0 || v > INT32_MAX) fail("{}: '{}' holds an invalid token id {}", f.path(), name, v);
        out[i] = int32_t(v);
    }
    return out;
}

ReferenceCase load_reference(const std::string& path, const std::string& key) {
    const SafetensorsFile f(path);
    ReferenceCase r;
    r.input_ids = read_ids(f, "input_ids");
    const TensorView* l = f.find(key);
    if (!l) fail("{}: no '{}' tensor (use --key to pick another)", path, key);
    if (l->dtype != DType::f32 || l->shape.size() != 2 || l->shape[0] != int64_t(r.input_ids.size()))
        fail("{}: '{}' must be float32 [{}, vocab], is {} {}", path, key, r.input_ids.size(), dtype_name(l->dtype),
             shape_str(l->shape));
    r.vocab = int(l->shape[1]);
    r.logits.resize(size_t(l->numel()));
    std::memcpy(r.logits.data(), l->data, l->nbytes);
    if (f.find("greedy_ids")) r.greedy_ids = read_ids(f, "greedy_ids");
    return r;
}

}  // namespace tt
