#include "model/weight_quant.h"

#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"

#include <chrono>

namespace tt {

bool role_quantizable(Role role) {
    switch (role) {
    case Role::attn_q:
    case Role::attn_k:
    case Role::attn_v:
    case Role::attn_o:
    case Role::ffn_gate:
    case Role::ffn_up:
    case Role::ffn_down:
    case Role::expert_gate:
    case Role::expert_up:
    case Role::expert_down:
    case Role::shexp_gate:
    case Role::shexp_up:
    case Role::shexp_down:
    case Role::ssm_in_qkv:
    case Role::ssm_in_z:
    case Role::ssm_out:
    case Role::output: return true;
    default: return false;
    }
}

QuantScheme role_quant_scheme(Role role, QuantScheme body) {
    if (body == QuantScheme::none || !role_quantizable(role)) return QuantScheme::none;
    return role == Role::output ? QuantScheme::int8 : body;
}

const TensorView* QuantizedWeights::add(const std::string& name, const Shape& shape, QuantScheme scheme, int32_t group_size,
                                        QuantizedMatrix m) {
    auto o = std::make_unique<Owned>();
    o->m = std::move(m);
    o->view.name = name;
    o->view.dtype = scheme == QuantScheme::int8 ? DType::i8 : DType::u8;
    o->view.shape = shape;
    o->view.data = o->m.q.data();
    o->view.nbytes = o->m.q.size();
    o->view.quant = scheme;
    o->view.group_size = scheme == QuantScheme::int4 ? group_size : 0;
    o->view.scales = o->m.scales.data();
    owned_.push_back(std::move(o));
    return &owned_.back()->view;
}

namespace {

// The view `t` in `scheme`: as stored when it already is, else quantized into `out` here.
const TensorView* to_scheme(const std::string& path, const std::string& profile, const TensorView& t, QuantScheme scheme,
                            int32_t group_size, QuantizedWeights& out, ThreadPool& pool) {
    if (t.quant == scheme) {
        if (scheme == QuantScheme::int4 && t.group_size != group_size)
            log::debug("{}: {} is stored as INT4 in groups of {}; used as stored", path, t.name, t.group_size);
        return &t;
    }
    if (t.quant != QuantScheme::none)
        fail("{}: --profile {} needs {} weights, but tensor '{}' is stored as {}; run it with the profile of its scheme "
             "(max-performance for INT8, max-max-perf for INT4) or convert the model again from its bf16/f16/f32 checkpoint",
             path, profile, quant_scheme_label(scheme), t.name, quant_scheme_label(t.quant));
    TT_ASSERT(t.shape.size() == 2);
    QuantizedMatrix m = quantize_matrix(pool, t.data, t.dtype, t.shape[0], t.shape[1], scheme, group_size,
                                        fmt::format("{}: tensor '{}' (--profile {})", path, t.name, profile));
    out.n_weights += uint64_t(t.numel());
    return out.add(t.name, t.shape, scheme, group_size, std::move(m));
}

}  // namespace

QuantizedWeights quantize_weights(const std::string& path, const ModelSpec& spec, QuantScheme body, int32_t group_size,
                                  const std::string& profile, ModelWeights& w, ThreadPool& pool) {
    QuantizedWeights out;
    if (body == QuantScheme::none) return out;
    const auto t0 = std::chrono::steady_clock::now();
    for (const TensorPlan& p : plan_tensors(spec)) {
        const QuantScheme scheme = role_quant_scheme(p.role, body);
        if (scheme == QuantScheme::none) continue;
        const TensorView*& slot = weight_slot(w, p);
        slot = to_scheme(path, profile, *slot, scheme, group_size, out, pool);
    }
    // Tied embeddings: the lookup keeps the stored embedding, the head gets its own INT8 copy.
    if (spec.tied_embeddings)
        w.output = to_scheme(path, profile, *w.token_embd, role_quant_scheme(Role::output, body), group_size, out, pool);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (out.n_weights > 0)
        log::info("quantized {} matrices ({:.2f} M weights) to {} (head INT8) in {:.3f} s: {:.0f} M weights/s on {} threads",
                  out.n_matrices(), double(out.n_weights) / 1e6, quant_scheme_label(body), out.seconds,
                  double(out.n_weights) / 1e6 / std::max(out.seconds, 1e-9), pool.size());
    return out;
}

uint64_t run_nbytes(const TensorView& t, Role role, QuantScheme body, int32_t group_size) {
    const QuantScheme q = role_quant_scheme(role, body);
    if (q == QuantScheme::none || t.quant != QuantScheme::none || t.shape.size() != 2) return t.nbytes;
    const int64_t rows = t.shape[0], cols = t.shape[1];
    return uint64_t(rows) * (quant_row_bytes(q, cols) + 4 * uint64_t(quant_row_scales(q, cols, group_size)));
}

QuantScheme archive_quant_scheme(const Archive& a) {
    QuantScheme s = QuantScheme::none;
    for (const auto& t : a.tensors()) {
        if (t.view.quant == QuantScheme::int4) return QuantScheme::int4;
        if (t.view.quant == QuantScheme::int8) s = QuantScheme::int8;
    }
    return s;
}

}  // namespace tt
