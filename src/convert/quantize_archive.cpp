#include "convert/quantize_archive.h"

#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "format/archive.h"
#include "model/model_spec.h"
#include "model/tensor_names.h"
#include "model/weight_quant.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <vector>

namespace tt {

void quantize_archive(const Archive& src, QuantScheme body, int32_t group_size, const std::string& out_path, ThreadPool& pool) {
    TT_ASSERT(body != QuantScheme::none);
    const auto t0 = std::chrono::steady_clock::now();
    const ModelSpec spec = spec_from_json(src.metadata()["spec"]);
    const auto roles = tensor_roles(spec);
    auto scheme_of = [&](const ArchiveTensor& t) {
        const auto it = roles.find(t.view.name);
        return it == roles.end() ? QuantScheme::none : role_quant_scheme(it->second, body);
    };
    // Everything is checked before a byte is written.
    std::vector<const ArchiveTensor*> order;
    for (const ArchiveTensor& t : src.tensors()) {
        if (t.view.quant != QuantScheme::none)
            fail("{}: tensor '{}' is stored as {} already; quantizing at load takes a bf16/f16/f32 archive", src.path(),
                 t.view.name, quant_scheme_label(t.view.quant));
        if (const QuantScheme q = scheme_of(t); q != QuantScheme::none)
            if (const std::string e = quant_layout_error(q, t.view.shape.back(), group_size); !e.empty())
                fail("{}: tensor '{}' {}: {}", src.path(), t.view.name, shape_str(t.view.shape), e);
        order.push_back(&t);
    }
    std::stable_sort(order.begin(), order.end(), [](const ArchiveTensor* a, const ArchiveTensor* b) { return a->offset < b->offset; });

    ArchiveWriter w(out_path);
    std::string block;
    uint64_t n_weights = 0;
    for (const ArchiveTensor* t : order) {
        if (t->block != block) {
            block = t->block;
            w.begin_block(block);
        }
        const TensorView& v = t->view;
        if (const QuantScheme q = scheme_of(*t); q != QuantScheme::none) {
            const QuantizedMatrix m = quantize_matrix(pool, v.data, v.dtype, v.shape[0], v.shape[1], q, group_size,
                                                      fmt::format("{}: tensor '{}'", src.path(), v.name));
            w.add_quantized(v.name, quant_scales_name(v.name), q, group_size, v.shape, m.q.data(), m.scales.data());
            n_weights += uint64_t(v.numel());
        } else {
            w.add_tensor(v.name, v.dtype, v.shape, v.data, v.dtype);
        }
    }
    for (const ArchiveFile& f : src.files()) w.add_file(f.name, *src.file(f.name));
    nlohmann::json meta = src.metadata();
    for (const char* table : {"tensors", "blocks", "files"}) meta.erase(table);
    meta["format_version"] = k_thin_version;
    meta["quant"] = {{"scheme", quant_scheme_name(body)}, {"head", "int8"}};
    if (body == QuantScheme::int4) meta["quant"]["group_size"] = group_size;
    w.finish(std::move(meta));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    log::info("quantized {} to {} (head INT8): {:.2f} G weights in {:.2f} s, {:.2f} G weights/s on {} threads", src.path(),
              quant_scheme_label(body), double(n_weights) / 1e9, s, double(n_weights) / 1e9 / std::max(s, 1e-9), pool.size());
}

}  // namespace tt
