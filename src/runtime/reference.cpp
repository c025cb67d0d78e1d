#include "runtime/reference.h"

#include "core/error.h"
#include "core/json.h"

#include <algorithm>
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

namespace {

// A metadata value that must be a positive integer (safetensors stores metadata as strings).
int metadata_int(const nlohmann::json& meta, const char* key, const std::string& path) {
    if (meta.is_null() || !meta.contains(key)) return 0;
    const auto& v = meta[key];
    long long x = 0;
    size_t used = 0;
    bool ok = false;
    if (v.is_number_integer()) {
        x = v.get<long long>();
        ok = true;
    } else if (v.is_string()) {
        const std::string s = v.get<std::string>();
        try {
            x = std::stoll(s, &used);
            ok = used == s.size();
        } catch (const std::exception&) {
        }
    }
    if (!ok || x < 1 || x > INT32_MAX) fail("{}: __metadata__ \"{}\" must be a positive integer, is {}", path, key, v.dump());
    return int(x);
}

}  // namespace

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
    for (const int32_t id : r.greedy_ids)
        if (id >= r.vocab) fail("{}: 'greedy_ids' holds token {}, outside the vocabulary ({})", path, id, r.vocab);
    if (const TensorView* m = f.find("greedy_margins")) {
        if (m->dtype != DType::f32 || m->shape.size() != 1 || m->shape[0] != int64_t(r.greedy_ids.size()))
            fail("{}: 'greedy_margins' must be float32 [{}], is {} {}", path, r.greedy_ids.size(), dtype_name(m->dtype),
                 shape_str(m->shape));
        r.greedy_margins.resize(r.greedy_ids.size());
        std::memcpy(r.greedy_margins.data(), m->data, m->nbytes);
    }
    const int n = int(r.input_ids.size());
    r.greedy_prefix = metadata_int(f.metadata(), "greedy_prefix", path);
    if (r.greedy_prefix > n)
        fail("{}: __metadata__ \"greedy_prefix\" {} is longer than input_ids ({})", path, r.greedy_prefix, n);
    if (!r.greedy_ids.empty()) {
        const TensorView* f32 = f.find("logits_f32");
        const bool use_f32 = f32 && f32->dtype == DType::f32 && f32->shape == l->shape;
        const float* rows = use_f32 ? reinterpret_cast<const float*>(f32->data) : r.logits.data();
        std::vector<float> row(size_t(r.vocab));
        for (int p = 0; p < n; ++p) {
            std::memcpy(row.data(), rows + size_t(p) * size_t(r.vocab), row.size() * 4);  // the mapping may be unaligned
            if (std::max_element(row.begin(), row.end()) - row.begin() == r.greedy_ids[0])
                r.greedy_prefix_candidates.push_back(p + 1);
        }
    }
    return r;
}

std::vector<ReferencePrompt> load_reference_set(const std::string& path, int n_prompts, const std::string& key) {
    const SafetensorsFile f(path);
    std::vector<ReferencePrompt> out(static_cast<size_t>(n_prompts));
    for (int i = 0; i < n_prompts; ++i) {
        const std::string pre = fmt::format("p{}.", i);
        ReferencePrompt& r = out[size_t(i)];
        r.input_ids = read_ids(f, pre + "input_ids");
        const TensorView* l = f.find(pre + key);
        if (!l) fail("{}: no '{}{}' tensor", path, pre, key);
        const auto t = int64_t(r.input_ids.size());
        if (l->dtype != DType::f32 || l->shape.size() != 2 || l->shape[0] < 1 || l->shape[0] > t)
            fail("{}: '{}{}' must be float32 [1..{}, vocab], is {} {}", path, pre, key, t, dtype_name(l->dtype), shape_str(l->shape));
        r.logits_offset = int(t - l->shape[0]);
        r.vocab = int(l->shape[1]);
        r.logits.resize(size_t(l->numel()));
        std::memcpy(r.logits.data(), l->data, l->nbytes);
        r.greedy_ids = read_ids(f, pre + "greedy_ids");
        const TensorView& m = f.get(pre + "greedy_margins");
        if (m.dtype != DType::f32 || m.shape.size() != 1 || m.shape[0] != int64_t(r.greedy_ids.size()))
            fail("{}: '{}greedy_margins' must be float32 [{}], is {} {}", path, pre, r.greedy_ids.size(), dtype_name(m.dtype),
                 shape_str(m.shape));
        r.greedy_margins.resize(r.greedy_ids.size());
        std::memcpy(r.greedy_margins.data(), m.data, m.nbytes);
        if (const TensorView* b = key != "logits_f32" ? f.find(pre + "logits_f32") : nullptr) {
            if (b->dtype != DType::f32 || b->shape != l->shape)
                fail("{}: '{}logits_f32' must be float32 {} like '{}{}', is {} {}", path, pre, shape_str(l->shape), pre, key,
                     dtype_name(b->dtype), shape_str(b->shape));
            r.baseline_f32.resize(size_t(b->numel()));
            std::memcpy(r.baseline_f32.data(), b->data, b->nbytes);
        }
    }
    return out;
}

}  // namespace tt
